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

use futures::StreamExt;
use runtime::JoinHandle;

use crate::sys::resolve::{no_addresses, resolve_sync, ToSocketAddrs};
use crate::tcp::{ListenOptions, TcpListener, TcpStream};

/// The listeners started by [`serve`]; dropping it stops them (connections being handled
/// go on).
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    cores: Vec<JoinHandle<io::Result<()>>>,
}

/// Binds `addr` once per core of the current runtime (`SO_REUSEPORT`; port 0 picks one port
/// for all of them) and runs, on every core, a loop that spawns `handler(stream)` with
/// `spawn_local` for each connection that core accepts.
///
/// `handler` is cloned once per core; the futures it makes need not be `Send`.
///
/// ```no_run
/// # #[runtime::main(cores = 2)]
/// # async fn main() -> std::io::Result<()> {
/// let server = corering_net::serve("127.0.0.1:8080", |stream: corering_net::TcpStream| async move {
///     let (res, buf) = stream.read_owned(vec![0u8; 512].into_boxed_slice()).await;
///     if let Ok(n) = res {
///         let _ = stream.write_all_owned(runtime::buf::IoBuf::slice(buf, ..n)).await;
///     }
/// })?;
/// println!("serving on {}", server.local_addr());
/// server.join().await
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
    let (addr, listeners) = bind_per_core("corering_net::serve", &addr, &ListenOptions::new())?;
    let cores = listeners
        .into_iter()
        .enumerate()
        .map(|(core, std_listener)| {
            let handler = handler.clone();
            runtime::spawn_on_local(core, move || serve_core(std_listener, handler))
        })
        .collect();
    Ok(Server { addr, cores })
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

async fn serve_core<H, F>(std_listener: std::net::TcpListener, handler: H) -> io::Result<()>
where
    H: Fn(TcpStream) -> F,
    F: Future<Output = ()> + 'static,
{
    let listener = TcpListener::from_std(std_listener)?;
    let mut incoming = listener.incoming();
    while let Some(stream) = incoming.next().await {
        match stream {
            Ok(stream) => drop(runtime::spawn_local(handler(stream))),
            // The stream goes on after fd exhaustion (it backs off); other errors it yields
            // once before ending, and the loop ends with it.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

impl Server {
    /// The address every core's listener is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many cores serve.
    pub fn cores(&self) -> usize {
        self.cores.len()
    }

    /// Waits until every core's accept loop ends (normally never); the first error wins.
    pub async fn join(mut self) -> io::Result<()> {
        let mut first = Ok(());
        for h in std::mem::take(&mut self.cores) {
            let res = match h.await {
                Ok(r) => r,
                Err(e) => Err(e.into()),
            };
            if first.is_ok() {
                first = res;
            }
        }
        first
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        for h in &self.cores {
            h.abort();
        }
    }
}
