//! Operations on paths: remove, create directories, rename, link, metadata, and whole-file
//! helpers (`read`, `write`, `copy`).
//!
//! Each is an `IORING_OP_*AT` op relative to the current directory (`AT_FDCWD`), except
//! [`canonicalize`], [`read_link`] and [`set_permissions`], which have no io_uring op
//! (`realpath`, `readlinkat`, `fchmodat`) and run on the runtime's blocking pool. Errors
//! name the operation and the path(s) and keep the kernel's kind (see `crate::error`); a
//! path with a NUL byte is `InvalidInput` before anything is submitted.

use std::cell::Cell;
use std::fs::Permissions;
use std::io;
use std::path::{Path, PathBuf};

use runtime::buf::IoBuf;

use crate::error::{cpath, error_context};
use crate::file::File;
use crate::metadata::Metadata;
use crate::open_options::OpenOptions;
use crate::ops;

/// The bytes each of [`copy`]'s workers moves at a time.
const COPY_CHUNK: usize = 128 * 1024;
/// How many chunks [`copy`] keeps in flight.
const COPY_DEPTH: usize = 4;

/// Removes a file or symlink (`unlinkat(2)`); a directory is refused (`EISDIR`).
pub async fn remove_file(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    let c = cpath(path, "remove_file")?;
    ops::unlink(c, false)
        .await
        .map_err(|e| error_context(e, format!("remove_file {}", path.display())))
}

/// Removes an empty directory (`unlinkat(2)` with `AT_REMOVEDIR`).
pub async fn remove_dir(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    let c = cpath(path, "remove_dir")?;
    ops::unlink(c, true)
        .await
        .map_err(|e| error_context(e, format!("remove_dir {}", path.display())))
}

/// Removes a directory and everything in it, as tokio's `remove_dir_all`; a symlink is
/// removed, never followed. Runs `std::fs::remove_dir_all` on the blocking pool: io_uring
/// has an op to unlink but none to list a directory, and std's walk is hardened against a
/// directory swapped for a symlink while it runs (it opens each level with `O_NOFOLLOW`
/// and unlinks relative to it). A missing path is `NotFound`, naming it.
pub async fn remove_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref().to_path_buf();
    let what = format!("remove_dir_all {}", path.display());
    blocking(what, move || std::fs::remove_dir_all(&path)).await
}

/// Creates a directory (`mkdirat(2)`, mode `0o777` less the umask); its parent must exist
/// and it must not.
pub async fn create_dir(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    mkdir(path)
        .await
        .map_err(|e| error_context(e, format!("create_dir {}", path.display())))
}

async fn mkdir(path: &Path) -> io::Result<()> {
    let c = cpath(path, "create_dir")?;
    ops::mkdir(c, 0o777).await
}

/// Whether `path` is a directory now (following symlinks), for `create_dir_all`'s
/// `EEXIST` answer.
async fn is_dir(path: &Path) -> bool {
    match cpath(path, "create_dir_all") {
        Ok(c) => ops::statx_path(c, true).await.is_ok_and(|m| m.is_dir()),
        Err(_) => false,
    }
}

/// Creates a directory and every missing parent; a directory that exists already (or is
/// made by someone else meanwhile) is fine, anything else there is `AlreadyExists`.
pub async fn create_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    let what = || format!("create_dir_all {}", path.display());
    if path.as_os_str().is_empty() {
        return Ok(());
    }
    // Walk up until a directory exists or can be made, remembering what is missing.
    let mut missing = Vec::new();
    let mut cur = path;
    loop {
        match mkdir(cur).await {
            Ok(()) => break,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                missing.push(cur);
                match cur.parent() {
                    Some(parent) if !parent.as_os_str().is_empty() => cur = parent,
                    _ => return Err(error_context(e, what())),
                }
            }
            Err(_) if is_dir(cur).await => break,
            Err(e) => return Err(error_context(e, what())),
        }
    }
    // Then make them, outermost first.
    for dir in missing.into_iter().rev() {
        match mkdir(dir).await {
            Ok(()) => {}
            Err(_) if is_dir(dir).await => {}
            Err(e) => {
                return Err(error_context(
                    e,
                    format!("create_dir_all {}", dir.display()),
                ))
            }
        }
    }
    Ok(())
}

