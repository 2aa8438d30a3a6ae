//! `IORING_OP_RENAMEAT`: rename a file or directory, replacing the target. See
//! `renameat2(2)` (flags 0: plain `rename`).

use std::ffi::CString;

use io_uring::{opcode, types};
use runtime::ext::Op;

use super::{path_op, Paths};

/// Renames `from` to `to`.
pub(crate) fn rename(from: CString, to: CString) -> Op<Paths> {
    let sqe = opcode::RenameAt::new(
        types::Fd(libc::AT_FDCWD),
        from.as_ptr(),
        types::Fd(libc::AT_FDCWD),
        to.as_ptr(),
    )
    .build();
    // SAFETY: the SQE points only into `from` and `to`, which the op owns.
    unsafe { path_op(from, Some(to), sqe) }
}
