//! [`Pool`]: a core's own connections, handed out round-robin, reconnected when closed.

use std::fmt;
use std::io;
use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::LocalBoxFuture;
use tokio_postgres::{Client, Config};

/// What [`PoolBuilder::setup`] runs on each new connection (prepare its statements), giving
/// the state kept beside it.
pub type Setup<S> =
    Arc<dyn for<'a> Fn(&'a Client) -> LocalBoxFuture<'a, io::Result<S>> + Send + Sync>;

/// The connect timeout a pool uses when its configuration sets none.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// One connection of a [`Pool`]: the [`Client`] (it derefs to it) and the state the pool's
/// [`setup`](PoolBuilder::setup) made for it (its prepared statements, say).
pub struct Pooled<S> {
    client: Client,
    state: S,
}

impl<S> Pooled<S> {
    /// The connection's client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// What the pool's setup made for this connection.
    pub fn state(&self) -> &S {
        &self.state
    }
}

impl<S> Deref for Pooled<S> {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}

impl<S> fmt::Debug for Pooled<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pooled")
            .field("closed", &self.client.is_closed())
            .finish_non_exhaustive()
    }
}

/// How to build a [`Pool`]: its size and the setup of each connection.
pub struct PoolBuilder<S> {
    config: Config,
    size: usize,
    setup: Setup<S>,
}

impl<S> fmt::Debug for PoolBuilder<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolBuilder")
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl<S: Send + Sync + 'static> PoolBuilder<S> {
    /// How many connections the pool keeps (at least 1; default 1). tokio-postgres
    /// pipelines the queries of concurrent requests on one connection, so a few per core
    /// are enough.
    pub fn size(mut self, size: usize) -> PoolBuilder<S> {
        self.size = size.max(1);
        self
    }

    /// Runs `setup` on every new connection, the first ones and each reconnection, before
    /// the pool hands it out; what it returns is kept beside the client
    /// ([`Pooled::state`]). Prepared statements belong to one connection, so prepare them
    /// here. A setup that fails fails that connection's [`Pool::get`] (or
    /// [`connect`](PoolBuilder::connect)).
    pub fn setup<T, F>(self, setup: F) -> PoolBuilder<T>
    where
        F: for<'a> Fn(&'a Client) -> LocalBoxFuture<'a, io::Result<T>> + Send + Sync + 'static,
    {
        PoolBuilder {
            config: self.config,
            size: self.size,
            setup: Arc::new(setup),
        }
    }

    /// Opens every connection now, on this core.
    ///
    /// # Errors
    /// The first connection's (or setup's) error; see [`super::connect_config`].
    pub async fn connect(self) -> io::Result<Pool<S>> {
        let pool = self.build();
        for slot in &pool.inner.slots {
            slot.set(Some(pool.inner.open().await?));
        }
        Ok(pool)
    }

    /// The pool, with no connection open yet: each is opened by the first [`Pool::get`]
    /// that reaches it.
    pub fn build(self) -> Pool<S> {
        let mut config = self.config;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
        }
        Pool {
            inner: Arc::new(Inner {
                config,
                setup: self.setup,
                slots: (0..self.size).map(|_| Slot::default()).collect(),
                next: AtomicUsize::new(0),
            }),
        }
    }
}

/// A core's PostgreSQL connections (feature `postgres`), made on the core that uses them,
/// inside `serve_with_async`'s per-core factory: each connection's driver task runs on the
/// core that opened it, so the requests of one core use that core's connections. Cloning a
/// pool clones an `Arc`.
///
/// The pool and the future of [`get`](Pool::get) are `Send` (although a socket of this
/// runtime is not): axum requires its handlers' futures and state to be `Send`, and a
/// handler awaits `get`. A reconnection runs as a task of its own on the calling core
/// ([`runtime::spawn_local`]) and `get` awaits it.
///
/// [`get`](Pool::get) hands the connections out in turn. One found closed (the server
/// restarted, the network dropped it) is replaced by a new connection before it is handed
/// out, so a service that gets its connection per request recovers by itself once the
/// database is back; while it is down, `get` fails fast with the connect error
/// (`ConnectionRefused`, or `TimedOut` after the connect timeout: the configuration's, or
/// 5 s). Requests that reach a slot while it reconnects wait for that one attempt and
/// share its outcome, so none waits longer than one connect.
///
/// ```no_run
/// use std::io;
/// use corering_net::postgres::{Pool, to_io_error};
///
/// # #[runtime::main]
/// # async fn main() -> io::Result<()> {
/// let url = "postgres://benchmarkdbuser:benchmarkdbpass@127.0.0.1:5432/hello_world";
/// let server = corering_net::hyper::Builder::new().serve_with_async("127.0.0.1:8080", move |_core| async move {
///     // On this core: 4 connections, each with its statement prepared.
///     let pool = Pool::builder(corering_net::postgres::parse(url)?)
///         .size(4)
///         .setup(|client| {
///             Box::pin(async move {
///                 client
///                     .prepare("SELECT randomnumber FROM world WHERE id = $1")
///                     .await
///                     .map_err(|e| to_io_error(e, "prepare"))
///             })
///         })
///         .connect()
///         .await?;
///     Ok(tower::service_fn(move |_req: http::Request<hyper::body::Incoming>| {
///         let pool = pool.clone();
///         async move {
///             let body = match pool.get().await {
///                 Ok(conn) => match conn.query_one(conn.state(), &[&1i32]).await {
///                     Ok(row) => row.get::<_, i32>(0).to_string(),
///                     Err(e) => format!("query: {e}"),
///                 },
///                 Err(e) => format!("no connection: {e}"),
///             };
///             Ok::<_, std::convert::Infallible>(http::Response::new(body))
///         }
///     }))
/// })?;
/// server.shutdown(std::time::Duration::from_secs(1)).await
/// # }
/// ```
pub struct Pool<S = ()> {
    inner: Arc<Inner<S>>,
}

