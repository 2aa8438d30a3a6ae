//! Exhaustive interleaving check of the wake paths: no lost wake-up.
//!
//! The paths under test (runtime/src/executor/task/, executor/remote.rs and the loop's `tick`
//! in executor/mod.rs), step by step as the code runs them. This model covers the whole
//! protocol (queue, `notified`, parking) by hand; the state word's transitions themselves
//! are also checked on the real code, under loom (executor/task/state.rs, scripts/loom.sh):
//!
//! - **waker thread** (`waker_wake` off the owning thread / `Shared::push_remote` /
//!   `notify`): makes the event the task waits for visible; `state.fetch_or(SCHEDULED)`,
//!   done if it was set (or the task is complete); locks the remote queue and pushes the
//!   task; `notified.swap(true)`, done if it was set; posts a wake token (an eventfd write or
//!   a MSG_RING CQE, both of which stay pending until the core reaps them).
//! - **core** (`tick`): runs its local queue, each poll first clearing the task's `queued`
//!   flag and then looking at the event; loads `notified` and, if set, drains
//!   (`notified.store(false)`, then the queue taken under the lock, then each entry made
//!   local by `RawTask::into_local`: `fetch_and(!SCHEDULED)`, then pushed unless the task is
//!   queued locally already or complete); computes `ready` (local queue non-empty or
//!   `notified` set); if it was woken remotely and is not ready, it may spin on `notified` a
//!   while; then parks: blocking until a wake token when not ready, otherwise a non-blocking
//!   reap (which may or may not see a pending token). Each reap may also deliver a *local*
//!   event (a CQE of the task's op): the local wake (`waker_wake` on the owning thread)
//!   pushes the task unless `queued`, `SCHEDULED` or `COMPLETE` is set.
//!
//! Every interleaving of those steps across the core and up to three waker threads is
//! explored (depth-first, states deduplicated). A state where no thread can move while a
//! task still waits for an event already delivered is a lost wake-up: the core sleeps in
//! the kernel with nobody left to wake it. The check runs the real protocol (which must
//! pass) and four broken orderings (each of which must be caught, with the interleaving
//! printed), so the model is shown to be able to fail.
//!
//! The model is sequentially consistent. That is sound here: the queue is only touched
//! under its mutex, `queued` only by the core's thread, and the other flags are
//! read-modify-writes or SeqCst, so the one store-buffer pattern (core: clear `notified`,
//! then read the queue; waker: write the queue, then swap `notified`) is ordered by the
//! mutex. `loom` would also explore weak memory, at the cost of swapping the runtime's
//! atomics for its own; this model keeps the runtime's code unchanged and covers the
//! ordering bugs that lose wake-ups.

use std::collections::{HashMap, HashSet};

