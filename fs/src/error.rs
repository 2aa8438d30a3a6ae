//! Context for path errors: "open /tmp/x: No such file or directory (os error 2)".
//!
//! Path operations (open, statx by path, unlink, mkdir, rename, link, symlink) put the
//! operation and the path in their message and keep their [`io::ErrorKind`]; the kernel's
//! error stays reachable as the error's `source()`, so its `raw_os_error()` is not lost.
//! Data-path errors (read, write, sync, statx on an open file) are returned unwrapped, so
//! callers can match `raw_os_error()` directly.

use std::error::Error;
use std::ffi::CString;
use std::fmt;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// An error with what was being done when it happened.
#[derive(Debug)]
struct Context {
    what: String,
    source: io::Error,
}

impl fmt::Display for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.what, self.source)
    }
}

impl Error for Context {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.source)
    }
}

/// Wraps `err` with `what` ("open /tmp/x"), keeping its kind.
pub(crate) fn context(err: io::Error, what: impl fmt::Display) -> io::Error {
    io::Error::new(
        err.kind(),
        Context {
            what: what.to_string(),
            source: err,
        },
    )
}

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
