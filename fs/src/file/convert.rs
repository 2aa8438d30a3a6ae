//! A [`File`] to and from std's and raw fds, and its clones; taking its fd back once no
//! dropped op still holds it.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use super::File;
use crate::fd::SharedFd;
use crate::stream::Access;

impl File {
    /// Wraps a std file, as tokio's `File::from_std`: the stream cursor starts at the std
    /// file's offset. Its `O_APPEND` flag is read with `fcntl(F_GETFL)`; an `O_DIRECT`
    /// flag is not known, so reads and writes are not checked for alignment (the kernel
    /// answers `EINVAL` to unaligned direct I/O).
    pub fn from_std(file: std::fs::File) -> File {
        let fd = OwnedFd::from(file);
        let append = fd_flags(fd.as_fd()).is_some_and(|f| f & libc::O_APPEND != 0);
        let pos = os_offset(fd.as_fd()).unwrap_or(0);
        File::starting_at(SharedFd::new(fd), None, append, pos)
    }

    /// The std file behind this one, as tokio's `File::into_std`, once the stream's
    /// write-behind is written: its error, if any, is returned (with its kind) and the fd
    /// is closed. The std file's offset is set to this file's [`cursor`](File::cursor), so
    /// std reads and writes go on where the stream stopped.
    ///
    /// An op of this file dropped while in the kernel still holds the fd until its final
    /// completion (soon: the drop cancelled it); this waits for that, up to about a
    /// second, then gives up with an error of kind `Other`, leaving the fd to be closed
    /// when that op finishes.
    pub async fn into_std(mut self) -> io::Result<std::fs::File> {
        let flushed = {
            let (fd, stream) = self.stream_parts();
            std::future::poll_fn(|cx| stream.poll_flush(fd, cx)).await
        };
        let pos = self.cursor();
        let append = self.stream.get_mut().is_append();
        let File { fd, stream, .. } = self;
        drop(stream.into_inner());
        flushed?;
        let owned = take_fd(fd).await?;
        if !append {
            // SAFETY: `lseek` on an fd we own; it touches no memory of ours.
            if unsafe { libc::lseek(owned.as_raw_fd(), pos as libc::off_t, libc::SEEK_SET) } < 0 {
                let e = io::Error::last_os_error();
                return Err(runtime::ext::error_context(e, "into_std: lseek"));
            }
        }
        Ok(std::fs::File::from(owned))
    }

    /// A second handle on the same open file (`fcntl(F_DUPFD_CLOEXEC)`: no io_uring op
    /// duplicates an fd, and the call never blocks), as tokio's `File::try_clone`.
    ///
    /// The clone's stream cursor starts at this file's, after this file's write-behind is
    /// written (its error, if any, is returned instead), and then moves on its own: the
    /// cursor is kept in user space, not in the shared open file. Positional calls
    /// (`read_at`, `write_at`, ...) on either see the same file. The `O_DIRECT` alignment
    /// checks carry over. Failure is the kernel's (`EMFILE` with the fd table full).
    pub async fn try_clone(&self) -> io::Result<File> {
        self.settle(Access::Looks).await?;
        // SAFETY: `F_DUPFD_CLOEXEC` on an fd this file keeps open; it touches no memory of
        // ours.
        let raw = unsafe { libc::fcntl(self.fd.raw(), libc::F_DUPFD_CLOEXEC, 0) };
        if raw < 0 {
            let e = io::Error::last_os_error();
            return Err(runtime::ext::error_context(e, "try_clone"));
        }
        // SAFETY: `raw` is a new fd that nothing else owns.
        let dup = unsafe { OwnedFd::from_raw_fd(raw) };
        let append = self.stream.borrow().is_append();
        Ok(File::starting_at(
            SharedFd::new(dup),
            self.direct,
            append,
            self.cursor(),
        ))
    }
}

/// `fcntl(F_GETFL)` of `fd`, or `None` if the kernel refuses.
fn fd_flags(fd: BorrowedFd<'_>) -> Option<i32> {
    // SAFETY: `F_GETFL` on a borrowed, open fd; it touches no memory of ours.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    (flags >= 0).then_some(flags)
}

/// The open file's OS offset (`lseek(SEEK_CUR)`), or `None` where it has none (a pipe).
fn os_offset(fd: BorrowedFd<'_>) -> Option<u64> {
    // SAFETY: `lseek` on a borrowed, open fd; it touches no memory of ours.
    let off = unsafe { libc::lseek(fd.as_raw_fd(), 0, libc::SEEK_CUR) };
    u64::try_from(off).ok()
}

/// Waits until no dropped op still holds `fd` (each round trip lets the driver reap a
/// cancelled op's final CQE), up to about a second.
async fn take_fd(mut fd: SharedFd) -> io::Result<OwnedFd> {
    for attempt in 0..1100u32 {
        match fd.try_unwrap() {
            Ok(owned) => return Ok(owned),
            Err(shared) => fd = shared,
        }
        if attempt < 100 {
            runtime::ext::raw::nop().await?;
        } else {
            runtime::sleep(Duration::from_millis(1)).await;
        }
    }
    Err(io::Error::other(
        "an op of this file dropped while in the kernel still holds its fd",
    ))
}

/// Closes `fd` through the ring once no dropped op still holds it (see [`File::close`]);
/// past about a second, leaves it to be closed when that op finishes, and gives `Ok`.
pub(super) async fn close_fd(fd: SharedFd) -> io::Result<()> {
    match take_fd(fd).await {
        Ok(owned) => runtime::ext::raw::close(owned).await,
        Err(_) => Ok(()),
    }
}

impl AsRawFd for File {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.raw()
    }
}

impl AsFd for File {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl From<OwnedFd> for File {
    /// Wraps an open fd, as [`File::from_std`] does.
    fn from(fd: OwnedFd) -> File {
        File::from_std(std::fs::File::from(fd))
    }
}

impl From<std::fs::File> for File {
    /// The same as [`File::from_std`].
    fn from(file: std::fs::File) -> File {
        File::from_std(file)
    }
}
