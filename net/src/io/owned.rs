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
        let (res, slice) = ops::send(fd, buf.slice(done..end)).await;
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
