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

pub(crate) mod ordered;
mod owned;
mod poll;
mod read;

pub(crate) use owned::{write, write_all, write_all_from, writev, writev_all};
pub(crate) use poll::WriteState;
pub use read::Chunk;
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
/// for a type with `fd: SharedFd` and `read: ReadState` fields, forwarding to the shared
/// read state (`io::poll`): both sets of traits read from the same buffer.
macro_rules! impl_async_read {
    ($($ty:ty),* $(,)?) => {$(
        impl futures::io::AsyncRead for $ty {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut [u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let this = self.get_mut();
                this.read.poll_read(&this.fd, cx, buf)
            }
        }

        impl futures::io::AsyncBufRead for $ty {
            fn poll_fill_buf(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<&[u8]>> {
                let this = self.get_mut();
                this.read.poll_fill_buf(&this.fd, cx)
            }

            fn consume(self: std::pin::Pin<&mut Self>, amt: usize) {
                self.get_mut().read.consume(amt);
            }
        }

        #[cfg(feature = "tokio-io")]
        impl tokio::io::AsyncRead for $ty {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut tokio::io::ReadBuf<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                let this = self.get_mut();
                this.read.poll_read_buf(&this.fd, cx, buf)
            }
        }

        #[cfg(feature = "tokio-io")]
        impl tokio::io::AsyncBufRead for $ty {
            fn poll_fill_buf(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<&[u8]>> {
                let this = self.get_mut();
                this.read.poll_fill_buf(&this.fd, cx)
            }

            fn consume(self: std::pin::Pin<&mut Self>, amt: usize) {
                self.get_mut().read.consume(amt);
            }
        }
    )*};
}

/// `AsyncWrite` (futures-io's, and tokio's under the `tokio-io` feature) for a type with
/// `fd: SharedFd` and `write: WriteState` fields, forwarding to the shared write state
/// (`io::poll`); tokio's `poll_shutdown` is futures' `poll_close`.
macro_rules! impl_async_write {
    ($($ty:ty),* $(,)?) => {$(
        impl futures::io::AsyncWrite for $ty {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let this = self.get_mut();
                this.write.poll_write(&this.fd, cx, buf)
            }

            fn poll_write_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let this = self.get_mut();
                this.write.poll_write_vectored(&this.fd, cx, bufs)
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                let this = self.get_mut();
                this.write.poll_flush(&this.fd, cx)
            }

            fn poll_close(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                let this = self.get_mut();
                this.write.poll_close(&this.fd, cx)
            }
        }

        #[cfg(feature = "tokio-io")]
        impl tokio::io::AsyncWrite for $ty {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let this = self.get_mut();
                this.write.poll_write(&this.fd, cx, buf)
            }

            fn poll_write_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let this = self.get_mut();
                this.write.poll_write_vectored(&this.fd, cx, bufs)
            }

            /// Yes: the slices are gathered into one send.
            fn is_write_vectored(&self) -> bool {
                true
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                let this = self.get_mut();
                this.write.poll_flush(&this.fd, cx)
            }

            fn poll_shutdown(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                let this = self.get_mut();
                this.write.poll_close(&this.fd, cx)
            }
        }
    )*};
}

pub(crate) use {impl_as_fd, impl_async_read, impl_async_write};
