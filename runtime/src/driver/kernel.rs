//! Kernel profiles: `RUNTIME_KERNEL=5.19|6.1|6.8` (or
//! [`Builder::kernel_profile`](crate::Builder::kernel_profile)) makes the runtime behave as it
//! would on that release, on a newer kernel: every setup flag, feature and op the release
//! lacks is off or refused, so the fallback paths users on Debian 12 (6.1) or Ubuntu 24.04
//! (6.8) run are the ones tested.
//!
//! [`HISTORY`] is the one table of what came in which release (from io_uring_setup(2),
//! io_uring_register(2), io_uring_enter(2) and the `IORING_OP_*` list of the uapi header,
//! whose opcodes are numbered in the order they were added). A profile uses it in three
//! places, each the mechanism the runtime already has for an older kernel:
//!
//! - the setup flags asked for are limited to the release's (`RingConfig::flags`), as
//!   `setup::build_ring`'s fallback would end up;
//! - the [`Features`](crate::Features) it lacks are not granted (the feature bits
//!   `RUNTIME_DISABLE` switches), and `Features`' `Display` gives `RUNTIME_KERNEL=...` as
//!   the reason; the opcode probe ([`OpProbe`]) says its newer ops are unsupported;
//! - an SQE the release would refuse is refused by the kernel itself ([`Gate`], applied as
//!   the SQE is written): an opcode it lacks, or a flag or field its op did not take yet,
//!   becomes an invalid opcode, answered `EINVAL` (with any linked SQEs cancelled), as
//!   that release's `io_init_req` answers it; a socket command answers `EOPNOTSUPP`.

use io_uring::{squeue, Probe};

use super::sqe::{Sqe, IORING_RECVSEND_BUNDLE, IORING_RECV_MULTISHOT};

use super::feature_bit as bit;
use super::RingFlags;

/// A kernel release, `(major, minor)`.
pub(crate) type Version = (u8, u8);

/// Something a release added that the runtime uses or can be asked to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Has {
    /// A setup flag of [`RingFlags`] (named as in its `Display`).
    Setup(&'static str),
    /// A feature bit of [`Features`](crate::Features).
    Feature(u16),
    /// Opcodes numbered from this one up to the next release's first.
    Opcodes(u8),
    /// A flag or field of an SQE (see [`Gate`]).
    Sqe(SqeBit),
    /// An `io_uring_register(2)` opcode.
    Register(u32),
    /// A flag of a provided-buffer ring's registration (`IOU_PBUF_RING_*`).
    PbufFlag(u16),
    /// Noted for completeness; nothing in the runtime depends on it.
    Note,
}

/// What an SQE may carry that an older release refuses (see [`Gate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SqeBit {
    /// `IORING_RECV_MULTISHOT` in a receive's `ioprio`.
    RecvMultishot,
    /// `IORING_RECVSEND_BUNDLE` in a send's or receive's `ioprio`.
    Bundle,
    /// A receive's byte limit in `sqe->optlen`.
    RecvLimit,
    /// `IORING_OP_URING_CMD` on a socket (`SOCKET_URING_OP_*`).
    SocketCmd,
}

/// `IORING_REGISTER_PBUF_STATUS`.
pub(crate) const REGISTER_PBUF_STATUS: u32 = 26;
/// `IOU_PBUF_RING_INC`.
pub(crate) const IOU_PBUF_RING_INC: u16 = 2;

