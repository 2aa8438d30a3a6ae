//! [`RingRead`]: reading a stream socket through one multishot `RECV` into a
//! provided-buffer ring: the core's (the default [`Source`] of every stream's read state)
//! or one of the caller's ([`RecvStream`](crate::RecvStream)).
//!
//! # Where the bytes land
//! A connection owns no receive buffer: the receive picks buffers from the ring
//! ([`runtime::buf::core_ring`] for the core's), so the kernel takes a buffer only when
//! data arrives, and an idle connection holds none. A chunk is held while its bytes are
//! being consumed and goes back to the ring as soon as the last one is; reading a 1-byte
//! message and then waiting holds no buffer.
//!
//! The op's backlog is bounded, so a connection nobody reads cannot drain the ring: where
//! the core has [`Features::recv_limit`](runtime::Features::recv_limit) (Linux 6.17, and the
//! epoll backend) the kernel ends each receive after [`BACKLOG`] buffers' worth of bytes,
//! and the driver cancels it at [`BACKLOG`] CQEs not yet read (without the limit the one
//! bound, loose by the up to 32 receives the kernel may do in one go). The receive is
//! re-armed when the reader asks for more. When the ring is empty the kernel ends the
//! receive with `ENOBUFS`; the reader re-arms at once if buffers came back meanwhile, else
//! as soon as one does: no connection stalls longer than a buffer takes to come back.

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::task::{ready, Context, Poll};

use runtime::buf::{BufRing, RingBuf};
use runtime::ext::raw::PollAdd;
use runtime::ext::{BufRingExt, Cqe, MultiOp, Op, SharedFd};

use super::read::Source;
use super::Chunk;
use crate::ops::{self, RecvMulti};

mod direct;

pub(crate) use direct::DIRECT_MIN;

/// Received chunks a connection may hold unread before its receive is paused.
const BACKLOG: u16 = 4;

/// Reading through a multishot receive into a provided-buffer ring: the core's (the read
/// path of every stream) or one of the caller's ([`RecvStream`](crate::RecvStream)).
pub(crate) struct RingRead {
    ring: BufRing,
    /// `ring` is the core's: arm on its current ring, and grow it when it runs dry.
    core: bool,
    /// Receives that ended with `ENOBUFS`.
    empties: u64,
    /// The chunk being consumed (never empty); only the read state's path uses it.
    chunk: Option<RingBuf>,
    /// The rest of a bundle receive's buffers, in order.
    more: VecDeque<RingBuf>,
    /// Arm receives as bundles (several buffers per CQE).
    bundle: bool,
    op: Option<MultiOp<RecvMulti>>,
    /// Arm receives with a byte limit ([`Features::recv_limit`](runtime::Features::recv_limit),
    /// multishot receives only); cleared should the kernel refuse one all the same.
    limit: bool,
    /// The op in flight was armed with a byte limit.
    limited: bool,
    /// Whether receives are multishot (see `ops::recv_multi_limited`).
    multishot: bool,
    /// The last receive ended with `ENOBUFS`: re-arm once the ring's return count moves
    /// past this.
    starved: Option<u64>,
    eof: bool,
    /// A large read stopped the receive to read straight into its caller's memory
    /// (`direct.rs`), and its final CQE is not in yet.
    stopping: bool,
    /// The last receive took at least `DIRECT_MIN` bytes: a large read reads straight
    /// (`direct.rs`); after a small one, reads stay on the ring.
    bulk: bool,
    /// That read's wait for the socket to be readable (boxed: most sockets never have one).
    ready: Option<Box<Op<PollAdd>>>,
}

impl RingRead {
    /// Reads from `ring`; `core`: it is the core's ring (see the field).
    pub(crate) fn new(ring: BufRing, core: bool) -> RingRead {
        let features = runtime::features();
        // Before 6.0 (or switched off), single-shot receives from the ring.
        let multishot = features.is_none_or(|f| f.recv_multishot);
        RingRead {
            ring,
            core,
            empties: 0,
            chunk: None,
            more: VecDeque::new(),
            // Bundles on the core's ring only: a caller's ring gets one buffer per receive.
            bundle: core && features.is_some_and(|f| f.recv_bundle),
            limit: multishot && features.is_some_and(|f| f.recv_limit),
            multishot,
            op: None,
            limited: false,
            starved: None,
            eof: false,
            stopping: false,
            bulk: false,
            ready: None,
        }
    }

