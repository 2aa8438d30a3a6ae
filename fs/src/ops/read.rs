//! `IORING_OP_READ` at an offset: read into an owned buffer. See `pread(2)`.

use std::io;

use io_uring::{opcode, types};
use runtime::buf::IoBufMut;
use runtime::ext::{Completable, Cqe, Op};

use crate::fd::SharedFd;

/// The data of a read: the file and the buffer the kernel writes into.
pub(crate) struct ReadAt<B> {
    _fd: SharedFd,
    buf: B,
}

impl<B: IoBufMut> Completable for ReadAt<B> {
    type Output = (io::Result<usize>, B);

    fn complete(self, cqe: Cqe) -> Self::Output {
        let mut buf = self.buf;
        let res = cqe.result.map(|n| {
            // SAFETY: the kernel wrote `n` bytes at the start of the buffer.
            unsafe { buf.set_init(n as usize) };
            n as usize
        });
        (res, buf)
    }
}

/// Reads from `fd` at `pos` into `buf`, up to its total length.
pub(crate) fn read_at<B: IoBufMut>(fd: &SharedFd, mut buf: B, pos: u64) -> Op<ReadAt<B>> {
    let len = buf.bytes_total().min(u32::MAX as usize) as u32;
    let sqe = opcode::Read::new(types::Fd(fd.raw()), buf.stable_mut_ptr(), len)
        .offset(pos)
        .build();
    let data = ReadAt {
        _fd: fd.clone(),
        buf,
    };
    // SAFETY: the SQE points only into `buf`'s stable block, which `ReadAt` owns.
    unsafe { Op::new(data, sqe) }
}
