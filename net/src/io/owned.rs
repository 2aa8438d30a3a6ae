//! Owned-buffer reads and writes on a stream socket: `recv(2)` and `send(2)` through the ring.
//!
//! What the streams' `read_owned`, `write_owned`, `write_all_owned`, `writev_owned`,
//! `writev_all_owned` and `write_all_from` submit once `io::ordered` has put them in order.
//! A zero-length buffer is answered with `Ok(0)` without submitting. [`write_all`] and
//! [`writev_all`] loop over short transfers with `Slice`s of the caller's buffer; the buffer
//! comes back with the result whatever happened. Errors are the kernel's, unwrapped (so
//! `raw_os_error()` works), also for a send that stopped short or took nothing: the error
//! is the one a plain `send(2)` gives on the socket then (see [`short_send_error`]).

use std::io;
use std::os::fd::AsRawFd;

use runtime::buf::{IoBuf, IoBufMut};
use runtime::ext::SharedFd;

use crate::ops::{self, MAX_LEN};

/// Reads once into `buf`, up to its total length; `Ok(0)` is end of stream.
pub(crate) async fn read<B: IoBufMut>(fd: &SharedFd, buf: B) -> (io::Result<usize>, B) {
    if buf.bytes_total() == 0 {
        return (Ok(0), buf);
    }
    ops::recv(fd, buf).await
}

/// Writes `buf`'s initialised bytes once; the count may be short.
pub(crate) async fn write<B: IoBuf>(fd: &SharedFd, buf: B) -> (io::Result<usize>, B) {
    if buf.bytes_init() == 0 {
        return (Ok(0), buf);
    }
    ops::send(fd, buf).await
}

/// Writes all of `buf`'s initialised bytes. A send that stops short fails with the error
/// a plain send gives on the socket then (see [`short_send_error`]); `WriteZero` only if
/// the kernel takes no byte and a plain send fails with nothing.
pub(crate) async fn write_all<B: IoBuf>(fd: &SharedFd, mut buf: B) -> (io::Result<()>, B) {
    let end = buf.bytes_init();
    let mut done = 0;
    while done < end {
        let asked = (end - done).min(MAX_LEN as usize);
        let (res, slice) = ops::send_all(fd, buf.slice(done..end)).await;
        buf = slice.into_inner();
        match res {
            Ok(0) => return (Err(short_send_error(fd, 0, end - done)), buf),
            Ok(n) if n < asked => {
                // With MSG_WAITALL a short count means the socket failed: a plain send says
                // why. If it does not fail (nothing to say), the next send goes on.
                done += n;
                if let Some(e) = send_error(fd) {
                    return (Err(e), buf);
                }
            }
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (Err(e), buf),
        }
    }
    (Ok(()), buf)
}

/// Writes the initialised bytes of `bufs` in order, once (one `IORING_OP_SENDMSG`); the
/// count may be short. Empty buffers give `Ok(0)` without submitting.
pub(crate) async fn writev<B: IoBuf>(fd: &SharedFd, bufs: Vec<B>) -> (io::Result<usize>, Vec<B>) {
    if bufs.iter().all(|b| b.bytes_init() == 0) {
        return (Ok(0), bufs);
    }
    ops::send_msg_vectored(fd, bufs).await
}

/// Writes all the initialised bytes of `bufs` in order.
///
/// One vectored send; after a short one (the socket's send buffer full), the rest goes out
/// buffer by buffer with [`write_all`] on a `Slice` of each (so a short first send costs one
/// send per buffer left, not a re-gather). Failures are as [`write_all`]'s: the socket's
/// error, `WriteZero` only if the kernel takes no byte and the socket has no error.
pub(crate) async fn writev_all<B: IoBuf>(fd: &SharedFd, bufs: Vec<B>) -> (io::Result<()>, Vec<B>) {
    let total: usize = bufs.iter().map(IoBuf::bytes_init).sum();
    if total == 0 {
        return (Ok(()), bufs);
    }
    let (res, bufs) = ops::send_msg_vectored(fd, bufs).await;
    let sent = match res {
        Ok(n) if n >= total => return (Ok(()), bufs),
        Ok(0) => return (Err(short_send_error(fd, 0, total)), bufs),
        Ok(n) => n,
        Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
        Err(e) => return (Err(e), bufs),
    };
    let mut out = Vec::with_capacity(bufs.len());
    let mut rest = bufs.into_iter();
    let mut skip = sent;
    while let Some(buf) = rest.next() {
        let len = buf.bytes_init();
        if skip >= len {
            skip -= len;
            out.push(buf);
            continue;
        }
        let (res, slice) = write_all(fd, buf.slice(skip..len)).await;
        skip = 0;
        out.push(slice.into_inner());
        if let Err(e) = res {
            out.extend(rest);
            return (Err(e), out);
        }
    }
    (Ok(()), out)
}

/// Writes all of `data`, copied first into a `Vec` the op owns: one allocation and one copy
/// of `data`, the price of borrowed data (the kernel may read the buffer after a dropped
/// future is gone, so the op cannot borrow the caller's bytes).
pub(crate) async fn write_all_from(fd: &SharedFd, data: &[u8]) -> io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    write_all(fd, data.to_vec()).await.0
}

/// The error for a send that stopped after `sent` of `len` bytes (a short `MSG_WAITALL`
/// send, or one that took nothing): the socket failed, and the error is the one a plain
/// `send(2)` (`MSG_NOSIGNAL | MSG_DONTWAIT`) gives on it now, unwrapped: what std's and
/// tokio's next write report. (Not `SO_ERROR`: a Unix socket whose peer closed with unread
/// data holds `ECONNRESET` there, while every send to it fails with `EPIPE`.) If a plain
/// send does not fail (the socket cannot be reached, or says nothing), a send that took
/// bytes and then stopped lost its peer: `BrokenPipe`; one that took none is `WriteZero`.
pub(super) fn short_send_error(fd: &SharedFd, sent: usize, len: usize) -> io::Error {
    if let Some(e) = send_error(fd) {
        return e;
    }
    if sent == 0 {
        return io::Error::new(
            io::ErrorKind::WriteZero,
            format!("the socket took 0 of {len} bytes, and a send to it does not fail"),
        );
    }
    io::Error::new(
        io::ErrorKind::BrokenPipe,
        format!(
            "the socket took {sent} of {len} bytes, then failed with no error a send reports \
             (the peer is gone)"
        ),
    )
}

/// The error a plain send of no bytes (`MSG_NOSIGNAL | MSG_DONTWAIT`) gives on the socket
/// now, as the kernel gives it; `None` if it succeeds, would block or is interrupted, or if
/// the socket cannot be reached (a direct descriptor whose regular fd cannot be
/// installed). A send of no bytes sends nothing, but the kernel checks the socket first:
/// its pending error (taken), a shut-down write side (`EPIPE`, also a Unix socket whose
/// peer is gone), a connection that is not there.
fn send_error(fd: &SharedFd) -> Option<io::Error> {
    let borrowed = fd.try_as_fd().ok()?;
    let empty: [u8; 0] = [];
    // SAFETY: `borrowed` is an open fd for the call (borrowed from `fd`); a length of 0
    // makes the kernel read none of the (valid, empty) buffer.
    let r = unsafe {
        libc::send(
            borrowed.as_raw_fd(),
            empty.as_ptr().cast(),
            0,
            libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
        )
    };
    if r >= 0 {
        return None;
    }
    let e = io::Error::last_os_error();
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => None,
        _ => Some(e),
    }
}
