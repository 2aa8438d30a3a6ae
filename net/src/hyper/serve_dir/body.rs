//! [`ServeDirBody`]: what a [`ServeDir`](super::ServeDir) response carries. A file (or range)
//! of up to [`WHOLE_FILE_MAX`](super::WHOLE_FILE_MAX) bytes was read before the response
//! was made and is one frame; a larger one is read here, one `IORING_OP_READ` of a chunk at
//! a time, each chunk one frame, with at most one read in flight.
//!
//! # Invariants
//! - The file stays open while a read is in flight: the read's data holds the fd (see
//!   `ops.rs`), so a body dropped mid-file (a client gone) leaves the read to its ignored
//!   slot and the fd is closed when its CQE arrives; otherwise it is closed with the body.
//! - After the last byte, the file is closed through the ring before the body reports its
//!   end.

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use runtime::ext::Op;

use super::ops::{self, FileFd};

/// The body of a [`ServeDir`](super::ServeDir) response: empty, one frame of bytes read
/// already, or a file streamed in chunks through the ring. `Send`, as axum asks.
///
/// An error (a read that fails, or a file that shrank while it was served) ends the body;
/// hyper then closes the connection, as the response's `Content-Length` cannot be met.
pub struct ServeDirBody {
    kind: Kind,
}

enum Kind {
    Empty,
    Full(Option<Bytes>),
    File(Box<Stream>),
}

/// A file being streamed.
struct Stream {
    /// The file; `None` once it is closed (or being closed).
    fd: Option<Arc<FileFd>>,
    /// The next byte to read, and how many are still to be sent.
    pos: u64,
    left: u64,
    chunk: usize,
    read: Option<Op<ops::Read>>,
    close: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl ServeDirBody {
    /// No bytes.
    pub(super) fn empty() -> ServeDirBody {
        ServeDirBody { kind: Kind::Empty }
    }

    /// `bytes` as one frame.
    pub(super) fn full(bytes: Bytes) -> ServeDirBody {
        ServeDirBody {
            kind: Kind::Full(Some(bytes)),
        }
    }

    /// `len` bytes of `fd` from `pos`, read `chunk` bytes at a time.
    pub(super) fn file(fd: FileFd, pos: u64, len: u64, chunk: usize) -> ServeDirBody {
        ServeDirBody {
            kind: Kind::File(Box::new(Stream {
                fd: Some(Arc::new(fd)),
                pos,
                left: len,
                chunk: chunk.max(1),
                read: None,
                close: None,
            })),
        }
    }
}

impl Stream {
    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<Frame<Bytes>>>> {
        loop {
            if let Some(read) = &mut self.read {
                let (res, buf) = ready!(Pin::new(read).poll(cx));
                self.read = None;
                return Poll::Ready(Some(self.take(res, buf, cx)));
            }
            if self.left > 0 {
                let Some(fd) = &self.fd else {
                    return Poll::Ready(None);
                };
                let want = self.left.min(self.chunk as u64) as usize;
                self.read = Some(ops::read(fd, Vec::with_capacity(want), self.pos));
                continue;
            }
            if let Some(close) = &mut self.close {
                ready!(close.as_mut().poll(cx));
                self.close = None;
            }
            return Poll::Ready(None);
        }
    }

    /// A finished read: its bytes as a frame, or the error that ends the body.
    fn take(
        &mut self,
        res: io::Result<usize>,
        buf: Vec<u8>,
        cx: &mut Context<'_>,
    ) -> io::Result<Frame<Bytes>> {
        let n = match res {
            Ok(0) => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file ended before the length it had when the response began",
            )),
            Ok(n) => Ok(n as u64),
            Err(e) => Err(e),
        };
        let n = match n {
            Ok(n) => n.min(self.left),
            Err(e) => {
                self.left = 0;
                self.fd = None;
                return Err(e);
            }
        };
        self.pos += n;
        self.left -= n;
        if self.left == 0 {
            self.start_close(cx);
        }
        Ok(Frame::data(Bytes::from(buf)))
    }

    /// Starts closing the file through the ring (submitted now, awaited before the end).
    fn start_close(&mut self, cx: &mut Context<'_>) {
        let Some(fd) = self.fd.take() else {
            return;
        };
        // No read holds it any more: this is the last reference.
        let Ok(fd) = Arc::try_unwrap(fd) else {
            return;
        };
        let mut close: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(ops::close(fd));
        if close.as_mut().poll(cx).is_pending() {
            self.close = Some(close);
        }
    }
}

impl Body for ServeDirBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match &mut self.get_mut().kind {
            Kind::Empty => Poll::Ready(None),
            Kind::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Kind::File(stream) => stream.poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Empty => true,
            Kind::Full(bytes) => bytes.is_none(),
            Kind::File(s) => s.left == 0 && s.read.is_none() && s.close.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Empty => SizeHint::with_exact(0),
            Kind::Full(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            Kind::File(s) => SizeHint::with_exact(s.left),
        }
    }
}

impl fmt::Debug for ServeDirBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Empty => f.write_str("ServeDirBody::Empty"),
            Kind::Full(bytes) => f
                .debug_struct("ServeDirBody::Full")
                .field("len", &bytes.as_ref().map_or(0, Bytes::len))
                .finish(),
            Kind::File(s) => f
                .debug_struct("ServeDirBody::File")
                .field("pos", &s.pos)
                .field("left", &s.left)
                .field("reading", &s.read.is_some())
                .finish(),
        }
    }
}
