//! Probing a new ring for the [`Features`] its [`RingConfig`] asks for, and registering what
//! they need (the sparse fixed-file table); limited to what a kernel profile's release has
//! (see [`super::kernel`]).

use io_uring::{opcode, IoUring};

use super::features::{bit, Features, RingConfig};
use super::kernel::{OpProbe, IOU_PBUF_RING_INC};
use super::RingFlags;

/// The largest direct-descriptor table registered at setup.
const MAX_DIRECT_DESCRIPTORS: u32 = 65536;

/// Probes `ring` (set up with the granted `flags`, from `config`) for the features
/// `config` asks for, and registers what they need: the sparse fixed-file table for direct
/// descriptors. `probe` is the ring's opcode probe (limited to a kernel profile's release);
/// `registered_ring_fd` says whether the driver registered the ring's fd.
pub(crate) fn probe(
    ring: &IoUring,
    config: &RingConfig,
    flags: RingFlags,
    probe: &OpProbe,
    registered_ring_fd: bool,
) -> Features {
    let supported = |code: u8| probe.supports(code);
    let params = ring.params();
    // What a kernel profile's release lacks is never asked of the kernel.
    let lacks = config.profile.map_or(0, |p| p.lacks());
    let asks = |b: u16| config.asks(b) && lacks & b == 0;
    let mut granted = 0;
    let mut grant = |b: u16, on: bool| {
        if on && asks(b) {
            granted |= b;
        }
    };
    grant(bit::REGISTERED_RING_FD, registered_ring_fd);
    grant(bit::NO_SQARRAY, flags.no_sqarray);
    grant(bit::MIN_TIMEOUT, params.is_feature_min_timeout());
    let buf_ring = asks(bit::BUF_RING) && buf_ring_works(ring, 0);
    grant(bit::BUF_RING, buf_ring);
    // IORING_RECV_MULTISHOT came in 6.0 with no feature flag of its own; IORING_OP_SEND_ZC
    // came in the same release and the probe sees it.
    let multishot = buf_ring && supported(opcode::SendZc::CODE);
    grant(bit::RECV_MULTISHOT, multishot);
    grant(
        bit::RECV_INCREMENTAL,
        buf_ring
            && asks(bit::RECV_INCREMENTAL)
            && kernel_at_least(6, 16)
            && buf_ring_works(ring, IOU_PBUF_RING_INC),
    );
    // A receive's byte limit in `sqe->optlen` came in 6.17 with no feature flag, and an
    // older kernel refuses it only when a receive carries one: the release says.
    grant(bit::RECV_LIMIT, kernel_at_least(6, 17));
    grant(
        bit::RECV_BUNDLE,
        buf_ring && params.is_feature_recvsend_bundle(),
    );
    let slots = config.fixed_files.unwrap_or_else(direct_descriptor_slots);
    let direct = asks(bit::DIRECT_DESCRIPTORS)
        && slots > 0
        && ring.submitter().register_files_sparse(slots).is_ok();
    grant(bit::DIRECT_DESCRIPTORS, direct);
    grant(
        bit::FIXED_FD_INSTALL,
        supported(opcode::FixedFdInstall::CODE),
    );
    let mut features = Features::new(config, granted);
    features.ops = [0; 4];
    for code in (0..=u8::MAX).filter(|&c| probe.supports(c)) {
        features.ops[usize::from(code / 64)] |= 1 << (code % 64);
    }
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
}
