//! Taking an idle HTTP/1.1 connection off its core (see `tcp/handoff.rs` for where it goes
//! and when): [`Watch`], what the connection's I/O and service note so that the server
//! knows when hyper holds nothing of the connection, and [`Watched`], the service wrapper
//! that counts requests and finished responses.
//!
//! # When a connection is idle
//! hyper's state is private, so the server tells from outside, and only says "idle" when
//! all of these hold after a poll of the connection returned `Pending`:
//! - at least one request was served, every one on HTTP/1.1 (an HTTP/2 connection never
//!   moves), and every response's body was dropped by hyper, its last byte handed to the
//!   socket;
//! - the last request came without a body (a request whose body the handler did not read
//!   could leave its rest to be read and thrown away by hyper);
//! - hyper flushed since it last wrote (its write buffer is empty: it flushes the socket
//!   only once the socket took all of it);
//! - hyper's last read found nothing (it waits for the next request) and the bytes it read
//!   before ended with the blank line that ends a request's head: its buffer holds no part of
//!   a next request (a head it had whole would have been served; one it had in part cannot
//!   end with a blank line).
//!
//! The connection is then dropped with its socket kept back (the I/O hands it to the
//! watch instead of closing it), the socket detached (sends finished, receive stopped, its
//! unread bytes kept) and posted to the other core.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Context, Poll};

use http::{Request, Response, Version};
use hyper::body::{Body, Frame, Incoming, SizeHint};

use crate::tcp::TcpStream;

/// The last four bytes of a request head: a blank line.
const HEAD_END: u32 = u32::from_be_bytes(*b"\r\n\r\n");

/// What a connection's I/O and service note for its move (shared by both, on its core).
#[derive(Debug, Default)]
pub(crate) struct Watch {
    /// The last four bytes hyper read, big-endian.
    tail: Cell<u32>,
    /// hyper's last read found nothing to read.
    waiting: Cell<bool>,
    /// hyper wrote since its last completed flush: its own buffer may hold bytes.
    unflushed: Cell<bool>,
    /// Requests handed to the service, and responses whose body hyper dropped.
    started: Cell<u32>,
    finished: Cell<u32>,
    /// The last request came with a body, or one was not HTTP/1.1: not idle.
    unsure: Cell<bool>,
    /// The I/O is dropped to move: it hands its stream here instead of closing it.
    keep: Cell<bool>,
    stream: RefCell<Option<TcpStream>>,
}

impl Watch {
    /// Notes that hyper read `bytes` (not empty).
    pub(crate) fn read(&self, bytes: &[u8]) {
        let tail = bytes.iter().rev().take(4).rev().fold(
            if bytes.len() >= 4 { 0 } else { self.tail.get() },
            |t, &b| t << 8 | u32::from(b),
        );
        self.tail.set(tail);
        self.waiting.set(false);
    }

    /// Notes that hyper's read found nothing.
    pub(crate) fn wait(&self) {
        self.waiting.set(true);
    }

    /// Notes that hyper wrote (`flushed`: false), or that its flush completed (true).
    pub(crate) fn wrote(&self, flushed: bool) {
        self.unflushed.set(!flushed);
    }

    /// Whether hyper holds nothing of the connection (see the module documentation).
    pub(crate) fn idle(&self) -> bool {
        self.waiting.get()
            && !self.unflushed.get()
            && self.tail.get() == HEAD_END
            && self.started.get() > 0
            && self.started.get() == self.finished.get()
            && !self.unsure.get()
    }

    /// The I/O is about to be dropped to move: it keeps its stream back.
    pub(crate) fn keep_stream(&self) {
        self.keep.set(true);
    }

    /// The I/O's drop: takes `stream` if the connection moves; else gives it back.
    pub(crate) fn take_back(&self, stream: TcpStream) -> Option<TcpStream> {
        if self.keep.get() {
            *self.stream.borrow_mut() = Some(stream);
            None
        } else {
            Some(stream)
        }
    }

    /// The stream the dropped I/O kept back.
    pub(crate) fn stream(&self) -> Option<TcpStream> {
        self.stream.borrow_mut().take()
    }
}

/// A hyper service that notes its requests and finished responses in a [`Watch`].
pub(crate) struct Watched<S> {
    pub(crate) inner: S,
    pub(crate) watch: Rc<Watch>,
}

impl<S, B> hyper::service::Service<Request<Incoming>> for Watched<S>
where
    S: hyper::service::Service<Request<Incoming>, Response = Response<B>>,
{
    type Response = Response<WatchedBody<B>>;
    type Error = S::Error;
    type Future = WatchedFuture<S::Future>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let w = &self.watch;
        w.started.set(w.started.get().wrapping_add(1));
        w.unsure
            .set(req.version() != Version::HTTP_11 || !req.body().is_end_stream());
        WatchedFuture {
            inner: self.inner.call(req),
            watch: Some(self.watch.clone()),
        }
    }
}

pin_project_lite::pin_project! {
    /// A response future whose body, once there, notes its end in the watch.
    pub(crate) struct WatchedFuture<F> {
        #[pin]
        inner: F,
        watch: Option<Rc<Watch>>,
    }
}

impl<F, B, E> Future for WatchedFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<WatchedBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let res = ready!(this.inner.poll(cx));
        let watch = this.watch.take();
        Poll::Ready(res.map(|r| r.map(|body| WatchedBody { body, watch })))
    }
}

pin_project_lite::pin_project! {
    /// A response body that counts as finished in its watch when hyper drops it.
    pub(crate) struct WatchedBody<B> {
        #[pin]
        body: B,
        watch: Option<Rc<Watch>>,
    }

    impl<B> PinnedDrop for WatchedBody<B> {
        fn drop(this: Pin<&mut Self>) {
            if let Some(w) = this.project().watch.take() {
                w.finished.set(w.finished.get().wrapping_add(1));
            }
        }
    }
}

impl<B: Body> Body for WatchedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        self.project().body.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_follows_the_last_four_bytes_across_short_reads() {
        let w = Watch::default();
        w.read(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(w.tail.get(), HEAD_END);
        w.read(b"GET / HTTP/1.1\r\n");
        assert_ne!(w.tail.get(), HEAD_END);
        w.read(b"\r");
        w.read(b"\n");
        assert_eq!(w.tail.get(), u32::from_be_bytes(*b"\r\n\r\n"));
        w.read(b"x");
        assert_eq!(w.tail.get(), u32::from_be_bytes(*b"\n\r\nx"));
    }

    #[test]
    fn idle_needs_every_condition() {
        let w = Watch::default();
        w.read(b"\r\n\r\n");
        w.wait();
        assert!(!w.idle(), "no request served yet");
        w.started.set(1);
        assert!(!w.idle(), "a response not finished");
        w.finished.set(1);
        assert!(w.idle());
        w.wrote(false);
        assert!(!w.idle(), "hyper wrote and did not flush");
        w.wrote(true);
        assert!(w.idle());
        w.unsure.set(true);
        assert!(!w.idle(), "the last request had a body");
        w.unsure.set(false);
        w.read(b"GE");
        assert!(!w.idle(), "part of a next request read");
    }
}
