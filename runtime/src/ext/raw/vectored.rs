//! `IORING_OP_READV` and `IORING_OP_WRITEV`: scatter/gather over several owned buffers, at
//! an offset (`u64::MAX`: the file's position, as for sockets). See `preadv(2)`, `pwritev(2)`.
//!
//! The op's data owns the buffers and a boxed `iovec` array pointing into them; the SQE
//! points at the array. Both stay put when the data moves (heap blocks).

use std::io;

use io_uring::opcode;

use crate::buf::{IoBuf, IoBufMut};
use crate::ext::{Completable, Cqe, Op, SharedFd};

/// The data of a vectored read: the fd, the buffers, their iovecs.
pub struct ReadvAt<B> {
    _fd: SharedFd,
    bufs: Vec<B>,
    _iovecs: Box<[libc::iovec]>,
}

impl<B: IoBufMut> Completable for ReadvAt<B> {
    type Output = (io::Result<usize>, Vec<B>);

    fn complete(self, cqe: Cqe) -> Self::Output {
        let mut bufs = self.bufs;
        let res = cqe.result.map(|n| {
            // The kernel filled the buffers in order.
            let mut left = n as usize;
            for b in bufs.iter_mut() {
                let take = left.min(b.bytes_total());
                // SAFETY: the kernel wrote `take` bytes at the start of this buffer.
                unsafe { b.set_init(take) };
                left -= take;
            }
            n as usize
        });
        (res, bufs)
    }
}

/// The data of a vectored write, whose buffers need only be readable.
pub struct WritevAt<B> {
    _fd: SharedFd,
    bufs: Vec<B>,
    _iovecs: Box<[libc::iovec]>,
}

impl<B: IoBuf> Completable for WritevAt<B> {
    type Output = (io::Result<usize>, Vec<B>);

    fn complete(self, cqe: Cqe) -> Self::Output {
        (cqe.result.map(|n| n as usize), self.bufs)
    }
}

/// Reads from `fd` at `pos` into `bufs` in order (each up to its total length).
pub fn readv_at<B: IoBufMut>(fd: &SharedFd, mut bufs: Vec<B>, pos: u64) -> Op<ReadvAt<B>> {
    let iovecs: Box<[libc::iovec]> = bufs
        .iter_mut()
        .map(|b| libc::iovec {
            iov_base: b.stable_mut_ptr().cast(),
            iov_len: b.bytes_total(),
        })
        .collect();
    let sqe = crate::fd_sqe!(fd, |t| opcode::Readv::new(
        t,
        iovecs.as_ptr(),
        iovecs.len() as u32
    )
    .offset(pos)
    .build());
    let data = ReadvAt {
        _fd: fd.clone(),
        bufs,
        _iovecs: iovecs,
    };
    // SAFETY: the SQE points at the boxed iovecs, which point into the buffers' stable
    // blocks; the data owns all of them.
    unsafe { Op::new(data, sqe) }
}

/// Writes the initialised bytes of `bufs` to `fd` at `pos`, in order.
///
/// As `writev(2)`, a write to a socket or pipe whose reader is gone raises `SIGPIPE` (see
/// [`write`](super::write)); `corering-net`'s streams send with `MSG_NOSIGNAL` instead.
pub fn writev_at<B: IoBuf>(fd: &SharedFd, bufs: Vec<B>, pos: u64) -> Op<WritevAt<B>> {
    let iovecs: Box<[libc::iovec]> = bufs
        .iter()
        .map(|b| libc::iovec {
            iov_base: b.stable_ptr() as *mut libc::c_void,
            iov_len: b.bytes_init(),
        })
        .collect();
    let sqe = crate::fd_sqe!(fd, |t| opcode::Writev::new(
        t,
        iovecs.as_ptr(),
        iovecs.len() as u32
    )
    .offset(pos)
    .build());
    let data = WritevAt {
        _fd: fd.clone(),
        bufs,
        _iovecs: iovecs,
    };
    // SAFETY: as for `readv_at`; the kernel only reads.
    unsafe { Op::new(data, sqe) }
}
