//! Validators and conditional requests (RFC 9110 §8.8, §13): the `Last-Modified` date and
//! the `ETag` of a file, and the preconditions a request puts on them, evaluated in the
//! RFC's order (§13.2.2): `If-Match`, else `If-Unmodified-Since` (412 when it fails);
//! then `If-None-Match`, else `If-Modified-Since` (304 when it fails); and `If-Range`,
//! which turns a range request into a full one when the file changed.
//!
//! tower-http 0.6 has the two dates only; its next release (0.7) has this ETag scheme
//! (strong, from the modification time in nanoseconds and the size) and precedence. Ours
//! adds the inode to the tag, so a precompressed variant or a file replaced by a rename
//! with the same time and size still gets a tag of its own.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::header::{self, HeaderMap, HeaderValue};

use super::ops::Stat;

/// Seconds since the epoch of the last date an HTTP date can say (9999-12-31 23:59:59),
/// past which `httpdate` would panic.
const LAST_HTTP_DATE: i64 = 253_402_300_799;

/// A file's validators.
#[derive(Debug)]
pub(super) struct Validators {
    /// The modification time in whole seconds, where the file has one an HTTP date can say.
    pub(super) modified: Option<u64>,
    pub(super) etag: HeaderValue,
}

impl Validators {
    /// The validators of a file with metadata `stat`.
    pub(super) fn of(stat: &Stat) -> Validators {
        let (secs, nanos) = stat.mtime.unwrap_or((0, 0));
        let tag = format!(
            "\"{:x}-{:x}.{:08x}-{:x}\"",
            stat.ino, secs as u64, nanos, stat.size
        );
        Validators {
            modified: stat
                .mtime
                .and_then(|(s, _)| (0..=LAST_HTTP_DATE).contains(&s).then_some(s as u64)),
            // Hex digits, dots, dashes and quotes: always a valid header value.
            etag: HeaderValue::from_str(&tag).unwrap_or(HeaderValue::from_static("\"\"")),
        }
    }

    /// The `Last-Modified` value.
    pub(super) fn last_modified(&self) -> Option<HeaderValue> {
        let t = UNIX_EPOCH + Duration::from_secs(self.modified?);
        HeaderValue::from_str(&httpdate::fmt_http_date(t)).ok()
    }
}

/// The conditional headers of a request, read before its body is dropped.
#[derive(Debug, Default)]
pub(super) struct Conditions {
    if_match: Option<HeaderValue>,
    if_unmodified_since: Option<u64>,
    if_none_match: Option<HeaderValue>,
    if_modified_since: Option<u64>,
    if_range: Option<HeaderValue>,
}

/// What the preconditions say.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Serve the file.
    Serve,
    /// 304 Not Modified.
    NotModified,
    /// 412 Precondition Failed.
    Failed,
}

impl Conditions {
    /// The conditional headers of `headers`; an empty field or an unreadable date is as
    /// if absent (as tower-http reads them).
    pub(super) fn of(headers: &HeaderMap) -> Conditions {
        let tags = |name| headers.get(name).filter(|v| !v.is_empty()).cloned();
        let date = |name| headers.get(name).and_then(http_date);
        Conditions {
            if_match: tags(header::IF_MATCH),
            if_unmodified_since: date(header::IF_UNMODIFIED_SINCE),
            if_none_match: tags(header::IF_NONE_MATCH),
            if_modified_since: date(header::IF_MODIFIED_SINCE),
            if_range: tags(header::IF_RANGE),
        }
    }

    /// The preconditions against the file's validators (RFC 9110 §13.2.2).
    pub(super) fn check(&self, v: &Validators) -> Verdict {
        if let Some(list) = &self.if_match {
            if !(list.as_bytes() == b"*" || any_tag(list.as_bytes(), |t| strong_eq(t, &v.etag))) {
                return Verdict::Failed;
            }
        } else if let (Some(since), Some(modified)) = (self.if_unmodified_since, v.modified) {
            if modified > since {
                return Verdict::Failed;
            }
        }
        if let Some(list) = &self.if_none_match {
            if list.as_bytes() == b"*" || any_tag(list.as_bytes(), |t| weak_eq(t, &v.etag)) {
                return Verdict::NotModified;
            }
        } else if let (Some(since), Some(modified)) = (self.if_modified_since, v.modified) {
            if modified <= since {
                return Verdict::NotModified;
            }
        }
        Verdict::Serve
    }

    /// Whether a `Range` is to be honoured: there is no `If-Range`, or it names the file as
    /// it is (its ETag by strong comparison, or its `Last-Modified` date exactly).
    pub(super) fn range_applies(&self, v: &Validators) -> bool {
        let Some(cond) = &self.if_range else {
            return true;
        };
        if cond.as_bytes().starts_with(b"\"") {
            return strong_eq(cond.as_bytes(), &v.etag);
        }
        http_date(cond).is_some_and(|d| Some(d) == v.modified)
    }
}

/// An HTTP date (any of the three forms) in seconds since the epoch.
fn http_date(value: &HeaderValue) -> Option<u64> {
    let t = httpdate::parse_http_date(value.to_str().ok()?).ok()?;
    t.duration_since(SystemTime::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs())
}

