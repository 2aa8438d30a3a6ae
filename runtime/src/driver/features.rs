//! What a core's ring can do beyond its setup flags ([`Features`]), and what the
//! [`Builder`](crate::Builder) asked of it ([`RingConfig`]).
//!
//! Every feature is asked for by default; one the kernel lacks is switched off silently and
//! [`Features`] says so, and why: the builder switched it off, or the kernel lacked (or
//! refused) it. Each core probes its own ring, so [`crate::features`] answers for the core
//! it is called on.

use std::fmt;

use super::kernel::Profile;
use super::{Backend, RingFlags};

/// One bit per feature, in [`Features::asked`] and [`RingConfig::asked`].
pub(crate) mod bit {
    /// [`super::Features::registered_ring_fd`].
    pub(crate) const REGISTERED_RING_FD: u16 = 1 << 0;
    /// [`super::Features::no_sqarray`].
    pub(crate) const NO_SQARRAY: u16 = 1 << 1;
    /// [`super::Features::min_timeout`].
    pub(crate) const MIN_TIMEOUT: u16 = 1 << 2;
    /// [`super::Features::buf_ring`].
    pub(crate) const BUF_RING: u16 = 1 << 3;
    /// [`super::Features::recv_multishot`].
    pub(crate) const RECV_MULTISHOT: u16 = 1 << 4;
    /// [`super::Features::recv_bundle`].
    pub(crate) const RECV_BUNDLE: u16 = 1 << 5;
    /// [`super::Features::direct_descriptors`].
    pub(crate) const DIRECT_DESCRIPTORS: u16 = 1 << 6;
    /// [`super::Features::fixed_fd_install`].
    pub(crate) const FIXED_FD_INSTALL: u16 = 1 << 7;
    /// [`super::Features::recv_incremental`].
    pub(crate) const RECV_INCREMENTAL: u16 = 1 << 8;
    /// [`super::Features::recv_limit`].
    pub(crate) const RECV_LIMIT: u16 = 1 << 9;
    /// Every feature: what a default [`crate::Builder`] asks for.
    pub(crate) const ALL: u16 = (1 << 10) - 1;
}

/// Default [`Features::recv_ring_entries`].
pub(crate) const DEFAULT_RECV_RING_ENTRIES: u16 = 1024;
/// Default [`Features::recv_ring_buf_len`].
pub(crate) const DEFAULT_RECV_RING_BUF_LEN: u32 = 16384;
/// The largest [`Features::recv_ring_entries`] (the kernel takes buffer rings of fewer than
/// 65536 entries; half that keeps one ring's memory reasonable).
pub(crate) const MAX_RECV_RING_ENTRIES: u16 = 32768;
/// The largest [`Features::recv_ring_buf_len`]: 1 MiB.
pub(crate) const MAX_RECV_RING_BUF_LEN: u32 = 1 << 20;

/// What the [`Builder`](crate::Builder) asks of each core's ring: its setup flags, the
/// features it wants, and the read path's buffer-ring size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RingConfig {
    /// The setup flags asked for (`no_sqarray` among them).
    pub(crate) flags: RingFlags,
    /// The features asked for, as [`bit`]s.
    pub(crate) asked: u16,
    /// See [`Features::recv_ring_entries`].
    pub(crate) recv_ring_entries: u16,
    /// See [`Features::recv_ring_buf_len`].
    pub(crate) recv_ring_buf_len: u32,
    /// Slots of the direct-descriptor table; `None`: the default (see
    /// [`Features::fixed_files`]).
    pub(crate) fixed_files: Option<u32>,
    /// The backend asked for.
    pub(crate) backend: Backend,
    /// Who asked for it, when not `Auto` (the builder or `RUNTIME_BACKEND`).
    pub(crate) backend_why: &'static str,
    /// The kernel release to behave as (`RUNTIME_KERNEL`, `Builder::kernel_profile`).
    pub(crate) profile: Option<Profile>,
}

