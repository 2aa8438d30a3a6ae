//! `IORING_OP_UNLINKAT`: remove a file, or with `AT_REMOVEDIR` an empty directory. See
//! `unlinkat(2)`.

use std::ffi::CString;

use io_uring::{opcode, types};
use runtime::ext::Op;

use super::{path_op, Paths};

/// Removes `path`: an empty directory when `dir`, else a non-directory.
pub(crate) fn unlink(path: CString, dir: bool) -> Op<Paths> {
    let flags = if dir { libc::AT_REMOVEDIR } else { 0 };
    let sqe = opcode::UnlinkAt::new(types::Fd(libc::AT_FDCWD), path.as_ptr())
        .flags(flags)
        .build();
    // SAFETY: the SQE points only into `path`, which the op owns.
    unsafe { path_op(path, None, sqe) }
}
