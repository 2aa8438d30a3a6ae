//! Waiting for a child through the ring: one `IORING_OP_WAITID` (Linux 6.7) on the child's
//! pidfd, which both waits and reaps; on a kernel without it, a poll of the pidfd (it reads
//! readable once the child exits) followed by a non-blocking `waitid(2)`.
//!
//! No SIGCHLD handler and no reaper thread: a child is reaped by the op that waits for it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};

use io_uring::{opcode, types};

use crate::ext::{Completable, Cqe, Op};
use crate::fd::SharedFd;

/// Set once a WAITID op came back `EINVAL`/`EOPNOTSUPP` (a kernel before 6.7): later waits
/// go straight to the poll fallback.
static NO_WAITID: AtomicBool = AtomicBool::new(false);

/// Forces the pidfd-poll fallback (tests run both paths on one kernel).
#[doc(hidden)]
pub fn force_poll_fallback(on: bool) {
    NO_WAITID.store(on, Ordering::Relaxed);
}

/// Opens a pidfd for `pid` (a child not yet reaped, so its pid cannot have been reused).
pub(crate) fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes two integers; the result is checked.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Sends `sig` to the process behind `pidfd` (never to a reused pid).
pub(crate) fn pidfd_kill(pidfd: &SharedFd, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: pidfd_send_signal with no siginfo; the result is checked.
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.raw(),
            sig,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The exit status in `info`, filled by a `waitid` that found the child exited.
fn status_of(info: &libc::siginfo_t) -> ExitStatus {
    // SAFETY: the kernel filled the SIGCHLD fields of `info` for an exited child.
    let status = unsafe { info.si_status() };
    let raw = match info.si_code {
        libc::CLD_EXITED => (status & 0xff) << 8,
        libc::CLD_KILLED => status & 0x7f,
        libc::CLD_DUMPED => (status & 0x7f) | 0x80,
        // WEXITED reports only the three above; anything else is kept as a signal.
        _ => status & 0x7f,
    };
    ExitStatus::from_raw(raw)
}

/// `waitid(P_PIDFD, WEXITED | WNOHANG)`: the status if the child has exited (it is then
/// reaped), `None` if it still runs.
pub(crate) fn try_reap(pidfd: &SharedFd) -> io::Result<Option<ExitStatus>> {
    // SAFETY: an all-zero siginfo_t is valid.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a live siginfo_t; the pidfd is open.
    let r = unsafe {
        libc::waitid(
            libc::P_PIDFD,
            pidfd.raw() as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as in `status_of`; si_pid is 0 when no child changed state.
    if unsafe { info.si_pid() } == 0 {
        return Ok(None);
    }
    Ok(Some(status_of(&info)))
}

/// The WAITID op's data: the siginfo the kernel fills, and the pidfd it names.
struct WaitId {
    info: Box<libc::siginfo_t>,
    _pidfd: SharedFd,
}

impl Completable for WaitId {
    type Output = io::Result<ExitStatus>;

    fn complete(self, cqe: Cqe) -> io::Result<ExitStatus> {
        cqe.result?;
        Ok(status_of(&self.info))
    }
}

/// The fallback's poll of a pidfd, keeping it open until the CQE.
struct PollPidfd(#[allow(dead_code)] SharedFd);

impl Completable for PollPidfd {
    type Output = io::Result<u32>;

    fn complete(self, cqe: Cqe) -> io::Result<u32> {
        cqe.result
    }
}

/// Waits for the child behind `pidfd` to exit and reaps it.
pub(crate) async fn reap(pidfd: &SharedFd) -> io::Result<ExitStatus> {
    if !NO_WAITID.load(Ordering::Relaxed) {
        // SAFETY: an all-zero siginfo_t is valid.
        let mut info: Box<libc::siginfo_t> = Box::new(unsafe { std::mem::zeroed() });
        let sqe = opcode::WaitId::new(libc::P_PIDFD, pidfd.raw() as libc::id_t, libc::WEXITED)
            .infop(&mut *info as *mut libc::siginfo_t as *const libc::siginfo_t)
            .build();
        let data = WaitId {
            info,
            _pidfd: pidfd.clone(),
        };
        // SAFETY: the SQE points only at the boxed siginfo, owned by the op's data (its
        // heap block does not move), and names the pidfd the data keeps open.
        match unsafe { Op::new(data, sqe) }.await {
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EOPNOTSUPP)) => {
                NO_WAITID.store(true, Ordering::Relaxed);
            }
            res => return res,
        }
    }
    // Fallback (before 6.7): the pidfd reads readable once the child exits.
    loop {
        if let Some(status) = try_reap(pidfd)? {
            return Ok(status);
        }
        let sqe = opcode::PollAdd::new(types::Fd(pidfd.raw()), libc::POLLIN as u32).build();
        // SAFETY: a poll points at no memory; the data keeps the pidfd open.
        unsafe { Op::new(PollPidfd(pidfd.clone()), sqe) }.await?;
    }
}

/// Waits for the child behind `pidfd` on this thread (a thread that runs no core, or a
/// runtime that is going away), reaping it.
pub(crate) fn reap_blocking(pidfd: &OwnedFd) -> io::Result<ExitStatus> {
    // SAFETY: an all-zero siginfo_t is valid.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `info` is a live siginfo_t; the pidfd is open.
        let r = unsafe {
            libc::waitid(
                libc::P_PIDFD,
                pidfd.as_raw_fd() as libc::id_t,
                &mut info,
                libc::WEXITED,
            )
        };
        if r == 0 {
            return Ok(status_of(&info));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
