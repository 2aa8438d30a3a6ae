//! Entering the kernel: `io_uring_enter(2)` to submit, to collect completions, and to wait,
//! and what the loop does about each error it returns ([`EnterError`]).
//!
//! Every enter goes through [`Driver::enter`], one raw syscall. Where the kernel has
//! registered ring fds (`IORING_REGISTER_RING_FDS`, 5.18) the driver registers its ring's fd
//! at setup ([`register_ring_fd`]) and enters with the registered index and
//! `IORING_ENTER_REGISTERED_RING`, which spares the kernel an fd lookup (and its reference
//! count) per enter. A registered index belongs to the thread that registered it; the
//! driver lives and enters on its core's thread only (it is `!Send`). The io-uring crate
//! remembers a registration only in one `Submitter`, which borrows the ring, so the driver
//! keeps the index itself. The ring's real fd stays open: other cores' MSG_RING wakes name it.

use std::io;
use std::os::fd::RawFd;
use std::task::Waker;
use std::time::Duration;

use super::sq::{IORING_SQ_CQ_OVERFLOW, IORING_SQ_TASKRUN};
use io_uring::squeue;

use super::{Driver, Kernel, BATCH_WAIT_US, IORING_ENTER_GETEVENTS, SYNC_TOKEN};

/// `io_uring_enter(2)`'s flag: the last argument is a `struct io_uring_getevents_arg`.
const IORING_ENTER_EXT_ARG: u32 = 1 << 3;
/// `io_uring_enter(2)`'s flag: the fd argument is an index of a registered ring fd.
pub(super) const IORING_ENTER_REGISTERED_RING: u32 = 1 << 4;
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

