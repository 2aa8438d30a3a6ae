//! Context for setup errors: "connect to 127.0.0.1:1: Connection refused".
//!
//! Setup and address errors (resolve, bind, connect) get the operation and the address in
//! their message and keep their [`io::ErrorKind`]; the kernel's error stays reachable as the
//! error's `source()`, so its `raw_os_error()` is not lost. Data-path errors (read, write,
//! accept) are returned unwrapped, so callers can match `raw_os_error()` directly.

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

/// Wraps `err` with `what` ("bind to [::1]:80"), keeping its kind.
pub(crate) fn context(err: io::Error, what: impl fmt::Display) -> io::Error {
    io::Error::new(
        err.kind(),
        Context {
            what: what.to_string(),
            source: err,
        },
    )
}
