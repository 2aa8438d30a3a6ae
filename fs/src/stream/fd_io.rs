//! The file's fd as the runtime's I/O core sees it: the source of the stream's reads and
//! the sink of its writes, at an offset (`IORING_OP_READ`/`WRITE`, see `ops`).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use runtime::buf::{IoBuf, Slice};
use runtime::ext::io::{ReadOp, WriteOp};
use runtime::ext::Op;

use crate::fd::SharedFd;
use crate::ops::{self, ReadAt, WriteAt};

/// A file's fd, for [`ReadAhead`](runtime::ext::io::ReadAhead) and
/// [`WriteBehind`](runtime::ext::io::WriteBehind).
#[derive(Clone)]
pub(super) struct FileFd(pub(super) SharedFd);

/// A read at an offset, giving the whole buffer back (its length: the bytes read).
pub(super) struct FileRead(Op<ReadAt<Slice<Vec<u8>>>>);

impl Future for FileRead {
    type Output = (io::Result<usize>, Vec<u8>);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (res, slice) = ready!(Pin::new(&mut self.get_mut().0).poll(cx));
        Poll::Ready((res, slice.into_inner()))
    }
}

/// A write at an offset, giving the whole buffer back.
pub(super) struct FileWrite(Op<WriteAt<Slice<Vec<u8>>>>);

impl Future for FileWrite {
    type Output = (io::Result<usize>, Vec<u8>);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (res, slice) = ready!(Pin::new(&mut self.get_mut().0).poll(cx));
        Poll::Ready((res, slice.into_inner()))
    }
}

impl ReadOp for FileFd {
    type Op = FileRead;

    fn read(&self, buf: Vec<u8>, len: usize, offset: u64) -> FileRead {
        let len = len.min(buf.bytes_total());
        FileRead(ops::read_at(&self.0, buf.slice(..len), offset))
    }
}

impl WriteOp for FileFd {
    type Op = FileWrite;

    fn write(&self, buf: Vec<u8>, from: usize, offset: u64) -> FileWrite {
        let end = buf.len();
        FileWrite(ops::write_at(
            &self.0,
            buf.slice(from.min(end)..end),
            offset,
        ))
    }

    /// A file write is detached (the driver gives it time at shutdown), never cancelled.
    fn detach(op: FileWrite) {
        op.0.detach(|_| {});
    }
}
