//! `bench poll`: 32 `POLLIN` requests on 32 pipes per iteration, triggered by writes, reaped,
//! read back (seed 000, the poll optimisations thread).
//!
//! One iteration: arm a one-shot poll on the read end of each of 32 pipes, write one byte to
//! each write end (a plain `write(2)`, as in the seed), wait for the 32 completions, and read
//! each byte back (`read(2)`). The figure is poll requests per second. Contestants:
//! - `raw ring`: push 32 `POLL_ADD`, `submit()`, 32 writes, `submit_and_wait(32)`, drain, 32
//!   reads: two enters per iteration.
//! - `runtime`: one task creates 32 `runtime::poll_add` futures, polls them once (which queues
//!   their SQEs), yields so the loop submits them, writes, awaits each, reads.
//! - `tokio`: 32 `AsyncFd`s on the same pipes (epoll, edge-triggered): write 32, await each
//!   `readable()`, read, clear the readiness.
//!
//! A second table arms each pipe's poll once per run (`IORING_POLL_ADD_MULTI`), as tokio's
//! epoll registration stays armed: `raw ring multishot` (one `submit_and_wait(32)` per
//! iteration), `runtime multishot` (32 `runtime::poll_multi` streams), and tokio again.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::task::Poll;
use std::time::Instant;

use io_uring::{opcode, types};

use crate::harness::{alternate, Contestant, Plan};
use crate::raw::{drain_exact, RawRing};
use crate::report::{timed, Measure, Metric, Series, Table, Tally};
use crate::Opts;

/// Pipes (and poll requests) per iteration, as in the seed.
const PIPES: usize = 32;

/// Runs the benchmark and prints its table.
pub fn run(opts: &Opts) -> io::Result<()> {
    let count = if opts.quick { 64_000 } else { 640_000 };
    let plan = Plan {
        count,
        warmup: count / 4,
        runs: opts.runs.unwrap_or(if opts.quick { 3 } else { 5 }),
        seconds: opts.seconds,
        granule: PIPES as u64,
    };
    let pipes = Pipes::new(PIPES)?;
    let mut raw = RawRing::new(256)?;
    let rt = runtime::Builder::new().entries(256).build()?;
    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    let raw_flags = raw.flags();
    let (tally, tally_multi) = (Tally::default(), Tally::default());
    let mut contestants = vec![
        Contestant::new("raw ring", |n| raw_polls(&mut raw, &pipes, n)),
        Contestant::new("runtime", |n| runtime_polls(&rt, &pipes, n, &tally)),
        Contestant::new("tokio current-thread", |n| {
            tokio_polls(&tokio_rt, &pipes, n)
        }),
    ];
    let (series, count) = alternate(&mut contestants, plan)?;
    drop(contestants);
    print_table(
        format!("poll: {PIPES} POLLIN requests on {PIPES} pipes per iteration, {count} requests per run"),
        plan,
        series,
        vec![
            format!("raw ring flags: {raw_flags}"),
            tally.note("runtime"),
            "target: runtime >= 0.8x raw and ahead of tokio".to_string(),
        ],
    );

    // The same waits with each pipe's poll armed once (IORING_POLL_ADD_MULTI), the io_uring
    // analogue of tokio's standing epoll registration.
    let mut contestants = vec![
        Contestant::new("raw ring multishot", |n| raw_multishot(&mut raw, &pipes, n)),
        Contestant::new("runtime multishot", |n| {
            runtime_multishot(&rt, &pipes, n, &tally_multi)
        }),
        Contestant::new("tokio current-thread", |n| {
            tokio_polls(&tokio_rt, &pipes, n)
        }),
    ];
    let (series, count) = alternate(&mut contestants, plan)?;
    drop(contestants);
    print_table(
        format!("poll (multishot): {PIPES} pipes, each poll armed once per run, {count} events per run"),
        plan,
        series,
        vec![
            tally_multi.note("runtime multishot"),
            "runtime::poll_multi streams; raw ring: 32 POLL_ADD_MULTI, one submit_and_wait(32) per iteration".to_string(),
        ],
    );
    Ok(())
}

