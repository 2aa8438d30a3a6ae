//! One request, from its parts to its response: the path checked, the file (or its
//! precompressed variant, or a directory's `index.html`) opened beneath the root and its
//! metadata read, the preconditions and the range evaluated, and the response made as
//! tower-http 0.6's `ServeDir` makes it (its headers, statuses and bodies), plus an `ETag`
//! and `Vary`.
//!
//! Opens are `O_PATH` for `HEAD` (metadata only, as tower-http's `HEAD` reads metadata
//! without opening the file) and read-only for `GET`. The file a response is about is
//! closed through the ring; what the request opened on its way (a directory, the file
//! beside the variant chosen, a file that is not regular) is closed by its drop.

use std::ffi::CString;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{HeaderMap, Response, StatusCode, Uri};

use super::body::ServeDirBody;
use super::conditional::{Conditions, Validators, Verdict};
use super::encoding::Encoding;
use super::ops::{self, FileFd, Stat};
use super::range::{self, Ranges};
use super::{Shared, WHOLE_FILE_MAX};

/// What the service keeps of a request: everything the response depends on, read in
/// `call` so that neither the request nor its body need be `Send`.
pub(super) struct Asked {
    pub(super) head: bool,
    pub(super) uri: Uri,
    pub(super) encodings: Vec<Encoding>,
    pub(super) range: Option<String>,
    pub(super) conditions: Conditions,
}

/// `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` (`openat2(2)`): every component of the path,
/// symlinks followed, must stay beneath the root (`..` above it, an absolute path or
/// symlink fail with `EXDEV`), and no `/proc` magic link is followed (`ELOOP`).
const RESOLVE: u64 = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;

/// How often an open that raced a rename or mount (`EAGAIN`, which `RESOLVE_BENEATH` gives
/// rather than risk an escape) is tried again.
const OPEN_TRIES: usize = 4;

/// How long, in all, an open waits for a descriptor when the process has none left
/// (`EMFILE`, `ENFILE`: under load every response in flight holds one, and thousands of
/// streams may be asking at once) before the request is answered `503`. The wait backs off
/// from 1 ms to 50 ms (the accept loop, on the same errors, waits 10 ms between tries).
const FD_WAIT: Duration = Duration::from_secs(2);

/// Whether `e` says the process (or the system) has no descriptor left.
fn out_of_fds(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// An open file (or `O_PATH` handle) and its metadata.
struct Found {
    fd: FileFd,
    stat: Stat,
}

/// The response to `asked` for a path already checked: `rel`, relative to the root.
pub(super) async fn respond(
    shared: Arc<Shared>,
    asked: Asked,
    rel: String,
) -> Response<ServeDirBody> {
    match serve(&shared, &asked, rel).await {
        Ok(res) => res,
        Err(e) => error_response(&e),
    }
}

/// 404 for what tower-http answers 404 (a missing file, no permission, a file used as a
/// directory) and for what is refused beneath the root (an escape, a magic link, a symlink
/// loop, a name too long); 503 when no descriptor came free within [`FD_WAIT`]; 500 for any
/// other error.
fn error_response(e: &io::Error) -> Response<ServeDirBody> {
    if out_of_fds(e) {
        return status(StatusCode::SERVICE_UNAVAILABLE);
    }
    let not_found = matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied
    ) || matches!(
        e.raw_os_error(),
        Some(libc::ENOTDIR | libc::EXDEV | libc::ELOOP | libc::ENAMETOOLONG)
    );
    status(if not_found {
        StatusCode::NOT_FOUND
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    })
}

/// An empty response with `code`.
pub(super) fn status(code: StatusCode) -> Response<ServeDirBody> {
    let mut res = Response::new(ServeDirBody::empty());
    *res.status_mut() = code;
    res
}

