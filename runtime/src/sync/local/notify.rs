//! [`Notify`]: wakes tasks of one core, with tokio's `Notify` semantics and no atomics.
//!
//! State: at most one stored permit, the waiting [`Notified`] futures in arrival order, and
//! a count of `notify_waiters` calls. Invariants: a permit is stored only while nobody
//! waits (`notify_one` hands it to a waiter first); a waiter that was handed a
//! `notify_one` and is dropped before it completes hands it on, so a notification is never
//! lost; a future registered with a waker holds it only until it completes or is dropped.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use super::wait_list::WaitList;

/// What happened to a waiting [`Notified`].
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tag {
    Waiting,
    /// Handed a `notify_one`/`notify_last`: passed on if dropped unused.
    One,
    /// Woken by `notify_waiters`.
    All,
}

#[derive(Debug)]
struct State {
    permit: bool,
    waiters: WaitList<Tag>,
    /// `notify_waiters` calls so far: a future created before one of them completes.
    generation: u64,
}

/// Notifies one task, or all waiting tasks, of an event; the core-local [`tokio::sync::Notify`].
///
/// `!Send` and `!Sync`: share it between the tasks of one core with `Rc<Notify>`. It keeps
/// tokio's semantics: [`notify_one`](Notify::notify_one) wakes the first waiter, or stores
/// one permit that the next [`notified`](Notify::notified) consumes at once;
/// [`notify_waiters`](Notify::notify_waiters) wakes every future created before the call,
/// polled or not, and stores no permit.
///
/// ```
/// use std::rc::Rc;
/// use runtime::sync::local::Notify;
///
/// let rt = runtime::Runtime::new()?;
/// rt.block_on(async {
///     let notify = Rc::new(Notify::new());
///     let n = notify.clone();
///     let waiter = runtime::spawn_local(async move { n.notified().await; "woken" });
///     runtime::yield_now().await;
///     notify.notify_one();
///     assert_eq!(waiter.await.unwrap(), "woken");
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Notify {
    state: RefCell<State>,
    _not_send: PhantomData<Rc<()>>,
}

impl Notify {
    /// A `Notify` with no permit and no waiter.
    pub fn new() -> Notify {
        Notify {
            state: RefCell::new(State {
                permit: false,
                waiters: WaitList::new(Tag::Waiting),
                generation: 0,
            }),
            _not_send: PhantomData,
        }
    }

    /// A future that completes on the next notification; it joins the queue of waiters at
    /// its first poll (or [`Notified::enable`]).
    pub fn notified(&self) -> Notified<'_> {
        Notified {
            notify: self,
            generation: self.state.borrow().generation,
            step: Step::Init,
        }
    }

    /// Wakes the longest-waiting [`Notified`], or stores a permit if none waits (at most
    /// one: notifying twice with nobody waiting stores one permit).
    pub fn notify_one(&self) {
        self.notify(Pop::Front);
    }

    /// Wakes the most recent waiting [`Notified`], or stores a permit if none waits.
    pub fn notify_last(&self) {
        self.notify(Pop::Back);
    }

    /// Wakes every [`Notified`] created before this call, whether polled yet or not;
    /// stores no permit.
    pub fn notify_waiters(&self) {
        let wakers = {
            let mut st = self.state.borrow_mut();
            st.generation = st.generation.wrapping_add(1);
            st.waiters.drain(Tag::All)
        };
        // Woken after the borrow ends: a waker may run arbitrary code.
        wakers.into_iter().for_each(Waker::wake);
    }

    fn notify(&self, pop: Pop) {
        let waker = {
            let mut st = self.state.borrow_mut();
            let popped = match pop {
                Pop::Front => st.waiters.pop_front(Tag::One),
                Pop::Back => st.waiters.pop_back(Tag::One),
            };
            if popped.is_none() {
                st.permit = true;
            }
            popped.flatten()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

#[derive(Clone, Copy)]
enum Pop {
    Front,
    Back,
}

impl Default for Notify {
    fn default() -> Notify {
        Notify::new()
    }
}

impl fmt::Debug for Notify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.borrow();
        f.debug_struct("Notify")
            .field("permit", &st.permit)
            .field("waiting", &!st.waiters.is_empty())
            .finish()
    }
}

/// Where a [`Notified`] stands.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Step {
    Init,
    Waiting(usize),
    Done,
}

/// The future [`Notify::notified`] returns; completes once notified.
///
/// Dropping it after a `notify_one` reached it but before it completed hands that
/// notification to the next waiter (or stores it as the permit), as tokio does.
#[must_use = "futures do nothing unless polled"]
pub struct Notified<'a> {
    notify: &'a Notify,
    generation: u64,
    step: Step,
}

impl Notified<'_> {
    /// Joins the queue of waiters now, without a waker, so that a later `notify_one` is
    /// kept for this future; returns whether it is already notified (then `.await`
    /// completes at once).
    pub fn enable(self: Pin<&mut Self>) -> bool {
        self.get_mut().poll_with(None).is_ready()
    }

    fn poll_with(&mut self, waker: Option<&Waker>) -> Poll<()> {
        let mut st = self.notify.state.borrow_mut();
        match self.step {
            Step::Done => return Poll::Ready(()),
            Step::Init => {
                if st.generation != self.generation || std::mem::take(&mut st.permit) {
                    self.step = Step::Done;
                    return Poll::Ready(());
                }
                self.step = Step::Waiting(st.waiters.push_back(waker.cloned()));
            }
            Step::Waiting(key) => match st.waiters.tag(key) {
                Some(Tag::Waiting) => {
                    if let Some(waker) = waker {
                        st.waiters.set_waker(key, waker);
                    }
                }
                _ => {
                    st.waiters.remove(key);
                    self.step = Step::Done;
                    return Poll::Ready(());
                }
            },
        }
        Poll::Pending
    }
}

impl Future for Notified<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.get_mut().poll_with(Some(cx.waker()))
    }
}

impl Drop for Notified<'_> {
    fn drop(&mut self) {
        if let Step::Waiting(key) = self.step {
            let tag = self.notify.state.borrow_mut().waiters.remove(key);
            if tag == Some(Tag::One) {
                // Handed a notification it will never use: pass it on.
                self.notify.notify_one();
            }
        }
    }
}

impl fmt::Debug for Notified<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notified")
            .field("step", &self.step)
            .finish()
    }
}
