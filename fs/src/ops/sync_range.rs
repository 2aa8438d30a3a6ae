//! `IORING_OP_SYNC_FILE_RANGE`: start or wait for write-out of a byte range. See
//! `sync_file_range(2)`; the SQE's length field is 32 bits, so callers split larger ranges.

use std::io;

use io_uring::{opcode, types};
use runtime::ext::{Completable, Cqe, Op};

use crate::fd::SharedFd;

/// The data of a sync_file_range: only the file.
pub(crate) struct SyncRange {
    _fd: SharedFd,
}

impl Completable for SyncRange {
    type Output = io::Result<()>;

    fn complete(self, cqe: Cqe) -> io::Result<()> {
        cqe.result.map(|_| ())
    }
}

/// Syncs `len` bytes of `fd` from `offset` (0 means "to the end of the file") with the
/// `SYNC_FILE_RANGE_*` `flags`.
pub(crate) fn sync_range(fd: &SharedFd, offset: u64, len: u32, flags: u32) -> Op<SyncRange> {
    let sqe = opcode::SyncFileRange::new(types::Fd(fd.raw()), len)
        .offset(offset)
        .flags(flags)
        .build();
    // SAFETY: a SYNC_FILE_RANGE points at no memory.
    unsafe { Op::new(SyncRange { _fd: fd.clone() }, sqe) }
}
