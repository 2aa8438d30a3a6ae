//! [`File`]: an open file whose every operation is an io_uring op.
//!
//! Reads and writes name their position (`pread`/`pwrite` style) and take owned buffers,
//! giving them back with the result: `read_at(buf, pos) -> (io::Result<usize>, buf)`. The
//! file's fd is a [`SharedFd`]; every op holds a clone until its final CQE (see
//! `crate::fd`), so a dropped op never reads or writes a reused fd number, and the fd is
//! closed when the last clone goes.
//!
//! # Direct I/O
//! A file opened with `O_DIRECT` remembers the alignment the kernel asks for (`statx(2)`'s
//! `STATX_DIOALIGN`, Linux 6.1; 512 bytes where the kernel does not say). Each read and
//! write then checks the buffer address, the length and the file offset before submitting
//! anything, and gives `InvalidInput` for an unaligned one rather than the kernel's bare
//! `EINVAL`. [`AlignedBuf`](crate::AlignedBuf) gives aligned buffers.

use std::cell::RefCell;
use std::fmt;
use std::future::poll_fn;
use std::io;

use runtime::buf::{IoBuf, IoBufMut};

mod convert;
mod direct;

use convert::close_fd;
use direct::check_pos;
pub(crate) use direct::DirectAlign;

use crate::fd::SharedFd;
use crate::metadata::Metadata;
use crate::open_options::OpenOptions;
use crate::ops;
use crate::stream::{Access, Stream};

/// An open file on the io_uring runtime.
///
/// All I/O is positional and uses owned buffers (any [`IoBuf`]/[`IoBufMut`]: `Vec<u8>`,
/// `Box<[u8]>`, [`AlignedBuf`](crate::AlignedBuf), slices of them). Methods take `&self`, so
/// several reads and writes of one file may be in flight at once (share it in an `Rc`).
/// Dropping the file closes its fd once no op of it is still in the kernel; [`close`]
/// closes it through the ring and reports the kernel's answer.
///
/// A file and its op futures belong to the core that opened it.
///
/// # The stream and the handle's other calls
/// The stream traits (`AsyncRead`, `AsyncWrite`, ...) keep a cursor, a read-ahead and a
/// write-behind (see [`cursor`](File::cursor)). Every other call that touches the file's
/// contents or size (`read_at`, `write_at` and their vectored and exact forms, `set_len`,
/// `fallocate`, `sync_all`, `sync_data`, `sync_range`, `metadata`) first waits for the
/// write-behind and returns its error, if any, with its kind (the call itself is then not
/// made); one that may change the file (the writes, `set_len`, `fallocate`) also drops the
/// read-ahead, so a stream read afterwards sees the file as it is: after a `set_len` below
/// the cursor, reads give 0 (end of file), as std's `File`.
///
/// # Dropping
/// Bytes a stream write reported written are written even if the file is dropped without
/// a flush: a write still in flight is not cancelled, and the fd is closed only once it is
/// done (the write holds the fd). What that write fails with (a full disk, say) cannot be
/// returned from a drop and is lost, as with std's `BufWriter`: call
/// [`flush`](futures::io::AsyncWriteExt::flush), [`sync_all`](File::sync_all) or
/// [`close`] first to see it. The runtime's shutdown, too, lets such a write finish
/// (for up to 2 seconds) before it cancels what is left.
///
/// [`close`]: File::close
///
/// ```
/// let dir = std::env::temp_dir().join(format!("fs-doc-file-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("data");
/// let rt = runtime::Runtime::new()?;
/// rt.block_on(async {
///     let file = corering_fs::OpenOptions::new()
///         .read(true)
///         .write(true)
///         .create(true)
///         .open(&path)
///         .await?;
///     let (res, _) = file.write_all_at(b"hello, ring".to_vec(), 0).await;
///     res?;
///     file.sync_data().await?;
///     let (res, buf) = file.read_at(Vec::with_capacity(64), 7).await;
///     assert_eq!(res?, 4);
///     assert_eq!(buf, b"ring");
///     file.close().await
/// })?;
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct File {
    fd: SharedFd,
    direct: Option<DirectAlign>,
    /// The cursor and buffers of the stream traits (see `crate::stream`); borrowed only
    /// within one poll (the `&self` methods settle it first).
    stream: RefCell<Stream>,
}

