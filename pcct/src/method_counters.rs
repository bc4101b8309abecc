//! Context-insensitive hot-method counters (Whaley Figure 12): one weight
//! per method, in a sorted list. This is the PCCT with a maximum depth of
//! zero and one node per method. The tree keeps these counters in every
//! mode; in [`crate::TreeMode::HotMethods`] they are all it keeps.
//!
//! Beside each method's self weight the counters keep, incrementally, its
//! total (every sample with the method on its stack, once) and its number
//! of contexts, so a question about a method never needs a pass over the
//! tree (see [`crate::Pcct::hot_methods`]).
//!
//! Methods are kept sorted by self weight in the tree's metric (one list)
//! and in each event resource (one list each, [`Metric::EVENTS`]): an
//! event changes only its own lists, so a CPU sample still re-sorts one.

use crate::hot_list::{HotList, RankedStore};
use crate::method::MethodId;
use crate::slot::Link;
use crate::weight::{Metric, Weight, EVENT_COUNT};

/// Fields in the order the update path touches them: `total` for every
/// method on a sample's stack, `weight` and `link` for its leaf.
#[derive(Clone, Debug)]
struct Counter {
    /// Samples with this method anywhere on the stack, each counted once.
    total: Weight,
    weight: Weight,
    link: Link,
    /// Nodes of the tree whose method this is.
    contexts: u32,
    /// Positions in the per-event lists.
    event_links: [Link; EVENT_COUNT],
}

impl Counter {
    const ZERO: Counter = Counter {
        weight: Weight::ZERO,
        link: Link::UNLISTED,
        event_links: [Link::UNLISTED; EVENT_COUNT],
        total: Weight::ZERO,
        contexts: 0,
    };
}

#[derive(Clone, Debug)]
pub(crate) struct MethodCounters {
    counters: Vec<Counter>,
    list: HotList,
    metric: Metric,
    /// By self weight in each of [`Metric::EVENTS`].
    event_lists: [HotList; EVENT_COUNT],
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
        match self.metric.event_index() {
            Some(event) => self.counters[id as usize].event_links[event],
            None => self.counters[id as usize].link,
        }
    }
    fn link_mut(&mut self, id: u32) -> &mut Link {
        match self.metric.event_index() {
            Some(event) => &mut self.counters[id as usize].event_links[event],
            None => &mut self.counters[id as usize].link,
        }
    }
}

impl MethodCounters {
    pub(crate) fn new(metric: Metric, capacity: usize) -> MethodCounters {
        MethodCounters {
            counters: Vec::new(),
            list: HotList::new(capacity),
            metric,
            event_lists: std::array::from_fn(|_| HotList::new(capacity)),
        }
    }

    fn counter_mut(&mut self, method: MethodId) -> &mut Counter {
        let index = method.0 as usize;
        if index >= self.counters.len() {
            self.counters.resize(index + 1, Counter::ZERO);
        }
        &mut self.counters[index]
    }

    /// Adds `weight` to the total of `method` (a sample with it on the stack).
    #[inline]
    pub(crate) fn add_total(&mut self, method: MethodId, weight: &Weight) {
        self.counter_mut(method).total.add(weight);
    }

    /// Adds `weight` to the total of each of `methods` (the distinct methods
    /// of a sample's stack); each has a context already, so its counter exists.
    #[inline]
    pub(crate) fn add_totals_of(&mut self, methods: &[(u32, MethodId)], weight: &Weight) {
        for &(_, method) in methods {
            match self.counters.get_mut(method.0 as usize) {
                Some(counter) => counter.total.add(weight),
                None => self.add_total(method, weight),
            }
        }
    }

    /// Counts a new context (node) of `method`.
    pub(crate) fn add_context(&mut self, method: MethodId) {
        self.counter_mut(method).contexts += 1;
    }

