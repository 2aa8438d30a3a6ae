//! `IORING_OP_CONNECT`: connect a socket to an address. See `connect(2)`.
//!
//! The kernel reads the address when it starts the op, and again if it has to retry, so the
//! boxed address belongs to the op until its CQE. Any family: IP, or a Unix path.

use std::io;
use std::net::SocketAddr;

use io_uring::opcode;
use runtime::ext::{Completable, Cqe, Op, SharedFd};

use crate::sys::sockaddr::SockAddrBuf;

/// The data of a connect: the socket and the address.
pub(crate) struct Connect {
    _fd: SharedFd,
    _addr: Box<SockAddrBuf>,
}

impl Completable for Connect {
    type Output = io::Result<()>;

    fn complete(self, cqe: Cqe) -> io::Result<()> {
        cqe.result.map(|_| ())
    }
}

/// Connects `fd` to the IP address `addr`.
pub(crate) fn connect(fd: &SharedFd, addr: SocketAddr) -> Op<Connect> {
    connect_to(fd, SockAddrBuf::new(addr))
}

/// Connects `fd` to `addr`, of any family.
pub(crate) fn connect_to(fd: &SharedFd, addr: Box<SockAddrBuf>) -> Op<Connect> {
    let sqe = runtime::ext::fd_sqe!(fd, |t| opcode::Connect::new(t, addr.as_ptr(), addr.len())
        .build());
    let data = Connect {
        _fd: fd.clone(),
        _addr: addr,
    };
    // SAFETY: the SQE points only into the boxed address, which `Connect` owns.
    unsafe { Op::new(data, sqe) }
}
