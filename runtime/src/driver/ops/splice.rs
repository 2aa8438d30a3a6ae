//! `IORING_OP_SPLICE`: move bytes between two fds, one of them a pipe, inside the kernel.

use std::io;
use std::os::fd::RawFd;

use io_uring::{opcode, types};

use crate::driver::{Completable, Cqe, Op};

/// The data of a splice: none (both fds and offsets are in the SQE).
#[derive(Debug)]
pub struct Splice;

impl Completable for Splice {
    type Output = io::Result<usize>;

    fn complete(self, cqe: Cqe) -> io::Result<usize> {
        cqe.result.map(|n| n as usize)
    }
}

/// Moves up to `len` bytes from `fd_in` to `fd_out` without copying them through user
/// space, as `splice(2)`; one of the two must be a pipe. Resolves to the bytes moved, which
/// may be fewer than `len` (0 at the end of the input).
///
/// `off_in` / `off_out` are the offsets to read and write a regular file at (its file
/// position is then left alone); `None` uses the fd's position, and must be `None` for the
/// pipe end. `flags` are `splice(2)`'s `SPLICE_F_*` (`SPLICE_F_MOVE` and
/// `SPLICE_F_NONBLOCK` are accepted; the kernel runs a splice that may block on one of its
/// io-wq workers, so the ring never stalls).
///
/// Errors are the kernel's: `EINVAL` when neither fd is a pipe or an offset is given for a
/// pipe, `EBADF` for a bad or closed fd, `ESPIPE` for an offset on a fd that cannot seek.
/// As for [`read`](crate::read), the op names both fds by number: keep them open until its
/// final CQE.
///
/// ```
/// use std::io::{Read, Write};
/// use std::os::fd::AsRawFd;
///
/// let rt = runtime::Runtime::new().unwrap();
/// let (from_r, mut from_w) = std::io::pipe().unwrap();
/// let (mut to_r, to_w) = std::io::pipe().unwrap();
/// from_w.write_all(b"spliced").unwrap();
/// let n = rt
///     .block_on(runtime::splice(from_r.as_raw_fd(), None, to_w.as_raw_fd(), None, 64, 0))
///     .unwrap();
/// assert_eq!(n, 7);
/// let mut out = [0u8; 7];
/// to_r.read_exact(&mut out).unwrap();
/// assert_eq!(&out, b"spliced");
/// ```
pub fn splice(
    fd_in: RawFd,
    off_in: Option<u64>,
    fd_out: RawFd,
    off_out: Option<u64>,
    len: u32,
    flags: u32,
) -> Op<Splice> {
    // The kernel's "no offset" is -1; offsets past i64::MAX are refused as EINVAL by it.
    let off = |o: Option<u64>| o.map_or(-1, |o| i64::try_from(o).unwrap_or(i64::MAX));
    let sqe = opcode::Splice::new(
        types::Fd(fd_in),
        off(off_in),
        types::Fd(fd_out),
        off(off_out),
        len,
    )
    .flags(flags)
    .build();
    // SAFETY: a splice request points at no memory.
    unsafe { Op::new(Splice, sqe) }
}
