//! `SharedFd`: a file descriptor shared by its owner (a socket, a file) and the ops it has
//! in flight.
//!
//! # Invariant
//! An op that names an fd in its SQE holds a [`SharedFd`] clone in its data. The op data
//! lives until the kernel's final CQE (in the op future, or in the driver's ignored slot once
//! the future is dropped), so the fd is closed only after the kernel is done with it, and its
//! number cannot be reused for another file while the SQE still waits to be submitted. `Rc`
//! suffices: an fd's owner and its ops stay on one core.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::rc::Rc;

/// A reference-counted fd, closed (once) when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct SharedFd(Rc<OwnedFd>);

impl SharedFd {
    /// Takes ownership of `fd`.
    pub fn new(fd: OwnedFd) -> SharedFd {
        SharedFd(Rc::new(fd))
    }

    /// The raw fd, for an SQE.
    pub fn raw(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// Whether `self` and `other` are clones of one fd.
    pub fn same(&self, other: &SharedFd) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }

    /// The fd itself when this is the last clone; otherwise `self` back (an op dropped in
    /// flight still holds a clone until its CQE arrives).
    pub fn try_unwrap(self) -> Result<OwnedFd, SharedFd> {
        Rc::try_unwrap(self.0).map_err(SharedFd)
    }

    /// The fd itself when this is the last clone; otherwise a duplicate
    /// (`F_DUPFD_CLOEXEC`) of it.
    pub fn into_owned(self) -> io::Result<OwnedFd> {
        match Rc::try_unwrap(self.0) {
            Ok(fd) => Ok(fd),
            Err(rc) => rc.try_clone(),
        }
    }
}

impl AsFd for SharedFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

impl AsRawFd for SharedFd {
    fn as_raw_fd(&self) -> RawFd {
        self.raw()
    }
}
