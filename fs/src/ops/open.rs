//! `IORING_OP_OPENAT`: open (or create) a file by path. See `openat(2)`.
//!
//! The result is a new fd: one that arrives after the future was dropped is closed by the
//! driver (`Completable::RETURNS_FD`), so a cancelled open leaks nothing.

use std::ffi::CString;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

use io_uring::{opcode, types};
use runtime::ext::{Completable, Cqe, Op};

/// The data of an open: the path the kernel reads.
pub(crate) struct Open {
    _path: CString,
}

impl Completable for Open {
    type Output = io::Result<OwnedFd>;

    const RETURNS_FD: bool = true;

    fn complete(self, cqe: Cqe) -> io::Result<OwnedFd> {
        let raw = cqe.result?;
        // SAFETY: a successful openat's result is a new fd that nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(raw as i32) })
    }
}

/// Opens `path` (relative paths from the current directory) with `flags` and, when a file
/// is created, `mode`.
pub(crate) fn open(path: CString, flags: i32, mode: u32) -> Op<Open> {
    let sqe = opcode::OpenAt::new(types::Fd(libc::AT_FDCWD), path.as_ptr())
        .flags(flags)
        .mode(mode)
        .build();
    // SAFETY: the SQE points only into the path's heap block, which `Open` owns.
    unsafe { Op::new(Open { _path: path }, sqe) }
}
