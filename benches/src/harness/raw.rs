//! The raw ring: the io-uring crate driven by hand, the honest baseline (`benches/README.md`).

use std::io;
use std::marker::PhantomData;
use std::time::Instant;

use io_uring::{squeue, IoUring};

use super::measure::Measure;

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

    /// The ring itself, for loops written elsewhere (`servers/raw.rs`, `benches/poll.rs`).
    pub fn ring(&mut self) -> &mut IoUring {
        &mut self.ring
    }

    /// Completes `count` ops from `batch` (NOPs, a chain of linked NOPs: SQEs that point at no memory) a batch at a
    /// time: push the batch, one `submit_and_wait` for all of it, drain the CQ, repeat; the last batch is cut short
    /// to end at `count`.
    ///
    /// # Safety
    /// No SQE of `batch` may point at memory (a buffer, an iovec): nothing here keeps any alive until its completion.
    pub unsafe fn batches(&mut self, count: u64, batch: &[squeue::Entry]) -> io::Result<Measure> {
        let mut enters = 0u64;
        let mut done = 0u64;
        let start = Instant::now();
        // Hot path: one enter per batch, nothing else between the syscalls.
        while done < count {
            let n = (count - done).min(batch.len() as u64) as usize;
            // SAFETY: the SQEs reference no memory (the caller's contract).
            unsafe { self.ring.submission().push_multiple(&batch[..n]) }
                .map_err(|_| io::Error::other("SQ full with nothing in flight"))?;
            self.ring.submit_and_wait(n)?;
            enters += 1;
            drain_exact(&mut self.ring, n)?;
            done += n as u64;
        }
        Ok(Measure::new(done, start.elapsed(), Some(enters)))
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
        let nop = io_uring::opcode::Nop::new().build();
        // SAFETY: a NOP references no memory.
        let m = unsafe { ring.batches(100, &vec![nop; 32]) }.expect("nops");
        assert_eq!(m.ops, 100);
        // 32 + 32 + 32 + 4.
        assert_eq!(m.enters, Some(4));
    }
}
