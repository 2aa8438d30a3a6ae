//! Which backend drives a core: io_uring where the kernel allows it, the readiness
//! backend (epoll, [`super::readiness`]) where it is refused or asked for.

use std::fmt;
use std::io;
use std::os::fd::RawFd;
use std::str::FromStr;

use io_uring::IoUring;

use super::features::Features;
use super::readiness::{Offload, Readiness};
use super::{sq, Driver, RingConfig, RingFlags};

/// The I/O backend of a runtime's cores ([`Builder::backend`](crate::Builder::backend),
/// [`Features::backend`]).
///
/// The API, the ops and their results are the same on both: programs run unchanged. The
/// readiness backend carries out the SQEs the ops build itself, with non-blocking system
/// calls driven by epoll and the blocking pool for file ops, and plays provided-buffer
/// rings in user space; the other io_uring-only [`Features`](crate::Features) are off
/// there.
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

/// What a driver submits to: the kernel's ring, or the readiness backend in its place.
// The ring stays inline: it is on the hot path of every reap.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Kernel {
    Uring(IoUring),
    Readiness(Box<Readiness>),
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

impl Driver {
    /// Sets up the core's backend as `config` asks (see [`Backend`]) and arms the wake
    /// read. Must be called on the thread that will drive it. `offload` runs the readiness
    /// backend's file ops.
    pub(crate) fn new(
        config: &RingConfig,
        wake_fd: RawFd,
        offload: Option<Offload>,
    ) -> io::Result<Driver> {
        match config.backend {
            Backend::Epoll => Driver::new_readiness(config, wake_fd, offload, config.backend_why),
            Backend::IoUring => Driver::new_uring(config, wake_fd),
            Backend::Auto => match Driver::new_uring(config, wake_fd) {
                Ok(d) => Ok(d),
                Err(e) => match refusal(&e) {
                    Some(why) => Driver::new_readiness(config, wake_fd, offload, why)
                        .map_err(|e2| both_refused(&e, &e2)),
                    None => Err(e),
                },
            },
        }
    }

    /// The readiness backend (see [`super::readiness`]), chosen because of `why`.
    fn new_readiness(
        config: &RingConfig,
        wake_fd: RawFd,
        offload: Option<Offload>,
        why: &'static str,
    ) -> io::Result<Driver> {
        let rd = Readiness::new(offload)?;
        let flags = RingFlags {
            sq_entries: config.flags.sq_entries.max(1).next_power_of_two(),
            cq_entries: config.flags.cq_entries,
            ..RingFlags::default()
        };
        let sq = sq::Sq::local(flags.sq_entries);
        let features = Features::readiness(config, why);
        Ok(Driver::with_kernel(
            Kernel::Readiness(Box::new(rd)),
            sq,
            flags,
            features,
            wake_fd,
            false,
            (-1, 0),
            true,
        ))
    }

    /// Whether this core runs the readiness backend.
    pub(crate) fn is_readiness(&self) -> bool {
        matches!(self.kernel, Kernel::Readiness(_))
    }

    /// The owner of regular fd `fd` is closing it or giving it up (see
    /// `SharedFd`): the readiness backend forgets what it knew of the number. Nothing to
    /// do on io_uring.
    #[inline]
    pub(crate) fn release_fd(&mut self, fd: RawFd) {
        if let Kernel::Readiness(rd) = &mut self.kernel {
            rd.release_fd(fd);
        }
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