impl RingConfig {
    /// Every flag and feature, the default buffer-ring size.
    pub(crate) fn all(sq_entries: u32, cq_entries: u32) -> RingConfig {
        RingConfig {
            flags: RingFlags::all(sq_entries, cq_entries),
            asked: bit::ALL,
            recv_ring_entries: DEFAULT_RECV_RING_ENTRIES,
            recv_ring_buf_len: DEFAULT_RECV_RING_BUF_LEN,
            fixed_files: None,
            backend: Backend::Auto,
            backend_why: "",
            profile: None,
        }
    }

    /// Whether feature `bit` is asked for.
    pub(crate) fn asks(&self, bit: u16) -> bool {
        self.asked & bit != 0
    }
}

/// The kernel features one core's ring was granted (see [`crate::features`],
/// [`Runtime::features`](crate::Runtime::features)).
///
/// A feature is `true` when the [`Builder`](crate::Builder) asked for it (every one is asked
/// for by default) and this kernel has it. Its `Display` names what was granted and, for
/// each feature that is off, whether the builder switched it off or the kernel lacked it:
/// `backend: io_uring (...); granted: registered_ring_fd|no_sqarray; off: min_timeout
/// (builder), recv_bundle (kernel); recv buffers 1024x16384`. Under a kernel profile, a
/// feature its release lacks is off for that reason: `recv_bundle (RUNTIME_KERNEL=6.1)`
/// (see [`Builder::kernel_profile`](crate::Builder::kernel_profile)). On the readiness backend
/// every feature is off, for that reason: `off: registered_ring_fd (epoll backend), ...`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Features {
    /// The backend this core runs: [`Backend::IoUring`] or [`Backend::Epoll`] (never
    /// `Auto`). On epoll every io_uring feature below is off.
    pub backend: Backend,
    /// Why this backend runs: the default, who forced it (the builder or
    /// `RUNTIME_BACKEND`), or why io_uring was refused.
    pub backend_reason: &'static str,
    /// The ring's own fd is registered (`IORING_REGISTER_RING_FDS`, Linux 5.18) and every
    /// `io_uring_enter(2)` of the driver passes its index with
    /// `IORING_ENTER_REGISTERED_RING`, saving the kernel an fd lookup per enter. Builder
    /// switch: [`Builder::registered_ring_fd`](crate::Builder::registered_ring_fd).
    pub registered_ring_fd: bool,
    /// The ring was set up with `IORING_SETUP_NO_SQARRAY` (Linux 6.6): the kernel reads SQEs
    /// in ring order, without the SQ array's indirection. Builder switch:
    /// [`Builder::no_sqarray`](crate::Builder::no_sqarray).
    pub no_sqarray: bool,
    /// Waits may carry a minimum timeout (`min_wait_usec` of `io_uring_getevents_arg`,
    /// `IORING_FEAT_MIN_TIMEOUT`, Linux 6.12): a task waiting for a batch of completions (a
    /// linked chain) waits for all of it, but for at most a few microseconds before taking
    /// what arrived. Waits with nothing in flight are unchanged. Builder switch:
    /// [`Builder::min_timeout`](crate::Builder::min_timeout).
    pub min_timeout: bool,
    /// Provided-buffer rings (`IORING_REGISTER_PBUF_RING`, Linux 5.19), checked by
    /// registering and unregistering a one-entry ring at setup. No builder switch.
    pub buf_ring: bool,
    /// Multishot receives (`IORING_RECV_MULTISHOT`, Linux 6.0) picking buffers from a
    /// provided-buffer ring, as the default read path of sockets; granted with
    /// [`buf_ring`](Features::buf_ring) on a kernel of 6.0 or newer (the probe's
    /// `IORING_OP_SEND_ZC`, of the same release, stands for it). Builder switch:
    /// [`Builder::recv_multishot`](crate::Builder::recv_multishot).
    pub recv_multishot: bool,
    /// Bundled receives, one CQE for several provided buffers
    /// (`IORING_FEAT_RECVSEND_BUNDLE`, Linux 6.10); needs [`buf_ring`](Features::buf_ring).
    /// Builder switch: [`Builder::recv_bundle`](crate::Builder::recv_bundle).
    pub recv_bundle: bool,
    /// A sparse fixed-file table (`IORING_REGISTER_FILES2` with
    /// `IORING_RSRC_REGISTER_SPARSE`, Linux 5.19) is registered at setup, of
    /// [`fixed_files`](Features::fixed_files) slots, for direct descriptors: sockets
    /// accepted into it are named by their index in every op (no per-op fd lookup), when
    /// [`fixed_fd_install`](Features::fixed_fd_install) is granted too (a regular fd can
    /// then be made on demand). Builder switch:
    /// [`Builder::direct_descriptors`](crate::Builder::direct_descriptors).
    pub direct_descriptors: bool,
    /// `IORING_OP_FIXED_FD_INSTALL` (Linux 6.8) is supported (the opcode probe): a direct
    /// descriptor can be turned into a regular fd. No builder switch.
    pub fixed_fd_install: bool,
    /// The read path's buffer ring is consumed incrementally (`IOU_PBUF_RING_INC`, Linux
    /// 6.12): a receive takes only the bytes it needs from the buffer at the ring's head,
    /// so small messages pack into one buffer instead of taking one each. Needs
    /// [`buf_ring`](Features::buf_ring) (and is used with
    /// [`recv_multishot`](Features::recv_multishot)); granted on Linux 6.16 or newer, where
    /// the kernel posts the CQEs of all ops sharing a ring in the order they consumed it
    /// (the offsets follow from that order; earlier kernels could post a stopping
    /// multishot's last CQE late). Builder switch:
    /// [`Builder::recv_incremental`](crate::Builder::recv_incremental).
    pub recv_incremental: bool,
    /// A multishot receive may carry a byte limit in `sqe->optlen` (Linux 6.17; granted on
    /// a kernel of that release or newer, as no feature flag or probe says it): the kernel
    /// ends the receive once it has received that many bytes, so a connection nobody reads
    /// holds a bounded share of the buffer ring. Used with
    /// [`recv_multishot`](Features::recv_multishot); without it the read path's only bound
    /// is the driver's cancel of a multishot op whose CQEs wait unread. The epoll backend
    /// plays the limit itself. No builder switch.
    pub recv_limit: bool,
    /// Entries of the per-core provided-buffer ring the read path creates (a power of two,
    /// default 1024). Set with [`Builder::recv_buffers`](crate::Builder::recv_buffers).
    pub recv_ring_entries: u16,
    /// Bytes of each buffer of that ring (default 16384). Set with
    /// [`Builder::recv_buffers`](crate::Builder::recv_buffers).
    pub recv_ring_buf_len: u32,
    /// Slots of the direct-descriptor table: by default the process's `RLIMIT_NOFILE` soft
    /// limit at setup, at most 65536; set with
    /// [`Builder::fixed_files`](crate::Builder::fixed_files). 0 when
    /// [`direct_descriptors`](Features::direct_descriptors) is off.
    pub fixed_files: u32,
    /// The features the builder asked for ([`bit`]s): an off feature the builder asked for
    /// is off because of the kernel.
    asked: u16,
    /// The kernel profile the ring was limited to.
    pub(crate) profile: Option<Profile>,
    /// The opcodes the ring takes, a bit each (see [`Features::supports_op`]).
    pub(crate) ops: [u64; 4],
}

