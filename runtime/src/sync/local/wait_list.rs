//! A FIFO list of waiting futures, kept in a slab and linked by index: no `unsafe`, no
//! allocation per wait once the slab has grown.
//!
//! Each waiting future owns one entry, from its first `Pending` poll until it completes or
//! is dropped, and only it removes the entry. A notifier unlinks an entry from the list
//! ([`WaitList::pop_front`]) and marks it with what happened to it (the `S` tag), but the
//! entry stays in the slab so that the future can read its tag on its next poll, or on drop
//! give back what it was handed and did not use. Invariants: an entry is `linked` exactly
//! when it is in the list between `head` and `tail`; a linked entry's tag is the list's
//! `waiting` tag.

use std::task::Waker;

use slab::Slab;

/// One waiting future's entry.
#[derive(Debug)]
struct Entry<S> {
    waker: Option<Waker>,
    tag: S,
    linked: bool,
    prev: Option<usize>,
    next: Option<usize>,
}

/// The list: entries in a slab, the waiting ones linked in arrival order.
#[derive(Debug)]
pub(crate) struct WaitList<S> {
    entries: Slab<Entry<S>>,
    head: Option<usize>,
    tail: Option<usize>,
    waiting: S,
}

impl<S: Copy + PartialEq> WaitList<S> {
    /// An empty list whose linked entries carry the tag `waiting`.
    pub(crate) fn new(waiting: S) -> WaitList<S> {
        WaitList {
            entries: Slab::new(),
            head: None,
            tail: None,
            waiting,
        }
    }

    /// Whether no entry is linked (waiting).
    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    /// Links a new waiting entry at the back; returns its key.
    pub(crate) fn push_back(&mut self, waker: Option<Waker>) -> usize {
        let key = self.entries.insert(Entry {
            waker,
            tag: self.waiting,
            linked: true,
            prev: self.tail,
            next: None,
        });
        match self.tail {
            Some(tail) => self.entries[tail].next = Some(key),
            None => self.head = Some(key),
        }
        self.tail = Some(key);
        key
    }

    /// The tag of entry `key`, or `None` if there is no such entry.
    pub(crate) fn tag(&self, key: usize) -> Option<S> {
        self.entries.get(key).map(|e| e.tag)
    }

    /// Stores `waker` in entry `key`, replacing the one there only when it would not wake
    /// the same task (no clone on the common re-poll).
    pub(crate) fn set_waker(&mut self, key: usize, waker: &Waker) {
        if let Some(entry) = self.entries.get_mut(key) {
            match &entry.waker {
                Some(old) if old.will_wake(waker) => {}
                _ => entry.waker = Some(waker.clone()),
            }
        }
    }

    /// Unlinks the first waiting entry, tags it `tag`, and returns its waker (to be woken
    /// once the caller's borrow of the list has ended). `None` when nobody waits; the
    /// inner `Option` is `None` for an entry that registered without a waker.
    pub(crate) fn pop_front(&mut self, tag: S) -> Option<Option<Waker>> {
        let key = self.head?;
        Some(self.unlink_as(key, tag))
    }

    /// Unlinks the last waiting entry (the most recent), like [`pop_front`](Self::pop_front).
    pub(crate) fn pop_back(&mut self, tag: S) -> Option<Option<Waker>> {
        let key = self.tail?;
        Some(self.unlink_as(key, tag))
    }

    /// Unlinks every waiting entry, tags each `tag`, and returns their wakers in order.
    pub(crate) fn drain(&mut self, tag: S) -> Vec<Waker> {
        let mut wakers = Vec::new();
        while let Some(waker) = self.pop_front(tag) {
            wakers.extend(waker);
        }
        wakers
    }

    /// Removes entry `key` (unlinking it if it still waits) and returns its tag; `None` if
    /// there is no such entry.
    pub(crate) fn remove(&mut self, key: usize) -> Option<S> {
        if !self.entries.contains(key) {
            return None;
        }
        if self.entries[key].linked {
            self.unlink(key);
        }
        Some(self.entries.remove(key).tag)
    }

    fn unlink_as(&mut self, key: usize, tag: S) -> Option<Waker> {
        self.unlink(key);
        let entry = &mut self.entries[key];
        entry.tag = tag;
        entry.waker.take()
    }

    /// Takes linked entry `key` out of the list; it stays in the slab.
    fn unlink(&mut self, key: usize) {
        let (prev, next) = {
            let e = &mut self.entries[key];
            e.linked = false;
            (e.prev.take(), e.next.take())
        };
        match prev {
            Some(p) => self.entries[p].next = next,
            None => self.head = next,
        }
        match next {
            Some(n) => self.entries[n].prev = prev,
            None => self.tail = prev,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum T {
        Waiting,
        Done,
    }

    #[test]
    fn fifo_lifo_and_removal_from_the_middle() {
        let mut l = WaitList::new(T::Waiting);
        let a = l.push_back(None);
        let b = l.push_back(None);
        let c = l.push_back(None);
        let d = l.push_back(None);
        assert_eq!(l.remove(b), Some(T::Waiting));
        assert!(l.pop_front(T::Done).is_some());
        assert_eq!(l.tag(a), Some(T::Done));
        assert!(l.pop_back(T::Done).is_some());
        assert_eq!(l.tag(d), Some(T::Done));
        assert_eq!(l.tag(c), Some(T::Waiting));
        assert_eq!(l.drain(T::Done).len(), 0);
        assert_eq!(l.tag(c), Some(T::Done));
        assert!(l.is_empty());
        for k in [a, c, d] {
            assert_eq!(l.remove(k), Some(T::Done));
        }
        assert_eq!(l.remove(a), None);
        assert_eq!(l.tag(b), None);
        // The freed keys are reused and the list still links correctly.
        let e = l.push_back(None);
        let f = l.push_back(None);
        assert_eq!(l.remove(e), Some(T::Waiting));
        assert!(l.pop_front(T::Done).is_some());
        assert_eq!(l.tag(f), Some(T::Done));
        assert!(l.is_empty());
    }
}
