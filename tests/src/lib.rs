//! Helpers shared by the end-to-end tests in `tests/tests/` and the soak binary: a seeded
//! PRNG, process gauges (RSS, open fds), pipes, `RLIMIT_NOFILE` (from `sysutil`), and the
//! quarantine allocator that catches kernel writes into freed memory.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub mod quarantine;
pub mod stress;

use std::os::fd::{FromRawFd, OwnedFd};

/// A small, seeded PRNG (splitmix64): the same seed gives the same sequence.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `1 / n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
}

/// The seed of a randomized test: `SEED` from the environment if set, else `default`.
pub fn seed_from_env(default: u64) -> u64 {
    match std::env::var("SEED") {
        Ok(s) => {
            let s = s.trim();
            s.strip_prefix("0x")
                .map(|h| u64::from_str_radix(h, 16))
                .unwrap_or_else(|| s.parse())
                .unwrap_or_else(|e| panic!("SEED={s:?} is not a number: {e}"))
        }
        Err(_) => default,
    }
}

/// The byte at position `i` of every test payload: never 0 and never the quarantine's
/// pattern, so a kernel write into a freed block always changes it.
pub fn payload_byte(i: u64) -> u8 {
    (i % 0x7F) as u8 + 1
}

/// `len` payload bytes starting at position `start`.
pub fn payload(start: u64, len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| payload_byte(start + i)).collect()
}

/// Whether every byte is a payload byte.
pub fn is_payload(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| (1..=0x7F).contains(&b))
}

/// Open fds of this process.
pub fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .count()
}

/// Resident set size of this process in KiB (`VmRSS` of /proc/self/status).
pub fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status")
}

/// A pipe: (read end, write end), both close-on-exec.
pub fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two ints.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(r, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: both fds are new and owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

pub use sysutil::set_nofile_soft;

/// `RLIMIT_NOFILE` as (soft, hard).
pub fn nofile_limit() -> (u64, u64) {
    sysutil::nofile_limit().expect("getrlimit(RLIMIT_NOFILE)")
}
