//! Precompressed variants: which the service looks for ([`Precompressed`]), and which of
//! them a request's `Accept-Encoding` allows, best first ([`negotiate`]), as tower-http
//! 0.6 reads the header: comma-separated codings, each with an optional `;q=` value (0 to
//! 1, at most three decimals; an unparsable one drops its coding), `x-gzip` as `gzip`,
//! codings the service does not serve (and `*`) ignored, `q=0` refused; ties go to the
//! better compression (zstd, br, gzip, deflate, then identity).

use http::header::{HeaderMap, HeaderValue, ACCEPT_ENCODING};

/// A content coding, ordered from the least to the most preferred at equal q-values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Encoding {
    Identity,
    Deflate,
    Gzip,
    Brotli,
    Zstd,
}

impl Encoding {
    /// The suffix of the precompressed file, `None` for the file itself.
    pub(super) fn suffix(self) -> Option<&'static str> {
        match self {
            Encoding::Identity => None,
            Encoding::Deflate => Some(".zz"),
            Encoding::Gzip => Some(".gz"),
            Encoding::Brotli => Some(".br"),
            Encoding::Zstd => Some(".zst"),
        }
    }

    /// The `Content-Encoding` of the variant, `None` for the file itself.
    pub(super) fn header_value(self) -> Option<HeaderValue> {
        let name = match self {
            Encoding::Identity => return None,
            Encoding::Deflate => "deflate",
            Encoding::Gzip => "gzip",
            Encoding::Brotli => "br",
            Encoding::Zstd => "zstd",
        };
        Some(HeaderValue::from_static(name))
    }
}

/// The precompressed variants a service looks for, set by its builder methods.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Precompressed {
    pub(super) gzip: bool,
    pub(super) deflate: bool,
    pub(super) br: bool,
    pub(super) zstd: bool,
}

impl Precompressed {
    /// Whether any variant is looked for (responses then say `Vary: accept-encoding`).
    pub(super) fn any(self) -> bool {
        self.gzip || self.deflate || self.br || self.zstd
    }

    /// `name` as a coding this service serves (identity always), case-insensitively.
    fn parse(self, name: &str) -> Option<Encoding> {
        let is = |s: &str| name.eq_ignore_ascii_case(s);
        if (is("gzip") || is("x-gzip")) && self.gzip {
            Some(Encoding::Gzip)
        } else if is("deflate") && self.deflate {
            Some(Encoding::Deflate)
        } else if is("br") && self.br {
            Some(Encoding::Brotli)
        } else if is("zstd") && self.zstd {
            Some(Encoding::Zstd)
        } else if is("identity") {
            Some(Encoding::Identity)
        } else {
            None
        }
    }
}

/// The codings `headers` accept among those `served` (identity included), best first, each
/// once. A request that names none gets an empty list: the file itself.
pub(super) fn negotiate(headers: &HeaderMap, served: Precompressed) -> Vec<Encoding> {
    if !served.any() {
        return Vec::new();
    }
    let mut accepted: Vec<(u16, Encoding)> = headers
        .get_all(ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|s| s.split(','))
        .filter_map(|item| {
            let mut parts = item.splitn(2, ';');
            let encoding = served.parse(parts.next()?.trim())?;
            let q = match parts.next() {
                Some(q) => qvalue(q.trim())?,
                None => 1000,
            };
            Some((q, encoding))
        })
        .filter(|&(q, _)| q > 0)
        .collect();
    accepted.sort_by(|a, b| b.cmp(a));
    let mut out: Vec<Encoding> = Vec::with_capacity(accepted.len());
    for (_, e) in accepted {
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

/// A `q=` value in thousandths: `q=0`, `q=1`, `q=0.5`, `q=0.125`, `q=1.000`; `Q` too.
fn qvalue(s: &str) -> Option<u16> {
    let rest = s.strip_prefix(['q', 'Q'])?.strip_prefix('=')?;
    let mut chars = rest.chars();
    let mut value: u16 = match chars.next()? {
        '0' => 0,
        '1' => 1000,
        _ => return None,
    };
    match chars.next() {
        None => return Some(value),
        Some('.') => {}
        Some(_) => return None,
    }
    let mut factor = 100;
    for c in chars {
        let d = c.to_digit(10)? as u16;
        if factor == 0 {
            return None;
        }
        value += factor * d;
        factor /= 10;
    }
    (value <= 1000).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Precompressed = Precompressed {
        gzip: true,
        deflate: true,
        br: true,
        zstd: true,
    };

    fn of(values: &[&'static str], served: Precompressed) -> Vec<Encoding> {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(ACCEPT_ENCODING, HeaderValue::from_static(v));
        }
        negotiate(&h, served)
    }

    #[test]
    fn q_values_then_compression_decide() {
        use Encoding::*;
        assert_eq!(of(&["gzip,br"], ALL), [Brotli, Gzip]);
        assert_eq!(of(&["br;q=1, gzip;q=0.8"], ALL), [Brotli, Gzip]);
        assert_eq!(of(&["gzip;q=0.8,br;q=0.5"], ALL), [Gzip, Brotli]);
        assert_eq!(of(&["gzip;q=0.995,br;q=0.999"], ALL), [Brotli, Gzip]);
        assert_eq!(of(&["gzip;q=0.5", "br"], ALL), [Brotli, Gzip]);
        assert_eq!(of(&["identity;q=1, gzip;q=0.5"], ALL), [Identity, Gzip]);
        assert_eq!(of(&["gzip, identity"], ALL), [Gzip, Identity]);
        assert_eq!(of(&["gzip;q=0"], ALL), []);
        assert_eq!(of(&["gzip;q=0."], ALL), []);
        assert_eq!(of(&["*"], ALL), []);
        assert_eq!(of(&["x-gzip, GZIP"], ALL), [Gzip]);
        assert_eq!(
            of(&[" gzip\t; q=0.5 ,\tbr ;\tq=0.8\t"], ALL),
            [Brotli, Gzip]
        );
        assert_eq!(of(&["gzip, zstd, deflate"], ALL), [Zstd, Gzip, Deflate]);
        let gzip_only = Precompressed {
            gzip: true,
            ..Precompressed::default()
        };
        assert_eq!(of(&["br, gzip;q=0.1"], gzip_only), [Gzip]);
        assert_eq!(of(&["br, gzip"], Precompressed::default()), []);
    }

    #[test]
    fn bad_q_values_drop_their_coding() {
        for v in [
            "gzip;q =0.5",
            "gzip;q= 0.5",
            "gzip;q=-0.1",
            "gzip;q=00.5",
            "gzip;q=0.5000",
            "gzip;q=.5",
            "gzip;q=1.01",
            "gzip;q=1.001",
            "gzip;level=1",
        ] {
            assert_eq!(of(&[v], ALL), [], "{v}");
        }
        assert_eq!(qvalue("q=1.000"), Some(1000));
        assert_eq!(qvalue("Q=0.125"), Some(125));
    }
}
