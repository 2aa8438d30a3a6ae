//! The operations the runtime itself provides, one small file per opcode.
//!
//! Each is built on the public op API ([`Op`](crate::driver::Op) and
//! [`Completable`](crate::driver::Completable)), the same seam `net` and `fs` use.
//! Grouped by the kernel that first has them: `NOP`, `READ`, `WRITE` 5.6 · `CLOSE` 5.6.

mod close;
mod nop;
mod read;
mod write;

pub use close::{close, Close};
pub use nop::{nop, Nop};
pub use read::{read, Read};
pub use write::{write, Write};
