//! [`Chunk`]: a received chunk, a provided buffer of the core's ring or a buffer of its
//! own (the fallback path's, or the poll path's copy).

use std::fmt;
use std::ops::Deref;

use runtime::buf::{IoBuf, RingBuf};

use super::pool::WriteBuf;

/// A chunk of received bytes, from a stream socket's
/// [`read_chunk`](crate::stream::StreamSocket::read_chunk) (TCP's, Unix's or a read half's): a provided buffer of the core's ring (returned to
/// it when the chunk is dropped), or, where the core has no ring, a buffer of its own.
///
/// Derefs to the bytes; empty at end of stream. It is an [`IoBuf`], so it can be written
/// out as it is (`write_chunk(chunk)`, or `write_all_owned(chunk)`): an echo copies
/// nothing.
pub struct Chunk(ChunkInner);

enum ChunkInner {
    Ring(RingBuf),
    Own(Vec<u8>),
    /// A write-behind copy, back to the core's pool when sent (`io::pool`).
    Write(WriteBuf),
}

impl Chunk {
    /// A provided buffer of the ring, as a chunk.
    pub(crate) fn ring(buf: RingBuf) -> Chunk {
        Chunk(ChunkInner::Ring(buf))
    }

    /// The empty chunk: end of stream.
    pub(crate) fn empty() -> Chunk {
        Chunk(ChunkInner::Own(Vec::new()))
    }

    /// A chunk of bytes of its own (the fallback read path's copy).
    pub(crate) fn from_vec(bytes: Vec<u8>) -> Chunk {
        Chunk(ChunkInner::Own(bytes))
    }

    /// The poll path's copy of what it was lent, in a write-behind buffer.
    pub(crate) fn from_write(bytes: WriteBuf) -> Chunk {
        Chunk(ChunkInner::Write(bytes))
    }
}

impl Deref for Chunk {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.0 {
            ChunkInner::Ring(b) => b,
            ChunkInner::Own(v) => v,
            ChunkInner::Write(v) => v,
        }
    }
}

// SAFETY: every kind is an `IoBuf` itself or a `Vec` (a `RingBuf`'s bytes stay in the ring's
// memory, a `Vec`'s on the heap, while the value moves: a `WriteBuf` goes back to its pool
// only when dropped, which the op lifecycle does after the final CQE); this forwards to
// them unchanged.
unsafe impl IoBuf for Chunk {
    fn stable_ptr(&self) -> *const u8 {
        match &self.0 {
            ChunkInner::Ring(b) => b.stable_ptr(),
            ChunkInner::Own(v) => v.stable_ptr(),
            ChunkInner::Write(v) => v.stable_ptr(),
        }
    }

    fn bytes_init(&self) -> usize {
        self.len()
    }

    fn bytes_total(&self) -> usize {
        self.len()
    }
}

impl fmt::Debug for Chunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.0 {
            ChunkInner::Ring(_) => "ring",
            ChunkInner::Own(_) => "own",
            ChunkInner::Write(_) => "write",
        };
        f.debug_struct("Chunk")
            .field("len", &self.len())
            .field("buffer", &kind)
            .finish()
    }
}