/// Prints one of the two tables: polls per second, the raw ring (row 0) as the baseline.
fn print_table(what: String, plan: Plan, series: Vec<Series>, notes: Vec<String>) {
    let table = Table {
        title: format!("{what}, median of {} runs", plan.runs),
        metric: Metric::Rate("polls/s"),
        ratio_label: "vs raw".to_string(),
        baseline: 0,
        series,
        notes,
    };
    print!("{}", table.render());
}

/// `n` pipes, non-blocking at both ends (tokio's `AsyncFd` needs it; the ring does not care).
struct Pipes {
    read: Vec<OwnedFd>,
    write: Vec<OwnedFd>,
}

impl Pipes {
    fn new(n: usize) -> io::Result<Pipes> {
        let (mut read, mut write) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let mut fds = [0; 2];
            // SAFETY: `fds` is a writable array of two ints.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: both fds are new and owned by nobody else.
            unsafe {
                read.push(OwnedFd::from_raw_fd(fds[0]));
                write.push(OwnedFd::from_raw_fd(fds[1]));
            }
        }
        Ok(Pipes { read, write })
    }

    /// One byte into every pipe.
    fn trigger(&self) -> io::Result<()> {
        for w in &self.write {
            sys_write(w.as_raw_fd())?;
        }
        Ok(())
    }
}

