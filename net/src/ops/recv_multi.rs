//! `IORING_OP_RECV` multishot with a provided-buffer ring (Linux 6.0): one SQE, a CQE per
//! chunk received, each in a buffer the kernel picked from a [`BufRing`].
//!
//! See `io_uring_prep_recv_multishot(3)`. The op stops (a CQE without `IORING_CQE_F_MORE`)
//! at end of stream, on an error, and with `ENOBUFS` when the ring is empty; the caller
//! re-arms. Buffers of CQEs nobody sees (after a drop) go back to the ring ([`Release`]).

use io_uring::{opcode, types};
use runtime::buf::BufRing;
use runtime::driver::{Cqe, MultiOp, Release};

use crate::fd::SharedFd;

/// The data of a multishot recv: the socket and the ring the kernel picks from.
pub(crate) struct RecvMulti {
    _fd: SharedFd,
    ring: BufRing,
}

impl Release for RecvMulti {
    fn release(&self, cqe: Cqe) {
        // Taking the buffer and dropping it puts it back in the ring.
        drop(self.ring.take(&cqe));
    }
}

/// Arms a multishot recv on `fd` that fills buffers from `ring`.
pub(crate) fn recv_multi(fd: &SharedFd, ring: &BufRing) -> MultiOp<RecvMulti> {
    let sqe = opcode::RecvMulti::new(types::Fd(fd.raw()), ring.bgid()).build();
    let data = RecvMulti {
        _fd: fd.clone(),
        ring: ring.clone(),
    };
    // SAFETY: the SQE points at no memory of ours (the kernel picks from the registered
    // ring, which the data keeps alive until the final CQE); RECV with the multishot flag is
    // a multishot opcode.
    unsafe { MultiOp::new_releasing(data, sqe) }
}
