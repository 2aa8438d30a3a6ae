//! `TcpStream`: a connected TCP socket; `connect(2)`, `recv(2)`, `send(2)` and `shutdown(2)`
//! through the ring, socket options through the ring or `socket2`.
//!
//! Two interfaces share the socket: owned-buffer methods (`read`, `write`, ...: one op per
//! call, the buffer given back) and `futures::io` traits (an internal buffer per direction;
//! see `io::poll`). Do not interleave reads of both kinds: bytes `AsyncRead` has buffered are
//! not seen by `read`. Writes of both kinds may be mixed once `poll_flush` has completed.

use std::io;
use std::net::{Shutdown, SocketAddr};
use std::os::fd::{BorrowedFd, IntoRawFd, OwnedFd, RawFd};
use std::time::Duration;

use runtime::buf::{BufRing, IoBuf, IoBufMut};
use socket2::{Domain, Protocol, Socket, Type};

use crate::error::context;
use crate::fd::SharedFd;
use crate::io::{self as sio, ReadState, WriteState};
use crate::ops;
use crate::recv_stream::RecvStream;
use crate::resolve::{no_addresses, resolve, ToSocketAddrs};
use crate::tcp::{
    local_addr_of, peer_addr_of, with_sock, OwnedReadHalf, OwnedWriteHalf, ReadHalf, WriteHalf,
};

/// A connected TCP socket.
///
/// The socket is closed once, when the stream (or both halves of [`into_split`]) and every
/// op still in the kernel for it are dropped. Dropping it cancels its ops in flight, but for
/// a write-behind send (the poll traits' `poll_write`, `write_chunk`), which still sends
/// its bytes (as `close(2)` leaves a socket buffer's bytes to be sent); flush or close to
/// see its error.
///
/// The owned-buffer methods (`read`, `write`, `read_exact`, `write_all`, `shutdown`) are
/// inherent, so on a `TcpStream` binding they are found before the `futures::io` (or tokio)
/// extension methods of the same names. Those are reached without a qualified call through
/// a `&mut TcpStream` (a function parameter, or `let s = &mut stream; s.read(&mut buf)`)
/// or through the borrowed halves of [`split`]: see "Two ways to do I/O" in the [crate]
/// documentation.
///
/// # Mixing the APIs
///
/// A socket has one reader and one writer per direction, whichever APIs are called on
/// it: the owned-buffer reads (`read`, `read_buf`, `read_exact`, `readv`) first hand out
/// what `read_chunk` and the poll traits (`AsyncRead`, `AsyncBufRead`) have buffered, and
/// while those keep a receive armed, read through it (a copy out of the received chunk)
/// rather than race it with a receive of their own; only when that path is idle does an
/// owned read receive straight into the caller's buffer. The owned writes (`write`,
/// `write_all`, `writev`, `writev_all`, `send_zc`, `write_all_from`) and `shutdown` of the
/// write direction first wait for a write-behind send in flight (`poll_write`,
/// `write_chunk`) and fail with its error, if it failed, so bytes go out in the order they
/// were written. A write-behind send that failed (a reset, a broken pipe) fails every later
/// write, flush and shutdown with the same kind of error.
///
/// An owned read dropped while its receive is in flight loses the bytes that receive took
/// (the kernel wrote them into a buffer that is then dropped): use `read_chunk` or the poll
/// traits where a read may be cancelled (`select!`, a timeout).
///
/// # Direct descriptors
///
/// A stream accepted by [`TcpListener::incoming`](crate::TcpListener::incoming) or
/// [`accept`](crate::TcpListener::accept) is, where the core can (Linux 6.8 and newer,
/// [`Features::direct_descriptors`](runtime::Features::direct_descriptors) and
/// [`fixed_fd_install`](runtime::Features::fixed_fd_install)), a *direct descriptor*: an
/// index in its core's ring's fixed-file table, which every op names, so the kernel skips
/// the fd-table look-up and reference count of the socket per op, and the process holds no
/// fd for it. [`is_direct`](TcpStream::is_direct) says which. Everything works the same;
/// what needs a regular fd gets one installed on demand (`IORING_OP_FIXED_FD_INSTALL`: one
/// synchronous `io_uring_enter(2)` on first use, the fd then kept until the stream closes):
/// [`AsRawFd`](std::os::fd::AsRawFd), [`AsFd`](std::os::fd::AsFd) (so `socket2::SockRef`),
/// [`try_as_fd`](TcpStream::try_as_fd), [`into_std`](TcpStream::into_std),
/// [`peer_addr`](TcpStream::peer_addr), [`local_addr`](TcpStream::local_addr) and the
/// option getters. The option setters ([`set_nodelay`](TcpStream::set_nodelay),
/// [`set_keepalive`](TcpStream::set_keepalive), [`set_linger`](TcpStream::set_linger))
/// go through the ring instead (`SOCKET_URING_OP_SETSOCKOPT`, one synchronous enter, no fd);
/// for `TCP_NODELAY` on every connection, [`ListenOptions::nodelay`](
/// crate::ListenOptions::nodelay) costs nothing per connection. Closing queues an
/// `IORING_OP_CLOSE` of the index on the ring. Streams made by
/// [`connect`](TcpStream::connect), [`from_std`](TcpStream::from_std) and
/// [`incoming_with_addr`](crate::TcpListener::incoming_with_addr) are regular fds.
///
/// [`into_split`]: TcpStream::into_split
/// [`split`]: TcpStream::split
#[derive(Debug)]
pub struct TcpStream {
    fd: SharedFd,
    read: ReadState,
    write: WriteState,
}

