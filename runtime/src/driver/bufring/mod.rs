//! Provided-buffer rings: buffers the kernel picks for a receive or read (`BufRing`), the
//! chunks handed out of them (`RingBuf`), which buffers each CQE filled (`Claim`, claimed as
//! the driver reaps it), and each core's shared receive ring (`core_ring`).
//!
//! They live in the driver because the op lifecycle reaps into them: a multishot receive
//! that names its ring has its buffers claimed in CQE order as they are reaped, so a dropped
//! op's buffers go back to the ring. The public face is `runtime::buf` (and
//! `runtime::ext::BufRingExt` for readers); `buf` implements `IoBuf` for `RingBuf`.

mod claim;
mod core_ring;
mod ring;
mod ring_buf;

pub(crate) use claim::Claim;
pub(crate) use core_ring::CoreRing;
pub use core_ring::{core_ring, grow_core_ring};
pub use ring::{BufRing, BufRingExt};
pub use ring_buf::RingBuf;