/// Renames `from` to `to`, replacing `to` if it exists (`renameat(2)`).
pub async fn rename(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<()> {
    let (from, to) = (from.as_ref(), to.as_ref());
    let what = || format!("rename {} to {}", from.display(), to.display());
    let cf = cpath(from, "rename")?;
    let ct = cpath(to, "rename")?;
    ops::rename(cf, ct)
        .await
        .map_err(|e| error_context(e, what()))
}

/// Creates `link` as a new hard link to `original` (`linkat(2)`).
pub async fn hard_link(original: impl AsRef<Path>, link: impl AsRef<Path>) -> io::Result<()> {
    let (original, link) = (original.as_ref(), link.as_ref());
    let what = || format!("hard_link {} to {}", link.display(), original.display());
    let co = cpath(original, "hard_link")?;
    let cl = cpath(link, "hard_link")?;
    ops::link(co, cl)
        .await
        .map_err(|e| error_context(e, what()))
}

/// Creates `link` as a symbolic link to `target` (`symlinkat(2)`); `target` is stored as
/// given, relative to the link's directory, and need not exist.
pub async fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) -> io::Result<()> {
    let (target, link) = (target.as_ref(), link.as_ref());
    let what = || format!("symlink {} to {}", link.display(), target.display());
    let ct = cpath(target, "symlink")?;
    let cl = cpath(link, "symlink")?;
    ops::symlink(ct, cl)
        .await
        .map_err(|e| error_context(e, what()))
}

/// The metadata of `path`, following symlinks (`statx(2)`).
pub async fn metadata(path: impl AsRef<Path>) -> io::Result<Metadata> {
    let path = path.as_ref();
    let c = cpath(path, "metadata")?;
    ops::statx_path(c, true)
        .await
        .map_err(|e| error_context(e, format!("metadata {}", path.display())))
}

/// The metadata of `path` itself: a symlink is described, not followed
/// (`AT_SYMLINK_NOFOLLOW`).
pub async fn symlink_metadata(path: impl AsRef<Path>) -> io::Result<Metadata> {
    let path = path.as_ref();
    let c = cpath(path, "symlink_metadata")?;
    ops::statx_path(c, false)
        .await
        .map_err(|e| error_context(e, format!("symlink_metadata {}", path.display())))
}

/// Reads the whole file into a `Vec`, sized from its metadata first.
pub async fn read(path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
    let file = File::open(path).await?;
    let hint = file.metadata().await.map(|m| m.len()).unwrap_or(0);
    // One byte past the size, so the read that sees the end needs no new allocation.
    let mut buf: Vec<u8> = Vec::with_capacity(usize::try_from(hint).unwrap_or(0).saturating_add(1));
    loop {
        if buf.len() == buf.capacity() {
            buf.reserve(buf.len().clamp(8192, 1 << 24));
        }
        let len = buf.len();
        let (res, slice) = file.read_at(buf.slice(len..), len as u64).await;
        buf = slice.into_inner();
        match res {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    file.close().await?;
    Ok(buf)
}

/// Writes `contents` as the whole file, creating it or truncating it first, and closes it
/// through the ring so a failed write-back is reported.
pub async fn write(path: impl AsRef<Path>, contents: impl Into<Vec<u8>>) -> io::Result<()> {
    let file = File::create(path).await?;
    let (res, _) = file.write_all_at(contents.into(), 0).await;
    res?;
    file.close().await
}

/// Copies the contents of `from` to `to`, creating or truncating `to`; gives the byte count.
///
/// Four chunks of 128 KiB are in flight at once: each of four workers reads a chunk and
/// writes it at the same offset, then takes the next. A created `to` gets `from`'s
/// permission bits (less the umask); an existing `to` keeps its own (this would need
/// `fchmod(2)`, which io_uring does not have).
pub async fn copy(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<u64> {
    let src = File::open(from).await?;
    let meta = src.metadata().await?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "copy: the source is not a regular file",
        ));
    }
    let dst = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(meta.mode() & 0o7777)
        .open(to)
        .await?;
    let next = Cell::new(0u64);
    let eof = Cell::new(false);
    let worker = || async {
        let mut buf: Vec<u8> = Vec::with_capacity(COPY_CHUNK);
        let mut copied = 0u64;
        while !eof.get() {
            let off = next.get();
            next.set(off + COPY_CHUNK as u64);
            buf.clear();
            // Fill the chunk; a short result means the end of the file.
            while buf.len() < COPY_CHUNK {
                let len = buf.len();
                let (res, slice) = src
                    .read_at(buf.slice(len..COPY_CHUNK), off + len as u64)
                    .await;
                buf = slice.into_inner();
                match res {
                    Ok(0) => {
                        eof.set(true);
                        break;
                    }
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        eof.set(true);
                        return Err(e);
                    }
                }
            }
            if buf.is_empty() {
                break;
            }
            let n = buf.len() as u64;
            let (res, back) = dst.write_all_at(buf, off).await;
            buf = back;
            if let Err(e) = res {
                eof.set(true);
                return Err(e);
            }
            copied += n;
        }
        Ok::<u64, io::Error>(copied)
    };
    let results = futures::future::join_all((0..COPY_DEPTH).map(|_| worker())).await;
    let mut total = 0;
    for r in results {
        total += r?;
    }
    src.close().await?;
    dst.close().await?;
    Ok(total)
}