impl TcpStream {
    pub(crate) fn from_fd(fd: OwnedFd) -> TcpStream {
        TcpStream::from_parts(
            SharedFd::new(fd),
            ReadState::default(),
            WriteState::default(),
        )
    }

    pub(crate) fn from_shared(fd: SharedFd) -> TcpStream {
        TcpStream::from_parts(fd, ReadState::default(), WriteState::default())
    }

    pub(crate) fn from_parts(fd: SharedFd, read: ReadState, write: WriteState) -> TcpStream {
        TcpStream { fd, read, write }
    }

    /// Connects to `addr` (one `IORING_OP_CONNECT` per address tried).
    ///
    /// `addr` is any [`ToSocketAddrs`](crate::ToSocketAddrs): a numeric address is parsed
    /// on the core; a host name (`"example.com:80"`, `("localhost", 8080)`) is resolved on
    /// the runtime's blocking pool, so the core runs its other tasks meanwhile (see the
    /// [crate] documentation). Each resolved address is tried in turn and the last error
    /// returned, with the address in its message and its kind kept (e.g.
    /// `ConnectionRefused`); a name that does not resolve is an error naming it.
    ///
    /// # Panics
    /// Outside a runtime.
    pub async fn connect(addr: impl ToSocketAddrs) -> io::Result<TcpStream> {
        let mut last = None;
        for a in resolve(&addr).await? {
            match TcpStream::connect_addr(a).await {
                Ok(stream) => return Ok(stream),
                Err(e) => last = Some(context(e, format!("connect to {a}"))),
            }
        }
        Err(last.unwrap_or_else(|| no_addresses("address")))
    }

    async fn connect_addr(addr: SocketAddr) -> io::Result<TcpStream> {
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        let fd = SharedFd::new(socket.into());
        ops::connect(&fd, addr).await?;
        Ok(TcpStream::from_parts(
            fd,
            ReadState::default(),
            WriteState::default(),
        ))
    }

    /// The next chunk of received bytes, in a provided buffer of the core's shared ring: no
    /// buffer of this connection's is pinned while it waits (an idle connection owns none).
    /// Empty at end of stream. The chunk goes back to the ring when dropped; it is an
    /// `IoBuf`, so `write_all(chunk)` sends it on without a copy.
    ///
    /// This reads from the same buffered state as the poll traits (`AsyncRead`,
    /// `AsyncBufRead`): bytes they buffered come first. [`read_owned`](Self::read_owned) reads the same
    /// bytes, in order; on a socket with nothing buffered and no receive armed it pins the
    /// caller's buffer in the kernel until data arrives.
    pub async fn read_chunk(&mut self) -> io::Result<crate::Chunk> {
        sio::read_chunk(&self.fd, &mut self.read).await
    }

