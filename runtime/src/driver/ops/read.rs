//! `IORING_OP_READ`: read into an owned buffer, at an offset or the file's position.

use std::io;
use std::os::fd::RawFd;

use io_uring::{opcode, types};

use crate::buf::IoBufMut;
use crate::driver::{Completable, Cqe, Op};

/// The data of a read: the buffer the kernel writes into.
#[derive(Debug)]
pub struct Read<B> {
    buf: B,
}

impl<B: IoBufMut> Completable for Read<B> {
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

/// Reads from `fd` into `buf` (up to its total length) at `offset`; `u64::MAX` means the
/// file's current position (pipes, sockets). Gives back the byte count and the buffer.
///
/// A bad or closed fd gives `EBADF` as an `io::Error`.
///
/// The op names `fd` by number and keeps nothing alive: keep the fd open until the op's
/// final CQE (if the future is dropped, until that CQE is reaped), or the kernel may act on
/// whatever file reuses the number. Crates on this API hold a [`SharedFd`](crate::fd::SharedFd)
/// in their op data instead, as `net` and `fs` do.
pub fn read<B: IoBufMut>(fd: RawFd, mut buf: B, offset: u64) -> Op<Read<B>> {
    let len = buf.bytes_total().min(u32::MAX as usize) as u32;
    let sqe = opcode::Read::new(types::Fd(fd), buf.stable_mut_ptr(), len)
        .offset(offset)
        .build();
    // SAFETY: the SQE points only into `buf`'s stable block, which `Read` owns.
    unsafe { Op::new(Read { buf }, sqe) }
}
