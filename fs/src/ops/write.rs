//! `IORING_OP_WRITE` at an offset: write an owned buffer's initialised bytes. See
//! `pwrite(2)` (on a file opened with `O_APPEND` the kernel writes at the end instead).

use std::io;

use io_uring::{opcode, types};
use runtime::buf::IoBuf;
use runtime::ext::{Completable, Cqe, Op};

use crate::fd::SharedFd;

/// The data of a write: the file and the buffer the kernel reads from.
pub(crate) struct WriteAt<B> {
    _fd: SharedFd,
    buf: B,
}

impl<B: IoBuf> Completable for WriteAt<B> {
    type Output = (io::Result<usize>, B);

    fn complete(self, cqe: Cqe) -> Self::Output {
        (cqe.result.map(|n| n as usize), self.buf)
    }
}

/// Writes `buf`'s initialised bytes to `fd` at `pos`.
pub(crate) fn write_at<B: IoBuf>(fd: &SharedFd, buf: B, pos: u64) -> Op<WriteAt<B>> {
    let len = buf.bytes_init().min(u32::MAX as usize) as u32;
    let sqe = opcode::Write::new(types::Fd(fd.raw()), buf.stable_ptr(), len)
        .offset(pos)
        .build();
    let data = WriteAt {
        _fd: fd.clone(),
        buf,
    };
    // SAFETY: the SQE points only into `buf`'s stable block, which `WriteAt` owns.
    unsafe { Op::new(data, sqe) }
}
