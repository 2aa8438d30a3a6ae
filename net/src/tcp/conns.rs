//! One core's connections, served by [`serve`](crate::serve) or `hyper::serve`, tracked for
//! the graceful shutdown: each connection task's
//! handle (to abort at the deadline), the wakers of those waiting to hear of a shutdown, and
//! the drain's waker.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use futures::StreamExt;

use runtime::JoinHandle;
use slab::Slab;

use crate::tcp::handoff::{Handoff, Moved};
use crate::tcp::server::Signal;
use crate::tcp::{TcpListener, TcpStream};

/// One core's connections: their tasks (to abort at the deadline), the wakers of those
/// waiting to hear of a shutdown, and the drain's waker.
#[derive(Default)]
pub(crate) struct Conns {
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
    pub(crate) fn spawn<F, C>(self: &Rc<Self>, conn: C)
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
    #[cfg_attr(not(feature = "hyper"), allow(dead_code))] // plain `serve` cannot tell its handlers
    pub(crate) fn closing(&self, key: usize, cx: &mut Context<'_>) -> bool {
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
    pub(crate) fn close(&self) {
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
    pub(crate) async fn drained(&self) {
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
    pub(crate) fn abort_all(&self) {
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
pub(crate) struct Tracker {
    pub(crate) conns: Rc<Conns>,
    pub(crate) key: usize,
}

impl Drop for Tracker {
    fn drop(&mut self) {
        self.conns.remove(self.key);
    }
}

/// One core's accept loop, shared by `serve` and `hyper::serve`: hands every connection of
/// `listener`, and every one other cores move here through `handoff` (this core's
/// mailbox), to `conn(stream, moved, tracker)` (`moved`: for a connection moved here, the
/// bytes received before the move; `None` for one accepted here), spawned and tracked in this core's [`Conns`],
/// until `signal`; then closes the listener, tells the connections (those that listen,
/// through [`Conns::closing`]), waits for them up to the signal's deadline and aborts those
/// left. A `Server` dropped without a shutdown ends the loop and leaves the connections
/// alone. EMFILE/ENFILE are waited out (the incoming stream backs off); another accept
/// error ends the loop with that error.
pub(crate) async fn accept_until<C, F>(
    listener: TcpListener,
    mut signal: Signal,
    handoff: Option<(&Handoff, usize)>,
    conn: C,
) -> io::Result<()>
where
    C: Fn(TcpStream, Option<Vec<u8>>, Tracker) -> F,
    F: Future<Output = ()> + 'static,
{
    enum Next {
        Stop(Option<Instant>),
        Accepted(Option<io::Result<TcpStream>>),
        Moved(Vec<Moved>),
    }
    let conns = Rc::new(Conns::default());
    let start = |stream: TcpStream, prefix: Option<Vec<u8>>| {
        let tracked = conns.clone();
        conns.spawn(|key| {
            conn(
                stream,
                prefix,
                Tracker {
                    conns: tracked,
                    key,
                },
            )
        });
    };
    let mut incoming = listener.incoming();
    let deadline = loop {
        let next = poll_fn(|cx| {
            if let Poll::Ready(deadline) = Pin::new(&mut signal).poll(cx) {
                return Poll::Ready(Next::Stop(deadline.ok()));
            }
            if let Some((handoff, core)) = handoff {
                if let Poll::Ready(moved) = handoff.poll_recv(core, cx) {
                    return Poll::Ready(Next::Moved(moved));
                }
            }
            incoming.poll_next_unpin(cx).map(Next::Accepted)
        })
        .await;
        match next {
            Next::Stop(deadline) => break deadline,
            Next::Accepted(None) => break None,
            Next::Accepted(Some(Ok(stream))) => start(stream, None),
            Next::Moved(moved) => {
                for Moved { fd, prefix } in moved {
                    // A socket that cannot be taken on here is closed (its fd dropped).
                    if let Ok(stream) = TcpStream::from_std(fd.into()) {
                        start(stream, Some(prefix));
                    }
                }
            }
            Next::Accepted(Some(Err(e)))
                if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {}
            Next::Accepted(Some(Err(e))) => return Err(e),
        }
    };
    // Stop accepting: the multishot accept is cancelled and the listener closed.
    drop(incoming);
    drop(listener);
    if let Some(deadline) = deadline {
        conns.close();
        if runtime::time::timeout_at(deadline, conns.drained())
            .await
            .is_err()
        {
            conns.abort_all();
        }
    }
    Ok(())
}