    /// Sets what [`Self::add_total`] and [`Self::add_context`] would have
    /// accumulated (a tree rebuilt from a written profile).
    pub(crate) fn restore_total(&mut self, method: MethodId, total: Weight, contexts: u32) {
        let counter = self.counter_mut(method);
        counter.total = total;
        counter.contexts = contexts;
    }

    pub(crate) fn total(&self, method: MethodId) -> Weight {
        self.counters.get(method.0 as usize).map(|counter| counter.total).unwrap_or_default()
    }

    pub(crate) fn contexts(&self, method: MethodId) -> u32 {
        self.counters.get(method.0 as usize).map_or(0, |counter| counter.contexts)
    }

    /// Every method with a nonzero total: (method, self, total, contexts).
    pub(crate) fn all_totals(&self) -> impl Iterator<Item = (MethodId, Weight, Weight, u32)> + '_ {
        self.counters
            .iter()
            .enumerate()
            .filter(|(_, counter)| !counter.total.is_zero())
            .map(|(index, counter)| (MethodId(index as u32), counter.weight, counter.total, counter.contexts))
    }

    /// `update_hm` of Figure 12: adds `weight` to `method` and re-sorts it
    /// in the lists whose key it changed.
    pub(crate) fn add(&mut self, method: MethodId, weight: &Weight) {
        let index = method.0 as usize;
        self.counter_mut(method);
        let old = self.counters[index].weight;
        self.counters[index].weight.add(weight);
        if weight.get(self.metric) != 0 {
            let mut rank = CounterRank { counters: &mut self.counters, metric: self.metric };
            self.list.raised(&mut rank, method.0, old.get(self.metric));
        }
        if weight.has_events() {
            for (event, list) in Metric::EVENTS.into_iter().zip(&mut self.event_lists) {
                if weight.get(event) != 0 {
                    let mut rank = CounterRank { counters: &mut self.counters, metric: event };
                    list.raised(&mut rank, method.0, old.get(event));
                }
            }
        }
    }

    /// The list sorted by `metric`, if one is kept.
    fn list_of(&self, metric: Metric) -> Option<&HotList> {
        match metric.event_index() {
            Some(event) => Some(&self.event_lists[event]),
            None => (metric == self.metric).then_some(&self.list),
        }
    }

    pub(crate) fn weight(&self, method: MethodId) -> Weight {
        self.counters.get(method.0 as usize).map(|counter| counter.weight).unwrap_or_default()
    }

    /// Methods from the heaviest down in `metric`, as long as its list
    /// holds them; `None` when no list is sorted by `metric`.
    pub(crate) fn hottest(&self, metric: Metric) -> Option<impl Iterator<Item = (MethodId, Weight)> + '_> {
        let list = self.list_of(metric)?;
        let link = move |id: u32| {
            let counter = &self.counters[id as usize];
            metric.event_index().map_or(counter.link, |event| counter.event_links[event])
        };
        Some(list.iter(link).map(|id| (MethodId(id), self.counters[id as usize].weight)))
    }

    /// Every method with a nonzero weight, unordered.
    pub(crate) fn all(&self) -> impl Iterator<Item = (MethodId, Weight)> + '_ {
        self.counters
            .iter()
            .enumerate()
            .filter(|(_, counter)| !counter.weight.is_zero())
            .map(|(index, counter)| (MethodId(index as u32), counter.weight))
    }

    /// Methods the list sorted by `metric` holds (0 when there is none).
    pub(crate) fn listed(&self, metric: Metric) -> usize {
        self.list_of(metric).map_or(0, HotList::len)
    }

    /// Whether a list is sorted by `metric`.
    pub(crate) fn has_list(&self, metric: Metric) -> bool {
        self.list_of(metric).is_some()
    }

    pub(crate) fn capacity(&self) -> usize {
        self.list.capacity()
    }

    pub(crate) fn clear(&mut self) {
        self.counters.clear();
        self.list.clear();
        self.event_lists.iter_mut().for_each(HotList::clear);
    }
}