impl Features {
    /// Features of a ring built from `config`, granting `granted` ([`bit`]s, already
    /// limited to those asked for).
    pub(crate) fn new(config: &RingConfig, granted: u16) -> Features {
        let granted = granted & config.asked & !config.profile.map_or(0, |p| p.lacks());
        let on = |b: u16| granted & b != 0;
        Features {
            backend: Backend::IoUring,
            backend_reason: match config.backend {
                Backend::IoUring => config.backend_why,
                _ => "the default, io_uring is allowed here",
            },
            registered_ring_fd: on(bit::REGISTERED_RING_FD),
            no_sqarray: on(bit::NO_SQARRAY),
            min_timeout: on(bit::MIN_TIMEOUT),
            buf_ring: on(bit::BUF_RING),
            recv_multishot: on(bit::RECV_MULTISHOT),
            recv_bundle: on(bit::RECV_BUNDLE),
            direct_descriptors: on(bit::DIRECT_DESCRIPTORS),
            fixed_fd_install: on(bit::FIXED_FD_INSTALL),
            recv_incremental: on(bit::RECV_INCREMENTAL),
            recv_limit: on(bit::RECV_LIMIT),
            recv_ring_entries: config.recv_ring_entries,
            recv_ring_buf_len: config.recv_ring_buf_len,
            fixed_files: 0,
            asked: config.asked,
            profile: config.profile,
            ops: [u64::MAX; 4],
        }
    }

