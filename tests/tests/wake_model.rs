//! Exhaustive interleaving check of the cross-thread wake path: no lost wake-up.
//!
//! The path under test (runtime/src/executor/task.rs, shared.rs and the loop's `tick` in
//! executor/mod.rs), step by step as the code runs it:
//!
//! - **waker thread** (`waker_wake` / `schedule` / `Shared::push_remote` / `notify`): makes the
//!   event the task waits for visible; `state.fetch_or(SCHEDULED)`, done if it was set; locks
//!   the remote queue and pushes the task; `notified.swap(true)`, done if it was set; posts a
//!   wake token (an eventfd write or a MSG_RING CQE, both of which stay pending until the core
//!   reaps them).
//! - **core** (`tick`): runs its local queue, each poll first clearing SCHEDULED
//!   (`fetch_sub(REF_ONE | SCHEDULED)`) and then looking at the event; loads `notified` and,
//!   if set, drains (`notified.store(false)`, then the queue taken under the lock); computes
//!   `ready` (local queue non-empty or `notified` set); if it was woken remotely and is not
//!   ready, it may spin on `notified` a while; then parks: blocking until a wake token when
//!   not ready, otherwise a non-blocking reap (which may or may not see a pending token).
//!
//! Every interleaving of those steps across the core and two waker threads is explored
//! (depth-first, states deduplicated). A state where no thread can move while a task still
//! waits for an event already delivered is a lost wake-up: the core sleeps in the kernel
//! with nobody left to wake it. The check runs the real protocol (which must pass) and
//! three broken orderings (each of which must be caught, with the interleaving printed), so
//! the model is shown to be able to fail.
//!
//! The model is sequentially consistent. That is sound here: the queue is only touched
//! under its mutex, and the two flags are read-modify-writes or SeqCst, so the one
//! store-buffer pattern (core: clear `notified`, then read the queue; waker: write the
//! queue, then swap `notified`) is ordered by the mutex. `loom` would also explore weak
//! memory, at the cost of swapping the runtime's atomics for its own; this model keeps the
//! runtime's code unchanged and covers the ordering bugs that lose wake-ups.

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
    /// Broken: a poll looks at the event before clearing SCHEDULED (a wake in between
    /// sees SCHEDULED still set and does nothing; the poll returns Pending).
    ClearScheduledAfterPoll,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum CorePc {
    /// Pop the next local task, or go on to the remote check.
    RunQueue,
    /// Poll, first step (clear SCHEDULED, or read the event under `ClearScheduledAfterPoll`).
    Poll1(u8),
    /// Poll, second step; `.1` is the event count the poll saw, if it has looked already.
    Poll2(u8, Option<u8>),
    /// `let remote = notified.load()`.
    LoadNotified,
    /// Drain, first step.
    Drain1,
    /// Drain, second step.
    Drain2,
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
    /// Events delivered to each task.
    events: Vec<u8>,
    // The core's own.
    core: CorePc,
    local_queue: Vec<u8>,
    remote: bool,
    ready: bool,
    /// Each waker thread: where it is and which task it wakes.
    wakers: Vec<(WakerPc, u8)>,
}

/// One scenario: `needed[t]` events complete task `t`; `wakers[i]` is the task thread `i`
/// delivers one event to.
struct Scenario {
    needed: Vec<u8>,
    wakers: Vec<u8>,
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
            events: vec![0; n],
            core: CorePc::RunQueue,
            local_queue: Vec::new(),
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
                let i = t as usize;
                if self.protocol == Protocol::ClearScheduledAfterPoll {
                    n.core = CorePc::Poll2(t, Some(s.events[i]));
                } else {
                    n.scheduled[i] = false;
                    n.core = CorePc::Poll2(t, None);
                }
            }
            CorePc::Poll2(t, seen) => {
                let i = t as usize;
                let seen = match seen {
                    Some(seen) => {
                        n.scheduled[i] = false;
                        seen
                    }
                    None => s.events[i],
                };
                if seen >= self.needed[i] {
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
                    n.local_queue.append(&mut n.remote_queue);
                } else {
                    n.notified = false;
                }
                n.core = CorePc::Drain2;
            }
            CorePc::Drain2 => {
                if self.protocol == Protocol::ClearAfterDrain {
                    n.notified = false;
                } else {
                    n.local_queue.append(&mut n.remote_queue);
                }
                n.core = CorePc::ReadyCheck;
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
                if !s.ready {
                    // Sleeps in the kernel until a wake token is there.
                    if !s.token {
                        return Vec::new();
                    }
                    n.token = false;
                } else if s.token {
                    // A non-blocking reap may see the token or not yet.
                    let mut m = n.clone();
                    m.token = false;
                    m.core = CorePc::RunQueue;
                    n.core = CorePc::RunQueue;
                    return vec![n, m];
                }
                n.core = CorePc::RunQueue;
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
            },
        ),
        (
            "one task woken by two threads (needs both events)",
            Scenario {
                needed: vec![2],
                wakers: vec![0, 0],
            },
        ),
        (
            "two tasks, one waker thread each (wakes batched by `notified`)",
            Scenario {
                needed: vec![1, 1],
                wakers: vec![0, 1],
            },
        ),
        (
            "two tasks, three waker threads (one task needs two events)",
            Scenario {
                needed: vec![2, 1],
                wakers: vec![0, 0, 1],
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
        Protocol::ClearScheduledAfterPoll,
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
