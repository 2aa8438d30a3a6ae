//! An HTTP client on hyper's connection API: HTTP/1.1 and HTTP/2 (h2c by prior knowledge, or
//! by ALPN over TLS), with connection reuse, on the current core.
//!
//! Connections are kept per origin (scheme, host, port): HTTP/2 multiplexes every request
//! on one connection; HTTP/1.1 keeps idle connections and opens another when none is free
//! (one whose previous response body has not been read to its end is not free). Each
//! connection's I/O runs in a task on this core ([`HyperExecutor`]); a connection that
//! closed is dropped from the pool and replaced on the next request.
//!
//! Host names are resolved by `TcpStream::connect`, on the runtime's blocking pool (see the
//! [crate] docs): the core serves its other tasks while a lookup runs. An IP address (an
//! IPv6 one in brackets, `http://[::1]:8080/`) is used as it is, without a lookup.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::future::poll_fn;
use std::io;
use std::rc::Rc;
use std::task::{Poll, Waker};

use http::uri::{Authority, Scheme};
use http::{header, HeaderValue, Request, Response, Uri, Version};
use hyper::body::{Body, Incoming};
use hyper::client::conn::{http1, http2};

use super::{HyperExecutor, HyperIo, HyperTimer};
use crate::TcpStream;

/// A boxed error, as hyper passes them.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// An origin: where a pooled connection goes.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct Origin {
    https: bool,
    host: String,
    port: u16,
}

/// A pooled connection's request side.
enum Pooled<B> {
    H1(Vec<http1::SendRequest<B>>),
    H2(http2::SendRequest<B>),
    /// A connection that may turn out HTTP/2 is being opened: requests to the origin wait
    /// for it rather than each opening their own.
    Connecting(Vec<Waker>),
}

/// What a request finds in the pool.
enum Found<B> {
    Ready(Opened<B>),
    /// Nothing: open a connection (as the origin's one opener when `exclusive`).
    Connect {
        exclusive: bool,
    },
    /// Another request is opening the origin's connection.
    Wait,
}

/// A connection just opened: HTTP/1.1 or HTTP/2.
enum Opened<B> {
    H1(http1::SendRequest<B>),
    H2(http2::SendRequest<B>),
}

/// An HTTP client for request bodies of type `B` (e.g. `http_body_util::Full<Bytes>` or
/// `Empty<Bytes>`), on the current core. Clones share the pool; it is `!Send`, like the
/// connections it holds: make one per core.
///
/// ```no_run
/// use bytes::Bytes;
/// use http_body_util::{BodyExt, Empty};
///
/// # #[runtime::main]
/// # async fn main() -> std::io::Result<()> {
/// let client = corering_net::hyper::Client::<Empty<Bytes>>::new();
/// let res = client.get("http://127.0.0.1:8080/".parse().unwrap()).await?;
/// let body = res.into_body().collect().await.map_err(std::io::Error::other)?.to_bytes();
/// println!("{}", String::from_utf8_lossy(&body));
/// # Ok(())
/// # }
/// ```
pub struct Client<B> {
    inner: Rc<Inner<B>>,
}

struct Inner<B> {
    http2_prior_knowledge: bool,
    #[cfg(feature = "tls")]
    tls: Option<crate::tls::TlsConnector>,
    pool: RefCell<HashMap<Origin, Pooled<B>>>,
    connections_opened: std::cell::Cell<u64>,
}

impl<B> Clone for Client<B> {
    fn clone(&self) -> Self {
        Client {
            inner: self.inner.clone(),
        }
    }
}

impl<B> fmt::Debug for Client<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("http2_prior_knowledge", &self.inner.http2_prior_knowledge)
            .field("origins", &self.inner.pool.borrow().len())
            .field("connections_opened", &self.inner.connections_opened.get())
            .finish()
    }
}

/// Settings for a [`Client`].
#[derive(Debug, Clone, Default)]
pub struct ClientBuilder {
    http2_prior_knowledge: bool,
    #[cfg(feature = "tls")]
    tls: Option<crate::tls::TlsConnector>,
}

