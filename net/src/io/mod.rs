//! The data path under every connected stream socket: [`StreamSocket`](crate::stream::StreamSocket)
//! (so `TcpStream` and `UnixStream`) and its halves.
//!
//! - `read.rs`: the read direction behind the poll traits (futures' and tokio's `AsyncRead`,
//!   `AsyncBufRead`) and `read_chunk`: the socket's read state, which reads through its
//!   source, chosen at the first read: the core's provided-buffer ring or, without one, a
//!   buffer of the socket's own; at most one op in flight, kept in the socket between polls.
//! - `ring_read.rs`: that ring source, one multishot receive into a provided-buffer ring;
//!   `recv_stream.rs` is the same receive on a ring of the caller's ([`RecvStream`]).
//!   `ring_read/direct.rs`: a read of 16 KiB or more with nothing buffered stops that
//!   receive and receives straight into the caller's memory (`recv(2)`, `POLL_ADD` to
//!   wait), so a large body is copied once, by the kernel.
//! - `write.rs`: the write direction behind `AsyncWrite` and `write_chunk`: write-behind, one
//!   detached send at a time of a buffer held only while the send is in flight.
//! - `owned.rs`: the owned-buffer ops (one op that owns its buffer and gives it back with the
//!   result: `read_owned`, `write_all_owned`, ...).
//! - `ordered.rs`: the owned-buffer calls put in order with the read and write state: one
//!   reader and one writer per direction, whatever mix of APIs is called.
//! - `chunk.rs`: [`Chunk`], a received buffer handed out by `read_chunk`.
//! - `pool.rs`: the per-core pool of small write-behind buffers (`poll_write`'s copies).

mod chunk;
pub(crate) mod ordered;
mod owned;
mod pool;
mod read;
mod recv_stream;
mod ring_read;
mod write;

pub use chunk::Chunk;
pub(crate) use owned::{write, write_all, write_all_from, writev, writev_all};
pub(crate) use read::ReadState;
pub use recv_stream::RecvStream;
pub(crate) use ring_read::RingRead;
#[cfg(feature = "hyper")]
pub(crate) use ring_read::DIRECT_MIN;
pub(crate) use write::WriteState;

use std::future::Future;
use std::io;

use runtime::ext::SharedFd;

/// The next received chunk of `fd`, through its read state (see [`Chunk`]).
///
/// A plain future, not an `async fn`: it holds two references and nothing else, so a task
/// parked in it (an idle connection) stays as small as its state machine allows.
pub(crate) fn read_chunk<'a>(
    fd: &'a SharedFd,
    read: &'a mut ReadState,
) -> impl Future<Output = io::Result<Chunk>> + 'a {
    std::future::poll_fn(move |cx| read.poll_chunk(fd, cx))
}

/// Starts sending `chunk` after the bytes already accepted by the write state (see
/// [`StreamSocket::write_chunk`](crate::stream::StreamSocket::write_chunk)).
///
/// A plain future holding the chunk once (an `async fn` would hold it in its own frame and
/// again in the `poll_fn` it awaits).
pub(crate) fn write_chunk<'a>(
    fd: &'a SharedFd,
    write: &'a mut WriteState,
    chunk: Chunk,
) -> impl Future<Output = io::Result<()>> + 'a {
    let mut chunk = Some(chunk);
    std::future::poll_fn(move |cx| write.poll_write_chunk(fd, cx, &mut chunk))
}
