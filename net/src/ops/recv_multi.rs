//! `IORING_OP_RECV` multishot with a provided-buffer ring (Linux 6.0): one SQE, a CQE per
//! chunk received, each in a buffer the kernel picked from a [`BufRing`].
//!
//! See `io_uring_prep_recv_multishot(3)`. The op stops (a CQE without `IORING_CQE_F_MORE`)
//! at end of stream, on an error, and with `ENOBUFS` when the ring is empty; the caller
//! re-arms. Buffers of CQEs nobody sees (after a drop) go back to the ring ([`Release`]).

use io_uring::{opcode, squeue};
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
        // Taking the buffers (one, or a bundle's) and dropping them puts them back.
        let mut bufs = std::collections::VecDeque::new();
        self.ring.take_bundle(&cqe, &mut bufs);
    }
}

/// `IORING_RECVSEND_BUNDLE` in the SQE's `ioprio` (Linux 6.10).
const IORING_RECVSEND_BUNDLE: u16 = 1 << 4;

/// Arms a multishot recv on `fd` that fills buffers from `ring` and ends (a CQE without
/// `F_MORE`, after the data) once `limit` bytes were received in all (`sqe->optlen`, Linux
/// 6.17; 0: no limit; an older kernel refuses a limit with `EINVAL`). With `bundle`, one CQE
/// may cover several buffers (`IORING_RECVSEND_BUNDLE`; take them with
/// [`BufRing::take_bundle`]).
pub(crate) fn recv_multi_limited(
    fd: &SharedFd,
    ring: &BufRing,
    limit: u32,
    bundle: bool,
) -> MultiOp<RecvMulti> {
    let sqe = runtime::fd_sqe!(fd, |t| opcode::RecvMulti::new(t, ring.bgid()).build());
    let sqe = if limit == 0 && !bundle {
        sqe
    } else {
        patch(sqe, |raw| {
            if limit != 0 {
                raw[44..48].copy_from_slice(&limit.to_ne_bytes());
            }
            if bundle {
                let ioprio = u16::from_ne_bytes([raw[2], raw[3]]) | IORING_RECVSEND_BUNDLE;
                raw[2..4].copy_from_slice(&ioprio.to_ne_bytes());
            }
        })
    };
    let data = RecvMulti {
        _fd: fd.clone(),
        ring: ring.clone(),
    };
    // SAFETY: the SQE points at no memory of ours (the kernel picks from the registered
    // ring, which the data keeps alive until the final CQE); RECV with the multishot flag is
    // a multishot opcode.
    unsafe { MultiOp::new_releasing(data, sqe) }
}

/// `sqe` with `f` applied to its 64 raw bytes, for the fields the io-uring crate's builder
/// lacks: `ioprio` (bytes 2..4) and `optlen` (bytes 44..48, the union it shares with
/// `file_index` and `splice_fd_in`).
fn patch(sqe: squeue::Entry, f: impl FnOnce(&mut [u8; 64])) -> squeue::Entry {
    const _: () = assert!(std::mem::size_of::<squeue::Entry>() == 64);
    // SAFETY: `Entry` is `repr(C)` around `io_uring_sqe`, 64 bytes of plain integers and
    // unions of them (size checked above): every bit pattern is a valid value, and it has
    // no padding the kernel's ABI does not define.
    let mut raw: [u8; 64] = unsafe { std::mem::transmute(sqe) };
    f(&mut raw);
    // SAFETY: as above: any bytes make a valid `Entry`; the kernel checks the fields.
    unsafe { std::mem::transmute::<[u8; 64], squeue::Entry>(raw) }
}
