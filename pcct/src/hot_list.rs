//! Incrementally sorted hot lists (Whaley's `update_sorted_pos`).
//!
//! A hot list is a doubly linked list threaded through the elements of an
//! arena, kept in descending order of one [`crate::Metric`] of their weight.
//! Weights only grow, so after an element's weight increased it is moved
//! toward the head; reading the top N is a walk of N links, with no sorting.
//!
//! The list is *bounded*: it holds the `capacity` heaviest elements. An
//! element outside the list enters only when it outgrows the tail, which is
//! then evicted. Because weights never shrink, the list always holds exactly
//! the `capacity` heaviest elements (ties broken arbitrarily). Elements of
//! weight zero (interior nodes that were never a leaf) are never listed.
//!
//! Moving an element "past its smaller neighbours" one link at a time is
//! what Figure 7 does; in a real profile it is slow where weights are dense:
//! thousands of contexts weigh one or two samples (about one interval of CPU
//! each), so an element gaining a sample would pass all of them (measured:
//! javac at 1 ms spent 40% of the sampler thread here). The list therefore
//! keeps an index of *buckets*: log-linear ranges of the key, 64 per power of
//! two (each about 1.1% wide), with the first element of each bucket and a
//! bitmap of the non-empty ones. Moving an element starts at the head of its
//! new bucket and passes only the elements of that bucket heavier than it;
//! an element that stays in order and in its bucket is not moved at all.

use crate::slot::{Link, NIL, UNLISTED};

/// Access to the elements a list is threaded through.
pub(crate) trait RankedStore {
    /// The sort key of element `id`.
    fn key(&self, id: u32) -> u64;
    fn link(&self, id: u32) -> Link;
    fn link_mut(&mut self, id: u32) -> &mut Link;
}

/// Sub-buckets per power of two of the key.
const SUB_BITS: u32 = 6;
/// Buckets for all u64 keys.
const BUCKETS: usize = 64 << SUB_BITS;

/// The bucket of `key`: exact below 2^SUB_BITS, log-linear above; monotone.
#[inline]
fn bucket(key: u64) -> usize {
    if key < (1 << SUB_BITS) {
        return key as usize;
    }
    let exponent = 63 - key.leading_zeros();
    let mantissa = (key >> (exponent - SUB_BITS)) & ((1 << SUB_BITS) - 1);
    (((exponent - SUB_BITS + 1) as usize) << SUB_BITS) | mantissa as usize
}

#[derive(Clone, Debug)]
pub(crate) struct HotList {
    head: u32,
    tail: u32,
    len: u32,
    capacity: u32,
    /// First (heaviest) element of each bucket, when the bucket has any.
    bucket_head: Vec<u32>,
    bucket_len: Vec<u32>,
    /// Bit b set when bucket b has elements.
    occupied: Vec<u64>,
}

impl HotList {
    pub(crate) fn new(capacity: usize) -> HotList {
        HotList {
            head: NIL,
            tail: NIL,
            len: 0,
            capacity: u32::try_from(capacity).unwrap_or(u32::MAX - 2),
            bucket_head: vec![NIL; BUCKETS],
            bucket_len: vec![0; BUCKETS],
            occupied: vec![0; BUCKETS / 64],
        }
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
        self.bucket_head.fill(NIL);
        self.bucket_len.fill(0);
        self.occupied.fill(0);
    }

    /// Called after the key of `id` grew from `old_key`: admits it if it now
    /// belongs to the top `capacity`, and keeps the list in order.
    #[inline]
    pub(crate) fn raised<S: RankedStore>(&mut self, store: &mut S, id: u32, old_key: u64) {
        let key = store.key(id);
        if store.link(id).is_listed() {
            let previous = store.link(id).prev;
            if bucket(old_key) == bucket(key) && (previous == NIL || store.key(previous) >= key) {
                return; // still in order, still in its bucket
            }
            self.unlink(store, id, old_key);
            self.insert(store, id, key);
            return;
        }
        if key == 0 || self.capacity == 0 {
            return;
        }
        if self.len == self.capacity {
            let tail = self.tail;
            let tail_key = store.key(tail);
            if tail_key >= key {
                return;
            }
            self.unlink(store, tail, tail_key);
            *store.link_mut(tail) = Link::UNLISTED;
        }
        self.insert(store, id, key);
    }

    /// Elements from the heaviest down; `link_of` reads an element's link.
    pub(crate) fn iter<F: Fn(u32) -> Link>(&self, link_of: F) -> HotIter<F> {
        HotIter { link_of, next: self.head }
    }

    fn set_occupied(&mut self, bucket: usize, occupied: bool) {
        let (word, bit) = (bucket / 64, bucket % 64);
        if occupied {
            self.occupied[word] |= 1 << bit;
        } else {
            self.occupied[word] &= !(1 << bit);
        }
    }