async fn serve(
    shared: &Shared,
    asked: &Asked,
    mut rel: String,
) -> io::Result<Response<ServeDirBody>> {
    let root = shared.root().await?;
    let flags = if asked.head {
        libc::O_PATH
    } else {
        libc::O_RDONLY
    };
    // The path itself first, whatever the encodings: a directory redirects or serves its
    // `index.html`, as in tower-http.
    let mut plain = match open_stat(&root, &rel, flags).await {
        Ok(found) if found.stat.is_dir() => None,
        // Unreadable for `GET`: a directory may still be searchable (its `index.html`),
        // as tower-http finds it through the metadata.
        Err(e) if !asked.head && e.kind() == io::ErrorKind::PermissionDenied => {
            match open_stat(&root, &rel, libc::O_PATH).await {
                Ok(found) if found.stat.is_dir() => None,
                _ => Some(Err(e)),
            }
        }
        other => Some(other),
    };
    if plain.is_none() {
        if !shared.append_index {
            return Ok(status(StatusCode::NOT_FOUND));
        }
        if !asked.uri.path().ends_with('/') {
            return Ok(redirect(&asked.uri));
        }
        rel.push_str(if rel.is_empty() {
            "index.html"
        } else {
            "/index.html"
        });
    }
    let mime = content_type(&rel);

    // The precompressed variants the request accepts, best first, up to the file itself.
    let mut chosen = None;
    for &encoding in &asked.encodings {
        let Some(suffix) = encoding.suffix() else {
            break;
        };
        match open_stat(&root, &format!("{rel}{suffix}"), flags).await {
            Ok(found) if found.stat.is_file() => {
                chosen = Some((found, encoding));
                break;
            }
            Ok(_) => {}
            Err(e) if is_absent(&e) => {}
            Err(e) => return Err(e),
        }
    }
    let (found, encoding) = match chosen {
        Some(c) => {
            drop(plain.take());
            c
        }
        None => match plain.take() {
            Some(found) => (found?, Encoding::Identity),
            None => (open_stat(&root, &rel, flags).await?, Encoding::Identity),
        },
    };
    if !found.stat.is_file() {
        return Ok(status(StatusCode::NOT_FOUND));
    }

    let validators = Validators::of(&found.stat);
    let vary = shared.precompressed.any();
    match asked.conditions.check(&validators) {
        Verdict::Serve => {}
        Verdict::Failed => {
            ops::close(found.fd).await;
            return Ok(status(StatusCode::PRECONDITION_FAILED));
        }
        Verdict::NotModified => {
            ops::close(found.fd).await;
            let mut res = status(StatusCode::NOT_MODIFIED);
            let h = res.headers_mut();
            h.insert(header::ETAG, validators.etag);
            if vary {
                h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
            }
            return Ok(res);
        }
    }

    let size = found.stat.size;
    let ranges = match &asked.range {
        Some(r) if asked.conditions.range_applies(&validators) => Some(range::parse(r, size)),
        _ => None,
    };
    let mut h = HeaderMap::with_capacity(9);
    h.insert(header::CONTENT_TYPE, mime);
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if let Some(value) = encoding.header_value() {
        h.insert(header::CONTENT_ENCODING, value);
    }
    if vary {
        h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    if let Some(value) = validators.last_modified() {
        h.insert(header::LAST_MODIFIED, value);
    }
    h.insert(header::ETAG, validators.etag);

    // What to send: (status, first byte, length); tower-http's 206 of an empty file sends
    // 0 bytes.
    let (code, pos, len) = match ranges {
        None => (StatusCode::OK, 0, size),
        Some(Ranges::One(r)) => {
            let len = if size == 0 {
                0
            } else {
                r.end() - r.start() + 1
            };
            let value = format!("bytes {}-{}/{}", r.start(), r.end(), size);
            if let Ok(value) = HeaderValue::from_str(&value) {
                h.insert(header::CONTENT_RANGE, value);
            }
            (StatusCode::PARTIAL_CONTENT, *r.start(), len)
        }
        Some(unsatisfiable) => {
            if let Ok(value) = HeaderValue::from_str(&format!("bytes */{size}")) {
                h.insert(header::CONTENT_RANGE, value);
            }
            ops::close(found.fd).await;
            let mut res = status(StatusCode::RANGE_NOT_SATISFIABLE);
            *res.headers_mut() = h;
            if unsatisfiable == Ranges::Many {
                // tower-http's words, for a request it does not serve.
                *res.body_mut() = ServeDirBody::full(Bytes::from_static(
                    b"Cannot serve multipart range requests",
                ));
            }
            return Ok(res);
        }
    };
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    let body = if asked.head {
        ops::close(found.fd).await;
        ServeDirBody::empty()
    } else if len <= WHOLE_FILE_MAX {
        ServeDirBody::full(read_whole(found.fd, pos, len).await?)
    } else {
        ServeDirBody::file(found.fd, pos, len, shared.chunk)
    };
    let mut res = Response::new(body);
    *res.status_mut() = code;
    *res.headers_mut() = h;
    Ok(res)
}

/// Opens `rel` beneath `root` (the root itself for an empty path) and reads its metadata.
async fn open_stat(root: &Arc<FileFd>, rel: &str, flags: i32) -> io::Result<Found> {
    let path = if rel.is_empty() { "." } else { rel };
    let path = CString::new(path).map_err(|_| io::Error::from_raw_os_error(libc::ENOENT))?;
    // `openat2(2)` refuses `O_PATH` with any flag but a few; a read-only open of a tty in
    // the directory must not make it ours.
    let flags = if flags & libc::O_PATH != 0 {
        flags
    } else {
        flags | libc::O_NOCTTY
    };
    let mut tries = 0;
    let (mut waited, mut pause) = (Duration::ZERO, Duration::from_millis(1));
    let fd = loop {
        match ops::open(Some(root), path.clone(), flags, RESOLVE).await {
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) && tries + 1 < OPEN_TRIES => {
                tries += 1;
            }
            // No descriptor left: wait for responses in flight to close theirs.
            Err(e) if out_of_fds(&e) && waited < FD_WAIT => {
                runtime::time::sleep(pause).await;
                waited += pause;
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            res => break Arc::new(res?),
        }
    };
    let stat = ops::statx(&fd).await?;
    // The statx's data has given its clone back.
    let fd = Arc::try_unwrap(fd).map_err(|_| io::Error::other("the file is still shared"))?;
    Ok(Found { fd, stat })
}

/// Whether a precompressed variant is not there to serve: missing, or refused beneath the
/// root (the file itself may still be served).
fn is_absent(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
        || matches!(e.raw_os_error(), Some(libc::EXDEV | libc::ELOOP))
}

/// `len` bytes of `fd` from `pos`, in one read where the kernel gives them at once; the file
/// is closed through the ring after.
async fn read_whole(fd: FileFd, pos: u64, len: u64) -> io::Result<Bytes> {
    let fd = Arc::new(fd);
    let mut buf = Vec::with_capacity(len as usize);
    let res = loop {
        if buf.len() as u64 == len {
            break Ok(());
        }
        let at = pos + buf.len() as u64;
        let (res, back) = ops::read(&fd, buf, at).await;
        buf = back;
        match res {
            Ok(0) => {
                break Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the file ended before the length its metadata gave",
                ))
            }
            Ok(_) => {}
            Err(e) => break Err(e),
        }
    };
    if let Ok(fd) = Arc::try_unwrap(fd) {
        ops::close(fd).await;
    }
    res.map(|()| Bytes::from(buf))
}

