//! [`Metadata`]: what `statx(2)` says about a file, as std's `Metadata` says it.
//!
//! Built from the `struct statx` an `IORING_OP_STATX` filled, by [`File::metadata`],
//! [`metadata`](crate::metadata()) (which follows symlinks) and
//! [`symlink_metadata`](crate::symlink_metadata) (which does not). Times come from the
//! kernel's `statx_timestamp`s; the birth time is reported only where the filesystem keeps
//! one (the kernel clears `STATX_BTIME` in the mask otherwise).
//!
//! [`File::metadata`]: crate::File::metadata

use std::fs::Permissions;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Metadata of a file: its type, size, permissions, times and inode numbers.
///
/// ```
/// let rt = runtime::Runtime::new()?;
/// rt.block_on(async {
///     let meta = corering_fs::metadata("/").await?;
///     assert!(meta.is_dir());
///     assert!(!meta.is_symlink());
///     Ok::<(), std::io::Error>(())
/// })?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Metadata {
    mask: u32,
    mode: u32,
    len: u64,
    ino: u64,
    dev: u64,
    rdev: u64,
    nlink: u64,
    uid: u32,
    gid: u32,
    blksize: u64,
    blocks: u64,
    atime: (i64, u32),
    mtime: (i64, u32),
    ctime: (i64, u32),
    btime: (i64, u32),
    dio_mem_align: u32,
    dio_offset_align: u32,
}

/// The type of a file: regular file, directory, symlink or one of the special kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileType(u32);

impl FileType {
    /// The type std's `FileType` names (from a directory listing).
    pub(crate) fn from_std(t: std::fs::FileType) -> FileType {
        use std::os::unix::fs::FileTypeExt;
        let kind = if t.is_file() {
            libc::S_IFREG
        } else if t.is_dir() {
            libc::S_IFDIR
        } else if t.is_symlink() {
            libc::S_IFLNK
        } else if t.is_fifo() {
            libc::S_IFIFO
        } else if t.is_socket() {
            libc::S_IFSOCK
        } else if t.is_block_device() {
            libc::S_IFBLK
        } else if t.is_char_device() {
            libc::S_IFCHR
        } else {
            0
        };
        FileType(kind)
    }

    fn is(self, kind: libc::mode_t) -> bool {
        self.0 & libc::S_IFMT == kind
    }

    /// Whether this is a regular file.
    pub fn is_file(self) -> bool {
        self.is(libc::S_IFREG)
    }

    /// Whether this is a directory.
    pub fn is_dir(self) -> bool {
        self.is(libc::S_IFDIR)
    }

    /// Whether this is a symbolic link (only [`symlink_metadata`](crate::symlink_metadata)
    /// sees one).
    pub fn is_symlink(self) -> bool {
        self.is(libc::S_IFLNK)
    }

    /// Whether this is a named pipe.
    pub fn is_fifo(self) -> bool {
        self.is(libc::S_IFIFO)
    }

    /// Whether this is a Unix domain socket.
    pub fn is_socket(self) -> bool {
        self.is(libc::S_IFSOCK)
    }

    /// Whether this is a block device.
    pub fn is_block_device(self) -> bool {
        self.is(libc::S_IFBLK)
    }

    /// Whether this is a character device.
    pub fn is_char_device(self) -> bool {
        self.is(libc::S_IFCHR)
    }
}

fn ts(t: &libc::statx_timestamp) -> (i64, u32) {
    (t.tv_sec, t.tv_nsec)
}

/// Converts seconds and nanoseconds since the epoch (seconds may be negative).
fn system_time((sec, nsec): (i64, u32)) -> io::Result<SystemTime> {
    let base = if sec >= 0 {
        UNIX_EPOCH.checked_add(Duration::from_secs(sec as u64))
    } else {
        UNIX_EPOCH.checked_sub(Duration::from_secs(sec.unsigned_abs()))
    };
    base.and_then(|t| t.checked_add(Duration::from_nanos(u64::from(nsec))))
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "file time out of range"))
}

