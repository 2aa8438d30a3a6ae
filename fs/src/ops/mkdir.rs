//! `IORING_OP_MKDIRAT`: create a directory. See `mkdirat(2)`; the process umask applies to
//! `mode`.

use std::ffi::CString;

use io_uring::{opcode, types};
use runtime::ext::Op;

use super::{path_op, Paths};

/// Creates the directory `path` with permission bits `mode`.
pub(crate) fn mkdir(path: CString, mode: u32) -> Op<Paths> {
    let sqe = opcode::MkDirAt::new(types::Fd(libc::AT_FDCWD), path.as_ptr())
        .mode(mode)
        .build();
    // SAFETY: the SQE points only into `path`, which the op owns.
    unsafe { path_op(path, None, sqe) }
}
