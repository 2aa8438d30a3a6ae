//! [`ServeDir`]: static files from a directory, every file operation a ring op, with
//! tower-http's `ServeDir` semantics (feature `serve-dir`). What users see (the ops on each
//! backend, where it differs from tower-http) is on [`ServeDir`]; this is the inside.
//!
//! A request's life: the path is checked and percent-decoded (`path.rs`); the file is
//! opened with `IORING_OP_OPENAT2` relative to the served directory, which the service
//! opened once, confined beneath it by the kernel (`RESOLVE_BENEATH |
//! RESOLVE_NO_MAGICLINKS`), and its metadata read with `IORING_OP_STATX` (`ops.rs`); a
//! directory gets its `index.html` or a redirect, a precompressed variant is chosen by
//! `Accept-Encoding` (`encoding.rs`), the preconditions (`conditional.rs`) and the range
//! (`range.rs`) are evaluated, and the response is made (`respond.rs`): a file (or range)
//! of up to [`WHOLE_FILE_MAX`] bytes read into one buffer, a larger one streamed by the body
//! (`body.rs`).
//!
//! # Invariants
//! - A request's path never names anything outside the served directory: `..` and decoded
//!   absolute paths are refused before any op, and the kernel refuses every resolution
//!   that would leave the directory (a symlink pointing out, an absolute symlink, a `/proc`
//!   magic link) with `EXDEV`/`ELOOP`, answered 404.
//! - Everything the service, its futures and its bodies hold is `Send` (fds as `OwnedFd`s
//!   in `Arc`s, ops whose data owns their buffers), so axum can mount it; the ops still run
//!   on the core that polls them, and a body stays on its connection's core.
//! - No fd outlives its request: the file is closed through the ring once read, or when
//!   its body ends or is dropped (an in-flight read keeps it open until its CQE).

mod body;
mod conditional;
mod encoding;
mod ops;
mod path;
mod range;
mod respond;

use std::convert::Infallible;
use std::ffi::CString;
use std::fmt;
use std::future::Future;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode};

pub use body::ServeDirBody;

use conditional::Conditions;
use encoding::Precompressed;
use ops::FileFd;
use respond::Asked;

/// The largest file (or range) read in one op into one buffer and sent as one frame
/// (1 MiB); a larger one is streamed in chunks.
pub const WHOLE_FILE_MAX: u64 = 1 << 20;

/// The bytes one read of a streamed file asks for, unless
/// [`with_buf_chunk_size`](ServeDir::with_buf_chunk_size) says otherwise (256 KiB).
pub const DEFAULT_CHUNK: usize = 256 << 10;

