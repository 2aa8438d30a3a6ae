//! The read direction of a stream socket behind the poll traits (`AsyncRead`,
//! `AsyncBufRead`, futures' and tokio's), [`read_chunk`](crate::TcpStream::read_chunk) and
//! the owned-buffer reads that go through it (`io::ordered`): [`ReadState`].
//!
//! # The walk from a poll to the op
//! A socket's `poll_read` (`stream/traits.rs`) calls [`ReadState::poll_read`], which asks
//! the socket's [`Source`] for its buffered bytes (`poll_fill_buf`), copies them out and
//! consumes them. The source is chosen once, at the first read, in one place
//! ([`ReadState`]'s `source`):
//! - the core's provided-buffer ring ([`RingRead`], `ring_read.rs`): one multishot `RECV`
//!   per connection picks buffers from the ring only when data arrives, so an idle
//!   connection holds none. The default.
//! - where the core has no ring (a kernel without provided-buffer rings, or
//!   [`Builder::recv_multishot(false)`](runtime::Builder::recv_multishot)), a 16 KiB buffer
//!   of the socket's own and one `RECV` per fill: the runtime's shared read-ahead
//!   ([`ReadAhead`]) over the socket's fd ([`SockFd`]).
//!
//! `read_chunk` is [`ReadState::poll_chunk`], the source's next chunk as it is (a ring
//! buffer, no copy). At most one receive is in flight, kept in the source between polls,
//! so a dropped poll loses nothing; dropping the socket mid-op is safe: an op moves its
//! data into the driver's ignored slot, and the buffers of CQEs nobody sees go back to the
//! ring.

use std::cell::RefCell;
use std::fmt;
use std::io;
use std::mem::MaybeUninit;
use std::task::{ready, Context, Poll};

use runtime::ext::io::{ReadAhead, ReadOp};
use runtime::ext::{Op, SharedFd};

use super::ring_read::DIRECT_MIN;
use super::{Chunk, RingRead};
use crate::ops::{self, Recv};

/// The fallback read buffer's size.
const OWN_CAP: usize = 16 * 1024;

/// What a socket reads through, chosen at its first read: the core's ring ([`RingRead`]),
/// or a buffer of its own ([`ReadAhead`] over [`SockFd`]). Only [`ReadState`] calls it.
pub(super) trait Source {
    /// Whether nothing is buffered, no receive is armed or in flight and the stream has
    /// not ended (see [`ReadState::is_idle`]).
    fn is_idle(&self) -> bool;

    /// The buffered bytes, receiving more first if there are none; empty at end of stream.
    fn poll_fill_buf(&mut self, fd: &SharedFd, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>>;

    /// Marks `amt` buffered bytes as read.
    fn consume(&mut self, amt: usize);

    /// Whether more bytes are in hand (a bundle's next buffer) after those consumed, so
    /// that `poll_fill_buf` is ready without receiving or taking a completion: a read with
    /// room left goes on copying them.
    fn has_buffered(&self) -> bool {
        false
    }

    /// A read of at least [`DIRECT_MIN`] bytes with nothing buffered: `Some(n)` bytes
    /// received straight into `out` (0 at end of stream), or `None` when the bytes go
    /// through `poll_fill_buf` as any read's do (the default; see `ring_read/direct.rs`).
    fn poll_direct(
        &mut self,
        _fd: &SharedFd,
        _cx: &mut Context<'_>,
        _out: &mut [MaybeUninit<u8>],
    ) -> Poll<io::Result<Option<usize>>> {
        Poll::Ready(Ok(None))
    }

    /// The next chunk: what is buffered, else the next receive's; empty at end of stream.
    fn poll_chunk(&mut self, fd: &SharedFd, cx: &mut Context<'_>) -> Poll<io::Result<Chunk>>;

    /// Stops reading for good, appending every byte in hand to `out`: ready once nothing
    /// of this socket's reads is in flight (see [`ReadState::poll_detach`]).
    fn poll_stop(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        out: &mut Vec<u8>,
    ) -> Poll<io::Result<()>>;

    /// Adds the source's state to its socket's `Debug`.
    fn debug_fields(&self, d: &mut fmt::DebugStruct<'_, '_>);
}

/// The read direction: the socket's [`Source`], once its first read chose one.
///
/// In a `RefCell`, borrowed only within one poll: the poll traits and `read_chunk` reach it
/// through `&mut` (no run-time borrow), the owned-buffer reads, which take `&self`, through
/// [`ReadState::poll_copy_shared`] and [`ReadState::is_idle`] (see `io::ordered`), so that
/// both kinds read the same bytes. Boxed: a socket is small (an `async fn` that takes one
/// by value holds it twice), and only a socket that reads has a source.
#[derive(Default)]
pub(crate) struct ReadState {
    /// `None` until the first read.
    source: RefCell<Option<Box<dyn Source>>>,
}

/// The source in `slot`, chosen now if no read chose it yet: the core's ring if it has one.
fn source<'a>(slot: &'a mut Option<Box<dyn Source>>, fd: &SharedFd) -> &'a mut dyn Source {
    slot.get_or_insert_with(|| match runtime::buf::core_ring() {
        Some(ring) => Box::new(RingRead::new(ring, true)),
        None => Box::new(ReadAhead::new(SockFd(fd.clone()), OWN_CAP)),
    })
    .as_mut()
}

