//! [`AlignedBuf`]: an owned, zero-initialised buffer at an aligned address, for `O_DIRECT`.
//!
//! Direct I/O (`open(2)`, "O_DIRECT") needs the buffer's address, the length and the file
//! offset aligned, usually to the device's logical block size (512 or 4096 bytes); a `Vec`
//! gives no such promise. The block is allocated once with the requested alignment and
//! freed on drop; its address never changes, as the runtime's [`IoBuf`] contract requires.
//!
//! # Invariant
//! `ptr` points to `cap` bytes allocated with `layout` (or, for `cap == 0`, is a dangling
//! pointer aligned to `align` and never dereferenced), all of them initialised (zeroed at
//! allocation); `len <= cap`.

use std::alloc::{self, Layout};
use std::fmt;
use std::io;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use runtime::buf::{IoBuf, IoBufMut};

/// The alignment [`AlignedBuf::with_capacity`] uses: a page, which satisfies every common
/// device's direct I/O rules.
pub const DEFAULT_ALIGN: usize = 4096;

/// An owned byte buffer whose block starts at an aligned address, for `O_DIRECT` I/O.
///
/// Its capacity is fixed at creation; `len` bytes of it are the contents (what a write sends,
/// what a read filled). All of the capacity is zeroed at first, so any length up to it can
/// be set.
///
/// ```
/// let mut buf = corering_fs::AlignedBuf::new(8192, 4096)?;
/// assert_eq!(buf.stable_ptr_addr() % 4096, 0);
/// buf.extend_from_slice(b"hello");
/// assert_eq!(&buf[..], b"hello");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    cap: usize,
    len: usize,
    align: usize,
}

// SAFETY: the buffer uniquely owns its block (no shared interior state), like a `Vec<u8>`.
unsafe impl Send for AlignedBuf {}
// SAFETY: as above; `&AlignedBuf` only reads.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `capacity` zeroed bytes at an address aligned to `align`, with length 0.
    ///
    /// `align` must be a power of two: otherwise (or if the size overflows) this is
    /// `InvalidInput`. An allocation failure aborts, as `Vec`'s does.
    pub fn new(capacity: usize, align: usize) -> io::Result<AlignedBuf> {
        let layout = Layout::from_size_align(capacity, align).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad AlignedBuf layout: {capacity} bytes aligned to {align}"),
            )
        })?;
        let ptr = if capacity == 0 {
            // A dangling pointer at the alignment: never read, written or freed.
            NonNull::new(std::ptr::null_mut::<u8>().wrapping_add(align)).expect("align is non-zero")
        } else {
            // SAFETY: the layout has a non-zero size.
            let raw = unsafe { alloc::alloc_zeroed(layout) };
            match NonNull::new(raw) {
                Some(p) => p,
                None => alloc::handle_alloc_error(layout),
            }
        };
        Ok(AlignedBuf {
            ptr,
            cap: capacity,
            len: 0,
            align,
        })
    }

    /// Allocates `capacity` zeroed bytes aligned to [`DEFAULT_ALIGN`] (4096).
    pub fn with_capacity(capacity: usize) -> io::Result<AlignedBuf> {
        AlignedBuf::new(capacity, DEFAULT_ALIGN)
    }

    /// The alignment of the block's address.
    pub fn alignment(&self) -> usize {
        self.align
    }

    /// How many bytes the buffer can hold.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// How many bytes are the contents.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the contents are empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The block's address, for alignment checks.
    pub fn stable_ptr_addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// Sets the length of the contents (the bytes past the old length keep what they held:
    /// zeroes, or earlier contents).
    ///
    /// # Panics
    /// If `len` is larger than the capacity.
    pub fn set_len(&mut self, len: usize) {
        assert!(
            len <= self.cap,
            "length {len} past the capacity {} of an AlignedBuf",
            self.cap
        );
        self.len = len;
    }

    /// Empties the contents (the capacity stays).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Appends `data` to the contents.
    ///
    /// # Panics
    /// If the contents would grow past the capacity (the buffer never reallocates: that
    /// would lose its alignment promise for a moving target).
    pub fn extend_from_slice(&mut self, data: &[u8]) {
        let end = self.len.checked_add(data.len()).filter(|&e| e <= self.cap);
        let end = end.unwrap_or_else(|| {
            panic!(
                "appending {} bytes to {} overflows an AlignedBuf of {}",
                data.len(),
                self.len,
                self.cap
            )
        });
        let start = self.len;
        self.spare_and_contents_mut()[start..end].copy_from_slice(data);
        self.len = end;
    }

    /// All `capacity` bytes, contents and the rest.
    fn spare_and_contents_mut(&mut self) -> &mut [u8] {
        // SAFETY: the invariant: `cap` initialised bytes at `ptr` (none when `cap == 0`,
        // where a dangling aligned pointer is valid for an empty slice), uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.cap) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.cap != 0 {
            // SAFETY: the invariant: allocated with exactly this layout, freed only here.
            unsafe {
                alloc::dealloc(
                    self.ptr.as_ptr(),
                    Layout::from_size_align_unchecked(self.cap, self.align),
                )
            };
        }
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: the invariant: `len <= cap` initialised bytes at `ptr`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        &mut self.spare_and_contents_mut()[..len]
    }
}

impl fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.len)
            .field("capacity", &self.cap)
            .field("align", &self.align)
            .finish()
    }
}

// SAFETY: the block is allocated once and never moves or shrinks while the value lives;
// all `cap` bytes are initialised (the invariant), `len` of them are the contents.
unsafe impl IoBuf for AlignedBuf {
    fn stable_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.len
    }
    fn bytes_total(&self) -> usize {
        self.cap
    }
}

// SAFETY: as for IoBuf; `stable_mut_ptr` is the same address, and `set_init` only grows
// the length (every byte is initialised anyway).
unsafe impl IoBufMut for AlignedBuf {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    unsafe fn set_init(&mut self, pos: usize) {
        if pos > self.len {
            self.len = pos.min(self.cap);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_zeroed() {
        for align in [512, 4096, 65536] {
            let mut b = AlignedBuf::new(3 * align, align).unwrap();
            assert_eq!(b.stable_ptr_addr() % align, 0);
            assert_eq!(b.bytes_total(), 3 * align);
            b.set_len(b.capacity());
            assert!(b.iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn bad_alignment_is_invalid_input() {
        let err = AlignedBuf::new(4096, 3).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn zero_capacity() {
        let b = AlignedBuf::with_capacity(0).unwrap();
        assert!(b.is_empty());
        assert_eq!(&b[..], b"");
    }

    #[test]
    #[should_panic(expected = "overflows")]
    fn extend_past_capacity_panics() {
        AlignedBuf::new(4, 4).unwrap().extend_from_slice(b"hello");
    }
}
