//! Owned buffers: the memory an op hands to the kernel.
//!
//! An op future owns its buffer until the kernel's final CQE (see ARCHITECTURE.md, "The op
//! lifecycle"), so the buffer's bytes must stay at one address while the buffer value itself
//! moves (into the future, into an ignored slot when the future is dropped). The traits here
//! are `unsafe` to implement for exactly that reason: an implementation promises that
//! [`IoBuf::stable_ptr`] does not change when the value is moved.
//!
//! Implemented for `Vec<u8>`, `Box<[u8]>`, `&'static [u8]`, `&'static str` and for
//! [`Slice`]s of any of them. [`BufRing`] is the other kind: buffers the kernel picks.

use std::ops::{Bound, RangeBounds};

pub use crate::driver::bufring::{core_ring, BufRing, RingBuf};

/// A buffer the kernel may read from, with a stable address.
///
/// # Safety
/// `stable_ptr` must point to `bytes_total()` bytes that stay valid, and at the same
/// address, while the value is moved, until the value is dropped; the first
/// `bytes_init()` of them must be initialised.
pub unsafe trait IoBuf: Unpin + 'static {
    /// The address of the first byte.
    fn stable_ptr(&self) -> *const u8;

    /// How many bytes are initialised (what a write sends).
    fn bytes_init(&self) -> usize;

    /// How many bytes the buffer holds in all (what a read may fill).
    fn bytes_total(&self) -> usize;

    /// A view of `range` of the buffer that owns the buffer, for ops on part of it.
    ///
    /// # Panics
    /// If the range ends past `bytes_total()` or starts after it ends, as slicing does.
    fn slice(self, range: impl RangeBounds<usize>) -> Slice<Self>
    where
        Self: Sized,
    {
        let begin = match range.start_bound() {
            Bound::Included(&n) => n,
            Bound::Excluded(&n) => n + 1,
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&n) => n + 1,
            Bound::Excluded(&n) => n,
            Bound::Unbounded => self.bytes_total(),
        };
        assert!(
            begin <= end && end <= self.bytes_total(),
            "slice {begin}..{end} out of range for a buffer of {} bytes",
            self.bytes_total()
        );
        Slice {
            buf: self,
            begin,
            end,
        }
    }
}

/// A buffer the kernel may write into, with a stable address.
///
/// # Safety
/// As for [`IoBuf`]; in addition `stable_mut_ptr` is the same address as `stable_ptr`, and
/// `set_init` only ever grows the initialised length.
pub unsafe trait IoBufMut: IoBuf {
    /// The address of the first byte, for the kernel to write to.
    fn stable_mut_ptr(&mut self) -> *mut u8;

    /// Records that the first `pos` bytes are now initialised (the kernel wrote them).
    ///
    /// # Safety
    /// The first `pos` bytes must have been initialised.
    unsafe fn set_init(&mut self, pos: usize);
}

/// A `Vec`'s spare capacity as a buffer to read into: an op fills the bytes after the
/// Vec's length and the length grows by what it wrote, as tokio's `read_buf` does (a plain
/// `Vec` is filled from index 0 up to its capacity, the owned-buffer convention of
/// tokio-uring and monoio). [`Spare::into_inner`] gives the Vec back.
///
/// ```
/// use runtime::buf::{IoBuf, IoBufMut, Spare};
///
/// let mut v = Vec::with_capacity(8);
/// v.extend_from_slice(b"ab");
/// let mut spare = Spare::new(v);
/// assert_eq!((spare.bytes_init(), spare.bytes_total()), (0, 6));
/// // SAFETY: writes 3 bytes inside the spare capacity, then records them.
/// unsafe {
///     std::ptr::copy_nonoverlapping(b"cde".as_ptr(), spare.stable_mut_ptr(), 3);
///     spare.set_init(3);
/// }
/// assert_eq!(spare.into_inner(), b"abcde");
/// ```
#[derive(Debug)]
pub struct Spare {
    vec: Vec<u8>,
    /// The Vec's length when it was wrapped: where the spare capacity starts.
    base: usize,
}

impl Spare {
    /// Wraps `vec`; reads go after its current length.
    pub fn new(vec: Vec<u8>) -> Spare {
        let base = vec.len();
        Spare { vec, base }
    }

    /// The Vec, its length grown by what was read into it.
    pub fn into_inner(self) -> Vec<u8> {
        self.vec
    }
}

// SAFETY: the Vec's heap block does not move when the value moves; the buffer is the
// allocated, uninitialised bytes `base..capacity`, of which `len - base` are initialised.
unsafe impl IoBuf for Spare {
    fn stable_ptr(&self) -> *const u8 {
        // SAFETY: `base <= capacity`, so the pointer is inside (or one past) the block.
        unsafe { self.vec.as_ptr().add(self.base) }
    }
    fn bytes_init(&self) -> usize {
        self.vec.len() - self.base
    }
    fn bytes_total(&self) -> usize {
        self.vec.capacity() - self.base
    }
}

