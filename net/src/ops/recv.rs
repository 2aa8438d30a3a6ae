//! `IORING_OP_RECV`: receive into an owned buffer. See `recv(2)`.
//!
//! The kernel writes up to the buffer's total length from its start; a result of 0 is end of
//! stream (or a zero-length buffer, which callers answer without submitting).

use std::io;

use io_uring::opcode;
use runtime::buf::IoBufMut;
use runtime::ext::{Completable, Cqe, Op, SharedFd};

use crate::ops::MAX_LEN;

/// The data of a recv: the socket and the buffer the kernel writes into.
pub(crate) struct Recv<B> {
    _fd: SharedFd,
    buf: B,
}

impl<B: IoBufMut> Completable for Recv<B> {
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

/// Receives from `fd` into `buf`, up to its total length.
pub(crate) fn recv<B: IoBufMut>(fd: &SharedFd, mut buf: B) -> Op<Recv<B>> {
    let len = buf.bytes_total().min(MAX_LEN as usize) as u32;
    let sqe = runtime::ext::fd_sqe!(fd, |t| opcode::Recv::new(t, buf.stable_mut_ptr(), len)
        .build());
    let data = Recv {
        _fd: fd.clone(),
        buf,
    };
    // SAFETY: the SQE points only into `buf`'s stable block, which `Recv` owns.
    unsafe { Op::new(data, sqe) }
}
