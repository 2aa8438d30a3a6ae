//! The seam between the driver and what carries out its SQEs: the kernel's io_uring
//! ([`uring`]) or, where that is refused or asked for, the readiness backend (epoll,
//! [`readiness`]), which plays the kernel's part of a ring in user space.
//!
//! The driver above the seam is one: the op lifecycle and its slots, the SQ it pushes every
//! SQE into (the kernel's ring memory, or a plain array: `sq::Sq::local`), the CQE dispatch
//! into slots, the enter error policy, MSG_RING wakes, direct descriptors and shutdown are
//! the same code on both backends. What differs is the kernel's part, and each backend
//! gives it through one interface, [`Ring`]: take the queued SQEs and wait
//! ([`Ring::enter`]), hand over the posted CQEs ([`Ring::reap`]), register and unregister
//! provided-buffer rings, name the fd other cores wake, forget an fd number.
//!
//! [`Kernel`] holds the core's backend and is matched in one place only: the
//! `on_backend!` macro, which every method of `Kernel` goes through. Each arm calls the
//! backend's own method (static dispatch, `#[inline]`): io_uring pays one branch per enter
//! and per reap pass, never a virtual call, and nothing per SQE or CQE.

pub(crate) mod readiness;
mod uring;

use std::fmt;
use std::io;
use std::os::fd::RawFd;
use std::str::FromStr;
use std::time::Duration;

use readiness::{Offload, Readiness};
use uring::Uring;

use super::features::{Features, RingConfig};
use super::kernel::Profile;
use super::sq::Sq;
use super::RingFlags;

/// The I/O backend of a runtime's cores ([`Builder::backend`](crate::Builder::backend),
/// [`Features::backend`]).
///
/// The API, the ops and their results are the same on both: programs run unchanged. The
/// readiness backend carries out the SQEs the ops build itself, with non-blocking system
/// calls driven by epoll and the blocking pool for file ops, and plays provided-buffer
/// rings in user space; the other io_uring-only [`Features`] are off
/// there. An op whose opcode it does not carry out fails with an `Unsupported` error that
/// names it (see [`runtime::ext`](crate::ext#custom-ops-on-the-epoll-backend)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Backend {
    /// io_uring where it is allowed; epoll where `io_uring_setup` is refused (`EPERM`,
    /// `EACCES`: a seccomp profile, `kernel.io_uring_disabled`), missing (`ENOSYS`), or the
    /// kernel lacks an op the runtime needs (before Linux 5.19). The default.
    #[default]
    Auto,
    /// io_uring only: [`Builder::build`](crate::Builder::build) fails where it is refused.
    IoUring,
    /// The readiness backend (epoll), even where io_uring is allowed.
    Epoll,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Auto => "auto",
            Backend::IoUring => "io_uring",
            Backend::Epoll => "epoll",
        })
    }
}

impl FromStr for Backend {
    type Err = io::Error;

