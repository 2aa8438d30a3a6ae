//! The operations the runtime itself provides, one small file per opcode.
//!
//! Each is built on the public op API ([`Op`](crate::driver::Op) and
//! [`Completable`](crate::driver::Completable)), the same seam `net` and `fs` use.
//! Grouped by the kernel that first has them: `READV`, `WRITEV` 5.1 · `NOP`, `READ`, `WRITE`,
//! `CLOSE` 5.6 · `POLL_ADD` 5.1 · `SPLICE` 5.7.

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
