//! The broadcast across cores: a [`Hub`] with one channel per core, and on each core a
//! [`Room`] of that core's sockets and a dispatcher task that copies each message to them.
//!
//! A text message from any socket goes once to every core's channel (one cross-core send
//! per core, not per client), and each core's dispatcher puts it in the queue of each of
//! its own sockets. Every queue is unbounded, so no message is ever dropped or skipped
//! (unlike `broadcast`'s `Lagged`), and messages from one sender reach every receiver in the
//! order they were sent. The price: a client that reads slower than the room writes grows
//! its queue without bound; a public service would cap it and close such a client with
//! `1008 Policy Violation` (or `1013 Try Again Later`).
//!
//! Shutdown ([`Hub::shutdown`]): each core's room closes (new handshakes are refused with
//! `503`), each of its sockets is told to close with `1001 Going Away`, and the core
//! reports back once all of them have ended.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use runtime::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use runtime::sync::{oneshot, Notify};
use tokio_tungstenite::tungstenite::Utf8Bytes;

/// What a core's dispatcher receives.
#[derive(Debug)]
enum Event {
    /// A text message, for every socket of the core.
    Text(Utf8Bytes),
    /// Close every socket (`1001`); answer once they have all ended.
    Shutdown(oneshot::Sender<()>),
}

/// What a socket's task receives from its core's dispatcher.
#[derive(Debug)]
pub enum Out {
    /// A chat message to send.
    Text(Utf8Bytes),
    /// The server is stopping: close with `1001 Going Away`.
    Shutdown,
}

/// The cores' channels, shared by every core (`Send + Sync`, behind an `Arc`).
#[derive(Debug)]
pub struct Hub {
    cores: Vec<UnboundedSender<Event>>,
    /// Each core's receiving end, until that core takes it ([`Hub::start_core`]).
    pending: Mutex<Vec<Option<UnboundedReceiver<Event>>>>,
}

/// The sockets of one core: their queues, and whether the room still takes new ones.
#[derive(Debug, Default)]
pub struct Room {
    clients: HashMap<u64, UnboundedSender<Out>>,
    next_id: u64,
    closed: bool,
}

/// One core's room, as the handler and the sockets of that core share it.
#[derive(Debug, Clone)]
pub struct CoreRoom {
    room: Arc<Mutex<Room>>,
    /// Woken each time a socket leaves (for the shutdown's wait).
    left: Arc<Notify>,
}

/// A socket's place in its core's room: its queue, and its removal on drop.
#[derive(Debug)]
pub struct Member {
    room: CoreRoom,
    id: u64,
    /// The socket's queue of messages to send.
    pub queue: UnboundedReceiver<Out>,
}

/// Locks `m`, a poisoned lock included (every update of a room is one complete statement,
/// so a panic elsewhere cannot leave it half-changed).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Hub {
    /// A hub for `cores` cores.
    pub fn new(cores: usize) -> Hub {
        let (senders, receivers) = (0..cores)
            .map(|_| unbounded_channel())
            .unzip::<_, _, _, Vec<_>>();
        Hub {
            cores: senders,
            pending: Mutex::new(receivers.into_iter().map(Some).collect()),
        }
    }

    /// Starts core `core`'s share, on that core: spawns its dispatcher and returns its room.
    ///
    /// # Errors
    /// If `core` is out of range or already started.
    pub fn start_core(&self, core: usize) -> io::Result<CoreRoom> {
        let events = lock(&self.pending)
            .get_mut(core)
            .and_then(Option::take)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("chat hub: core {core} out of range or already started"),
                )
            })?;
        let room = CoreRoom {
            room: Arc::new(Mutex::new(Room::default())),
            left: Arc::new(Notify::new()),
        };
        drop(runtime::spawn_local(dispatch(events, room.clone())));
        Ok(room)
    }

    /// Sends `text` to every socket on every core (this one's included).
    pub fn publish(&self, text: &Utf8Bytes) {
        for core in &self.cores {
            // A core whose dispatcher has ended (after the shutdown) takes no more.
            let _ = core.send(Event::Text(text.clone()));
        }
    }

    /// Closes every core's room and every socket in it (`1001 Going Away`), and waits until
    /// all of them have ended, for up to `grace`. Returns whether they all did.
    pub async fn shutdown(&self, grace: Duration) -> bool {
        let mut acks = Vec::new();
        for core in &self.cores {
            let (tx, rx) = oneshot::channel();
            if core.send(Event::Shutdown(tx)).is_ok() {
                acks.push(rx);
            }
        }
        runtime::time::timeout(grace, async {
            for ack in acks {
                let _ = ack.await;
            }
        })
        .await
        .is_ok()
    }
}

impl CoreRoom {
    /// Adds a socket to the room, before its `101` goes out, so that it gets every message
    /// sent after its client sees the handshake complete. `None` once the room is closed.
    pub fn join(&self) -> Option<Member> {
        let mut room = lock(&self.room);
        if room.closed {
            return None;
        }
        let (tx, queue) = unbounded_channel();
        let id = room.next_id;
        room.next_id += 1;
        room.clients.insert(id, tx);
        Some(Member {
            room: self.clone(),
            id,
            queue,
        })
    }

    /// How many sockets the room holds.
    pub fn len(&self) -> usize {
        lock(&self.room).clients.len()
    }

    /// Whether the room holds no socket.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        lock(&self.room.room).clients.remove(&self.id);
        // One stored permit at most: the shutdown's wait re-checks the room on each wake.
        self.room.left.notify_one();
    }
}

/// One core's dispatcher: copies each message to every socket of the core; on shutdown,
/// closes the room, tells every socket to close, and answers once they are all gone.
async fn dispatch(mut events: UnboundedReceiver<Event>, room: CoreRoom) {
    while let Some(event) = events.recv().await {
        match event {
            Event::Text(text) => {
                for client in lock(&room.room).clients.values() {
                    // A socket that has just ended (its task gone) takes no more.
                    let _ = client.send(Out::Text(text.clone()));
                }
            }
            Event::Shutdown(ack) => {
                {
                    let mut r = lock(&room.room);
                    r.closed = true;
                    for client in r.clients.values() {
                        let _ = client.send(Out::Shutdown);
                    }
                }
                while !room.is_empty() {
                    room.left.notified().await;
                }
                let _ = ack.send(());
                return;
            }
        }
    }
}
