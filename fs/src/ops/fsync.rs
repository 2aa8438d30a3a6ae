//! `IORING_OP_FSYNC`: flush a file's data (and, without `DATASYNC`, its metadata) to the
//! device. See `fsync(2)`, `fdatasync(2)`.

use std::io;

use io_uring::{opcode, types};
use runtime::ext::{Completable, Cqe, Op};

use crate::fd::SharedFd;

/// The data of an fsync: only the file (the SQE points at no memory).
pub(crate) struct Fsync {
    _fd: SharedFd,
}

impl Completable for Fsync {
    type Output = io::Result<()>;

    fn complete(self, cqe: Cqe) -> io::Result<()> {
        cqe.result.map(|_| ())
    }
}

/// Syncs `fd`; `datasync` syncs only what reading the data back needs (`fdatasync`).
pub(crate) fn fsync(fd: &SharedFd, datasync: bool) -> Op<Fsync> {
    let flags = if datasync {
        types::FsyncFlags::DATASYNC
    } else {
        types::FsyncFlags::empty()
    };
    let sqe = opcode::Fsync::new(types::Fd(fd.raw())).flags(flags).build();
    // SAFETY: an FSYNC points at no memory.
    unsafe { Op::new(Fsync { _fd: fd.clone() }, sqe) }
}