impl Metadata {
    /// Copies what the kernel wrote into a `struct statx`.
    pub(crate) fn from_statx(stx: &libc::statx) -> Metadata {
        Metadata {
            mask: stx.stx_mask,
            mode: u32::from(stx.stx_mode),
            len: stx.stx_size,
            ino: stx.stx_ino,
            dev: libc::makedev(stx.stx_dev_major, stx.stx_dev_minor),
            rdev: libc::makedev(stx.stx_rdev_major, stx.stx_rdev_minor),
            nlink: u64::from(stx.stx_nlink),
            uid: stx.stx_uid,
            gid: stx.stx_gid,
            blksize: u64::from(stx.stx_blksize),
            blocks: stx.stx_blocks,
            atime: ts(&stx.stx_atime),
            mtime: ts(&stx.stx_mtime),
            ctime: ts(&stx.stx_ctime),
            btime: ts(&stx.stx_btime),
            dio_mem_align: stx.stx_dio_mem_align,
            dio_offset_align: stx.stx_dio_offset_align,
        }
    }

    /// The alignments `O_DIRECT` I/O needs (memory, file offset and length), when the kernel
    /// reported them (`STATX_DIOALIGN`, Linux 6.1) and the file supports direct I/O.
    pub(crate) fn dio_align(&self) -> Option<(u32, u32)> {
        (self.mask & libc::STATX_DIOALIGN != 0
            && self.dio_mem_align != 0
            && self.dio_offset_align != 0)
            .then_some((self.dio_mem_align, self.dio_offset_align))
    }

    /// The file's type.
    pub fn file_type(&self) -> FileType {
        FileType(self.mode)
    }

    /// Whether this is a regular file.
    pub fn is_file(&self) -> bool {
        self.file_type().is_file()
    }

    /// Whether this is a directory.
    pub fn is_dir(&self) -> bool {
        self.file_type().is_dir()
    }

    /// Whether this is a symbolic link (only [`symlink_metadata`](crate::symlink_metadata)
    /// sees one).
    pub fn is_symlink(&self) -> bool {
        self.file_type().is_symlink()
    }

    /// The size of the file in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file is empty (zero bytes long).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The permissions, as std's [`Permissions`] (whose `mode()` is the whole `st_mode`, as
    /// std's metadata gives it).
    pub fn permissions(&self) -> Permissions {
        Permissions::from_mode(self.mode)
    }

    /// The whole `st_mode`: file type bits and permission bits.
    pub fn mode(&self) -> u32 {
        self.mode
    }

    /// The last modification time.
    pub fn modified(&self) -> io::Result<SystemTime> {
        system_time(self.mtime)
    }

    /// The last access time.
    pub fn accessed(&self) -> io::Result<SystemTime> {
        system_time(self.atime)
    }

    /// The last status change time (`ctime`).
    pub fn changed(&self) -> io::Result<SystemTime> {
        system_time(self.ctime)
    }

    /// The creation (birth) time; `Unsupported` where the filesystem does not record one.
    pub fn created(&self) -> io::Result<SystemTime> {
        if self.mask & libc::STATX_BTIME == 0 {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "creation time is not available on this filesystem",
            ));
        }
        system_time(self.btime)
    }

    /// The inode number.
    pub fn ino(&self) -> u64 {
        self.ino
    }

    /// The id of the device holding the file (`st_dev`).
    pub fn dev(&self) -> u64 {
        self.dev
    }

    /// The device id, for a device special file (`st_rdev`).
    pub fn rdev(&self) -> u64 {
        self.rdev
    }

    /// The number of hard links.
    pub fn nlink(&self) -> u64 {
        self.nlink
    }

    /// The owner's user id.
    pub fn uid(&self) -> u32 {
        self.uid
    }

    /// The owner's group id.
    pub fn gid(&self) -> u32 {
        self.gid
    }

    /// The preferred block size for I/O.
    pub fn blksize(&self) -> u64 {
        self.blksize
    }

    /// The number of 512-byte blocks allocated.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_before_and_after_the_epoch() {
        assert_eq!(system_time((0, 0)).unwrap(), UNIX_EPOCH);
        assert_eq!(
            system_time((1, 5)).unwrap(),
            UNIX_EPOCH + Duration::new(1, 5)
        );
        assert_eq!(
            system_time((-1, 500_000_000)).unwrap(),
            UNIX_EPOCH - Duration::from_millis(500)
        );
    }

    #[test]
    fn file_type_bits() {
        assert!(FileType(libc::S_IFREG | 0o644).is_file());
        assert!(FileType(libc::S_IFDIR | 0o755).is_dir());
        assert!(FileType(libc::S_IFLNK | 0o777).is_symlink());
        assert!(!FileType(libc::S_IFLNK).is_file());
    }
}
