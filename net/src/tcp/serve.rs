//! [`serve`]: TCP connections served on every core: one `SO_REUSEPORT` listener per core of
//! the current runtime, each with its own multishot `incoming()`, each connection handled
//! on the core that accepted it. `corering_net::hyper::serve` binds its listeners here too
//! ([`bind_per_core`]).
//!
//! The kernel spreads connections over the listeners of one port (`SO_REUSEPORT`), so the
//! cores share no accept queue, no lock and no task: a connection, its task and its ops
//! stay on one core and one ring.

use std::future::Future;
use std::io;
use std::net::SocketAddr;

use crate::sys::resolve::{no_addresses, resolve_sync, ToSocketAddrs};
use crate::tcp::conns::accept_until;
use crate::tcp::server::{Server, Signal};
use crate::tcp::{ListenOptions, TcpListener, TcpStream};

/// Binds `addr` once per core of the current runtime (`SO_REUSEPORT`; port 0 picks one port
/// for all of them) and runs, on every core, a loop that spawns `handler(stream)` with
/// `spawn_local` for each connection that core accepts.
///
/// `handler` is cloned once per core; the futures it makes need not be `Send`. The
/// [`Server`] it returns stops the listeners when dropped; [`Server::shutdown`] (or
/// [`Server::with_graceful_shutdown`]) also waits for the connections' handlers, up to a
/// grace period, then drops those left (closing their sockets).
///
/// ```
/// # #[runtime::main(cores = 2)]
/// # async fn main() -> std::io::Result<()> {
/// let server = corering_net::serve("127.0.0.1:0", |stream: corering_net::TcpStream| async move {
///     let (res, buf) = stream.read_owned(vec![0u8; 512].into_boxed_slice()).await;
///     if let Ok(n) = res {
///         let _ = stream.write_all_owned(runtime::buf::IoBuf::slice(buf, ..n)).await;
///     }
/// })?;
/// let client = corering_net::TcpStream::connect(server.local_addr()).await?;
/// let (res, _) = client.write_all_owned(b"ping".to_vec()).await;
/// res?;
/// let (res, buf) = client.read_exact_owned(vec![0u8; 4]).await;
/// res?;
/// assert_eq!(buf, b"ping");
/// server.shutdown(std::time::Duration::from_secs(1)).await
/// # }
/// ```
///
/// `addr` is resolved once, synchronously, when `serve` is called: a numeric address
/// without a system call, a host name on this thread (blocking the core, at startup; see
/// the [crate] documentation). The first address it resolves to is bound.
///
/// # Errors
/// Outside a runtime; if the address does not resolve or cannot be bound.
pub fn serve<H, F>(addr: impl ToSocketAddrs, handler: H) -> io::Result<Server>
where
    H: Fn(TcpStream) -> F + Clone + Send + 'static,
    F: Future<Output = ()> + 'static,
{
    serve_with_async(addr, move |_core| std::future::ready(Ok(handler.clone())))
}

/// As [`serve`], with each core's handler made by `make(core)` inside the runtime, on that
/// core, before it accepts: the place for per-core async setup (this core's database
/// connections, a cache warmed from disk). Connections wait in the listener's backlog
/// meanwhile. The handler need not be `Send` (it is made where it runs); a setup that
/// fails ends that core's share with its error, which [`Server::shutdown`] reports.
///
/// ```
/// # #[runtime::main(cores = 2)]
/// # async fn main() -> std::io::Result<()> {
/// use std::rc::Rc;
/// let server = corering_net::serve_with_async("127.0.0.1:0", |core| async move {
///     runtime::time::sleep(std::time::Duration::from_millis(1)).await; // e.g. connect a pool
///     let greeting = Rc::new(format!("core {core}\n"));
///     Ok(move |stream: corering_net::TcpStream| {
///         let greeting = greeting.clone();
///         async move {
///             let _ = stream.write_all_owned(greeting.as_bytes().to_vec()).await;
///         }
///     })
/// })?;
/// server.shutdown(std::time::Duration::from_secs(1)).await
/// # }
/// ```
///
/// # Errors
/// Outside a runtime; if the address does not resolve or cannot be bound.
pub fn serve_with_async<M, S, H, F>(addr: impl ToSocketAddrs, make: M) -> io::Result<Server>
where
    M: Fn(usize) -> S + Clone + Send + 'static,
    S: Future<Output = io::Result<H>> + 'static,
    H: Fn(TcpStream) -> F + 'static,
    F: Future<Output = ()> + 'static,
{
    let (addr, listeners) = bind_per_core("corering_net::serve", &addr, &ListenOptions::new())?;
    let (trigger, signal) = Server::signal();
    let cores = listeners
        .into_iter()
        .enumerate()
        .map(|(core, std_listener)| {
            let make = make.clone();
            let signal = signal.clone();
            runtime::spawn_on_local(core, move || serve_core(std_listener, make(core), signal))
        })
        .collect();
    Ok(Server::new(addr, cores, trigger))
}

/// Binds one `SO_REUSEPORT` listener per core of the current runtime, set up as `options`
/// say, on the first address `addr` resolves to (synchronously: see [`serve`]); port 0
/// picks one port for all of them. Gives the address bound and the listeners, as std ones
/// to move to their cores. `what` names the caller in the error outside a runtime.
pub(crate) fn bind_per_core<T: ToSocketAddrs + ?Sized>(
    what: &str,
    addr: &T,
    options: &ListenOptions,
) -> io::Result<(SocketAddr, Vec<std::net::TcpListener>)> {
    let cores = runtime::cores()
        .ok_or_else(|| io::Error::other(format!("{what} called outside of a runtime")))?;
    let mut addr = resolve_sync(addr)?
        .next()
        .ok_or_else(|| no_addresses("address"))?;
    let options = options.clone().reuse_port(true);
    let mut listeners = Vec::with_capacity(cores);
    for _ in 0..cores {
        let listener = TcpListener::bind_with(addr, &options)?;
        // Every core's listener takes the port the first one got.
        addr = listener.local_addr()?;
        listeners.push(listener.into_std()?);
    }
    Ok((addr, listeners))
}

/// One core's share: accept until the signal, then wait for this core's handlers up to the
/// deadline and drop those left.
async fn serve_core<S, H, F>(
    std_listener: std::net::TcpListener,
    make: S,
    signal: Signal,
) -> io::Result<()>
where
    S: Future<Output = io::Result<H>>,
    H: Fn(TcpStream) -> F,
    F: Future<Output = ()> + 'static,
{
    let listener = TcpListener::from_std(std_listener)?;
    // Connections wait in the listener's backlog while the core's handler is made.
    let handler = make.await?;
    accept_until(listener, signal, None, |stream, _moved, tracker| {
        let conn = handler(stream);
        async move {
            let _tracker = tracker;
            conn.await;
        }
    })
    .await
}
