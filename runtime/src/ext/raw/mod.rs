//! Raw ops: one opcode each, straight on the op API ([`Op`](crate::ext::Op),
//! [`MultiOp`](crate::ext::MultiOp), [`Completable`](crate::ext::Completable)), the same
//! seam `corering-net` and `corering-fs` build on. One small file per opcode.
//!
//! "Raw": no buffering, ordering or retry. A short read is returned as it is, a write is
//! not rewritten, a readiness event is reported once. The file is named by a
//! [`SharedFd`](crate::ext::SharedFd), a clone of which the op keeps until its final CQE,
//! so the file stays open (and its number is not reused) while the kernel may act on it,
//! even if the future is dropped; a direct descriptor is named by its index. A
//! `SharedFd` belongs to its core, so a future that holds one of these ops is not `Send`:
//! run it with [`spawn_local`](crate::spawn_local) or
//! [`spawn_on_local`](crate::spawn_on_local).
//!
//! Grouped by the kernel that first has them: `READV`, `WRITEV`, `POLL_ADD` 5.1 · `NOP`,
//! `READ`, `WRITE`, `CLOSE` 5.6 · `SPLICE` 5.7 · `POLL_ADD` multishot 5.13.

mod close;
mod nop;
mod poll;
mod read;
mod splice;
mod vectored;
mod write;

pub use close::{close, Close};
pub use nop::{nop, Nop, NopSqe};
pub use poll::{poll_add, poll_multi, PollAdd, PollStream};
pub use read::{read, Read};
pub use splice::{splice, Splice};
pub use vectored::{readv_at, writev_at, ReadvAt, WritevAt};
pub use write::{write, Write};
