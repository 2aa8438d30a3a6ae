//! The readiness backend's bookkeeping: what it knows of each fd (registered with epoll or
//! a regular file, ready on which side) and the ops waiting on it, in submission order.
//!
//! Waiting ops live in one slab; each fd threads its readers, writers and polls through it
//! as FIFO lists, so an fd costs a few words and only a waiting op costs a slab entry. An
//! op's `user_data` finds its entry for a cancel.

use std::collections::HashMap;

use slab::Slab;

use super::class::Dir;
use crate::driver::sqe::Sqe;

/// End of a list.
const NIL: u32 = u32::MAX;

/// What the backend knows of an fd.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Not seen yet (or released since).
    #[default]
    Unknown,
    /// Registered with epoll (edge-triggered, both sides) and non-blocking.
    Ready,
    /// epoll refuses it (`EPERM`: a regular file or directory): its ops go to the blocking
    /// pool.
    File,
}

/// One list of waiting ops.
#[derive(Clone, Copy, Debug)]
struct List {
    head: u32,
    tail: u32,
}

impl Default for List {
    fn default() -> Self {
        List {
            head: NIL,
            tail: NIL,
        }
    }
}

/// Which list of an fd an op waits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Dir(Dir),
    Poll,
}

/// An fd's state.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FdEntry {
    pub(crate) kind: Kind,
    /// Not known to be drained since epoll last said readable (or since registration).
    pub(crate) in_ready: bool,
    /// Likewise for writable.
    pub(crate) out_ready: bool,
    readers: List,
    writers: List,
    polls: List,
}

impl FdEntry {
    fn list(&mut self, side: Side) -> &mut List {
        match side {
            Side::Dir(Dir::Read) => &mut self.readers,
            Side::Dir(Dir::Write) => &mut self.writers,
            Side::Poll => &mut self.polls,
        }
    }

    /// Whether ops wait on `side`.
    pub(crate) fn has_waiting(&self, side: Side) -> bool {
        let l = match side {
            Side::Dir(Dir::Read) => self.readers,
            Side::Dir(Dir::Write) => self.writers,
            Side::Poll => self.polls,
        };
        l.head != NIL
    }
}

/// A waiting op.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Waiting {
    pub(crate) sqe: Sqe,
    /// Its progress across attempts (see `exec::try_ready`).
    pub(crate) state: u32,
    fd: i32,
    side: Side,
    next: u32,
}

/// The fds the backend has seen and the ops waiting on them.
#[derive(Default)]
pub(crate) struct Table {
    fds: Vec<FdEntry>,
    waiting: Slab<Waiting>,
    by_user_data: HashMap<u64, u32>,
}

impl Table {
    /// The entry of `fd` (>= 0), made on first use.
    pub(crate) fn fd(&mut self, fd: i32) -> &mut FdEntry {
        let i = fd as usize;
        if i >= self.fds.len() {
            self.fds.resize(i + 1, FdEntry::default());
        }
        &mut self.fds[i]
    }

    /// Forgets `fd` (closed, or given up by its owner): its number may name another file
    /// next. Returns what was known of it.
    pub(crate) fn forget(&mut self, fd: i32) -> Kind {
        match self.fds.get_mut(fd as usize) {
            Some(e) => std::mem::take(e).kind,
            None => Kind::Unknown,
        }
    }

    /// How many ops wait.
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Queues `sqe` behind the ops waiting on `fd`'s `side`.
    pub(crate) fn push(&mut self, fd: i32, side: Side, sqe: Sqe, state: u32) {
        let key = self.waiting.insert(Waiting {
            sqe,
            state,
            fd,
            side,
            next: NIL,
        }) as u32;
        self.by_user_data.insert(sqe.user_data(), key);
        let list = self.fd(fd).list(side);
        if list.tail == NIL {
            list.head = key;
        } else {
            let tail = list.tail;
            self.waiting[tail as usize].next = key;
        }
        let list = self.fd(fd).list(side);
        list.tail = key;
    }

