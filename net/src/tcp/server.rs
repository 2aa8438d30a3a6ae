//! [`Server`]: the handle of connections served on every core, by [`serve`](crate::serve)
//! or `corering_net::hyper::serve`: its address, a graceful shutdown, and waiting for the
//! cores' accept loops. The shutdown [`Signal`] each core's loop waits on.

use std::future::{poll_fn, Future};
use std::io;
use std::net::SocketAddr;
use std::pin::{pin, Pin};
use std::task::Poll;
use std::time::{Duration, Instant};

use std::sync::Arc;

use futures::channel::oneshot;
use futures::future::{FutureExt, Shared};
use runtime::JoinHandle;

use crate::tcp::handoff::Handoff;

/// The shutdown signal every core waits on: the deadline, once shutdown starts; `Err` if the
/// [`Server`] was dropped without one.
pub(crate) type Signal = Shared<oneshot::Receiver<Instant>>;

/// Connections served on every core: from [`serve`](crate::serve), or (feature `hyper`)
/// `corering_net::hyper::serve` and its `Builder`.
///
/// Dropping it stops every core's listener at once; connections being served go on.
/// [`shutdown`](Server::shutdown) stops the listeners, waits for the connections up to a
/// grace period, then closes those left.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    tasks: Vec<JoinHandle<io::Result<()>>>,
    trigger: Option<oneshot::Sender<Instant>>,
    /// The mailboxes of connections moving between cores (`hyper::serve` only).
    handoff: Option<Arc<Handoff>>,
}

impl Server {
    /// A shutdown trigger and the signal each core's loop waits on.
    pub(crate) fn signal() -> (oneshot::Sender<Instant>, Signal) {
        let (trigger, signal) = oneshot::channel();
        (trigger, signal.shared())
    }

    /// The handle of the accept loops `tasks`, on `addr`, which `trigger` shuts down.
    pub(crate) fn new(
        addr: SocketAddr,
        tasks: Vec<JoinHandle<io::Result<()>>>,
        trigger: oneshot::Sender<Instant>,
    ) -> Server {
        Server {
            addr,
            tasks,
            trigger: Some(trigger),
            handoff: None,
        }
    }

    /// The same, whose connections move between cores through `handoff`.
    #[cfg(feature = "hyper")]
    pub(crate) fn with_handoff(mut self, handoff: Arc<Handoff>) -> Server {
        self.handoff = Some(handoff);
        self
    }

    /// How many connections moved from one core to another since the server started
    /// (`corering_net::hyper::serve`'s idle HTTP/1.1 connections, see its `Rebalance`);
    /// always 0 for [`serve`](crate::serve).
    pub fn connections_moved(&self) -> u64 {
        self.handoff.as_ref().map_or(0, |h| h.moved())
    }

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

/// A core's result, its task's failure (a panic) made an I/O error.
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
