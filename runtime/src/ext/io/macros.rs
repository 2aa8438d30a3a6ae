//! [`impl_async_io!`](crate::ext::impl_async_io): the futures-io and tokio I/O traits, written
//! once, for every stream type of the runtime and of crates built on it.

/// Implements `futures::io::{AsyncRead, AsyncBufRead}` (`read:` arm) or
/// `futures::io::AsyncWrite` (`write:` arm) for `Unpin` types implementing
/// [`io::PollRead`](crate::ext::io::PollRead) or [`io::PollWrite`](crate::ext::io::PollWrite), and
/// tokio's traits of the same names where the *calling* crate's `tokio-io` feature is on
/// (the `cfg` is evaluated where the macro expands). tokio's `poll_shutdown` is
/// `poll_close`.
///
/// ```ignore
/// runtime::ext::impl_async_io!(read: MyReader, MyStream);
/// runtime::ext::impl_async_io!(write: MyWriter, MyStream);
/// ```
// Documented at `runtime::ext::impl_async_io`; `runtime::impl_async_io` is where
// `macro_export` puts it.
#[doc(hidden)]
#[macro_export]
macro_rules! impl_async_io {
    (read: $($ty:ty),+ $(,)?) => {$(
        impl $crate::__futures::io::AsyncRead for $ty {
            fn poll_read(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                buf: &mut [u8],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                $crate::ext::io::PollRead::io_poll_read(self.get_mut(), cx, buf)
            }
        }

        impl $crate::__futures::io::AsyncBufRead for $ty {
            fn poll_fill_buf(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<&[u8]>> {
                $crate::ext::io::PollRead::io_poll_fill_buf(self.get_mut(), cx)
            }

            fn consume(self: ::std::pin::Pin<&mut Self>, amt: usize) {
                $crate::ext::io::PollRead::io_consume(self.get_mut(), amt)
            }
        }

        #[cfg(feature = "tokio-io")]
        impl $crate::__tokio::io::AsyncRead for $ty {
            fn poll_read(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                buf: &mut $crate::__tokio::io::ReadBuf<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                $crate::ext::io::PollRead::io_poll_read_buf(self.get_mut(), cx, buf)
            }
        }

        #[cfg(feature = "tokio-io")]
        impl $crate::__tokio::io::AsyncBufRead for $ty {
            fn poll_fill_buf(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<&[u8]>> {
                $crate::ext::io::PollRead::io_poll_fill_buf(self.get_mut(), cx)
            }

            fn consume(self: ::std::pin::Pin<&mut Self>, amt: usize) {
                $crate::ext::io::PollRead::io_consume(self.get_mut(), amt)
            }
        }
    )+};
    (write: $($ty:ty),+ $(,)?) => {$(
        impl $crate::__futures::io::AsyncWrite for $ty {
            fn poll_write(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                buf: &[u8],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                $crate::ext::io::PollWrite::io_poll_write(self.get_mut(), cx, buf)
            }

            fn poll_write_vectored(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                bufs: &[::std::io::IoSlice<'_>],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                $crate::ext::io::PollWrite::io_poll_write_vectored(self.get_mut(), cx, bufs)
            }

            fn poll_flush(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                $crate::ext::io::PollWrite::io_poll_flush(self.get_mut(), cx)
            }

            fn poll_close(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                $crate::ext::io::PollWrite::io_poll_close(self.get_mut(), cx)
            }
        }

        #[cfg(feature = "tokio-io")]
        impl $crate::__tokio::io::AsyncWrite for $ty {
            fn poll_write(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                buf: &[u8],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                $crate::ext::io::PollWrite::io_poll_write(self.get_mut(), cx, buf)
            }

            fn poll_write_vectored(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                bufs: &[::std::io::IoSlice<'_>],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                $crate::ext::io::PollWrite::io_poll_write_vectored(self.get_mut(), cx, bufs)
            }

            fn is_write_vectored(&self) -> bool {
                $crate::ext::io::PollWrite::io_is_write_vectored(self)
            }

            fn poll_flush(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                $crate::ext::io::PollWrite::io_poll_flush(self.get_mut(), cx)
            }

            fn poll_shutdown(
                self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                $crate::ext::io::PollWrite::io_poll_close(self.get_mut(), cx)
            }
        }
    )+};
}
