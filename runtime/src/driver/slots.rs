//! The driver's op slots: a slab (a `Vec` with a free list threaded through its vacant
//! entries, keys reused lowest-freed-first) whose `insert` writes the value straight into
//! its slot.
//!
//! The `slab` crate's `insert` builds the entry on the stack and copies it into place with
//! 16-byte loads; for an op's slot (a one-byte tag and a waker, stored just before) those
//! loads cannot be forwarded from the narrower stores still in the store buffer, and the
//! stall cost about 5% of a NOP's round trip. Here the slot is made to exist first (a
//! vacant entry pushed when the free list is empty), then written once.

use std::ops::{Index, IndexMut};

enum Entry<T> {
    /// Free; holds the next free key (`entries.len()` at the end of the list).
    Vacant(usize),
    Occupied(T),
}

/// Values keyed by `usize`, keys reused after `remove`.
pub(crate) struct Slots<T> {
    entries: Vec<Entry<T>>,
    /// The first free key.
    next: usize,
    len: usize,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Slots::with_capacity(0)
    }
}

impl<T> Slots<T> {
    /// Empty, with room for `capacity` values before the first reallocation.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Slots {
            entries: Vec::with_capacity(capacity),
            next: 0,
            len: 0,
        }
    }

    /// How many values are stored.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Stores `val`; returns its key.
    #[inline]
    pub(crate) fn insert(&mut self, val: T) -> usize {
        self.insert_with(|| val)
    }

    /// Stores the value `make` returns, made once its slot is found (so that it is built
    /// in place, not on the stack and then copied); returns its key.
    #[inline(always)]
    pub(crate) fn insert_with(&mut self, make: impl FnOnce() -> T) -> usize {
        let key = self.next;
        if key == self.entries.len() {
            self.entries.push(Entry::Vacant(key + 1));
        }
        let slot = &mut self.entries[key];
        let Entry::Vacant(next) = *slot else {
            unreachable!("the free list points at occupied slot {key}")
        };
        // SAFETY: `slot` is a valid, exclusively borrowed entry, and the `Vacant` it holds
        // owns nothing, so overwriting it without running its drop leaks nothing. (A plain
        // assignment would check the old entry for drop glue and, in the hot path, build
        // the new one on the stack first.)
        unsafe { std::ptr::write(slot, Entry::Occupied(make())) };
        // Only now: if `make` panicked, the slot is still free and still first in the list.
        self.next = next;
        self.len += 1;
        key
    }

    /// The value under `key`, if there is one.
    #[inline]
    pub(crate) fn get_mut(&mut self, key: usize) -> Option<&mut T> {
        match self.entries.get_mut(key) {
            Some(Entry::Occupied(v)) => Some(v),
            _ => None,
        }
    }

    /// Takes the value under `key` out; the key becomes free.
    ///
    /// # Panics
    /// If there is no value under `key`.
    #[inline(always)]
    pub(crate) fn remove(&mut self, key: usize) -> T {
        let Some(slot) = self.entries.get_mut(key) else {
            panic!("no op slot {key}")
        };
        match std::mem::replace(slot, Entry::Vacant(self.next)) {
            Entry::Occupied(v) => {
                self.next = key;
                self.len -= 1;
                v
            }
            vacant => {
                *slot = vacant;
                panic!("op slot {key} is empty")
            }
        }
    }

    /// Frees `key`'s slot without reading its value out: the value is forgotten (its drop
    /// does not run), for values that own nothing. Cheaper than `remove` on the hot path.
    ///
    /// # Panics
    /// If there is no value under `key`.
    #[inline(always)]
    pub(crate) fn forget(&mut self, key: usize) {
        match self.entries.get_mut(key) {
            Some(slot @ Entry::Occupied(_)) => {
                // SAFETY: `slot` is a valid, exclusive reference; overwriting it without
                // dropping the old value only forgets that value (which owns nothing, or is
                // leaked, as documented).
                unsafe { std::ptr::write(slot, Entry::Vacant(self.next)) };
                self.next = key;
                self.len -= 1;
            }
            _ => panic!("op slot {key} is empty"),
        }
    }

    /// Every stored value with its key, in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, &T)> {
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(k, e)| match e {
                Entry::Occupied(v) => Some((k, v)),
                Entry::Vacant(_) => None,
            })
    }
}

