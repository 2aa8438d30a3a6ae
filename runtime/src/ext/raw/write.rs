//! `IORING_OP_WRITE`: write an owned buffer's initialised bytes, at an offset or the
//! file's position.

use std::io;

use io_uring::opcode;

use crate::buf::IoBuf;
use crate::ext::{Completable, Cqe, Op, SharedFd};

/// The data of a write: the buffer the kernel reads from, and the file it writes.
#[derive(Debug)]
pub struct Write<B> {
    buf: B,
    /// Keeps the file open until the final CQE.
    _fd: SharedFd,
}

impl<B: IoBuf> Completable for Write<B> {
    type Output = (io::Result<usize>, B);

    fn complete(self, cqe: Cqe) -> Self::Output {
        (cqe.result.map(|n| n as usize), self.buf)
    }
}

/// Writes `buf`'s initialised bytes to `fd` at `offset`; `u64::MAX` means the file's
/// current position. Gives back the byte count and the buffer.
///
/// This is `write(2)`: on a socket or pipe whose reader is gone it raises `SIGPIPE`, which
/// kills a process that did not ignore it (Rust programs ignore it by default). For sockets
/// use `corering-net`'s streams, whose sends pass `MSG_NOSIGNAL` and give `EPIPE`.
///
/// The op keeps a clone of `fd` until its final CQE, so the file stays open while the
/// kernel may write it, even if the future is dropped.
///
/// ```
/// use std::io::Read;
/// use runtime::ext::{raw, SharedFd};
///
/// let rt = runtime::Runtime::new()?;
/// let (mut reader, writer) = std::io::pipe()?;
/// let writer = SharedFd::new(writer.into());
/// let (n, _buf) = rt.block_on(raw::write(&writer, b"hello".to_vec(), u64::MAX));
/// assert_eq!(n?, 5);
/// let mut out = [0u8; 5];
/// reader.read_exact(&mut out)?;
/// assert_eq!(&out, b"hello");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write<B: IoBuf>(fd: &SharedFd, buf: B, offset: u64) -> Op<Write<B>> {
    let len = buf.bytes_init().min(u32::MAX as usize) as u32;
    let ptr = buf.stable_ptr();
    let sqe = crate::fd_sqe!(fd, |t| opcode::Write::new(t, ptr, len)
        .offset(offset)
        .build());
    let data = Write {
        buf,
        _fd: fd.clone(),
    };
    // SAFETY: the SQE points only into `buf`'s stable block, which `Write` owns; the data
    // holds the file.
    unsafe { Op::new(data, sqe) }
}
