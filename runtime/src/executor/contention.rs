//! How long a core's thread waits for its CPU: the kernel's per-thread scheduler counters
//! (`/proc/thread-self/schedstat`: time on the CPU, time runnable but waiting for it), read
//! when the core publishes its metrics, the share of its wanted time that it waited
//! ([`cpu_contention`]) and the share of the time it wanted the CPU ([`cpu_demand`]), which
//! `corering_net`'s servers read to move connections off a core whose CPU is taken by other
//! threads (a load generator, a neighbour, a CPU hog).

use std::cell::Cell;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::stats::coarse_ns;

/// Windows with less wanted time (run + wait) than this leave the waiting share as it was:
/// an idle core keeps the figure of its last busy moments (it waits for nothing while
/// asleep, which says nothing about its CPU).
const MIN_WANTED_NS: u64 = 1_000_000;

/// The shortest window folded in (the coarse clock ticks every 1 to 4 ms).
const MIN_WALL_NS: u64 = 8_000_000;

/// The weight of the newest window in the running share (about the last 50 ms at one
/// window per 10 ms publish interval).
const NEW_WEIGHT: f32 = 0.2;

/// A core's shares, as its thread last published them (in its `Shared`).
#[derive(Default)]
pub(crate) struct Shares {
    /// The running share of wanted time spent waiting for the CPU (`f32` bits).
    wait: AtomicU32,
    /// The running share of the time it wanted the CPU, ran or waited (`f32` bits).
    demand: AtomicU32,
    /// When they were last updated (`coarse_ns`).
    at: AtomicU64,
}

/// A core that has not updated its shares for this long is idle: it sleeps.
const STALE_NS: u64 = 50_000_000;

/// The core thread's scheduler counters, read from its own `schedstat` file (opened on the
/// core's thread: `thread-self` names that thread).
pub(crate) struct CpuClock {
    file: Option<File>,
    /// (run, wait) when the core started.
    start: (u64, u64),
    /// (run, wait, `coarse_ns`) at the last read.
    last: Cell<(u64, u64, u64)>,
}

impl CpuClock {
    /// Opens the calling thread's counters; a kernel without them (no `CONFIG_SCHED_INFO`)
    /// gives a clock that reads zero.
    pub(crate) fn open() -> CpuClock {
        let file = File::open("/proc/thread-self/schedstat").ok();
        let start = file.as_ref().and_then(read).unwrap_or((0, 0));
        CpuClock {
            file,
            start,
            last: Cell::new((start.0, start.1, coarse_ns())),
        }
    }

    /// (run, wait) nanoseconds since the core started, as of the last [`sample`](Self::sample).
    pub(crate) fn totals(&self) -> (u64, u64) {
        let (run, wait, _) = self.last.get();
        (
            run.saturating_sub(self.start.0),
            wait.saturating_sub(self.start.1),
        )
    }

    /// Reads the counters and folds the window since the last read into `shares` (the
    /// core's published running shares), once the window holds enough wanted time.
    pub(crate) fn sample(&self, shares: &Shares) {
        let Some((run_now, wait_now)) = self.file.as_ref().and_then(read) else {
            return;
        };
        let now = coarse_ns();
        let (run0, wait0, at0) = self.last.get();
        let (run, wait) = (run_now.saturating_sub(run0), wait_now.saturating_sub(wait0));
        let wall = now.saturating_sub(at0);
        if wall < MIN_WALL_NS {
            return;
        }
        self.last.set((run_now, wait_now, now));
        let fold = |share: &AtomicU32, window: f32| {
            let old = f32::from_bits(share.load(Ordering::Relaxed));
            let new = old + NEW_WEIGHT * (window - old);
            share.store(new.to_bits(), Ordering::Relaxed);
        };
        if run + wait >= MIN_WANTED_NS {
            fold(&shares.wait, wait as f32 / (run + wait) as f32);
        }
        fold(&shares.demand, ((run + wait) as f32 / wall as f32).min(1.0));
        shares.at.store(now, Ordering::Relaxed);
    }
}

/// Parses `schedstat`: "RUN_NS WAIT_NS TIMESLICES".
fn read(file: &File) -> Option<(u64, u64)> {
    let mut buf = [0u8; 96];
    let n = file.read_at(&mut buf, 0).ok()?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    let mut fields = text.split_ascii_whitespace().map(|f| f.parse::<u64>().ok());
    Some((fields.next()??, fields.next()??))
}

/// The share (0.0 to 1.0) of the time core `core` of the current runtime wanted its CPU
/// and waited for it while another thread had it, over roughly its last 50 ms of work
/// (from the kernel's per-thread scheduler counters, sampled when the core publishes its
/// metrics, every 10 ms while it works). A core that sleeps keeps the figure of its last
/// busy moments. `None` outside a runtime or for a core it does not have; 0.0 where the
/// kernel keeps no such counters.
///
/// A core whose CPU is shared with a busy thread of another process (a load generator, a
/// CPU hog, a neighbour in the same cgroup) reads 0.3 to 0.5; a core alone on its CPU,
/// near 0. `corering_net`'s HTTP server moves idle connections from a core that waits to
/// one that does not.
pub fn cpu_contention(core: usize) -> Option<f32> {
    crate::executor::with_core(|c| {
        c.set
            .get(core)
            .map(|s| f32::from_bits(s.contention.wait.load(Ordering::Relaxed)))
    })
    .flatten()
}

/// The share (0.0 to 1.0) of the wall time core `core` of the current runtime wanted its
/// CPU (ran on it, or was ready and waited for it), over roughly its last 50 ms (as
/// [`cpu_contention`]): what it does not want, it sleeps, and that is its room for more work
/// (a core that shares its CPU with a hog may run only half the time yet want it all the
/// time). 0.0 for a core that has slept for the last 50 ms. `None` outside a runtime or for
/// a core it does not have.
pub fn cpu_demand(core: usize) -> Option<f32> {
    crate::executor::with_core(|c| {
        c.set.get(core).map(|s| {
            let shares = &s.contention;
            if coarse_ns().saturating_sub(shares.at.load(Ordering::Relaxed)) > STALE_NS {
                0.0
            } else {
                f32::from_bits(shares.demand.load(Ordering::Relaxed))
            }
        })
    })
    .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_thread_reads_its_run_time_and_a_share_between_zero_and_one() {
        let clock = CpuClock::open();
        let shares = Shares::default();
        // Spin until the thread has had 20 ms of CPU (other tests may share the CPUs).
        let cpu_ns = || {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: clock_gettime(2) writes one timespec, which `ts` is.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
        };
        let (start, t) = (cpu_ns(), std::time::Instant::now());
        while cpu_ns() - start < 20_000_000 && t.elapsed() < std::time::Duration::from_secs(5) {
            std::hint::black_box(t.elapsed());
        }
        clock.sample(&shares);
        let (run, _wait) = clock.totals();
        if clock.file.is_some() {
            assert!(
                run >= 10_000_000,
                "20 ms of spinning counted {run} ns on the CPU"
            );
            // One window of spinning (wanted nearly all the time) folded into a running
            // share that started at 0.
            let demand = f32::from_bits(shares.demand.load(Ordering::Relaxed));
            assert!(
                (NEW_WEIGHT * 0.5..=NEW_WEIGHT).contains(&demand),
                "a spinning thread's demand {demand}"
            );
        }
        let s = f32::from_bits(shares.wait.load(Ordering::Relaxed));
        assert!((0.0..=1.0).contains(&s), "share {s}");
    }
}