    /// Sends `chunk` after the bytes already written through the poll traits
    /// (`AsyncWrite`) or an earlier `write_chunk`, without copying it, and returns as soon
    /// as its send is started (write-behind, as `poll_write` does): it waits only for the
    /// send before it. The chunk goes back to its ring as soon as it is sent, with no task
    /// woken for that, and is sent even if the socket is dropped first. That send's error,
    /// if any, is reported by the next `write_chunk`, poll-trait write, flush or close.
    ///
    /// An echo that answers with what it read copies nothing and wakes its task once per
    /// message: `let c = s.read_chunk().await?; s.write_chunk(c).await?;`. The owned-buffer
    /// [`write_all_owned`](Self::write_all_owned) waits for the sends before it, then for its own.
    pub async fn write_chunk(&mut self, chunk: crate::Chunk) -> io::Result<()> {
        sio::write_chunk(&self.fd, &mut self.write, chunk).await
    }

    /// Reads once into `buf` (up to its total length, from its start) and gives it back with
    /// the count; `Ok(0)` is end of stream. A zero-length buffer gives `Ok(0)` at once.
    ///
    /// A `Vec` is filled from index 0 up to its capacity, whatever its length (the
    /// owned-buffer convention of tokio-uring and monoio): its length becomes at least the
    /// count. To append after what a `Vec` holds, as tokio's `read_buf` does, use
    /// [`read_buf_owned`](TcpStream::read_buf_owned).
    pub async fn read_owned<B: IoBufMut>(&self, buf: B) -> (io::Result<usize>, B) {
        sio::ordered::read(&self.fd, &self.read, buf).await
    }

    /// Reads once into `buf`'s spare capacity, appending after its length (tokio's
    /// `read_buf`): a `Vec` can be reused without `clear()`, and what it held stays. With no
    /// spare capacity, 8 KiB are reserved first. `Ok(0)` is end of stream.
    pub async fn read_buf_owned(&self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        sio::ordered::read_buf(&self.fd, &self.read, buf).await
    }

    /// Reads until `buf` is full (its total length: a `Vec`'s capacity); `UnexpectedEof` if
    /// the stream ends first.
    pub async fn read_exact_owned<B: IoBufMut>(&self, buf: B) -> (io::Result<()>, B) {
        sio::ordered::read_exact(&self.fd, &self.read, buf).await
    }

    /// Writes `buf`'s initialised bytes once and gives it back with the count (maybe short).
    pub async fn write_owned<B: IoBuf>(&self, buf: B) -> (io::Result<usize>, B) {
        let fd = &self.fd;
        sio::ordered::after_drain(fd, &self.write, buf, |b| sio::write(fd, b)).await
    }

    /// Writes all of `buf`'s initialised bytes.
    pub async fn write_all_owned<B: IoBuf>(&self, buf: B) -> (io::Result<()>, B) {
        let fd = &self.fd;
        sio::ordered::after_drain(fd, &self.write, buf, |b| sio::write_all(fd, b)).await
    }

    /// Writes all of the borrowed `data` (`write_all(&data[..])` does not compile: an op
    /// must own its buffer, since the kernel may read it after a dropped future is gone).
    ///
    /// Cost: `data` is copied into a `Vec` the op owns, one allocation and one copy per
    /// call; pass an owned buffer to [`write_all_owned`](TcpStream::write_all_owned) to avoid both.
    /// Empty `data` gives `Ok(())` at once.
    pub async fn write_all_from(&self, data: &[u8]) -> io::Result<()> {
        sio::ordered::drain(&self.fd, &self.write).await?;
        sio::write_all_from(&self.fd, data).await
    }

    /// Reads once into `bufs` in order (one `IORING_OP_READV`), each up to its total length;
    /// gives them back with the total count. Empty buffers give `Ok(0)` at once.
    pub async fn readv_owned<B: IoBufMut>(&self, bufs: Vec<B>) -> (io::Result<usize>, Vec<B>) {
        let fd = &self.fd;
        sio::ordered::readv(fd, &self.read, bufs, |b| ops::readv_at(fd, b, u64::MAX)).await
    }

    /// Writes the initialised bytes of `bufs` in order, once (one `IORING_OP_SENDMSG` with
    /// `MSG_NOSIGNAL`, so a reset peer is `EPIPE`, never `SIGPIPE`; the count may be short).
    /// Empty buffers give `Ok(0)` at once; more than `IOV_MAX` (1024) buffers is `EMSGSIZE`.
    pub async fn writev_owned<B: IoBuf>(&self, bufs: Vec<B>) -> (io::Result<usize>, Vec<B>) {
        let fd = &self.fd;
        sio::ordered::after_drain(fd, &self.write, bufs, |b| sio::writev(fd, b)).await
    }