    /// `auto`, `io_uring` (or `io-uring`, `uring`) or `epoll`, as `RUNTIME_BACKEND` takes.
    fn from_str(s: &str) -> io::Result<Backend> {
        match s.trim() {
            "auto" | "" => Ok(Backend::Auto),
            "io_uring" | "io-uring" | "uring" => Ok(Backend::IoUring),
            "epoll" => Ok(Backend::Epoll),
            other => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{other}` is no backend (known: auto, io_uring, epoll)"),
            )),
        }
    }
}

/// One `io_uring_enter(2)`, as the driver asks it of either backend.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Enter {
    /// How many SQEs of the SQ to take (the readiness backend takes them all).
    pub(crate) to_submit: u32,
    /// How many CQEs to wait for (with `getevents`).
    pub(crate) min_complete: u32,
    /// `IORING_ENTER_GETEVENTS`: collect completions (and wait for `min_complete`).
    pub(crate) getevents: bool,
    /// The longest wait (`None`: no limit).
    pub(crate) timeout: Option<Duration>,
    /// How long to hold out for all `min_complete` CQEs before returning with those that
    /// arrived (`IORING_FEAT_MIN_TIMEOUT`, 6.12; 0: none). The readiness backend ignores it.
    pub(crate) min_wait_usec: u32,
}

impl Enter {
    /// Submits `to_submit` SQEs, collecting completions if `getevents`, without waiting.
    pub(crate) fn submit(to_submit: u32, getevents: bool) -> Enter {
        Enter {
            to_submit,
            min_complete: 0,
            getevents,
            timeout: None,
            min_wait_usec: 0,
        }
    }
}

/// The kernel's part of a ring, as the driver sees it: what each backend implements.
pub(crate) trait Ring {
    /// `io_uring_enter(2)`: takes SQEs queued in `sq`, then with `getevents` collects
    /// completions, waiting as `e` says. Returns how many SQEs were taken; errors are
    /// `io_uring_enter(2)`'s, which the driver survives or not (`enter::EnterError`).
    fn enter(&mut self, sq: &mut Sq, e: Enter) -> io::Result<u32>;

    /// Hands every posted CQE (`user_data`, result, flags) to `sink`, in order. Returns
    /// whether CQEs overflowed that an enter with `GETEVENTS` flushes (then reap again).
    fn reap(&mut self, sink: &mut impl CqeSink) -> bool;

    /// The fd other cores' wakes name (the ring's; the epoll instance's).
    fn ring_fd(&self) -> RawFd;

    /// The backend and how it is entered, for a fatal enter error's panic.
    fn entered_as(&self) -> String;

    /// Registers a provided-buffer ring under `bgid`, with `flags` (`IOU_PBUF_RING_*`).
    ///
    /// # Safety
    /// `addr` points to `entries` page-aligned `io_uring_buf`s that stay valid until
    /// `unregister_buf_ring(bgid)` or the backend's end.
    unsafe fn register_buf_ring(
        &mut self,
        addr: u64,
        entries: u16,
        bgid: u16,
        flags: u16,
    ) -> io::Result<()>;

    /// The head of provided-buffer ring `bgid`: the entries before it were picked. Under a
    /// kernel `profile`, answered as its release answers.
    fn buf_ring_head(&self, bgid: u16, profile: Option<Profile>) -> io::Result<u16>;

    /// Unregisters ring `bgid`; no buffer is picked from it afterwards.
    fn unregister_buf_ring(&mut self, bgid: u16) -> io::Result<()>;

    /// The owner of regular fd `fd` closes it or gives it up: forget what is known of the
    /// number.
    fn release_fd(&mut self, fd: RawFd);

    /// Whether this is the readiness backend, which learns of readiness only from epoll:
    /// the driver enters it on every park, where the kernel's ring posts completions on
    /// its own.
    fn is_readiness(&self) -> bool {
        false
    }
}

/// What a driver submits to: the kernel's ring, or the readiness backend in its place.
// The ring stays inline: it is on the hot path of every reap.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Kernel {
    Uring(Uring),
    Readiness(Box<Readiness>),
}

/// The one `match` on [`Kernel`]: `$body` with `$b` bound to the backend, for each arm (a
/// static call of that backend's [`Ring`] method, inlined where it is marked so).
/// Where a backend's reap hands each CQE (the driver's dispatch into its op slots).
///
/// A trait with an always-inlined method rather than a closure: both backends' reap loops
/// call it, and a closure called from two places is compiled once, out of line, costing
/// the io_uring loop a call per CQE (about 45 instructions per NOP under callgrind); an
/// implementation marks [`CqeSink::cqe`] `#[inline(always)]` so each loop gets its own copy.
pub(crate) trait CqeSink {
    /// One CQE: its `user_data`, result and flags.
    fn cqe(&mut self, user_data: u64, res: i32, flags: u32);
}

macro_rules! on_backend {
    ($kernel:expr, $b:ident => $body:expr) => {
        match $kernel {
            Kernel::Uring($b) => $body,
            Kernel::Readiness($b) => $body,
        }
    };
}

impl Kernel {
    /// See [`Ring::enter`]. Once per enter.
    #[inline]
    pub(crate) fn enter(&mut self, sq: &mut Sq, e: Enter) -> io::Result<u32> {
        on_backend!(self, b => b.enter(sq, e))
    }

    /// See [`Ring::reap`]. Once per reap pass.
    #[inline]
    pub(crate) fn reap(&mut self, sink: &mut impl CqeSink) -> bool {
        on_backend!(self, b => b.reap(sink))
    }

    /// See [`Ring::ring_fd`].
    pub(crate) fn ring_fd(&self) -> RawFd {
        on_backend!(self, b => b.ring_fd())
    }

    /// See [`Ring::entered_as`].
    pub(crate) fn entered_as(&self) -> String {
        on_backend!(self, b => b.entered_as())
    }

    /// See [`Ring::register_buf_ring`].
    ///
    /// # Safety
    /// As [`Ring::register_buf_ring`].
    pub(crate) unsafe fn register_buf_ring(
        &mut self,
        addr: u64,
        entries: u16,
        bgid: u16,
        flags: u16,
    ) -> io::Result<()> {
        // SAFETY: forwarded from the caller.
        on_backend!(self, b => unsafe { b.register_buf_ring(addr, entries, bgid, flags) })
    }

    /// See [`Ring::buf_ring_head`].
    pub(crate) fn buf_ring_head(&self, bgid: u16, profile: Option<Profile>) -> io::Result<u16> {
        on_backend!(self, b => b.buf_ring_head(bgid, profile))
    }

    /// See [`Ring::unregister_buf_ring`].
    pub(crate) fn unregister_buf_ring(&mut self, bgid: u16) -> io::Result<()> {
        on_backend!(self, b => b.unregister_buf_ring(bgid))
    }

    /// See [`Ring::release_fd`].
    #[inline]
    pub(crate) fn release_fd(&mut self, fd: RawFd) {
        on_backend!(self, b => b.release_fd(fd))
    }

    /// See [`Ring::is_readiness`].
    #[inline]
    pub(crate) fn is_readiness(&self) -> bool {
        on_backend!(self, b => b.is_readiness())
    }
}

/// A backend just set up, and what the driver around it needs to know of it.
pub(crate) struct Started {
    pub(crate) kernel: Kernel,
    /// The SQ the driver pushes into: the kernel's, or a local one the readiness backend
    /// takes its SQEs from.
    pub(crate) sq: Sq,
    /// The setup flags granted.
    pub(crate) flags: RingFlags,
    pub(crate) features: Features,
    /// Whether MSG_RING wakes can be sent (`IORING_OP_MSG_RING`, 5.18, with
    /// `IOSQE_CQE_SKIP_SUCCESS`).
    pub(crate) msg_ring_ok: bool,
    /// Whether the kernel skips successful CQEs of SQEs flagged `IOSQE_CQE_SKIP_SUCCESS`
    /// (5.17).
    pub(crate) skip_success_ok: bool,
}

/// Sets up a core's backend as `config` asks (see [`Backend`]). Must be called on the
/// thread that will drive it. `offload` runs the readiness backend's file ops; `wake_fd`
/// is the core's wake eventfd.
pub(crate) fn start(
    config: &RingConfig,
    wake_fd: RawFd,
    offload: Option<Offload>,
) -> io::Result<Started> {
    match config.backend {
        Backend::Epoll => start_readiness(config, offload, config.backend_why),
        Backend::IoUring => Uring::start(config, wake_fd),
        Backend::Auto => match Uring::start(config, wake_fd) {
            Ok(s) => Ok(s),
            Err(e) => match refusal(&e) {
                Some(why) => {
                    start_readiness(config, offload, why).map_err(|e2| both_refused(&e, &e2))
                }
                None => Err(e),
            },
        },
    }
}

/// The readiness backend (see [`readiness`]), chosen because of `why`.
fn start_readiness(
    config: &RingConfig,
    offload: Option<Offload>,
    why: &'static str,
) -> io::Result<Started> {
    let rd = Readiness::new(offload)?;
    let flags = RingFlags {
        sq_entries: config.flags.sq_entries.max(1).next_power_of_two(),
        cq_entries: config.flags.cq_entries,
        ..RingFlags::default()
    };
    Ok(Started {
        kernel: Kernel::Readiness(Box::new(rd)),
        sq: Sq::local(flags.sq_entries),
        flags,
        features: Features::readiness(config, why),
        msg_ring_ok: false,
        skip_success_ok: true,
    })
}

/// Why `io_uring_setup` failing with `e` sends `Auto` to the readiness backend: `None`
/// for failures that would fail it too (no memory, no fd).
fn refusal(e: &io::Error) -> Option<&'static str> {
    match e.kind() {
        io::ErrorKind::PermissionDenied => Some(
            "io_uring_setup was refused (EPERM/EACCES): a seccomp filter (Docker's and \
             Kubernetes' default profiles deny io_uring) or the sysctl kernel.io_uring_disabled",
        ),
        io::ErrorKind::Unsupported => Some(
            "this kernel has no usable io_uring (ENOSYS, or older than Linux 5.19: it lacks \
             what the runtime needs)",
        ),
        _ => None,
    }
}

/// Neither backend could start: one error naming both failures and what to change.
fn both_refused(uring: &io::Error, epoll: &io::Error) -> io::Error {
    io::Error::new(
        epoll.kind(),
        format!(
            "no I/O backend could start: io_uring: {uring}; epoll (the fallback): {epoll}. \
             Allow io_uring_setup, io_uring_enter and io_uring_register (the fast path), or \
             at least epoll_create1, epoll_ctl and epoll_pwait/epoll_pwait2, in this \
             process's seccomp profile"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_round_trip() {
        for b in [Backend::Auto, Backend::IoUring, Backend::Epoll] {
            assert_eq!(b.to_string().parse::<Backend>().unwrap(), b);
        }
        let e = "kqueue".parse::<Backend>().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("kqueue"), "{e}");
    }

    #[test]
    fn refusals_fall_back_and_other_failures_do_not() {
        for errno in [libc::EPERM, libc::EACCES, libc::ENOSYS] {
            assert!(
                refusal(&io::Error::from_raw_os_error(errno)).is_some(),
                "{errno}"
            );
        }
        for errno in [libc::ENOMEM, libc::EMFILE, libc::EINVAL] {
            assert!(
                refusal(&io::Error::from_raw_os_error(errno)).is_none(),
                "{errno}"
            );
        }
        let e = both_refused(
            &io::Error::from_raw_os_error(libc::EPERM),
            &io::Error::from_raw_os_error(libc::EPERM),
        );
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert!(e.to_string().contains("epoll_create1"), "{e}");
    }
}
