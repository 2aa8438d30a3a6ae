//! Connections moved between the cores of one server: each core's mailbox of sockets
//! handed to it ([`Handoff`]), and when a core hands its idle connections away
//! ([`Rebalance`], [`Handoff::target`]).
//!
//! A connection's socket, its ops and its task belong to the core that accepted it (the
//! ring's ops name the socket; the task is `!Send`). What moves is the socket alone, at a
//! moment when nothing of it is in flight: `hyper::serve` takes an HTTP/1.1 connection off
//! its core between two requests (no request being read or answered, hyper's buffer empty),
//! waits for its sends, stops its receive and keeps the bytes already received
//! ([`StreamSocket::detach`](crate::stream::StreamSocket)), and posts the regular fd with
//! those bytes here; the other core's accept loop takes it and serves it from the start, as
//! a connection it accepted whose first bytes are those.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::task::AtomicWaker;

/// When `hyper::serve` moves idle HTTP/1.1 connections between its cores
/// ([`Builder::rebalance`](crate::hyper::serve::Builder::rebalance)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rebalance {
    /// Off a core whose thread waits for its CPU (another process's thread has it: a load
    /// generator on the same machine, a neighbour, a CPU hog; see
    /// [`runtime::ext::cpu_contention`]) to a core that waits less than half as much and
    /// sleeps at least a quarter of the time ([`runtime::ext::cpu_demand`]); a connection
    /// accepted on such a core goes before its first read. On a machine where each core
    /// has its CPU to itself this never moves anything. The default.
    #[default]
    Contended,
    /// Every connection as it is accepted and every idle one after each response, to the
    /// next core: every request of a connection on another core than the one before. For testing an application's
    /// handlers under moves; each move costs a few system calls.
    Always,
    /// Never: a connection stays on the core that accepted it.
    Off,
}

/// A connection on its way to another core: its socket, and the bytes received on it that
/// nobody read yet (they come first).
#[derive(Debug)]
pub(crate) struct Moved {
    pub(crate) fd: OwnedFd,
    pub(crate) prefix: Vec<u8>,
}

/// Each core's mailbox of one server: connections other cores moved to it.
#[derive(Debug)]
pub(crate) struct Handoff {
    boxes: Box<[Mailbox]>,
    rebalance: Rebalance,
    /// The clock of `took_at`.
    start: Instant,
    /// Connections posted to another core.
    moved: AtomicU64,
}

#[derive(Debug)]
struct Mailbox {
    queue: Mutex<Vec<Moved>>,
    waker: AtomicWaker,
    /// When connections last moved to this core (`Instant` of the server's start, in
    /// nanoseconds since it; 0: never).
    took_at: AtomicU64,
}

/// A core that waits for its CPU at least this share of its wanted time hands connections
/// away (a core alone on its CPU reads under 0.02; one sharing it with a busy thread 0.3
/// to 0.5).
const LEAVE_AT: f32 = 0.10;

/// A core takes connections only while it wants its CPU (runs or waits for it) less than
/// this share of the time: the rest it sleeps, which is its room for them.
const TAKE_BELOW_DEMAND: f32 = 0.75;

/// A core that took connections hands none away for this long: its waiting share (an
/// average over about 50 ms) must first show what the connections it took cost it, or
/// two cores sharing their CPUs with the same busy threads pass the connections back and
/// forth as the kernel moves those threads (seen under a CPU hog without it: every 20 to
/// 40 ms).
const SETTLE: Duration = Duration::from_millis(250);

impl Handoff {
    /// Mailboxes for `cores` cores.
    pub(crate) fn new(cores: usize, rebalance: Rebalance) -> Handoff {
        Handoff {
            boxes: (0..cores)
                .map(|_| Mailbox {
                    queue: Mutex::new(Vec::new()),
                    waker: AtomicWaker::new(),
                    took_at: AtomicU64::new(0),
                })
                .collect(),
            rebalance,
            start: Instant::now(),
            moved: AtomicU64::new(0),
        }
    }

    /// Whether connections may move at all (several cores, not switched off).
    pub(crate) fn enabled(&self) -> bool {
        self.boxes.len() > 1 && self.rebalance != Rebalance::Off
    }

    /// Where an idle connection of core `from` should go now, if anywhere (see
    /// [`Rebalance`]).
    pub(crate) fn target(&self, from: usize) -> Option<usize> {
        let cores = self.boxes.len();
        match self.rebalance {
            Rebalance::Off => None,
            _ if cores < 2 => None,
            Rebalance::Always => Some((from + 1) % cores),
            Rebalance::Contended => {
                let mine = runtime::ext::cpu_contention(from)?;
                if mine < LEAVE_AT || self.settling(from) {
                    return None;
                }
                (0..cores)
                    .filter(|&c| c != from)
                    .filter_map(|c| {
                        let wait = runtime::ext::cpu_contention(c)?;
                        let demand = runtime::ext::cpu_demand(c)?;
                        (wait <= mine / 2.0 && demand < TAKE_BELOW_DEMAND).then_some((c, wait))
                    })
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .map(|(c, _)| c)
            }
        }
    }

    /// How many connections were posted to another core.
    pub(crate) fn moved(&self) -> u64 {
        self.moved.load(Ordering::Relaxed)
    }

    /// Nanoseconds since the server started (at least 1).
    fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64 + 1
    }

    /// Whether core `core` took connections less than [`SETTLE`] ago.
    fn settling(&self, core: usize) -> bool {
        let took = self
            .boxes
            .get(core)
            .map_or(0, |m| m.took_at.load(Ordering::Relaxed));
        took != 0 && self.now().saturating_sub(took) < SETTLE.as_nanos() as u64
    }

    /// Posts `moved` to core `to`'s mailbox and wakes its accept loop.
    pub(crate) fn send(&self, to: usize, moved: Moved) {
        let Some(mailbox) = self.boxes.get(to) else {
            return;
        };
        mailbox.took_at.store(self.now(), Ordering::Relaxed);
        self.moved.fetch_add(1, Ordering::Relaxed);
        mailbox
            .queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(moved);
        mailbox.waker.wake();
    }

    /// The connections moved to core `core`, if any; else its accept loop is woken when
    /// one comes.
    pub(crate) fn poll_recv(&self, core: usize, cx: &mut Context<'_>) -> Poll<Vec<Moved>> {
        let Some(mailbox) = self.boxes.get(core) else {
            return Poll::Pending;
        };
        mailbox.waker.register(cx.waker());
        let moved = std::mem::take(&mut *mailbox.queue.lock().unwrap_or_else(|e| e.into_inner()));
        if moved.is_empty() {
            Poll::Pending
        } else {
            Poll::Ready(moved)
        }
    }
}