impl fmt::Debug for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("File")
            .field("fd", &self.fd.raw())
            .field("direct", &self.direct.is_some())
            .field("stream", &self.stream)
            .finish()
    }
}

impl File {
    pub(crate) fn from_parts(fd: SharedFd, direct: Option<DirectAlign>, append: bool) -> File {
        File::starting_at(fd, direct, append, 0)
    }

    /// As [`from_parts`](File::from_parts), with the stream cursor at `pos`.
    fn starting_at(fd: SharedFd, direct: Option<DirectAlign>, append: bool, pos: u64) -> File {
        let stream = Stream::new(&fd, append, direct.is_some()).start_at(pos);
        File {
            fd,
            direct,
            stream: RefCell::new(stream),
        }
    }

    /// The fd and the stream state, for the stream traits.
    pub(crate) fn stream_parts(&mut self) -> (&SharedFd, &mut Stream) {
        (&self.fd, self.stream.get_mut())
    }

    /// Before any other call on the file: waits for the stream's write-behind and gives its
    /// error; for a call that may change the file, drops the read-ahead too.
    async fn settle(&self, access: Access) -> io::Result<()> {
        poll_fn(|cx| self.stream.borrow_mut().poll_settle(&self.fd, cx, access)).await
    }

    /// The cursor of the stream traits ([`AsyncRead`](futures::io::AsyncRead),
    /// [`AsyncWrite`](futures::io::AsyncWrite), [`AsyncSeek`](futures::io::AsyncSeek)): where
    /// the next stream read or write starts. It starts at 0; the positional methods
    /// (`read_at`, `write_at`, ...) neither use nor move it. In append mode it is known only
    /// once the last write has finished (after a flush). Named so as not to shadow the
    /// async `stream_position` of futures' and tokio's `AsyncSeekExt`.
    pub fn cursor(&self) -> u64 {
        self.stream.borrow().pos()
    }

    /// Opens an existing file for reading.
    ///
    /// A missing file is `NotFound`, with the path in the message.
    pub async fn open(path: impl AsRef<std::path::Path>) -> io::Result<File> {
        OpenOptions::new().read(true).open(path).await
    }

    /// Opens a file for writing only, creating it if missing and truncating it if not.
    pub async fn create(path: impl AsRef<std::path::Path>) -> io::Result<File> {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .await
    }

    /// A builder of options to open a file with; the same as [`OpenOptions::new`].
    pub fn options() -> OpenOptions {
        OpenOptions::new()
    }

    /// Whether the file was opened with `O_DIRECT` (reads and writes check alignment).
    pub fn is_direct_io(&self) -> bool {
        self.direct.is_some()
    }

    fn check_direct(&self, addr: *const u8, len: usize, pos: u64) -> io::Result<()> {
        check_pos(pos)?;
        match &self.direct {
            Some(align) => align.check(addr as usize, len, pos),
            None => Ok(()),
        }
    }

    /// Reads into `buf` (up to its total length, from its start) at byte `pos` of the file;
    /// gives back the count (0 at the end of the file) and the buffer.
    ///
    /// The kernel's errors are returned as they are (`EBADF` for a file not opened for
    /// reading, say), so `raw_os_error()` matches them.
    pub async fn read_at<B: IoBufMut>(&self, buf: B, pos: u64) -> (io::Result<usize>, B) {
        if let Err(e) = self.check_direct(buf.stable_ptr(), buf.bytes_total(), pos) {
            return (Err(e), buf);
        }
        if let Err(e) = self.settle(Access::Looks).await {
            return (Err(e), buf);
        }
        ops::read_at(&self.fd, buf, pos).await
    }

