//! [`OpenOptions`]: how a file is opened, as std's builder has it, through
//! `IORING_OP_OPENAT`.
//!
//! The flags follow std's rules (`open(2)`): at least one of read, write or append;
//! `truncate`, `create` and `create_new` need write (or append, which excludes truncate
//! unless `create_new`); `create_new` wins over `create` and `truncate` (`O_CREAT|O_EXCL`).
//! A combination std rejects is `InvalidInput` here too, before anything is submitted.
//! Every file is opened with `O_CLOEXEC`. `custom_flags` adds flags such as `O_DIRECT`,
//! `O_SYNC` or `O_NOFOLLOW`; its access-mode bits are ignored.

use std::io;
use std::path::Path;

use crate::error::{cpath, error_context};
use crate::fd::SharedFd;
use crate::file::{DirectAlign, File};
use crate::ops;

/// Options and flags for opening a file: a builder, as [`std::fs::OpenOptions`].
///
/// ```
/// let dir = std::env::temp_dir().join(format!("fs-doc-open-options-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("log");
/// let rt = runtime::Runtime::new()?;
/// rt.block_on(async {
///     let file = corering_fs::OpenOptions::new()
///         .append(true)
///         .create(true)
///         .mode(0o600)
///         .open(&path)
///         .await?;
///     let (res, _) = file.write_all_at(b"one line\n".to_vec(), 0).await;
///     res?;
///     file.close().await
/// })?;
/// assert_eq!(std::fs::read(&path)?, b"one line\n");
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct OpenOptions {
    read: bool,
    write: bool,
    append: bool,
    truncate: bool,
    create: bool,
    create_new: bool,
    mode: u32,
    custom_flags: i32,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions::new()
    }
}

fn invalid(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg.to_string())
}

impl OpenOptions {
    /// A blank set of options: nothing set, mode `0o666` (less the umask) for new files.
    pub fn new() -> OpenOptions {
        OpenOptions {
            read: false,
            write: false,
            append: false,
            truncate: false,
            create: false,
            create_new: false,
            mode: 0o666,
            custom_flags: 0,
        }
    }

    /// Opens for reading.
    pub fn read(&mut self, read: bool) -> &mut Self {
        self.read = read;
        self
    }

    /// Opens for writing.
    pub fn write(&mut self, write: bool) -> &mut Self {
        self.write = write;
        self
    }

    /// Opens for appending (`O_APPEND`): every write lands at the end of the file, whatever
    /// position it names. Implies write.
    pub fn append(&mut self, append: bool) -> &mut Self {
        self.append = append;
        self
    }

    /// Cuts an existing file to length 0 (`O_TRUNC`). Needs write.
    pub fn truncate(&mut self, truncate: bool) -> &mut Self {
        self.truncate = truncate;
        self
    }

    /// Creates the file if it does not exist (`O_CREAT`). Needs write or append.
    pub fn create(&mut self, create: bool) -> &mut Self {
        self.create = create;
        self
    }

    /// Creates the file, failing with `AlreadyExists` if it exists (`O_CREAT|O_EXCL`, which
    /// is atomic and does not follow a final symlink). Needs write or append.
    pub fn create_new(&mut self, create_new: bool) -> &mut Self {
        self.create_new = create_new;
        self
    }

    /// The permission bits of a created file (the process umask applies); `0o666` unless
    /// set.
    pub fn mode(&mut self, mode: u32) -> &mut Self {
        self.mode = mode;
        self
    }

    /// Extra `open(2)` flags, such as `libc::O_DIRECT`, `libc::O_SYNC` or
    /// `libc::O_NOFOLLOW` (the access-mode bits are ignored). A file opened with `O_DIRECT`
    /// checks the alignment of every read and write (see [`File`]).
    pub fn custom_flags(&mut self, flags: i32) -> &mut Self {
        self.custom_flags = flags;
        self
    }

    /// The `open(2)` flags these options mean, or `InvalidInput` for a combination std
    /// rejects.
    fn flags(&self) -> io::Result<i32> {
        let access = match (self.read, self.write, self.append) {
            (true, false, false) => libc::O_RDONLY,
            (false, true, false) => libc::O_WRONLY,
            (true, true, false) => libc::O_RDWR,
            (false, _, true) => libc::O_WRONLY | libc::O_APPEND,
            (true, _, true) => libc::O_RDWR | libc::O_APPEND,
            (false, false, false) => {
                return Err(invalid(
                    "open options: none of read, write or append is set",
                ))
            }
        };
        match (self.write, self.append) {
            (false, false) if self.truncate || self.create || self.create_new => {
                return Err(invalid(
                    "open options: truncate, create and create_new need write or append",
                ))
            }
            (_, true) if self.truncate && !self.create_new => {
                return Err(invalid(
                    "open options: append and truncate exclude each other",
                ))
            }
            _ => {}
        }
        let creation = match (self.create, self.truncate, self.create_new) {
            (_, _, true) => libc::O_CREAT | libc::O_EXCL,
            (false, false, false) => 0,
            (true, false, false) => libc::O_CREAT,
            (false, true, false) => libc::O_TRUNC,
            (true, true, false) => libc::O_CREAT | libc::O_TRUNC,
        };
        Ok(libc::O_CLOEXEC | access | creation | (self.custom_flags & !libc::O_ACCMODE))
    }

    /// Opens `path` with these options.
    ///
    /// A missing file is `NotFound` (and other kernel errors keep their kind), with the
    /// path in the message; a path with a NUL byte or a bad combination of options is
    /// `InvalidInput`.
    pub async fn open(&self, path: impl AsRef<Path>) -> io::Result<File> {
        let path = path.as_ref();
        let flags = self
            .flags()
            .map_err(|e| error_context(e, format!("open {}", path.display())))?;
        let c = cpath(path, "open")?;
        let fd = ops::open(c, flags, self.mode)
            .await
            .map_err(|e| error_context(e, format!("open {}", path.display())))?;
        let fd = SharedFd::new(fd);
        let direct = if flags & libc::O_DIRECT != 0 {
            Some(DirectAlign::probe(&fd).await)
        } else {
            None
        };
        Ok(File::from_parts(fd, direct, flags & libc::O_APPEND != 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_follow_std() {
        let f = |o: &OpenOptions| o.flags().map(|f| f & !libc::O_CLOEXEC);
        assert_eq!(f(OpenOptions::new().read(true)).unwrap(), libc::O_RDONLY);
        assert_eq!(
            f(OpenOptions::new().write(true).create(true).truncate(true)).unwrap(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC
        );
        assert_eq!(
            f(OpenOptions::new().read(true).append(true)).unwrap(),
            libc::O_RDWR | libc::O_APPEND
        );
        assert_eq!(
            f(OpenOptions::new().write(true).create(true).create_new(true)).unwrap(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL
        );
        assert_eq!(
            f(OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECT | libc::O_RDWR))
            .unwrap(),
            libc::O_RDONLY | libc::O_DIRECT
        );
        for bad in [
            OpenOptions::new(),
            OpenOptions::new().read(true).create(true).clone(),
            OpenOptions::new().append(true).truncate(true).clone(),
        ] {
            assert_eq!(bad.flags().unwrap_err().kind(), io::ErrorKind::InvalidInput);
        }
    }
}