/// Hands the buffered bytes of `slot`'s source (receiving first if there are none) to
/// `copy`, which copies out what it can and says how many; those are consumed. While
/// `copy` takes all it is given and the source has more in hand (a bundle's next buffers),
/// those go to `copy` too, without receiving: a large read takes a whole bundle (up to 64
/// KiB with the default 16 KiB buffers) in one call, as a `recv(2)` into it would.
fn poll_copy(
    slot: &mut Option<Box<dyn Source>>,
    fd: &SharedFd,
    cx: &mut Context<'_>,
    mut copy: impl FnMut(&[u8]) -> usize,
) -> Poll<io::Result<usize>> {
    let source = source(slot, fd);
    let mut total = 0;
    loop {
        let avail = ready!(source.poll_fill_buf(fd, cx))?;
        let (len, n) = (avail.len(), copy(avail));
        source.consume(n);
        total += n;
        if n == 0 || n < len || !source.has_buffered() {
            return Poll::Ready(Ok(total));
        }
    }
}

impl ReadState {
    /// Whether nothing is buffered, no receive is armed or in flight and the stream has
    /// not ended: an owned-buffer read may then receive straight into its own buffer
    /// without overtaking or racing this state (see `io::ordered`).
    pub(crate) fn is_idle(&self) -> bool {
        self.source.borrow().as_deref().is_none_or(|s| s.is_idle())
    }

    /// The buffered bytes, receiving more first if there are none; empty at end of stream.
    pub(crate) fn poll_fill_buf(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<&[u8]>> {
        source(self.source.get_mut(), fd).poll_fill_buf(fd, cx)
    }

    /// Marks `amt` buffered bytes as read; a chunk read to its end goes back to the ring.
    pub(crate) fn consume(&mut self, amt: usize) {
        if let Some(source) = self.source.get_mut() {
            source.consume(amt);
        }
    }

    /// Stops reading the socket for good, appending every byte received and not yet read
    /// to `out`, in order: the multishot receive is cancelled and its CQEs read to the last
    /// one. Ready once none of the socket's reads is in flight, so that the socket may
    /// leave its core ([`StreamSocket::detach`](crate::stream::StreamSocket)); end of
    /// stream is an `UnexpectedEof` error.
    pub(crate) fn poll_detach(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        out: &mut Vec<u8>,
    ) -> Poll<io::Result<()>> {
        match self.source.get_mut() {
            Some(source) => source.poll_stop(fd, cx, out),
            None => Poll::Ready(Ok(())),
        }
    }

    /// The next chunk: what is buffered, else the next receive's; empty at end of stream.
    pub(crate) fn poll_chunk(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<Chunk>> {
        source(self.source.get_mut(), fd).poll_chunk(fd, cx)
    }

    /// Reads into `out` (possibly uninitialised; only the `n` bytes reported are written):
    /// a read of at least [`DIRECT_MIN`] bytes with nothing buffered receives straight into
    /// it (`ring_read/direct.rs`); any other copies buffered bytes, receiving first if there
    /// are none.
    pub(crate) fn poll_read_into(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        out: &mut [MaybeUninit<u8>],
    ) -> Poll<io::Result<usize>> {
        if out.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let slot = self.source.get_mut();
        if out.len() >= DIRECT_MIN {
            if let Some(n) = ready!(source(slot, fd).poll_direct(fd, cx, out))? {
                return Poll::Ready(Ok(n));
            }
        }
        let mut filled = 0;
        poll_copy(slot, fd, cx, |avail| {
            let n = avail.len().min(out.len() - filled);
            // SAFETY: `MaybeUninit<u8>` has `u8`'s layout; `n` bytes fit in both ranges.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    avail.as_ptr(),
                    out[filled..].as_mut_ptr().cast::<u8>(),
                    n,
                );
            }
            filled += n;
            n
        })
    }

