//! hyper's runtime traits on this runtime: [`HyperIo`] (hyper's `Read` and `Write` on a
//! stream of this crate), [`HyperExecutor`] (hyper's background tasks on the current core)
//! and [`HyperTimer`] (hyper's timers on the core's timer map).

use std::future::Future;
use std::io;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use ::hyper::rt::{Executor, Read, ReadBufCursor, Sleep, Timer, Write};
use futures::io::{AsyncBufRead, AsyncWrite};

use super::serve::Watch;

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
///
/// `serve` may take the connection off its core between requests (`serve/moving.rs`): the
/// I/O then notes what hyper reads in the connection's [`Watch`], and its drop hands the
/// stream back to the watch instead of closing it. A connection moved here from another
/// core starts with the bytes that core had received (`prefix`).
#[derive(Debug)]
pub(crate) struct SocketIo {
    /// Taken only by `Drop`.
    io: ManuallyDrop<HyperIo<crate::TcpStream>>,
    /// hyper's last read was a large one: a flush does not read ahead (that would arm the
    /// ring's receive, which a large read then stops again).
    large: bool,
    /// Bytes to hand to hyper before the socket's (a moved connection's), and how many of
    /// them went.
    prefix: Option<Box<(Vec<u8>, usize)>>,
    watch: Option<Rc<Watch>>,
}

impl SocketIo {
    /// Wraps `stream`: its bytes, after `prefix`'s; `watch`: it may move.
    pub(crate) fn new(
        stream: crate::TcpStream,
        prefix: Vec<u8>,
        watch: Option<Rc<Watch>>,
    ) -> SocketIo {
        SocketIo {
            io: ManuallyDrop::new(HyperIo::new(stream)),
            large: false,
            prefix: (!prefix.is_empty()).then(|| Box::new((prefix, 0))),
            watch,
        }
    }

    /// Hands hyper the next bytes of `prefix`.
    #[cold]
    fn read_prefix(&mut self, mut buf: ReadBufCursor<'_>) -> Poll<io::Result<()>> {
        if let Some(p) = &mut self.prefix {
            let (bytes, at) = &mut **p;
            let n = (bytes.len() - *at).min(buf.remaining());
            buf.put_slice(&bytes[*at..*at + n]);
            if let Some(w) = &self.watch {
                w.read(&bytes[*at..*at + n]);
            }
            *at += n;
            if *at == bytes.len() {
                self.prefix = None;
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl Drop for SocketIo {
    fn drop(&mut self) {
        // SAFETY: `io` is taken here only, once.
        let io = unsafe { ManuallyDrop::take(&mut self.io) };
        let back = match &self.watch {
            Some(w) => w.take_back(io.into_inner()),
            None => Some(io.into_inner()),
        };
        drop(back);
    }
}

impl Read for SocketIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.prefix.is_some() {
            return this.read_prefix(buf);
        }
        this.large = buf.remaining() >= crate::io::DIRECT_MIN;
        let stream = &mut this.io.inner;
        // Every read through the stream's read state: a small one copies what is in hand
        // (a bundle's buffers together), a large one may receive straight into `buf`.
        // SAFETY: `poll_read_into` never writes an uninitialised byte into the slice.
        let out = unsafe { buf.as_mut() };
        let n = match stream.read.poll_read_into(&stream.fd, cx, out) {
            Poll::Ready(n) => n?,
            Poll::Pending => {
                if let Some(w) = &this.watch {
                    w.wait();
                }
                return Poll::Pending;
            }
        };
        if let Some(w) = &this.watch {
            // SAFETY: `poll_read_into` initialised the first `n` bytes of `out`.
            w.read(unsafe { std::slice::from_raw_parts(out.as_ptr().cast::<u8>(), n) });
        }
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
        let this = self.get_mut();
        if let Some(w) = &this.watch {
            w.wrote(false);
        }
        Pin::new(&mut *this.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Some(w) = &this.watch {
            w.wrote(false);
        }
        Pin::new(&mut *this.io).poll_write_vectored(cx, bufs)
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
        let flushed = stream.write.poll_flush_started(&stream.fd);
        if let (Some(w), Poll::Ready(Ok(()))) = (&this.watch, &flushed) {
            w.wrote(true);
        }
        flushed
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.get_mut().io).poll_shutdown(cx)
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