impl<S> Clone for Pool<S> {
    fn clone(&self) -> Self {
        Pool {
            inner: self.inner.clone(),
        }
    }
}

impl<S> fmt::Debug for Pool<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("size", &self.inner.slots.len())
            .finish_non_exhaustive()
    }
}

struct Inner<S> {
    config: Config,
    setup: Setup<S>,
    slots: Vec<Slot<S>>,
    next: AtomicUsize,
}

struct Slot<S> {
    conn: Mutex<Option<Arc<Pooled<S>>>>,
    /// Held while this slot reconnects, so concurrent requests open one connection.
    reconnect: runtime::sync::Mutex<()>,
    /// Reconnections tried so far, and the last one's error.
    attempts: AtomicUsize,
    failure: Mutex<Option<(io::ErrorKind, String)>>,
}

impl<S> Default for Slot<S> {
    fn default() -> Self {
        Slot {
            conn: Mutex::new(None),
            reconnect: runtime::sync::Mutex::new(()),
            attempts: AtomicUsize::new(0),
            failure: Mutex::new(None),
        }
    }
}

impl<S> Slot<S> {
    fn live(&self) -> Option<Arc<Pooled<S>>> {
        self.conn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .filter(|c| !c.client.is_closed())
            .cloned()
    }

    /// The error of the last reconnection.
    fn failure(&self) -> io::Error {
        match &*self.failure.lock().unwrap_or_else(PoisonError::into_inner) {
            Some((kind, msg)) => io::Error::new(*kind, msg.clone()),
            None => io::Error::other("postgres reconnection failed"),
        }
    }

    fn set(&self, conn: Option<Arc<Pooled<S>>>) {
        *self.conn.lock().unwrap_or_else(PoisonError::into_inner) = conn;
    }
}

impl<S> Inner<S> {
    async fn open(&self) -> io::Result<Arc<Pooled<S>>> {
        let client = super::connect_config(&self.config).await?;
        let state = (self.setup)(&client).await?;
        Ok(Arc::new(Pooled { client, state }))
    }
}

impl Pool<()> {
    /// A builder for a pool on `config`, 1 connection, no setup.
    pub fn builder(config: Config) -> PoolBuilder<()> {
        PoolBuilder {
            config,
            size: 1,
            setup: Arc::new(|_| Box::pin(async { Ok(()) })),
        }
    }
}

impl<S: Send + Sync + 'static> Pool<S> {
    /// The next connection in turn: open, or reopened now (with the setup run again) if it
    /// was closed or never opened.
    ///
    /// # Errors
    /// When the connection must be reopened and that fails: the connect or setup error
    /// (see [`super::connect_config`]); outside a runtime.
    pub async fn get(&self) -> io::Result<Arc<Pooled<S>>> {
        let slots = &self.inner.slots;
        let i = self.inner.next.fetch_add(1, Ordering::Relaxed) % slots.len();
        let slot = &slots[i];
        if let Some(conn) = slot.live() {
            return Ok(conn);
        }
        let seen = slot.attempts.load(Ordering::Acquire);
        let _reconnecting = slot.reconnect.lock().await;
        // Another request may have reconnected it while this one waited.
        if let Some(conn) = slot.live() {
            return Ok(conn);
        }
        if slot.attempts.load(Ordering::Acquire) != seen {
            // One failed while this request waited: its error, rather than a second wait.
            return Err(slot.failure());
        }
        slot.set(None);
        if runtime::current_core().is_none() {
            return Err(io::Error::other(
                "corering_net::postgres::Pool::get called outside of a runtime",
            ));
        }
        // The socket is not `Send`: open it in a task on this core, which also fills the
        // slot (so a request dropped meanwhile wastes no connection), and await it.
        let inner = self.inner.clone();
        let opened = runtime::spawn_local(async move {
            let slot = &inner.slots[i];
            let result = inner.open().await;
            match &result {
                Ok(conn) => slot.set(Some(conn.clone())),
                Err(e) => {
                    *slot.failure.lock().unwrap_or_else(PoisonError::into_inner) =
                        Some((e.kind(), e.to_string()));
                }
            }
            slot.attempts.fetch_add(1, Ordering::Release);
            result
        })
        .await
        .map_err(|e| io::Error::other(format!("postgres reconnection task: {e}")))?;
        opened
    }

    /// How many connections the pool keeps.
    pub fn size(&self) -> usize {
        self.inner.slots.len()
    }

    /// The configuration the pool connects with.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }
}