    /// The first op waiting on `fd`'s `side`.
    pub(crate) fn front(&mut self, fd: i32, side: Side) -> Option<&mut Waiting> {
        let head = self.fd(fd).list(side).head;
        (head != NIL).then(|| &mut self.waiting[head as usize])
    }

    /// Removes the first op waiting on `fd`'s `side`.
    pub(crate) fn pop(&mut self, fd: i32, side: Side) -> Option<Waiting> {
        let head = self.fd(fd).list(side).head;
        if head == NIL {
            return None;
        }
        let w = self.waiting.remove(head as usize);
        self.by_user_data.remove(&w.sqe.user_data());
        let list = self.fd(fd).list(side);
        list.head = w.next;
        if w.next == NIL {
            list.tail = NIL;
        }
        Some(w)
    }

    /// The `user_data` of every op waiting on `fd`'s `side`, in order.
    pub(crate) fn user_data_of(&mut self, fd: i32, side: Side) -> Vec<u64> {
        let mut out = Vec::new();
        let mut k = self.fd(fd).list(side).head;
        while k != NIL {
            let w = &self.waiting[k as usize];
            out.push(w.sqe.user_data());
            k = w.next;
        }
        out
    }

    /// Removes the waiting op whose `user_data` is `ud`.
    pub(crate) fn remove(&mut self, ud: u64) -> Option<Waiting> {
        let key = self.by_user_data.remove(&ud)?;
        let (fd, side) = {
            let w = &self.waiting[key as usize];
            (w.fd, w.side)
        };
        // Unlink: find the predecessor in the fd's list (lists are short: the ops of one
        // fd on one side).
        let mut prev = NIL;
        let mut k = self.fd(fd).list(side).head;
        while k != NIL && k != key {
            prev = k;
            k = self.waiting[k as usize].next;
        }
        let w = self.waiting.remove(key as usize);
        if prev == NIL {
            self.fd(fd).list(side).head = w.next;
        } else {
            self.waiting[prev as usize].next = w.next;
        }
        if self.fd(fd).list(side).tail == key {
            self.fd(fd).list(side).tail = prev;
        }
        Some(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use io_uring::opcode;

    fn sqe(ud: u64) -> Sqe {
        Sqe::of(opcode::Nop::new().build().user_data(ud))
    }

    /// Lists keep submission order through pushes, pops and removals from any position.
    #[test]
    fn lists_keep_order_through_removals() {
        let mut t = Table::default();
        let r = Side::Dir(Dir::Read);
        for ud in 1..=5 {
            t.push(7, r, sqe(ud), 0);
        }
        t.push(7, Side::Poll, sqe(9), 0);
        assert_eq!(t.user_data_of(7, r), vec![1, 2, 3, 4, 5]);
        assert_eq!(t.remove(3).map(|w| w.sqe.user_data()), Some(3));
        assert_eq!(t.remove(5).map(|w| w.sqe.user_data()), Some(5));
        assert!(t.remove(5).is_none());
        t.push(7, r, sqe(6), 0);
        assert_eq!(t.user_data_of(7, r), vec![1, 2, 4, 6]);
        assert_eq!(t.pop(7, r).map(|w| w.sqe.user_data()), Some(1));
        assert_eq!(t.remove(6).map(|w| w.sqe.user_data()), Some(6));
        assert_eq!(t.user_data_of(7, r), vec![2, 4]);
        assert_eq!(t.user_data_of(7, Side::Poll), vec![9]);
        assert_eq!(t.waiting(), 3);
        assert_eq!(t.pop(7, r).map(|w| w.sqe.user_data()), Some(2));
        assert_eq!(t.pop(7, r).map(|w| w.sqe.user_data()), Some(4));
        assert!(t.pop(7, r).is_none());
        assert!(!t.fd(7).has_waiting(r));
        t.push(7, r, sqe(10), 0);
        assert_eq!(t.user_data_of(7, r), vec![10]);
    }
}
