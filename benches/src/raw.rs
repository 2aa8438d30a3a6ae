//! Raw-ring baselines: the io-uring crate driven by hand, the physical limit to compare with.
//!
//! The rules in `shared/BENCHMARKS.md` ask for an honest baseline: the ring is set up with
//! SINGLE_ISSUER, DEFER_TASKRUN, COOP_TASKRUN and SUBMIT_ALL where the kernel has them
//! (io_uring_setup(2); SINGLE_ISSUER 6.0, DEFER_TASKRUN 6.1), and each loop batches a whole
//! queue depth of SQEs into one `io_uring_enter` that also waits for their completions
//! (io_uring_enter(2) with IORING_ENTER_GETEVENTS, which DEFER_TASKRUN needs to post CQEs).
//! Every enter is counted so the tables can show enters per op beside the runtime's.
//!
//! Invariant: a `RawRing` is used only from the thread that built it (SINGLE_ISSUER); it is
//! `!Send` because `IoUring` is only used through `&mut self` here and never moved across.

use std::io;
use std::marker::PhantomData;
use std::time::Instant;

use io_uring::{opcode, squeue, IoUring};

use crate::report::Measure;

/// The largest batch one loop iteration may push.
pub const MAX_DEPTH: usize = 256;

/// Applies one set of setup flags to a ring builder.
type Setup = fn(&mut io_uring::Builder);

/// A hand-driven ring and the setup flags the kernel accepted.
pub struct RawRing {
    ring: IoUring,
    flags: &'static str,
    /// SINGLE_ISSUER binds the ring to this thread: keep the type `!Send`.
    _not_send: PhantomData<*const ()>,
}

impl RawRing {
    /// Builds a ring with `entries` SQEs, degrading the setup flags if the kernel refuses them.
    pub fn new(entries: u32) -> io::Result<RawRing> {
        let attempts: [(&'static str, Setup); 3] = [
            ("SINGLE_ISSUER|DEFER_TASKRUN|COOP_TASKRUN|SUBMIT_ALL", |b| {
                b.setup_single_issuer()
                    .setup_defer_taskrun()
                    .setup_coop_taskrun()
                    .setup_submit_all();
            }),
            ("COOP_TASKRUN|SUBMIT_ALL", |b| {
                b.setup_coop_taskrun().setup_submit_all();
            }),
            ("(none)", |_| {}),
        ];
        let mut last_err = None;
        for (flags, setup) in attempts {
            let mut builder = IoUring::builder();
            setup(&mut builder);
            match builder.build(entries) {
                Ok(ring) => {
                    return Ok(RawRing {
                        ring,
                        flags,
                        _not_send: PhantomData,
                    })
                }
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err.expect("at least one attempt"))
    }

    /// The setup flags this ring got, `|`-separated.
    pub fn flags(&self) -> &'static str {
        self.flags
    }

    /// The ring itself, for loops written elsewhere (`raw_echo.rs`).
    pub fn ring(&mut self) -> &mut IoUring {
        &mut self.ring
    }

    /// Completes `count` NOPs keeping `depth` in flight: push `depth` NOPs, one
    /// `submit_and_wait(depth)`, drain the CQ, repeat.
    pub fn nops(&mut self, count: u64, depth: usize) -> io::Result<Measure> {
        assert!(
            (1..=MAX_DEPTH).contains(&depth),
            "depth {depth} outside 1..={MAX_DEPTH}"
        );
        let nop: squeue::Entry = opcode::Nop::new().build().user_data(0x6e6f70);
        let batch = vec![nop; depth];
        let mut enters = 0u64;
        let mut done = 0u64;
        let start = Instant::now();
        // Hot path: one enter per `depth` NOPs, nothing else between the syscalls.
        while done < count {
            let n = (count - done).min(depth as u64) as usize;
            // SAFETY: a NOP references no memory, so nothing must outlive its completion.
            unsafe { self.ring.submission().push_multiple(&batch[..n]) }
                .map_err(|_| io::Error::other("SQ full with nothing in flight"))?;
            self.ring.submit_and_wait(n)?;
            enters += 1;
            drain_exact(&mut self.ring, n)?;
            done += n as u64;
        }
        Ok(Measure {
            ops: done,
            elapsed: start.elapsed(),
            enters: Some(enters),
        })
    }
}

/// Drains the CQ, which must hold exactly `want` CQEs, all successful.
pub fn drain_exact(ring: &mut IoUring, want: usize) -> io::Result<()> {
    let mut reaped = 0;
    for cqe in ring.completion() {
        if cqe.result() < 0 {
            return Err(io::Error::from_raw_os_error(-cqe.result()));
        }
        reaped += 1;
    }
    if reaped != want {
        return Err(io::Error::other(format!(
            "waited for {want} CQEs, reaped {reaped}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nops_complete_in_batches() {
        let mut ring = RawRing::new(64).expect("io_uring setup");
        let m = ring.nops(100, 32).expect("nops");
        assert_eq!(m.ops, 100);
        // 32 + 32 + 32 + 4.
        assert_eq!(m.enters, Some(4));
    }
}