    /// The features of the readiness backend, chosen because of `why`: provided-buffer
    /// rings, multishot receives and their byte limit (which it carries out itself, so the
    /// default read path is the same), every other io_uring feature off.
    pub(crate) fn readiness(config: &RingConfig, why: &'static str) -> Features {
        // A kernel profile limits the ring, not this backend; it is still reported.
        let unprofiled = RingConfig {
            profile: None,
            ..*config
        };
        Features {
            backend: Backend::Epoll,
            backend_reason: why,
            profile: config.profile,
            ..Features::new(
                &unprofiled,
                bit::BUF_RING | bit::RECV_MULTISHOT | bit::RECV_LIMIT,
            )
        }
    }

    /// The kernel profile this core behaves as (`RUNTIME_KERNEL=6.1`, or
    /// `Builder::kernel_profile("6.1")`), if any: see
    /// [`Builder::kernel_profile`](crate::Builder::kernel_profile).
    pub fn kernel_profile(&self) -> Option<&'static str> {
        self.profile.map(|p| p.why)
    }

    /// Whether this core takes opcode `code` (an `io_uring::opcode::*::CODE`): the kernel's
    /// opcode probe, less what a kernel profile's release lacks; every opcode on the epoll
    /// backend, which carries out (or refuses) each itself. An op the ring lacks answers
    /// `EINVAL`; crates with a fallback (a blocking-pool call, a plain send) check this
    /// first:
    ///
    /// ```
    /// use runtime::ext::io_uring::opcode;
    ///
    /// let rt = runtime::Builder::new().kernel_profile("6.8").build()?;
    /// assert!(rt.features().supports_op(opcode::Read::CODE));
    /// assert!(!rt.features().supports_op(opcode::Ftruncate::CODE) || rt.features().backend == runtime::Backend::Epoll);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn supports_op(&self, code: u8) -> bool {
        self.ops[usize::from(code / 64)] & (1 << (code % 64)) != 0
    }

    /// Each feature's name, bit and state, in `Display` order.
    fn each(&self) -> [(&'static str, u16, bool); 10] {
        [
            (
                "registered_ring_fd",
                bit::REGISTERED_RING_FD,
                self.registered_ring_fd,
            ),
            ("no_sqarray", bit::NO_SQARRAY, self.no_sqarray),
            ("min_timeout", bit::MIN_TIMEOUT, self.min_timeout),
            ("buf_ring", bit::BUF_RING, self.buf_ring),
            ("recv_multishot", bit::RECV_MULTISHOT, self.recv_multishot),
            ("recv_bundle", bit::RECV_BUNDLE, self.recv_bundle),
            (
                "direct_descriptors",
                bit::DIRECT_DESCRIPTORS,
                self.direct_descriptors,
            ),
            (
                "fixed_fd_install",
                bit::FIXED_FD_INSTALL,
                self.fixed_fd_install,
            ),
            (
                "recv_incremental",
                bit::RECV_INCREMENTAL,
                self.recv_incremental,
            ),
            ("recv_limit", bit::RECV_LIMIT, self.recv_limit),
        ]
    }
}

