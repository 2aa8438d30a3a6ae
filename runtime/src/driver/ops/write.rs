//! `IORING_OP_WRITE`: write an owned buffer's initialised bytes, at an offset or the
//! file's position.

use std::io;
use std::os::fd::RawFd;

use io_uring::{opcode, types};

use crate::buf::IoBuf;
use crate::driver::{Completable, Cqe, Op};

/// The data of a write: the buffer the kernel reads from.
#[derive(Debug)]
pub struct Write<B> {
    buf: B,
}

impl<B: IoBuf> Completable for Write<B> {
    type Output = (io::Result<usize>, B);

    fn complete(self, cqe: Cqe) -> Self::Output {
        (cqe.result.map(|n| n as usize), self.buf)
    }
}

/// Writes `buf`'s initialised bytes to `fd` at `offset`; `u64::MAX` means the file's
/// current position. Gives back the byte count and the buffer.
///
/// This is `write(2)`: on a socket or pipe whose reader is gone it raises `SIGPIPE`, which
/// kills a process that did not ignore it (Rust programs ignore it by default). For sockets
/// use `net`'s streams, whose sends pass `MSG_NOSIGNAL` and give `EPIPE`.
///
/// The op names `fd` by number and keeps nothing alive: keep the fd open until the op's
/// final CQE (if the future is dropped, until that CQE is reaped), or the kernel may act on
/// whatever file reuses the number. Crates on this API hold a [`SharedFd`](crate::fd::SharedFd)
/// in their op data instead, as `net` and `fs` do.
pub fn write<B: IoBuf>(fd: RawFd, buf: B, offset: u64) -> Op<Write<B>> {
    let len = buf.bytes_init().min(u32::MAX as usize) as u32;
    let sqe = opcode::Write::new(types::Fd(fd), buf.stable_ptr(), len)
        .offset(offset)
        .build();
    // SAFETY: the SQE points only into `buf`'s stable block, which `Write` owns.
    unsafe { Op::new(Write { buf }, sqe) }
}
