//! What a core's ring can do beyond its setup flags ([`Features`]), and what the
//! [`Builder`](crate::Builder) asked of it ([`RingConfig`]).
//!
//! Every feature is asked for by default; one the kernel lacks is switched off silently and
//! [`Features`] says so, and why: the builder switched it off, or the kernel lacked (or
//! refused) it. Each core probes its own ring, so [`crate::features`] answers for the core
//! it is called on.

use std::fmt;

use io_uring::{opcode, IoUring, Probe};

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
    /// Every feature: what a default [`crate::Builder`] asks for.
    pub(crate) const ALL: u16 = (1 << 9) - 1;
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
/// (builder), recv_bundle (kernel); recv buffers 1024x16384`. On the readiness backend
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
}

impl Features {
    /// Features of a ring built from `config`, granting `granted` ([`bit`]s, already
    /// limited to those asked for).
    pub(crate) fn new(config: &RingConfig, granted: u16) -> Features {
        let granted = granted & config.asked;
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
            recv_ring_entries: config.recv_ring_entries,
            recv_ring_buf_len: config.recv_ring_buf_len,
            fixed_files: 0,
            asked: config.asked,
        }
    }

    /// The features of the readiness backend, chosen because of `why`: provided-buffer
    /// rings and multishot receives (which it carries out itself, so the default read path
    /// is the same), every other io_uring feature off.
    pub(crate) fn readiness(config: &RingConfig, why: &'static str) -> Features {
        Features {
            backend: Backend::Epoll,
            backend_reason: why,
            ..Features::new(config, bit::BUF_RING | bit::RECV_MULTISHOT)
        }
    }

    /// Each feature's name, bit and state, in `Display` order.
    fn each(&self) -> [(&'static str, u16, bool); 9] {
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
            let why = if self.asked & b == 0 {
                "builder"
            } else if self.backend == Backend::Epoll {
                "epoll backend"
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

/// The largest direct-descriptor table registered at setup.
const MAX_DIRECT_DESCRIPTORS: u32 = 65536;

/// Probes `ring` (set up with the granted `flags`, from `config`) for the features
/// `config` asks for, and registers what they need: the sparse fixed-file table for direct
/// descriptors. `probe` is the ring's opcode probe, `None` if the kernel has none;
/// `registered_ring_fd` says whether the driver registered the ring's fd.
pub(crate) fn probe(
    ring: &IoUring,
    config: &RingConfig,
    flags: RingFlags,
    probe: Option<&Probe>,
    registered_ring_fd: bool,
) -> Features {
    let supported = |code: u8| probe.is_some_and(|p| p.is_supported(code));
    let params = ring.params();
    let mut granted = 0;
    let mut grant = |b: u16, on: bool| {
        if on && config.asks(b) {
            granted |= b;
        }
    };
    grant(bit::REGISTERED_RING_FD, registered_ring_fd);
    grant(bit::NO_SQARRAY, flags.no_sqarray);
    grant(bit::MIN_TIMEOUT, params.is_feature_min_timeout());
    let buf_ring = config.asks(bit::BUF_RING) && buf_ring_works(ring, 0);
    grant(bit::BUF_RING, buf_ring);
    // IORING_RECV_MULTISHOT came in 6.0 with no feature flag of its own; IORING_OP_SEND_ZC
    // came in the same release and the probe sees it.
    let multishot = buf_ring && supported(opcode::SendZc::CODE);
    grant(bit::RECV_MULTISHOT, multishot);
    grant(
        bit::RECV_INCREMENTAL,
        buf_ring
            && config.asks(bit::RECV_INCREMENTAL)
            && kernel_at_least(6, 16)
            && buf_ring_works(ring, IOU_PBUF_RING_INC),
    );
    grant(
        bit::RECV_BUNDLE,
        buf_ring && params.is_feature_recvsend_bundle(),
    );
    let slots = config.fixed_files.unwrap_or_else(direct_descriptor_slots);
    let direct = config.asks(bit::DIRECT_DESCRIPTORS)
        && slots > 0
        && ring.submitter().register_files_sparse(slots).is_ok();
    grant(bit::DIRECT_DESCRIPTORS, direct);
    grant(
        bit::FIXED_FD_INSTALL,
        supported(opcode::FixedFdInstall::CODE),
    );
    let mut features = Features::new(config, granted);
    if features.direct_descriptors {
        features.fixed_files = slots;
    }
    features
}

/// How many direct descriptors the table has room for by default: the process's
/// `RLIMIT_NOFILE` soft limit (the kernel refuses a larger table), at most
/// [`MAX_DIRECT_DESCRIPTORS`].
fn direct_descriptor_slots() -> u32 {
    nofile_soft_limit().min(u64::from(MAX_DIRECT_DESCRIPTORS)) as u32
}

/// The process's `RLIMIT_NOFILE` soft limit (1024 if it cannot be read).
pub(crate) fn nofile_soft_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only the `rlimit` it is given, which lives across the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 1024;
    }
    // `rlim_t` is narrower than `u64` on some 32-bit targets.
    #[allow(clippy::unnecessary_cast)]
    let soft = lim.rlim_cur as u64;
    soft
}

/// `IOU_PBUF_RING_INC` (Linux 6.12).
const IOU_PBUF_RING_INC: u16 = 2;

/// Whether the running kernel's release (`uname -r`) is at least `major.minor`.
fn kernel_at_least(major: u32, minor: u32) -> bool {
    // SAFETY: `utsname` is plain bytes; uname(2) fills the one it is given.
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `uts` is a valid, writable `utsname` for the call.
    if unsafe { libc::uname(&mut uts) } != 0 {
        return false;
    }
    let release: String = uts
        .release
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8 as char)
        .collect();
    release_at_least(&release, major, minor)
}

