//! RESP2 requests and replies, by hand: requests are arrays of bulk strings
//! (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`, what every client library sends) or inline commands
//! (`PING\r\n`, what `redis-benchmark` sends for `PING_INLINE` and what `nc` users type).
//!
//! The parser is incremental: it looks at the bytes received so far and answers with a whole
//! request (its length and its arguments as ranges of the input), "need more bytes", or a
//! protocol error. It never allocates beyond the argument list, and it bounds everything a
//! peer controls: the argument count, each argument's length and an inline line's length
//! (the caller bounds a whole request with [`MAX_REQUEST`]). After a protocol error the
//! stream cannot be resynchronised, so the server replies with the error and closes, as
//! `redis-server` does.
//!
//! No maintained RESP crate gives both incremental parsing and caps on what a request may
//! make the server buffer, so this is the small parser the protocol allows.

use std::ops::Range;

/// The longest argument (bulk string) accepted.
pub const MAX_ARG: usize = 4 << 20;
/// The most arguments in one request.
pub const MAX_ARGS: usize = 64 * 1024;
/// The longest inline command line.
pub const MAX_INLINE: usize = 64 * 1024;
/// The most bytes one request may take (the most a connection buffers for its input).
pub const MAX_REQUEST: usize = 8 << 20;
/// The longest `*<count>` or `$<len>` header line accepted, CRLF included.
const MAX_HEADER: usize = 24;

/// What [`parse`] found at the start of the input.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A whole request of this many bytes; its arguments are in `args` (none for an empty
    /// line or `*0`, which the server skips).
    Request(usize),
    /// The request is not all here yet.
    Incomplete,
    /// The input is not RESP: reply with this (a message without CR or LF) and close.
    Error(&'static str),
}

/// Parses one request from the start of `buf`, filling `args` with the ranges of its
/// arguments in `buf`.
pub fn parse(buf: &[u8], args: &mut Vec<Range<usize>>) -> Parsed {
    args.clear();
    match buf.first() {
        None => Parsed::Incomplete,
        Some(b'*') => parse_multibulk(buf, args),
        Some(_) => parse_inline(buf, args),
    }
}

fn parse_multibulk(buf: &[u8], args: &mut Vec<Range<usize>>) -> Parsed {
    let (count, mut pos) = match header(buf, 0) {
        Header::Value(n, end) => (n, end),
        Header::Incomplete => return Parsed::Incomplete,
        Header::Invalid => return Parsed::Error("Protocol error: invalid multibulk length"),
    };
    if count <= 0 {
        return Parsed::Request(pos);
    }
    if count as u64 > MAX_ARGS as u64 {
        return Parsed::Error("Protocol error: invalid multibulk length");
    }
    for _ in 0..count {
        match buf.get(pos) {
            None => return Parsed::Incomplete,
            Some(b'$') => {}
            Some(_) => return Parsed::Error("Protocol error: expected '$'"),
        }
        let (len, start) = match header(buf, pos) {
            Header::Value(n, end) if (0..=MAX_ARG as i64).contains(&n) => (n as usize, end),
            Header::Incomplete => return Parsed::Incomplete,
            _ => return Parsed::Error("Protocol error: invalid bulk length"),
        };
        let end = start + len;
        if buf.len() < end + 2 {
            return Parsed::Incomplete;
        }
        if &buf[end..end + 2] != b"\r\n" {
            return Parsed::Error("Protocol error: expected CRLF after a bulk string");
        }
        args.push(start..end);
        pos = end + 2;
    }
    Parsed::Request(pos)
}

enum Header {
    /// The number and the offset just past the line's CRLF.
    Value(i64, usize),
    Incomplete,
    Invalid,
}

/// Parses the `*<n>\r\n` or `$<n>\r\n` line at `buf[at..]` (the type byte is not checked).
fn header(buf: &[u8], at: usize) -> Header {
    // Hot path: one or two digits (every header redis-benchmark sends); the value and the
    // offset past `<type><digits>\r\n`.
    match buf.get(at + 1..at + 5) {
        Some(&[d, b'\r', b'\n', _]) if d.is_ascii_digit() => {
            return Header::Value(i64::from(d - b'0'), at + 4);
        }
        Some(&[d1, d2, b'\r', b'\n']) if d1.is_ascii_digit() && d2.is_ascii_digit() => {
            return Header::Value(i64::from(d1 - b'0') * 10 + i64::from(d2 - b'0'), at + 5);
        }
        _ => {}
    }
    let line = &buf[at..buf.len().min(at + MAX_HEADER)];
    let Some(cr) = line.iter().position(|&b| b == b'\r') else {
        return if line.len() == MAX_HEADER {
            Header::Invalid
        } else {
            Header::Incomplete
        };
    };
    match line.get(cr + 1) {
        None => return Header::Incomplete,
        Some(b'\n') => {}
        Some(_) => return Header::Invalid,
    }
    match parse_i64(&line[1..cr]) {
        Some(n) => Header::Value(n, at + cr + 2),
        None => Header::Invalid,
    }
}

fn parse_inline(buf: &[u8], args: &mut Vec<Range<usize>>) -> Parsed {
    let window = &buf[..buf.len().min(MAX_INLINE)];
    let Some(nl) = window.iter().position(|&b| b == b'\n') else {
        return if buf.len() >= MAX_INLINE {
            Parsed::Error("Protocol error: too big inline request")
        } else {
            Parsed::Incomplete
        };
    };
    let line_end = if nl > 0 && buf[nl - 1] == b'\r' {
        nl - 1
    } else {
        nl
    };
    let mut i = 0;
    while i < line_end {
        if buf[i] == b' ' || buf[i] == b'\t' {
            i += 1;
            continue;
        }
        let start = i;
        while i < line_end && buf[i] != b' ' && buf[i] != b'\t' {
            i += 1;
        }
        if args.len() == MAX_ARGS {
            return Parsed::Error("Protocol error: too many arguments");
        }
        args.push(start..i);
    }
    Parsed::Request(nl + 1)
}

