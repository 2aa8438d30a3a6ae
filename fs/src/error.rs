//! Context for path errors: "open /tmp/x: No such file or directory (os error 2)".
//!
//! Path operations (open, statx by path, unlink, mkdir, rename, link, symlink) put the
//! operation and the path in their message and keep their [`io::ErrorKind`]; the kernel's
//! error stays reachable as the error's `source()`, so its `raw_os_error()` is not lost.
//! Data-path errors (read, write, sync, statx on an open file) are returned unwrapped, so
//! callers can match `raw_os_error()` directly.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

pub(crate) use runtime::ext::error_context;

/// The path as the C string an SQE points at; a path with an interior NUL byte is
/// `InvalidInput` (the kernel could never see it whole), naming the operation and path.
pub(crate) fn cpath(path: &Path, op: &str) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{op} {}: path contains an interior NUL byte",
                path.display()
            ),
        )
    })
}