/// Whether a kernel release string (`6.18.0-foo`) is at least `major.minor`.
fn release_at_least(release: &str, major: u32, minor: u32) -> bool {
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(a), Some(b)) => (a, b) >= (major, minor),
        _ => false,
    }
}

/// Whether the kernel takes a provided-buffer ring with `flags`: registers a one-entry ring
/// under a group id nothing else on this (new) ring uses yet, and unregisters it.
fn buf_ring_works(ring: &IoUring, flags: u16) -> bool {
    /// Group id of the probe's ring, unregistered before any other ring is registered.
    const PROBE_BGID: u16 = u16::MAX;
    // One page: the kernel wants the ring page-aligned, and a `struct io_uring_buf` (16
    // bytes) per entry.
    let len = 4096;
    // SAFETY: a fresh private anonymous mapping; no existing memory is affected.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return false;
    }
    // SAFETY: `addr` is a page-aligned, zeroed mapping of at least one `io_uring_buf`,
    // which stays mapped until after the ring is unregistered below (or was never
    // registered).
    let registered = unsafe {
        ring.submitter()
            .register_buf_ring_with_flags(addr as u64, 1, PROBE_BGID, flags)
            .is_ok()
    };
    let ok = registered && ring.submitter().unregister_buf_ring(PROBE_BGID).is_ok();
    if registered && !ok {
        // Still registered: the kernel may read the ring, so it stays mapped (one page,
        // leaked once).
        return false;
    }
    // SAFETY: the mapping made above; the kernel no longer uses it (unregistered, or
    // never registered).
    unsafe { libc::munmap(addr, len) };
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_releases_compare_by_major_and_minor() {
        assert!(release_at_least("6.18.0-1-amd64", 6, 16));
        assert!(release_at_least("6.16", 6, 16));
        assert!(release_at_least("7.0.1", 6, 16));
        assert!(!release_at_least("6.15.9", 6, 16));
        assert!(!release_at_least("5.19.0", 6, 16));
        assert!(!release_at_least("", 6, 16));
        assert!(!release_at_least("garbage", 6, 16));
    }

    #[test]
    fn display_names_granted_and_why_the_rest_is_off() {
        let mut config = RingConfig::all(8, 16);
        let f = Features::new(&config, bit::ALL);
        assert_eq!(
            f.to_string(),
            "backend: io_uring (the default, io_uring is allowed here); \
             granted: registered_ring_fd|no_sqarray|min_timeout|buf_ring|recv_multishot|\
             recv_bundle|direct_descriptors|fixed_fd_install|recv_incremental; off: (none); \
             recv buffers 1024x16384"
        );
        config.asked &= !(bit::MIN_TIMEOUT | bit::RECV_BUNDLE);
        let f = Features::new(&config, bit::ALL & !bit::FIXED_FD_INSTALL);
        assert!(!f.min_timeout && !f.recv_bundle && !f.fixed_fd_install);
        assert_eq!(
            f.to_string(),
            "backend: io_uring (the default, io_uring is allowed here); \
             granted: registered_ring_fd|no_sqarray|buf_ring|recv_multishot|\
             direct_descriptors|recv_incremental; off: min_timeout (builder), recv_bundle \
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
        let s = f.to_string();
        assert!(s.starts_with("backend: epoll (forced by a test); granted: buf_ring|recv_multishot; off: registered_ring_fd (epoll backend), "), "{s}");
        assert!(s.contains("min_timeout (epoll backend)"), "{s}");
        let f = Features::readiness(&config, "forced by a test");
        assert!(f.to_string().contains("min_timeout (builder)"), "{f}");
    }
}
