//! Unix socket addresses: a path, an abstract name (Linux) or unnamed. See `unix(7)`.
//!
//! A [`SocketAddr`] holds the `sockaddr_un` and its length as the kernel reads and writes
//! them. Paths are checked before any system call: an empty path, a path with an interior
//! NUL byte or one too long for `sun_path` (107 bytes and the terminating NUL) is
//! `InvalidInput`, with the path in the message.

use std::ffi::OsStr;
use std::fmt;
use std::io;
use std::mem;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use socket2::SockAddr;

use crate::sys::sockaddr::{FromSockAddr, SockAddrBuf};

/// Where `sun_path` starts in a `sockaddr_un` (after `sun_family`).
const PATH_OFFSET: usize = mem::offset_of!(libc::sockaddr_un, sun_path);
/// The size of `sun_path`.
const SUN_PATH_LEN: usize = mem::size_of::<libc::sockaddr_un>() - PATH_OFFSET;

/// The address of a Unix socket: a filesystem path, an abstract name or unnamed.
///
/// Sockets made by `pair()` or not bound (`UnixDatagram::unbound`, a connecting stream)
/// are unnamed. Abstract names (Linux) live outside the filesystem: no file is made and
/// nothing needs removing.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SocketAddr {
    addr: SockAddr,
}

/// What a `sun_path` holds.
enum Kind<'a> {
    Unnamed,
    Pathname(&'a Path),
    Abstract(&'a [u8]),
}

impl SocketAddr {
    /// The address of the filesystem path `path`.
    ///
    /// `InvalidInput` (with the path in the message) if the path is empty, has a NUL byte,
    /// or is longer than the 107 bytes `sun_path` holds.
    pub fn from_pathname(path: impl AsRef<Path>) -> io::Result<SocketAddr> {
        let path = path.as_ref();
        let bytes = path.as_os_str().as_bytes();
        let problem = if bytes.is_empty() {
            "is empty".to_string()
        } else if bytes.contains(&0) {
            "contains a NUL byte".to_string()
        } else if bytes.len() >= SUN_PATH_LEN {
            format!(
                "is {} bytes long; a Unix socket path holds at most {}",
                bytes.len(),
                SUN_PATH_LEN - 1
            )
        } else {
            return Ok(SocketAddr {
                addr: SockAddr::unix(path)?,
            });
        };
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("Unix socket path {path:?} {problem}"),
        ))
    }

    /// The abstract address `name` (Linux: no file; the name may hold any bytes, NULs too).
    ///
    /// `InvalidInput` if the name is longer than 107 bytes.
    pub fn from_abstract_name(name: impl AsRef<[u8]>) -> io::Result<SocketAddr> {
        let name = name.as_ref();
        if name.len() >= SUN_PATH_LEN {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "abstract Unix socket name \"{}\" is {} bytes long; it holds at most {}",
                    name.escape_ascii(),
                    name.len(),
                    SUN_PATH_LEN - 1
                ),
            ));
        }
        let mut bytes = Vec::with_capacity(name.len() + 1);
        bytes.push(0);
        bytes.extend_from_slice(name);
        Ok(SocketAddr {
            addr: SockAddr::unix(OsStr::from_bytes(&bytes))?,
        })
    }

    /// The unnamed address (what an unbound socket has).
    fn unnamed() -> SocketAddr {
        SocketAddr {
            addr: SockAddr::unix("").expect("the empty path always fits"),
        }
    }

    /// The address in `addr` (from `getsockname`, `accept` or `recvmsg`); `InvalidData` for
    /// another family. A zero length (some kernels' way to say "unnamed") is unnamed.
    pub(crate) fn from_sockaddr(addr: SockAddr) -> io::Result<SocketAddr> {
        if addr.len() == 0 {
            return Ok(SocketAddr::unnamed());
        }
        if i32::from(addr.family()) != libc::AF_UNIX {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("not a Unix socket address (family {})", addr.family()),
            ));
        }
        Ok(SocketAddr { addr })
    }

    /// The address for a system call through socket2.
    pub(crate) fn as_sockaddr(&self) -> &SockAddr {
        &self.addr
    }

    /// A boxed copy of the address, for an op to hand to the kernel.
    pub(crate) fn to_buf(&self) -> Box<SockAddrBuf> {
        SockAddrBuf::from_sockaddr(&self.addr)
    }

    /// The bytes of `sun_path` the address's length covers.
    fn sun_path(&self) -> &[u8] {
        let len = (self.addr.len() as usize).clamp(PATH_OFFSET, PATH_OFFSET + SUN_PATH_LEN);
        let start = self.addr.as_ptr().cast::<u8>().wrapping_add(PATH_OFFSET);
        // SAFETY: the address is a `sockaddr_storage` (larger than a `sockaddr_un`) whose
        // first `len` bytes are initialised, and `PATH_OFFSET..len` lies within them.
        unsafe { std::slice::from_raw_parts(start, len - PATH_OFFSET) }
    }

    fn kind(&self) -> Kind<'_> {
        match self.sun_path() {
            [] => Kind::Unnamed,
            [0, name @ ..] => Kind::Abstract(name),
            path => {
                // The kernel may count the terminating NUL (and, for some callers, more).
                let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
                Kind::Pathname(Path::new(OsStr::from_bytes(&path[..end])))
            }
        }
    }

    /// The path, if this is a filesystem address.
    pub fn as_pathname(&self) -> Option<&Path> {
        match self.kind() {
            Kind::Pathname(p) => Some(p),
            _ => None,
        }
    }

    /// The name (without the leading NUL), if this is an abstract address.
    pub fn as_abstract_name(&self) -> Option<&[u8]> {
        match self.kind() {
            Kind::Abstract(name) => Some(name),
            _ => None,
        }
    }

    /// Whether the address is unnamed (an unbound socket, or one of a `pair()`).
    pub fn is_unnamed(&self) -> bool {
        matches!(self.kind(), Kind::Unnamed)
    }
}

