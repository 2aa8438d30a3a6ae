//! `IORING_OP_SEND`: send an owned buffer's initialised bytes. See `send(2)`.
//!
//! Always with `MSG_NOSIGNAL`: a send to a reset or shut-down peer fails with `EPIPE`
//! instead of raising `SIGPIPE`. A stream send may be short; callers loop.

use std::io;

use io_uring::opcode;
use runtime::buf::IoBuf;
use runtime::ext::{Completable, Cqe, Op, SharedFd};

use crate::ops::MAX_LEN;

/// The data of a send: the socket and the buffer the kernel reads from.
pub(crate) struct Send<B> {
    _fd: SharedFd,
    buf: B,
}

impl<B: IoBuf> Completable for Send<B> {
    type Output = (io::Result<usize>, B);

    fn complete(self, cqe: Cqe) -> Self::Output {
        (cqe.result.map(|n| n as usize), self.buf)
    }
}

/// Sends `buf`'s initialised bytes on `fd`.
pub(crate) fn send<B: IoBuf>(fd: &SharedFd, buf: B) -> Op<Send<B>> {
    send_flags(fd, buf, libc::MSG_NOSIGNAL)
}

/// Sends all of `buf`'s initialised bytes on stream socket `fd` (`MSG_WAITALL`: the kernel
/// sends the rest of a short send itself, waiting for room in the socket buffer, so the
/// op completes with every byte sent or an error).
pub(crate) fn send_all<B: IoBuf>(fd: &SharedFd, buf: B) -> Op<Send<B>> {
    send_flags(fd, buf, libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
}

fn send_flags<B: IoBuf>(fd: &SharedFd, buf: B, flags: i32) -> Op<Send<B>> {
    let len = buf.bytes_init().min(MAX_LEN as usize) as u32;
    let sqe = runtime::ext::fd_sqe!(fd, |t| opcode::Send::new(t, buf.stable_ptr(), len)
        .flags(flags)
        .build());
    let data = Send {
        _fd: fd.clone(),
        buf,
    };
    // SAFETY: the SQE points only into `buf`'s stable block, which `Send` owns.
    unsafe { Op::new(data, sqe) }
}