/// A tower service that serves the files of a directory and its subdirectories, with
/// tower-http's `ServeDir` semantics, each file operation an io_uring op.
///
/// - `GET` and `HEAD` only (others: 405 with `Allow: GET,HEAD`).
/// - `Content-Type` guessed from the extension (`mime_guess`, as tower-http),
///   `Content-Length`, `Accept-Ranges: bytes`, `Last-Modified`, `ETag`.
/// - Conditional requests: `If-Modified-Since` and `If-None-Match` (304),
///   `If-Unmodified-Since` and `If-Match` (412), `If-Range`.
/// - One byte range (`Range: bytes=...`): 206 with `Content-Range`; an unsatisfiable or
///   malformed range, or several ranges: 416 with `Content-Range: bytes */LEN`.
/// - Precompressed variants (`FILE.br`, `FILE.gz`, ...) when asked for by the builder and
///   accepted by `Accept-Encoding` (q-values honoured), with `Content-Encoding` and
///   `Vary: accept-encoding`; the type is the original file's.
/// - A directory: its `index.html` when the path ends with `/`, else a 307 redirect to the
///   path with the slash ([`append_index_html_on_directories`](
///   ServeDir::append_index_html_on_directories)).
/// - 404 for a missing file and for every path that would leave the directory (`..`,
///   `%2e%2e`, a decoded absolute path, a backslash, `%00`, a symlink pointing out).
///
/// It is `Clone`, `Send` and `Sync`, its futures are `Send` and its body is `Send`, so an
/// axum `Router` can mount it (`Router::nest_service("/static", ServeDir::new("assets"))`).
/// Its futures and bodies must be polled on a core of this runtime (the one that first
/// polled them), as every op is.
///
/// # The ops
/// The directory is opened once (`O_PATH`), at the first request. Each request then opens
/// its file with `IORING_OP_OPENAT2` relative to it (`RESOLVE_BENEATH |
/// RESOLVE_NO_MAGICLINKS`: the kernel refuses any resolution that leaves the directory),
/// reads its metadata with `IORING_OP_STATX`, and for a `GET` reads it with
/// `IORING_OP_READ` into a buffer it owns: a file (or range) of up to [`WHOLE_FILE_MAX`]
/// bytes in one read, sent as one frame, then closed with `IORING_OP_CLOSE`; a larger one
/// [`DEFAULT_CHUNK`] bytes per read as the body is polled, closed through the ring after
/// its last byte, or by `close(2)` when the body is dropped early (a read in flight keeps
/// the file open until its completion). A `HEAD` opens `O_PATH` and reads nothing. On the
/// epoll backend the same ops run as `openat2(2)`, `statx(2)`, `pread(2)` and `close(2)`,
/// the first three on the runtime's blocking pool (a read of cached pages first tries
/// `preadv2(RWF_NOWAIT)` on the core), as every file op does there. No op waits on the
/// blocking pool on io_uring.
///
/// # Where it differs from tower-http 0.6
/// - **Symlinks** are followed only while they stay beneath the directory and are
///   relative; tower-http follows any symlink, out of the directory too. Ours answers 404
///   for one that leaves it, and for an absolute one (even into the directory).
/// - **`ETag`** on every file response and on 304s, from the inode, the modification time
///   (nanoseconds) and the size; `If-None-Match` (weak comparison) answers 304,
///   `If-Match` (strong) 412, with RFC 9110's precedence over the dates; `If-Range` turns a
///   range request for a changed file into a full one. tower-http 0.6 has none of these
///   (0.7 has the first two).
/// - **`Vary: accept-encoding`** on file responses and 304s when any precompressed variant
///   is looked for, as tower-http 0.7 sends it; 0.6 sends none.
/// - **404 rather than 500** for a `HEAD` with a NUL byte (`%00`) in its path, a symlink
///   loop and a name too long; a backslash in a segment is refused (tower-http on Linux
///   takes it as part of a name); anything that is not a regular file (a directory named
///   `index.html`, a device) is 404, where tower-http sends it as a file whose read fails.
/// - A precompressed variant is served only if it is a regular file; when the file itself
///   is missing but a variant the request accepts exists, the variant is served (as
///   tower-http does), without tower-http's further try of the name less its extension.
/// - The directory is opened at the first request and kept: renaming it away later does
///   not change what is served, where tower-http resolves its path on every request.
/// - There is no fallback service (tower-http's `fallback`, `not_found_service`).
/// - **Out of descriptors** (`EMFILE`, `ENFILE`: under load every response in flight holds
///   one): the open waits for one to come free (backing off from 1 ms to 50 ms, 2 s in all),
///   then answers 503; tower-http answers 500 at once. Measured under HttpArena's static-h2
///   load (1,024 TLS connections × 32 streams, 20,000 descriptors): 31,589 of 75,316
///   answers were 500s before, none after.
///
/// A FIFO in the directory is opened as tower-http opens it (the open waits for a writer);
/// on io_uring the wait is the kernel's worker's, not the core's.
///
/// ```
/// use bytes::Bytes;
/// use http_body_util::{BodyExt, Empty};
/// use corering_net::hyper::{serve, Client, ServeDir};
///
/// let dir = std::env::temp_dir().join(format!("serve-dir-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("hello.txt"), "hello\n")?;
/// let rt = runtime::Runtime::new()?;
/// rt.block_on(async {
///     let server = serve("127.0.0.1:0", ServeDir::new(&dir).precompressed_gzip())?;
///     let uri = format!("http://{}/hello.txt", server.local_addr()).parse().unwrap();
///     let res = Client::<Empty<Bytes>>::new().get(uri).await?;
///     assert_eq!(res.headers()["content-type"], "text/plain");
///     let body = res.into_body().collect().await.unwrap().to_bytes();
///     assert_eq!(&body[..], b"hello\n");
///     server.shutdown(std::time::Duration::from_secs(1)).await
/// })?;
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct ServeDir {
    shared: Arc<Shared>,
}

/// The settings of a service and its clones, and the directory once opened.
#[derive(Clone)]
struct Shared {
    base: PathBuf,
    append_index: bool,
    precompressed: Precompressed,
    chunk: usize,
    /// The directory, opened (`O_PATH`) at the first request that needs it.
    root: OnceLock<Arc<FileFd>>,
}

impl Shared {
    /// The directory, opened now if it is not yet.
    async fn root(&self) -> io::Result<Arc<FileFd>> {
        if let Some(root) = self.root.get() {
            return Ok(root.clone());
        }
        let path = CString::new(self.base.as_os_str().as_bytes()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a NUL byte in the directory's path",
            )
        })?;
        let fd = ops::open(None, path, libc::O_PATH | libc::O_DIRECTORY, 0).await?;
        // Another request may have opened it meanwhile: one is kept, the other closed.
        Ok(self.root.get_or_init(|| Arc::new(fd)).clone())
    }
}

