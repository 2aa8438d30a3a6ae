//! The io_uring backend: the kernel's ring, entered with `io_uring_enter(2)`, its CQ read in
//! place, its provided-buffer rings registered with `io_uring_register(2)`.
//!
//! Setup ([`Uring::start`]) asks for the best flags and features this kernel grants of
//! those the builder asks for (`setup::build_ring`, degraded flag by flag), probes the
//! opcodes (`kernel::OpProbe`, limited by a kernel profile) and what the ring was granted
//! (`probe::probe`), and sets a kernel profile's SQE gate on the SQ.
//!
//! Where the kernel has registered ring fds (`IORING_REGISTER_RING_FDS`, 5.18) the ring's
//! fd is registered at setup ([`register_ring_fd`]) and every enter names the registered
//! index with `IORING_ENTER_REGISTERED_RING`, which spares the kernel an fd lookup (and its
//! reference count) per enter. A registered index belongs to the thread that registered
//! it; the driver lives and enters on its core's thread only (it is `!Send`). The io-uring
//! crate remembers a registration only in one `Submitter`, which borrows the ring, so this
//! backend keeps the index itself. The ring's real fd stays open: other cores' MSG_RING
//! wakes name it.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use io_uring::{opcode, IoUring};

use super::{CqeSink, Enter, Kernel, Ring, Started};
use crate::driver::features::{bit as feature_bit, RingConfig};
use crate::driver::kernel::{self, Has, Profile, REGISTER_PBUF_STATUS};
use crate::driver::{probe, setup, sq};

/// `io_uring_enter(2)`'s flag to collect completions (and run deferred task work).
const IORING_ENTER_GETEVENTS: u32 = 1;
/// `io_uring_enter(2)`'s flag: the last argument is a `struct io_uring_getevents_arg`.
const IORING_ENTER_EXT_ARG: u32 = 1 << 3;
/// `io_uring_enter(2)`'s flag: the fd argument is an index of a registered ring fd.
const IORING_ENTER_REGISTERED_RING: u32 = 1 << 4;
/// `io_uring_register(2)` opcodes registering and unregistering ring fds (5.18).
const IORING_REGISTER_RING_FDS: libc::c_uint = 20;
const IORING_UNREGISTER_RING_FDS: libc::c_uint = 21;

/// `struct io_uring_rsrc_update` (include/uapi/linux/io_uring.h).
#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

/// `struct __kernel_timespec`.
#[repr(C)]
struct KernelTimespec {
    tv_sec: i64,
    tv_nsec: i64,
}

/// `struct io_uring_getevents_arg` (include/uapi/linux/io_uring.h): a wait's timeout and
/// minimum timeout (`min_wait_usec`, 6.12).
#[repr(C)]
struct GetEventsArg {
    sigmask: u64,
    sigmask_sz: u32,
    min_wait_usec: u32,
    ts: u64,
}

const _: () = assert!(std::mem::size_of::<RsrcUpdate>() == 16);
const _: () = assert!(std::mem::size_of::<GetEventsArg>() == 24);

/// One core's io_uring.
pub(crate) struct Uring {
    ring: IoUring,
    /// What `io_uring_enter(2)` is given as its fd: the ring's registered index (with
    /// `enter_flags` = `IORING_ENTER_REGISTERED_RING`), or the ring's fd (and 0).
    enter_fd: RawFd,
    enter_flags: u32,
}

impl Uring {
    /// Sets up an io_uring (best flags and features this kernel grants of those `config`
    /// asks for). Must be called on the thread that will drive the ring. `wake_fd` is the
    /// file a kernel profile sends socket commands to (see `kernel::Gate`).
    pub(crate) fn start(config: &RingConfig, wake_fd: RawFd) -> io::Result<Started> {
        // A kernel profile asks only for the flags its release has.
        let want = config
            .profile
            .map_or(config.flags, |p| p.limit_flags(config.flags));
        let (ring, flags) = setup::build_ring(want)?;
        let mut sq = sq::Sq::new(&ring)?;
        if let Some(profile) = config.profile {
            sq.set_gate(profile.gate(wake_fd));
        }
        let mut probe = io_uring::Probe::new();
        let probed = ring.submitter().register_probe(&mut probe).is_ok();
        let ops = kernel::OpProbe::new(probed.then_some(probe), config.profile);
        setup::check_required_ops(&ops)?;
        let skip_success_ok = ring.params().is_feature_skip_cqe_on_success();
        let msg_ring_ok = skip_success_ok && ops.supports(opcode::MsgRingData::CODE);
        // Registered last: nothing after it fails, so the registration is always undone by
        // `Uring`'s drop.
        let registered = if config.asks(feature_bit::REGISTERED_RING_FD) {
            register_ring_fd(ring.as_raw_fd()).ok()
        } else {
            None
        };
        let features = probe::probe(&ring, config, flags, &ops, registered.is_some());
        let (enter_fd, enter_flags) = match registered {
            Some(index) => (index as RawFd, IORING_ENTER_REGISTERED_RING),
            None => (ring.as_raw_fd(), 0),
        };
        let uring = Uring {
            ring,
            enter_fd,
            enter_flags,
        };
        Ok(Started {
            kernel: Kernel::Uring(uring),
            sq,
            flags,
            features,
            msg_ring_ok,
            skip_success_ok,
        })
    }
}