/// Strong comparison (RFC 9110 §8.8.3.2): neither tag weak, the same opaque tag.
fn strong_eq(tag: &[u8], ours: &HeaderValue) -> bool {
    !tag.starts_with(b"W/") && tag == ours.as_bytes()
}

/// Weak comparison: the opaque tags equal, `W/` ignored.
fn weak_eq(tag: &[u8], ours: &HeaderValue) -> bool {
    tag.strip_prefix(b"W/").unwrap_or(tag) == ours.as_bytes()
}

/// Whether `pred` holds for any entity tag of the comma-separated `list` (commas inside
/// quotes do not separate).
fn any_tag(list: &[u8], mut pred: impl FnMut(&[u8]) -> bool) -> bool {
    let mut start = 0;
    let mut quoted = false;
    for (i, &b) in list.iter().enumerate() {
        match b {
            b'"' => quoted = !quoted,
            b',' if !quoted => {
                let t = trim_ows(&list[start..i]);
                if !t.is_empty() && pred(t) {
                    return true;
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    let t = trim_ows(&list[start..]);
    !t.is_empty() && pred(t)
}

fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat() -> Stat {
        Stat {
            kind: libc::S_IFREG,
            size: 10,
            ino: 0xab,
            mtime: Some((1_000_000_000, 5)),
        }
    }

    fn conds(pairs: &[(header::HeaderName, &'static str)]) -> Conditions {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(k.clone(), HeaderValue::from_static(v));
        }
        Conditions::of(&h)
    }

    #[test]
    fn validators_name_the_file() {
        let v = Validators::of(&stat());
        assert_eq!(v.etag, "\"ab-3b9aca00.00000005-a\"");
        assert_eq!(v.modified, Some(1_000_000_000));
        assert_eq!(v.last_modified().unwrap(), "Sun, 09 Sep 2001 01:46:40 GMT");
        let mut old = stat();
        old.mtime = Some((-5, 0));
        assert_eq!(Validators::of(&old).last_modified(), None);
    }

    #[test]
    fn preconditions_in_order() {
        use header::*;
        let v = Validators::of(&stat());
        assert_eq!(conds(&[]).check(&v), Verdict::Serve);
        let cases: &[(&[(HeaderName, &'static str)], Verdict)] = &[
            (
                &[(IF_NONE_MATCH, "\"x\", \"ab-3b9aca00.00000005-a\"")],
                Verdict::NotModified,
            ),
            (
                &[(IF_NONE_MATCH, "W/\"ab-3b9aca00.00000005-a\"")],
                Verdict::NotModified,
            ),
            (&[(IF_NONE_MATCH, "*")], Verdict::NotModified),
            (&[(IF_NONE_MATCH, "\"x,y\"")], Verdict::Serve),
            // If-None-Match present: If-Modified-Since is not looked at.
            (
                &[
                    (IF_NONE_MATCH, "\"x\""),
                    (IF_MODIFIED_SINCE, "Sun, 09 Sep 2001 01:46:40 GMT"),
                ],
                Verdict::Serve,
            ),
            (
                &[(IF_MODIFIED_SINCE, "Sun, 09 Sep 2001 01:46:40 GMT")],
                Verdict::NotModified,
            ),
            (
                &[(IF_MODIFIED_SINCE, "Sun, 09 Sep 2001 01:46:39 GMT")],
                Verdict::Serve,
            ),
            (&[(IF_MODIFIED_SINCE, "not a date")], Verdict::Serve),
            (
                &[(IF_UNMODIFIED_SINCE, "Sun, 09 Sep 2001 01:46:39 GMT")],
                Verdict::Failed,
            ),
            (
                &[(IF_UNMODIFIED_SINCE, "Sun, 09 Sep 2001 01:46:40 GMT")],
                Verdict::Serve,
            ),
            (&[(IF_MATCH, "\"nope\"")], Verdict::Failed),
            (
                &[(IF_MATCH, "W/\"ab-3b9aca00.00000005-a\"")],
                Verdict::Failed,
            ),
            (&[(IF_MATCH, "*")], Verdict::Serve),
            // If-Match present: If-Unmodified-Since is not looked at.
            (
                &[
                    (IF_MATCH, "\"ab-3b9aca00.00000005-a\""),
                    (IF_UNMODIFIED_SINCE, "Sun, 09 Sep 2001 01:46:39 GMT"),
                ],
                Verdict::Serve,
            ),
        ];
        for (headers, verdict) in cases {
            assert_eq!(&conds(headers).check(&v), verdict, "{headers:?}");
        }
        assert!(conds(&[(IF_RANGE, "\"ab-3b9aca00.00000005-a\"")]).range_applies(&v));
        assert!(!conds(&[(IF_RANGE, "W/\"ab-3b9aca00.00000005-a\"")]).range_applies(&v));
        assert!(!conds(&[(IF_RANGE, "\"old\"")]).range_applies(&v));
        assert!(conds(&[(IF_RANGE, "Sun, 09 Sep 2001 01:46:40 GMT")]).range_applies(&v));
        assert!(!conds(&[(IF_RANGE, "Sun, 09 Sep 2001 01:46:41 GMT")]).range_applies(&v));
    }
}
