//! One core's share of [`serve`](super::serve): its accept loop until the shutdown signal,
//! then the drain of its connections; and each connection, served by hyper-util's `auto`
//! connection (after the TLS handshake, if there is one), with HTTP/1.1 upgrades, and told
//! to finish once its core closes.

use std::future::{poll_fn, Future};
use std::io;
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;

use http::{Request, Response};
use hyper::body::{Body, Incoming};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;

use super::moving::{Watch, Watched};
use super::{BoxError, Builder};
use crate::hyper::{HyperExecutor, HyperTimer, SocketIo, UpgradableIo};
use crate::tcp::conns::{accept_until, Tracker};
use crate::tcp::handoff::{Handoff, Moved};
use crate::tcp::server::Signal;
use crate::tcp::{TcpListener, TcpStream};

/// One core's share: accept until the signal, then drain this core's connections.
pub(super) async fn serve_core<M, S, B>(
    listener: std::net::TcpListener,
    make: M,
    settings: Builder,
    signal: Signal,
    (handoff, core): (Arc<Handoff>, usize),
) -> io::Result<()>
where
    M: Future<Output = io::Result<S>>,
    S: tower_service::Service<Request<Incoming>, Response = Response<B>> + Clone + 'static,
    S::Future: 'static,
    S::Error: Into<BoxError>,
    B: Body + 'static,
    B::Error: Into<BoxError>,
{
    let listener = TcpListener::from_std(listener)?;
    // Connections wait in the listener's backlog while the core's service is made.
    let service = make.await?;
    let mut http = auto::Builder::new(HyperExecutor);
    http.http1().timer(HyperTimer);
    http.http2().timer(HyperTimer);
    if let Some(configure) = &settings.configure {
        configure(&mut http);
    }
    let http = Rc::new(http);
    // Moves need the core's receive ring (a read-ahead without one cannot be stopped) and
    // an HTTP/1.1 connection over plain TCP.
    let moves = handoff.enabled() && runtime::buf::core_ring().is_some();
    #[cfg(feature = "tls")]
    let moves = moves && settings.tls.is_none();
    let mailbox = moves.then(|| (&*handoff, core));
    accept_until(listener, signal, mailbox, |stream, moved, tracker| {
        serve_conn(
            stream,
            moved,
            service.clone(),
            http.clone(),
            tracker,
            moves.then(|| (handoff.clone(), core)),
            #[cfg(feature = "tls")]
            settings.tls.clone(),
        )
    })
    .await
    .map_err(|e| runtime::ext::error_context(e, "accepting HTTP connections"))
}

/// Serves one connection: the TLS handshake if there is one, then hyper's `auto`
/// connection, told to finish gracefully once its core closes. `moved`: the bytes it
/// received on the core it came from, if it moved here; `handoff`: it may move on (the
/// server's mailboxes, and this core's index): one accepted on a core it should leave goes
/// at once, before its first read.
async fn serve_conn<S, B>(
    stream: TcpStream,
    moved: Option<Vec<u8>>,
    service: S,
    http: Rc<auto::Builder<HyperExecutor>>,
    tracker: Tracker,
    handoff: Option<(Arc<Handoff>, usize)>,
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
                run_conn(
                    &http,
                    crate::hyper::HyperIo::new(stream),
                    service,
                    &tracker,
                    None,
                )
                .await;
            }
        })
        .await;
        return;
    }
    let Some((handoff, core)) = handoff else {
        run_conn(
            &http,
            SocketIo::new(stream, moved.unwrap_or_default(), None),
            service,
            &tracker,
            None,
        )
        .await;
        return;
    };
    if moved.is_none() {
        if let Some(to) = handoff.target(core) {
            post(stream, &handoff, to).await;
            return;
        }
    }
    let watch = Rc::new(Watch::default());
    let service = Watched {
        inner: service,
        watch: watch.clone(),
    };
    let io = SocketIo::new(stream, moved.unwrap_or_default(), Some(watch.clone()));
    let moving = Moving {
        watch: &watch,
        handoff: &handoff,
        core,
    };
    let Some(to) = run_conn(&http, io, service, &tracker, Some(moving)).await else {
        return;
    };
    // The connection was dropped with its stream kept back.
    if let Some(stream) = watch.stream() {
        post(stream, &handoff, to).await;
    }
}