/// Runs `f` on the runtime's blocking pool; its error gets `what` as context.
pub(crate) async fn blocking<T, F>(what: String, f: F) -> io::Result<T>
where
    F: FnOnce() -> io::Result<T> + Send + 'static,
    T: Send + 'static,
{
    match runtime::spawn_blocking(f).await {
        Ok(res) => res.map_err(|e| error_context(e, what)),
        Err(e) => Err(io::Error::other(format!(
            "{what}: the blocking pool lost the job: {e}"
        ))),
    }
}

/// Reads the whole file (through the ring, as [`read`]) as UTF-8; bytes that are not
/// UTF-8 are `InvalidData`, naming the path.
pub async fn read_to_string(path: impl AsRef<Path>) -> io::Result<String> {
    let path = path.as_ref();
    let bytes = read(path).await?;
    String::from_utf8(bytes).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "read_to_string {}: not UTF-8: {}",
                path.display(),
                e.utf8_error()
            ),
        )
    })
}

/// Whether `path` exists, following symlinks (a `statx` through the ring): `Ok(false)` for
/// a missing path or a dangling symlink, an error for anything else that stops the kernel
/// from telling (a permission denied on a parent directory, say).
pub async fn try_exists(path: impl AsRef<Path>) -> io::Result<bool> {
    let path = path.as_ref();
    match metadata(path).await {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// The absolute path `path` names, with every symlink, `.` and `..` resolved
/// (`realpath(3)`); the path must exist. Runs on the blocking pool: io_uring has no op
/// for it.
pub async fn canonicalize(path: impl AsRef<Path>) -> io::Result<PathBuf> {
    let path = path.as_ref().to_path_buf();
    let what = format!("canonicalize {}", path.display());
    blocking(what, move || std::fs::canonicalize(&path)).await
}

/// The target a symbolic link stores, as stored (`readlinkat(2)`); not a symlink is
/// `InvalidInput` (`EINVAL`). Runs on the blocking pool: io_uring has no op for it.
pub async fn read_link(path: impl AsRef<Path>) -> io::Result<PathBuf> {
    let path = path.as_ref().to_path_buf();
    let what = format!("read_link {}", path.display());
    blocking(what, move || std::fs::read_link(&path)).await
}

/// Sets the permission bits of `path`, following symlinks (`fchmodat(2)`). Runs on the
/// blocking pool: io_uring has no op for it.
pub async fn set_permissions(path: impl AsRef<Path>, perm: Permissions) -> io::Result<()> {
    let path = path.as_ref().to_path_buf();
    let what = format!("set_permissions {}", path.display());
    blocking(what, move || std::fs::set_permissions(&path, perm)).await
}
