//! Entering the kernel: `io_uring_enter(2)` to submit, to collect completions, and to wait,
//! and what the loop does about each error it returns ([`EnterError`]).
//!
//! Every enter goes through [`Driver::enter`], which hands one [`Enter`] to the backend
//! (`backend::Kernel::enter`: the io_uring system call, or the readiness backend's part of
//! it). The policy here is the same on both: when to ask for completions, how long to wait,
//! which errors are survived.

use std::io;
use std::task::Waker;
use std::time::Duration;

use super::backend::Enter;
use super::sq::{IORING_SQ_CQ_OVERFLOW, IORING_SQ_TASKRUN};
use io_uring::squeue;

use super::{Driver, BATCH_WAIT_US, SYNC_TOKEN};

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
    /// `io_uring_enter(2)` on this core's backend (see [`Enter`]).
    #[inline]
    fn enter(&mut self, e: Enter) -> io::Result<u32> {
        self.kernel.enter(&mut self.sq, e)
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
            let getevents = self.sq.flags() & (IORING_SQ_CQ_OVERFLOW | IORING_SQ_TASKRUN) != 0;
            let Err(e) = self.enter(Enter::submit(self.sq.len(), getevents)) else {
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
        if let Err(e) = self.enter(Enter::submit(to_submit, true)) {
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
        let res = self.enter(Enter {
            to_submit: self.sq.len(),
            min_complete: wait_nr as u32,
            getevents: true,
            timeout,
            min_wait_usec: if batch { BATCH_WAIT_US } else { 0 },
        });
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
            let wait = Enter {
                min_complete: 1,
                ..Enter::submit(to_submit, true)
            };
            if let Err(e) = self.enter(wait) {
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
             (ring fd {}, {}, {queued} SQEs queued, {} ops in flight, shutting down: {}, {})",
            self.ring_fd(),
            self.kernel.entered_as(),
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
