//! The traits of the stream and its halves: `AsRawFd`/`AsFd`, and the I/O traits
//! (futures-io's `AsyncRead`, `AsyncBufRead` and `AsyncWrite`, and tokio's under the
//! `tokio-io` feature).
//!
//! Each type's [`PollRead`] or [`PollWrite`] forwards to its read or write state (`io::read`,
//! `io::write`), for every family at once; `runtime::ext::impl_async_io!` then makes the futures
//! and tokio traits of it, for each family's type (the macro takes no generics), so both
//! sets of traits read and write the same buffers.

use std::io;
use std::task::{Context, Poll};

use runtime::ext::io::{PollRead, PollWrite};

use super::{Family, Tcp, Unix};
use super::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, StreamSocket, WriteHalf};

crate::sys::impl_as_fd!(
    impl[F: Family] StreamSocket<F>,
    impl[F: Family] OwnedReadHalf<F>,
    impl[F: Family] OwnedWriteHalf<F>,
    impl[F: Family] ReadHalf<'_, F>,
    impl[F: Family] WriteHalf<'_, F>,
);

/// [`PollRead`] for types with `fd: SharedFd` and `read: ReadState` fields (or references),
/// each written `impl[generics] Type`.
macro_rules! poll_read {
    ($(impl[$($gen:tt)*] $ty:ty),* $(,)?) => {$(
        impl<$($gen)*> PollRead for $ty {
            fn io_poll_read(
                &mut self,
                cx: &mut Context<'_>,
                buf: &mut [u8],
            ) -> Poll<io::Result<usize>> {
                self.read.poll_read(&self.fd, cx, buf)
            }

            fn io_poll_fill_buf(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
                self.read.poll_fill_buf(&self.fd, cx)
            }

            fn io_consume(&mut self, amt: usize) {
                self.read.consume(amt);
            }

            #[cfg(feature = "tokio-io")]
            fn io_poll_read_buf(
                &mut self,
                cx: &mut Context<'_>,
                buf: &mut runtime::ext::io::ReadBuf<'_>,
            ) -> Poll<io::Result<()>> {
                self.read.poll_read_buf(&self.fd, cx, buf)
            }
        }
    )*};
}

/// [`PollWrite`] for types with `fd: SharedFd` and `write: WriteState` fields (or
/// references), each written `impl[generics] Type`; tokio's `poll_shutdown` is futures'
/// `poll_close`.
macro_rules! poll_write {
    ($(impl[$($gen:tt)*] $ty:ty),* $(,)?) => {$(
        impl<$($gen)*> PollWrite for $ty {
            fn io_poll_write(
                &mut self,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<io::Result<usize>> {
                self.write.poll_write(&self.fd, cx, buf)
            }

            fn io_poll_write_vectored(
                &mut self,
                cx: &mut Context<'_>,
                bufs: &[io::IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                self.write.poll_write_vectored(&self.fd, cx, bufs)
            }

            /// Yes: the slices are gathered into one send.
            fn io_is_write_vectored(&self) -> bool {
                true
            }

            fn io_poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                self.write.poll_flush(&self.fd, cx)
            }

            fn io_poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                self.write.poll_close(&self.fd, cx)
            }
        }
    )*};
}

poll_read!(
    impl[F: Family] StreamSocket<F>,
    impl[F: Family] OwnedReadHalf<F>,
    impl[F: Family] ReadHalf<'_, F>,
);
poll_write!(
    impl[F: Family] StreamSocket<F>,
    impl[F: Family] OwnedWriteHalf<F>,
    impl[F: Family] WriteHalf<'_, F>,
);

runtime::ext::impl_async_io!(
    read: StreamSocket<Tcp>,
    StreamSocket<Unix>,
    OwnedReadHalf<Tcp>,
    OwnedReadHalf<Unix>,
    ReadHalf<'_, Tcp>,
    ReadHalf<'_, Unix>,
);
runtime::ext::impl_async_io!(
    write: StreamSocket<Tcp>,
    StreamSocket<Unix>,
    OwnedWriteHalf<Tcp>,
    OwnedWriteHalf<Unix>,
    WriteHalf<'_, Tcp>,
    WriteHalf<'_, Unix>,
);