/// A decimal `i64` with an optional `-`, nothing else (no `+`, no spaces, no overflow).
pub fn parse_i64(digits: &[u8]) -> Option<i64> {
    let (neg, digits) = match digits.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, digits),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut n: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        let d = i64::from(d - b'0');
        n = n.checked_mul(10)?;
        n = if neg {
            n.checked_sub(d)?
        } else {
            n.checked_add(d)?
        };
    }
    Some(n)
}

/// `+OK`-style status reply.
pub fn simple(out: &mut Vec<u8>, s: &str) {
    out.push(b'+');
    out.extend_from_slice(s.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// `-ERR ...` reply; `msg` must hold no CR or LF (callers pass fixed strings or
/// [`printable`] text).
pub fn error(out: &mut Vec<u8>, msg: &str) {
    out.extend_from_slice(b"-ERR ");
    out.extend_from_slice(msg.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// `:<n>` reply.
pub fn integer(out: &mut Vec<u8>, n: i64) {
    out.push(b':');
    push_i64(out, n);
    out.extend_from_slice(b"\r\n");
}

/// `$<len>` bulk string reply.
pub fn bulk(out: &mut Vec<u8>, data: &[u8]) {
    out.push(b'$');
    push_i64(out, data.len() as i64);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// `$-1`, the null bulk string (a missing key).
pub fn null(out: &mut Vec<u8>) {
    out.extend_from_slice(b"$-1\r\n");
}

/// `*<n>` array header; the `n` elements follow.
pub fn array(out: &mut Vec<u8>, n: usize) {
    out.push(b'*');
    push_i64(out, n as i64);
    out.extend_from_slice(b"\r\n");
}

/// Appends `n` in decimal.
pub fn push_i64(out: &mut Vec<u8>, n: i64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = n.unsigned_abs();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[i..]);
}

/// Up to 64 bytes of `bytes` as text fit for an error line: anything not printable ASCII
/// becomes `?`.
pub fn printable(bytes: &[u8]) -> String {
    bytes
        .iter()
        .take(64)
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '?'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args_of(buf: &[u8]) -> (Parsed, Vec<Vec<u8>>) {
        let mut args = Vec::new();
        let p = parse(buf, &mut args);
        let a = args.iter().map(|r| buf[r.clone()].to_vec()).collect();
        (p, a)
    }

    #[test]
    fn multibulk() {
        let req = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n";
        let (p, a) = args_of(req);
        assert_eq!(p, Parsed::Request(req.len() - 4));
        assert_eq!(a, [b"GET".to_vec(), b"k".to_vec()]);
        // Binary-safe: a bulk may hold CR LF.
        let (p, a) = args_of(b"*1\r\n$4\r\na\r\nb\r\n");
        assert_eq!(p, Parsed::Request(14));
        assert_eq!(a, [b"a\r\nb".to_vec()]);
        // Two-digit and three-digit lengths (the fast path and the general one agree).
        let long = [b'x'; 123];
        let mut req = b"*2\r\n$12\r\nhello, world\r\n$123\r\n".to_vec();
        req.extend_from_slice(&long);
        req.extend_from_slice(b"\r\n");
        let (p, a) = args_of(&req);
        assert_eq!(p, Parsed::Request(req.len()));
        assert_eq!(a, [b"hello, world".to_vec(), long.to_vec()]);
        for n in 0..req.len() {
            assert_eq!(args_of(&req[..n]).0, Parsed::Incomplete, "prefix {n}");
        }
    }

    #[test]
    fn every_prefix_is_incomplete() {
        let req = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n";
        for n in 0..req.len() {
            assert_eq!(args_of(&req[..n]).0, Parsed::Incomplete, "prefix {n}");
        }
        assert_eq!(args_of(req).0, Parsed::Request(req.len()));
    }

    #[test]
    fn inline() {
        let (p, a) = args_of(b"  SET  a\tb \r\nPING");
        assert_eq!(p, Parsed::Request(13));
        assert_eq!(a, [b"SET".to_vec(), b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(args_of(b"PING\n").0, Parsed::Request(5));
        assert_eq!(args_of(b"\r\n"), (Parsed::Request(2), vec![]));
        assert_eq!(args_of(b"PIN").0, Parsed::Incomplete);
    }

    #[test]
    fn garbage_is_an_error() {
        for bad in [
            &b"*x\r\n"[..],
            b"*-\r\n",
            b"*1\r\n:1\r\n",
            b"*1\r\n$-5\r\n",
            b"*1\r\n$99999999999\r\n",
            b"*1\r\n$1\r\nab\r\n",
            b"*1\r\r",
            b"*12345678901234567890123456\r\n",
            b"*9999999\r\n",
        ] {
            assert!(
                matches!(args_of(bad).0, Parsed::Error(_)),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let long = vec![b'a'; MAX_INLINE];
        assert!(matches!(args_of(&long).0, Parsed::Error(_)));
        let mut near = vec![b'a'; MAX_INLINE - 1];
        assert_eq!(args_of(&near).0, Parsed::Incomplete);
        near.push(b'\n');
        assert_eq!(args_of(&near).0, Parsed::Request(MAX_INLINE));
    }

    #[test]
    fn integers() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        for bad in [&b""[..], b"-", b"+1", b" 1", b"1a", b"00000000000000000001"] {
            assert_eq!(parse_i64(bad), None);
        }
        let mut out = Vec::new();
        for n in [0, 7, -42, i64::MIN, i64::MAX] {
            out.clear();
            push_i64(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
        }
    }
}
