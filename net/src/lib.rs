//! Sockets for the io_uring runtime: [`TcpListener`] (with a multishot
//! [`incoming`](TcpListener::incoming) stream) and [`TcpStream`], [`UdpSocket`], and Unix
//! domain sockets ([`UnixListener`], [`UnixStream`], [`UnixDatagram`]; see [`unix`]).
//!
//! Every socket operation is an io_uring op built on the `runtime` crate's public op API
//! ([`runtime::ext::Op`], [`runtime::ext::MultiOp`]); this crate never touches the ring.
//! Socket setup (`socket(2)`, `bind(2)`, `listen(2)`, socket options, and `connect(2)` on
//! datagram sockets, which only sets the default peer) is done with plain system calls
//! through `socket2`: those never block.
//!
//! # Invariants
//! - Every op owns what the kernel reads or writes (buffers, boxed `sockaddr` storage, the
//!   boxed `msghdr` and `iovec` of `sendmsg`/`recvmsg`) and a
//!   shared reference to the socket's fd, so neither memory nor fd number is
//!   freed or reused while the kernel may still use it, even when the op future is dropped.
//! - Sends use `MSG_NOSIGNAL`: a write to a reset peer gives `EPIPE`, never `SIGPIPE`.
//! - A socket's fd is closed exactly once, when its last owner (the socket or an op still in
//!   the kernel) is dropped. Accepted TCP connections are direct descriptors where the
//!   kernel allows (indexes in the core ring's fixed-file table, closed by a ring op; see
//!   [`TcpStream`]'s documentation).
//!
//! # Name resolution
//! Functions taking an address take this crate's [`ToSocketAddrs`] (tokio's trait, sealed):
//! a [`SocketAddr`](std::net::SocketAddr), an IP address and a port, a numeric `"ip:port"`
//! string or `("ip", port)`, a slice of addresses, or a host name and a port
//! (`"example.com:443"`, `("localhost", 8080)`).
//!
//! - A numeric address is parsed on the core, with no system call, and never leaves it.
//! - A host name is resolved with `getaddrinfo(3)`, which blocks and has no io_uring op. The
//!   async functions ([`lookup_host`], [`TcpStream::connect`], [`UdpSocket::connect`],
//!   [`UdpSocket::send_to`], and so `corering_net::hyper::Client` too) run it on the runtime's
//!   blocking pool (`runtime::spawn_blocking`): the core goes on running its other
//!   tasks while a slow lookup waits.
//! - The synchronous functions ([`TcpListener::bind`], [`UdpSocket::bind`], [`serve`],
//!   `corering_net::hyper::serve`) cannot wait: they resolve a host name on the calling thread, blocking
//!   the core, as std does. Binding to a name is rare and happens at startup; pass an IP
//!   address to bind without ever calling `getaddrinfo`.
//!
//! Each resolved address is tried in turn, as std does; the last error is returned
//! ([`UdpSocket::send_to`] uses one address: the first of the socket's family). A name that
//! does not resolve is an error of the kind `getaddrinfo` gave, with the name in its
//! message (`"resolving example.invalid:80: failed to lookup address information: ..."`); one
//! that resolves to no address is `InvalidInput`, also naming it. Unix socket paths need no
//! resolution.
//!
//! ```
//! use futures::StreamExt;
//!
//! let rt = runtime::Runtime::new()?;
//! rt.block_on(async {
//!     let listener = corering_net::TcpListener::bind("127.0.0.1:0")?;
//!     let addr = listener.local_addr()?;
//!     let client = runtime::spawn_local(async move {
//!         let stream = corering_net::TcpStream::connect(addr).await?;
//!         let (res, _) = stream.write_all_owned(b"ping".as_slice()).await;
//!         res
//!     });
//!     let mut incoming = listener.incoming();
//!     let stream = incoming.next().await.expect("the stream never ends")?;
//!     let (res, buf) = stream.read_exact_owned(vec![0u8; 4].into_boxed_slice()).await;
//!     res?;
//!     assert_eq!(&buf[..], b"ping");
//!     client.await.unwrap()
//! })?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! # One stream type, two families
//! [`TcpStream`] and [`UnixStream`] are one type, [`stream::StreamSocket`], for the two
//! address families [`stream::Tcp`] and [`stream::Unix`]: the same methods, traits and
//! halves, written once ([`stream`]); each family adds its own connecting, socket options
//! and std conversions. The names tokio users know (`TcpStream`, `tcp::OwnedReadHalf`,
//! `unix::OwnedReadHalf`, `unix::Incoming`, ...) are aliases of it and its companions.
//!
//! # Two ways to do I/O
//! Every stream socket ([`TcpStream`], [`UnixStream`], their halves) offers both:
//!
//! - **The I/O traits**, as tokio and futures code calls them: `AsyncRead`, `AsyncBufRead`
//!   and `AsyncWrite` of futures-io, and tokio's under the `tokio-io` feature, with their
//!   extension methods (`read`, `read_exact`, `read_to_end`, `write_all`, `flush`,
//!   `shutdown`, `copy`, ...) on `&mut [u8]` and `&[u8]`. No inherent method has one of
//!   their names, so a port from tokio compiles as written. Reads come from the core's
//!   shared provided-buffer ring (below); a write is copied into a buffer held only while
//!   its send is in flight.
//! - **Owned buffers**, the io_uring-native interface under names of their own
//!   (`read_owned`, `read_exact_owned`, `write_owned`, `write_all_owned`, `writev_owned`,
//!   `writev_all_owned`, `read_chunk`/`write_chunk`, `shutdown_socket`, ...): they take a
//!   buffer by value, submit one op, and give the buffer back with the result, with no
//!   copy and no import. Borrowed bytes go through [`TcpStream::write_all_from`].
//!
//! Both read and write the same ordered byte stream and can be mixed on one socket.
//!
//! # What a connection holds while it waits
//! An owned-buffer `read_owned(buf)` hands `buf` to the kernel until data arrives: a server
//! with many idle connections pins one buffer each. The traits and `read_chunk()` (which
//! yields a [`Chunk`], an `IoBuf` that `write_all_owned` sends on without a copy) read
//! instead through one multishot receive per connection into the core's provided-buffer
//! ring ([`runtime::buf::core_ring`]): the kernel takes a buffer only when data arrives and
//! the chunk returns to the ring once read, so an idle connection owns no receive buffer.
//! A connection nobody reads holds at most a few buffers (the receive is paused past a
//! small backlog), and when the ring runs dry (`ENOBUFS`) the receive re-arms as soon as a
//! buffer comes back. Off (`Builder::recv_multishot(false)`, or a kernel without buffer
//! rings), the traits use a 16 KiB buffer per connection.
//!
//! One trap remains, futures' own: with futures' `AsyncReadExt` in scope,
//! `stream.split()` is its by-value `split(self)` (lock-based halves that also work);
//! write `TcpStream::split(&mut stream)` for the borrowed one. tokio's `AsyncReadExt` has
//! no `split`, so a tokio port is unaffected.
//!
//! ```
//! use futures::io::{AsyncReadExt, AsyncWriteExt};
//!
//! let rt = runtime::Runtime::new()?;
//! rt.block_on(async {
//!     let listener = corering_net::TcpListener::bind("127.0.0.1:0")?;
//!     let addr = listener.local_addr()?;
//!     let server = runtime::spawn_local(async move {
//!         let (mut stream, _peer) = listener.accept().await?;
//!         // The trait style, as a port from tokio writes it.
//!         let mut buf = [0u8; 64];
//!         let n = stream.read(&mut buf).await?;
//!         stream.write_all(&buf[..n]).await?;
//!         stream.flush().await?;
//!         let mut rest = Vec::new();
//!         stream.read_to_end(&mut rest).await?;
//!         assert_eq!(rest, b"x");
//!         Ok::<_, std::io::Error>(())
//!     });
//!     let mut client = corering_net::TcpStream::connect(addr).await?;
//!     // Owned buffers: the inherent methods, no import needed.
//!     let (res, _) = client.write_all_owned(b"ping".to_vec()).await;
//!     res?;
//!     let (res, buf) = client.read_exact_owned(vec![0u8; 4]).await;
//!     res?;
//!     assert_eq!(buf, b"ping");
//!     // And the traits on the same socket, in order after the owned write.
//!     client.write_all(b"x").await?;
//!     client.close().await?; // flush, then shut the write direction down
//!     let mut rest = Vec::new();
//!     client.read_to_end(&mut rest).await?; // the server closes after reading "x"
//!     assert!(rest.is_empty());
//!     server.await.unwrap()
//! })?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! # From tokio
//! - `TcpListener::bind` is synchronous (drop the `.await`): `bind(2)` and `listen(2)` never
//!   block. `accept()` is the same; [`TcpListener::incoming_with_addr`] streams
//!   `(TcpStream, SocketAddr)` too (and [`UnixListener::incoming_with_addr`] Unix ones).
//! - `split`, `into_split`, `peer_addr`, `set_nodelay` have tokio's names; timers
//!   (`runtime::time`) have tokio's `Interval` and `MissedTickBehavior`.

#[cfg(not(target_os = "linux"))]
compile_error!("net is built on io_uring and runs on Linux only");

#[cfg(feature = "grpc")]
pub mod grpc;
#[cfg(feature = "hyper")]
pub mod hyper;
mod io;
mod ops;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod stream;
mod sys;
pub mod tcp;
#[cfg(feature = "tls")]
pub mod tls;
mod trace;
mod udp;
pub mod unix;

pub use io::{Chunk, RecvStream};
pub use sys::resolve::{lookup_host, ToSocketAddrs};
pub use tcp::{
    serve, serve_with_async, Incoming, IncomingWithAddr, ListenOptions, OwnedReadHalf,
    OwnedWriteHalf, ReuniteError, Server, TcpListener, TcpStream,
};
pub use udp::UdpSocket;
pub use unix::{UnixDatagram, UnixListener, UnixStream};