    /// Writes all the initialised bytes of `bufs`, in order, and gives them back.
    ///
    /// One vectored send (as [`writev_owned`](TcpStream::writev_owned)) when the socket takes it all,
    /// the common case; after a short one, the rest is sent buffer by buffer. `WriteZero`
    /// if the socket takes nothing; more than `IOV_MAX` (1024) buffers is `EMSGSIZE`.
    pub async fn writev_all_owned<B: IoBuf>(&self, bufs: Vec<B>) -> (io::Result<()>, Vec<B>) {
        let fd = &self.fd;
        sio::ordered::after_drain(fd, &self.write, bufs, |b| sio::writev_all(fd, b)).await
    }

    /// Sends `buf`'s initialised bytes once without copying them into the kernel
    /// (`IORING_OP_SEND_ZC`, Linux 6.0); the buffer comes back when the kernel is done with
    /// it. Pays for large buffers on real NICs; on loopback the kernel copies anyway (see
    /// the README's figures). The count may be short.
    pub async fn send_zc<B: IoBuf>(&self, buf: B) -> (io::Result<usize>, B) {
        if buf.bytes_init() == 0 {
            return (Ok(0), buf);
        }
        let fd = &self.fd;
        sio::ordered::after_drain(fd, &self.write, buf, |b| ops::send_zc(fd, b)).await
    }

    /// Shuts down the read direction, the write direction (the peer reads end of stream
    /// after the bytes sent so far) or both.
    pub async fn shutdown_socket(&self, how: Shutdown) -> io::Result<()> {
        if how != Shutdown::Read {
            // The bytes already accepted go first.
            sio::ordered::drain(&self.fd, &self.write).await?;
        }
        ops::shutdown(&self.fd, how).await
    }

    /// The bytes this stream receives, as a `Stream` of buffers from `ring`, through one
    /// multishot receive (see [`RecvStream`]).
    ///
    /// Do not read the stream by other means meanwhile: which reader gets a chunk would be
    /// up to the kernel.
    pub fn recv_stream(&self, ring: &BufRing) -> RecvStream {
        RecvStream::new(self.fd.clone(), ring)
    }