/// Detaches `stream` (its sends finished, its receive stopped, the bytes it received kept)
/// and posts it to core `to`. An error (the peer reset, or closed) closes it here, as
/// serving it would have.
async fn post(stream: TcpStream, handoff: &Handoff, to: usize) {
    if let Ok((fd, prefix)) = stream.detach().await {
        handoff.send(to, Moved { fd, prefix });
    }
}

/// What `drive` needs to move an idle connection: its watch, the server's mailboxes and
/// this core's index.
#[derive(Clone, Copy)]
struct Moving<'a> {
    watch: &'a Watch,
    handoff: &'a Handoff,
    core: usize,
}

/// Serves `io` with hyper's `auto` connection to its end, asking it to shut down gracefully
/// once the core closes; with `moving`, until it is idle on a core it should leave: then
/// the connection is dropped (its I/O keeping the stream back) and the core it goes to is
/// returned. The connection is built here, not passed in: an `async fn` keeps its
/// arguments apart from its locals, so a connection passed by value would take its
/// (large) size twice in the task.
async fn run_conn<I, S, B>(
    http: &auto::Builder<HyperExecutor>,
    io: I,
    service: S,
    tracker: &Tracker,
    moving: Option<Moving<'_>>,
) -> Option<usize>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
    S: hyper::service::Service<Request<Incoming>, Response = Response<B>>,
    S::Future: 'static,
    S::Error: Into<BoxError>,
    B: Body + 'static,
    B::Error: Into<BoxError>,
{
    if http.is_http1_available() && http.is_http2_available() {
        // With upgrades: an HTTP/1.1 request the service answers with `101 Switching
        // Protocols` hands the socket over to whoever awaits its `hyper::upgrade::OnUpgrade`
        // (hyper requires `Send` I/O for that, which `UpgradableIo` provides for this
        // core-bound socket). The connection future then completes, so an upgraded
        // connection is no longer tracked here: the graceful shutdown does not wait for it,
        // its owner closes it.
        let conn = pin!(http.serve_connection_with_upgrades(UpgradableIo::new(io), service));
        drive(conn, tracker, moving, |conn| conn.graceful_shutdown()).await
    } else {
        // HTTP/1-only or HTTP/2-only (`http1_only()`, `http2_only()`, as the gRPC preset
        // sets): hyper-util's upgradeable connection serves whichever version the client
        // speaks, so a restricted builder is served without upgrades, which keeps the
        // restriction.
        let conn = pin!(http.serve_connection(io, service));
        drive(conn, tracker, moving, |conn| conn.graceful_shutdown()).await
    }
}

/// Polls `conn` to its end, telling it to finish (`shutdown`) once the core closes; with
/// `moving`, stops early when the connection is idle and should leave this core, and
/// returns where to (the caller drops the connection, which the watch is told of here).
/// Errors (a reset peer, a malformed request hyper answered with 400) end just this
/// connection; there is no one to report them to.
async fn drive<C: Future>(
    mut conn: Pin<&mut C>,
    tracker: &Tracker,
    moving: Option<Moving<'_>>,
    shutdown: fn(Pin<&mut C>),
) -> Option<usize> {
    let mut told = false;
    poll_fn(|cx| {
        if !told && tracker.conns.closing(tracker.key, cx) {
            shutdown(conn.as_mut());
            told = true;
        }
        if conn.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        if let Some(m) = moving.filter(|m| !told && m.watch.idle()) {
            if let Some(to) = m.handoff.target(m.core) {
                m.watch.keep_stream();
                return Poll::Ready(Some(to));
            }
        }
        Poll::Pending
    })
    .await
}
