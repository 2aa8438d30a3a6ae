//! [`read_dir`]: the entries of a directory, read on the runtime's blocking pool.
//!
//! The kernel has no io_uring op that reads directory entries (no `getdents`), so the
//! directory is opened and read with std's `read_dir` on the blocking pool
//! ([`runtime::spawn_blocking`]), [`CHUNK`] entries per trip, as tokio does. An entry's
//! type comes with it from the kernel (`d_type`, or an `lstat` on filesystems that do not
//! fill it, also on the pool); [`DirEntry::metadata`] is a `statx` through the ring.
//!
//! A [`ReadDir::next_entry`] future dropped midway loses nothing: the chunk being read
//! stays in the `ReadDir` (its join handle), and the next call picks it up.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use runtime::JoinHandle;

use crate::error::error_context;
use crate::metadata::{FileType, Metadata};

/// How many entries one trip to the blocking pool reads.
const CHUNK: usize = 32;

/// What one trip to the pool gives back: the std iterator (`None` once exhausted) and the
/// entries it read.
type Chunk = (Option<std::fs::ReadDir>, VecDeque<io::Result<DirEntry>>);

/// Lists the entries of the directory `path` (not `.` and `..`), in the kernel's order.
///
/// Opening and reading run on the runtime's blocking pool: io_uring has no op to read a
/// directory. A path that is not a directory is an error of kind `NotADirectory`
/// (`ENOTDIR`); a missing one `NotFound`; both name the path.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("fs-doc-read-dir-{}", std::process::id()));
/// std::fs::create_dir_all(dir.join("sub"))?;
/// std::fs::write(dir.join("file"), b"x")?;
/// let rt = runtime::Runtime::new()?;
/// let mut names = rt.block_on(async {
///     let mut entries = corering_fs::read_dir(&dir).await?;
///     let mut names = Vec::new();
///     while let Some(entry) = entries.next_entry().await? {
///         names.push(entry.file_name().into_string().unwrap());
///     }
///     Ok::<_, std::io::Error>(names)
/// })?;
/// names.sort();
/// assert_eq!(names, ["file", "sub"]);
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn read_dir(path: impl AsRef<Path>) -> io::Result<ReadDir> {
    let path = path.as_ref().to_path_buf();
    let what = format!("read_dir {}", path.display());
    let dir = path.clone();
    let iter = crate::path_ops::blocking(what, move || std::fs::read_dir(&dir)).await?;
    Ok(ReadDir {
        dir: path,
        state: State::Idle(Some(iter), VecDeque::new()),
    })
}

/// The entries of a directory, from [`read_dir`].
pub struct ReadDir {
    /// The directory, for error messages.
    dir: PathBuf,
    state: State,
}

enum State {
    /// Entries read and not yet given out, and the iterator (`None` once exhausted).
    Idle(Option<std::fs::ReadDir>, VecDeque<io::Result<DirEntry>>),
    /// A chunk being read on the blocking pool.
    Pending(JoinHandle<Chunk>),
}

/// Reads up to [`CHUNK`] entries, with their types, on the calling (pool) thread.
fn read_chunk(mut iter: std::fs::ReadDir) -> Chunk {
    let mut out = VecDeque::with_capacity(CHUNK);
    for _ in 0..CHUNK {
        match iter.next() {
            Some(Ok(entry)) => {
                let file_type = entry.file_type().ok().map(FileType::from_std);
                out.push_back(Ok(DirEntry {
                    path: entry.path(),
                    name: entry.file_name(),
                    file_type,
                }));
            }
            Some(Err(e)) => out.push_back(Err(e)),
            None => return (None, out),
        }
    }
    (Some(iter), out)
}

impl ReadDir {
    /// The next entry, or `None` once all are listed. An error reading one entry is given
    /// in its place (naming the directory); the listing goes on after it.
    pub async fn next_entry(&mut self) -> io::Result<Option<DirEntry>> {
        std::future::poll_fn(|cx| self.poll_next_entry(cx)).await
    }

    /// Polls for the next entry, as [`next_entry`](ReadDir::next_entry): `Ready(Ok(None))`
    /// once all are listed.
    pub fn poll_next_entry(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Option<DirEntry>>> {
        loop {
            match &mut self.state {
                State::Idle(iter, buffered) => {
                    if let Some(next) = buffered.pop_front() {
                        let dir = &self.dir;
                        return Poll::Ready(
                            next.map(Some).map_err(|e| {
                                error_context(e, format!("read_dir {}", dir.display()))
                            }),
                        );
                    }
                    let Some(iter) = iter.take() else {
                        return Poll::Ready(Ok(None));
                    };
                    self.state = State::Pending(runtime::spawn_blocking(move || read_chunk(iter)));
                }
                State::Pending(handle) => {
                    let res = ready!(Pin::new(handle).poll(cx));
                    self.state = match res {
                        Ok((iter, buffered)) => State::Idle(iter, buffered),
                        Err(e) => {
                            self.state = State::Idle(None, VecDeque::new());
                            return Poll::Ready(Err(io::Error::other(format!(
                                "read_dir {}: the blocking pool lost the job: {e}",
                                self.dir.display()
                            ))));
                        }
                    };
                }
            }
        }
    }
}

impl std::fmt::Debug for ReadDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadDir").field("dir", &self.dir).finish()
    }
}

/// One entry of a directory, from [`ReadDir::next_entry`].
#[derive(Debug)]
pub struct DirEntry {
    path: PathBuf,
    name: OsString,
    file_type: Option<FileType>,
}

impl DirEntry {
    /// The entry's full path: the directory given to [`read_dir`] joined with its name.
    pub fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// The entry's name, without the directory.
    pub fn file_name(&self) -> OsString {
        self.name.clone()
    }

    /// The entry's type, not following a symlink (a symlink is a symlink). Usually known
    /// from the listing itself; else asked with a `statx` through the ring.
    pub async fn file_type(&self) -> io::Result<FileType> {
        match self.file_type {
            Some(t) => Ok(t),
            None => Ok(self.metadata().await?.file_type()),
        }
    }

    /// The entry's metadata, not following a symlink (as std's `DirEntry::metadata`): a
    /// `statx` through the ring. An entry removed since the listing is `NotFound`.
    pub async fn metadata(&self) -> io::Result<Metadata> {
        crate::path_ops::symlink_metadata(&self.path).await
    }
}
