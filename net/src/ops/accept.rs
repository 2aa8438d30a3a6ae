//! `IORING_OP_ACCEPT`, single-shot and multishot: take a connection from a listening socket.
//!
//! See `accept4(2)` and `io_uring_prep_multishot_accept(3)`. Accepted fds get `SOCK_CLOEXEC`
//! (and stay in blocking mode, which io_uring ops do not care about and `into_std` users
//! expect). Both ops return new fds: one that arrives after its future was dropped is closed
//! by the driver (`Completable::RETURNS_FD`, `MultiOp::new(.., true)`).

use std::io;
use std::marker::PhantomData;
use std::os::fd::{FromRawFd, OwnedFd};

use io_uring::{opcode, types};
use runtime::driver::{Completable, Cqe, MultiOp, Op};

use crate::addr::{FromSockAddr, SockAddrBuf};
use crate::fd::SharedFd;

/// The data of a single-shot accept: the listener and the room for the peer's address,
/// given back as an `A` (an IP or a Unix address).
pub(crate) struct Accept<A> {
    _fd: SharedFd,
    addr: Box<SockAddrBuf>,
    _addr: PhantomData<fn() -> A>,
}

impl<A: FromSockAddr> Completable for Accept<A> {
    type Output = io::Result<(OwnedFd, A)>;

    const RETURNS_FD: bool = true;

    fn complete(self, cqe: Cqe) -> Self::Output {
        let raw = cqe.result?;
        // SAFETY: a successful accept's result is a new fd that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw as i32) };
        // On an unexpected address the new fd is closed by its drop.
        let peer = A::from_sockaddr_buf(&self.addr)?;
        Ok((fd, peer))
    }
}

/// Accepts one connection on `listener`, with the peer's address.
pub(crate) fn accept<A: FromSockAddr>(listener: &SharedFd) -> Op<Accept<A>> {
    let mut addr = SockAddrBuf::empty();
    let sqe = opcode::Accept::new(
        types::Fd(listener.raw()),
        addr.as_mut_ptr(),
        addr.len_mut_ptr(),
    )
    .flags(libc::SOCK_CLOEXEC)
    .build();
    let data = Accept {
        _fd: listener.clone(),
        addr,
        _addr: PhantomData,
    };
    // SAFETY: the SQE points only into the boxed `addr`, which `Accept` owns.
    unsafe { Op::new(data, sqe) }
}

/// The data of a multishot accept: only the listener (no address: the kernel gives none).
pub(crate) struct AcceptMulti {
    _fd: SharedFd,
}

/// Arms one multishot accept on `listener`: each CQE is a new fd or an error.
pub(crate) fn accept_multi(listener: &SharedFd) -> MultiOp<AcceptMulti> {
    let sqe = opcode::AcceptMulti::new(types::Fd(listener.raw()))
        .flags(libc::SOCK_CLOEXEC)
        .build();
    let data = AcceptMulti {
        _fd: listener.clone(),
    };
    // SAFETY: a multishot ACCEPT points at no memory; it is a multishot opcode.
    unsafe { MultiOp::new(data, sqe, true) }
}
