//! `IORING_OP_SENDMSG`: send one datagram to an address, or several buffers on a connected
//! stream. See `sendmsg(2)`.
//!
//! Used for `send_to` on datagram sockets (UDP, Unix). The op owns the buffer and the boxed
//! header with its `iovec` and destination (see `msghdr`'s invariant); the kernel reads all
//! three until the CQE. Always with `MSG_NOSIGNAL`, as every send in this crate. A datagram
//! is sent whole or not at all: the count is the buffer's initialised length.
//!
//! Vectored stream writes (`writev_owned`, `writev_all_owned`) use it too, not `IORING_OP_WRITEV`: a
//! `write(2)`-style op on a socket whose peer is gone raises `SIGPIPE`, which kills a
//! process that has not ignored it; `sendmsg` with `MSG_NOSIGNAL` gives `EPIPE` instead.

use std::io;
use std::mem;

use io_uring::opcode;
use runtime::buf::IoBuf;
use runtime::ext::{Completable, Cqe, Op, SharedFd};

use crate::ops::msghdr::MsgHdr;
use crate::sys::sockaddr::SockAddrBuf;

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
    let sqe = runtime::ext::fd_sqe!(fd, |t| opcode::SendMsg::new(t, msg.as_ptr())
        .flags(libc::MSG_NOSIGNAL as u32)
        .build());
    let data = SendMsg {
        _fd: fd.clone(),
        buf,
        _msg: msg,
    };
    // SAFETY: the SQE points at the boxed header, which points only into itself and into
    // `buf`'s stable block; `SendMsg` owns both.
    unsafe { Op::new(data, sqe) }
}

/// The data of a vectored send on a connected socket: the socket, the buffers, their iovecs
/// and the header pointing at the iovecs (all heap blocks: they stay put when this moves).
pub(crate) struct SendMsgVectored<B> {
    _fd: SharedFd,
    bufs: Vec<B>,
    _iovecs: Box<[libc::iovec]>,
    _hdr: Box<libc::msghdr>,
}

impl<B: IoBuf> Completable for SendMsgVectored<B> {
    type Output = (io::Result<usize>, Vec<B>);

    fn complete(self, cqe: Cqe) -> Self::Output {
        (cqe.result.map(|n| n as usize), self.bufs)
    }
}

/// Sends the initialised bytes of `bufs` on the connected socket `fd`, in order (the count
/// may be short).
pub(crate) fn send_msg_vectored<B: IoBuf>(fd: &SharedFd, bufs: Vec<B>) -> Op<SendMsgVectored<B>> {
    // The kernel only reads through the iovecs of a send; the pointers are `*mut` by type.
    let iovecs: Box<[libc::iovec]> = bufs
        .iter()
        .map(|b| libc::iovec {
            iov_base: b.stable_ptr().cast_mut().cast(),
            iov_len: b.bytes_init(),
        })
        .collect();
    // SAFETY: msghdr is plain old data (pointers, lengths, flags); all zeroes is a valid
    // value (no name, no iovecs, no control data).
    let mut hdr: Box<libc::msghdr> = Box::new(unsafe { mem::zeroed() });
    hdr.msg_iov = iovecs.as_ptr().cast_mut();
    hdr.msg_iovlen = iovecs.len();
    let sqe = runtime::ext::fd_sqe!(fd, |t| opcode::SendMsg::new(t, &*hdr)
        .flags(libc::MSG_NOSIGNAL as u32)
        .build());
    let data = SendMsgVectored {
        _fd: fd.clone(),
        bufs,
        _iovecs: iovecs,
        _hdr: hdr,
    };
    // SAFETY: the SQE points at the boxed header, which points at the boxed iovecs, which
    // point into the buffers' stable blocks; `SendMsgVectored` owns all of them.
    unsafe { Op::new(data, sqe) }
}
