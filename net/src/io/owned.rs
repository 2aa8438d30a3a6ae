//! Owned-buffer reads and writes on a stream socket: `recv(2)` and `send(2)` through the ring.
//!
//! A zero-length buffer is answered with `Ok(0)` without submitting. `read_exact` and
//! `write_all` loop over short transfers with `Slice`s of the caller's buffer; the buffer
//! comes back with the result whatever happened. Errors are the kernel's, unwrapped.

use std::io;

use runtime::buf::{IoBuf, IoBufMut};

use crate::fd::SharedFd;
use crate::ops;

/// Reads once into `buf`, up to its total length; `Ok(0)` is end of stream.
pub(crate) async fn read<B: IoBufMut>(fd: &SharedFd, buf: B) -> (io::Result<usize>, B) {
    if buf.bytes_total() == 0 {
        return (Ok(0), buf);
    }
    ops::recv(fd, buf).await
}

/// Reads once into `buf`'s spare capacity, appending (8 KiB reserved first when it has
/// none); `Ok(0)` is end of stream.
pub(crate) async fn read_buf(fd: &SharedFd, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
    if buf.capacity() == buf.len() {
        buf.reserve(8 * 1024);
    }
    let (res, spare) = read(fd, runtime::buf::Spare::new(buf)).await;
    (res, spare.into_inner())
}

/// Reads until `buf` is full (its total length); `UnexpectedEof` if the stream ends first.
pub(crate) async fn read_exact<B: IoBufMut>(fd: &SharedFd, mut buf: B) -> (io::Result<()>, B) {
    let total = buf.bytes_total();
    let mut filled = 0;
    while filled < total {
        let (res, slice) = ops::recv(fd, buf.slice(filled..)).await;
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

/// Writes `buf`'s initialised bytes once; the count may be short.
pub(crate) async fn write<B: IoBuf>(fd: &SharedFd, buf: B) -> (io::Result<usize>, B) {
    if buf.bytes_init() == 0 {
        return (Ok(0), buf);
    }
    ops::send(fd, buf).await
}

/// Writes all of `buf`'s initialised bytes; `WriteZero` if the kernel takes none.
pub(crate) async fn write_all<B: IoBuf>(fd: &SharedFd, mut buf: B) -> (io::Result<()>, B) {
    let end = buf.bytes_init();
    let mut done = 0;
    while done < end {
        let (res, slice) = ops::send_all(fd, buf.slice(done..end)).await;
        buf = slice.into_inner();
        match res {
            Ok(0) => {
                let err = io::Error::new(
                    io::ErrorKind::WriteZero,
                    format!("the socket took 0 bytes after {done} of {end}"),
                );
                return (Err(err), buf);
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
/// send per buffer left, not a re-gather). `WriteZero` if the kernel takes none.
pub(crate) async fn writev_all<B: IoBuf>(fd: &SharedFd, bufs: Vec<B>) -> (io::Result<()>, Vec<B>) {
    let total: usize = bufs.iter().map(IoBuf::bytes_init).sum();
    if total == 0 {
        return (Ok(()), bufs);
    }
    let (res, bufs) = ops::send_msg_vectored(fd, bufs).await;
    let sent = match res {
        Ok(n) if n >= total => return (Ok(()), bufs),
        Ok(0) => {
            let err = io::Error::new(
                io::ErrorKind::WriteZero,
                format!("the socket took 0 of {total} bytes"),
            );
            return (Err(err), bufs);
        }
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
