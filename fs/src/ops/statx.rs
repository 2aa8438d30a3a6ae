//! `IORING_OP_STATX`: a file's metadata, by open fd (`AT_EMPTY_PATH`) or by path. See
//! `statx(2)`.
//!
//! The kernel writes a `struct statx` into a boxed buffer the op owns; the path is the
//! op's C string, or the `'static` empty string for an fd.

use std::ffi::{CStr, CString};
use std::io;

use io_uring::{opcode, types};
use runtime::ext::{Completable, Cqe, Op};

use crate::fd::SharedFd;
use crate::metadata::Metadata;

/// What statx is asked for: the basic `stat` fields and the birth time.
const MASK: u32 = libc::STATX_BASIC_STATS | libc::STATX_BTIME;

/// The empty path of a statx on an fd.
const EMPTY: &CStr = c"";

/// The data of a statx: the file or the path, and the buffer the kernel fills.
pub(crate) struct Statx {
    _fd: Option<SharedFd>,
    _path: Option<CString>,
    buf: Box<libc::statx>,
}

impl Completable for Statx {
    type Output = io::Result<Metadata>;

    fn complete(self, cqe: Cqe) -> io::Result<Metadata> {
        cqe.result?;
        Ok(Metadata::from_statx(&self.buf))
    }
}

fn zeroed_buf() -> Box<libc::statx> {
    // SAFETY: `statx` is plain old data (integers and padding); all zeroes is a valid value.
    Box::new(unsafe { std::mem::zeroed() })
}

/// The metadata of the open file `fd`, with `extra_mask` bits (`STATX_DIOALIGN`) asked for
/// beside the basic ones.
pub(crate) fn statx_fd(fd: &SharedFd, extra_mask: u32) -> Op<Statx> {
    let mut buf = zeroed_buf();
    let sqe = opcode::Statx::new(
        types::Fd(fd.raw()),
        EMPTY.as_ptr(),
        (&mut *buf as *mut libc::statx).cast(),
    )
    .flags(libc::AT_EMPTY_PATH | libc::AT_STATX_SYNC_AS_STAT)
    .mask(MASK | extra_mask)
    .build();
    let data = Statx {
        _fd: Some(fd.clone()),
        _path: None,
        buf,
    };
    // SAFETY: the SQE points at the boxed buffer, which `Statx` owns, and at a `'static`
    // empty string.
    unsafe { Op::new(data, sqe) }
}

/// The metadata of `path`; `follow` resolves a final symlink (else the link itself).
pub(crate) fn statx_path(path: CString, follow: bool) -> Op<Statx> {
    let mut buf = zeroed_buf();
    let mut flags = libc::AT_STATX_SYNC_AS_STAT;
    if !follow {
        flags |= libc::AT_SYMLINK_NOFOLLOW;
    }
    let sqe = opcode::Statx::new(
        types::Fd(libc::AT_FDCWD),
        path.as_ptr(),
        (&mut *buf as *mut libc::statx).cast(),
    )
    .flags(flags)
    .mask(MASK)
    .build();
    let data = Statx {
        _fd: None,
        _path: Some(path),
        buf,
    };
    // SAFETY: the SQE points at the boxed buffer and the path's heap block, both owned by
    // `Statx`.
    unsafe { Op::new(data, sqe) }
}
