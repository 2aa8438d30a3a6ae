//! Ring setup: ask for the fastest flags, fall back one flag at a time, say what was granted.
//!
//! Follows io_uring_setup(2). The flags asked for, and the kernel that first has each:
//! `SUBMIT_ALL` 5.18 · `COOP_TASKRUN`, `TASKRUN_FLAG` 5.19 · `SINGLE_ISSUER` 6.0 ·
//! `DEFER_TASKRUN` 6.1 · `NO_SQARRAY` 6.6. An older kernel answers `EINVAL` for a flag it does not know; the
//! setup then drops the newest flag and tries again, so the ring always gets the best set
//! this kernel has. Without io_uring at all the error names the cause and what to do.

use std::fmt;
use std::io;

use io_uring::{opcode, IoUring};

/// The setup flags a core's ring was granted by the kernel, and its queue sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RingFlags {
    /// `IORING_SETUP_SINGLE_ISSUER`: only the core's own thread submits.
    pub single_issuer: bool,
    /// `IORING_SETUP_DEFER_TASKRUN`: completions are posted only when the core asks for them.
    pub defer_taskrun: bool,
    /// `IORING_SETUP_COOP_TASKRUN`: no inter-processor interrupt to post completions.
    pub coop_taskrun: bool,
    /// `IORING_SETUP_TASKRUN_FLAG`: the kernel flags pending completion work in the SQ ring.
    pub taskrun_flag: bool,
    /// `IORING_SETUP_SUBMIT_ALL`: a failing SQE does not stop the rest of the batch.
    pub submit_all: bool,
    /// `IORING_SETUP_NO_SQARRAY` (Linux 6.6): the kernel reads SQEs in ring order, without
    /// the SQ array's indirection.
    pub no_sqarray: bool,
    /// Submission queue entries.
    pub sq_entries: u32,
    /// Completion queue entries.
    pub cq_entries: u32,
}

impl fmt::Display for RingFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (self.single_issuer, "SINGLE_ISSUER"),
            (self.defer_taskrun, "DEFER_TASKRUN"),
            (self.coop_taskrun, "COOP_TASKRUN"),
            (self.taskrun_flag, "TASKRUN_FLAG"),
            (self.submit_all, "SUBMIT_ALL"),
            (self.no_sqarray, "NO_SQARRAY"),
        ];
        let on = names.iter().filter(|(on, _)| *on).map(|(_, name)| name);
        super::features::write_list(f, on, "|")?;
        write!(f, " sq={} cq={}", self.sq_entries, self.cq_entries)
    }
}

impl RingFlags {
    /// The flags a ring asks for first: every one of them.
    pub(crate) fn all(sq_entries: u32, cq_entries: u32) -> Self {
        RingFlags {
            single_issuer: true,
            defer_taskrun: true,
            coop_taskrun: true,
            taskrun_flag: true,
            submit_all: true,
            no_sqarray: true,
            sq_entries,
            cq_entries,
        }
    }

    /// The next set to try after the kernel refused `self`: the newest flag dropped.
    /// `None` once nothing is left to drop.
    pub(crate) fn fallback(mut self) -> Option<Self> {
        if self.no_sqarray {
            self.no_sqarray = false; // 6.6
        } else if self.defer_taskrun {
            self.defer_taskrun = false; // 6.1
        } else if self.single_issuer {
            self.single_issuer = false; // 6.0
        } else if self.coop_taskrun || self.taskrun_flag {
            self.coop_taskrun = false; // 5.19
            self.taskrun_flag = false;
        } else if self.submit_all {
            self.submit_all = false; // 5.18
        } else {
            return None;
        }
        Some(self)
    }
}