    /// The nearest non-empty bucket below `bucket` (lighter keys).
    fn lower_occupied(&self, bucket: usize) -> Option<usize> {
        let (mut word, bit) = (bucket / 64, bucket % 64);
        let mut bits = self.occupied[word] & ((1u64 << bit) - 1);
        loop {
            if bits != 0 {
                return Some(word * 64 + 63 - bits.leading_zeros() as usize);
            }
            if word == 0 {
                return None;
            }
            word -= 1;
            bits = self.occupied[word];
        }
    }

    /// Puts unlisted `id` with key `key` in its place.
    fn insert<S: RankedStore>(&mut self, store: &mut S, id: u32, key: u64) {
        let b = bucket(key);
        let (before, after) = if self.bucket_len[b] > 0 {
            // Pass the elements of the bucket that are heavier; ties stop.
            let mut after = self.bucket_head[b];
            let mut before = store.link(after).prev;
            let mut remaining = self.bucket_len[b];
            while remaining > 0 && store.key(after) > key {
                before = after;
                after = store.link(after).next;
                remaining -= 1;
            }
            if remaining == self.bucket_len[b] {
                // Heavier than every element of its bucket: its new head.
                self.bucket_head[b] = id;
            }
            (before, after)
        } else {
            self.bucket_head[b] = id;
            self.set_occupied(b, true);
            match self.lower_occupied(b) {
                Some(lower) => {
                    let after = self.bucket_head[lower];
                    (store.link(after).prev, after)
                }
                None => (self.tail, NIL),
            }
        };
        self.bucket_len[b] += 1;
        *store.link_mut(id) = Link { prev: before, next: after };
        if before == NIL {
            self.head = id;
        } else {
            store.link_mut(before).next = id;
        }
        if after == NIL {
            self.tail = id;
        } else {
            store.link_mut(after).prev = id;
        }
        self.len += 1;
    }

    /// Takes listed `id`, whose key is `key`, out of the list.
    fn unlink<S: RankedStore>(&mut self, store: &mut S, id: u32, key: u64) {
        let Link { prev, next } = store.link(id);
        debug_assert!(prev != UNLISTED);
        let b = bucket(key);
        self.bucket_len[b] -= 1;
        if self.bucket_len[b] == 0 {
            self.bucket_head[b] = NIL;
            self.set_occupied(b, false);
        } else if self.bucket_head[b] == id {
            // The bucket's elements are contiguous: the next one is in it.
            self.bucket_head[b] = next;
        }
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

    fn raise(list: &mut HotList, store: &mut Plain, id: usize, key: u64) {
        let old = store.keys[id];
        store.keys[id] = key;
        list.raised(store, id as u32, old);
    }

    #[test]
    fn buckets_are_monotone_and_in_range() {
        let mut previous = 0;
        for key in (0..5000u64).chain((13..64).map(|shift| 1u64 << shift)).chain([u64::MAX]) {
            let b = bucket(key);
            assert!(b >= previous && b < BUCKETS, "{key} -> {b}");
            previous = b;
        }
    }

    #[test]
    fn keeps_the_heaviest_in_order_and_evicts_the_tail() {
        let mut store = Plain { keys: vec![0; 5], links: vec![Link::UNLISTED; 5] };
        let mut list = HotList::new(3);
        for (id, key) in [(0, 5), (1, 3), (2, 9), (3, 1)] {
            raise(&mut list, &mut store, id, key);
        }
        assert_eq!(listed(&list, &store), vec![9, 5, 3]);
        raise(&mut list, &mut store, 3, 4);
        assert_eq!(listed(&list, &store), vec![9, 5, 4]);
        assert!(!store.links[1].is_listed());
        raise(&mut list, &mut store, 3, 20);
        assert_eq!(listed(&list, &store), vec![20, 9, 5]);
        assert_eq!(list.len(), 3);
    }

    #[test]
    fn dense_near_equal_keys_stay_sorted() {
        // A thousand elements around one interval of CPU, raised in turn.
        let n = 1000;
        let mut store = Plain { keys: vec![0; n], links: vec![Link::UNLISTED; n] };
        let mut list = HotList::new(600);
        let mut state = 12345u64;
        for round in 0..5 {
            for id in 0..n {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let key = store.keys[id] + 900_000 + state % 200_000 + round;
                raise(&mut list, &mut store, id, key);
                let keys = listed(&list, &store);
                assert!(keys.windows(2).all(|w| w[0] >= w[1]));
            }
        }
        let mut all = store.keys.clone();
        all.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(listed(&list, &store), all[..600].to_vec());
    }

    #[test]
    fn zero_keys_are_never_listed() {
        let mut store = Plain { keys: vec![0; 2], links: vec![Link::UNLISTED; 2] };
        let mut list = HotList::new(4);
        list.raised(&mut store, 0, 0);
        assert_eq!(list.len(), 0);
    }
}
