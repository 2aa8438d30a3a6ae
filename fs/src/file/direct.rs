//! What direct I/O (`O_DIRECT`) on a file needs: the alignments the kernel reports, checked
//! before any op is submitted.

use std::io;

use crate::fd::SharedFd;
use crate::ops;

/// The alignments direct I/O on a file needs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DirectAlign {
    /// Of buffer addresses.
    mem: u64,
    /// Of file offsets and lengths.
    offset: u64,
}

/// What is assumed where the kernel does not report direct I/O alignment: the smallest
/// logical block size.
const FALLBACK_DIO_ALIGN: u64 = 512;

impl DirectAlign {
    /// Asks the kernel (`STATX_DIOALIGN`) what direct I/O on `fd` needs.
    pub(crate) async fn probe(fd: &SharedFd) -> DirectAlign {
        match ops::statx_fd(fd, libc::STATX_DIOALIGN).await {
            Ok(meta) => match meta.dio_align() {
                Some((mem, offset)) => DirectAlign {
                    mem: u64::from(mem),
                    offset: u64::from(offset),
                },
                None => DirectAlign::fallback(),
            },
            Err(_) => DirectAlign::fallback(),
        }
    }

    fn fallback() -> DirectAlign {
        DirectAlign {
            mem: FALLBACK_DIO_ALIGN,
            offset: FALLBACK_DIO_ALIGN,
        }
    }

    /// `InvalidInput` unless `addr`, `len` and `pos` meet the alignment.
    pub(super) fn check(&self, addr: usize, len: usize, pos: u64) -> io::Result<()> {
        if addr as u64 % self.mem != 0 || len as u64 % self.offset != 0 || pos % self.offset != 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "O_DIRECT needs the buffer address aligned to {} and the length and file \
                     offset to {}: got address {addr:#x}, length {len}, offset {pos}",
                    self.mem, self.offset
                ),
            ));
        }
        Ok(())
    }
}

/// Positions past `i64::MAX` are negative to the kernel (and `-1` would mean "the current
/// position"): refused before submission.
pub(super) fn check_pos(pos: u64) -> io::Result<()> {
    if pos > i64::MAX as u64 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("file offset {pos} is past i64::MAX"),
        ));
    }
    Ok(())
}
