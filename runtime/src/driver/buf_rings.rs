//! Provided-buffer rings: registering, reading the kernel's head, unregistering, on
//! either backend (the readiness backend plays the ring in user space, `readiness::pbuf`).

use std::io;

use super::kernel::{Has, REGISTER_PBUF_STATUS};
use super::{Driver, Kernel};

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
        let ring = match &mut self.kernel {
            Kernel::Uring(ring) => ring,
            Kernel::Readiness(rd) => {
                // SAFETY: forwarded from the caller.
                return unsafe { rd.register_buf_ring(addr, entries, bgid, flags) };
            }
        };
        // SAFETY: forwarded from the caller.
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(addr, entries, bgid, flags)
        }
    }

    /// The kernel's head of provided-buffer ring `bgid` (`IORING_REGISTER_PBUF_STATUS`,
    /// Linux 6.8): the entries before it were picked, those from it to the tail are free.
    pub(crate) fn buf_ring_head(&self, bgid: u16) -> io::Result<u16> {
        /// `struct io_uring_buf_status`.
        #[repr(C)]
        struct BufStatus {
            buf_group: u32,
            head: u32,
            resv: [u32; 8],
        }
        if let Kernel::Readiness(rd) = &self.kernel {
            return rd
                .buf_ring_head(bgid)
                .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT));
        }
        if !self
            .features
            .profile
            .is_none_or(|p| p.has(Has::Register(REGISTER_PBUF_STATUS)))
        {
            // A kernel profile's release before 6.8: as that kernel answers.
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let mut status = BufStatus {
            buf_group: u32::from(bgid),
            head: 0,
            resv: [0; 8],
        };
        // SAFETY: io_uring_register(2) with PBUF_STATUS reads and writes one
        // `io_uring_buf_status`, which `status` is, alive for the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_uring_register,
                self.ring_fd(),
                REGISTER_PBUF_STATUS,
                std::ptr::addr_of_mut!(status),
                1,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(status.head as u16)
    }

    /// Unregisters a provided-buffer ring; the kernel picks no buffer from it afterwards.
    /// On an error the kernel may still pick from it: the caller must keep its memory.
    pub(crate) fn unregister_buf_ring(&mut self, bgid: u16) -> io::Result<()> {
        match &mut self.kernel {
            Kernel::Uring(ring) => ring.submitter().unregister_buf_ring(bgid),
            Kernel::Readiness(rd) => {
                if rd.unregister_buf_ring(bgid) {
                    Ok(())
                } else {
                    Err(io::Error::from_raw_os_error(libc::ENOENT))
                }
            }
        }
    }
}