impl ClientBuilder {
    /// Speaks HTTP/2 to `http://` origins without asking first (h2c with prior knowledge),
    /// as `curl --http2-prior-knowledge` does. Off by default: HTTP/1.1.
    pub fn http2_prior_knowledge(mut self, on: bool) -> ClientBuilder {
        self.http2_prior_knowledge = on;
        self
    }

    /// The TLS connector for `https://` origins. Its configuration's `alpn_protocols` picks
    /// the protocol: with `h2` offered and agreed, HTTP/2; otherwise HTTP/1.1.
    #[cfg(feature = "tls")]
    pub fn tls(mut self, connector: crate::tls::TlsConnector) -> ClientBuilder {
        self.tls = Some(connector);
        self
    }

    /// The client.
    pub fn build<B>(self) -> Client<B> {
        Client {
            inner: Rc::new(Inner {
                http2_prior_knowledge: self.http2_prior_knowledge,
                #[cfg(feature = "tls")]
                tls: self.tls,
                pool: RefCell::new(HashMap::new()),
                connections_opened: std::cell::Cell::new(0),
            }),
        }
    }
}

impl Client<()> {
    /// Settings for a client; [`ClientBuilder::build`] picks the body type.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }
}

impl<B> Default for Client<B> {
    fn default() -> Self {
        Client::new()
    }
}

impl<B> Client<B> {
    /// A client with default settings: HTTP/1.1 for `http://`; no TLS.
    pub fn new() -> Client<B> {
        ClientBuilder::default().build()
    }

    /// How many connections this client (and its clones) has opened: a measure of reuse.
    pub fn connections_opened(&self) -> u64 {
        self.inner.connections_opened.get()
    }
}

