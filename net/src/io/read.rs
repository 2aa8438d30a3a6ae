//! The read direction of a stream socket behind the poll traits (`AsyncRead`,
//! `AsyncBufRead`, futures' and tokio's) and [`read_chunk`](crate::TcpStream::read_chunk).
//!
//! # Where the bytes land
//! By default a connection owns no receive buffer: one multishot `RECV` per connection
//! picks buffers from its core's shared provided-buffer ring ([`runtime::buf::core_ring`]),
//! so the kernel takes a buffer only when data arrives, and an idle connection holds none.
//! A chunk is held while its bytes are being consumed and goes back to the ring as soon as
//! the last one is; reading a 1-byte message and then waiting holds no buffer.
//!
//! The op's backlog is bounded, so a connection nobody reads cannot drain the ring: the
//! kernel ends each receive after [`BACKLOG`] buffers' worth of bytes (a multishot byte
//! limit, Linux 6.17), and the driver cancels it at [`BACKLOG`] CQEs not yet read (on older
//! kernels the one bound, loose by the up to 32 receives the kernel may do in one go). The
//! receive is re-armed when the reader asks for more. When the ring is empty the kernel ends
//! the receive with `ENOBUFS`; the reader re-arms at once if buffers came back meanwhile,
//! else as soon as one does: no connection stalls longer than a buffer takes to come back.
//!
//! Where the core has no ring (a kernel without provided-buffer rings, or
//! [`Builder::recv_multishot(false)`](runtime::Builder::recv_multishot)) the reader falls
//! back to a 16 KiB buffer of its own and one `RECV` per fill: the runtime's shared
//! read-ahead ([`runtime::ext::io::ReadAhead`]) over the socket's fd.
//!
//! Dropping the socket mid-op is safe: an op moves its data into the driver's ignored
//! slot, and the buffers of CQEs nobody sees go back to the ring.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::task::{ready, Context, Poll};

use runtime::buf::{BufRing, RingBuf};
use runtime::ext::io::{ReadAhead, ReadOp};
use runtime::ext::{BufRingExt, MultiOp, Op, SharedFd};

use super::Chunk;
use crate::ops::{self, Recv, RecvMulti};

/// Received chunks a connection may hold unread before its receive is paused.
const BACKLOG: u16 = 4;

thread_local! {
    /// This thread's kernel refused a multishot recv's byte limit (before Linux 6.17): arm
    /// without one, bounded by the driver's backlog cancel alone.
    static NO_LIMIT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}
/// The fallback read buffer's size.
const OWN_CAP: usize = 16 * 1024;

/// The read direction: where it reads from, chosen at the first read.
///
/// In a `RefCell`, borrowed only within one poll: the poll traits and `read_chunk` reach it
/// through `&mut` (no run-time borrow), the owned-buffer reads, which take `&self`, through
/// [`ReadState::with`] (see `io::ordered`), so that both kinds read the same bytes.
#[derive(Default)]
pub(crate) struct ReadState {
    inner: RefCell<ReadInner>,
}

/// What [`ReadState`] holds.
#[derive(Default)]
pub(crate) struct ReadInner {
    source: Source,
}

#[derive(Default)]
enum Source {
    /// Nothing read yet.
    #[default]
    Unset,
    /// Boxed, as `Own`: a socket is small (an `async fn` that takes one by value holds it
    /// twice), and only a socket that reads has one.
    Ring(Box<RingRead>),
    /// Boxed: the fallback path, kept out of every socket's size.
    Own(Box<ReadAhead<SockFd>>),
}

/// Reading through a multishot receive into a provided-buffer ring: the core's (the read
/// path of every stream) or one of the caller's ([`RecvStream`](crate::RecvStream)).
pub(crate) struct RingRead {
    ring: BufRing,
    /// `ring` is the core's: arm on its current ring, and grow it when it runs dry.
    core: bool,
    /// Receives that ended with `ENOBUFS`.
    empties: u64,
    /// The chunk being consumed (never empty).
    chunk: Option<RingBuf>,
    /// The rest of a bundle receive's buffers, in order.
    more: VecDeque<RingBuf>,
    /// Arm receives as bundles (several buffers per CQE).
    bundle: bool,
    op: Option<MultiOp<RecvMulti>>,
    /// The op in flight was armed with a byte limit.
    limited: bool,
    /// Whether receives are multishot (see `ops::recv_multi_limited`).
    multishot: bool,
    /// The last receive ended with `ENOBUFS`: re-arm once the ring's return count moves
    /// past this.
    starved: Option<u64>,
    eof: bool,
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

impl ReadState {
    /// The state, for a caller holding only `&self` (an owned-buffer read); borrowed for
    /// the call of `f`, which must not reach this state again.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut ReadInner) -> R) -> R {
        f(&mut self.inner.borrow_mut())
    }

