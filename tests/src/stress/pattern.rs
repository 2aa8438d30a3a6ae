//! The bytes every stress connection carries: a pure function of the connection's number and
//! the byte's offset in its stream, so a wrong byte is not only found but names where it
//! came from.
//!
//! The stream is a run of 8-byte little-endian words; word `k` of connection `c` is an
//! invertible mix of `(c << 44) | k`. A reader compares what it got with what it expected;
//! at the first difference it decodes the received word (trying each of the eight
//! alignments) back to a connection and an offset: "conn 17 got conn 203's bytes of offset
//! 81920", or "its own bytes from 32768 bytes earlier".

use std::fmt;

/// Bits of a word that hold the word's index in its stream (the rest name the connection).
const INDEX_BITS: u32 = 44;
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;
/// The mix: `(v * MUL) ^ XOR`, invertible since `MUL` is odd.
const MUL: u64 = 0x9E37_79B9_7F4A_7C15;
const XOR: u64 = 0xD1B5_4A32_D192_ED03;

/// `MUL`'s inverse modulo 2^64 (Newton's iteration doubles the correct bits each step).
const fn mul_inverse() -> u64 {
    let mut x = MUL;
    let mut i = 0;
    while i < 6 {
        x = x.wrapping_mul(2u64.wrapping_sub(MUL.wrapping_mul(x)));
        i += 1;
    }
    x
}
const MUL_INV: u64 = mul_inverse();

/// Word `k` of connection `conn`'s stream.
fn word(conn: u32, k: u64) -> u64 {
    ((u64::from(conn) << INDEX_BITS) | (k & INDEX_MASK)).wrapping_mul(MUL) ^ XOR
}

/// The connection and word index a word was made for.
fn decode(w: u64) -> (u64, u64) {
    let v = (w ^ XOR).wrapping_mul(MUL_INV);
    (v >> INDEX_BITS, v & INDEX_MASK)
}

/// Writes connection `conn`'s bytes from stream offset `off` into `out`.
pub fn fill(conn: u32, off: u64, out: &mut [u8]) {
    let mut pos = off;
    let mut i = 0;
    while i < out.len() {
        let k = pos / 8;
        let skip = (pos % 8) as usize;
        let bytes = word(conn, k).to_le_bytes();
        let n = (8 - skip).min(out.len() - i);
        out[i..i + n].copy_from_slice(&bytes[skip..skip + n]);
        i += n;
        pos += n as u64;
    }
}

/// Connection `conn`'s `len` bytes from stream offset `off`.
pub fn bytes(conn: u32, off: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0; len];
    fill(conn, off, &mut v);
    v
}

/// A received byte that is not the expected one, and whose it was.
#[derive(Debug, Clone)]
pub struct Mismatch {
    /// The reading connection.
    pub conn: u32,
    /// The stream offset of the first wrong byte.
    pub offset: u64,
    /// Where the received bytes around it came from, if they decode to a stress stream.
    pub source: Option<(u64, u64)>,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "conn {} got a wrong byte at offset {}",
            self.conn, self.offset
        )?;
        match self.source {
            Some((c, off)) if c == u64::from(self.conn) => {
                let back = self.offset as i128 - off as i128;
                write!(f, ": its own bytes of offset {off} ({back} bytes away)")
            }
            Some((c, off)) => write!(f, ": connection {c}'s bytes of offset {off}"),
            None => write!(f, ": bytes of no stress stream (stale or zeroed memory)"),
        }
    }
}

/// Checks that `got` are connection `conn`'s bytes from offset `off`; `scratch` is reused
/// for the expected bytes. `conns`: how many connections exist (to tell a decoded source
/// from noise).
pub fn check(
    conn: u32,
    off: u64,
    got: &[u8],
    conns: u32,
    scratch: &mut Vec<u8>,
) -> Result<(), Mismatch> {
    scratch.resize(got.len(), 0);
    fill(conn, off, scratch);
    if got == &scratch[..] {
        return Ok(());
    }
    let bad = got
        .iter()
        .zip(scratch.iter())
        .position(|(a, b)| a != b)
        .unwrap_or(0);
    Err(Mismatch {
        conn,
        offset: off + bad as u64,
        source: diagnose(got, bad, off, conns),
    })
}

/// Decodes the received bytes at index `bad` of `got` (stream offset `off + bad`) to the
/// connection and offset they were made for: tries each start of an 8-byte word near the
/// byte, first those at or after it (wholly inside the wrong run), then those before.
/// Returns the source offset of the byte at `bad`.
fn diagnose(got: &[u8], bad: usize, off: u64, conns: u32) -> Option<(u64, u64)> {
    let _ = off;
    let starts = (bad..bad + 8).chain((bad.saturating_sub(7)..bad).rev());
    for start in starts {
        let Some(w) = got.get(start..start + 8) else {
            continue;
        };
        let (c, k) = decode(u64::from_le_bytes(w.try_into().ok()?));
        if c >= u64::from(conns) {
            continue;
        }
        // The word starts at source offset k * 8, at index `start`.
        let src = (k * 8 + bad as u64).checked_sub(start as u64)?;
        return Some((c, src));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_decode_to_their_connection_and_offset() {
        for (c, k) in [(0u32, 0u64), (17, 1), (499, 1 << 30), (65535, INDEX_MASK)] {
            assert_eq!(decode(word(c, k)), (u64::from(c), k));
        }
    }

    #[test]
    fn a_misplaced_run_names_its_source() {
        let mut scratch = Vec::new();
        let mut got = bytes(3, 100, 1000);
        check(3, 100, &got, 10, &mut scratch).unwrap();
        // Bytes 400.. of the view come from connection 7 at offset 5003.
        let other = bytes(7, 5003, 600);
        got[400..].copy_from_slice(&other);
        let m = check(3, 100, &got, 10, &mut scratch).unwrap_err();
        assert_eq!(m.offset, 500);
        assert_eq!(m.source, Some((7, 5003)));
        // Its own bytes from 32 KiB earlier.
        let mut got = bytes(3, 40_000, 100);
        got[10..].copy_from_slice(&bytes(3, 40_010 - 32_768, 90));
        let m = check(3, 40_000, &got, 10, &mut scratch).unwrap_err();
        assert_eq!(m.source, Some((3, 40_010 - 32_768)));
        assert!(m.to_string().contains("32768 bytes away"), "{m}");
    }
}