impl<B> Client<B>
where
    B: Body + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    /// A `GET` of `uri` with an empty body (`B::default()`).
    ///
    /// # Errors
    /// As [`request`](Client::request).
    pub async fn get(&self, uri: Uri) -> io::Result<Response<Incoming>>
    where
        B: Default,
    {
        let mut req = Request::new(B::default());
        *req.uri_mut() = uri;
        self.request(req).await
    }

    /// Sends `req` (an absolute `http://` or `https://` URI) on a pooled connection to its
    /// origin, opening one if none is free, and gives back the response head; its body
    /// streams from the connection.
    ///
    /// # Errors
    /// `InvalidInput` for a URI without a scheme or host, or an unsupported scheme (or
    /// `https` without a TLS connector); connection errors with the origin in the message;
    /// hyper's errors (`io::ErrorKind::Other` wrapping `hyper::Error`).
    pub async fn request(&self, mut req: Request<B>) -> io::Result<Response<Incoming>> {
        let origin = origin(req.uri())?;
        if origin.https && !self.has_tls() {
            return Err(no_tls(&origin));
        }
        // Take a free connection, or open one, or wait for the one being opened.
        let conn = loop {
            match self.find(&origin) {
                Found::Ready(conn) => break conn,
                Found::Connect { exclusive: false } => break self.connect(&origin).await?,
                Found::Connect { exclusive: true } => {
                    let opening = Opening {
                        pool: &self.inner.pool,
                        origin: &origin,
                    };
                    let conn = self.connect(&origin).await;
                    drop(opening);
                    break conn?;
                }
                Found::Wait => self.opened(&origin).await,
            }
        };
        match conn {
            Opened::H2(mut send) => {
                *req.version_mut() = Version::HTTP_2;
                let res = send.send_request(req).await;
                res.map_err(|e| hyper_error(e, &origin))
            }
            Opened::H1(mut send) => {
                to_origin_form(&mut req, &origin)?;
                let res = send.send_request(req).await;
                // The connection goes back to the pool; it is free again once the response
                // body has been read to its end.
                if !send.is_closed() {
                    self.put_h1(&origin, send);
                }
                res.map_err(|e| hyper_error(e, &origin))
            }
        }
    }

    fn has_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.inner.tls.is_some();
        #[cfg(not(feature = "tls"))]
        return false;
    }

    /// A connection to `origin` ready for a request now, or what to do instead.
    fn find(&self, origin: &Origin) -> Found<B> {
        // HTTP/2 is possible by prior knowledge, or over TLS by ALPN: one connection is
        // opened and the rest wait for it.
        let maybe_h2 = origin.https || self.inner.http2_prior_knowledge;
        let mut pool = self.inner.pool.borrow_mut();
        match pool.get_mut(origin) {
            None => {}
            Some(Pooled::Connecting(_)) => return Found::Wait,
            // A closed HTTP/2 connection is replaced.
            Some(Pooled::H2(send)) if send.is_closed() => {}
            Some(Pooled::H2(send)) => return Found::Ready(Opened::H2(send.clone())),
            Some(Pooled::H1(idle)) => {
                idle.retain(|s| !s.is_closed());
                if let Some(free) = idle.iter().position(|s| s.is_ready()) {
                    return Found::Ready(Opened::H1(idle.swap_remove(free)));
                }
                // Known to be HTTP/1.1: open another beside the busy ones.
                return Found::Connect { exclusive: false };
            }
        }
        if maybe_h2 {
            pool.insert(origin.clone(), Pooled::Connecting(Vec::new()));
        } else {
            pool.remove(origin);
        }
        Found::Connect {
            exclusive: maybe_h2,
        }
    }

    /// Waits until the connection being opened to `origin` is opened (or failed).
    async fn opened(&self, origin: &Origin) {
        poll_fn(|cx| match self.inner.pool.borrow_mut().get_mut(origin) {
            Some(Pooled::Connecting(waiters)) => {
                waiters.push(cx.waker().clone());
                Poll::Pending
            }
            _ => Poll::Ready(()),
        })
        .await
    }

    fn put_h1(&self, origin: &Origin, send: http1::SendRequest<B>) {
        let mut pool = self.inner.pool.borrow_mut();
        match pool
            .entry(origin.clone())
            .or_insert_with(|| Pooled::H1(Vec::new()))
        {
            Pooled::H1(idle) => idle.push(send),
            // Another request made this origin HTTP/2 meanwhile, or is opening a connection
            // to it; this connection just ends when its response is read.
            Pooled::H2(_) | Pooled::Connecting(_) => {}
        }
    }

    /// Opens a connection to `origin`: TCP, TLS for `https`, then the HTTP handshake; its
    /// I/O task is spawned on this core.
    async fn connect(&self, origin: &Origin) -> io::Result<Opened<B>> {
        // A URI's IPv6 host keeps its brackets (`[::1]`); the address is the IP inside.
        let host = origin.host.trim_start_matches('[').trim_end_matches(']');
        let stream = TcpStream::connect((host, origin.port)).await?;
        let _ = stream.set_nodelay(true);
        self.inner
            .connections_opened
            .set(self.inner.connections_opened.get() + 1);
        if origin.https {
            return self.connect_tls(origin, stream).await;
        }
        if self.inner.http2_prior_knowledge {
            let send = self.handshake_h2(origin, HyperIo::new(stream)).await?;
            Ok(Opened::H2(send))
        } else {
            let send = handshake_h1(origin, HyperIo::new(stream)).await?;
            Ok(Opened::H1(send))
        }
    }

    #[cfg(feature = "tls")]
    async fn connect_tls(&self, origin: &Origin, stream: TcpStream) -> io::Result<Opened<B>> {
        let Some(tls) = &self.inner.tls else {
            return Err(no_tls(origin));
        };
        let host = origin.host.trim_start_matches('[').trim_end_matches(']');
        let stream = tls.connect(host, stream).await?;
        if stream.alpn_protocol() == Some(b"h2") {
            let send = self.handshake_h2(origin, HyperIo::new(stream)).await?;
            Ok(Opened::H2(send))
        } else {
            let send = handshake_h1(origin, HyperIo::new(stream)).await?;
            // Known to be HTTP/1.1 now: requests waiting for this origin open their own.
            self.wake_waiters(origin, Pooled::H1(Vec::new()));
            Ok(Opened::H1(send))
        }
    }

    #[cfg(not(feature = "tls"))]
    async fn connect_tls(&self, origin: &Origin, _stream: TcpStream) -> io::Result<Opened<B>> {
        Err(no_tls(origin))
    }

    /// The HTTP/2 handshake; the connection becomes the origin's shared one.
    async fn handshake_h2<T>(&self, origin: &Origin, io: T) -> io::Result<http2::SendRequest<B>>
    where
        T: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
    {
        let (send, conn) = http2::Builder::new(HyperExecutor)
            .timer(HyperTimer)
            .handshake(io)
            .await
            .map_err(|e| hyper_error(e, origin))?;
        drop(runtime::spawn_local(conn));
        self.wake_waiters(origin, Pooled::H2(send.clone()));
        Ok(send)
    }

    /// Makes `entry` the origin's pool entry and wakes the requests that waited for it.
    fn wake_waiters(&self, origin: &Origin, entry: Pooled<B>) {
        let old = self.inner.pool.borrow_mut().insert(origin.clone(), entry);
        if let Some(Pooled::Connecting(waiters)) = old {
            waiters.into_iter().for_each(Waker::wake);
        }
    }
}

