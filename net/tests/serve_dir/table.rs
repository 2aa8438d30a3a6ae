//! The requests of the differential test, and what a response is compared by.

use bytes::Bytes;
use http::{HeaderMap, Request, Response};

/// A request to make of both services.
#[derive(Clone, Debug)]
pub struct Spec {
    pub method: &'static str,
    pub uri: String,
    pub headers: Vec<(&'static str, String)>,
}

impl Spec {
    pub fn new(method: &'static str, uri: impl Into<String>) -> Spec {
        Spec {
            method,
            uri: uri.into(),
            headers: Vec::new(),
        }
    }

    pub fn get(uri: impl Into<String>) -> Spec {
        Spec::new("GET", uri)
    }

    pub fn head(uri: impl Into<String>) -> Spec {
        Spec::new("HEAD", uri)
    }

    pub fn with(mut self, name: &'static str, value: impl Into<String>) -> Spec {
        self.headers.push((name, value.into()));
        self
    }

    /// The request, with an empty body of type `B`.
    pub fn request<B: Default>(&self) -> Request<B> {
        let mut b = Request::builder().method(self.method).uri(&self.uri);
        for (k, v) in &self.headers {
            b = b.header(*k, v);
        }
        b.body(B::default()).unwrap()
    }
}

/// The headers compared between the two services.
pub const COMPARED: &[&str] = &[
    "content-type",
    "content-encoding",
    "content-length",
    "content-range",
    "accept-ranges",
    "last-modified",
    "location",
    "allow",
];

/// A response as compared: status, the compared headers, the body; and the two headers
/// only ours sends (checked on their own).
#[derive(Debug, PartialEq, Eq)]
pub struct Seen {
    pub status: u16,
    pub headers: Vec<(&'static str, Option<String>)>,
    pub body: Bytes,
    pub etag: Option<String>,
    pub vary: Option<String>,
}

impl Seen {
    pub fn of<B>(res: &Response<B>, body: Bytes) -> Seen {
        let h = res.headers();
        Seen {
            status: res.status().as_u16(),
            headers: COMPARED.iter().map(|&n| (n, value(h, n))).collect(),
            body,
            etag: value(h, "etag"),
            vary: value(h, "vary"),
        }
    }

    /// The value of compared header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| v.as_deref())
    }

