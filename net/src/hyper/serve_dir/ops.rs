//! The file ops of [`ServeDir`](super::ServeDir), built on the runtime's op API
//! ([`runtime::ext::Op`]) so that every future and body holding them is `Send` (axum asks
//! that of a service's future and body): `IORING_OP_OPENAT2` (5.6, `openat2(2)`),
//! `IORING_OP_STATX` (5.6, `statx(2)`), `IORING_OP_READ` (5.6) and `IORING_OP_CLOSE` (5.6,
//! the runtime's [`raw::close`](runtime::ext::raw::close)).
//!
//! # Invariants
//! - Each op's data owns what its SQE points at (the path's C string, the boxed
//!   `open_how` and `statx` buffers, the read's `Vec`, all heap blocks that keep their
//!   address when the data moves) and an `Arc` of every fd the SQE names (the root
//!   directory of an open, the file of a statx or read), so no memory is freed and no fd
//!   number closed (and reused) while the kernel may still use it, even after the future is
//!   dropped: the data then waits in the driver's ignored slot for the final CQE.
//! - An open whose future is dropped closes the fd it produces (`RETURNS_FD`).
//! - A [`FileFd`] tells the current core's driver that its fd leaves when it is closed by
//!   a drop (the epoll backend keeps what it learnt of an fd number until then, and the
//!   number may name another file next), as a [`SharedFd`] does; the ring's `CLOSE` tells
//!   it itself.
//!
//! On the epoll backend the same SQEs run as their system calls on the runtime's blocking
//! pool (a read of a cached page first tries `preadv2(RWF_NOWAIT)` on the core), as every
//! file op of `corering-fs` does there.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use runtime::ext::io_uring::{opcode, types};
use runtime::ext::{Completable, Cqe, Op, SharedFd};

/// An open file or directory of a request: `Send` and `Sync`, unlike the runtime's
/// core-bound [`SharedFd`]. Ops hold it in an `Arc`.
#[derive(Debug)]
pub(super) struct FileFd(Option<OwnedFd>);

impl FileFd {
    /// The fd number, for an SQE.
    pub(super) fn raw(&self) -> RawFd {
        self.0.as_ref().map_or(-1, AsRawFd::as_raw_fd)
    }

    /// The fd itself, for the ring's `CLOSE`.
    pub(super) fn into_owned(mut self) -> Option<OwnedFd> {
        self.0.take()
    }
}

impl Drop for FileFd {
    fn drop(&mut self) {
        if let Some(fd) = self.0.take() {
            // A `SharedFd` tells the current core's driver (or the thread's home core) that
            // the number leaves, then closes it: see the module's invariants.
            drop(SharedFd::new(fd));
        }
    }
}

/// The data of an open: the path and the `open_how` the kernel reads, and the directory
/// the path is resolved from.
pub(super) struct Open {
    _dir: Option<Arc<FileFd>>,
    _path: CString,
    _how: Box<types::OpenHow>,
}

impl Completable for Open {
    type Output = io::Result<FileFd>;

    const RETURNS_FD: bool = true;

    fn complete(self, cqe: Cqe) -> io::Result<FileFd> {
        let raw = cqe.result?;
        // SAFETY: a successful open's result is a new fd that nothing else owns.
        Ok(FileFd(Some(unsafe { OwnedFd::from_raw_fd(raw as i32) })))
    }
}

/// Opens `path` with `flags` (`O_CLOEXEC` is added), resolved from `dir` (the current
/// directory for `None`) under the `RESOLVE_*` flags `resolve`.
pub(super) fn open(dir: Option<&Arc<FileFd>>, path: CString, flags: i32, resolve: u64) -> Op<Open> {
    let dirfd = dir.map_or(libc::AT_FDCWD, |d| d.raw());
    let how = Box::new(
        types::OpenHow::new()
            .flags((flags | libc::O_CLOEXEC) as u64)
            .resolve(resolve),
    );
    let sqe = opcode::OpenAt2::new(types::Fd(dirfd), path.as_ptr(), &*how).build();
    let data = Open {
        _dir: dir.cloned(),
        _path: path,
        _how: how,
    };
    // SAFETY: the SQE points only into the path's and the `open_how`'s heap blocks, which
    // `Open` owns; the data holds the directory it names.
    unsafe { Op::new(data, sqe) }
}

/// What a request needs of a file's metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stat {
    /// `st_mode & S_IFMT`.
    pub(super) kind: u32,
    pub(super) size: u64,
    pub(super) ino: u64,
    /// Seconds and nanoseconds since the epoch; `None` where the filesystem gives none.
    pub(super) mtime: Option<(i64, u32)>,
}

