//! The file descriptor shared by a [`File`](crate::File) and the ops it has in flight.
//!
//! # Invariant
//! An op that names a file's fd in its SQE holds a [`SharedFd`] clone in its data. The op
//! data lives until the kernel's final CQE (in the op future, or in the driver's ignored slot
//! once the future is dropped), so the fd is closed only after the kernel is done with it, and
//! its number cannot be reused for another file while the SQE still waits to be submitted.
//! `Rc` suffices: a file and its ops stay on one core.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::rc::Rc;

/// A reference-counted fd, closed (once) when the last clone is dropped.
#[derive(Debug, Clone)]
pub(crate) struct SharedFd(Rc<OwnedFd>);

impl SharedFd {
    /// Takes ownership of `fd`.
    pub(crate) fn new(fd: OwnedFd) -> SharedFd {
        SharedFd(Rc::new(fd))
    }

    /// The raw fd, for an SQE.
    pub(crate) fn raw(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// The fd itself when this is the last clone; otherwise `self` back (an op dropped in
    /// flight still holds a clone until its CQE arrives).
    pub(crate) fn try_unwrap(self) -> Result<OwnedFd, SharedFd> {
        Rc::try_unwrap(self.0).map_err(SharedFd)
    }
}

impl AsFd for SharedFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}
