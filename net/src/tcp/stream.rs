//! [`TcpStream`]: what a stream socket does only for TCP: `connect(2)` through the ring, the
//! TCP and socket options (set through the ring on a direct descriptor), zero-copy sends,
//! and std's type. The rest is the crate's one stream type (`crate::stream`).

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use runtime::buf::IoBuf;
use runtime::ext::{error_context, SharedFd};
use socket2::{Domain, Protocol, Socket, Type};

use crate::io::{ordered, WriteState};
use crate::ops;
use crate::stream::{OwnedWriteHalf, StreamSocket, Tcp};
use crate::sys::resolve::{no_addresses, resolve, ToSocketAddrs};
use crate::sys::with_sock;

/// A connected TCP socket: the crate's one [`StreamSocket`], for the [`Tcp`] family.
///
/// Everything but connecting, the socket options, [`send_zc`](StreamSocket::send_zc) and
/// the std conversions is [`StreamSocket`]'s, shared with
/// [`UnixStream`](crate::UnixStream): read its documentation for the two ways to do I/O
/// (the futures-io and tokio traits, or owned buffers) and how they mix on one socket.
///
/// # Examples
///
/// ```
/// use futures::io::{AsyncReadExt, AsyncWriteExt};
/// use corering_net::{TcpListener, TcpStream};
///
/// let rt = runtime::Runtime::new()?;
/// rt.block_on(async {
///     let listener = TcpListener::bind("127.0.0.1:0")?;
///     let addr = listener.local_addr()?;
///     let server = runtime::spawn_local(async move {
///         // An owned-buffer echo: the buffer goes to the kernel and comes back.
///         let (stream, _peer) = listener.accept().await?;
///         let (res, buf) = stream.read_owned(vec![0u8; 64]).await;
///         let n = res?;
///         let (res, _) = stream.write_all_owned(runtime::buf::IoBuf::slice(buf, ..n)).await;
///         res
///     });
///     // The trait style, as code written for tokio or futures calls it.
///     let mut client = TcpStream::connect(addr).await?;
///     client.set_nodelay(true)?;
///     client.write_all(b"hello").await?;
///     let mut reply = [0u8; 5];
///     client.read_exact(&mut reply).await?;
///     assert_eq!(&reply, b"hello");
///     server.await.unwrap()
/// })?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// # Direct descriptors
///
/// A stream accepted by [`TcpListener::incoming`](crate::TcpListener::incoming) or
/// [`accept`](crate::TcpListener::accept) is, where the core can (Linux 6.8 and newer,
/// [`Features::direct_descriptors`](runtime::Features::direct_descriptors) and
/// [`fixed_fd_install`](runtime::Features::fixed_fd_install)), a *direct descriptor*: an
/// index in its core's ring's fixed-file table, which every op names, so the kernel skips
/// the fd-table look-up and reference count of the socket per op, and the process holds no
/// fd for it. [`is_direct`](StreamSocket::is_direct) says which. Everything works the
/// same; what needs a regular fd gets one installed on demand
/// (`IORING_OP_FIXED_FD_INSTALL`: one synchronous `io_uring_enter(2)` on first use, the fd
/// then kept until the stream closes): [`AsRawFd`](std::os::fd::AsRawFd),
/// [`AsFd`](std::os::fd::AsFd) (so `socket2::SockRef`),
/// [`try_as_fd`](StreamSocket::try_as_fd), [`into_std`](StreamSocket::into_std),
/// [`peer_addr`](StreamSocket::peer_addr), [`local_addr`](StreamSocket::local_addr) and
/// the option getters. The option setters ([`set_nodelay`](StreamSocket::set_nodelay),
/// [`set_keepalive`](StreamSocket::set_keepalive), [`set_linger`](StreamSocket::set_linger))
/// go through the ring instead (`SOCKET_URING_OP_SETSOCKOPT`, one synchronous enter, no
/// fd); for `TCP_NODELAY` on every connection, [`ListenOptions::nodelay`](
/// crate::ListenOptions::nodelay) costs nothing per connection. Closing queues an
/// `IORING_OP_CLOSE` of the index on the ring. Streams made by
/// [`connect`](StreamSocket::connect), [`from_std`](StreamSocket::from_std) and
/// [`incoming_with_addr`](crate::TcpListener::incoming_with_addr) are regular fds.
pub type TcpStream = StreamSocket<Tcp>;

impl StreamSocket<Tcp> {
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
                Err(e) => last = Some(error_context(e, format!("connect to {a}"))),
            }
        }
        Err(last.unwrap_or_else(|| no_addresses("address")))
    }

    async fn connect_addr(addr: SocketAddr) -> io::Result<TcpStream> {
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        let fd = SharedFd::new(socket.into());
        ops::connect(&fd, addr).await?;
        Ok(TcpStream::from_shared(fd))
    }

    /// Sends `buf`'s initialised bytes once without copying them into the kernel
    /// (`IORING_OP_SEND_ZC`, Linux 6.0); the buffer comes back when the kernel is done with
    /// it. Pays for large buffers on real NICs; on loopback the kernel copies anyway (see
    /// the README's figures). The count may be short. (TCP only: the kernel has no
    /// zero-copy send for Unix sockets, `EOPNOTSUPP`.) Before Linux 6.0, and on the epoll
    /// backend, a plain send.
    pub async fn send_zc<B: IoBuf>(&self, buf: B) -> (io::Result<usize>, B) {
        send_zc(&self.fd, &self.write, buf).await
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
        Ok(self.into_owned_fd()?.into())
    }
}

impl OwnedWriteHalf<Tcp> {
    /// Sends `buf` once without copying it into the kernel; as
    /// [`TcpStream::send_zc`](StreamSocket::send_zc).
    pub async fn send_zc<B: IoBuf>(&self, buf: B) -> (io::Result<usize>, B) {
        send_zc(&self.fd, &self.write, buf).await
    }
}

/// A zero-copy send of `buf` on `fd`, after the write-behind send in flight.
async fn send_zc<B: IoBuf>(fd: &SharedFd, write: &WriteState, buf: B) -> (io::Result<usize>, B) {
    if buf.bytes_init() == 0 {
        return (Ok(0), buf);
    }
    // Before Linux 6.0 (no IORING_OP_SEND_ZC): a plain send, as on the epoll backend.
    let code = io_uring::opcode::SendZc::CODE;
    if runtime::features().is_some_and(|f| !f.supports_op(code)) {
        return ordered::after_drain(fd, write, buf, |b| ops::send(fd, b)).await;
    }
    ordered::after_drain(fd, write, buf, |b| ops::send_zc(fd, b)).await
}

/// Sets the `c_int` socket option `level`/`name` of `fd` to `value` (through the ring on a
/// direct descriptor: see [`SharedFd::set_option`](runtime::ext::SharedFd::set_option)).
fn set_int(fd: &SharedFd, level: i32, name: i32, value: libc::c_int) -> io::Result<()> {
    fd.set_option(level, name, &value.to_ne_bytes())
}