    /// Splits the stream into a read half and a write half, each usable from its own task
    /// on this core (both are `!Send`); bytes `AsyncRead` buffered move to the read half.
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        let TcpStream { fd, read, write } = self;
        (
            OwnedReadHalf::new(fd.clone(), read),
            OwnedWriteHalf::new(fd, write),
        )
    }

    /// Borrows the stream as a read half and a write half (tokio's `TcpStream::split`),
    /// usable at once in one task (e.g. with `futures::join!` or `futures::io::copy`).
    ///
    /// The halves have the futures-io traits (`AsyncRead`, `AsyncBufRead`, `AsyncWrite`;
    /// tokio's under the `tokio-io` feature) on the stream's own buffers, and no owned-buffer
    /// methods, so `AsyncReadExt::read(&mut half, ..)` is simply `half.read(..)`. Costs
    /// nothing: no reference count, no allocation. For halves that move to separate tasks
    /// use [`into_split`](TcpStream::into_split).
    ///
    /// With `futures::io::AsyncReadExt` in scope, `stream.split()` on a binding is that
    /// trait's by-value `split(self)`; call `TcpStream::split(&mut stream)` for this one.
    pub fn split(&mut self) -> (ReadHalf<'_>, WriteHalf<'_>) {
        (
            ReadHalf::new(&self.fd, &mut self.read),
            WriteHalf::new(&self.fd, &mut self.write),
        )
    }

    /// Whether the stream is a direct descriptor (see [Direct descriptors](
    /// TcpStream#direct-descriptors)) rather than a regular fd.
    pub fn is_direct(&self) -> bool {
        self.fd.fixed_index().is_some()
    }

    /// The socket's regular fd, borrowed; on a direct descriptor, the one installed for it
    /// (installed by the first call). Unlike [`AsFd::as_fd`](std::os::fd::AsFd::as_fd),
    /// which panics, an install that fails (out of fds) is an error.
    pub fn try_as_fd(&self) -> io::Result<BorrowedFd<'_>> {
        self.fd.try_as_fd()
    }

    /// The remote address. On a direct descriptor, installs a regular fd on first use (see
    /// [Direct descriptors](TcpStream#direct-descriptors)).
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        peer_addr_of(&self.fd)
    }

    /// The local address. On a direct descriptor, installs a regular fd on first use.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        local_addr_of(&self.fd)
    }

    /// Sets `TCP_NODELAY`: send small segments at once instead of coalescing (Nagle). On a
    /// direct descriptor, through the ring, without installing an fd. To set it on every
    /// accepted connection, [`ListenOptions::nodelay`](crate::ListenOptions::nodelay) sets
    /// it once on the listener instead.
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        set_int(&self.fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, on.into())
    }

    /// Whether `TCP_NODELAY` is set. On a direct descriptor, installs a regular fd on first
    /// use.
    pub fn nodelay(&self) -> io::Result<bool> {
        with_sock(&self.fd, "nodelay", |s| s.tcp_nodelay())
    }

    /// Sets `SO_KEEPALIVE`: probe an idle connection (at the system's intervals). On a
    /// direct descriptor, through the ring, without installing an fd.
    pub fn set_keepalive(&self, on: bool) -> io::Result<()> {
        set_int(&self.fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE, on.into())
    }

    /// Whether `SO_KEEPALIVE` is set. On a direct descriptor, installs a regular fd on
    /// first use.
    pub fn keepalive(&self) -> io::Result<bool> {
        with_sock(&self.fd, "keepalive", |s| s.keepalive())
    }

    /// Sets `SO_LINGER` (whole seconds); `Some(Duration::ZERO)` makes close reset the
    /// connection. On a direct descriptor, through the ring, without installing an fd.
    pub fn set_linger(&self, linger: Option<Duration>) -> io::Result<()> {
        // `struct linger`: two `int`s, `l_onoff` then `l_linger`.
        let secs = linger.map_or(0, |d| {
            d.as_secs().min(libc::c_int::MAX as u64) as libc::c_int
        });
        let onoff = libc::c_int::from(linger.is_some());
        let mut value = [0u8; 2 * std::mem::size_of::<libc::c_int>()];
        let (a, b) = value.split_at_mut(std::mem::size_of::<libc::c_int>());
        a.copy_from_slice(&onoff.to_ne_bytes());
        b.copy_from_slice(&secs.to_ne_bytes());
        const _: () =
            assert!(std::mem::size_of::<libc::linger>() == 2 * std::mem::size_of::<libc::c_int>());
        self.fd
            .set_option(libc::SOL_SOCKET, libc::SO_LINGER, &value)
    }

    /// Wraps a connected std stream; it is set to blocking mode, which the ring expects.
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        stream.set_nonblocking(false)?;
        Ok(TcpStream::from_fd(stream.into()))
    }

    /// The std stream (in blocking mode). Ops in flight are cancelled and bytes buffered for
    /// `AsyncRead` are lost; if a dropped op is still in the kernel, this is a duplicate of
    /// the fd (`F_DUPFD_CLOEXEC`), which can fail. A direct descriptor gets a regular fd
    /// installed (if it has none yet) and its table slot closed: the std stream alone holds
    /// the socket then. If that install fails, the error says so and the socket is closed.
    pub fn into_std(self) -> io::Result<std::net::TcpStream> {
        let TcpStream { fd, read, write } = self;
        drop((read, write));
        Ok(fd.into_owned().map_err(|e| context(e, "into_std"))?.into())
    }
}

/// Sets the `c_int` socket option `level`/`name` of `fd` to `value` (through the ring on a
/// direct descriptor: see [`SharedFd::set_option`](runtime::fd::SharedFd::set_option)).
fn set_int(fd: &SharedFd, level: i32, name: i32, value: libc::c_int) -> io::Result<()> {
    fd.set_option(level, name, &value.to_ne_bytes())
}

crate::io::impl_as_fd!(TcpStream);

impl IntoRawFd for TcpStream {
    /// The fd, now the caller's to close (on a direct descriptor, one installed for it; see
    /// [`into_std`](TcpStream::into_std)).
    ///
    /// # Panics
    /// If a dropped op still holds the fd and duplicating it fails (`EMFILE`), or a direct
    /// descriptor's fd cannot be installed; use [`into_std`](TcpStream::into_std) to get
    /// that error instead.
    fn into_raw_fd(self) -> RawFd {
        match self.into_std() {
            Ok(s) => s.into_raw_fd(),
            Err(e) => panic!("TcpStream::into_raw_fd: duplicating the fd failed: {e}"),
        }
    }
}

crate::io::impl_async_read!(TcpStream);
crate::io::impl_async_write!(TcpStream);