    /// Whether bytes are in hand: the chunk being consumed, a bundle's rest.
    fn has_bytes(&self) -> bool {
        self.chunk.is_some() || !self.more.is_empty()
    }

    /// The ring read from.
    pub(crate) fn ring(&self) -> &BufRing {
        &self.ring
    }

    /// How many receives ended with `ENOBUFS` (the ring was empty) and were re-armed.
    pub(crate) fn empties(&self) -> u64 {
        self.empties
    }

    /// Arms the receive on the core's current ring (it may have grown since), once buffers
    /// came back if the last receive found the ring empty.
    fn poll_arm(&mut self, fd: &SharedFd, cx: &mut Context<'_>) -> Poll<&mut MultiOp<RecvMulti>> {
        if let Some(seen) = self.starved {
            ready!(self.ring.poll_returned_since(seen, cx));
            self.starved = None;
        }
        // Back on the ring's path: a large read's readiness wait is not needed.
        self.ready = None;
        self.stopping = false;
        if let Some(current) = self.core.then(runtime::buf::core_ring).flatten() {
            if current.bgid() != self.ring.bgid() {
                self.ring = current;
            }
        }
        // Bounded twice: the kernel ends the receive after BACKLOG buffers' worth of bytes,
        // and the driver cancels it at BACKLOG unread CQEs (the kernel may post up to 32 in
        // one go before that cancel is seen).
        let limit = if self.limit {
            u32::from(BACKLOG).saturating_mul(self.ring.buf_len())
        } else {
            0
        };
        self.limited = limit != 0;
        let op = ops::recv_multi_limited(fd, &self.ring, limit, self.bundle, self.multishot);
        Poll::Ready(self.op.insert(op.with_backlog(BACKLOG)))
    }

    /// The next received buffer from the multishot receive, re-arming it as needed; `None`
    /// at end of stream.
    pub(crate) fn poll_buf(
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
                None => ready!(self.poll_arm(fd, cx)),
            };
            let cqe = ready!(op.poll_next_cqe(cx));
            if let Some(done) = self.take_cqe(cqe) {
                return Poll::Ready(done);
            }
        }
    }

    /// What the receive's next CQE (`None`: the op is over) says: a buffer (a bundle's
    /// rest goes to `more`), the end of the stream (`Ok(None)`), an error; or `None` when
    /// it brings nothing to hand out (the op ended, was cancelled, found the ring empty).
    fn take_cqe(&mut self, cqe: Option<Cqe>) -> Option<io::Result<Option<RingBuf>>> {
        let Some(mut cqe) = cqe else {
            self.op = None;
            return None;
        };
        if !cqe.more() {
            self.op = None;
        }
        match &cqe.result {
            Ok(0) => {
                // End of stream (a buffer, if the kernel picked one, goes back).
                drop(self.ring.take(&mut cqe));
                self.op = None;
                Some(Ok(None))
            }
            Ok(n) => {
                // Bytes flow in bulk: a large read may take the next ones straight.
                self.bulk = *n as usize >= DIRECT_MIN;
                // The first buffer is handed out; a bundle's rest wait in `more` (one
                // buffer, the common case, allocates no queue).
                let (mut first, more) = (None, &mut self.more);
                self.ring.take_each(&mut cqe, |b| match first {
                    None => first = Some(b),
                    Some(_) => more.push_back(b),
                });
                Some(match first {
                    Some(buf) => Ok(Some(buf)),
                    None => Err(io::Error::other(
                        "multishot recv completed without a provided buffer",
                    )),
                })
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                self.starve();
                None
            }
            // The backlog cancel (or a cancel at shutdown): re-arm, the reader wants more.
            Err(e) if e.raw_os_error() == Some(libc::ECANCELED) => None,
            // A kernel that refuses the byte limit although `Features::recv_limit` said
            // it takes one (a release number that misleads): arm without it from now on.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) && self.limited => {
                self.limit = false;
                None
            }
            Err(_) => {
                let Err(e) = cqe.result else { unreachable!() };
                Some(Err(e))
            }
        }
    }

    /// Stops reading for good (the socket is leaving this core, `StreamSocket::detach`):
    /// cancels the multishot receive and reads its CQEs to the last one, appending every
    /// byte in hand, in order, to `out`; the buffers go back to the ring. Ready once no
    /// receive (and no readiness wait) of this socket is left in flight. End of stream and
    /// the receive's errors are errors: a socket that ended has nothing to move.
    pub(crate) fn poll_stop(
        &mut self,
        cx: &mut Context<'_>,
        out: &mut Vec<u8>,
    ) -> Poll<io::Result<()>> {
        // The readiness wait of a large read borrows nothing: dropping it cancels it.
        self.ready = None;
        if let Some(op) = &mut self.op {
            if !self.stopping {
                self.stopping = true;
                op.cancel();
            }
        }
        loop {
            if let Some(c) = self.chunk.take() {
                out.extend_from_slice(&c);
            }
            for b in self.more.drain(..) {
                out.extend_from_slice(&b);
            }
            if self.eof {
                return Poll::Ready(Err(io::ErrorKind::UnexpectedEof.into()));
            }
            let Some(op) = &mut self.op else {
                self.stopping = false;
                return Poll::Ready(Ok(()));
            };
            let cqe = ready!(op.poll_next_cqe(cx));
            match self.take_cqe(cqe) {
                Some(Ok(Some(buf))) => self.chunk = Some(buf),
                Some(Ok(None)) => self.eof = true,
                Some(Err(e)) => return Poll::Ready(Err(e)),
                None => {}
            }
        }
    }

    /// The receive found the ring empty (`ENOBUFS`): grows the core's ring if it is too
    /// small for the load (then the next arm is on the new one, at once); else the next arm
    /// waits for a buffer to come back, unless the kernel already has some.
    fn starve(&mut self) {
        self.ring.note_starved();
        self.empties += 1;
        let grown = self.core.then(|| runtime::ext::grow_core_ring(&self.ring));
        if let Some(bigger) = grown.flatten() {
            self.ring = bigger;
            return;
        }
        // The ring was empty when the kernel looked. Buffers may have come back since:
        // re-arm now if the kernel has some, else wait for the next one.
        let free = match self.ring.available() {
            Some(n) => n > 0,
            None => self.ring.outstanding() < u32::from(self.ring.entries()),
        };
        if !free {
            self.starved = Some(self.ring.returned());
        }
    }
}

