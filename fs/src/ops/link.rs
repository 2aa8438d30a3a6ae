//! `IORING_OP_LINKAT`: create a hard link. See `linkat(2)` (flags 0: a symlink `original`
//! is linked itself, not followed, as `link(2)` does on Linux).

use std::ffi::CString;

use io_uring::{opcode, types};
use runtime::ext::Op;

use super::{path_op, Paths};

/// Creates `link` as a new name for `original`.
pub(crate) fn link(original: CString, link: CString) -> Op<Paths> {
    let sqe = opcode::LinkAt::new(
        types::Fd(libc::AT_FDCWD),
        original.as_ptr(),
        types::Fd(libc::AT_FDCWD),
        link.as_ptr(),
    )
    .build();
    // SAFETY: the SQE points only into `original` and `link`, which the op owns.
    unsafe { path_op(original, Some(link), sqe) }
}
