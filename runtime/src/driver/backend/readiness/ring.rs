//! The readiness backend's side of the seam ([`Ring`]): what the driver asks of it, as of
//! the kernel's ring.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use super::super::{CqeSink, Enter, Ring};
use super::Readiness;
use crate::driver::kernel::Profile;
use crate::driver::sq::Sq;

impl Ring for Readiness {
    /// Carries out every queued SQE, then collects and waits (see `Readiness::enter_local`);
    /// the minimum wait is the kernel's and is ignored here.
    fn enter(&mut self, sq: &mut Sq, e: Enter) -> io::Result<u32> {
        self.enter_local(sq, e.min_complete, e.getevents, e.timeout)
    }

    /// Out of line, so that the io_uring arm of the dispatch stays as small as it was.
    #[inline(never)]
    fn reap(&mut self, sink: &mut impl CqeSink) -> bool {
        while let Some((ud, res, flags)) = self.cq.pop_front() {
            sink.cqe(ud, res, flags);
        }
        // Nothing overflows: the CQ is a growable queue.
        false
    }

    /// The epoll fd.
    fn ring_fd(&self) -> RawFd {
        self.epoll.as_raw_fd()
    }

    fn entered_as(&self) -> String {
        "the readiness backend (epoll)".to_string()
    }

    /// See [`pbuf`](super::pbuf). `Err`: the errno the kernel's registration would answer.
    unsafe fn register_buf_ring(
        &mut self,
        addr: u64,
        entries: u16,
        bgid: u16,
        flags: u16,
    ) -> io::Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.rings.register(addr, entries, bgid, flags) }
            .map_err(io::Error::from_raw_os_error)
    }

    /// The head this backend keeps; kernel profiles do not apply (there is no kernel ring).
    fn buf_ring_head(&self, bgid: u16, _profile: Option<Profile>) -> io::Result<u16> {
        self.rings
            .head(bgid)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))
    }

    fn unregister_buf_ring(&mut self, bgid: u16) -> io::Result<()> {
        if self.rings.unregister(bgid) {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(libc::ENOENT))
        }
    }

    /// Its number may name another file next: the backend forgets it (and takes it out of
    /// the epoll set).
    #[inline]
    fn release_fd(&mut self, fd: RawFd) {
        self.forget_fd(fd);
    }

    fn is_readiness(&self) -> bool {
        true
    }
}
