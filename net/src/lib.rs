//! Sockets for the io_uring runtime: [`TcpListener`] (with a multishot
//! [`incoming`](TcpListener::incoming) stream) and [`TcpStream`], [`UdpSocket`], and Unix
//! domain sockets ([`UnixListener`], [`UnixStream`], [`UnixDatagram`]; see [`unix`]).
//!
//! Every socket operation is an io_uring op built on the `runtime` crate's public op API
//! ([`runtime::driver::Op`], [`runtime::driver::MultiOp`]); this crate never touches the ring.
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
//!   the kernel) is dropped.
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
//!   [`UdpSocket::send_to`], and so `net::hyper::Client` too) run it on the runtime's
//!   blocking pool (`runtime::spawn_blocking`): the core goes on running its other
//!   tasks while a slow lookup waits.
//! - The synchronous functions ([`TcpListener::bind`], [`UdpSocket::bind`], [`serve`],
//!   `net::hyper::serve`) cannot wait: they resolve a host name on the calling thread, blocking
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
//!     let listener = net::TcpListener::bind("127.0.0.1:0")?;
//!     let addr = listener.local_addr()?;
//!     let client = runtime::spawn_local(async move {
//!         let stream = net::TcpStream::connect(addr).await?;
//!         let (res, _) = stream.write_all(b"ping".as_slice()).await;
//!         res
//!     });
//!     let mut incoming = listener.incoming();
//!     let stream = incoming.next().await.expect("the stream never ends")?;
//!     let (res, buf) = stream.read_exact(vec![0u8; 4].into_boxed_slice()).await;
//!     res?;
//!     assert_eq!(&buf[..], b"ping");
//!     client.await.unwrap()
//! })?;
//! # Ok::<(), std::io::Error>(())
//! ```

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(
    missing_docs,
    clippy::undocumented_unsafe_blocks,
    clippy::missing_safety_doc
)]

#[cfg(not(target_os = "linux"))]
compile_error!("net is built on io_uring and runs on Linux only");

mod accept_stream;
mod addr;
mod error;
mod fd;
#[cfg(feature = "hyper")]
pub mod hyper;
mod io;
mod ops;
mod recv_stream;
mod resolve;
mod serve;
pub mod tcp;
#[cfg(feature = "tls")]
pub mod tls;
mod udp;
pub mod unix;

pub use recv_stream::RecvStream;
pub use resolve::{lookup_host, ToSocketAddrs};
pub use serve::{serve, Server};
pub use tcp::{
    Incoming, ListenOptions, OwnedReadHalf, OwnedWriteHalf, ReuniteError, TcpListener, TcpStream,
};
pub use udp::UdpSocket;
pub use unix::{UnixDatagram, UnixListener, UnixStream};
