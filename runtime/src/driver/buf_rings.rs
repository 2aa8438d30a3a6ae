//! Provided-buffer rings: registering, reading the kernel's head, unregistering, on
//! either backend (`backend::Ring`; the readiness backend plays the ring in user space,
//! `readiness::pbuf`).

use std::io;

use super::Driver;

impl Driver {
    /// Registers a provided-buffer ring under `bgid`, with `flags` (`IOU_PBUF_RING_*`).
    ///
    /// # Safety
    /// `addr` points to `entries` page-aligned `io_uring_buf`s that stay valid until
    /// `unregister_buf_ring(bgid)` or the ring's end.
    pub(crate) unsafe fn register_buf_ring(
        &mut self,
        addr: u64,
        entries: u16,
        bgid: u16,
        flags: u16,
    ) -> io::Result<()> {
        if !self
            .features
            .profile
            .is_none_or(|p| p.takes_pbuf_flags(flags))
        {
            // A flag a kernel profile's release lacks: refused as that kernel refuses it.
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.kernel.register_buf_ring(addr, entries, bgid, flags) }
    }

    /// The kernel's head of provided-buffer ring `bgid` (`IORING_REGISTER_PBUF_STATUS`,
    /// Linux 6.8; on the readiness backend, the head it keeps): the entries before it were
    /// picked, those from it to the tail are free.
    pub(crate) fn buf_ring_head(&self, bgid: u16) -> io::Result<u16> {
        self.kernel.buf_ring_head(bgid, self.features.profile)
    }

    /// Unregisters a provided-buffer ring; the kernel picks no buffer from it afterwards.
    /// On an error the kernel may still pick from it: the caller must keep its memory.
    pub(crate) fn unregister_buf_ring(&mut self, bgid: u16) -> io::Result<()> {
        self.kernel.unregister_buf_ring(bgid)
    }
}
