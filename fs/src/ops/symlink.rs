//! `IORING_OP_SYMLINKAT`: create a symbolic link. See `symlinkat(2)`; the target is stored
//! as given and need not exist.

use std::ffi::CString;

use io_uring::{opcode, types};
use runtime::ext::Op;

use super::{path_op, Paths};

/// Creates `link` as a symlink pointing at `target`.
pub(crate) fn symlink(target: CString, link: CString) -> Op<Paths> {
    let sqe =
        opcode::SymlinkAt::new(types::Fd(libc::AT_FDCWD), target.as_ptr(), link.as_ptr()).build();
    // SAFETY: the SQE points only into `target` and `link`, which the op owns.
    unsafe { path_op(target, Some(link), sqe) }
}
