//! Context for setup and path errors: "connect to 127.0.0.1:1: Connection refused".
//!
//! Setup, address and path errors get the operation and its subject in their message and
//! keep their [`io::ErrorKind`]; the kernel's error stays reachable as the error's
//! `source()`, so its `raw_os_error()` is not lost. Data-path errors (a read, a write) are
//! returned unwrapped, so callers can match `raw_os_error()` directly.
//!
//! Public as [`runtime::ext::error_context`](crate::ext::error_context).

use std::error::Error;
use std::fmt;
use std::io;

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

/// Wraps `err` with `what` (`"bind to [::1]:80"`, `"open /tmp/x"`), keeping its kind; the
/// original error is the result's `source()`.
///
/// ```
/// use std::io;
/// use runtime::ext::error_context;
///
/// let e = error_context(io::Error::from_raw_os_error(libc::ENOENT), "open /nope");
/// assert_eq!(e.kind(), io::ErrorKind::NotFound);
/// assert!(e.to_string().starts_with("open /nope: "));
/// ```
pub fn context(err: io::Error, what: impl fmt::Display) -> io::Error {
    io::Error::new(
        err.kind(),
        Context {
            what: what.to_string(),
            source: err,
        },
    )
}
