//! `IORING_OP_SPLICE`: move bytes between two fds, one of them a pipe, inside the kernel.

use std::io;

use io_uring::opcode;

use crate::ext::{Completable, Cqe, Op, SharedFd};

/// The data of a splice: the two files (both offsets are in the SQE).
#[derive(Debug)]
pub struct Splice {
    /// Keep both files open until the final CQE.
    _fds: (SharedFd, SharedFd),
}

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
/// The op keeps a clone of both fds until its final CQE.
///
/// ```
/// use std::io::{Read, Write};
/// use runtime::ext::{raw, SharedFd};
///
/// let rt = runtime::Runtime::new()?;
/// let (from_r, mut from_w) = std::io::pipe()?;
/// let (mut to_r, to_w) = std::io::pipe()?;
/// from_w.write_all(b"spliced")?;
/// let (from_r, to_w) = (SharedFd::new(from_r.into()), SharedFd::new(to_w.into()));
/// let n = rt.block_on(raw::splice(&from_r, None, &to_w, None, 64, 0))?;
/// assert_eq!(n, 7);
/// let mut out = [0u8; 7];
/// to_r.read_exact(&mut out)?;
/// assert_eq!(&out, b"spliced");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn splice(
    fd_in: &SharedFd,
    off_in: Option<u64>,
    fd_out: &SharedFd,
    off_out: Option<u64>,
    len: u32,
    flags: u32,
) -> Op<Splice> {
    let (off_in, off_out) = (splice_offset(off_in), splice_offset(off_out));
    let sqe = crate::fd_sqe!(fd_in, |t_in| crate::fd_sqe!(fd_out, |t_out| {
        opcode::Splice::new(t_in, off_in, t_out, off_out, len)
            .flags(flags)
            .build()
    }));
    let data = Splice {
        _fds: (fd_in.clone(), fd_out.clone()),
    };
    // SAFETY: a splice request points at no memory; the data holds both files.
    unsafe { Op::new(data, sqe) }
}

/// A splice offset as the kernel takes it: -1 for none; offsets past `i64::MAX` become
/// `i64::MAX`, which the kernel refuses as `EINVAL`.
fn splice_offset(off: Option<u64>) -> i64 {
    off.map_or(-1, |o| i64::try_from(o).unwrap_or(i64::MAX))
}
