//! `IORING_OP_RECVMSG`: receive one datagram and its sender's address. See `recvmsg(2)`.
//!
//! Used for `recv_from` on datagram sockets (UDP, Unix). The op owns the buffer and the
//! boxed header with its `iovec` and room for the address (see `msghdr`'s invariant); the
//! kernel writes the datagram, the address, `msg_namelen` and `msg_flags` until the CQE.
//!
//! A datagram longer than the buffer is cut to fit, as `recvfrom(2)` does: the rest is
//! discarded and the count is the bytes written (no `MSG_TRUNC` in the op's flags, so the
//! kernel does not report the datagram's real length; the `MSG_TRUNC` it sets in
//! `msg_flags` is not passed on).

use std::io;
use std::marker::PhantomData;

use io_uring::opcode;
use runtime::buf::IoBufMut;
use runtime::ext::{Completable, Cqe, Op, SharedFd};

use crate::ops::msghdr::MsgHdr;
use crate::sys::sockaddr::{FromSockAddr, SockAddrBuf};

/// The data of a recvmsg: the socket, the buffer and the header with room for the sender's
/// address, given back as an `A` (an IP or a Unix address).
pub(crate) struct RecvMsg<B, A> {
    _fd: SharedFd,
    buf: B,
    msg: Box<MsgHdr>,
    _addr: PhantomData<fn() -> A>,
}

impl<B: IoBufMut, A: FromSockAddr> Completable for RecvMsg<B, A> {
    type Output = (io::Result<(usize, A)>, B);

    fn complete(self, cqe: Cqe) -> Self::Output {
        let mut buf = self.buf;
        let n = match cqe.result {
            Ok(n) => n as usize,
            Err(e) => return (Err(e), buf),
        };
        // SAFETY: the kernel wrote `n` bytes at the start of the buffer.
        unsafe { buf.set_init(n) };
        let addr = A::from_sockaddr_buf(&self.msg.take_addr());
        (addr.map(|a| (n, a)), buf)
    }
}

/// Receives one datagram on `fd` into `buf` (up to its total length) with its sender.
pub(crate) fn recv_msg<B: IoBufMut, A: FromSockAddr>(
    fd: &SharedFd,
    mut buf: B,
) -> Op<RecvMsg<B, A>> {
    let mut msg = MsgHdr::new(
        buf.stable_mut_ptr(),
        buf.bytes_total(),
        *SockAddrBuf::empty(),
    );
    let sqe = runtime::ext::fd_sqe!(fd, |t| opcode::RecvMsg::new(t, msg.as_mut_ptr()).build());
    let data = RecvMsg {
        _fd: fd.clone(),
        buf,
        msg,
        _addr: PhantomData,
    };
    // SAFETY: the SQE points at the boxed header, which points only into itself and into
    // `buf`'s stable block; `RecvMsg` owns both.
    unsafe { Op::new(data, sqe) }
}