/// What each release added, oldest first: the kernel-profile table (ARCHITECTURE.md has
/// it too). A profile of release `v` has every row with a version `<= v`.
pub(crate) const HISTORY: [(Version, Has, &str); 32] = [
    ((5, 18), Has::Setup("SUBMIT_ALL"), "IORING_SETUP_SUBMIT_ALL"),
    (
        (5, 18),
        Has::Feature(bit::REGISTERED_RING_FD),
        "IORING_REGISTER_RING_FDS",
    ),
    ((5, 18), Has::Opcodes(40), "IORING_OP_MSG_RING"),
    (
        (5, 19),
        Has::Setup("COOP_TASKRUN"),
        "IORING_SETUP_COOP_TASKRUN",
    ),
    (
        (5, 19),
        Has::Setup("TASKRUN_FLAG"),
        "IORING_SETUP_TASKRUN_FLAG",
    ),
    (
        (5, 19),
        Has::Feature(bit::BUF_RING),
        "IORING_REGISTER_PBUF_RING",
    ),
    (
        (5, 19),
        Has::Feature(bit::DIRECT_DESCRIPTORS),
        "sparse IORING_REGISTER_FILES2",
    ),
    ((5, 19), Has::Opcodes(41), "xattr ops, SOCKET, URING_CMD"),
    (
        (5, 19),
        Has::Note,
        "multishot ACCEPT, ASYNC_CANCEL_ALL/FD/ANY",
    ),
    (
        (6, 0),
        Has::Setup("SINGLE_ISSUER"),
        "IORING_SETUP_SINGLE_ISSUER",
    ),
    (
        (6, 0),
        Has::Feature(bit::RECV_MULTISHOT),
        "multishot RECV/RECVMSG",
    ),
    (
        (6, 0),
        Has::Sqe(SqeBit::RecvMultishot),
        "IORING_RECV_MULTISHOT",
    ),
    ((6, 0), Has::Opcodes(47), "IORING_OP_SEND_ZC"),
    (
        (6, 1),
        Has::Setup("DEFER_TASKRUN"),
        "IORING_SETUP_DEFER_TASKRUN",
    ),
    ((6, 1), Has::Opcodes(48), "IORING_OP_SENDMSG_ZC"),
    ((6, 6), Has::Setup("NO_SQARRAY"), "IORING_SETUP_NO_SQARRAY"),
    (
        (6, 6),
        Has::Feature(bit::NO_SQARRAY),
        "IORING_SETUP_NO_SQARRAY",
    ),
    (
        (6, 7),
        Has::Sqe(SqeBit::SocketCmd),
        "socket URING_CMD (SOCKET_URING_OP_*)",
    ),
    (
        (6, 7),
        Has::Opcodes(49),
        "READ_MULTISHOT, WAITID, FUTEX_WAIT/WAKE/WAITV",
    ),
    (
        (6, 8),
        Has::Feature(bit::FIXED_FD_INSTALL),
        "IORING_OP_FIXED_FD_INSTALL",
    ),
    ((6, 8), Has::Opcodes(54), "IORING_OP_FIXED_FD_INSTALL"),
    (
        (6, 8),
        Has::Register(REGISTER_PBUF_STATUS),
        "IORING_REGISTER_PBUF_STATUS",
    ),
    ((6, 9), Has::Opcodes(55), "IORING_OP_FTRUNCATE"),
    (
        (6, 10),
        Has::Feature(bit::RECV_BUNDLE),
        "IORING_FEAT_RECVSEND_BUNDLE",
    ),
    ((6, 10), Has::Sqe(SqeBit::Bundle), "IORING_RECVSEND_BUNDLE"),
    (
        (6, 11),
        Has::Opcodes(56),
        "IORING_OP_BIND, IORING_OP_LISTEN",
    ),
    (
        (6, 12),
        Has::Feature(bit::MIN_TIMEOUT),
        "IORING_FEAT_MIN_TIMEOUT",
    ),
    (
        (6, 12),
        Has::PbufFlag(IOU_PBUF_RING_INC),
        "IOU_PBUF_RING_INC",
    ),
    ((6, 13), Has::Note, "IORING_REGISTER_SEND_MSG_RING"),
    (
        (6, 16),
        Has::Feature(bit::RECV_INCREMENTAL),
        "IOU_PBUF_RING_INC (6.12), CQEs in order",
    ),
    (
        (6, 17),
        Has::Sqe(SqeBit::RecvLimit),
        "a receive's limit in sqe->optlen",
    ),
    (
        (6, 17),
        Has::Feature(bit::RECV_LIMIT),
        "a receive's limit in sqe->optlen (no feature flag: granted by release)",
    ),
];

/// The releases a profile can name: `RUNTIME_KERNEL`'s values, with the reasons
/// [`Features`](crate::Features) gives when the variable or the builder chose it.
const PROFILES: [(&str, Version, &str, &str); 3] = [
    (
        "5.19",
        (5, 19),
        "RUNTIME_KERNEL=5.19",
        "Builder::kernel_profile(\"5.19\")",
    ),
    (
        "6.1",
        (6, 1),
        "RUNTIME_KERNEL=6.1",
        "Builder::kernel_profile(\"6.1\")",
    ),
    (
        "6.8",
        (6, 8),
        "RUNTIME_KERNEL=6.8",
        "Builder::kernel_profile(\"6.8\")",
    ),
];

/// The release a runtime behaves as, and who asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Profile {
    /// The release.
    pub(crate) version: Version,
    /// `RUNTIME_KERNEL=...` or `Builder::kernel_profile(...)`: the reason given for what is
    /// off.
    pub(crate) why: &'static str,
}

impl Profile {
    /// The profile named `name` (`5.19`, `6.1`, `6.8`); `from_env`: `RUNTIME_KERNEL` names
    /// it. `None` for another name.
    pub(crate) fn named(name: &str, from_env: bool) -> Option<Profile> {
        let &(_, version, env, builder) = PROFILES.iter().find(|(n, ..)| *n == name.trim())?;
        Some(Profile {
            version,
            why: if from_env { env } else { builder },
        })
    }

    /// The names a profile can have, for errors.
    pub(crate) fn names() -> String {
        let names: Vec<&str> = PROFILES.iter().map(|p| p.0).collect();
        names.join(", ")
    }