// SAFETY: as for IoBuf; the length is only raised over bytes the kernel wrote.
unsafe impl IoBufMut for Spare {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        // SAFETY: as in `stable_ptr`.
        unsafe { self.vec.as_mut_ptr().add(self.base) }
    }
    unsafe fn set_init(&mut self, pos: usize) {
        let len = self.base + pos;
        if len > self.vec.len() {
            // SAFETY: `len <= capacity` and the bytes up to it are initialised (the
            // caller's contract for `pos`, on top of the Vec's own `base` bytes).
            unsafe { self.vec.set_len(len) };
        }
    }
}

// SAFETY: a Vec's heap block does not move when the Vec value moves; `len` bytes are
// initialised and `capacity` bytes are allocated.
unsafe impl IoBuf for Vec<u8> {
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.len()
    }
    fn bytes_total(&self) -> usize {
        self.capacity()
    }
}

// SAFETY: as for IoBuf; set_len is only raised to bytes the kernel wrote (caller's contract).
unsafe impl IoBufMut for Vec<u8> {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.as_mut_ptr()
    }
    unsafe fn set_init(&mut self, pos: usize) {
        if pos > self.len() {
            // SAFETY: pos <= capacity and the bytes are initialised (the caller's contract).
            unsafe { self.set_len(pos) };
        }
    }
}

// SAFETY: a boxed slice's heap block does not move with the Box; all of it is initialised.
unsafe impl IoBuf for Box<[u8]> {
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.len()
    }
    fn bytes_total(&self) -> usize {
        self.len()
    }
}

// SAFETY: as above; every byte is always initialised, so set_init has nothing to record.
unsafe impl IoBufMut for Box<[u8]> {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.as_mut_ptr()
    }
    unsafe fn set_init(&mut self, _pos: usize) {}
}

// SAFETY: 'static data never moves and is never freed.
unsafe impl IoBuf for &'static [u8] {
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.len()
    }
    fn bytes_total(&self) -> usize {
        self.len()
    }
}

// SAFETY: 'static data never moves and is never freed.
unsafe impl IoBuf for &'static str {
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.len()
    }
    fn bytes_total(&self) -> usize {
        self.len()
    }
}

/// A range of an owned buffer; ops on it read or write only that range.
#[derive(Debug)]
pub struct Slice<T> {
    buf: T,
    begin: usize,
    end: usize,
}

impl<T> Slice<T> {
    /// The offset of the view's first byte in the whole buffer.
    pub fn begin(&self) -> usize {
        self.begin
    }

    /// The offset one past the view's last byte.
    pub fn end(&self) -> usize {
        self.end
    }

    /// The whole buffer, giving up the view.
    pub fn into_inner(self) -> T {
        self.buf
    }

    /// The whole buffer, by reference.
    pub fn get_ref(&self) -> &T {
        &self.buf
    }
}

// SAFETY: the view's pointer is an offset into the inner buffer's stable block, and its
// bounds lie inside the inner buffer (checked in `IoBuf::slice`).
unsafe impl<T: IoBuf> IoBuf for Slice<T> {
    fn stable_ptr(&self) -> *const u8 {
        self.buf.stable_ptr().wrapping_add(self.begin)
    }
    fn bytes_init(&self) -> usize {
        self.buf.bytes_init().clamp(self.begin, self.end) - self.begin
    }
    fn bytes_total(&self) -> usize {
        self.end - self.begin
    }
}

// SAFETY: as for IoBuf; init positions are translated to the inner buffer's offsets.
unsafe impl<T: IoBufMut> IoBufMut for Slice<T> {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.buf.stable_mut_ptr().wrapping_add(self.begin)
    }
    unsafe fn set_init(&mut self, pos: usize) {
        // Bytes before `begin` count as initialised only if they already were: a read into
        // a view that starts past the initialised part leaves the inner length alone.
        if self.begin <= self.buf.bytes_init() {
            // SAFETY: bytes up to `begin` were initialised and the caller initialised `pos`
            // bytes from `begin`.
            unsafe { self.buf.set_init(self.begin + pos) };
        }
    }
}

// SAFETY: a `RingBuf`'s bytes live in its ring's buffer memory, which the ring handle it
// holds keeps allocated and in place (`driver::bufring`'s invariant); moving the `RingBuf`
// moves only that handle, so the slice it derefs to stays at one address. The kernel wrote
// every byte of that slice, so all of them are initialised, and no op of the ring writes
// them until the buffer is pushed back (the `RingBuf`'s drop).
unsafe impl IoBuf for RingBuf {
    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }

    fn bytes_init(&self) -> usize {
        self.len()
    }

    fn bytes_total(&self) -> usize {
        self.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vec_init_and_total() {
        let v = Vec::<u8>::with_capacity(16);
        assert_eq!(v.bytes_init(), 0);
        assert!(v.bytes_total() >= 16);
    }

    #[test]
    fn slice_bounds() {
        let v = vec![1u8; 10];
        let s = v.slice(2..5);
        assert_eq!(s.bytes_total(), 3);
        assert_eq!(s.bytes_init(), 3);
        assert_eq!(s.begin(), 2);
        assert_eq!(s.into_inner().len(), 10);
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn slice_out_of_range_panics() {
        let _ = vec![0u8; 4].slice(2..9);
    }
}
