//! The per-core pool of write-behind buffers: `poll_write`'s copies of the caller's bytes
//! (a response's head and body, a TLS record) come from it and go back to it when their
//! send completes, so a write costs no `malloc`/`free` pair.
//!
//! Only small writes are pooled: a buffer of [`POOLED`] bytes holds every write up to that
//! size; a larger one is allocated to its size (its copy costs far more than the
//! allocation) and freed when sent. The pool is per thread, so per core: a chunk is not
//! `Send`, and its send completes on the core that started it, where the buffer goes back.
//! It keeps at most [`KEPT`] buffers (512 KiB on a core that had that many sends in flight
//! at once); an idle connection holds none, as before.

use std::cell::RefCell;
use std::ops::{Deref, DerefMut};

/// The size of a pooled buffer: writes up to this many bytes take one from the pool.
pub(crate) const POOLED: usize = 4096;

/// The most buffers a core's pool keeps; more coming back are freed.
const KEPT: usize = 128;

thread_local! {
    static POOL: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// A write-behind buffer: from the pool when its capacity is [`POOLED`], back to it when
/// dropped.
pub(crate) struct WriteBuf(Vec<u8>);

impl WriteBuf {
    /// An empty buffer with room for `len` bytes: a pooled one when `len` fits in one.
    pub(crate) fn with_capacity(len: usize) -> WriteBuf {
        if len > POOLED {
            return WriteBuf(Vec::with_capacity(len));
        }
        let reused = POOL
            .try_with(|p| p.try_borrow_mut().ok().and_then(|mut p| p.pop()))
            .ok()
            .flatten();
        WriteBuf(reused.unwrap_or_else(|| Vec::with_capacity(POOLED)))
    }
}

impl Drop for WriteBuf {
    fn drop(&mut self) {
        if self.0.capacity() != POOLED {
            return;
        }
        let mut buf = std::mem::take(&mut self.0);
        buf.clear();
        // During thread exit the pool may be gone: the buffer is then simply freed.
        let _ = POOL.try_with(|p| {
            if let Ok(mut p) = p.try_borrow_mut() {
                if p.len() < KEPT {
                    p.push(buf);
                }
            }
        });
    }
}

impl Deref for WriteBuf {
    type Target = Vec<u8>;

    fn deref(&self) -> &Vec<u8> {
        &self.0
    }
}

impl DerefMut for WriteBuf {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pooled() -> usize {
        POOL.with(|p| p.borrow().len())
    }

    #[test]
    fn small_writes_reuse_one_buffer_and_large_ones_are_their_own() {
        let first = WriteBuf::with_capacity(100);
        let ptr = first.as_ptr();
        assert_eq!(first.capacity(), POOLED);
        drop(first);
        assert_eq!(pooled(), 1);
        let mut again = WriteBuf::with_capacity(POOLED);
        assert_eq!(again.as_ptr(), ptr, "the buffer that came back is reused");
        again.extend_from_slice(b"bytes");
        drop(again);
        let reused = WriteBuf::with_capacity(1);
        assert!(reused.is_empty(), "a reused buffer comes back empty");
        drop(reused);
        let large = WriteBuf::with_capacity(POOLED + 1);
        assert!(large.capacity() > POOLED);
        drop(large);
        assert_eq!(pooled(), 1, "a large buffer is freed, not kept");
    }

    #[test]
    fn the_pool_keeps_a_bounded_number() {
        let bufs: Vec<_> = (0..KEPT + 10)
            .map(|_| WriteBuf::with_capacity(10))
            .collect();
        drop(bufs);
        assert_eq!(pooled(), KEPT);
    }
}
