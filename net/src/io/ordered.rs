//! The owned-buffer calls (`read_owned`, `write_all_owned`, ...) ordered with the buffered state that
//! the poll traits and `read_chunk`/`write_chunk` keep, so a socket has one reader and one
//! writer per direction whatever mix of APIs its user calls:
//! - a read first hands out what the buffered path holds (a received chunk, a multishot
//!   receive's queue, the fallback buffer) and, while that path has a receive armed, reads
//!   through it (a copy out of the chunk) instead of racing it with a receive of its own;
//!   only a socket whose buffered path is idle reads straight into the caller's buffer;
//! - a write, and a shutdown of the write direction, first wait for the write-behind
//!   send in flight (and report its error), so no owned write overtakes bytes a poll-trait
//!   write or `write_chunk` already accepted.

use std::future::poll_fn;
use std::io;

use runtime::buf::IoBufMut;
use runtime::ext::SharedFd;

use super::{owned, ReadState, WriteState};

/// Copies as much of `src` as fits into `buf` (from its start, as a receive would) and
/// records the bytes as initialised; returns how many.
fn copy_into<B: IoBufMut>(src: &[u8], buf: &mut B) -> usize {
    let n = src.len().min(buf.bytes_total());
    // SAFETY: `buf`'s memory is valid for `bytes_total()` bytes from `stable_mut_ptr()`
    // (the IoBufMut contract), `n` is within it and within `src`, and the two cannot
    // overlap (`src` is the socket's own buffer); the first `n` bytes are then initialised.
    unsafe {
        std::ptr::copy_nonoverlapping(src.as_ptr(), buf.stable_mut_ptr(), n);
        buf.set_init(n);
    }
    n
}

/// Reads once into `buf` (see the module documentation); `Ok(0)` is end of stream.
pub(crate) async fn read<B: IoBufMut>(
    fd: &SharedFd,
    state: &ReadState,
    mut buf: B,
) -> (io::Result<usize>, B) {
    if buf.bytes_total() == 0 {
        return (Ok(0), buf);
    }
    if state.is_idle() {
        return owned::read(fd, buf).await;
    }
    let res =
        poll_fn(|cx| state.poll_copy_shared(fd, cx, |avail| copy_into(avail, &mut buf))).await;
    (res, buf)
}

/// Reads once into `buf`'s spare capacity, appending (8 KiB reserved first when it has
/// none); `Ok(0)` is end of stream.
pub(crate) async fn read_buf(
    fd: &SharedFd,
    state: &ReadState,
    mut buf: Vec<u8>,
) -> (io::Result<usize>, Vec<u8>) {
    if buf.capacity() == buf.len() {
        buf.reserve(8 * 1024);
    }
    let (res, spare) = read(fd, state, runtime::buf::Spare::new(buf)).await;
    (res, spare.into_inner())
}

/// Reads until `buf` is full (its total length); `UnexpectedEof` if the stream ends first.
pub(crate) async fn read_exact<B: IoBufMut>(
    fd: &SharedFd,
    state: &ReadState,
    mut buf: B,
) -> (io::Result<()>, B) {
    let total = buf.bytes_total();
    let mut filled = 0;
    while filled < total {
        let (res, slice) = read(fd, state, buf.slice(filled..)).await;
        buf = slice.into_inner();
        match res {
            Ok(0) => {
                let err = io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("stream ended after {filled} of {total} bytes"),
                );
                return (Err(err), buf);
            }
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (Err(e), buf),
        }
    }
    (Ok(()), buf)
}

/// Reads once into `bufs` in order: straight into them when the buffered path is idle
/// (`direct`, one vectored receive), else what it holds, spread over them.
pub(crate) async fn readv<B, F>(
    fd: &SharedFd,
    state: &ReadState,
    mut bufs: Vec<B>,
    direct: impl FnOnce(Vec<B>) -> F,
) -> (io::Result<usize>, Vec<B>)
where
    B: IoBufMut,
    F: std::future::Future<Output = (io::Result<usize>, Vec<B>)>,
{
    if bufs.iter().all(|b| b.bytes_total() == 0) {
        return (Ok(0), bufs);
    }
    if state.is_idle() {
        return direct(bufs).await;
    }
    let res = poll_fn(|cx| {
        state.poll_copy_shared(fd, cx, |mut avail| {
            let mut n = 0;
            for b in bufs.iter_mut() {
                if avail.is_empty() {
                    break;
                }
                let k = copy_into(avail, b);
                avail = &avail[k..];
                n += k;
            }
            n
        })
    })
    .await;
    (res, bufs)
}

/// Waits for the write-behind send in flight, if any, and gives its error: what every
/// owned write and a shutdown of the write direction do first.
pub(crate) async fn drain(fd: &SharedFd, state: &WriteState) -> io::Result<()> {
    poll_fn(|cx| state.poll_flush_shared(fd, cx)).await
}

/// `call(buf)` once the write-behind is drained; its error, if any, comes back with `buf`.
pub(crate) async fn after_drain<T, R, F>(
    fd: &SharedFd,
    state: &WriteState,
    buf: T,
    call: impl FnOnce(T) -> F,
) -> (io::Result<R>, T)
where
    F: std::future::Future<Output = (io::Result<R>, T)>,
{
    if let Err(e) = drain(fd, state).await {
        return (Err(e), buf);
    }
    call(buf).await
}
