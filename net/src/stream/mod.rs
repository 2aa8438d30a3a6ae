//! The one connected stream socket, generic over its address family:
//! [`StreamSocket<F>`](StreamSocket), with [`TcpStream`](crate::TcpStream) =
//! `StreamSocket<Tcp>` and [`UnixStream`](crate::UnixStream) = `StreamSocket<Unix>`, its
//! halves, and the multishot accept that makes them.
//!
//! Everything a stream does the same way whatever its family is written here once: the
//! owned-buffer and chunk methods (`methods.rs`, for the stream and its owned halves), the
//! halves and their reunion (`split.rs`), the futures-io and tokio traits (`traits.rs`), and
//! a listener's [`Incoming`] stream (`incoming.rs`, over `accept.rs`'s multishot accept).
//! What a family does its own way is an `impl` block of its own: connecting, socket
//! options and the std types in `tcp/stream.rs` and `unix/stream.rs`, and the little the
//! generic code asks of a family (its address type and how to read one) in `family.rs`.
//!
//! The names tokio users know are aliases of these types: [`TcpStream`](crate::TcpStream),
//! [`tcp::OwnedReadHalf`](crate::tcp::OwnedReadHalf), [`unix::ReadHalf`](crate::unix::ReadHalf),
//! and so on.

pub(crate) mod accept;
pub(crate) mod family;
mod incoming;
mod methods;
mod socket;
mod split;
mod traits;

pub use family::{Family, Tcp, Unix};
pub use incoming::{Incoming, IncomingWithAddr};
pub use socket::StreamSocket;
pub use split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, ReuniteError, WriteHalf};