    /// Reads until `buf` is full (its total length) from `pos`; the end of the file before
    /// that is `UnexpectedEof`. Gives back the buffer, filled as far as the reads got.
    pub async fn read_exact_at<B: IoBufMut>(&self, mut buf: B, pos: u64) -> (io::Result<()>, B) {
        let total = buf.bytes_total();
        let mut filled = 0;
        while filled < total {
            let Some(at) = pos.checked_add(filled as u64) else {
                return (Err(check_pos(u64::MAX).unwrap_err()), buf);
            };
            let (res, slice) = self.read_at(buf.slice(filled..), at).await;
            buf = slice.into_inner();
            match res {
                Ok(0) => {
                    return (
                        Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            format!("end of file after {filled} of {total} bytes"),
                        )),
                        buf,
                    )
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return (Err(e), buf),
            }
        }
        (Ok(()), buf)
    }

    /// Writes `buf`'s initialised bytes at byte `pos`; gives back the count written and the
    /// buffer. On a file opened for appending the kernel writes at the end, whatever `pos`.
    ///
    /// The kernel's errors are returned as they are (`EBADF` for a file opened read-only).
    pub async fn write_at<B: IoBuf>(&self, buf: B, pos: u64) -> (io::Result<usize>, B) {
        if let Err(e) = self.check_direct(buf.stable_ptr(), buf.bytes_init(), pos) {
            return (Err(e), buf);
        }
        if let Err(e) = self.settle(Access::Changes).await {
            return (Err(e), buf);
        }
        ops::write_at(&self.fd, buf, pos).await
    }

    /// Writes all of `buf`'s initialised bytes from `pos`, in as many writes as it takes; a
    /// write of 0 bytes is `WriteZero`.
    pub async fn write_all_at<B: IoBuf>(&self, mut buf: B, pos: u64) -> (io::Result<()>, B) {
        let total = buf.bytes_init();
        let mut done = 0;
        while done < total {
            let Some(at) = pos.checked_add(done as u64) else {
                return (Err(check_pos(u64::MAX).unwrap_err()), buf);
            };
            let (res, slice) = self.write_at(buf.slice(done..total), at).await;
            buf = slice.into_inner();
            match res {
                Ok(0) => {
                    return (
                        Err(io::Error::new(
                            io::ErrorKind::WriteZero,
                            format!("wrote 0 bytes after {done} of {total}"),
                        )),
                        buf,
                    )
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return (Err(e), buf),
            }
        }
        (Ok(()), buf)
    }

    fn check_direct_vectored(
        &self,
        iov: impl Iterator<Item = (*const u8, usize)>,
        pos: u64,
    ) -> io::Result<()> {
        check_pos(pos)?;
        if let Some(align) = &self.direct {
            for (addr, len) in iov {
                align.check(addr as usize, len, pos)?;
            }
        }
        Ok(())
    }

    /// Reads at `pos` into `bufs` in order, each up to its total length (`preadv(2)`); gives
    /// back the total count and the buffers.
    pub async fn readv_at<B: IoBufMut>(
        &self,
        bufs: Vec<B>,
        pos: u64,
    ) -> (io::Result<usize>, Vec<B>) {
        let iov = bufs.iter().map(|b| (b.stable_ptr(), b.bytes_total()));
        if let Err(e) = self.check_direct_vectored(iov, pos) {
            return (Err(e), bufs);
        }
        if let Err(e) = self.settle(Access::Looks).await {
            return (Err(e), bufs);
        }
        ops::readv_at(&self.fd, bufs, pos).await
    }

    /// Writes the initialised bytes of `bufs` in order at `pos` (`pwritev(2)`); gives back
    /// the total count (possibly short) and the buffers.
    pub async fn writev_at<B: IoBuf>(&self, bufs: Vec<B>, pos: u64) -> (io::Result<usize>, Vec<B>) {
        let iov = bufs.iter().map(|b| (b.stable_ptr(), b.bytes_init()));
        if let Err(e) = self.check_direct_vectored(iov, pos) {
            return (Err(e), bufs);
        }
        if let Err(e) = self.settle(Access::Changes).await {
            return (Err(e), bufs);
        }
        ops::writev_at(&self.fd, bufs, pos).await
    }

    /// Flushes the file's data and metadata to the device (`fsync(2)`).
    pub async fn sync_all(&self) -> io::Result<()> {
        self.settle(Access::Looks).await?;
        ops::fsync(&self.fd, false).await
    }

    /// Flushes the file's data, and only the metadata needed to read it back
    /// (`fdatasync(2)`).
    pub async fn sync_data(&self) -> io::Result<()> {
        self.settle(Access::Looks).await?;
        ops::fsync(&self.fd, true).await
    }

    /// Starts or waits for write-out of `len` bytes from `offset` (`sync_file_range(2)`;
    /// `len` 0 means to the end of the file). `flags` are `libc::SYNC_FILE_RANGE_*`.
    ///
    /// This gives no durability promise (no metadata, no device cache flush): use
    /// [`sync_data`](File::sync_data) for that.
    pub async fn sync_range(&self, offset: u64, len: u64, flags: u32) -> io::Result<()> {
        check_pos(offset)?;
        self.settle(Access::Looks).await?;
        // The SQE's length is 32 bits: larger ranges go in page-aligned pieces.
        const PIECE: u64 = 1 << 30;
        if len == 0 {
            return ops::sync_range(&self.fd, offset, 0, flags).await;
        }
        let end = offset.saturating_add(len);
        check_pos(end)?;
        let mut at = offset;
        while at < end {
            let n = (end - at).min(PIECE);
            ops::sync_range(&self.fd, at, n as u32, flags).await?;
            at += n;
        }
        Ok(())
    }

    /// Allocates (`mode` 0), or with `libc::FALLOC_FL_*` modes punches or zeroes, `len`
    /// bytes from `offset` (`fallocate(2)`).
    pub async fn fallocate(&self, offset: u64, len: u64, mode: i32) -> io::Result<()> {
        check_pos(offset)?;
        self.settle(Access::Changes).await?;
        ops::fallocate(&self.fd, offset, len, mode).await
    }

    /// Sets the file's length, cutting it or extending it with a hole
    /// (`IORING_OP_FTRUNCATE`, Linux 6.9; before 6.9, `ftruncate(2)` on the blocking pool).
    pub async fn set_len(&self, len: u64) -> io::Result<()> {
        check_pos(len)?;
        self.settle(Access::Changes).await?;
        let code = io_uring::opcode::Ftruncate::CODE;
        if runtime::features().is_none_or(|f| f.supports_op(code)) {
            return ops::ftruncate(&self.fd, len).await;
        }
        // SAFETY: `F_DUPFD_CLOEXEC` on an fd this file keeps open; it touches no memory of
        // ours.
        let raw = unsafe { libc::fcntl(self.fd.raw(), libc::F_DUPFD_CLOEXEC, 0) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a new fd that nothing else owns.
        let dup = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) };
        crate::path_ops::blocking("set_len".into(), move || {
            use std::os::fd::AsRawFd;
            // SAFETY: ftruncate(2) on an fd the closure owns; it touches no memory.
            let r = unsafe { libc::ftruncate(dup.as_raw_fd(), len as libc::off_t) };
            if r < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        })
        .await
    }

    /// The file's metadata (`statx(2)` on the fd, with `AT_EMPTY_PATH`).
    pub async fn metadata(&self) -> io::Result<Metadata> {
        self.settle(Access::Looks).await?;
        ops::statx_fd(&self.fd, 0).await
    }

    /// Waits for a stream write still in flight (write-behind; its error is reported), then
    /// closes the file through the ring (`IORING_OP_CLOSE`) and reports what the kernel
    /// said (a failed write-back on some filesystems shows only here).
    ///
    /// If an op of this file was dropped while in the kernel, its data still holds the fd
    /// until its CQE arrives (soon: the drop cancelled it); `close` waits for that, up to
    /// about a second. Past that it leaves the fd to be closed when the op finishes, and
    /// returns `Ok`.
    pub async fn close(mut self) -> io::Result<()> {
        let flushed = {
            let (fd, stream) = self.stream_parts();
            std::future::poll_fn(|cx| stream.poll_flush(fd, cx)).await
        };
        let File { fd, stream, .. } = self;
        // Reads or a size query still in flight are cancelled; they hold fd clones, which
        // the loop below waits for like any dropped op's.
        drop(stream.into_inner());
        let closed = close_fd(fd).await;
        flushed.and(closed)
    }
}