/// Builds a ring with the best subset of `want` the kernel grants.
pub(crate) fn build_ring(want: RingFlags) -> io::Result<(IoUring, RingFlags)> {
    let mut flags = want;
    loop {
        let mut b = IoUring::builder();
        b.setup_cqsize(flags.cq_entries);
        if flags.single_issuer {
            b.setup_single_issuer();
        }
        if flags.defer_taskrun {
            b.setup_defer_taskrun();
        }
        if flags.coop_taskrun {
            b.setup_coop_taskrun();
        }
        if flags.taskrun_flag {
            b.setup_taskrun_flag();
        }
        if flags.submit_all {
            b.setup_submit_all();
        }
        if flags.no_sqarray {
            b.setup_no_sqarray();
        }
        match b.build(flags.sq_entries) {
            Ok(ring) => {
                if !ring.params().is_feature_ext_arg() {
                    return Err(io::Error::new(
                        io::ErrorKind::Unsupported,
                        "io_uring on this kernel lacks IORING_FEAT_EXT_ARG (timed waits, Linux \
                         5.11); this runtime needs Linux 5.19 or newer",
                    ));
                }
                flags.sq_entries = ring.params().sq_entries();
                flags.cq_entries = ring.params().cq_entries();
                return Ok((ring, flags));
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => match flags.fallback() {
                Some(next) => flags = next,
                None => return Err(setup_error(e, want)),
            },
            Err(e) => return Err(setup_error(e, want)),
        }
    }
}

/// The ops the runtime cannot do without on io_uring: a kernel whose probe lacks one (or
/// has no probe: before 5.6) gets the readiness backend under [`Backend::Auto`](
/// crate::Backend::Auto).
const REQUIRED_OPS: [(u8, &str); 14] = [
    (opcode::Read::CODE, "READ"),
    (opcode::Write::CODE, "WRITE"),
    (opcode::Readv::CODE, "READV"),
    (opcode::Writev::CODE, "WRITEV"),
    (opcode::Recv::CODE, "RECV"),
    (opcode::Send::CODE, "SEND"),
    (opcode::RecvMsg::CODE, "RECVMSG"),
    (opcode::SendMsg::CODE, "SENDMSG"),
    (opcode::Accept::CODE, "ACCEPT"),
    (opcode::Connect::CODE, "CONNECT"),
    (opcode::PollAdd::CODE, "POLL_ADD"),
    (opcode::AsyncCancel::CODE, "ASYNC_CANCEL"),
    (opcode::Close::CODE, "CLOSE"),
    (opcode::Shutdown::CODE, "SHUTDOWN"),
];

/// `Unsupported` naming the first op of [`REQUIRED_OPS`] that `probe` (the ring's opcode
/// probe, which may be missing: before 5.6) lacks.
pub(crate) fn check_required_ops(probe: &super::kernel::OpProbe) -> io::Result<()> {
    if !probe.present() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "io_uring on this kernel has no opcode probe (Linux 5.6); the runtime needs \
             Linux 5.19 or newer",
        ));
    }
    match REQUIRED_OPS.iter().find(|(code, _)| !probe.supports(*code)) {
        Some((_, name)) => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("io_uring on this kernel lacks IORING_OP_{name}; the runtime needs Linux 5.19 or newer"),
        )),
        None => Ok(()),
    }
}

/// Adds the cause and the remedy to a failed `io_uring_setup`, keeping the error's kind.
fn setup_error(e: io::Error, want: RingFlags) -> io::Error {
    let hint = match e.raw_os_error() {
        Some(libc::ENOSYS) => {
            "this kernel has no io_uring (built without CONFIG_IO_URING, or older than 5.1); \
             the runtime needs Linux 5.19 or newer"
        }
        Some(libc::EPERM) | Some(libc::EACCES) => {
            "io_uring is not permitted here: check the sysctl kernel.io_uring_disabled (0 \
             allows it; 2 forbids it for everyone, 1 for processes outside \
             kernel.io_uring_group), and any seccomp filter (container runtimes' default \
             profiles often block io_uring_setup)"
        }
        Some(libc::ENOMEM) => {
            "the kernel could not allocate the ring: on kernels before 5.12 rings count \
             against RLIMIT_MEMLOCK (raise `ulimit -l`), else ask for fewer entries"
        }
        Some(libc::EMFILE) | Some(libc::ENFILE) => "no file descriptor left for the ring",
        Some(libc::EINVAL) => "the kernel refused every flag combination and the queue sizes",
        _ => "io_uring_setup failed",
    };
    io::Error::new(
        e.kind(),
        format!(
            "io_uring_setup(sq={}, cq={}) failed: {e}: {hint}",
            want.sq_entries, want.cq_entries
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_drops_newest_flag_first() {
        let mut f = RingFlags::all(8, 16);
        let mut seen = vec![f];
        while let Some(next) = f.fallback() {
            seen.push(next);
            f = next;
        }
        assert_eq!(seen.len(), 6);
        assert!(!seen[1].no_sqarray && seen[1].defer_taskrun);
        assert!(!seen[2].defer_taskrun && seen[2].single_issuer);
        assert!(!seen[3].single_issuer && seen[3].coop_taskrun);
        assert!(!seen[4].coop_taskrun && !seen[4].taskrun_flag && seen[4].submit_all);
        assert_eq!(
            seen[5],
            RingFlags {
                sq_entries: 8,
                cq_entries: 16,
                ..Default::default()
            }
        );
    }

    #[test]
    fn display_lists_granted_flags() {
        let f = RingFlags::all(8, 16);
        assert_eq!(
            f.to_string(),
            "SINGLE_ISSUER|DEFER_TASKRUN|COOP_TASKRUN|TASKRUN_FLAG|SUBMIT_ALL|NO_SQARRAY sq=8 cq=16"
        );
        assert_eq!(RingFlags::default().to_string(), "(none) sq=0 cq=0");
    }

    #[test]
    fn setup_error_names_sysctl_for_eperm() {
        let e = setup_error(
            io::Error::from_raw_os_error(libc::EPERM),
            RingFlags::all(8, 16),
        );
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert!(e.to_string().contains("kernel.io_uring_disabled"), "{e}");
        let e = setup_error(
            io::Error::from_raw_os_error(libc::ENOSYS),
            RingFlags::all(8, 16),
        );
        assert!(e.to_string().contains("no io_uring"), "{e}");
    }
}
