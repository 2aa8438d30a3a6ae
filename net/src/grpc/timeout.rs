//! The `grpc-timeout` header: `1*8DIGIT` and a unit (`H`, `M`, `S`, `m`, `u`, `n`), as
//! gRPC over HTTP/2 defines it.

use std::io;
use std::time::Duration;

use http::HeaderValue;

/// The name of the header that carries a call's deadline, as a time left.
pub const GRPC_TIMEOUT: &str = "grpc-timeout";

/// Parses a `grpc-timeout` value (`"200m"`, `"5S"`, `"1000000u"`).
///
/// # Errors
/// `InvalidData` for anything else (no digits, more than 8, an unknown unit), with the
/// value in the message.
pub fn parse_timeout(value: &[u8]) -> io::Result<Duration> {
    let bad = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "malformed grpc-timeout {:?} (1 to 8 digits, then H, M, S, m, u or n)",
                String::from_utf8_lossy(value)
            ),
        )
    };
    let (&unit, digits) = value.split_last().ok_or_else(bad)?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    let n = digits
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    Ok(match unit {
        b'H' => Duration::from_secs(n * 3600),
        b'M' => Duration::from_secs(n * 60),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return Err(bad()),
    })
}

/// Encodes `timeout` as a `grpc-timeout` value: the finest unit whose count fits in 8
/// digits, rounded up so the peer's deadline is never earlier than ours.
pub fn encode_timeout(timeout: Duration) -> HeaderValue {
    const MAX: u128 = 99_999_999;
    let nanos = timeout.as_nanos();
    let units: [(u128, char); 6] = [
        (1, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ];
    let (count, unit) = units
        .iter()
        .map(|&(per, unit)| (nanos.div_ceil(per), unit))
        .find(|&(count, _)| count <= MAX)
        .unwrap_or((MAX, 'H'));
    // Digits and an ASCII letter: always a valid header value.
    HeaderValue::from_str(&format!("{count}{unit}"))
        .unwrap_or(HeaderValue::from_static("99999999H"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_unit() {
        assert_eq!(parse_timeout(b"2H").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_timeout(b"3M").unwrap(), Duration::from_secs(180));
        assert_eq!(parse_timeout(b"5S").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_timeout(b"200m").unwrap(), Duration::from_millis(200));
        assert_eq!(
            parse_timeout(b"99999999u").unwrap(),
            Duration::from_micros(99_999_999)
        );
        assert_eq!(parse_timeout(b"0n").unwrap(), Duration::ZERO);
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            &b""[..],
            b"m",
            b"123456789m",
            b"12x",
            b"-1S",
            b"1.5S",
            b"12",
        ] {
            let e = parse_timeout(bad).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{bad:?}");
        }
    }

    #[test]
    fn encodes_and_round_trips_up() {
        assert_eq!(encode_timeout(Duration::from_millis(25)), "25000000n");
        assert_eq!(encode_timeout(Duration::from_millis(250)), "250000u");
        assert_eq!(encode_timeout(Duration::from_secs(1)), "1000000u");
        assert_eq!(encode_timeout(Duration::from_secs(1000)), "1000000m");
        assert_eq!(encode_timeout(Duration::from_secs(1 << 40)), "99999999H");
        for d in [1u64, 999, 1_000_001, 123_456_789_123, 86_400_000_000_000] {
            let d = Duration::from_nanos(d);
            let back = parse_timeout(encode_timeout(d).as_bytes()).unwrap();
            assert!(back >= d, "{d:?} -> {back:?}");
        }
    }
}