    /// See [`ReadInner::poll_fill_buf`].
    pub(crate) fn poll_fill_buf(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<&[u8]>> {
        self.inner.get_mut().poll_fill_buf(fd, cx)
    }

    /// See [`ReadInner::consume`].
    pub(crate) fn consume(&mut self, amt: usize) {
        self.inner.get_mut().consume(amt)
    }

    /// See [`ReadInner::poll_read`].
    pub(crate) fn poll_read(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        out: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.inner.get_mut().poll_read(fd, cx, out)
    }

    /// See [`ReadInner::poll_chunk`].
    pub(crate) fn poll_chunk(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<Chunk>> {
        self.inner.get_mut().poll_chunk(fd, cx)
    }

    /// See [`ReadInner::poll_read_buf`].
    #[cfg(feature = "tokio-io")]
    pub(crate) fn poll_read_buf(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        out: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.inner.get_mut().poll_read_buf(fd, cx, out)
    }
}

impl ReadInner {
    /// Picks the source at the first read: the core's ring if it has one.
    fn source(&mut self, fd: &SharedFd) -> &mut Source {
        if let Source::Unset = self.source {
            self.source = match runtime::buf::core_ring() {
                Some(ring) => Source::Ring(Box::new(RingRead::new(ring, true))),
                None => Source::Own(Box::new(ReadAhead::new(SockFd(fd.clone()), OWN_CAP))),
            };
        }
        &mut self.source
    }

    /// Whether nothing is buffered, no receive is armed or in flight and the stream has
    /// not ended: an owned-buffer read may then receive straight into its own buffer
    /// without overtaking or racing this state (see `io::ordered`).
    pub(crate) fn is_idle(&self) -> bool {
        match &self.source {
            Source::Unset => true,
            Source::Ring(r) => r.chunk.is_none() && r.more.is_empty() && r.op.is_none() && !r.eof,
            Source::Own(o) => o.buffered().is_empty() && o.is_idle(),
        }
    }

    /// The buffered bytes, receiving more first if there are none; empty at end of stream.
    pub(crate) fn poll_fill_buf(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<&[u8]>> {
        match self.source(fd) {
            Source::Ring(r) => {
                if r.chunk.is_none() && !r.eof {
                    match ready!(r.poll_chunk(fd, cx)) {
                        Ok(Some(c)) => r.chunk = Some(c),
                        Ok(None) => r.eof = true,
                        Err(e) => return Poll::Ready(Err(e)),
                    }
                }
                Poll::Ready(Ok(r.chunk.as_deref().unwrap_or(&[])))
            }
            Source::Own(o) => o.poll_fill_buf(cx),
            Source::Unset => unreachable!("source() sets the source"),
        }
    }

    /// Marks `amt` buffered bytes as read; a chunk read to its end goes back to the ring.
    pub(crate) fn consume(&mut self, amt: usize) {
        match &mut self.source {
            Source::Ring(r) => {
                if let Some(c) = &mut r.chunk {
                    c.advance(amt);
                    if c.is_empty() {
                        r.chunk = None;
                    }
                }
            }
            Source::Own(o) => o.consume(amt),
            Source::Unset => {}
        }
    }

    /// Copies buffered bytes into `out`, receiving first if there are none.
    pub(crate) fn poll_read(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        out: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        if out.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let avail = ready!(self.poll_fill_buf(fd, cx))?;
        let n = avail.len().min(out.len());
        out[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Poll::Ready(Ok(n))
    }

    /// The next chunk: what is buffered, else the next receive's; empty at end of stream.
    pub(crate) fn poll_chunk(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<Chunk>> {
        match self.source(fd) {
            Source::Ring(r) => {
                if let Some(c) = r.chunk.take() {
                    return Poll::Ready(Ok(Chunk::ring(c)));
                }
                if r.eof {
                    return Poll::Ready(Ok(Chunk::empty()));
                }
                match ready!(r.poll_chunk(fd, cx)) {
                    Ok(Some(c)) => Poll::Ready(Ok(Chunk::ring(c))),
                    Ok(None) => {
                        r.eof = true;
                        Poll::Ready(Ok(Chunk::empty()))
                    }
                    Err(e) => Poll::Ready(Err(e)),
                }
            }
            Source::Own(o) => {
                let chunk = ready!(o.poll_fill_buf(cx))?.to_vec();
                o.consume(chunk.len());
                Poll::Ready(Ok(Chunk::from_vec(chunk)))
            }
            Source::Unset => unreachable!("source() sets the source"),
        }
    }
}

impl RingRead {
    /// Reads from `ring`; `core`: it is the core's ring (see the field).
    pub(crate) fn new(ring: BufRing, core: bool) -> RingRead {
        RingRead {
            ring,
            core,
            empties: 0,
            chunk: None,
            more: VecDeque::new(),
            // Bundles on the core's ring only: a caller's ring gets one buffer per receive.
            bundle: core && runtime::features().is_some_and(|f| f.recv_bundle),
            // Before 6.0 (or switched off), single-shot receives from the ring.
            multishot: runtime::features().is_none_or(|f| f.recv_multishot),
            op: None,
            limited: false,
            starved: None,
            eof: false,
        }
    }

    /// The ring read from.
    pub(crate) fn ring(&self) -> &BufRing {
        &self.ring
    }

    /// How many receives ended with `ENOBUFS` (the ring was empty) and were re-armed.
    pub(crate) fn empties(&self) -> u64 {
        self.empties
    }

    /// The next received chunk from the multishot receive, re-arming it as needed;
    /// `None` at end of stream.
    pub(crate) fn poll_chunk(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<Option<RingBuf>>> {
        loop {
            if let Some(buf) = self.more.pop_front() {
                if self.more.is_empty() {
                    // The bundle is handed out: free its queue (an idle connection holds none).
                    self.more = VecDeque::new();
                }
                return Poll::Ready(Ok(Some(buf)));
            }
            let op = match &mut self.op {
                Some(op) => op,
                None => {
                    if let Some(seen) = self.starved {
                        ready!(self.ring.poll_returned_since(seen, cx));
                        self.starved = None;
                    }
                    // Arm on the core's current ring: it may have grown since.
                    if let Some(current) = self.core.then(runtime::buf::core_ring).flatten() {
                        if current.bgid() != self.ring.bgid() {
                            self.ring = current;
                        }
                    }
                    // Bounded twice: the kernel ends the receive after BACKLOG buffers' worth
                    // of bytes, and the driver cancels it at BACKLOG unread CQEs (the
                    // kernel may post up to 32 in one go before that cancel is seen).
                    let limit = if NO_LIMIT.with(|n| n.get()) {
                        0
                    } else {
                        u32::from(BACKLOG).saturating_mul(self.ring.buf_len())
                    };
                    let limit = if self.multishot { limit } else { 0 };
                    self.limited = limit != 0;
                    let op =
                        ops::recv_multi_limited(fd, &self.ring, limit, self.bundle, self.multishot);
                    self.op.insert(op.with_backlog(BACKLOG))
                }
            };
            let Some(mut cqe) = ready!(op.poll_next_cqe(cx)) else {
                self.op = None;
                continue;
            };
            if !cqe.more() {
                self.op = None;
            }
            match &cqe.result {
                Ok(0) => {
                    // End of stream (a buffer, if the kernel picked one, goes back).
                    drop(self.ring.take(&mut cqe));
                    self.op = None;
                    return Poll::Ready(Ok(None));
                }
                Ok(_) => {
                    // The first buffer is handed out; a bundle's rest wait in `more` (one
                    // buffer, the common case, allocates no queue).
                    let (mut first, more) = (None, &mut self.more);
                    self.ring.take_each(&mut cqe, |b| match first {
                        None => first = Some(b),
                        Some(_) => more.push_back(b),
                    });
                    return Poll::Ready(match first {
                        Some(buf) => Ok(Some(buf)),
                        None => Err(io::Error::other(
                            "multishot recv completed without a provided buffer",
                        )),
                    });
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    self.ring.note_starved();
                    self.empties += 1;
                    // A ring too small for the load grows (then arm on the new one at once).
                    let grown = self.core.then(|| runtime::ext::grow_core_ring(&self.ring));
                    if let Some(bigger) = grown.flatten() {
                        self.ring = bigger;
                        continue;
                    }
                    // The ring was empty when the kernel looked. Buffers may have come back
                    // since: re-arm now if the kernel has some, else wait for the next one.
                    let free = match self.ring.available() {
                        Some(n) => n > 0,
                        None => self.ring.outstanding() < u32::from(self.ring.entries()),
                    };
                    if !free {
                        self.starved = Some(self.ring.returned());
                    }
                }
                // The backlog cancel (or a cancel at shutdown): re-arm, the reader wants more.
                Err(e) if e.raw_os_error() == Some(libc::ECANCELED) => {}
                // A kernel before 6.17 refuses the byte limit: arm without it from now on.
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) && self.limited => {
                    NO_LIMIT.with(|n| n.set(true));
                }
                Err(_) => {
                    let Err(e) = cqe.result else { unreachable!() };
                    return Poll::Ready(Err(e));
                }
            }
        }
    }
}

#[cfg(feature = "tokio-io")]
impl ReadInner {
    /// Copies buffered bytes into tokio's `ReadBuf`, receiving first if there are none.
    pub(crate) fn poll_read_buf(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        out: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if out.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        let avail = ready!(self.poll_fill_buf(fd, cx))?;
        let n = avail.len().min(out.remaining());
        out.put_slice(&avail[..n]);
        self.consume(n);
        Poll::Ready(Ok(()))
    }
}

impl fmt::Debug for ReadState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Ok(inner) = self.inner.try_borrow() else {
            return f.write_str("ReadState { <in use> }");
        };
        let mut d = f.debug_struct("ReadState");
        match &inner.source {
            Source::Unset => d.field("source", &"unset"),
            Source::Ring(r) => d
                .field("source", &"ring")
                .field("buffered", &r.chunk.as_ref().map_or(0, |c| c.len()))
                .field("armed", &r.op.is_some())
                .field("eof", &r.eof),
            Source::Own(o) => d
                .field("source", &"own")
                .field("buffered", &o.buffered().len())
                .field("in_flight", &!o.is_idle()),
        };
        d.finish()
    }
}