impl Ring for Uring {
    /// `io_uring_enter(2)` on this ring: through its registered index where it has one,
    /// else its fd; with a timeout or a minimum wait, as an extended wait
    /// (`IORING_ENTER_EXT_ARG`).
    #[inline]
    fn enter(&mut self, _sq: &mut sq::Sq, e: Enter) -> io::Result<u32> {
        let ts = e.timeout.map(|t| KernelTimespec {
            tv_sec: t.as_secs().min(i64::MAX as u64) as i64,
            tv_nsec: t.subsec_nanos() as i64,
        });
        let arg = (ts.is_some() || e.min_wait_usec != 0).then(|| GetEventsArg {
            sigmask: 0,
            sigmask_sz: 0,
            min_wait_usec: e.min_wait_usec,
            ts: ts.as_ref().map_or(0, |t| t as *const KernelTimespec as u64),
        });
        let mut flags = self.enter_flags;
        if e.getevents {
            flags |= IORING_ENTER_GETEVENTS;
        }
        let (argp, argsz) = match &arg {
            Some(a) => {
                flags |= IORING_ENTER_EXT_ARG;
                (
                    a as *const GetEventsArg as *const libc::c_void,
                    std::mem::size_of::<GetEventsArg>(),
                )
            }
            None => (std::ptr::null(), 0),
        };
        // SAFETY: `enter_fd` is this ring's fd, or its index registered by this thread (the
        // driver never leaves its thread) with the flag saying so; `argp` is null or points
        // at `arg` (whose `ts` is 0 or points at `ts`), both live across the call. The SQEs
        // the kernel reads point only at memory their ops own until their final CQE (the
        // driver's contract for every push).
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_uring_enter,
                self.enter_fd,
                e.to_submit,
                e.min_complete,
                flags,
                argp,
                argsz,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as u32)
        }
    }

    /// Hot path: one acquire of the CQ tail, one release of its head; the sink inlined.
    #[inline]
    fn reap(&mut self, sink: &mut impl CqeSink) -> bool {
        for cqe in self.ring.completion() {
            sink.cqe(cqe.user_data(), cqe.result(), cqe.flags());
        }
        self.ring.submission().cq_overflow()
    }

    fn ring_fd(&self) -> RawFd {
        self.ring.as_raw_fd()
    }

    fn entered_as(&self) -> String {
        if self.enter_flags & IORING_ENTER_REGISTERED_RING != 0 {
            format!("io_uring, entered as registered index {}", self.enter_fd)
        } else {
            "io_uring, entered as its fd".to_string()
        }
    }

    unsafe fn register_buf_ring(
        &mut self,
        addr: u64,
        entries: u16,
        bgid: u16,
        flags: u16,
    ) -> io::Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe {
            self.ring
                .submitter()
                .register_buf_ring_with_flags(addr, entries, bgid, flags)
        }
    }

    /// `IORING_REGISTER_PBUF_STATUS` (Linux 6.8).
    fn buf_ring_head(&self, bgid: u16, profile: Option<Profile>) -> io::Result<u16> {
        /// `struct io_uring_buf_status`.
        #[repr(C)]
        struct BufStatus {
            buf_group: u32,
            head: u32,
            resv: [u32; 8],
        }
        if !profile.is_none_or(|p| p.has(Has::Register(REGISTER_PBUF_STATUS))) {
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
                self.ring.as_raw_fd(),
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

    fn unregister_buf_ring(&mut self, bgid: u16) -> io::Result<()> {
        self.ring.submitter().unregister_buf_ring(bgid)
    }

    /// Nothing to do: the kernel keeps nothing per fd number.
    #[inline]
    fn release_fd(&mut self, _fd: RawFd) {}
}

impl Drop for Uring {
    fn drop(&mut self) {
        if self.enter_flags & IORING_ENTER_REGISTERED_RING != 0 {
            // The registration holds the ring open; undo it so closing the fd frees the
            // ring now rather than when this thread exits. On failure (never expected: the
            // index is ours) the ring is freed at thread exit instead.
            let _ = unregister_ring_fd(self.ring.as_raw_fd(), self.enter_fd as u32);
        }
    }
}

/// Registers ring `fd` with this thread's io_uring context (`IORING_REGISTER_RING_FDS`,
/// 5.18, at most 16 per thread): returns its index, for [`IORING_ENTER_REGISTERED_RING`].
fn register_ring_fd(fd: RawFd) -> io::Result<u32> {
    let mut up = RsrcUpdate {
        // Any free index.
        offset: u32::MAX,
        resv: 0,
        data: fd as u64,
    };
    // SAFETY: `up` is one valid `io_uring_rsrc_update`, live across the call; the kernel
    // reads it and writes the chosen index into its `offset`.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            fd,
            IORING_REGISTER_RING_FDS,
            &mut up as *mut RsrcUpdate,
            1u32,
        )
    };
    match r {
        1 => Ok(up.offset),
        r if r < 0 => Err(io::Error::last_os_error()),
        _ => Err(io::Error::other(
            "io_uring_register(RING_FDS) registered no fd",
        )),
    }
}

/// Undoes [`register_ring_fd`] (the registration holds a reference to the ring, which would
/// otherwise outlive its fd until the thread exits).
fn unregister_ring_fd(fd: RawFd, index: u32) -> io::Result<()> {
    let up = RsrcUpdate {
        offset: index,
        resv: 0,
        data: 0,
    };
    // SAFETY: `up` is one valid `io_uring_rsrc_update`, live across the call; the kernel
    // only reads it.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            fd,
            IORING_UNREGISTER_RING_FDS,
            &up as *const RsrcUpdate,
            1u32,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}