impl ServeDir {
    /// A service serving the files beneath `path` (relative to the current directory at
    /// the first request, if relative). Nothing is opened until then.
    pub fn new(path: impl AsRef<Path>) -> ServeDir {
        ServeDir {
            shared: Arc::new(Shared {
                base: path.as_ref().to_owned(),
                append_index: true,
                precompressed: Precompressed::default(),
                chunk: DEFAULT_CHUNK,
                root: OnceLock::new(),
            }),
        }
    }

    fn shared_mut(&mut self) -> &mut Shared {
        Arc::make_mut(&mut self.shared)
    }

    /// Whether a request for a directory gets its `index.html` (default `true`); with
    /// `false` it gets 404.
    pub fn append_index_html_on_directories(mut self, append: bool) -> ServeDir {
        self.shared_mut().append_index = append;
        self
    }

    /// The bytes each read of a streamed file (one larger than [`WHOLE_FILE_MAX`]) asks
    /// for, and so the largest frame of its body (default [`DEFAULT_CHUNK`]).
    pub fn with_buf_chunk_size(mut self, chunk_size: usize) -> ServeDir {
        self.shared_mut().chunk = chunk_size.max(1);
        self
    }

    /// Looks for `FILE.gz` and serves it, with `Content-Encoding: gzip`, to requests that
    /// accept gzip (tower-http's name).
    pub fn precompressed_gzip(mut self) -> ServeDir {
        self.shared_mut().precompressed.gzip = true;
        self
    }

    /// Looks for `FILE.br` and serves it, with `Content-Encoding: br`, to requests that
    /// accept brotli.
    pub fn precompressed_br(mut self) -> ServeDir {
        self.shared_mut().precompressed.br = true;
        self
    }

    /// Looks for `FILE.zz` and serves it, with `Content-Encoding: deflate`, to requests that
    /// accept deflate.
    pub fn precompressed_deflate(mut self) -> ServeDir {
        self.shared_mut().precompressed.deflate = true;
        self
    }

    /// Looks for `FILE.zst` and serves it, with `Content-Encoding: zstd`, to requests that
    /// accept zstd.
    pub fn precompressed_zstd(mut self) -> ServeDir {
        self.shared_mut().precompressed.zstd = true;
        self
    }
}

impl fmt::Debug for ServeDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.shared;
        f.debug_struct("ServeDir")
            .field("base", &s.base)
            .field("append_index_html_on_directories", &s.append_index)
            .field("precompressed", &s.precompressed)
            .field("chunk", &s.chunk)
            .finish()
    }
}

impl<B> tower_service::Service<Request<B>> for ServeDir {
    type Response = Response<ServeDirBody>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> ResponseFuture {
        // Only what the response depends on is kept: the body (of any type, `Send` or not)
        // is dropped here.
        let head = match *req.method() {
            Method::GET => false,
            Method::HEAD => true,
            _ => {
                let mut res = respond::status(StatusCode::METHOD_NOT_ALLOWED);
                res.headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("GET,HEAD"));
                return ResponseFuture::ready(res);
            }
        };
        let Some(rel) = path::relative(req.uri().path()) else {
            return ResponseFuture::ready(respond::status(StatusCode::NOT_FOUND));
        };
        let headers = req.headers();
        let asked = Asked {
            head,
            encodings: encoding::negotiate(headers, self.shared.precompressed),
            range: headers
                .get(header::RANGE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            conditions: Conditions::of(headers),
            uri: req.uri().clone(),
        };
        let shared = self.shared.clone();
        ResponseFuture {
            inner: Inner::Pending(Box::pin(respond::respond(shared, asked, rel))),
        }
    }
}

/// The future of a [`ServeDir`] response: `Send`, never an error.
pub struct ResponseFuture {
    inner: Inner,
}

enum Inner {
    Ready(Option<Response<ServeDirBody>>),
    Pending(Pin<Box<dyn Future<Output = Response<ServeDirBody>> + Send>>),
}

impl ResponseFuture {
    fn ready(res: Response<ServeDirBody>) -> ResponseFuture {
        ResponseFuture {
            inner: Inner::Ready(Some(res)),
        }
    }
}

impl Future for ResponseFuture {
    type Output = Result<Response<ServeDirBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let res = match &mut this.inner {
            // Polled again after its response (a caller's bug): a 500, not a panic.
            Inner::Ready(res) => res
                .take()
                .unwrap_or_else(|| respond::status(StatusCode::INTERNAL_SERVER_ERROR)),
            Inner::Pending(fut) => std::task::ready!(fut.as_mut().poll(cx)),
        };
        this.inner = Inner::Ready(None);
        Poll::Ready(Ok(res))
    }
}

impl fmt::Debug for ResponseFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.inner {
            Inner::Ready(_) => "ready",
            Inner::Pending(_) => "pending",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .finish()
    }
}
