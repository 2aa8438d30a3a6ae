//! `IORING_OP_SHUTDOWN`: shut down part of a full-duplex connection. See `shutdown(2)`.

use std::io;
use std::net::Shutdown as How;

use io_uring::opcode;
use runtime::ext::{Completable, Cqe, Op, SharedFd};

/// The data of a shutdown: the socket.
pub(crate) struct Shutdown {
    _fd: SharedFd,
}

impl Completable for Shutdown {
    type Output = io::Result<()>;

    fn complete(self, cqe: Cqe) -> io::Result<()> {
        cqe.result.map(|_| ())
    }
}

/// Shuts down the read half, the write half (the peer reads end of stream) or both of `fd`.
pub(crate) fn shutdown(fd: &SharedFd, how: How) -> Op<Shutdown> {
    let how = match how {
        How::Read => libc::SHUT_RD,
        How::Write => libc::SHUT_WR,
        How::Both => libc::SHUT_RDWR,
    };
    let sqe = runtime::ext::fd_sqe!(fd, |t| opcode::Shutdown::new(t, how).build());
    // SAFETY: a SHUTDOWN points at no memory.
    unsafe { Op::new(Shutdown { _fd: fd.clone() }, sqe) }
}
