//! `IORING_OP_SENDMSG`: send one datagram to an address. See `sendmsg(2)`.
//!
//! Used for `send_to` on datagram sockets (UDP, Unix). The op owns the buffer and the boxed
//! header with its `iovec` and destination (see `msghdr`'s invariant); the kernel reads all
//! three until the CQE. Always with `MSG_NOSIGNAL`, as every send in this crate. A datagram
//! is sent whole or not at all: the count is the buffer's initialised length.

use std::io;

use io_uring::{opcode, types};
use runtime::buf::IoBuf;
use runtime::driver::{Completable, Cqe, Op};

use crate::addr::SockAddrBuf;
use crate::fd::SharedFd;
use crate::ops::msghdr::MsgHdr;

/// The data of a sendmsg: the socket, the buffer and the header naming the destination.
pub(crate) struct SendMsg<B> {
    _fd: SharedFd,
    buf: B,
    _msg: Box<MsgHdr>,
}

impl<B: IoBuf> Completable for SendMsg<B> {
    type Output = (io::Result<usize>, B);

    fn complete(self, cqe: Cqe) -> Self::Output {
        (cqe.result.map(|n| n as usize), self.buf)
    }
}

/// Sends `buf`'s initialised bytes on `fd` as one datagram to `addr`.
pub(crate) fn send_msg<B: IoBuf>(fd: &SharedFd, buf: B, addr: SockAddrBuf) -> Op<SendMsg<B>> {
    // The kernel only reads through the iovec of a send; the pointer is `*mut` by type only.
    let msg = MsgHdr::new(buf.stable_ptr().cast_mut(), buf.bytes_init(), addr);
    let sqe = opcode::SendMsg::new(types::Fd(fd.raw()), msg.as_ptr())
        .flags(libc::MSG_NOSIGNAL as u32)
        .build();
    let data = SendMsg {
        _fd: fd.clone(),
        buf,
        _msg: msg,
    };
    // SAFETY: the SQE points at the boxed header, which points only into itself and into
    // `buf`'s stable block; `SendMsg` owns both.
    unsafe { Op::new(data, sqe) }
}
