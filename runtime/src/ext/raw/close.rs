//! `IORING_OP_CLOSE`: close a file descriptor through the ring.

use std::io;
use std::os::fd::{IntoRawFd, OwnedFd};

use io_uring::{opcode, types};

use crate::ext::{Completable, Cqe, Op};

/// The data of a close: none (the fd is in the SQE).
#[derive(Debug)]
pub struct Close;

impl Completable for Close {
    type Output = io::Result<()>;

    fn complete(self, cqe: Cqe) -> io::Result<()> {
        cqe.result.map(|_| ())
    }
}

/// Closes `fd` through the ring. Taking an `OwnedFd` means the fd cannot be closed twice;
/// a future dropped before its first poll still owns the fd and closes it on drop.
///
/// ```
/// let rt = runtime::Runtime::new()?;
/// let (reader, _writer) = std::io::pipe()?;
/// rt.block_on(runtime::ext::raw::close(reader.into()))?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn close(fd: OwnedFd) -> io::Result<()> {
    // The fd leaves its owner only in the poll that also submits the SQE.
    let sqe = opcode::Close::new(types::Fd(fd.into_raw_fd())).build();
    // SAFETY: a CLOSE points at no memory.
    unsafe { Op::new(Close, sqe) }.await
}
