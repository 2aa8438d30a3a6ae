//! `IORING_OP_ACCEPT`, single-shot and multishot: take a connection from a listening socket,
//! as a regular fd or as a direct descriptor.
//!
//! See `accept4(2)` and `io_uring_prep_multishot_accept(3)`. Accepted fds get `SOCK_CLOEXEC`
//! (and stay in blocking mode, which io_uring ops do not care about and `into_std` users
//! expect). Both ops return new fds: one that arrives after its future was dropped is closed
//! by the driver (`Completable::RETURNS_FD`, `MultiOp::new(.., true)`).
//!
//! With `direct`, the connection goes into the core's fixed-file table instead
//! (`IORING_FILE_INDEX_ALLOC`, Linux 5.19): the result is a free slot's index, wrapped in a
//! direct [`SharedFd`]; one that arrives after the op was dropped is closed through the
//! ring (`Completable::RETURNS_FIXED`, `MultiOp::new_direct_fds`). A full table fails the
//! accept with `ENFILE` (the kernel took the connection off the backlog and closes it).

use std::io;
use std::marker::PhantomData;
use std::os::fd::{FromRawFd, OwnedFd};

use io_uring::{opcode, types};
use runtime::ext::{Completable, Cqe, MultiOp, Op, SharedFd};

use crate::sys::sockaddr::{FromSockAddr, SockAddrBuf};

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
    let sqe = runtime::ext::fd_sqe!(listener, |t| opcode::Accept::new(
        t,
        addr.as_mut_ptr(),
        addr.len_mut_ptr()
    )
    .flags(libc::SOCK_CLOEXEC)
    .build());
    let data = Accept {
        _fd: listener.clone(),
        addr,
        _addr: PhantomData,
    };
    // SAFETY: the SQE points only into the boxed `addr`, which `Accept` owns.
    unsafe { Op::new(data, sqe) }
}

/// The data of a single-shot accept into the fixed-file table: as [`Accept`].
pub(crate) struct AcceptDirect<A>(Accept<A>);

impl<A: FromSockAddr> Completable for AcceptDirect<A> {
    type Output = io::Result<(SharedFd, A)>;

    const RETURNS_FIXED: bool = true;

    fn complete(self, cqe: Cqe) -> Self::Output {
        let index = cqe.result?;
        // SAFETY: a successful accept with IORING_FILE_INDEX_ALLOC gives a slot of this
        // core's table (the op completes on the core that submitted it, where this runs)
        // that nothing else owns.
        let fd = unsafe { SharedFd::from_fixed(index) };
        // On an unexpected address the index is closed by the `SharedFd`'s drop.
        let peer = A::from_sockaddr_buf(&self.0.addr)?;
        Ok((fd, peer))
    }
}

/// Accepts one connection on `listener` into the core's fixed-file table (a direct
/// descriptor), with the peer's address.
pub(crate) fn accept_direct<A: FromSockAddr>(listener: &SharedFd) -> Op<AcceptDirect<A>> {
    let mut addr = SockAddrBuf::empty();
    let sqe = runtime::ext::fd_sqe!(listener, |t| opcode::Accept::new(
        t,
        addr.as_mut_ptr(),
        addr.len_mut_ptr()
    )
    // No SOCK_CLOEXEC: the kernel refuses it for a direct descriptor (which has no fd to
    // close on exec; the fd installed for one later is O_CLOEXEC).
    .file_index(Some(types::DestinationSlot::auto_target()))
    .build());
    let data = AcceptDirect(Accept {
        _fd: listener.clone(),
        addr,
        _addr: PhantomData,
    });
    // SAFETY: the SQE points only into the boxed `addr`, which `AcceptDirect` owns.
    unsafe { Op::new(data, sqe) }
}

/// The data of a multishot accept: only the listener (no address: the kernel gives none).
pub(crate) struct AcceptMulti {
    _fd: SharedFd,
}

/// Arms one multishot accept on `listener`: each CQE is a new fd or an error; with
/// `direct`, a new direct descriptor (an index in the core's fixed-file table) or an error.
pub(crate) fn accept_multi(listener: &SharedFd, direct: bool) -> MultiOp<AcceptMulti> {
    // SOCK_CLOEXEC only for fds: the kernel refuses it for direct descriptors (see
    // `accept_direct`).
    let flags = if direct { 0 } else { libc::SOCK_CLOEXEC };
    let sqe = runtime::ext::fd_sqe!(listener, |t| opcode::AcceptMulti::new(t)
        .flags(flags)
        .allocate_file_index(direct)
        .build());
    let data = AcceptMulti {
        _fd: listener.clone(),
    };
    if direct {
        // SAFETY: a multishot ACCEPT points at no memory; it is a multishot opcode, and
        // with IORING_FILE_INDEX_ALLOC its results are direct descriptors.
        unsafe { MultiOp::new_direct_fds(data, sqe) }
    } else {
        // SAFETY: a multishot ACCEPT points at no memory; it is a multishot opcode.
        unsafe { MultiOp::new(data, sqe, true) }
    }
}
