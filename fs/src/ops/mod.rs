//! The file and path operations, one small file per opcode, built on the runtime's public
//! op API ([`Op`], [`Completable`]).
//!
//! Each op's data owns what its SQE points at (buffers, iovec arrays, path C strings, the
//! boxed `statx` buffer) and, for ops on an open file, a
//! [`SharedFd`](crate::fd::SharedFd) clone (see that module's invariant). A `CString`'s
//! bytes live in its own heap block, so they keep their address when the op data moves.
//! Grouped by the kernel that first has them:
//! - 5.1: `READV`, `WRITEV`, `FSYNC`
//! - 5.2: `SYNC_FILE_RANGE`
//! - 5.6: `OPENAT`, `STATX`, `FALLOCATE` (`READ`, `WRITE` and `CLOSE` are the runtime's
//!   `ext::raw` ops)
//! - 5.11: `UNLINKAT`, `RENAMEAT`
//! - 5.15: `MKDIRAT`, `SYMLINKAT`, `LINKAT`
//! - 6.9: `FTRUNCATE`

use std::ffi::CString;
use std::io;

use runtime::ext::{Completable, Cqe, Op};

mod fallocate;
mod fsync;
mod ftruncate;
mod link;
mod mkdir;
mod open;
mod rename;
mod statx;
mod symlink;
mod sync_range;
mod unlink;

pub(crate) use fallocate::fallocate;
pub(crate) use fsync::fsync;
pub(crate) use ftruncate::ftruncate;
pub(crate) use link::link;
pub(crate) use mkdir::mkdir;
pub(crate) use open::open;
// Positional reads and writes are the runtime's raw ops (the same SQE, the same data).
pub(crate) use rename::rename;
pub(crate) use runtime::ext::raw::{read as read_at, Read as ReadAt};
pub(crate) use runtime::ext::raw::{readv_at, writev_at};
pub(crate) use runtime::ext::raw::{write as write_at, Write as WriteAt};
pub(crate) use statx::{statx_fd, statx_path, Statx};
pub(crate) use symlink::symlink;
pub(crate) use sync_range::sync_range;
pub(crate) use unlink::unlink;

/// The data of an op that names one or two paths and gives back only success or an error
/// (unlink, mkdir, rename, link, symlink).
pub(crate) struct Paths {
    _first: CString,
    _second: Option<CString>,
}

impl Completable for Paths {
    type Output = io::Result<()>;

    fn complete(self, cqe: Cqe) -> io::Result<()> {
        cqe.result.map(|_| ())
    }
}

/// Creates a path op from its SQE and the C strings it points at.
///
/// # Safety
/// Every pointer in `sqe` must point into `first` or `second` (or at `'static` memory).
unsafe fn path_op(
    first: CString,
    second: Option<CString>,
    sqe: io_uring::squeue::Entry,
) -> Op<Paths> {
    let data = Paths {
        _first: first,
        _second: second,
    };
    // SAFETY: the caller's contract: the SQE points only into the C strings, whose heap
    // blocks `Paths` owns and which do not move when it moves.
    unsafe { Op::new(data, sqe) }
}
