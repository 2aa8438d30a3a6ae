//! Serving a tower or hyper service on every core: HTTP/1.1 and HTTP/2 on one port (hyper-util's
//! `auto` connection, which tells them apart by the HTTP/2 preface), over TCP or TLS, with a
//! graceful shutdown.
//!
//! Each core binds its own `SO_REUSEPORT` listener and makes its own service (one clone, or
//! [`Builder::serve_with`]'s factory called on that core); a connection, its hyper state and
//! its HTTP/2 stream tasks stay on the core that accepted it, so nothing here needs `Send`
//! past the factory.
//!
//! Shutdown ([`Server::shutdown`], [`Server::with_graceful_shutdown`]): every core stops
//! accepting and closes its listener, tells each of its connections to finish (an HTTP/1
//! connection closes after its in-flight response, an HTTP/2 one sends `GOAWAY` and
//! finishes its open streams), waits for them up to the grace period, then aborts those
//! left, which closes their sockets.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::io;
use std::net::SocketAddr;
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use futures::channel::oneshot;
use futures::future::{FutureExt, Shared};
use futures::stream::StreamExt;
use http::{Request, Response};
use hyper::body::{Body, Incoming};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use runtime::JoinHandle;
use slab::Slab;

use super::{HyperExecutor, HyperIo, HyperTimer};
use crate::resolve::ToSocketAddrs;
use crate::tcp::{ListenOptions, TcpListener, TcpStream};

/// A boxed error, as hyper and tower pass them.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The shutdown signal every core waits on: the deadline, once shutdown starts; `Err` if the
/// [`Server`] was dropped without one.
type Signal = Shared<oneshot::Receiver<Instant>>;

/// How the HTTP side of every connection is set up: hyper-util's `auto` builder, which the
/// caller may configure further ([`Builder::http`]).
type Configure = Arc<dyn Fn(&mut auto::Builder<HyperExecutor>) + Send + Sync>;

/// Serves `service` on `addr` on every core of the current runtime, HTTP/1.1 and HTTP/2
/// (h2c) on one port; see [`Builder`] for TLS and settings.
///
/// `service` is any tower `Service` of `Request<Incoming>` (an axum `Router` as it is; a
/// hyper service through [`from_hyper`]); it is cloned once per core and once per
/// connection.
///
/// ```no_run
/// use std::convert::Infallible;
/// use std::time::Duration;
///
/// use bytes::Bytes;
/// use http_body_util::Full;
/// use hyper::{service::service_fn, Request, Response};
///
/// # #[runtime::main(cores = 2)]
/// # async fn main() -> std::io::Result<()> {
/// let hello = service_fn(|_req: Request<hyper::body::Incoming>| async {
///     Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"hello\n"))))
/// });
/// let server = corering_net::hyper::serve("127.0.0.1:8080", corering_net::hyper::from_hyper(hello))?;
/// let ctrl_c = async { runtime::signal::ctrl_c().await.ok(); };
/// server.with_graceful_shutdown(ctrl_c, Duration::from_secs(10)).await
/// # }
/// ```
///
/// `addr` is resolved once, synchronously, as [`corering_net::serve`](crate::serve()) does: a numeric
/// address without a system call, a host name on this thread (blocking the core, at
/// startup). The first address it resolves to is bound.
///
/// # Errors
/// Outside a runtime; if the address does not resolve or cannot be bound.
pub fn serve<S, B>(addr: impl ToSocketAddrs, service: S) -> io::Result<Server>
where
    S: tower_service::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: 'static,
    S::Error: Into<BoxError>,
    B: Body + 'static,
    B::Error: Into<BoxError>,
{
    Builder::new().serve(addr, service)
}

/// A hyper service (such as hyper's `service_fn`) as a tower service, for [`serve`].
pub fn from_hyper<S>(service: S) -> FromHyper<S> {
    FromHyper(service)
}

/// A hyper [`Service`](hyper::service::Service) seen as a tower `Service`; made by
/// [`from_hyper`]. Always ready.
#[derive(Debug, Clone, Copy)]
pub struct FromHyper<S>(S);

