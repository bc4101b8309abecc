//! Context-insensitive hot-method counters (Whaley Figure 12): one weight
//! per method, in a sorted list. This is the PCCT with a maximum depth of
//! zero and one node per method. The tree keeps these counters in every
//! mode; in [`crate::TreeMode::HotMethods`] they are all it keeps.

use crate::hot_list::{HotList, RankedStore};
use crate::method::MethodId;
use crate::slot::Link;
use crate::weight::{Metric, Weight};

#[derive(Clone, Debug)]
struct Counter {
    weight: Weight,
    link: Link,
}

#[derive(Clone, Debug)]
pub(crate) struct MethodCounters {
    counters: Vec<Counter>,
    list: HotList,
    metric: Metric,
}

struct CounterRank<'a> {
    counters: &'a mut [Counter],
    metric: Metric,
}

impl RankedStore for CounterRank<'_> {
    fn key(&self, id: u32) -> u64 {
        self.counters[id as usize].weight.get(self.metric)
    }
    fn link(&self, id: u32) -> Link {
        self.counters[id as usize].link
    }
    fn link_mut(&mut self, id: u32) -> &mut Link {
        &mut self.counters[id as usize].link
    }
}

impl MethodCounters {
    pub(crate) fn new(metric: Metric, capacity: usize) -> MethodCounters {
        MethodCounters { counters: Vec::new(), list: HotList::new(capacity), metric }
    }

    /// `update_hm` of Figure 12: adds `weight` to `method` and re-sorts it.
    pub(crate) fn add(&mut self, method: MethodId, weight: &Weight) {
        let index = method.0 as usize;
        if index >= self.counters.len() {
            self.counters.resize(index + 1, Counter { weight: Weight::ZERO, link: Link::UNLISTED });
        }
        let old = self.counters[index].weight.get(self.metric);
        self.counters[index].weight.add(weight);
        let mut rank = CounterRank { counters: &mut self.counters, metric: self.metric };
        self.list.raised(&mut rank, method.0, old);
    }

    pub(crate) fn weight(&self, method: MethodId) -> Weight {
        self.counters.get(method.0 as usize).map(|counter| counter.weight).unwrap_or_default()
    }

    /// Methods from the heaviest down, as long as the list holds them.
    pub(crate) fn hottest(&self) -> impl Iterator<Item = (MethodId, Weight)> + '_ {
        self.list.iter(|id| self.counters[id as usize].link).map(|id| (MethodId(id), self.counters[id as usize].weight))
    }

    /// Every method with a nonzero weight, unordered.
    pub(crate) fn all(&self) -> impl Iterator<Item = (MethodId, Weight)> + '_ {
        self.counters
            .iter()
            .enumerate()
            .filter(|(_, counter)| !counter.weight.is_zero())
            .map(|(index, counter)| (MethodId(index as u32), counter.weight))
    }

    pub(crate) fn listed(&self) -> usize {
        self.list.len()
    }

    pub(crate) fn capacity(&self) -> usize {
        self.list.capacity()
    }

    pub(crate) fn clear(&mut self) {
        self.counters.clear();
        self.list.clear();
    }
}
