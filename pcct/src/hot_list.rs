//! Incrementally sorted hot lists (Whaley's `update_sorted_pos`).
//!
//! A hot list is a doubly linked list threaded through the elements of an
//! arena, kept in descending order of one [`crate::Metric`] of their weight.
//! Weights only grow, so after an element's weight increased it is moved
//! toward the head past its smaller neighbours; reading the top N is a walk
//! of N links, with no sorting.
//!
//! The list is *bounded*: it holds the `capacity` heaviest elements. An
//! element outside the list enters only when it outgrows the tail, which is
//! then evicted. Because weights never shrink, the list always holds exactly
//! the `capacity` heaviest elements (ties broken by arrival), and every walk
//! is bounded by `capacity` even in a tree whose light elements are dense
//! (thousands of one-sample nodes with nearly equal CPU times would
//! otherwise make each insertion walk past all of them).
//! Elements of weight zero (interior nodes that were never a leaf) are never
//! listed.

use crate::slot::{Link, NIL, UNLISTED};

/// Access to the elements a list is threaded through.
pub(crate) trait RankedStore {
    /// The sort key of element `id`.
    fn key(&self, id: u32) -> u64;
    fn link(&self, id: u32) -> Link;
    fn link_mut(&mut self, id: u32) -> &mut Link;
}

#[derive(Clone, Debug)]
pub(crate) struct HotList {
    head: u32,
    tail: u32,
    len: u32,
    capacity: u32,
}

impl HotList {
    pub(crate) fn new(capacity: usize) -> HotList {
        HotList { head: NIL, tail: NIL, len: 0, capacity: u32::try_from(capacity).unwrap_or(u32::MAX - 2) }
    }

    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity as usize
    }

    /// Forgets every element. The caller resets the elements' links.
    pub(crate) fn clear(&mut self) {
        self.head = NIL;
        self.tail = NIL;
        self.len = 0;
    }

    /// Called after the key of `id` grew: admits it if it now belongs to the
    /// top `capacity`, then moves it toward the head past smaller neighbours.
    #[inline]
    pub(crate) fn raised<S: RankedStore>(&mut self, store: &mut S, id: u32) {
        let key = store.key(id);
        if !store.link(id).is_listed() {
            if key == 0 || self.capacity == 0 {
                return;
            }
            if self.len == self.capacity {
                let tail = self.tail;
                if store.key(tail) >= key {
                    return;
                }
                self.unlink(store, tail);
                *store.link_mut(tail) = Link::UNLISTED;
            }
            self.push_back(store, id);
        }
        let mut before = store.link(id).prev;
        if before == NIL || store.key(before) >= key {
            return;
        }
        while before != NIL && store.key(before) < key {
            before = store.link(before).prev;
        }
        self.unlink(store, id);
        self.insert_after(store, before, id);
    }

    /// Elements from the heaviest down; `link_of` reads an element's link.
    pub(crate) fn iter<F: Fn(u32) -> Link>(&self, link_of: F) -> HotIter<F> {
        HotIter { link_of, next: self.head }
    }

    fn push_back<S: RankedStore>(&mut self, store: &mut S, id: u32) {
        *store.link_mut(id) = Link { prev: self.tail, next: NIL };
        if self.tail == NIL {
            self.head = id;
        } else {
            store.link_mut(self.tail).next = id;
        }
        self.tail = id;
        self.len += 1;
    }

    fn unlink<S: RankedStore>(&mut self, store: &mut S, id: u32) {
        let Link { prev, next } = store.link(id);
        debug_assert!(prev != UNLISTED);
        if prev == NIL {
            self.head = next;
        } else {
            store.link_mut(prev).next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            store.link_mut(next).prev = prev;
        }
        self.len -= 1;
    }

    /// Inserts `id` after `before` (`NIL`: at the head).
    fn insert_after<S: RankedStore>(&mut self, store: &mut S, before: u32, id: u32) {
        let next = if before == NIL { self.head } else { store.link(before).next };
        *store.link_mut(id) = Link { prev: before, next };
        if before == NIL {
            self.head = id;
        } else {
            store.link_mut(before).next = id;
        }
        if next == NIL {
            self.tail = id;
        } else {
            store.link_mut(next).prev = id;
        }
        self.len += 1;
    }
}

pub(crate) struct HotIter<F> {
    link_of: F,
    next: u32,
}

impl<F: Fn(u32) -> Link> Iterator for HotIter<F> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if self.next == NIL {
            return None;
        }
        let id = self.next;
        self.next = (self.link_of)(id).next;
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Plain {
        keys: Vec<u64>,
        links: Vec<Link>,
    }

    impl RankedStore for Plain {
        fn key(&self, id: u32) -> u64 {
            self.keys[id as usize]
        }
        fn link(&self, id: u32) -> Link {
            self.links[id as usize]
        }
        fn link_mut(&mut self, id: u32) -> &mut Link {
            &mut self.links[id as usize]
        }
    }

    fn listed(list: &HotList, store: &Plain) -> Vec<u64> {
        list.iter(|id| store.link(id)).map(|id| store.key(id)).collect()
    }

    #[test]
    fn keeps_the_heaviest_in_order_and_evicts_the_tail() {
        let mut store = Plain { keys: vec![0; 5], links: vec![Link::UNLISTED; 5] };
        let mut list = HotList::new(3);
        for (id, key) in [(0, 5), (1, 3), (2, 9), (3, 1)] {
            store.keys[id] = key;
            list.raised(&mut store, id as u32);
        }
        assert_eq!(listed(&list, &store), vec![9, 5, 3]);
        store.keys[3] = 4;
        list.raised(&mut store, 3);
        assert_eq!(listed(&list, &store), vec![9, 5, 4]);
        assert!(!store.links[1].is_listed());
        store.keys[3] = 20;
        list.raised(&mut store, 3);
        assert_eq!(listed(&list, &store), vec![20, 9, 5]);
        assert_eq!(list.len(), 3);
    }

    #[test]
    fn zero_keys_are_never_listed() {
        let mut store = Plain { keys: vec![0; 2], links: vec![Link::UNLISTED; 2] };
        let mut list = HotList::new(4);
        list.raised(&mut store, 0);
        assert_eq!(list.len(), 0);
    }
}
