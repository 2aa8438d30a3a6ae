//! Helpers shared by the integration tests: TLS configurations, fd and fixed-table counts, the
//! backend's refusals.

#![allow(dead_code)]

pub mod backend;
pub mod fds;
#[cfg(feature = "tls")]
pub mod tls;

/// Deterministic test bytes: `len` bytes derived from `seed` (xorshift).
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