/// The origin's one opener at work: if it ends (opened, failed, or dropped) with the entry
/// still `Connecting`, the entry goes and the waiting requests try again themselves.
struct Opening<'a, B> {
    pool: &'a RefCell<HashMap<Origin, Pooled<B>>>,
    origin: &'a Origin,
}

impl<B> Drop for Opening<'_, B> {
    fn drop(&mut self) {
        let mut pool = self.pool.borrow_mut();
        if let Some(Pooled::Connecting(_)) = pool.get(self.origin) {
            if let Some(Pooled::Connecting(waiters)) = pool.remove(self.origin) {
                drop(pool);
                waiters.into_iter().for_each(Waker::wake);
            }
        }
    }
}

/// The HTTP/1.1 handshake (nothing is sent yet); the connection's task is spawned.
async fn handshake_h1<T, B>(origin: &Origin, io: T) -> io::Result<http1::SendRequest<B>>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
    B: Body + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let (send, conn) = http1::handshake(io)
        .await
        .map_err(|e| hyper_error(e, origin))?;
    drop(runtime::spawn_local(conn));
    Ok(send)
}

/// The origin of an absolute URI.
fn origin(uri: &Uri) -> io::Result<Origin> {
    let https = match uri.scheme() {
        Some(s) if *s == Scheme::HTTP => false,
        Some(s) if *s == Scheme::HTTPS => true,
        Some(s) => return Err(invalid(format!("unsupported URI scheme {s:?} in {uri}"))),
        None => return Err(invalid(format!("no scheme in {uri} (absolute URI needed)"))),
    };
    let host = uri
        .host()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| invalid(format!("no host in {uri}")))?;
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    Ok(Origin {
        https,
        host: host.to_owned(),
        port,
    })
}

/// HTTP/1.1 sends the path and query as the request target, and the authority as `Host`.
fn to_origin_form<B>(req: &mut Request<B>, origin: &Origin) -> io::Result<()> {
    if !req.headers().contains_key(header::HOST) {
        let host = match req.uri().authority() {
            Some(a) => host_header(a),
            None => format!("{}:{}", origin.host, origin.port),
        };
        let value = HeaderValue::from_str(&host)
            .map_err(|e| invalid(format!("Host header {host:?}: {e}")))?;
        req.headers_mut().insert(header::HOST, value);
    }
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let path: Uri = path
        .parse()
        .map_err(|e| invalid(format!("request path {path:?}: {e}")))?;
    *req.uri_mut() = path;
    *req.version_mut() = Version::HTTP_11;
    Ok(())
}

/// The `Host` header for an authority: without user info.
fn host_header(a: &Authority) -> String {
    match a.port() {
        Some(p) => format!("{}:{}", a.host(), p),
        None => a.host().to_owned(),
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

fn no_tls(origin: &Origin) -> io::Error {
    invalid(format!(
        "https://{}:{} needs a TLS connector (ClientBuilder::tls, feature `tls`)",
        origin.host, origin.port
    ))
}

fn hyper_error(e: hyper::Error, origin: &Origin) -> io::Error {
    let scheme = if origin.https { "https" } else { "http" };
    io::Error::other(HttpError {
        origin: format!("{scheme}://{}:{}", origin.host, origin.port),
        source: e,
    })
}

/// A hyper error with the origin it happened with.
#[derive(Debug)]
struct HttpError {
    origin: String,
    source: hyper::Error,
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP with {}: {}", self.origin, self.source)
    }
}

impl std::error::Error for HttpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}