    /// Reads into `out` (see [`ReadState::poll_read_into`]).
    pub(crate) fn poll_read(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        out: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        // SAFETY: `MaybeUninit<u8>` has `u8`'s layout, and `poll_read_into` writes only
        // initialised bytes (received or copied), so `out` stays initialised.
        let out = unsafe { &mut *(out as *mut [u8] as *mut [MaybeUninit<u8>]) };
        self.poll_read_into(fd, cx, out)
    }

    /// Reads into tokio's `ReadBuf` (see [`ReadState::poll_read_into`]).
    #[cfg(feature = "tokio-io")]
    pub(crate) fn poll_read_buf(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        out: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        // SAFETY: `poll_read_into` never writes an uninitialised byte into the slice.
        let unfilled = unsafe { out.unfilled_mut() };
        let n = ready!(self.poll_read_into(fd, cx, unfilled))?;
        // SAFETY: it wrote (initialised) the first `n` bytes of the unfilled part.
        unsafe { out.assume_init(n) };
        out.advance(n);
        Poll::Ready(Ok(()))
    }

    /// For a caller holding only `&self` (an owned-buffer read, see `io::ordered`): hands
    /// the buffered bytes (receiving first if there are none) to `copy`, which copies out
    /// what it can and says how many; those are consumed. `Ok(0)` at end of stream.
    pub(crate) fn poll_copy_shared(
        &self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        copy: impl FnOnce(&[u8]) -> usize,
    ) -> Poll<io::Result<usize>> {
        // One pass: the owned-buffer copies write from their buffer's start.
        let mut copy = Some(copy);
        poll_copy(&mut self.source.borrow_mut(), fd, cx, |avail| {
            copy.take().map_or(0, |copy| copy(avail))
        })
    }
}

impl fmt::Debug for ReadState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Ok(source) = self.source.try_borrow() else {
            return f.write_str("ReadState { <in use> }");
        };
        let mut d = f.debug_struct("ReadState");
        match source.as_deref() {
            None => {
                d.field("source", &"unset");
            }
            Some(source) => source.debug_fields(&mut d),
        }
        d.finish()
    }
}

/// The socket's fd as the source of the fallback path's receives (a `RECV` into a buffer
/// of our own, through the runtime's [`ReadAhead`]).
#[derive(Clone)]
struct SockFd(SharedFd);

impl ReadOp for SockFd {
    type Op = Op<Recv<Vec<u8>>>;

    /// Receives into `buf`'s capacity: exactly `OWN_CAP`, which is what it is asked for.
    fn read(&self, buf: Vec<u8>, _len: usize, _offset: u64) -> Op<Recv<Vec<u8>>> {
        ops::recv(&self.0, buf)
    }
}

/// The fallback source: a buffer of the socket's own, filled by one `RECV` at a time.
impl Source for ReadAhead<SockFd> {
    fn is_idle(&self) -> bool {
        self.buffered().is_empty() && ReadAhead::is_idle(self)
    }

    fn poll_fill_buf(&mut self, _fd: &SharedFd, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        ReadAhead::poll_fill_buf(self, cx)
    }

    fn consume(&mut self, amt: usize) {
        ReadAhead::consume(self, amt);
    }

    /// Only with no read in flight (a read-ahead cannot be stopped without losing what it
    /// may be receiving): the buffered bytes.
    fn poll_stop(
        &mut self,
        _fd: &SharedFd,
        _cx: &mut Context<'_>,
        out: &mut Vec<u8>,
    ) -> Poll<io::Result<()>> {
        if !ReadAhead::is_idle(self) {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "a socket read without a buffer ring cannot leave its core with a read in flight",
            )));
        }
        let n = self.buffered().len();
        out.extend_from_slice(self.buffered());
        ReadAhead::consume(self, n);
        Poll::Ready(Ok(()))
    }

    /// A copy of what is buffered (receiving first if there is nothing): the buffer stays
    /// the socket's, to be filled again.
    fn poll_chunk(&mut self, _fd: &SharedFd, cx: &mut Context<'_>) -> Poll<io::Result<Chunk>> {
        let chunk = ready!(ReadAhead::poll_fill_buf(self, cx))?.to_vec();
        ReadAhead::consume(self, chunk.len());
        Poll::Ready(Ok(Chunk::from_vec(chunk)))
    }

    fn debug_fields(&self, d: &mut fmt::DebugStruct<'_, '_>) {
        d.field("source", &"own")
            .field("buffered", &self.buffered().len())
            .field("in_flight", &!ReadAhead::is_idle(self));
    }
}
