//! TCP: a listener with single and multishot accept, connected streams, and [`serve`] on
//! every core.
//!
//! See `tcp(7)`. Sockets are made with `socket2` (`SOCK_CLOEXEC`), left in blocking mode (the
//! ring does not need `O_NONBLOCK`, and `into_std` hands back what std expects), and do all
//! their I/O through the ring. Every type here holds its fd in an `Rc`, so it stays on the
//! core that made it: it is `!Send`. Accepted connections are direct descriptors (indexes in
//! the core ring's fixed-file table) where the kernel allows: see [`TcpStream`].
//!
//! The stream and its halves are the crate's one stream type for the [`Tcp`] family (see
//! [`crate::stream`]); the names here are aliases, as tokio spells them.

pub(crate) mod conns;
// Only `hyper::serve` moves connections; plain `serve` passes no mailbox.
#[cfg_attr(not(feature = "hyper"), allow(dead_code))]
pub(crate) mod handoff;
mod listener;
pub(crate) mod serve;
pub(crate) mod server;
mod stream;

pub use listener::{ListenOptions, TcpListener};
pub use serve::{serve, serve_with_async};
pub use server::Server;
pub use stream::TcpStream;

use crate::stream::{self as generic, Tcp};

/// The read half of a [`TcpStream`], from [`TcpStream::into_split`]: its read methods
/// (`read_chunk`, `read_owned`, ...) and read traits.
pub type OwnedReadHalf = generic::OwnedReadHalf<Tcp>;

/// The write half of a [`TcpStream`], from [`TcpStream::into_split`]: its write methods
/// (`write_chunk`, `write_all_owned`, `send_zc`, ...) and `AsyncWrite`.
pub type OwnedWriteHalf = generic::OwnedWriteHalf<Tcp>;

/// The read half of a [`TcpStream`] borrowed by [`TcpStream::split`]: the read traits, on
/// the stream's read state.
pub type ReadHalf<'a> = generic::ReadHalf<'a, Tcp>;

/// The write half of a [`TcpStream`] borrowed by [`TcpStream::split`]: `AsyncWrite`, on
/// the stream's write state.
pub type WriteHalf<'a> = generic::WriteHalf<'a, Tcp>;

/// The halves given to [`OwnedReadHalf::reunite`](generic::OwnedReadHalf::reunite) were
/// split from different TCP streams; both are handed back (`err.0`, `err.1`).
pub type ReuniteError = generic::ReuniteError<Tcp>;

/// Accepted TCP connections, from one multishot accept: [`TcpListener::incoming`].
pub type Incoming = generic::Incoming<Tcp>;

/// Accepted TCP connections with their peers' addresses:
/// [`TcpListener::incoming_with_addr`].
pub type IncomingWithAddr = generic::IncomingWithAddr<Tcp>;