/// 307 to the same URI with a slash after its path (its query kept), as tower-http
/// redirects a directory named without one.
fn redirect(uri: &Uri) -> Response<ServeDirBody> {
    let path_and_query = match uri.query() {
        Some(q) => format!("{}/?{q}", uri.path()),
        None => format!("{}/", uri.path()),
    };
    let mut parts = http::uri::Parts::default();
    parts.scheme = uri.scheme().cloned();
    parts.authority = uri.authority().cloned();
    let location = path_and_query
        .parse()
        .ok()
        .and_then(|pq| {
            parts.path_and_query = Some(pq);
            Uri::from_parts(parts).ok()
        })
        .and_then(|uri| HeaderValue::from_str(&uri.to_string()).ok());
    let Some(location) = location else {
        return status(StatusCode::INTERNAL_SERVER_ERROR);
    };
    let mut res = status(StatusCode::TEMPORARY_REDIRECT);
    res.headers_mut().insert(header::LOCATION, location);
    res
}

/// The `Content-Type` of the file at `rel` (its precompressed variants included), guessed
/// from its extension by `mime_guess`, as tower-http does; `application/octet-stream` where
/// there is no guess.
fn content_type(rel: &str) -> HeaderValue {
    mime_guess::from_path(rel)
        .first_raw()
        .and_then(|m| HeaderValue::from_str(m).ok())
        .unwrap_or(HeaderValue::from_static("application/octet-stream"))
}
