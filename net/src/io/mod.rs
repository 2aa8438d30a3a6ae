//! Stream I/O shared by every connected stream socket: `TcpStream`, `UnixStream` and their
//! split halves.
//!
//! `read` and `poll` are the state behind the poll traits (futures' and tokio's),
//! `read_chunk` and `write_chunk`: reads from the core's provided-buffer ring, writes
//! through a buffer held only while its detached send is in flight, at most one op in
//! flight per direction, kept in the socket between polls. `owned` holds the owned-buffer
//! ops (one op that owns its buffer and gives it back with the result), and `ordered` puts
//! them in order with that state: one reader and one writer per direction, whatever mix of
//! APIs is called.

mod chunk;
pub(crate) mod ordered;
mod owned;
mod poll;
mod read;

pub use chunk::Chunk;
pub(crate) use owned::{write, write_all, write_all_from, writev, writev_all};
pub(crate) use poll::WriteState;
pub(crate) use read::{ReadState, RingRead};

/// The next received chunk of `fd`, through its read state (see [`Chunk`]).
pub(crate) async fn read_chunk(
    fd: &crate::fd::SharedFd,
    read: &mut ReadState,
) -> std::io::Result<Chunk> {
    std::future::poll_fn(|cx| read.poll_chunk(fd, cx)).await
}

/// Starts sending `chunk` after the bytes already written through `write` (see
/// [`TcpStream::write_chunk`](crate::TcpStream::write_chunk)).
pub(crate) async fn write_chunk(
    fd: &crate::fd::SharedFd,
    write: &mut WriteState,
    chunk: Chunk,
) -> std::io::Result<()> {
    let mut chunk = Some(chunk);
    std::future::poll_fn(|cx| write.poll_write_chunk(fd, cx, &mut chunk)).await
}

/// `AsRawFd` and `AsFd` for a type with a `fd: SharedFd` field. On a direct descriptor both
/// install a regular fd on first use (see [`SharedFd::try_as_fd`](crate::fd::SharedFd)).
macro_rules! impl_as_fd {
    ($($ty:ty),* $(,)?) => {$(
        impl std::os::fd::AsRawFd for $ty {
            /// The socket's fd. On a direct descriptor, the regular fd installed for it
            /// (installed on first use); `-1` if that fails (any call given it fails with
            /// `EBADF`).
            fn as_raw_fd(&self) -> std::os::fd::RawFd {
                self.fd.raw()
            }
        }

        impl std::os::fd::AsFd for $ty {
            /// The socket's fd, borrowed. On a direct descriptor, the regular fd installed
            /// for it (installed on first use).
            ///
            /// # Panics
            /// If a direct descriptor's fd cannot be installed (out of fds): `try_as_fd`
            /// gives that error instead.
            fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
                std::os::fd::AsFd::as_fd(&self.fd)
            }
        }
    )*};
}

/// `AsyncRead` and `AsyncBufRead` (futures-io's, and tokio's under the `tokio-io` feature)
/// for a type with `fd: SharedFd` and `read: ReadState` fields: its
/// [`PollRead`](runtime::io::PollRead) forwards to the shared read state (`io::poll`), and
/// `runtime::impl_async_io!` makes the traits of it, so both sets read the same buffer.
macro_rules! impl_async_read {
    ($($ty:ty),* $(,)?) => {$(
        impl runtime::io::PollRead for $ty {
            fn io_poll_read(
                &mut self,
                cx: &mut std::task::Context<'_>,
                buf: &mut [u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.read.poll_read(&self.fd, cx, buf)
            }

            fn io_poll_fill_buf(
                &mut self,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<&[u8]>> {
                self.read.poll_fill_buf(&self.fd, cx)
            }

            fn io_consume(&mut self, amt: usize) {
                self.read.consume(amt);
            }

            #[cfg(feature = "tokio-io")]
            fn io_poll_read_buf(
                &mut self,
                cx: &mut std::task::Context<'_>,
                buf: &mut runtime::io::ReadBuf<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                self.read.poll_read_buf(&self.fd, cx, buf)
            }
        }

        runtime::impl_async_io!(read: $ty);
    )*};
}

/// `AsyncWrite` (futures-io's, and tokio's under the `tokio-io` feature) for a type with
/// `fd: SharedFd` and `write: WriteState` fields: its [`PollWrite`](runtime::io::PollWrite)
/// forwards to the shared write state (`io::poll`), and `runtime::impl_async_io!` makes the
/// traits of it; tokio's `poll_shutdown` is futures' `poll_close`.
macro_rules! impl_async_write {
    ($($ty:ty),* $(,)?) => {$(
        impl runtime::io::PollWrite for $ty {
            fn io_poll_write(
                &mut self,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.write.poll_write(&self.fd, cx, buf)
            }

            fn io_poll_write_vectored(
                &mut self,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.write.poll_write_vectored(&self.fd, cx, bufs)
            }

            /// Yes: the slices are gathered into one send.
            fn io_is_write_vectored(&self) -> bool {
                true
            }

            fn io_poll_flush(
                &mut self,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                self.write.poll_flush(&self.fd, cx)
            }

            fn io_poll_close(
                &mut self,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                self.write.poll_close(&self.fd, cx)
            }
        }

        runtime::impl_async_io!(write: $ty);
    )*};
}

pub(crate) use {impl_as_fd, impl_async_read, impl_async_write};
