//! `IORING_OP_READ`: read into an owned buffer, at an offset or the file's position.

use std::io;

use io_uring::opcode;

use crate::buf::IoBufMut;
use crate::ext::{Completable, Cqe, Op, SharedFd};

/// The data of a read: the buffer the kernel writes into, and the file it reads.
#[derive(Debug)]
pub struct Read<B> {
    buf: B,
    /// Keeps the file open until the final CQE.
    _fd: SharedFd,
}

impl<B: IoBufMut> Completable for Read<B> {
    type Output = (io::Result<usize>, B);

    fn complete(self, cqe: Cqe) -> Self::Output {
        let mut buf = self.buf;
        let res = cqe.result.map(|n| {
            // SAFETY: the kernel wrote `n` bytes at the start of the buffer.
            unsafe { buf.set_init(n as usize) };
            n as usize
        });
        (res, buf)
    }
}

/// Reads from `fd` into `buf` (up to its total length) at `offset`; `u64::MAX` means the
/// file's current position (pipes, sockets). Gives back the byte count and the buffer.
///
/// The op keeps a clone of `fd` until its final CQE, so the file stays open while the
/// kernel may read it, even if the future is dropped.
///
/// ```
/// use std::io::Write;
/// use runtime::ext::{raw, SharedFd};
///
/// let rt = runtime::Runtime::new()?;
/// let (reader, mut writer) = std::io::pipe()?;
/// writer.write_all(b"hello")?;
/// let reader = SharedFd::new(reader.into());
/// let (n, buf) = rt.block_on(raw::read(&reader, Vec::with_capacity(16), u64::MAX));
/// assert_eq!(&buf[..n?], b"hello");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn read<B: IoBufMut>(fd: &SharedFd, mut buf: B, offset: u64) -> Op<Read<B>> {
    let len = buf.bytes_total().min(u32::MAX as usize) as u32;
    let ptr = buf.stable_mut_ptr();
    let sqe = crate::fd_sqe!(fd, |t| opcode::Read::new(t, ptr, len)
        .offset(offset)
        .build());
    let data = Read {
        buf,
        _fd: fd.clone(),
    };
    // SAFETY: the SQE points only into `buf`'s stable block, which `Read` owns; the data
    // holds the file.
    unsafe { Op::new(data, sqe) }
}