impl<S, R> tower_service::Service<R> for FromHyper<S>
where
    S: hyper::service::Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: R) -> S::Future {
        hyper::service::Service::call(&self.0, req)
    }
}

/// Settings for [`serve`]: TLS, listen options, the HTTP builder.
#[derive(Clone)]
pub struct Builder {
    listen: ListenOptions,
    configure: Option<Configure>,
    #[cfg(feature = "tls")]
    tls: Option<crate::tls::TlsAcceptor>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Builder");
        d.field("listen", &self.listen);
        #[cfg(feature = "tls")]
        d.field("tls", &self.tls);
        d.finish_non_exhaustive()
    }
}

impl Builder {
    /// Plain TCP, HTTP/1.1 and h2c, hyper's defaults with this runtime's timer (so HTTP/1's
    /// 30 s header read timeout holds).
    pub fn new() -> Builder {
        Builder {
            listen: ListenOptions::new(),
            configure: None,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }

    /// Serves HTTPS: every connection is a TLS handshake through `acceptor` (with its
    /// handshake timeout), then HTTP/2 or HTTP/1.1 as ALPN agreed (put `h2` and `http/1.1` in
    /// the server configuration's `alpn_protocols`).
    #[cfg(feature = "tls")]
    pub fn tls(mut self, acceptor: crate::tls::TlsAcceptor) -> Builder {
        self.tls = Some(acceptor);
        self
    }

    /// The listen options (backlog, `IPV6_V6ONLY`, ...) of every core's listener;
    /// `SO_REUSEPORT` and `TCP_NODELAY` (inherited by every connection) are always set.
    pub fn listen_options(mut self, options: ListenOptions) -> Builder {
        self.listen = options;
        self
    }

    /// Configures hyper-util's `auto` builder of every connection (HTTP/1-only or
    /// HTTP/2-only, keep-alive, header limits, HTTP/2 stream limits, ...). Called once per
    /// core, after the executor and timer are set.
    pub fn http<F>(mut self, configure: F) -> Builder
    where
        F: Fn(&mut auto::Builder<HyperExecutor>) + Send + Sync + 'static,
    {
        self.configure = Some(Arc::new(configure));
        self
    }

    /// Serves `service` (cloned once per core) on `addr`; see [`serve`].
    ///
    /// # Errors
    /// Outside a runtime; if the address does not resolve or cannot be bound.
    pub fn serve<S, B>(self, addr: impl ToSocketAddrs, service: S) -> io::Result<Server>
    where
        S: tower_service::Service<Request<Incoming>, Response = Response<B>>
            + Clone
            + Send
            + 'static,
        S::Future: 'static,
        S::Error: Into<BoxError>,
        B: Body + 'static,
        B::Error: Into<BoxError>,
    {
        self.serve_with(addr, move |_core| service.clone())
    }

    /// Serves the service `make(core)` builds on each core, on `addr`. The service need not
    /// be `Send`: it is made on the core that uses it, so it may hold that core's own state
    /// (an `Rc`, a core-local cache). It is cloned once per connection.
    ///
    /// # Errors
    /// Outside a runtime; if the address does not resolve or cannot be bound.
    pub fn serve_with<M, S, B>(self, addr: impl ToSocketAddrs, make: M) -> io::Result<Server>
    where
        M: Fn(usize) -> S + Clone + Send + 'static,
        S: tower_service::Service<Request<Incoming>, Response = Response<B>> + Clone + 'static,
        S::Future: 'static,
        S::Error: Into<BoxError>,
        B: Body + 'static,
        B::Error: Into<BoxError>,
    {
        let cores = runtime::core_count().ok_or_else(|| {
            io::Error::other("corering_net::hyper::serve called outside of a runtime")
        })?;
        let mut addr = crate::serve::first_addr(&addr)?;
        // TCP_NODELAY on the listener: every connection inherits it, with no per-connection
        // setsockopt (a ring round trip on a direct descriptor).
        let options = self.listen.clone().reuse_port(true).nodelay(true);
        let mut listeners = Vec::with_capacity(cores);
        for _ in 0..cores {
            let listener = TcpListener::bind_with(addr, &options)?;
            // Every core's listener takes the port the first one got.
            addr = listener.local_addr()?;
            listeners.push(listener.into_std()?);
        }
        let (trigger, signal) = oneshot::channel();
        let signal = signal.shared();
        let tasks = listeners
            .into_iter()
            .enumerate()
            .map(|(core, listener)| {
                let make = make.clone();
                let settings = self.clone();
                let signal = signal.clone();
                runtime::spawn_on_local(core, move || {
                    serve_core(core, listener, make, settings, signal)
                })
            })
            .collect();
        Ok(Server {
            addr,
            tasks,
            trigger: Some(trigger),
        })
    }
}

/// A service being served on every core, from [`serve`] or [`Builder::serve`].
///
/// Dropping it stops every core's listener at once; connections being served go on.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    tasks: Vec<JoinHandle<io::Result<()>>>,
    trigger: Option<oneshot::Sender<Instant>>,
}

