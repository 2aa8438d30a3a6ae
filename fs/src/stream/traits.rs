//! `File`'s stream trait impls: futures-io's, and tokio's with the `tokio-io` feature. Each
//! forwards to the file's [`Stream`](super::Stream) on the same cursor and buffers.

use std::io::{self, SeekFrom};
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::io::{AsyncBufRead, AsyncRead, AsyncSeek, AsyncWrite};

use crate::file::File;

impl AsyncRead for File {
    /// Reads at the cursor no more than `buf` holds (and at most 64 KiB).
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let (fd, stream) = self.get_mut().stream_parts();
        stream.poll_read_with(fd, cx, buf.len(), |got| {
            buf[..got.len()].copy_from_slice(got)
        })
    }
}

impl AsyncBufRead for File {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let (fd, stream) = self.get_mut().stream_parts();
        stream.poll_fill_buf(fd, cx)
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        self.get_mut().stream_parts().1.consume(amt);
    }
}

impl AsyncWrite for File {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let (fd, stream) = self.get_mut().stream_parts();
        stream.poll_write_vectored(fd, cx, &[io::IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let (fd, stream) = self.get_mut().stream_parts();
        stream.poll_write_vectored(fd, cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let (fd, stream) = self.get_mut().stream_parts();
        stream.poll_flush(fd, cx)
    }

    /// Flushes; the fd stays open until the file is dropped or [`File::close`]d.
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let (fd, stream) = self.get_mut().stream_parts();
        stream.poll_flush(fd, cx)
    }
}

impl AsyncSeek for File {
    fn poll_seek(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        pos: SeekFrom,
    ) -> Poll<io::Result<u64>> {
        let (fd, stream) = self.get_mut().stream_parts();
        stream.poll_seek(fd, cx, pos)
    }
}

#[cfg(feature = "tokio-io")]
mod tokio_impls {
    use std::task::ready;

    use super::*;

    impl tokio::io::AsyncRead for File {
        /// Reads at the cursor no more than `out` has room for (and at most 64 KiB).
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            out: &mut tokio::io::ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let (fd, stream) = self.get_mut().stream_parts();
            let max = out.remaining();
            ready!(stream.poll_read_with(fd, cx, max, |got| out.put_slice(got)))?;
            Poll::Ready(Ok(()))
        }
    }

    impl tokio::io::AsyncBufRead for File {
        fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
            let (fd, stream) = self.get_mut().stream_parts();
            stream.poll_fill_buf(fd, cx)
        }

        fn consume(self: Pin<&mut Self>, amt: usize) {
            self.get_mut().stream_parts().1.consume(amt);
        }
    }

    impl tokio::io::AsyncWrite for File {
        fn poll_write(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let (fd, stream) = self.get_mut().stream_parts();
            stream.poll_write_vectored(fd, cx, &[io::IoSlice::new(buf)])
        }

        fn poll_write_vectored(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[io::IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            let (fd, stream) = self.get_mut().stream_parts();
            stream.poll_write_vectored(fd, cx, bufs)
        }

        fn is_write_vectored(&self) -> bool {
            true
        }

        fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            let (fd, stream) = self.get_mut().stream_parts();
            stream.poll_flush(fd, cx)
        }

        /// Flushes; the fd stays open until the file is dropped or [`File::close`]d.
        fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            let (fd, stream) = self.get_mut().stream_parts();
            stream.poll_flush(fd, cx)
        }
    }

    impl tokio::io::AsyncSeek for File {
        /// Records the seek; [`poll_complete`](tokio::io::AsyncSeek::poll_complete) does it.
        /// A second `start_seek` before the first completes is an error (as tokio's `File`).
        fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
            let stream = self.get_mut().stream_parts().1;
            if stream.pending_seek.is_some() {
                return Err(io::Error::other(
                    "a seek is already in progress: call poll_complete first",
                ));
            }
            stream.pending_seek = Some(position);
            Ok(())
        }

        fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
            let (fd, stream) = self.get_mut().stream_parts();
            match stream.pending_seek {
                Some(target) => {
                    let res = ready!(stream.poll_seek(fd, cx, target));
                    stream.pending_seek = None;
                    Poll::Ready(res)
                }
                None => {
                    ready!(stream.poll_drain(fd, cx))?;
                    Poll::Ready(Ok(stream.pos))
                }
            }
        }
    }
}