/// The default source of a stream's read state: the chunk being consumed, then the
/// multishot receive's next buffer.
impl Source for RingRead {
    fn is_idle(&self) -> bool {
        self.chunk.is_none() && self.more.is_empty() && self.op.is_none() && !self.eof
    }

    fn poll_fill_buf(&mut self, fd: &SharedFd, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        if self.chunk.is_none() && !self.eof {
            match ready!(self.poll_buf(fd, cx))? {
                Some(c) => self.chunk = Some(c),
                None => self.eof = true,
            }
        }
        Poll::Ready(Ok(self.chunk.as_deref().unwrap_or(&[])))
    }

    /// Advances the chunk being consumed; read to its end, it goes back to the ring.
    fn consume(&mut self, amt: usize) {
        if let Some(c) = &mut self.chunk {
            c.advance(amt);
            if c.is_empty() {
                self.chunk = None;
            }
        }
    }

    fn has_buffered(&self) -> bool {
        self.has_bytes()
    }

    fn poll_direct(
        &mut self,
        fd: &SharedFd,
        cx: &mut Context<'_>,
        out: &mut [std::mem::MaybeUninit<u8>],
    ) -> Poll<io::Result<Option<usize>>> {
        self.poll_large(fd, cx, out)
    }

    fn poll_stop(
        &mut self,
        _fd: &SharedFd,
        cx: &mut Context<'_>,
        out: &mut Vec<u8>,
    ) -> Poll<io::Result<()>> {
        RingRead::poll_stop(self, cx, out)
    }

    fn poll_chunk(&mut self, fd: &SharedFd, cx: &mut Context<'_>) -> Poll<io::Result<Chunk>> {
        if let Some(c) = self.chunk.take() {
            return Poll::Ready(Ok(Chunk::ring(c)));
        }
        if self.eof {
            return Poll::Ready(Ok(Chunk::empty()));
        }
        match ready!(self.poll_buf(fd, cx))? {
            Some(c) => Poll::Ready(Ok(Chunk::ring(c))),
            None => {
                self.eof = true;
                Poll::Ready(Ok(Chunk::empty()))
            }
        }
    }

    fn debug_fields(&self, d: &mut fmt::DebugStruct<'_, '_>) {
        d.field("source", &"ring")
            .field("buffered", &self.chunk.as_ref().map_or(0, |c| c.len()))
            .field("armed", &self.op.is_some())
            .field("eof", &self.eof);
    }
}