impl Server {
    /// The address every core's listener is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many cores serve.
    pub fn cores(&self) -> usize {
        self.tasks.len()
    }

    /// Shuts down gracefully: every core stops accepting, lets its connections finish what
    /// they are doing for up to `grace`, then closes those left. Completes when every core
    /// is done.
    ///
    /// # Errors
    /// The first error a core's accept loop met, if any.
    pub async fn shutdown(mut self, grace: Duration) -> io::Result<()> {
        if let Some(trigger) = self.trigger.take() {
            let deadline = Instant::now().checked_add(grace).unwrap_or_else(far_future);
            // A core that already ended dropped its receiver clone; the others still get it.
            let _ = trigger.send(deadline);
        }
        self.join_all().await
    }

    /// Serves until `signal` completes (Ctrl-C, SIGTERM, ...), then shuts down gracefully
    /// with `grace` ([`shutdown`](Server::shutdown)).
    ///
    /// # Errors
    /// As [`shutdown`](Server::shutdown); also if an accept loop fails before the signal.
    pub async fn with_graceful_shutdown(
        mut self,
        signal: impl Future<Output = ()>,
        grace: Duration,
    ) -> io::Result<()> {
        let mut signal = pin!(signal);
        // Wait for the signal, or for a core's loop to end on its own (an error).
        let ended = poll_fn(|cx| {
            if signal.as_mut().poll(cx).is_ready() {
                return Poll::Ready(None);
            }
            for (i, task) in self.tasks.iter_mut().enumerate() {
                if let Poll::Ready(res) = Pin::new(task).poll(cx) {
                    return Poll::Ready(Some((i, res)));
                }
            }
            Poll::Pending
        })
        .await;
        match ended {
            None => self.shutdown(grace).await,
            Some((i, res)) => {
                self.tasks.remove(i);
                let first = flatten(res);
                let rest = self.shutdown(grace).await;
                first.and(rest)
            }
        }
    }

    /// Waits until every core's accept loop ends (normally never: only on an error).
    ///
    /// # Errors
    /// The first error a core met.
    pub async fn join(mut self) -> io::Result<()> {
        self.join_all().await
    }

    async fn join_all(&mut self) -> io::Result<()> {
        let mut first = Ok(());
        for task in std::mem::take(&mut self.tasks) {
            let res = flatten(task.await);
            if first.is_ok() {
                first = res;
            }
        }
        first
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

fn flatten(res: Result<io::Result<()>, runtime::JoinError>) -> io::Result<()> {
    match res {
        Ok(r) => r,
        Err(e) => Err(e.into()),
    }
}

/// An instant far enough away to stand for "no deadline".
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400 * 365)
}

