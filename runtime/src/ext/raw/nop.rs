//! `IORING_OP_NOP`: an op that does nothing, for tests and benchmarks of the op path.

use std::io;

use io_uring::{opcode, squeue};

use crate::ext::{Completable, Cqe, Op, Prep};

/// The data of a NOP: none.
#[derive(Debug)]
pub struct Nop;

impl Completable for Nop {
    type Output = io::Result<()>;

    fn complete(self, cqe: Cqe) -> io::Result<()> {
        cqe.result.map(|_| ())
    }
}

/// A NOP's SQE, made at submission straight into the SQ ring (see [`Prep`]).
#[derive(Debug)]
pub struct NopSqe;

impl Prep for NopSqe {
    #[inline(always)]
    fn sqe(&mut self) -> squeue::Entry {
        opcode::Nop::new().build()
    }
}

/// Sends one `IORING_OP_NOP` through the ring and resolves on its CQE.
///
/// ```
/// let rt = runtime::Runtime::new()?;
/// rt.block_on(runtime::ext::raw::nop())?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn nop() -> Op<Nop, NopSqe> {
    // SAFETY: a NOP points at no memory.
    unsafe { Op::with_prep(Nop, NopSqe) }
}