impl FromSockAddr for SocketAddr {
    fn from_sockaddr_buf(buf: &SockAddrBuf) -> io::Result<SocketAddr> {
        SocketAddr::from_sockaddr(buf.to_sockaddr())
    }
}

impl fmt::Debug for SocketAddr {
    /// As std's: `"/run/app.sock" (pathname)`, `"name" (abstract)`, `(unnamed)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            Kind::Unnamed => f.write_str("(unnamed)"),
            Kind::Pathname(p) => write!(f, "{p:?} (pathname)"),
            Kind::Abstract(name) => write!(f, "\"{}\" (abstract)", name.escape_ascii()),
        }
    }
}

impl fmt::Display for SocketAddr {
    /// The path; `@name` for an abstract name (as `ss(8)` writes it); `(unnamed)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            Kind::Unnamed => f.write_str("(unnamed)"),
            Kind::Pathname(p) => write!(f, "{}", p.display()),
            Kind::Abstract(name) => write!(f, "@{}", name.escape_ascii()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pathname_round_trip() {
        let addr = SocketAddr::from_pathname("/tmp/a.sock").unwrap();
        assert_eq!(addr.as_pathname(), Some(Path::new("/tmp/a.sock")));
        assert!(!addr.is_unnamed());
        assert_eq!(addr.to_string(), "/tmp/a.sock");
        let back = SocketAddr::from_sockaddr_buf(&addr.to_buf()).unwrap();
        assert_eq!(back, addr);
    }

    #[test]
    fn longest_path_fits_and_one_more_does_not() {
        let longest = "x".repeat(SUN_PATH_LEN - 1);
        let addr = SocketAddr::from_pathname(&longest).unwrap();
        assert_eq!(addr.as_pathname(), Some(Path::new(&longest)));
        let long = "x".repeat(SUN_PATH_LEN);
        let err = SocketAddr::from_pathname(&long).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains(&long), "{err}");
    }

    #[test]
    fn bad_paths_are_invalid_input() {
        for bad in ["", "a\0b"] {
            let err = SocketAddr::from_pathname(bad).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
    }

    #[test]
    fn abstract_and_unnamed() {
        let addr = SocketAddr::from_abstract_name(b"svc\0x").unwrap();
        assert_eq!(addr.as_abstract_name(), Some(&b"svc\0x"[..]));
        assert_eq!(addr.as_pathname(), None);
        assert_eq!(format!("{addr:?}"), "\"svc\\x00x\" (abstract)");
        assert!(SocketAddr::from_abstract_name([b'n'; SUN_PATH_LEN]).is_err());
        let unnamed = SocketAddr::unnamed();
        assert!(unnamed.is_unnamed());
        assert_eq!(format!("{unnamed:?}"), "(unnamed)");
    }

    #[test]
    fn other_families_are_invalid_data() {
        let ip: std::net::SocketAddr = "127.0.0.1:1".parse().unwrap();
        let err = SocketAddr::from_sockaddr(ip.into()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }
}
