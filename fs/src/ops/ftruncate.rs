//! `IORING_OP_FTRUNCATE` (Linux 6.9): set a file's length. See `ftruncate(2)`.

use std::io;

use io_uring::{opcode, types};
use runtime::ext::{Completable, Cqe, Op};

use crate::fd::SharedFd;

/// The data of an ftruncate: only the file.
pub(crate) struct Ftruncate {
    _fd: SharedFd,
}

impl Completable for Ftruncate {
    type Output = io::Result<()>;

    fn complete(self, cqe: Cqe) -> io::Result<()> {
        cqe.result.map(|_| ())
    }
}

/// Sets the length of `fd` to `len`, cutting or extending it with zeroes (a hole).
pub(crate) fn ftruncate(fd: &SharedFd, len: u64) -> Op<Ftruncate> {
    let sqe = opcode::Ftruncate::new(types::Fd(fd.raw()), len).build();
    // SAFETY: an FTRUNCATE points at no memory.
    unsafe { Op::new(Ftruncate { _fd: fd.clone() }, sqe) }
}