impl<T> Index<usize> for Slots<T> {
    type Output = T;

    #[inline]
    fn index(&self, key: usize) -> &T {
        match self.entries.get(key) {
            Some(Entry::Occupied(v)) => v,
            _ => panic!("op slot {key} is empty"),
        }
    }
}

impl<T> IndexMut<usize> for Slots<T> {
    #[inline]
    fn index_mut(&mut self, key: usize) -> &mut T {
        match self.get_mut(key) {
            Some(v) => v,
            None => panic!("op slot {key} is empty"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Slots;

    #[test]
    fn keys_are_reused_and_values_kept() {
        let mut s = Slots::default();
        let a = s.insert("a");
        let b = s.insert("b");
        let c = s.insert("c");
        assert_eq!((a, b, c), (0, 1, 2));
        assert_eq!(s.remove(b), "b");
        assert_eq!(s.len(), 2);
        assert!(s.get_mut(b).is_none());
        // The freed key comes back first, then the list goes on past the end.
        assert_eq!(s.insert("d"), b);
        assert_eq!(s.insert("e"), 3);
        assert_eq!(s.remove(a), "a");
        assert_eq!(s.remove(c), "c");
        // Last freed, first reused.
        assert_eq!(s.insert("f"), c);
        assert_eq!(s.insert("g"), a);
        let all: Vec<_> = s.iter().map(|(k, v)| (k, *v)).collect();
        assert_eq!(all, vec![(0, "g"), (1, "d"), (2, "f"), (3, "e")]);
        s[1] = "D";
        assert_eq!(s[1], "D");
        assert_eq!(s.len(), 4);
    }

    #[test]
    fn a_panicking_make_leaves_the_slots_as_they_were() {
        let mut s = Slots::default();
        let a = s.insert(1);
        s.remove(a);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            s.insert_with(|| -> i32 { panic!("make failed") })
        }));
        assert!(r.is_err());
        assert_eq!(s.len(), 0);
        assert_eq!(s.iter().count(), 0);
        // The free slot is still the next one handed out.
        assert_eq!(s.insert(2), a);
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn forget_frees_the_key_without_dropping() {
        use std::cell::Cell;
        /// Counts its drops; owns no memory, so forgetting one leaks nothing.
        struct Counted<'a>(&'a Cell<u32>);
        impl Drop for Counted<'_> {
            fn drop(&mut self) {
                self.0.set(self.0.get() + 1);
            }
        }
        let drops = Cell::new(0);
        let mut s = Slots::default();
        let a = s.insert(Counted(&drops));
        let b = s.insert(Counted(&drops));
        s.forget(a);
        assert_eq!(s.len(), 1);
        assert!(s.get_mut(a).is_none());
        assert_eq!(drops.get(), 0, "forget must not drop the value");
        // The freed key is the next one handed out, as after `remove`.
        assert_eq!(s.insert(Counted(&drops)), a);
        assert_eq!(s.insert(Counted(&drops)), 2);
        drop(s.remove(b));
        assert_eq!((s.len(), drops.get()), (2, 1));
    }

    #[test]
    #[should_panic(expected = "op slot 1 is empty")]
    fn forgetting_a_free_key_panics() {
        let mut s = Slots::default();
        s.insert(1);
        let k = s.insert(2);
        s.forget(k);
        s.forget(k);
    }

    #[test]
    #[should_panic(expected = "op slot 0 is empty")]
    fn removing_a_free_key_panics() {
        let mut s = Slots::default();
        let k = s.insert(1);
        s.remove(k);
        s.remove(k);
    }
}