/// Which ordering the model runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    /// The runtime's code as written.
    Real,
    /// Broken: the core clears `notified` after taking the queue (a push between the two
    /// finds `notified` set, so it neither wakes the core nor gets drained).
    ClearAfterDrain,
    /// Broken: a waker sets `notified` and wakes the core before pushing the task.
    NotifyBeforePush,
    /// Broken: the drain makes remote entries local without clearing SCHEDULED (every
    /// later remote wake finds it set and does nothing).
    KeepScheduledOnDrain,
    /// Broken: a poll never clears `queued` (every later local wake finds it set and does
    /// nothing).
    KeepQueuedOnPoll,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum CorePc {
    /// Pop the next local task, or go on to the remote check.
    RunQueue,
    /// Poll, first step: clear `queued`.
    Poll1(u8),
    /// Poll, second step: look at the event.
    Poll2(u8),
    /// `let remote = notified.load()`.
    LoadNotified,
    /// Drain, first step.
    Drain1,
    /// Drain, second step: take the remote queue.
    Drain2,
    /// Drain, third step: make the next taken entry local (`into_local`).
    Convert,
    /// `ready = !queue.is_empty() || notified.load()`.
    ReadyCheck,
    /// The short spin after a remote wake (only when not ready).
    Spin,
    /// `park(!ready)`.
    Park,
    /// All tasks complete: the loop returned.
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum WakerPc {
    SetEvent,
    FetchOrScheduled,
    Push,
    SwapNotified,
    PostToken,
    Done,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    // Shared between threads.
    notified: bool,
    remote_queue: Vec<u8>,
    /// Wake tokens posted and not yet reaped (capped at 1: a reap takes them all).
    token: bool,
    scheduled: Vec<bool>,
    complete: Vec<bool>,
    /// Events still to come from this core's own reaps (a CQE per unit), per task.
    local_events: Vec<u8>,
    /// Events delivered to each task.
    events: Vec<u8>,
    // The core's own.
    core: CorePc,
    local_queue: Vec<u8>,
    /// `queued` per task: an entry in the local queue. Only the core touches it.
    queued: Vec<bool>,
    /// Entries taken from the remote queue, not yet made local.
    draining: Vec<u8>,
    remote: bool,
    ready: bool,
    /// Each waker thread: where it is and which task it wakes.
    wakers: Vec<(WakerPc, u8)>,
}

/// One scenario: `needed[t]` events complete task `t`; `wakers[i]` is the task thread `i`
/// delivers one event to; `local[t]` events for task `t` come from the core's own reaps.
struct Scenario {
    needed: Vec<u8>,
    wakers: Vec<u8>,
    local: Vec<u8>,
}

struct Model {
    protocol: Protocol,
    needed: Vec<u8>,
}

impl Model {
    fn initial(&self, scenario: &Scenario) -> State {
        let n = scenario.needed.len();
        State {
            notified: false,
            remote_queue: Vec::new(),
            token: false,
            // Every task starts polled once and Pending (SCHEDULED clear, waker registered).
            scheduled: vec![false; n],
            complete: vec![false; n],
            local_events: scenario.local.clone(),
            events: vec![0; n],
            core: CorePc::RunQueue,
            local_queue: Vec::new(),
            queued: vec![false; n],
            draining: Vec::new(),
            remote: false,
            ready: false,
            wakers: scenario
                .wakers
                .iter()
                .map(|&t| (WakerPc::SetEvent, t))
                .collect(),
        }
    }

    /// The states thread `thread` can move `s` to (0 is the core, 1.. the wakers); empty
    /// when that thread is blocked or done.
    fn step(&self, s: &State, thread: usize) -> Vec<State> {
        if thread == 0 {
            self.core_step(s)
        } else {
            self.waker_step(s, thread - 1).into_iter().collect()
        }
    }

    fn core_step(&self, s: &State) -> Vec<State> {
        let mut n = s.clone();
        match s.core {
            CorePc::Done => return Vec::new(),
            CorePc::RunQueue => {
                if s.complete.iter().all(|&c| c) {
                    n.core = CorePc::Done;
                } else if let Some(t) = n.local_queue.first().copied() {
                    n.local_queue.remove(0);
                    n.core = CorePc::Poll1(t);
                } else {
                    n.core = CorePc::LoadNotified;
                }
            }
            CorePc::Poll1(t) => {
                if self.protocol != Protocol::KeepQueuedOnPoll {
                    n.queued[t as usize] = false;
                }
                n.core = CorePc::Poll2(t);
            }
            CorePc::Poll2(t) => {
                let i = t as usize;
                if s.events[i] >= self.needed[i] {
                    n.complete[i] = true;
                }
                n.core = CorePc::RunQueue;
            }
            CorePc::LoadNotified => {
                n.remote = s.notified;
                n.core = if s.notified {
                    CorePc::Drain1
                } else {
                    CorePc::ReadyCheck
                };
            }
            CorePc::Drain1 => {
                if self.protocol == Protocol::ClearAfterDrain {
                    n.draining.append(&mut n.remote_queue);
                } else {
                    n.notified = false;
                }
                n.core = CorePc::Drain2;
            }
            CorePc::Drain2 => {
                if self.protocol == Protocol::ClearAfterDrain {
                    n.notified = false;
                } else {
                    n.draining.append(&mut n.remote_queue);
                }
                n.core = CorePc::Convert;
            }
            CorePc::Convert => {
                if n.draining.is_empty() {
                    n.core = CorePc::ReadyCheck;
                } else {
                    let t = n.draining.remove(0);
                    let i = t as usize;
                    if self.protocol != Protocol::KeepScheduledOnDrain {
                        n.scheduled[i] = false;
                    }
                    if !s.complete[i] && !s.queued[i] {
                        n.queued[i] = true;
                        n.local_queue.push(t);
                    }
                }
            }
            CorePc::ReadyCheck => {
                n.ready = !s.local_queue.is_empty() || s.notified;
                n.core = if !n.ready && s.remote {
                    CorePc::Spin
                } else {
                    CorePc::Park
                };
            }
            CorePc::Spin => {
                // A non-blocking park (which may or may not reap a pending token), then
                // a look at `notified`; the spin ends either way.
                let mut out = Vec::new();
                for reap in [false, true] {
                    if reap && !s.token {
                        continue;
                    }
                    let mut m = n.clone();
                    if reap {
                        m.token = false;
                    }
                    m.ready = s.notified;
                    m.core = CorePc::Park;
                    out.push(m);
                }
                return out;
            }
            CorePc::Park => {
                let mut out = Vec::new();
                if !s.ready {
                    // Sleeps in the kernel until a wake token (or a CQE of its own) is there.
                    if s.token {
                        let mut m = n.clone();
                        m.token = false;
                        m.core = CorePc::RunQueue;
                        out.push(m);
                    }
                } else {
                    // A non-blocking reap may see a pending token or not yet.
                    n.core = CorePc::RunQueue;
                    if s.token {
                        let mut m = n.clone();
                        m.token = false;
                        out.push(m);
                    }
                    out.push(n.clone());
                }
                // Any reap (blocking or not) may bring one local CQE, which wakes its task
                // locally.
                for t in 0..s.local_events.len() {
                    if s.local_events[t] == 0 {
                        continue;
                    }
                    let mut m = n.clone();
                    m.token = false;
                    m.local_events[t] -= 1;
                    m.events[t] += 1;
                    if !m.queued[t] && !m.scheduled[t] && !m.complete[t] {
                        m.queued[t] = true;
                        m.local_queue.push(t as u8);
                    }
                    m.core = CorePc::RunQueue;
                    out.push(m);
                }
                return out;
            }
        }
        vec![n]
    }

    fn waker_step(&self, s: &State, w: usize) -> Option<State> {
        let (pc, task) = s.wakers[w];
        let i = task as usize;
        let mut n = s.clone();
        let notify_first = self.protocol == Protocol::NotifyBeforePush;
        let next = match pc {
            WakerPc::Done => return None,
            WakerPc::SetEvent => {
                n.events[i] += 1;
                WakerPc::FetchOrScheduled
            }
            WakerPc::FetchOrScheduled => {
                let prev = s.scheduled[i];
                n.scheduled[i] = true;
                if prev || s.complete[i] {
                    WakerPc::Done
                } else if notify_first {
                    WakerPc::SwapNotified
                } else {
                    WakerPc::Push
                }
            }
            WakerPc::Push => {
                n.remote_queue.push(task);
                if notify_first {
                    WakerPc::Done
                } else {
                    WakerPc::SwapNotified
                }
            }
            WakerPc::SwapNotified => {
                let prev = s.notified;
                n.notified = true;
                match (prev, notify_first) {
                    (false, _) => WakerPc::PostToken,
                    (true, true) => WakerPc::Push,
                    (true, false) => WakerPc::Done,
                }
            }
            WakerPc::PostToken => {
                n.token = true;
                if notify_first {
                    WakerPc::Push
                } else {
                    WakerPc::Done
                }
            }
        };
        n.wakers[w].0 = next;
        Some(n)
    }

    /// A lost wake-up: nobody can move, and a task that got all its events is not done.
    fn lost_wake(&self, s: &State) -> bool {
        s.complete
            .iter()
            .zip(&s.events)
            .zip(&self.needed)
            .any(|((&c, &e), &need)| !c && e >= need)
    }
}

/// The outcome of exploring one protocol on one scenario.
struct Outcome {
    states: usize,
    /// The interleaving that lost a wake-up: (thread, state after its step).
    lost: Option<Vec<(usize, State)>>,
}

fn explore(protocol: Protocol, scenario: &Scenario) -> Outcome {
    let model = Model {
        protocol,
        needed: scenario.needed.clone(),
    };
    let threads = 1 + scenario.wakers.len();
    let start = model.initial(scenario);
    let mut parent: HashMap<State, Option<(State, usize)>> = HashMap::new();
    let mut seen: HashSet<State> = HashSet::new();
    parent.insert(start.clone(), None);
    seen.insert(start.clone());
    let mut stack = vec![start];
    while let Some(s) = stack.pop() {
        let mut any = false;
        for t in 0..threads {
            for next in model.step(&s, t) {
                any = true;
                if seen.insert(next.clone()) {
                    parent.insert(next.clone(), Some((s.clone(), t)));
                    stack.push(next);
                }
            }
        }
        if !any && model.lost_wake(&s) {
            let mut trace = Vec::new();
            let mut at = s;
            while let Some(Some((prev, t))) = parent.get(&at) {
                trace.push((*t, at.clone()));
                at = prev.clone();
            }
            trace.reverse();
            return Outcome {
                states: seen.len(),
                lost: Some(trace),
            };
        }
    }
    Outcome {
        states: seen.len(),
        lost: None,
    }
}

fn scenarios() -> Vec<(&'static str, Scenario)> {
    vec![
        (
            "one task, one remote waker",
            Scenario {
                needed: vec![1],
                wakers: vec![0],
                local: vec![0],
            },
        ),
        (
            "one task woken by two threads (needs both events)",
            Scenario {
                needed: vec![2],
                wakers: vec![0, 0],
                local: vec![0],
            },
        ),
        (
            "two tasks, one waker thread each (wakes batched by `notified`)",
            Scenario {
                needed: vec![1, 1],
                wakers: vec![0, 1],
                local: vec![0, 0],
            },
        ),
        (
            "two tasks, three waker threads (one task needs two events)",
            Scenario {
                needed: vec![2, 1],
                wakers: vec![0, 0, 1],
                local: vec![0, 0],
            },
        ),
        (
            "one task, two local CQEs and one remote waker (needs all three)",
            Scenario {
                needed: vec![3],
                wakers: vec![0],
                local: vec![2],
            },
        ),
        (
            "two tasks, local CQEs for both, remote wakers for one",
            Scenario {
                needed: vec![3, 1],
                wakers: vec![0, 0],
                local: vec![1, 1],
            },
        ),
    ]
}

fn print_trace(trace: &[(usize, State)]) {
    for (t, s) in trace {
        let who = if *t == 0 {
            "core".to_string()
        } else {
            format!("waker {}", t - 1)
        };
        eprintln!("  {who:>8} -> {s:?}");
    }
}

#[test]
fn the_runtime_wake_protocol_never_loses_a_wake_up() {
    for (name, scenario) in scenarios() {
        let out = explore(Protocol::Real, &scenario);
        if let Some(trace) = &out.lost {
            print_trace(trace);
            panic!("{name}: lost wake-up after {} steps", trace.len());
        }
        println!("{name}: {} states, no lost wake-up", out.states);
        // The exploration really interleaves: far more states than one sequential run.
        assert!(out.states > 50, "{name}: only {} states", out.states);
    }
}

#[test]
fn each_broken_ordering_is_caught() {
    for protocol in [
        Protocol::ClearAfterDrain,
        Protocol::NotifyBeforePush,
        Protocol::KeepScheduledOnDrain,
        Protocol::KeepQueuedOnPoll,
    ] {
        let caught: Vec<_> = scenarios()
            .into_iter()
            .filter_map(|(name, scenario)| {
                let out = explore(protocol, &scenario);
                out.lost.map(|trace| (name, trace))
            })
            .collect();
        let Some((name, trace)) = caught.first() else {
            panic!("{protocol:?}: no scenario found the lost wake-up");
        };
        println!(
            "{protocol:?}: lost wake-up found in '{name}' after {} steps",
            trace.len()
        );
    }
}
