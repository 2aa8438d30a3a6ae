//! `IORING_OP_RECV` multishot with a provided-buffer ring (Linux 6.0): one SQE, a CQE per
//! chunk received, each in a buffer the kernel picked from a [`BufRing`].
//!
//! See `io_uring_prep_recv_multishot(3)`. The op stops (a CQE without `IORING_CQE_F_MORE`)
//! at end of stream, on an error, and with `ENOBUFS` when the ring is empty; the caller
//! re-arms. Buffers of CQEs nobody sees (after a drop) go back to the ring ([`Release`]).

use io_uring::opcode;
use runtime::buf::BufRing;
use runtime::ext::{sqe_with_ioprio_bits, sqe_with_optlen, Cqe, MultiOp, Release, SharedFd};

/// The data of a multishot recv: the socket and the ring the kernel picks from.
pub(crate) struct RecvMulti {
    _fd: SharedFd,
    ring: BufRing,
}

impl Release for RecvMulti {
    fn release(&self, mut cqe: Cqe) {
        // Taking the buffers (one, or a bundle's) and dropping them puts them back.
        self.ring.take_each(&mut cqe, drop);
    }
}

/// `IORING_RECVSEND_BUNDLE` in the SQE's `ioprio` (Linux 6.10).
const IORING_RECVSEND_BUNDLE: u16 = 1 << 4;

/// Arms a multishot recv on `fd` that fills buffers from `ring` and ends (a CQE without
/// `F_MORE`, after the data) once `limit` bytes were received in all (`sqe->optlen`, Linux
/// 6.17; 0: no limit; an older kernel refuses a limit with `EINVAL`). With `bundle`, one CQE
/// may cover several buffers (`IORING_RECVSEND_BUNDLE`; take them with
/// [`BufRing::take_bundle`]). Without `multishot` (a kernel before 6.0), one receive into
/// one buffer of `ring` (`IOSQE_BUFFER_SELECT`, Linux 5.7), ended by its one CQE: the
/// caller re-arms it as it re-arms a stopped multishot receive.
pub(crate) fn recv_multi_limited(
    fd: &SharedFd,
    ring: &BufRing,
    limit: u32,
    bundle: bool,
    multishot: bool,
) -> MultiOp<RecvMulti> {
    let sqe = if multishot {
        runtime::ext::fd_sqe!(fd, |t| opcode::RecvMulti::new(t, ring.bgid()).build())
    } else {
        runtime::ext::fd_sqe!(fd, |t| opcode::Recv::new(t, std::ptr::null_mut(), 0)
            .buf_group(ring.bgid())
            .build()
            .flags(io_uring::squeue::Flags::BUFFER_SELECT))
    };
    let sqe = if limit == 0 {
        sqe
    } else {
        sqe_with_optlen(sqe, limit)
    };
    let sqe = if bundle {
        sqe_with_ioprio_bits(sqe, IORING_RECVSEND_BUNDLE)
    } else {
        sqe
    };
    let data = RecvMulti {
        _fd: fd.clone(),
        ring: ring.clone(),
    };
    // SAFETY: the SQE points at no memory of ours (the kernel picks from the registered
    // ring, which the data keeps alive until the final CQE); RECV with the multishot flag is
    // a multishot opcode, and a single-shot one posts one CQE, without `F_MORE`: the end of
    // the op, as for a multishot op that stopped.
    unsafe { MultiOp::new_releasing(data, sqe) }.with_buf_ring(ring)
}
