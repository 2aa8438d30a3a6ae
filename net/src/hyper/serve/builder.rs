//! [`Builder`]: the settings of [`serve`](super::serve()) (TLS, listen options, the HTTP
//! builder), and its start: a listener bound per core, an accept loop spawned on each.

use std::future::Future;
use std::io;
use std::sync::Arc;

use http::{Request, Response};
use hyper::body::{Body, Incoming};
use hyper_util::server::conn::auto;

use super::accept::serve_core;
use super::{BoxError, Configure, Rebalance, Server};
use crate::hyper::HyperExecutor;
use crate::sys::resolve::ToSocketAddrs;
use crate::tcp::handoff::Handoff;
use crate::tcp::serve::bind_per_core;
use crate::tcp::ListenOptions;

/// Settings for [`serve`](super::serve()): TLS, listen options, the HTTP builder.
#[derive(Clone)]
pub struct Builder {
    listen: ListenOptions,
    /// Applied to every core's HTTP builder (see [`http`](Builder::http)).
    pub(super) configure: Option<Configure>,
    pub(super) rebalance: Rebalance,
    #[cfg(feature = "tls")]
    pub(super) tls: Option<crate::tls::TlsAcceptor>,
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
        d.field("rebalance", &self.rebalance);
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
            rebalance: Rebalance::default(),
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

    /// When idle HTTP/1.1 connections move between cores ([`Rebalance::Contended`] unless
    /// set: off a core whose CPU other threads take). Connections over TLS and HTTP/2
    /// stay on the core that accepted them.
    pub fn rebalance(mut self, rebalance: Rebalance) -> Builder {
        self.rebalance = rebalance;
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

    /// Serves `service` (cloned once per core) on `addr`; see [`serve`](super::serve()).
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
        self.serve_with_async(addr, move |core| std::future::ready(Ok(make(core))))
    }

    /// Serves the service `make(core)` resolves to on each core, on `addr`: the per-core
    /// setup runs inside the runtime, on its core, before that core accepts (open this
    /// core's database connections, warm a cache), and connections wait in the listener's
    /// backlog meanwhile. A factory that fails ends that core's share with its error
    /// ([`Server::shutdown`] reports it); the other cores serve on.
    ///
    /// ```
    /// # #[runtime::main(cores = 2)]
    /// # async fn main() -> std::io::Result<()> {
    /// use std::rc::Rc;
    /// let server = corering_net::hyper::Builder::new().serve_with_async("127.0.0.1:0", |core| async move {
    ///     // Inside the runtime, on `core`: connect this core's pool here.
    ///     runtime::time::sleep(std::time::Duration::from_millis(1)).await;
    ///     let name = Rc::new(format!("core {core}"));
    ///     Ok(tower::service_fn(move |_req: http::Request<hyper::body::Incoming>| {
    ///         let name = name.clone();
    ///         async move { Ok::<_, std::convert::Infallible>(http::Response::new(name.to_string())) }
    ///     }))
    /// })?;
    /// server.shutdown(std::time::Duration::from_secs(1)).await
    /// # }
    /// ```
    ///
    /// # Errors
    /// Outside a runtime; if the address does not resolve or cannot be bound.
    pub fn serve_with_async<M, F, S, B>(
        self,
        addr: impl ToSocketAddrs,
        make: M,
    ) -> io::Result<Server>
    where
        M: Fn(usize) -> F + Clone + Send + 'static,
        F: Future<Output = io::Result<S>> + 'static,
        S: tower_service::Service<Request<Incoming>, Response = Response<B>> + Clone + 'static,
        S::Future: 'static,
        S::Error: Into<BoxError>,
        B: Body + 'static,
        B::Error: Into<BoxError>,
    {
        // TCP_NODELAY on the listener: every connection inherits it, with no per-connection
        // setsockopt (a ring round trip on a direct descriptor).
        let options = self.listen.clone().nodelay(true);
        let (addr, listeners) = bind_per_core("corering_net::hyper::serve", &addr, &options)?;
        let (trigger, signal) = Server::signal();
        let handoff = Arc::new(Handoff::new(listeners.len(), self.rebalance));
        let tasks = listeners
            .into_iter()
            .enumerate()
            .map(|(core, listener)| {
                let make = make.clone();
                let settings = self.clone();
                let signal = signal.clone();
                let handoff = handoff.clone();
                runtime::spawn_on_local(core, move || {
                    serve_core(listener, make(core), settings, signal, (handoff, core))
                })
            })
            .collect();
        Ok(Server::new(addr, tasks, trigger).with_handoff(handoff))
    }
}