/// One core's share: accept until the signal, then drain this core's connections.
async fn serve_core<M, S, B>(
    core: usize,
    listener: std::net::TcpListener,
    make: M,
    settings: Builder,
    mut signal: Signal,
) -> io::Result<()>
where
    M: Fn(usize) -> S,
    S: tower_service::Service<Request<Incoming>, Response = Response<B>> + Clone + 'static,
    S::Future: 'static,
    S::Error: Into<BoxError>,
    B: Body + 'static,
    B::Error: Into<BoxError>,
{
    let listener = TcpListener::from_std(listener)?;
    let service = make(core);
    let mut http = auto::Builder::new(HyperExecutor);
    http.http1().timer(HyperTimer);
    http.http2().timer(HyperTimer);
    if let Some(configure) = &settings.configure {
        configure(&mut http);
    }
    let http = Rc::new(http);
    let conns = Rc::new(Conns::default());
    let mut incoming = listener.incoming();

    // Accept until the signal (or an error that ends the stream).
    let accepted: Option<Result<Instant, oneshot::Canceled>> = loop {
        let next = poll_fn(|cx| {
            if let Poll::Ready(deadline) = Pin::new(&mut signal).poll(cx) {
                return Poll::Ready(Err(deadline));
            }
            incoming.poll_next_unpin(cx).map(Ok)
        })
        .await;
        match next {
            Err(deadline) => break Some(deadline),
            Ok(None) => break None,
            Ok(Some(Ok(stream))) => {
                let (service, http, tracked) = (service.clone(), http.clone(), conns.clone());
                #[cfg(feature = "tls")]
                let tls = settings.tls.clone();
                conns.spawn(move |key| {
                    serve_conn(
                        stream,
                        service,
                        http,
                        Tracker {
                            conns: tracked,
                            key,
                        },
                        #[cfg(feature = "tls")]
                        tls,
                    )
                });
            }
            // The stream backs off after fd exhaustion and goes on.
            Ok(Some(Err(e))) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {}
            Ok(Some(Err(e))) => {
                drop(incoming);
                return Err(crate::error::context(e, "accepting HTTP connections"));
            }
        }
    };
    // Stop accepting: the multishot accept is cancelled and the listener closed.
    drop(incoming);
    drop(listener);
    match accepted {
        // Dropped without a shutdown: the task is being aborted, or the server handle is
        // gone; either way connections go on by themselves.
        Some(Err(oneshot::Canceled)) | None => Ok(()),
        Some(Ok(deadline)) => {
            conns.close();
            if runtime::time::timeout_at(deadline, conns.drained())
                .await
                .is_err()
            {
                conns.abort_all();
            }
            Ok(())
        }
    }
}

/// Serves one connection: the TLS handshake if there is one, then hyper's `auto`
/// connection, told to finish gracefully once its core closes.
async fn serve_conn<S, B>(
    stream: TcpStream,
    service: S,
    http: Rc<auto::Builder<HyperExecutor>>,
    tracker: Tracker,
    #[cfg(feature = "tls")] tls: Option<crate::tls::TlsAcceptor>,
) where
    S: tower_service::Service<Request<Incoming>, Response = Response<B>> + Clone + 'static,
    S::Future: 'static,
    S::Error: Into<BoxError>,
    B: Body + 'static,
    B::Error: Into<BoxError>,
{
    // TCP_NODELAY is inherited from the listener (see `serve_with`).
    let service = TowerToHyperService::new(service);
    #[cfg(feature = "tls")]
    if let Some(tls) = tls {
        // Boxed: a TLS connection's state (the handshake, rustls's buffers) is large, and a
        // plain connection's task would otherwise carry room for it.
        Box::pin(async move {
            // A failed or timed-out handshake drops the socket here.
            if let Ok(stream) = tls.accept(stream).await {
                run_conn(&http, HyperIo::new(stream), service, &tracker).await;
            }
        })
        .await;
        return;
    }
    run_conn(&http, HyperIo::new(stream), service, &tracker).await;
}

