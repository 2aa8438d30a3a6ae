//! [`RingBuf`]: a buffer the kernel filled from a [`BufRing`](super::BufRing), handed out
//! until it is dropped and goes back to the ring.

use std::fmt;
use std::ops::Deref;
use std::rc::Rc;

use super::ring::Inner;

/// A buffer the kernel filled from a [`BufRing`](super::BufRing); goes back to the ring when dropped.
///
/// Derefs to the filled bytes not yet [`advance`](RingBuf::advance)d past. It is also an
/// [`IoBuf`](crate::buf::IoBuf), so a received chunk can be written out as it is (an echo copies
/// nothing), the buffer returning to the ring once the write gives it back and it is dropped.
pub struct RingBuf {
    ring: Rc<Inner>,
    bid: u16,
    /// Where the view starts: bytes before it were consumed ([`RingBuf::advance`]) or, on an
    /// incremental ring, belong to earlier chunks of the buffer.
    start: usize,
    /// The end of the bytes the kernel filled for this chunk.
    len: usize,
}

impl RingBuf {
    /// Bytes `start..len` of buffer `bid` of `ring`, handed out (the ring counted it).
    pub(super) fn new(ring: Rc<Inner>, bid: u16, start: usize, len: usize) -> RingBuf {
        RingBuf {
            ring,
            bid,
            start,
            len,
        }
    }

    /// The buffer id the kernel picked.
    pub fn bid(&self) -> u16 {
        self.bid
    }

    /// Drops the first `n` bytes of the view (at most all of them); the buffer itself goes
    /// back to the ring only when the `RingBuf` is dropped.
    pub fn advance(&mut self, n: usize) {
        self.start = (self.start + n).min(self.len);
    }

    /// Where the chunk's bytes start in its buffer, on an incremental ring.
    pub(crate) fn inc_offset(&self) -> Option<u32> {
        self.ring.is_incremental().then_some(self.start as u32)
    }

    fn ptr(&self) -> *const u8 {
        self.ring.buf_ptr(self.bid).wrapping_add(self.start)
    }
}

impl Deref for RingBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: the kernel wrote bytes `start..len` of buffer `bid` and gave them to us; it
        // will not touch them again until the buffer is pushed back to the ring (in Drop, once
        // every chunk of it is gone; an incremental ring's kernel writes only past the bytes
        // it reported); `start <= len <= buf_len`.
        unsafe { std::slice::from_raw_parts(self.ptr(), self.len - self.start) }
    }
}

impl Drop for RingBuf {
    fn drop(&mut self) {
        self.ring.release(self.bid);
    }
}

impl fmt::Debug for RingBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RingBuf")
            .field("bid", &self.bid)
            .field("len", &(self.len - self.start))
            .finish()
    }
}
