//! Socket addresses the kernel reads or writes.
//!
//! [`SockAddrBuf`] is a `sockaddr_storage` and its length, always kept in a `Box` by the ops
//! that hand it to the kernel: `connect(2)` and `sendmsg(2)` read it, `accept4(2)` and
//! `recvmsg(2)` write the peer's address and length into it. The box keeps both at one
//! address while the op future moves. It holds any family; [`FromSockAddr`] turns what the
//! kernel wrote into the address type of the socket (IP or Unix). Name resolution is in
//! `resolve`.

use std::io;
use std::mem;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::ptr;

use socket2::{SockAddr, SockAddrStorage};

/// The size of a `sockaddr_storage`: room for an address of any family.
const STORAGE_LEN: usize = mem::size_of::<libc::sockaddr_storage>();

/// An address type that ops give back from the `sockaddr` the kernel wrote (`accept4(2)`,
/// `recvmsg(2)`).
pub(crate) trait FromSockAddr: Sized + 'static {
    /// The address in `buf`; `InvalidData` if it is of another family.
    fn from_sockaddr_buf(buf: &SockAddrBuf) -> io::Result<Self>;
}

impl FromSockAddr for SocketAddr {
    fn from_sockaddr_buf(buf: &SockAddrBuf) -> io::Result<SocketAddr> {
        buf.to_socket_addr()
    }
}

/// A `sockaddr_storage` and its length (see the module documentation).
pub(crate) struct SockAddrBuf {
    storage: libc::sockaddr_storage,
    len: libc::socklen_t,
}

impl SockAddrBuf {
    /// Room for any address, for the kernel to fill (accept).
    pub(crate) fn empty() -> Box<SockAddrBuf> {
        Box::new(SockAddrBuf {
            // SAFETY: sockaddr_storage is plain old data; all zeroes is a valid value.
            storage: unsafe { mem::zeroed() },
            len: mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t,
        })
    }

    /// `addr` in the kernel's layout (`sockaddr_in` or `sockaddr_in6`).
    pub(crate) fn new(addr: SocketAddr) -> Box<SockAddrBuf> {
        let mut buf = SockAddrBuf::empty();
        let ptr: *mut libc::sockaddr_storage = &mut buf.storage;
        match addr {
            SocketAddr::V4(a) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: a.port().to_be(),
                    sin_addr: libc::in_addr {
                        s_addr: u32::from_ne_bytes(a.ip().octets()),
                    },
                    sin_zero: [0; 8],
                };
                // SAFETY: sockaddr_storage is larger than, and aligned for, every sockaddr.
                unsafe { ptr.cast::<libc::sockaddr_in>().write(sin) };
                buf.len = mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            }
            SocketAddr::V6(a) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: a.port().to_be(),
                    sin6_flowinfo: a.flowinfo(),
                    sin6_addr: libc::in6_addr {
                        s6_addr: a.ip().octets(),
                    },
                    sin6_scope_id: a.scope_id(),
                };
                // SAFETY: sockaddr_storage is larger than, and aligned for, every sockaddr.
                unsafe { ptr.cast::<libc::sockaddr_in6>().write(sin6) };
                buf.len = mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t;
            }
        }
        buf
    }

    /// A copy of `addr`, of any family (a Unix path, say), for the kernel to read.
    pub(crate) fn from_sockaddr(addr: &SockAddr) -> Box<SockAddrBuf> {
        let mut buf = SockAddrBuf::empty();
        let len = (addr.len() as usize).min(STORAGE_LEN);
        // SAFETY: `addr` holds `len` initialised bytes (its length, at most a storage's size)
        // and `buf.storage` has room for a storage's size; the two do not overlap.
        unsafe {
            ptr::copy_nonoverlapping(
                addr.as_ptr().cast::<u8>(),
                ptr::addr_of_mut!(buf.storage).cast::<u8>(),
                len,
            )
        };
        buf.len = len as libc::socklen_t;
        buf
    }

    /// The address as socket2's [`SockAddr`], of whatever family the kernel wrote.
    pub(crate) fn to_sockaddr(&self) -> SockAddr {
        let mut storage = SockAddrStorage::zeroed();
        // SAFETY: `sockaddr_storage` is one of the platform's sockaddr types (the largest).
        let view = unsafe { storage.view_as::<libc::sockaddr_storage>() };
        *view = self.storage;
        let len = (self.len as usize).min(STORAGE_LEN) as libc::socklen_t;
        // SAFETY: the storage holds an address of `len` bytes (as the kernel or
        // `from_sockaddr` wrote it), and `len` is at most the storage's size.
        unsafe { SockAddr::new(storage, len) }
    }

    /// Sets the length, to what the kernel reported in a `msghdr`'s `msg_namelen`.
    pub(crate) fn set_len(&mut self, len: libc::socklen_t) {
        self.len = len.min(STORAGE_LEN as libc::socklen_t);
    }

    /// The address, for the kernel to read.
    pub(crate) fn as_ptr(&self) -> *const libc::sockaddr {
        (&self.storage as *const libc::sockaddr_storage).cast()
    }

    /// The address, for the kernel to write.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut libc::sockaddr {
        (&mut self.storage as *mut libc::sockaddr_storage).cast()
    }

    /// The length of the address.
    pub(crate) fn len(&self) -> libc::socklen_t {
        self.len
    }

    /// The length, for the kernel to write (in: the room; out: the address's length).
    pub(crate) fn len_mut_ptr(&mut self) -> *mut libc::socklen_t {
        &mut self.len
    }

    /// The address the kernel wrote; `InvalidData` for a family other than IPv4 or IPv6.
    pub(crate) fn to_socket_addr(&self) -> io::Result<SocketAddr> {
        let len = self.len as usize;
        match i32::from(self.storage.ss_family) {
            libc::AF_INET if len >= mem::size_of::<libc::sockaddr_in>() => {
                // SAFETY: the family says the storage holds a sockaddr_in, and the storage is
                // aligned for it.
                let sin = unsafe { &*self.as_ptr().cast::<libc::sockaddr_in>() };
                let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
                Ok(SocketAddrV4::new(ip, u16::from_be(sin.sin_port)).into())
            }
            libc::AF_INET6 if len >= mem::size_of::<libc::sockaddr_in6>() => {
                // SAFETY: the family says the storage holds a sockaddr_in6, and the storage
                // is aligned for it.
                let sin6 = unsafe { &*self.as_ptr().cast::<libc::sockaddr_in6>() };
                let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
                let port = u16::from_be(sin6.sin6_port);
                Ok(SocketAddrV6::new(ip, port, sin6.sin6_flowinfo, sin6.sin6_scope_id).into())
            }
            family => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("unexpected socket address (family {family}, {len} bytes)"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_v4_and_v6() {
        for s in ["127.0.0.1:8080", "[::1]:443", "[fe80::1%2]:1"] {
            let addr: SocketAddr = s.parse().unwrap();
            assert_eq!(SockAddrBuf::new(addr).to_socket_addr().unwrap(), addr);
        }
    }

    #[test]
    fn sockaddr_round_trip_keeps_family_and_length() {
        let unix = SockAddr::unix("/tmp/some.sock").unwrap();
        let back = SockAddrBuf::from_sockaddr(&unix).to_sockaddr();
        assert_eq!(back, unix);
        let ip: SocketAddr = "[::1]:9".parse().unwrap();
        let buf = SockAddrBuf::from_sockaddr(&SockAddr::from(ip));
        assert_eq!(buf.to_socket_addr().unwrap(), ip);
    }

    #[test]
    fn empty_is_unknown_family() {
        let err = SockAddrBuf::empty().to_socket_addr().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }
}
