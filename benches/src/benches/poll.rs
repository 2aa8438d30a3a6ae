//! `bench poll`: per iteration, arm a poll on each of 32 pipes, write a byte into each.

use std::future::{poll_fn, Future as _};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use runtime::ext::raw::{poll_add, poll_multi};
use runtime::ext::SharedFd;
use std::pin::Pin;
use std::task::Poll;
use std::time::Instant;

use futures::StreamExt as _;
use io_uring::{opcode, squeue, types::Fd};

use crate::harness::cli::Opts;
use crate::harness::contest::Contest;
use crate::harness::measure::{timed, Measure, Plan, Tally};
use crate::harness::raw::{drain_exact, RawRing};
use crate::harness::report::Metric;

/// Pipes (and poll requests) per iteration, as in the patch series.
const PIPES: usize = 32;

/// Runs the benchmark and prints its tables.
pub fn run(opts: &Opts) -> io::Result<()> {
    let plan = Plan::new(opts, 640_000, PIPES as u64);
    let pipes = Pipes::new()?;
    let mut raw = RawRing::new(256)?;
    let rt = runtime::Builder::new().entries(256).build()?;
    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    let (raw_flags, tally, tally_multi) = (raw.flags(), Tally::default(), Tally::default());
    let title = format!(
        "poll: {PIPES} POLLIN requests on {PIPES} pipes per iteration, {{n}} requests per run"
    );
    Contest::new(title, Metric::Rate("polls/s"), "vs raw")
        .row("raw ring", |n| raw_polls(&mut raw, &pipes, n))
        .row("runtime", |n| runtime_polls(&rt, &pipes, n, &tally))
        .row("tokio current-thread", |n| {
            tokio_polls(&tokio_rt, &pipes, n)
        })
        .note(format!("raw ring flags: {raw_flags}"))
        .run(plan)?
        .print([
            tally.note("runtime"),
            "target: runtime >= 0.8x raw and ahead of tokio".into(),
        ]);
    let title = format!(
        "poll (multishot): {PIPES} pipes, each poll armed once per run, {{n}} events per run"
    );
    Contest::new(title, Metric::Rate("polls/s"), "vs raw")
        .row("raw ring multishot", |n| raw_multishot(&mut raw, &pipes, n))
        .row("runtime multishot", |n| runtime_multishot(&rt, &pipes, n, &tally_multi))
        .row("tokio current-thread", |n| tokio_polls(&tokio_rt, &pipes, n))
        .run(plan)?
        .print([
            tally_multi.note("runtime multishot"),
            "runtime::ext::raw::poll_multi streams; raw ring: 32 POLL_ADD_MULTI, one submit_and_wait(32) per iteration"
                .into(),
        ]);
    Ok(())
}

/// [`PIPES`] pipes, non-blocking at both ends (tokio's `AsyncFd` needs it).
struct Pipes {
    read: Vec<SharedFd>,
    write: Vec<OwnedFd>,
}

impl Pipes {
    fn new() -> io::Result<Pipes> {
        let (mut read, mut write) = (Vec::new(), Vec::new());
        for _ in 0..PIPES {
            let mut fds = [0; 2];
            // SAFETY: `fds` is a writable array of two ints.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: both fds are new and owned by nobody else.
            unsafe {
                (
                    read.push(SharedFd::new(OwnedFd::from_raw_fd(fds[0]))),
                    write.push(OwnedFd::from_raw_fd(fds[1])),
                )
            };
        }
        Ok(Pipes { read, write })
    }