    /// What differs from `other` in status, compared headers and body; `None` if nothing.
    pub fn diff(&self, other: &Seen) -> Option<String> {
        let mut out = String::new();
        if self.status != other.status {
            out += &format!("status {} vs {}; ", self.status, other.status);
        }
        for (a, b) in self.headers.iter().zip(&other.headers) {
            if a != b {
                out += &format!("{}: {:?} vs {:?}; ", a.0, a.1, b.1);
            }
        }
        if self.body != other.body {
            let at = self
                .body
                .iter()
                .zip(other.body.iter())
                .position(|(x, y)| x != y)
                .unwrap_or(self.body.len().min(other.body.len()));
            out += &format!(
                "body of {} vs {} bytes, first difference at {at}; ",
                self.body.len(),
                other.body.len()
            );
        }
        (!out.is_empty()).then_some(out)
    }
}

fn value(h: &HeaderMap, name: &str) -> Option<String> {
    let all: Vec<_> = h
        .get_all(name)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    (!all.is_empty()).then(|| all.join(", "))
}

/// The web files and the content type both services must give them.
pub const TYPED: &[&str] = &[
    "/index.html",
    "/page.htm",
    "/style.css",
    "/app.js",
    "/module.mjs",
    "/data.json",
    "/image.svg",
    "/font.woff2",
    "/font.woff",
    "/pic.webp",
    "/pic.png",
    "/photo.jpg",
    "/photo.jpeg",
    "/anim.gif",
    "/favicon.ico",
    "/mod.wasm",
    "/feed.xml",
    "/doc.pdf",
    "/clip.mp4",
    "/pic.avif",
    "/app.js.map",
    "/readme.md",
    "/table.csv",
    "/archive.tar.gz",
    "/noext",
    "/weird.unknownext",
    "/hello.txt",
    "/empty.txt",
];

/// The requests both services must answer alike (with precompressed br and gzip).
pub fn differential() -> Vec<Spec> {
    let mut t = Vec::new();
    // Content types, sizes around the whole-file limit, GET and HEAD.
    for p in TYPED
        .iter()
        .chain(&["/mid.bin", "/mid1.bin", "/big.bin", "/rand/03.bin"])
    {
        t.push(Spec::get(*p));
        t.push(Spec::head(*p));
    }
    // Directories, redirects, odd but valid paths.
    for p in [
        "/",
        "/sub",
        "/sub/",
        "/sub?x=1&y=2",
        "/sub/index.html",
        "/sub/deep",
        "/sub/deep/",
        "/sub/deep/file.txt",
        "/nodex",
        "/nodex/",
        "/nodex/file.txt",
        "/missing.txt",
        "/sub/missing",
        "/missing/",
        "/hello.txt/",
        "/hello.txt/x",
        "/link.txt",
        "/linkdir",
        "/linkdir/",
        "/linkdir/deep/file.txt",
        "/sub/a%20b.txt",
        "/sub/%C3%A9t%C3%A9.txt",
        "/%2541.txt",
        "/sub%2Fdeep%2Ffile.txt",
        "//hello.txt",
        "/./hello.txt",
        "/sub/./deep/file.txt",
        "/only-gz.txt",
        "/only-gz.txt.gz",
        "/hello.txt?download=1",
    ] {
        t.push(Spec::get(p));
        t.push(Spec::head(p));
    }
    // Every escape form: 404 from both.
    for p in [
        "/..",
        "/../outside.txt",
        "/sub/../../outside.txt",
        "/sub/../hello.txt",
        "/%2e%2e/outside.txt",
        "/%2E%2E%2Foutside.txt",
        "/sub/%2e%2e/%2e%2e/outside.txt",
        "/..%2foutside.txt",
        "/%2F..%2Foutside.txt",
        "/%2Fetc%2Fpasswd",
        "/%2f",
        "/..%5Coutside.txt",
        "/sub%5C..%5C..%5Coutside.txt",
        "/%FF%FE",
    ] {
        t.push(Spec::get(p));
        t.push(Spec::head(p));
    }
    // NUL bytes: GET only (tower-http answers HEAD 500; ours 404, checked on its own).
    t.push(Spec::get("/%00"));
    t.push(Spec::get("/hello.txt%00.png"));
    // Methods.
    for m in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"] {
        t.push(Spec::new(m, "/hello.txt"));
    }
    t.push(Spec::new("POST", "/missing"));
    t.push(Spec::new("POST", "/../outside.txt"));
    // Ranges: single, suffix, open-ended, clamped, unsatisfiable, several, malformed.
    for (path, ranges) in [
        (
            "/big.bin",
            &[
                "bytes=0-99",
                "bytes=100-",
                "bytes=-500",
                "bytes=0-0",
                "bytes=-1",
                "bytes=0-99999999",
                "bytes=3145727-",
                "bytes=1048576-2097151",
                "bytes=1000-2500000",
                "bytes=5-4",
                "bytes=99999999-",
                "bytes=-0",
                "bytes=-4000000",
                "bytes=0-1,5-6",
                "bytes=0-5,3-8",
                "bytes=0-1,99999999-",
                "bytes= 0-1",
                "bytes=0-1 ",
                "items=0-1",
                "bytes=",
                "bytes=a-b",
                "bytes=01-5",
            ][..],
        ),
        (
            "/hello.txt",
            &["bytes=0-9", "bytes=-10", "bytes=290-", "bytes=300-"][..],
        ),
        ("/empty.txt", &["bytes=0-", "bytes=-1", "bytes=0-0"][..]),
        ("/mid1.bin", &["bytes=1-", "bytes=0-1048575"][..]),
    ] {
        for r in ranges {
            t.push(Spec::get(path).with("range", *r));
        }
        t.push(Spec::head(path).with("range", ranges[0]));
        t.push(Spec::head(path).with("range", "bytes=0-1,5-6"));
    }
    // Precompressed variants chosen by Accept-Encoding.
    for path in [
        "/hello.txt",
        "/style.css",
        "/app.js",
        "/data.json",
        "/sub/",
        "/only-gz.txt",
    ] {
        for ae in [
            "gzip",
            "br",
            "br;q=1, gzip;q=0.8",
            "gzip;q=1, br;q=0.8",
            "gzip, br",
            "identity",
            "*",
            "gzip;q=0",
            "gzip;q=0, br;q=0",
            "br;q=0.5, identity",
            "identity;q=0, gzip",
            "deflate, zstd",
            "x-gzip",
            "GZIP",
            "gzip;q=0.5000",
            "",
        ] {
            t.push(Spec::get(path).with("accept-encoding", ae));
        }
        t.push(Spec::head(path).with("accept-encoding", "br, gzip"));
    }
    t.push(
        Spec::get("/hello.txt")
            .with("accept-encoding", "gzip")
            .with("range", "bytes=0-9"),
    );
    t.push(
        Spec::get("/hello.txt")
            .with("accept-encoding", "gzip")
            .with("accept-encoding", "br"),
    );
    // Dates.
    let past = "Thu, 01 Jan 2015 00:00:00 GMT";
    let future = "Fri, 01 Jan 2100 00:00:00 GMT";
    let same = super::tree::LAST_MODIFIED;
    let second_before = "Sun, 13 Sep 2020 12:26:39 GMT";
    for path in ["/hello.txt", "/big.bin", "/sub/", "/missing.txt"] {
        for (name, date) in [
            ("if-modified-since", past),
            ("if-modified-since", future),
            ("if-modified-since", same),
            ("if-modified-since", second_before),
            ("if-modified-since", "not a date"),
            ("if-unmodified-since", past),
            ("if-unmodified-since", future),
            ("if-unmodified-since", same),
        ] {
            t.push(Spec::get(path).with(name, date));
        }
        t.push(Spec::head(path).with("if-modified-since", future));
        t.push(Spec::head(path).with("if-unmodified-since", past));
    }
    t.push(
        Spec::get("/hello.txt")
            .with("if-modified-since", past)
            .with("range", "bytes=0-9"),
    );
    t.push(
        Spec::get("/hello.txt")
            .with("if-modified-since", future)
            .with("range", "bytes=0-9"),
    );
    t.push(
        Spec::get("/hello.txt")
            .with("if-unmodified-since", past)
            .with("if-modified-since", future),
    );
    t
}