    /// Whether this release has `what` (a row of [`HISTORY`]; what is not in it every
    /// supported release has).
    pub(crate) fn has(&self, what: Has) -> bool {
        HISTORY
            .iter()
            .find(|(_, h, _)| *h == what)
            .is_none_or(|(v, _, _)| *v <= self.version)
    }

    /// Whether this release takes a provided-buffer ring registered with `flags`.
    pub(crate) fn takes_pbuf_flags(&self, flags: u16) -> bool {
        (0..16)
            .map(|i| 1u16 << i)
            .filter(|f| flags & f != 0)
            .all(|f| self.has(Has::PbufFlag(f)))
    }

    /// The feature bits this release lacks.
    pub(crate) fn lacks(&self) -> u16 {
        HISTORY
            .iter()
            .filter_map(|(v, h, _)| match h {
                Has::Feature(b) if *v > self.version => Some(*b),
                _ => None,
            })
            .fold(0, |acc, b| acc | b)
    }

    /// `flags` less the setup flags this release lacks.
    pub(crate) fn limit_flags(&self, mut flags: RingFlags) -> RingFlags {
        let has = |name| self.has(Has::Setup(name));
        flags.submit_all &= has("SUBMIT_ALL");
        flags.coop_taskrun &= has("COOP_TASKRUN");
        flags.taskrun_flag &= has("TASKRUN_FLAG");
        flags.single_issuer &= has("SINGLE_ISSUER");
        flags.defer_taskrun &= has("DEFER_TASKRUN");
        flags.no_sqarray &= has("NO_SQARRAY");
        flags
    }

    /// This release's `IORING_OP_LAST`: the first opcode it does not have.
    pub(crate) fn op_last(&self) -> u8 {
        HISTORY
            .iter()
            .filter_map(|(v, h, _)| match h {
                Has::Opcodes(first) if *v > self.version => Some(*first),
                _ => None,
            })
            .min()
            .unwrap_or(u8::MAX)
    }

    /// The SQE gate of this release; `cmd_fd`: an open fd with no `uring_cmd` (the core's
    /// wake eventfd), the target a refused socket command is sent to.
    pub(crate) fn gate(&self, cmd_fd: i32) -> Gate {
        Gate {
            op_last: self.op_last(),
            recv_multishot: self.has(Has::Sqe(SqeBit::RecvMultishot)),
            bundle: self.has(Has::Sqe(SqeBit::Bundle)),
            recv_limit: self.has(Has::Sqe(SqeBit::RecvLimit)),
            socket_cmd: self.has(Has::Sqe(SqeBit::SocketCmd)),
            cmd_fd,
        }
    }
}

/// The ring's opcode probe as the runtime sees it: the kernel's, less the opcodes a
/// profile's release lacks.
pub(crate) struct OpProbe {
    probe: Option<Probe>,
    op_last: u8,
}

impl OpProbe {
    /// `probe` (`None`: the kernel has none) limited to `profile`.
    pub(crate) fn new(probe: Option<Probe>, profile: Option<Profile>) -> OpProbe {
        OpProbe {
            probe,
            op_last: profile.map_or(u8::MAX, |p| p.op_last()),
        }
    }

    /// Whether the kernel has an opcode probe at all (Linux 5.6).
    pub(crate) fn present(&self) -> bool {
        self.probe.is_some()
    }

    /// Whether opcode `code` is supported.
    pub(crate) fn supports(&self, code: u8) -> bool {
        code < self.op_last && self.probe.as_ref().is_some_and(|p| p.is_supported(code))
    }
}

/// What a profile's release refuses, checked on each SQE as it is written (see the module
/// documentation).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Gate {
    op_last: u8,
    recv_multishot: bool,
    bundle: bool,
    recv_limit: bool,
    socket_cmd: bool,
    cmd_fd: i32,
}

/// `IORING_OP_SEND`, `IORING_OP_RECV`, `IORING_OP_RECVMSG`, `IORING_OP_URING_CMD`.
const OP_SEND: u8 = 26;
const OP_RECV: u8 = 27;
const OP_RECVMSG: u8 = 10;
const OP_URING_CMD: u8 = 46;