    /// One byte into every pipe.
    fn trigger(&self) -> io::Result<()> {
        for w in &self.write {
            // SAFETY: writes one byte from a valid static buffer.
            if unsafe { libc::write(w.as_raw_fd(), b"x".as_ptr().cast(), 1) } != 1 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// The byte back out of every pipe.
    fn drain(&self) -> io::Result<()> {
        self.read.iter().try_for_each(|r| sys_read(r.raw()))
    }

    /// A `POLL_ADD` for `POLLIN` on each read end (`multi`: multishot), user data its index.
    fn sqes(&self, multi: bool) -> Vec<squeue::Entry> {
        let add = |(i, r): (usize, &SharedFd)| {
            opcode::PollAdd::new(Fd(r.raw()), libc::POLLIN as u32)
                .multi(multi)
                .build()
                .user_data(i as u64)
        };
        self.read.iter().enumerate().map(add).collect()
    }
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
    let (sqes, ring) = (pipes.sqes(false), raw.ring());
    let (mut enters, mut done, start) = (0, 0, Instant::now());
    while done < count {
        // SAFETY: a poll request points at no memory; the pipes outlive the loop.
        unsafe { ring.submission().push_multiple(&sqes) }
            .map_err(|_| io::Error::other("SQ full with nothing in flight"))?;
        ring.submit()?;
        pipes.trigger()?;
        ring.submit_and_wait(PIPES)?;
        enters += 2;
        drain_exact(ring, PIPES)?;
        pipes.drain()?;
        done += PIPES as u64;
    }
    Ok(Measure::new(done, start.elapsed(), Some(enters)))
}

fn runtime_polls(
    rt: &runtime::Runtime,
    pipes: &Pipes,
    count: u64,
    tally: &Tally,
) -> io::Result<Measure> {
    rt.block_on(timed(tally, async move {
        let (mut ops, mut done) = (Vec::with_capacity(PIPES), 0);
        while done < count {
            ops.extend(pipes.read.iter().map(|r| poll_add(r, libc::POLLIN as u32)));
            // Queue every SQE, then let the loop submit them before the writes.
            poll_fn(
                |cx| match ops.iter_mut().any(|op| Pin::new(op).poll(cx).is_ready()) {
                    true => Poll::Ready(Err(io::Error::other("poll ready before its write"))),
                    false => Poll::Ready(Ok(())),
                },
            )
            .await?;
            runtime::yield_now().await;
            pipes.trigger()?;
            for op in ops.drain(..) {
                op.await?;
            }
            pipes.drain()?;
            done += PIPES as u64;
        }
        Ok(done)
    }))
}

fn tokio_polls(rt: &tokio::runtime::Runtime, pipes: &Pipes, count: u64) -> io::Result<Measure> {
    rt.block_on(async move {
        let fds: Vec<_> = (pipes.read.iter())
            // SAFETY: the pipes outlive the `AsyncFd`s, which are dropped (deregistered) at the end of this block,
            // and nothing closes or replaces the fds meanwhile.
            .map(|r| {
                unsafe { tokio::io::unix::AsyncFd::register(r.raw()) }.map_err(|e| e.into_parts().1)
            })
            .collect::<io::Result<_>>()?;
        let (start, mut done) = (Instant::now(), 0);
        while done < count {
            pipes.trigger()?;
            for fd in &fds {
                let mut guard = fd.readable().await?;
                sys_read(*fd.get_ref())?;
                guard.clear_ready();
            }
            done += PIPES as u64;
        }
        Ok(Measure::since(done, start))
    })
}

/// As `raw_polls`, with each pipe's poll armed once (`IORING_POLL_ADD_MULTI`).
fn raw_multishot(raw: &mut RawRing, pipes: &Pipes, count: u64) -> io::Result<Measure> {
    let (sqes, ring, start) = (pipes.sqes(true), raw.ring(), Instant::now());
    // SAFETY: a poll request points at no memory; the pipes outlive the requests, which are cancelled and reaped
    // below.
    unsafe { ring.submission().push_multiple(&sqes) }
        .map_err(|_| io::Error::other("SQ full with nothing in flight"))?;
    ring.submit()?;
    let (mut enters, mut done) = (1, 0);
    while done < count {
        pipes.trigger()?;
        ring.submit_and_wait(PIPES)?;
        enters += 1;
        let mut reaped = 0;
        for cqe in ring.completion() {
            if cqe.result() < 0 || !io_uring::cqueue::more(cqe.flags()) {
                let (res, flags) = (cqe.result(), cqe.flags());
                return Err(io::Error::other(format!(
                    "multishot poll ended: res {res}, flags {flags:#x}"
                )));
            }
            reaped += 1;
        }
        if reaped != PIPES {
            return Err(io::Error::other(format!(
                "reaped {reaped} of {PIPES} events"
            )));
        }
        pipes.drain()?;
        done += PIPES as u64;
    }
    let elapsed = start.elapsed();
    // Cancel the requests and reap their final CQEs (and the cancels' own) before the ring is used again.
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
    Ok(Measure::new(done, elapsed, Some(enters)))
}

/// As `runtime_polls`, with one `runtime::ext::raw::poll_multi` stream per pipe for the whole run.
fn runtime_multishot(
    rt: &runtime::Runtime,
    pipes: &Pipes,
    count: u64,
    tally: &Tally,
) -> io::Result<Measure> {
    rt.block_on(timed(tally, async move {
        let poll = |r: &SharedFd| poll_multi(r, libc::POLLIN as u32);
        let (mut streams, mut done): (Vec<_>, _) = (pipes.read.iter().map(poll).collect(), 0);
        while done < count {
            pipes.trigger()?;
            for (s, r) in streams.iter_mut().zip(&pipes.read) {
                s.next()
                    .await
                    .ok_or_else(|| io::Error::other("multishot poll ended"))??;
                sys_read(r.raw())?;
            }
            done += PIPES as u64;
        }
        Ok(done)
    }))
}
