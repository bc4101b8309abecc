//! The heaviest elements by a key that only grows, in a B-tree: the hot
//! lists of the event resources (allocated bytes and objects, monitor
//! waits), where [`crate::hot_list::HotList`]'s bucketed linked list
//! degenerates.
//!
//! A time resource's hot list mostly re-sorts elements already in it by a
//! small increment (one more sample of a hot context), which leaves them in
//! their bucket: the linked list does nothing at all. An event context is
//! weighed mostly once, and in a narrow band: a sampled allocation of `s`
//! bytes stands for about `I + s/2` bytes (see the sampler's
//! `allocation_weight`), so every new site enters the same 1 %-wide bucket
//! and the linked list passes, link by link through the side table, every
//! heavier element of it. Measured on javac at `alloc=512k`: 66-70 µs per
//! allocation in that scan with the list's 1024 places full, most of the
//! sampler's cost of an event. Here entering, moving and evicting take
//! O(log capacity), and the order is exact (ties by id).

use std::collections::BTreeSet;

#[derive(Clone, Debug)]
pub(crate) struct TopSet {
    /// (key, id), lightest first.
    set: BTreeSet<(u64, u32)>,
    capacity: usize,
}

impl TopSet {
    pub(crate) fn new(capacity: usize) -> TopSet {
        TopSet { set: BTreeSet::new(), capacity }
    }

    pub(crate) fn len(&self) -> usize {
        self.set.len()
    }

    pub(crate) fn clear(&mut self) {
        self.set.clear();
    }

    /// Called after the key of `id` grew from `old_key` to `key`: moves it
    /// if it is held, else admits it if it is now among the `capacity`
    /// heaviest (evicting the lightest). Since keys only grow, the set
    /// always holds exactly the `capacity` heaviest elements.
    pub(crate) fn raised(&mut self, id: u32, old_key: u64, key: u64) {
        if old_key > 0 && self.set.remove(&(old_key, id)) {
            self.set.insert((key, id));
            return;
        }
        if key == 0 || self.capacity == 0 {
            return;
        }
        if self.set.len() >= self.capacity {
            match self.set.first() {
                Some(&lightest) if lightest < (key, id) => {
                    self.set.pop_first();
                }
                _ => return,
            }
        }
        self.set.insert((key, id));
    }

    /// Ids from the heaviest down.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.set.iter().rev().map(|&(_, id)| id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_the_heaviest_in_order_and_evicts_the_lightest() {
        let mut set = TopSet::new(3);
        let mut keys = [0u64; 6];
        let mut raise = |set: &mut TopSet, id: usize, by: u64| {
            let old = keys[id];
            keys[id] += by;
            set.raised(id as u32, old, keys[id]);
        };
        for (id, key) in [(0, 5), (1, 9), (2, 7), (3, 1)] {
            raise(&mut set, id, key);
        }
        assert_eq!(set.iter().collect::<Vec<_>>(), [1, 2, 0], "3 (key 1) did not enter");
        raise(&mut set, 3, 9); // 3 now weighs 10: evicts 0 (5)
        assert_eq!(set.iter().collect::<Vec<_>>(), [3, 1, 2]);
        raise(&mut set, 2, 10); // a held element moves up
        assert_eq!(set.iter().collect::<Vec<_>>(), [2, 3, 1]);
        raise(&mut set, 0, 1); // 6 is still below the lightest (9)
        assert_eq!(set.len(), 3);
        assert_eq!(set.iter().collect::<Vec<_>>(), [2, 3, 1]);
        set.clear();
        assert_eq!(set.iter().count(), 0);
    }
}