/// Registers ring `fd` with this thread's io_uring context (`IORING_REGISTER_RING_FDS`,
/// 5.18, at most 16 per thread): returns its index, for [`IORING_ENTER_REGISTERED_RING`].
pub(super) fn register_ring_fd(fd: RawFd) -> io::Result<u32> {
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
pub(super) fn unregister_ring_fd(fd: RawFd, index: u32) -> io::Result<()> {
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

/// What the loop does about an error of `io_uring_enter(2)` (see [`enter_error_kind`]).
///
/// Survived (the loop goes on):
/// - `Retry`: nothing is wrong with the ring. `EINTR`: a signal interrupted the call before
///   it did anything; `ETIME`: a wait's timeout expired.
/// - `Busy`: the kernel is short of room or memory for now. `EBUSY`: the CQ and its overflow
///   list are full; `EAGAIN`, `ENOMEM`, `ENOBUFS`: it could not allocate requests. Reaping
///   completions frees both; SQEs it did not take stay queued for the next enter.
///
/// Fatal (the driver panics, naming the error and the ring's state): the ring cannot be used
/// any more, or the driver called it wrongly, and retrying would spin forever. `EBADF`: the
/// ring's fd is closed; `EBADFD`: the ring is in a state that takes no submissions;
/// `EOPNOTSUPP`: the fd is not an io_uring; `ENXIO`: the ring is being torn down; `EFAULT`,
/// `EINVAL`: the call's memory or arguments are wrong (a driver bug); `EEXIST`: entered from
/// a thread other than the ring's single issuer (a runtime bug); `EOWNERDEAD`: the SQ thread
/// died; and any error `io_uring_enter` is not documented to return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EnterError {
    Retry,
    Busy,
    /// Why the ring is unusable.
    Fatal(&'static str),
}

/// Classifies an `io_uring_enter(2)` error by its errno (see [`EnterError`]).
fn enter_error_kind(errno: Option<i32>) -> EnterError {
    use EnterError::{Busy, Fatal, Retry};
    match errno {
        Some(libc::EINTR | libc::ETIME) => Retry,
        Some(libc::EBUSY | libc::EAGAIN | libc::ENOMEM | libc::ENOBUFS) => Busy,
        Some(libc::EBADF) => Fatal("EBADF: the ring's fd is not open"),
        Some(libc::EBADFD) => Fatal("EBADFD: the ring is in a state that takes no submissions"),
        Some(libc::EOPNOTSUPP) => Fatal("EOPNOTSUPP: the ring's fd is not an io_uring"),
        Some(libc::ENXIO) => Fatal("ENXIO: the ring is being torn down"),
        Some(libc::EFAULT) => Fatal("EFAULT: the ring or the call's arguments are not mapped"),
        Some(libc::EINVAL) => Fatal("EINVAL: the kernel rejected the call's flags or arguments"),
        Some(libc::EEXIST) => Fatal("EEXIST: entered from a thread that is not the ring's issuer"),
        Some(libc::EOWNERDEAD) => Fatal("EOWNERDEAD: the ring's SQ thread died"),
        _ => Fatal("io_uring_enter is not documented to return this error"),
    }
}

impl Driver {
    /// `io_uring_enter(2)` on this ring: through its registered index where it has one,
    /// else its fd; with `arg`, as an extended wait (`IORING_ENTER_EXT_ARG`). On the
    /// readiness backend, that backend's [`enter`](super::readiness::Readiness::enter),
    /// which takes every queued SQE.
    #[inline]
    fn enter(
        &mut self,
        to_submit: u32,
        min_complete: u32,
        flags: u32,
        arg: Option<&GetEventsArg>,
    ) -> io::Result<u32> {
        if let Kernel::Readiness(rd) = &mut self.kernel {
            let timeout = arg.and_then(|a| {
                // SAFETY: `ts` is 0 or points at the `KernelTimespec` the caller keeps alive
                // across this call (as for the kernel).
                let ts = unsafe { (a.ts as *const KernelTimespec).as_ref() }?;
                Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
            });
            let getevents = flags & IORING_ENTER_GETEVENTS != 0;
            return rd.enter(&mut self.sq, min_complete, getevents, timeout);
        }
        let (argp, argsz, flags) = match arg {
            Some(a) => (
                a as *const GetEventsArg as *const libc::c_void,
                std::mem::size_of::<GetEventsArg>(),
                flags | IORING_ENTER_EXT_ARG,
            ),
            None => (std::ptr::null(), 0, flags),
        };
        // SAFETY: `enter_fd` is this ring's fd, or its index registered by this thread (the
        // driver never leaves its thread) with the flag saying so; `argp` is null or points
        // at a `GetEventsArg` (whose `ts` is 0 or points at a timespec the caller keeps
        // alive) live across the call. The SQEs the kernel reads point only at memory their
        // ops own until their final CQE (the driver's contract for every push).
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_uring_enter,
                self.enter_fd,
                to_submit,
                min_complete,
                flags | self.enter_flags,
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

    /// Submits what the SQ holds without waiting, reaping first when the kernel says busy.
    ///
    /// Errors of `io_uring_enter(2)` (see [`EnterError`]): `Retry` ones are retried at once;
    /// `Busy` ones (no room or memory in the kernel for now) are answered by reaping, then
    /// the submit is retried until the SQ is empty; `Fatal` ones panic.
    pub(super) fn submit_now(&mut self) {
        loop {
            self.counters.enters += 1;
            // GETEVENTS only when the kernel has completion work pending or CQEs overflowed
            // (as `io_uring::Submitter::submit` does): it runs that work.
            let sq_flags = self.sq.flags();
            let flags = if sq_flags & (IORING_SQ_CQ_OVERFLOW | IORING_SQ_TASKRUN) != 0 {
                IORING_ENTER_GETEVENTS
            } else {
                0
            };
            let Err(e) = self.enter(self.sq.len(), 0, flags, None) else {
                return;
            };
            match enter_error_kind(e.raw_os_error()) {
                EnterError::Retry => continue,
                EnterError::Busy => {
                    // The CQ (or the kernel's overflow list) is full, or the kernel is short
                    // of memory: reaping makes room and lets it free requests.
                    self.enter_getevents(0);
                    self.reap(Waker::wake);
                    if self.sq.len() == 0 {
                        return;
                    }
                }
                EnterError::Fatal(why) => {
                    let queued = self.sq.len();
                    self.enter_failed(&format!("submit of {queued} SQEs"), &e, why)
                }
            }
        }
    }

    /// Submits and runs deferred completion work without waiting (`GETEVENTS`, min 0).
    ///
    /// `Retry` and `Busy` errors of `io_uring_enter(2)` (see [`EnterError`]) are ignored:
    /// the SQEs stay queued and the caller's loop enters again; `Fatal` ones panic.
    pub(super) fn enter_getevents(&mut self, to_submit: u32) {
        self.counters.enters += 1;
        if let Err(e) = self.enter(to_submit, 0, IORING_ENTER_GETEVENTS, None) {
            if let EnterError::Fatal(why) = enter_error_kind(e.raw_os_error()) {
                self.enter_failed(&format!("GETEVENTS, submitting {to_submit}"), &e, why);
            }
        }
    }

    /// Hands queued SQEs to the kernel. With `wait`, sleeps until a CQE or `timeout`;
    /// without, only enters the kernel if there is something to submit or to collect.
    ///
    /// `Retry` and `Busy` errors of `io_uring_enter(2)` (see [`EnterError`]) end the park
    /// early: the loop reaps what is there and parks again, and SQEs the kernel did not take
    /// stay queued for that next enter. `Fatal` ones panic: the core cannot go on without
    /// its ring.
    pub(crate) fn park(&mut self, wait: bool, timeout: Option<Duration>) {
        self.park_at(wait, timeout, crate::stats::coarse_ns());
    }

    /// [`park`](Driver::park), with the caller's reading of `metrics::coarse_ns` as the
    /// wait's start (the loop reads the clock once before it parks). Returns the clock
    /// after a wait, else `now`.
    pub(crate) fn park_at(&mut self, wait: bool, timeout: Option<Duration>, now: u64) -> u64 {
        if !wait || timeout == Some(Duration::ZERO) {
            self.batch_hint = 0;
            let pending = self.sq.len();
            // The readiness backend learns of readiness only from epoll: it looks on every
            // park, as the kernel's ring posts completions on its own.
            if pending == 0
                && self.sq.flags() & (IORING_SQ_CQ_OVERFLOW | IORING_SQ_TASKRUN) == 0
                && !self.is_readiness()
            {
                return now;
            }
            self.enter_getevents(pending);
            return now;
        }
        self.counters.enters += 1;
        let want = std::mem::take(&mut self.batch_hint).min(self.ops.len());
        // A task waiting for a batch (a linked chain) has the wait ask for all of it, so the
        // kernel runs the chain's deferred work in this one enter, but for at most
        // `BATCH_WAIT_US` before it returns with whatever arrived (`Features::min_timeout`:
        // asked for, and the kernel has it). Any other wait, an idle one above all, waits
        // for one CQE with no minimum timeout.
        let batch = want > 1 && self.min_timeout_ok;
        let wait_nr = if batch { want } else { 1 };
        let ts = timeout.map(|t| KernelTimespec {
            tv_sec: t.as_secs().min(i64::MAX as u64) as i64,
            tv_nsec: t.subsec_nanos() as i64,
        });
        let to_submit = self.sq.len();
        let res = if !batch && ts.is_none() {
            self.enter(to_submit, 1, IORING_ENTER_GETEVENTS, None)
        } else {
            let arg = GetEventsArg {
                sigmask: 0,
                sigmask_sz: 0,
                min_wait_usec: if batch { BATCH_WAIT_US } else { 0 },
                ts: ts.as_ref().map_or(0, |t| t as *const KernelTimespec as u64),
            };
            self.enter(
                to_submit,
                wait_nr as u32,
                IORING_ENTER_GETEVENTS,
                Some(&arg),
            )
        };
        let after = crate::stats::coarse_ns();
        self.counters.waits += 1;
        self.counters.waited_ns += after.saturating_sub(now);
        if let Err(e) = res {
            if let EnterError::Fatal(why) = enter_error_kind(e.raw_os_error()) {
                let call = format!("wait for {wait_nr} CQEs, timeout {timeout:?}");
                self.enter_failed(&call, &e, why);
            }
        }
        after
    }

    /// Runs one op synchronously: pushes `sqe`, then submits and waits until its CQE is
    /// reaped, reaping every other CQE into its slot meanwhile (their tasks are woken as
    /// usual and run once the caller's task yields). Returns the raw result. For quick ops
    /// the kernel completes inline at submission (installing a direct descriptor, a socket
    /// option): the caller blocks its core for one `io_uring_enter(2)`.
    ///
    /// Never returns before the CQE is reaped, so `sqe` may point at memory the caller
    /// keeps alive only for the call. `Fatal` enter errors panic, as in the loop.
    ///
    /// # Safety
    /// Every pointer in `sqe` is valid for the kernel's use until this call returns.
    pub(crate) unsafe fn run_sync(&mut self, sqe: squeue::Entry) -> i32 {
        debug_assert!(self.sync_result.is_none());
        self.sync_result = None;
        self.push(sqe.user_data(SYNC_TOKEN));
        loop {
            if let Some(res) = self.sync_result.take() {
                return res;
            }
            self.counters.enters += 1;
            let to_submit = self.sq.len();
            if let Err(e) = self.enter(to_submit, 1, IORING_ENTER_GETEVENTS, None) {
                if let EnterError::Fatal(why) = enter_error_kind(e.raw_os_error()) {
                    self.enter_failed(&format!("synchronous op, submitting {to_submit}"), &e, why);
                }
            }
            self.reap(Waker::wake);
        }
    }

    /// Panics for an `io_uring_enter(2)` error the ring cannot survive, naming the call, the
    /// error and the ring's state.
    #[cold]
    #[inline(never)]
    pub(super) fn enter_failed(&mut self, call: &str, e: &io::Error, why: &str) -> ! {
        let queued = self.sq.len();
        panic!(
            "io_uring_enter ({call}) failed: {e}; {why}, so this core cannot go on \
             (ring fd {}, entered as {}, {queued} SQEs queued, {} ops in flight, shutting down: {}, {})",
            self.ring_fd(),
            if self.enter_flags & IORING_ENTER_REGISTERED_RING != 0 {
                format!("registered index {}", self.enter_fd)
            } else {
                "its fd".to_string()
            },
            self.in_flight(),
            self.shutting_down,
            self.flags,
        )
    }
}

#[cfg(test)]
mod enter_error_tests {
    use super::{enter_error_kind, EnterError};

    /// Each errno `io_uring_enter(2)` may return is survived or fatal, as documented.
    #[test]
    fn enter_errors_are_classified() {
        for errno in [libc::EINTR, libc::ETIME] {
            assert_eq!(
                enter_error_kind(Some(errno)),
                EnterError::Retry,
                "errno {errno}"
            );
        }
        for errno in [libc::EBUSY, libc::EAGAIN, libc::ENOMEM, libc::ENOBUFS] {
            assert_eq!(
                enter_error_kind(Some(errno)),
                EnterError::Busy,
                "errno {errno}"
            );
        }
        for (errno, name) in [
            (libc::EBADF, "EBADF"),
            (libc::EBADFD, "EBADFD"),
            (libc::EOPNOTSUPP, "EOPNOTSUPP"),
            (libc::ENXIO, "ENXIO"),
            (libc::EFAULT, "EFAULT"),
            (libc::EINVAL, "EINVAL"),
            (libc::EEXIST, "EEXIST"),
            (libc::EOWNERDEAD, "EOWNERDEAD"),
        ] {
            match enter_error_kind(Some(errno)) {
                EnterError::Fatal(why) => assert!(why.starts_with(name), "{name}: {why}"),
                other => panic!("{name} is fatal, not {other:?}"),
            }
        }
        // Undocumented errors, and errors without an errno, are fatal: retrying them could
        // spin forever.
        for errno in [Some(libc::EPERM), Some(libc::EIO), Some(9999), None] {
            assert!(
                matches!(enter_error_kind(errno), EnterError::Fatal(_)),
                "{errno:?}"
            );
        }
    }
}
