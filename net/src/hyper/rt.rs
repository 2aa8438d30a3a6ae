//! hyper's runtime traits on this runtime: [`HyperIo`] (hyper's `Read` and `Write` on a
//! stream of this crate), [`HyperExecutor`] (hyper's background tasks on the current core)
//! and [`HyperTimer`] (hyper's timers on the core's timer map).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use ::hyper::rt::{Executor, Read, ReadBufCursor, Sleep, Timer, Write};
use futures::io::{AsyncBufRead, AsyncWrite};

/// A stream of this crate (e.g. [`TcpStream`](crate::TcpStream)) seen through hyper's I/O
/// traits.
///
/// Reading needs [`AsyncBufRead`], writing [`AsyncWrite`] and [`AsyncBufRead`] (a flush
/// arms the next receive, see `poll_flush`): every stream socket of this crate has both.
#[derive(Debug)]
pub struct HyperIo<T> {
    inner: T,
}

impl<T> HyperIo<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> HyperIo<T> {
        HyperIo { inner }
    }

    /// The wrapped stream.
    pub fn get_ref(&self) -> &T {
        &self.inner
    }

    /// The wrapped stream, mutably.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// Unwraps the stream (bytes it has buffered stay in it).
    pub fn into_inner(self) -> T {
        self.inner
    }
}

impl<T: AsyncBufRead + Unpin> Read for HyperIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let room = buf.remaining();
        if room == 0 {
            return Poll::Ready(Ok(()));
        }
        let inner = &mut self.get_mut().inner;
        // The bytes stay in the stream's buffer until `consume`: a poll dropped before it
        // completes, or a short `buf`, loses nothing.
        let avail = ready!(Pin::new(&mut *inner).poll_fill_buf(cx))?;
        let n = avail.len().min(room);
        buf.put_slice(&avail[..n]);
        Pin::new(inner).consume(n);
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncBufRead + AsyncWrite + Unpin> Write for HyperIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    /// Yes: the streams of this crate gather the slices into one send, so hyper can hand
    /// over head and body without flattening them into its own buffer first.
    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let inner = &mut self.get_mut().inner;
        // Read ahead: hyper flushes a response and only then reads the next request, so arm
        // the receive now, and it goes to the kernel in the same submission as the send
        // instead of one loop turn later. What arrives stays buffered for `poll_read`; an
        // error or end of stream is met again by the next read, which receives anew.
        let _ = Pin::new(&mut *inner).poll_fill_buf(cx);
        Pin::new(inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_close(cx)
    }
}

/// hyper's I/O traits on a [`TcpStream`](crate::TcpStream) as `serve` runs them: a
/// [`HyperIo`], but while a body flows in bulk, a read with room for 16 KiB or more and
/// nothing buffered receives straight into hyper's buffer (`ring_read/direct.rs`): a
/// request body's bytes are copied once, by the kernel, as on tokio. (`HyperIo` itself is
/// generic over any `AsyncBufRead`, which can only hand out what it has buffered.)
#[derive(Debug)]
pub(crate) struct SocketIo {
    io: HyperIo<crate::TcpStream>,
    /// hyper's last read was a large one: a flush does not read ahead (that would arm the
    /// ring's receive, which a large read then stops again).
    large: bool,
}

impl SocketIo {
    /// Wraps `stream`.
    pub(crate) fn new(stream: crate::TcpStream) -> SocketIo {
        SocketIo {
            io: HyperIo::new(stream),
            large: false,
        }
    }
}

impl Read for SocketIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.large = buf.remaining() >= crate::io::DIRECT_MIN;
        let stream = &mut this.io.inner;
        // Every read through the stream's read state: a small one copies what is in hand
        // (a bundle's buffers together), a large one may receive straight into `buf`.
        // SAFETY: `poll_read_into` never writes an uninitialised byte into the slice.
        let out = unsafe { buf.as_mut() };
        let n = ready!(stream.read.poll_read_into(&stream.fd, cx, out))?;
        // SAFETY: it wrote (initialised) the first `n` bytes.
        unsafe { buf.advance(n) };
        Poll::Ready(Ok(()))
    }
}

impl Write for SocketIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    /// Waits for nothing: the send in flight is left to run (its error comes with the next
    /// write or the shutdown, see `io::write`); after a small read, the next request's
    /// receive is armed if none is, as [`HyperIo`] does.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let stream = &mut this.io.inner;
        // hyper flushes on each turn of its loop (three times per request when the handler
        // waits), also while it reads a body: no read-ahead after a large read (see
        // `large`), nor while the multishot receive is still armed or bytes are in hand.
        if !this.large && stream.read.is_idle() {
            let _ = Pin::new(&mut *stream).poll_fill_buf(cx);
        }
        stream.write.poll_flush_started(&stream.fd)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// hyper's executor on this runtime: each future hyper hands over (an HTTP/2 stream, a client
/// connection's background task) becomes a task on the current core, with
/// [`runtime::spawn_local`].
///
/// # Panics
/// `execute` panics outside a runtime, as `spawn_local` does.
#[derive(Debug, Clone, Copy, Default)]
pub struct HyperExecutor;

impl<F> Executor<F> for HyperExecutor
where
    F: Future + 'static,
    F::Output: 'static,
{
    fn execute(&self, fut: F) {
        // hyper does not join its background tasks; the handle is dropped (the task runs on).
        drop(runtime::spawn_local(fut));
    }
}

/// hyper's timer on this runtime: sleeps are [`runtime::time::Sleep`]s on the current core's
/// timer map (no SQE per timer), and resetting one moves its deadline in place.
///
/// With a timer set, hyper's HTTP/1 server enforces its header read timeout (30 s unless
/// [`header_read_timeout`] says otherwise).
///
/// [`header_read_timeout`]: https://docs.rs/hyper/1/hyper/server/conn/http1/struct.Builder.html#method.header_read_timeout
///
/// # Panics
/// A sleep panics if it is polled outside a runtime, as every timer of this runtime does.
#[derive(Debug, Clone, Copy, Default)]
pub struct HyperTimer;

impl Timer for HyperTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Sleep>> {
        Box::pin(HyperSleep(runtime::time::sleep(duration)))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn Sleep>> {
        Box::pin(HyperSleep(runtime::time::sleep_until(deadline)))
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn Sleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<HyperSleep>() {
            Some(mut ours) => ours.0.reset(new_deadline),
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}

/// A [`runtime::time::Sleep`] as a hyper [`Sleep`]; made by [`HyperTimer`].
#[derive(Debug)]
struct HyperSleep(runtime::time::Sleep);

impl Future for HyperSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.get_mut().0).poll(cx)
    }
}

impl Sleep for HyperSleep {}