impl Stat {
    /// A directory.
    pub(super) fn is_dir(&self) -> bool {
        self.kind == libc::S_IFDIR
    }

    /// A regular file: the only kind served.
    pub(super) fn is_file(&self) -> bool {
        self.kind == libc::S_IFREG
    }
}

/// What statx is asked for.
const MASK: u32 = libc::STATX_TYPE | libc::STATX_SIZE | libc::STATX_INO | libc::STATX_MTIME;

/// The empty path of a statx on an fd.
const EMPTY: &CStr = c"";

/// The data of a statx: the file, and the buffer the kernel fills.
pub(super) struct Statx {
    _fd: Arc<FileFd>,
    buf: Box<libc::statx>,
}

impl Completable for Statx {
    type Output = io::Result<Stat>;

    fn complete(self, cqe: Cqe) -> io::Result<Stat> {
        cqe.result?;
        let s = &*self.buf;
        Ok(Stat {
            kind: u32::from(s.stx_mode) & libc::S_IFMT,
            size: s.stx_size,
            ino: s.stx_ino,
            mtime: (s.stx_mask & libc::STATX_MTIME != 0)
                .then_some((s.stx_mtime.tv_sec, s.stx_mtime.tv_nsec)),
        })
    }
}

/// The metadata of the open file `fd` (`AT_EMPTY_PATH`; an `O_PATH` fd will do).
pub(super) fn statx(fd: &Arc<FileFd>) -> Op<Statx> {
    // SAFETY: `statx` is plain old data (integers and padding); all zeroes is a valid value.
    let mut buf: Box<libc::statx> = Box::new(unsafe { std::mem::zeroed() });
    let sqe = opcode::Statx::new(
        types::Fd(fd.raw()),
        EMPTY.as_ptr(),
        (&mut *buf as *mut libc::statx).cast(),
    )
    .flags(libc::AT_EMPTY_PATH | libc::AT_STATX_SYNC_AS_STAT)
    .mask(MASK)
    .build();
    let data = Statx {
        _fd: fd.clone(),
        buf,
    };
    // SAFETY: the SQE points at the boxed buffer, which `Statx` owns, and at a `'static`
    // empty string; the data holds the file.
    unsafe { Op::new(data, sqe) }
}

/// The data of a read: the buffer the kernel writes into (after its initialised part), and
/// the file.
pub(super) struct Read {
    buf: Vec<u8>,
    _fd: Arc<FileFd>,
}

impl Completable for Read {
    type Output = (io::Result<usize>, Vec<u8>);

    fn complete(self, cqe: Cqe) -> Self::Output {
        let mut buf = self.buf;
        let res = cqe.result.map(|n| {
            let n = (n as usize).min(buf.capacity() - buf.len());
            // SAFETY: the kernel wrote `n` bytes into the spare capacity, right after the
            // initialised part (the op was given `capacity - len` bytes there).
            unsafe { buf.set_len(buf.len() + n) };
            n
        });
        (res, buf)
    }
}

/// Reads from `fd` at `pos` into `buf`'s spare capacity (after its length); gives back the
/// count (0 at the end of the file) and the buffer, its length grown by the count.
pub(super) fn read(fd: &Arc<FileFd>, mut buf: Vec<u8>, pos: u64) -> Op<Read> {
    let spare = buf.spare_capacity_mut();
    let len = spare.len().min(MAX_READ) as u32;
    let ptr = spare.as_mut_ptr().cast::<u8>();
    let sqe = opcode::Read::new(types::Fd(fd.raw()), ptr, len)
        .offset(pos)
        .build();
    let data = Read {
        buf,
        _fd: fd.clone(),
    };
    // SAFETY: the SQE points only into the spare capacity of `buf`'s heap block, which
    // `Read` owns (moving the `Vec` does not move it); the data holds the file.
    unsafe { Op::new(data, sqe) }
}

/// The most bytes one read is given: the kernel's `MAX_RW_COUNT`.
const MAX_READ: usize = 0x7FFF_F000;

/// Closes `fd` through the ring (an `IORING_OP_CLOSE`, which a filesystem whose close
/// flushes, such as FUSE, completes off the core); an error is of no use to a reader and
/// is dropped.
pub(super) async fn close(fd: FileFd) {
    if let Some(fd) = fd.into_owned() {
        let _ = runtime::ext::raw::close(fd).await;
    }
}