fn sys_write(fd: RawFd) -> io::Result<()> {
    // SAFETY: writes one byte from a valid static buffer.
    if unsafe { libc::write(fd, b"x".as_ptr().cast(), 1) } != 1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn sys_read(fd: RawFd) -> io::Result<()> {
    let mut b = 0u8;
    // SAFETY: reads at most one byte into a valid local.
    if unsafe { libc::read(fd, (&mut b as *mut u8).cast(), 1) } != 1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn raw_polls(raw: &mut RawRing, pipes: &Pipes, count: u64) -> io::Result<Measure> {
    let sqes: Vec<_> = pipes
        .read
        .iter()
        .enumerate()
        .map(|(i, r)| {
            opcode::PollAdd::new(types::Fd(r.as_raw_fd()), libc::POLLIN as u32)
                .build()
                .user_data(i as u64)
        })
        .collect();
    let ring = raw.ring();
    let mut enters = 0;
    let start = Instant::now();
    let mut done = 0;
    while done < count {
        // SAFETY: a poll request points at no memory; the pipes outlive the loop.
        unsafe { ring.submission().push_multiple(&sqes) }
            .map_err(|_| io::Error::other("SQ full with nothing in flight"))?;
        ring.submit()?;
        pipes.trigger()?;
        ring.submit_and_wait(PIPES)?;
        enters += 2;
        drain_exact(ring, PIPES)?;
        for r in &pipes.read {
            sys_read(r.as_raw_fd())?;
        }
        done += PIPES as u64;
    }
    Ok(Measure {
        ops: done,
        elapsed: start.elapsed(),
        enters: Some(enters),
    })
}

fn runtime_polls(
    rt: &runtime::Runtime,
    pipes: &Pipes,
    count: u64,
    tally: &Tally,
) -> io::Result<Measure> {
    rt.block_on(timed(tally, async move {
        let mut ops = Vec::with_capacity(PIPES);
        let mut done = 0;
        while done < count {
            ops.extend(
                pipes
                    .read
                    .iter()
                    .map(|r| runtime::poll_add(r.as_raw_fd(), libc::POLLIN as u32)),
            );
            // Queue every SQE, then let the loop submit them before the writes.
            std::future::poll_fn(|cx| {
                for op in &mut ops {
                    if std::future::Future::poll(Pin::new(op), cx).is_ready() {
                        return Poll::Ready(Err(io::Error::other("poll ready before its write")));
                    }
                }
                Poll::Ready(Ok(()))
            })
            .await?;
            runtime::yield_now().await;
            pipes.trigger()?;
            for op in ops.drain(..) {
                op.await?;
            }
            for r in &pipes.read {
                sys_read(r.as_raw_fd())?;
            }
            done += PIPES as u64;
        }
        Ok(done)
    }))
}

fn tokio_polls(rt: &tokio::runtime::Runtime, pipes: &Pipes, count: u64) -> io::Result<Measure> {
    rt.block_on(async move {
        let fds: Vec<_> = pipes
            .read
            .iter()
            // SAFETY: the pipes outlive the `AsyncFd`s, which are dropped (deregistered)
            // at the end of this block, and nothing closes or replaces the fds meanwhile.
            .map(|r| unsafe { tokio::io::unix::AsyncFd::register(r.as_raw_fd()) })
            .map(|r| r.map_err(|e| e.into_parts().1))
            .collect::<io::Result<_>>()?;
        let start = Instant::now();
        let mut done = 0;
        while done < count {
            pipes.trigger()?;
            for fd in &fds {
                let mut guard = fd.readable().await?;
                sys_read(*fd.get_ref())?;
                guard.clear_ready();
            }
            done += PIPES as u64;
        }
        Ok(Measure {
            ops: done,
            elapsed: start.elapsed(),
            enters: None,
        })
    })
}

/// As `raw_polls`, with each pipe's poll armed once (`IORING_POLL_ADD_MULTI`): one enter per
/// iteration, which submits nothing and waits for the 32 events.
fn raw_multishot(raw: &mut RawRing, pipes: &Pipes, count: u64) -> io::Result<Measure> {
    let sqes: Vec<_> = pipes
        .read
        .iter()
        .enumerate()
        .map(|(i, r)| {
            opcode::PollAdd::new(types::Fd(r.as_raw_fd()), libc::POLLIN as u32)
                .multi(true)
                .build()
                .user_data(i as u64)
        })
        .collect();
    let ring = raw.ring();
    let start = Instant::now();
    // SAFETY: a poll request points at no memory; the pipes outlive the requests, which are
    // cancelled and reaped below.
    unsafe { ring.submission().push_multiple(&sqes) }
        .map_err(|_| io::Error::other("SQ full with nothing in flight"))?;
    ring.submit()?;
    let mut enters = 1;
    let mut done = 0;
    while done < count {
        pipes.trigger()?;
        ring.submit_and_wait(PIPES)?;
        enters += 1;
        let mut reaped = 0;
        for cqe in ring.completion() {
            if cqe.result() < 0 || !io_uring::cqueue::more(cqe.flags()) {
                return Err(io::Error::other(format!(
                    "multishot poll ended: res {}, flags {:#x}",
                    cqe.result(),
                    cqe.flags()
                )));
            }
            reaped += 1;
        }
        if reaped != PIPES {
            return Err(io::Error::other(format!(
                "reaped {reaped} of {PIPES} events"
            )));
        }
        for r in &pipes.read {
            sys_read(r.as_raw_fd())?;
        }
        done += PIPES as u64;
    }
    let elapsed = start.elapsed();
    // Cancel the requests and reap their final CQEs (and the cancels' own) before the ring
    // is used again.
    for i in 0..PIPES as u64 {
        let cancel = opcode::AsyncCancel::new(i).build().user_data(u64::MAX);
        // SAFETY: a cancel request points at no memory.
        unsafe { ring.submission().push(&cancel) }
            .map_err(|_| io::Error::other("SQ full while cancelling"))?;
    }
    let mut left = 2 * PIPES;
    while left > 0 {
        ring.submit_and_wait(1)?;
        left -= ring.completion().count().min(left);
    }
    Ok(Measure {
        ops: done,
        elapsed,
        enters: Some(enters),
    })
}

/// As `runtime_polls`, with one `runtime::poll_multi` stream per pipe for the whole run.
fn runtime_multishot(
    rt: &runtime::Runtime,
    pipes: &Pipes,
    count: u64,
    tally: &Tally,
) -> io::Result<Measure> {
    use futures::StreamExt;
    rt.block_on(timed(tally, async move {
        let mut streams: Vec<_> = pipes
            .read
            .iter()
            .map(|r| runtime::poll_multi(r.as_raw_fd(), libc::POLLIN as u32))
            .collect();
        let mut done = 0;
        while done < count {
            pipes.trigger()?;
            for (s, r) in streams.iter_mut().zip(&pipes.read) {
                match s.next().await {
                    Some(revents) => revents?,
                    None => return Err(io::Error::other("multishot poll ended")),
                };
                sys_read(r.as_raw_fd())?;
            }
            done += PIPES as u64;
        }
        Ok(done)
    }))
}
