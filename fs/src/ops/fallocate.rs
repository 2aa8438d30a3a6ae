//! `IORING_OP_FALLOCATE`: allocate, punch or zero a byte range of a file. See
//! `fallocate(2)` for the `FALLOC_FL_*` modes.

use std::io;

use io_uring::{opcode, types};
use runtime::ext::{Completable, Cqe, Op};

use crate::fd::SharedFd;

/// The data of a fallocate: only the file.
pub(crate) struct Fallocate {
    _fd: SharedFd,
}

impl Completable for Fallocate {
    type Output = io::Result<()>;

    fn complete(self, cqe: Cqe) -> io::Result<()> {
        cqe.result.map(|_| ())
    }
}

/// Applies `mode` to `len` bytes of `fd` from `offset`.
pub(crate) fn fallocate(fd: &SharedFd, offset: u64, len: u64, mode: i32) -> Op<Fallocate> {
    let sqe = opcode::Fallocate::new(types::Fd(fd.raw()), len)
        .offset(offset)
        .mode(mode)
        .build();
    // SAFETY: a FALLOCATE points at no memory.
    unsafe { Op::new(Fallocate { _fd: fd.clone() }, sqe) }
}