/// Serves `io` with hyper's `auto` connection to its end, asking it to shut down gracefully
/// once the core closes. The connection is built here, not passed in: an `async fn` keeps
/// its arguments apart from its locals, so a connection passed by value would take its
/// (large) size twice in the task.
async fn run_conn<I, S, B>(
    http: &auto::Builder<HyperExecutor>,
    io: I,
    service: S,
    tracker: &Tracker,
) where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
    S: hyper::service::Service<Request<Incoming>, Response = Response<B>>,
    S::Future: 'static,
    S::Error: Into<BoxError>,
    B: Body + 'static,
    B::Error: Into<BoxError>,
{
    let mut conn = pin!(http.serve_connection(io, service));
    let mut told = false;
    // Errors (a reset peer, a malformed request hyper answered with 400) end just this
    // connection; there is no one to report them to.
    let _ = poll_fn(|cx| {
        if !told && tracker.conns.closing(tracker.key, cx) {
            conn.as_mut().graceful_shutdown();
            told = true;
        }
        conn.as_mut().poll(cx)
    })
    .await;
}

/// One core's connections: their tasks (to abort at the deadline), the wakers of those
/// waiting to hear of a shutdown, and the drain's waker.
#[derive(Default)]
struct Conns {
    inner: RefCell<ConnsInner>,
}

#[derive(Default)]
struct ConnsInner {
    tasks: Slab<ConnSlot>,
    closing: bool,
    drained: Option<Waker>,
}

struct ConnSlot {
    task: Option<JoinHandle<()>>,
    waker: Option<Waker>,
}

impl Conns {
    /// Spawns the connection task `conn(key)` on this core, tracked under slot `key`.
    fn spawn<F, C>(self: &Rc<Self>, conn: C)
    where
        C: FnOnce(usize) -> F,
        F: Future<Output = ()> + 'static,
    {
        let key = self.inner.borrow_mut().tasks.insert(ConnSlot {
            task: None,
            waker: None,
        });
        let task = runtime::spawn_local(conn(key));
        if let Some(slot) = self.inner.borrow_mut().tasks.get_mut(key) {
            slot.task = Some(task);
        }
    }

    /// Whether the core is closing; if not, the current connection's task is woken when it
    /// does.
    fn closing(&self, key: usize, cx: &mut Context<'_>) -> bool {
        let mut inner = self.inner.borrow_mut();
        if inner.closing {
            return true;
        }
        if let Some(slot) = inner.tasks.get_mut(key) {
            match &slot.waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => slot.waker = Some(cx.waker().clone()),
            }
        }
        false
    }

    /// Starts the shutdown: wakes every connection so it sees `closing`.
    fn close(&self) {
        let wakers: Vec<Waker> = {
            let mut inner = self.inner.borrow_mut();
            inner.closing = true;
            inner
                .tasks
                .iter_mut()
                .filter_map(|(_, s)| s.waker.take())
                .collect()
        };
        wakers.into_iter().for_each(Waker::wake);
    }

    /// Completes once no connection is left.
    async fn drained(&self) {
        poll_fn(|cx| {
            let mut inner = self.inner.borrow_mut();
            if inner.tasks.is_empty() {
                Poll::Ready(())
            } else {
                inner.drained = Some(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }

    /// Aborts every connection left (their sockets close as their tasks are dropped).
    fn abort_all(&self) {
        let tasks: Vec<JoinHandle<()>> = self
            .inner
            .borrow_mut()
            .tasks
            .iter_mut()
            .filter_map(|(_, s)| s.task.take())
            .collect();
        for task in &tasks {
            task.abort();
        }
    }

    /// A connection task ended (or was aborted): forget its slot.
    fn remove(&self, key: usize) {
        let drained = {
            let mut inner = self.inner.borrow_mut();
            inner.tasks.try_remove(key);
            if inner.tasks.is_empty() {
                inner.drained.take()
            } else {
                None
            }
        };
        if let Some(w) = drained {
            w.wake();
        }
    }
}

/// A connection's place in its core's `Conns`: it frees its slot when the connection's
/// future ends or is dropped (aborted).
struct Tracker {
    conns: Rc<Conns>,
    key: usize,
}

impl Drop for Tracker {
    fn drop(&mut self) {
        self.conns.remove(self.key);
    }
}