impl Gate {
    /// `sqe` as this release would take it: unchanged, or made to fail as it would fail.
    /// Cold: only a runtime under a kernel profile calls it.
    #[cold]
    #[inline(never)]
    pub(crate) fn filter(&self, sqe: squeue::Entry) -> squeue::Entry {
        let mut s = Sqe::of(sqe);
        let op = s.opcode();
        let ioprio = s.ioprio();
        let refuse = op >= self.op_last
            || (matches!(op, OP_RECV | OP_RECVMSG)
                && ioprio & IORING_RECV_MULTISHOT != 0
                && !self.recv_multishot)
            || (matches!(op, OP_RECV | OP_SEND)
                && ioprio & IORING_RECVSEND_BUNDLE != 0
                && !self.bundle)
            || (op == OP_RECV && s.send_recv().limit != 0 && !self.recv_limit);
        if refuse {
            // An invalid opcode: `io_init_req` answers `EINVAL`.
            s.refuse();
        } else if op == OP_URING_CMD && !self.socket_cmd {
            // The runtime's only commands are socket commands: sent to a file with no
            // `uring_cmd`, the kernel answers `EOPNOTSUPP`, as a socket did before 6.7.
            s.set_regular_fd(self.cmd_fd);
        }
        s.entry()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use io_uring::{opcode, types};

    /// An opcode no kernel has: what a refused SQE becomes.
    const REFUSED: u8 = u8::MAX;

    fn opcode_of(sqe: squeue::Entry) -> u8 {
        Sqe::of(sqe).opcode()
    }

    #[test]
    fn profiles_have_what_their_release_has() {
        let p519 = Profile::named("5.19", true).unwrap();
        let p61 = Profile::named("6.1", false).unwrap();
        let p68 = Profile::named(" 6.8 ", true).unwrap();
        assert!(Profile::named("6.6", true).is_none() && Profile::named("", true).is_none());
        assert_eq!(p519.why, "RUNTIME_KERNEL=5.19");
        assert_eq!(p61.why, "Builder::kernel_profile(\"6.1\")");
        let all = RingFlags::all(8, 16);
        let f = p519.limit_flags(all);
        assert!(f.coop_taskrun && f.taskrun_flag && f.submit_all);
        assert!(!f.single_issuer && !f.defer_taskrun && !f.no_sqarray);
        let f = p61.limit_flags(all);
        assert!(f.single_issuer && f.defer_taskrun && !f.no_sqarray);
        assert_eq!(p68.limit_flags(all), all);
        let lacks_68 =
            bit::RECV_BUNDLE | bit::MIN_TIMEOUT | bit::RECV_INCREMENTAL | bit::RECV_LIMIT;
        assert_eq!(p68.lacks(), lacks_68);
        let lacks_61 = lacks_68 | bit::NO_SQARRAY | bit::FIXED_FD_INSTALL;
        assert_eq!(p61.lacks(), lacks_61);
        assert_eq!(p519.lacks(), lacks_61 | bit::RECV_MULTISHOT);
        assert_eq!(p519.op_last(), opcode::SendZc::CODE);
        assert_eq!(p61.op_last(), opcode::ReadMulti::CODE);
        assert_eq!(p68.op_last(), opcode::Ftruncate::CODE);
        assert!(p68.has(Has::Register(REGISTER_PBUF_STATUS)));
        assert!(!p61.has(Has::Register(REGISTER_PBUF_STATUS)));
        assert!(p68.takes_pbuf_flags(0) && !p68.takes_pbuf_flags(IOU_PBUF_RING_INC));
    }

    #[test]
    fn the_gate_refuses_what_the_release_lacks() {
        let p519 = Profile::named("5.19", true).unwrap().gate(7);
        let p68 = Profile::named("6.8", true).unwrap().gate(7);
        let zc = opcode::SendZc::new(types::Fd(3), std::ptr::null(), 0).build();
        assert_eq!(opcode_of(p519.filter(zc.clone())), REFUSED);
        assert_eq!(opcode_of(p68.filter(zc)), opcode::SendZc::CODE);
        let waitid = opcode::WaitId::new(libc::P_PIDFD, 3, libc::WEXITED).build();
        assert_eq!(opcode_of(p68.filter(waitid)), opcode::WaitId::CODE);
        let ftruncate = opcode::Ftruncate::new(types::Fd(3), 0).build();
        assert_eq!(opcode_of(p68.filter(ftruncate)), REFUSED);
        let multi = opcode::RecvMulti::new(types::Fd(3), 1).build();
        assert_eq!(opcode_of(p519.filter(multi.clone())), REFUSED);
        assert_eq!(opcode_of(p68.filter(multi)), opcode::Recv::CODE);
        let recv = opcode::Recv::new(types::Fd(3), std::ptr::null_mut(), 0).build();
        assert_eq!(opcode_of(p519.filter(recv)), opcode::Recv::CODE);
        let bundle = opcode::RecvMultiBundle::new(types::Fd(3), 1).build();
        assert_eq!(opcode_of(p68.filter(bundle)), REFUSED);
        let cmd = opcode::UringCmd16::new(types::Fixed(0), 3).build();
        let r519 = Sqe::of(p519.filter(cmd.clone()));
        assert_eq!((r519.opcode(), r519.fixed_file()), (OP_URING_CMD, false));
        assert_eq!(r519.fd(), 7);
        assert!(Sqe::of(p68.filter(cmd)).fixed_file());
    }
}
