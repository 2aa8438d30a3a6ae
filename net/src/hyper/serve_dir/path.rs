//! From a request's path to a path beneath the served directory, as tower-http's
//! `ServeDir` makes it: the leading slashes go, the rest is percent-decoded (a `%` not
//! followed by two hex digits stays as it is) and must be UTF-8, and it is split at `/`,
//! empty and `.` segments dropped. Refused (the request gets 404): a `..` segment, a path
//! that decodes to an absolute one (`/%2Fetc`), and, beyond tower-http on Linux, a segment
//! with a backslash or a NUL byte (`%5C`, `%00`). An encoded slash (`%2F`) inside the path
//! separates segments, as in tower-http.
//!
//! What this leaves is only the first line of defence: the open itself is confined beneath
//! the directory by the kernel (`RESOLVE_BENEATH`; see `ops.rs`).

/// The path of `uri_path` relative to the served directory, its segments joined with `/`
/// (empty for the directory itself); `None` if it is refused.
pub(super) fn relative(uri_path: &str) -> Option<String> {
    let decoded = percent_decode(uri_path.trim_start_matches('/'));
    let decoded = String::from_utf8(decoded).ok()?;
    if decoded.starts_with('/') {
        return None;
    }
    let mut out = String::with_capacity(decoded.len());
    for segment in decoded.split('/') {
        match segment {
            "" | "." => {}
            ".." => return None,
            s if s.contains(['\\', '\0']) => return None,
            s => {
                if !out.is_empty() {
                    out.push('/');
                }
                out.push_str(s);
            }
        }
    }
    Some(out)
}

/// `%XX` (two hex digits) decoded to its byte; everything else as it is.
fn percent_decode(s: &str) -> Vec<u8> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).and_then(|h| {
                let hi = (h[0] as char).to_digit(16)?;
                let lo = (h[1] as char).to_digit(16)?;
                Some((hi * 16 + lo) as u8)
            });
            if let Some(b) = hex {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_paths_keep_their_segments() {
        assert_eq!(relative("/").as_deref(), Some(""));
        assert_eq!(relative("").as_deref(), Some(""));
        assert_eq!(relative("/a/b.txt").as_deref(), Some("a/b.txt"));
        assert_eq!(relative("//a//./b/").as_deref(), Some("a/b"));
        assert_eq!(relative("/./a").as_deref(), Some("a"));
        assert_eq!(relative("/a%20b").as_deref(), Some("a b"));
        assert_eq!(relative("/a%2Fb").as_deref(), Some("a/b"));
        assert_eq!(relative("/100%").as_deref(), Some("100%"));
        assert_eq!(relative("/a%zzb%4").as_deref(), Some("a%zzb%4"));
        assert_eq!(relative("/%C3%A9t%C3%A9").as_deref(), Some("été"));
    }

    #[test]
    fn escapes_are_refused() {
        for p in [
            "/..",
            "/../etc/passwd",
            "/a/../../b",
            "/%2e%2e/x",
            "/%2E%2E%2Fx",
            "/a/%2e%2e",
            "/%2Fetc/passwd",
            "/%2f",
            "/a\\..\\b",
            "/a%5C..%5Cb",
            "/a%00.txt",
            "/%FF",
        ] {
            assert_eq!(relative(p), None, "{p}");
        }
    }
}