impl fmt::Display for Features {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let all = self.each();
        write!(
            f,
            "backend: {} ({}); granted: ",
            self.backend, self.backend_reason
        )?;
        let granted = all.iter().filter(|(_, _, on)| *on).map(|(name, _, _)| name);
        write_list(f, granted, "|")?;
        f.write_str("; off: ")?;
        let off = all.iter().filter(|(_, _, on)| !*on).map(|(name, b, _)| {
            let lacked = self.profile.filter(|p| p.lacks() & b != 0);
            let why = if self.asked & b == 0 {
                "builder"
            } else if self.backend == Backend::Epoll {
                "epoll backend"
            } else if let Some(p) = lacked {
                p.why
            } else {
                "kernel"
            };
            format!("{name} ({why})")
        });
        write_list(f, off, ", ")?;
        write!(
            f,
            "; recv buffers {}x{}",
            self.recv_ring_entries, self.recv_ring_buf_len
        )
    }
}

/// Writes `items` separated by `sep`, or `(none)` if there are none: the lists of the
/// ring's `Display`s (its flags, its features).
pub(crate) fn write_list<T: fmt::Display>(
    f: &mut fmt::Formatter<'_>,
    items: impl IntoIterator<Item = T>,
    sep: &str,
) -> fmt::Result {
    let mut first = true;
    for item in items {
        if !first {
            f.write_str(sep)?;
        }
        write!(f, "{item}")?;
        first = false;
    }
    if first {
        f.write_str("(none)")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_granted_and_why_the_rest_is_off() {
        let mut config = RingConfig::all(8, 16);
        let f = Features::new(&config, bit::ALL);
        assert_eq!(
            f.to_string(),
            "backend: io_uring (the default, io_uring is allowed here); \
             granted: registered_ring_fd|no_sqarray|min_timeout|buf_ring|recv_multishot|\
             recv_bundle|direct_descriptors|fixed_fd_install|recv_incremental|recv_limit; \
             off: (none); \
             recv buffers 1024x16384"
        );
        config.asked &= !(bit::MIN_TIMEOUT | bit::RECV_BUNDLE);
        let f = Features::new(&config, bit::ALL & !bit::FIXED_FD_INSTALL);
        assert!(!f.min_timeout && !f.recv_bundle && !f.fixed_fd_install);
        assert_eq!(
            f.to_string(),
            "backend: io_uring (the default, io_uring is allowed here); \
             granted: registered_ring_fd|no_sqarray|buf_ring|recv_multishot|\
             direct_descriptors|recv_incremental|recv_limit; off: min_timeout (builder), recv_bundle \
             (builder), fixed_fd_install (kernel); recv buffers 1024x16384"
        );
        let f = Features::new(&config, 0);
        assert!(f
            .to_string()
            .contains("; granted: (none); off: registered_ring_fd (kernel)"));
        // The readiness backend: everything off because of it, and why it runs.
        let f = Features::readiness(&RingConfig::all(8, 16), "forced by a test");
        assert_eq!(f.backend, Backend::Epoll);
        assert!(f.buf_ring && f.recv_multishot && !f.recv_bundle && !f.direct_descriptors);
        assert!(f.recv_limit, "the backend plays the receive limit");
        let s = f.to_string();
        assert!(s.starts_with("backend: epoll (forced by a test); granted: buf_ring|recv_multishot|recv_limit; off: registered_ring_fd (epoll backend), "), "{s}");
        assert!(s.contains("min_timeout (epoll backend)"), "{s}");
        let f = Features::readiness(&config, "forced by a test");
        assert!(f.to_string().contains("min_timeout (builder)"), "{f}");
    }

    #[test]
    fn a_profile_before_6_17_lacks_the_receive_limit() {
        let mut config = RingConfig::all(8, 16);
        for name in ["5.19", "6.1", "6.8"] {
            config.profile = Profile::named(name, true);
            let f = Features::new(&config, bit::ALL);
            assert!(!f.recv_limit, "{f}");
            let why = format!("recv_limit (RUNTIME_KERNEL={name})");
            assert!(f.to_string().contains(&why), "{f}");
            // The epoll backend plays it whatever the profile.
            assert!(Features::readiness(&config, "test").recv_limit);
        }
    }
}
