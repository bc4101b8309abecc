//! Windows: what a tree recorded between two moments, as a tree of its own.
//!
//! Within one purge epoch a tree only grows: nodes are appended (their ids
//! never change) and weights only rise. So a window needs, at its start,
//! only a copy of every node's self and edge weight ([`WindowStart`]: 48
//! bytes a node for the time resources, and 32 more for each allocation or
//! monitor site's event weights; an O(nodes) copy that is the only work
//! done under the profile lock), and at its end the tree itself: each node's weight in
//! the window is its end weight minus its start weight (zero for nodes
//! made since). [`window`] builds the tree of the window's contexts from
//! those differences, so every exporter (pprof, collapsed stacks, flame
//! graphs, reports) reads a window as it reads a whole profile, and the
//! windows of consecutive intervals add up to the profile's growth.
//!
//! A purge (or a new tree: a mode change) between the start and the end
//! cuts the window: the nodes' ids no longer mean the same contexts, and
//! what was recorded before the purge is gone. The window then holds what
//! the tree recorded since the purge, and says so ([`Window::restarted`]).
//! In `tree=methods` mode the hot-method counters are differenced instead.

use std::time::Instant;

use crate::error::Result;
use crate::marks::TreeToken;
use crate::method::MethodId;
use crate::slot::NodeId;
use crate::slot::NIL;
use crate::tree::{Pcct, TreeConfig, TreeMode};
use crate::weight::{Metric, TimeWeight, Weight, EVENT_COUNT};
use crate::{BYTES_PER_EVENT_CONTEXT, BYTES_PER_NODE_AND_EDGE};

/// A tree's weights at the start of a window.
#[derive(Clone, Debug)]
pub struct WindowStart {
    token: TreeToken,
    /// (self, edge) weight of every node in the time resources, by node index.
    weights: Vec<(TimeWeight, TimeWeight)>,
    /// The event weights of every site, by its index in the tree's event
    /// side table (which only grows within a purge epoch).
    events: Vec<[u64; EVENT_COUNT]>,
    /// `tree=methods` mode: every method's self weight.
    counters: Vec<(MethodId, Weight)>,
    at: Instant,
}

impl WindowStart {
    /// When the window started.
    pub fn at(&self) -> Instant {
        self.at
    }

    /// Nodes the tree had at the start.
    pub fn nodes(&self) -> usize {
        self.weights.len()
    }

    /// Bytes this start holds (at least [`Pcct::window_start_bytes`]).
    pub fn bytes(&self) -> usize {
        start_bytes(self.weights.capacity(), self.events.capacity(), self.counters.capacity())
    }
}

/// Bytes of a window start holding `nodes` contexts' time weights, `sites`
/// sites' event weights and `counters` method counters.
fn start_bytes(nodes: usize, sites: usize, counters: usize) -> usize {
    nodes * std::mem::size_of::<(TimeWeight, TimeWeight)>()
        + sites * std::mem::size_of::<[u64; EVENT_COUNT]>()
        + counters * std::mem::size_of::<(MethodId, Weight)>()
}

/// The part of a tree recorded in a window.
#[derive(Clone, Debug)]
pub struct Window {
    /// The window's contexts and their weights in the window.
    pub tree: Pcct,
    /// The tree was purged (or replaced) during the window: `tree` holds
    /// only what was recorded since, from [`Window::since`] on.
    pub restarted: bool,
    /// When what `tree` holds began: the window's start, or the purge.
    pub since: Instant,
}

impl Pcct {
    /// The start of a window: a copy of every node's weights (see the
    /// module documentation). O(nodes), no allocation beyond the copy.
    pub fn window_start(&self) -> WindowStart {
        let (weights, events, counters) = match self.config().mode {
            TreeMode::Pcct => (
                self.slots.iter().map(|slot| (slot.node_time, slot.edge_time)).collect(),
                self.events.iter().map(|site| site.node).collect(),
                Vec::new(),
            ),
            TreeMode::HotMethods => (Vec::new(), Vec::new(), self.counters.all().collect()),
        };
        WindowStart { token: self.token, weights, events, counters, at: Instant::now() }
    }

    /// The bytes [`Pcct::window_start`] would copy now (to reserve them
    /// before copying).
    pub fn window_start_bytes(&self) -> usize {
        match self.config().mode {
            TreeMode::Pcct => start_bytes(self.slots.len(), self.events.len(), 0),
            TreeMode::HotMethods => start_bytes(0, 0, self.counters.all().count()),
        }
    }
}

/// What `end` recorded since `start` was taken of the same tree (see the
/// module documentation). `end` is read only; the window's tree is new and
/// as large as the contexts that gained weight.
pub fn window(start: &WindowStart, end: &Pcct) -> Result<Window> {
    let restarted = start.token != end.token;
    let empty =
        WindowStart { token: start.token, weights: Vec::new(), events: Vec::new(), counters: Vec::new(), at: start.at };
    let start = if restarted { &empty } else { start };
    let since = if restarted { end.collecting_since() } else { start.at };
    let tree = match end.config().mode {
        TreeMode::Pcct => contexts_since(start, end)?,
        TreeMode::HotMethods => counters_since(start, end)?,
    };
    Ok(Window { tree, restarted, since })
}

/// The weights of node `index` gained since `start`.
fn gained(start: &WindowStart, end: &Pcct, index: usize) -> (Weight, Weight) {
    let node = NodeId(index as u32);
    let (self_now, edge_now) = (end.node_weight(node), end.edge_weight(node));
    let Some((self_time, edge_time)) = start.weights.get(index) else {
        return (self_now, edge_now);
    };
    let mut self_before = self_time.weight();
    let site = end.slots[index].events;
    // A site made after the start has an index past the start's copy.
    if let Some(events) = (site != NIL).then(|| start.events.get(site as usize)).flatten() {
        for (metric, value) in Metric::EVENTS.into_iter().zip(events) {
            *self_before.get_mut(metric) = *value;
        }
    }
    (self_now.since(&self_before), edge_now.since(&edge_time.weight()))
}

fn contexts_since(start: &WindowStart, end: &Pcct) -> Result<Pcct> {
    let count = end.node_count();
    let gains: Vec<(Weight, Weight)> = (0..count).map(|index| gained(start, end, index)).collect();
    // A context is in the window if it or a descendant gained self weight.
    let mut cum: Vec<Weight> = gains.iter().map(|&(self_weight, _)| self_weight).collect();
    for index in (1..count).rev() {
        let parent = end.slots[index].parent as usize;
        let child = cum[index];
        cum[parent].add(&child);
    }
    let kept = cum.iter().skip(1).filter(|weight| !weight.is_zero()).count();
    let mut tree = Pcct::new(window_config(end.config(), kept))?;
    tree.restore_root_weight(gains[0].0);
    let mut by_method: Vec<Weight> = Vec::new();
    let mut add_self = |method: MethodId, weight: &Weight| {
        let index = method.0 as usize;
        if by_method.len() <= index {
            by_method.resize(index + 1, Weight::ZERO);
        }
        by_method[index].add(weight);
    };
    add_self(end.slots[0].method, &gains[0].0);
    // New ids of the kept nodes (parents come before their children).
    let mut new_ids: Vec<NodeId> = vec![NodeId::ROOT; count];
    for index in 1..count {
        if cum[index].is_zero() {
            continue;
        }
        let slot = &end.slots[index];
        let parent = new_ids[slot.parent as usize];
        let recursive = !slot.is_outermost();
        let node = tree
            .restore_node(parent, (slot.method, slot.kind()), slot.call_site, gains[index], recursive)
            .expect("the window's arena holds every kept node");
        new_ids[index] = node;
        add_self(slot.method, &gains[index].0);
    }
    for (index, weight) in by_method.iter().enumerate().filter(|(_, weight)| !weight.is_zero()) {
        tree.restore_counter(MethodId(index as u32), *weight);
    }
    tree.restore_method_totals();
    Ok(tree)
}

fn counters_since(start: &WindowStart, end: &Pcct) -> Result<Pcct> {
    let mut tree = Pcct::new(window_config(end.config(), 0))?;
    let before: std::collections::HashMap<MethodId, Weight> = start.counters.iter().copied().collect();
    for (method, weight) in end.counters.all() {
        let gained = weight.since(before.get(&method).unwrap_or(&Weight::ZERO));
        if !gained.is_zero() {
            tree.restore_counter(method, gained);
        }
    }
    tree.restore_method_totals();
    Ok(tree)
}

/// The configuration of a window's tree of `nodes` contexts (besides the
/// root): the source's, with an arena just large enough.
fn window_config(source: &TreeConfig, nodes: usize) -> TreeConfig {
    TreeConfig {
        // Room for each context to be a site too.
        arena_bytes: (nodes + 16) * (BYTES_PER_NODE_AND_EDGE + BYTES_PER_EVENT_CONTEXT),
        walk_limit: None,
        purge_period: None,
        ..source.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::{collapsed, json};
    use crate::{Frame, Marks, MethodTable, Metric};

    fn stacks(tree: &Pcct, methods: &MethodTable) -> std::collections::BTreeMap<Vec<String>, u64> {
        let mut map = std::collections::BTreeMap::new();
        for (frames, value) in collapsed::parse(&collapsed::write(tree, methods, Metric::Samples)).unwrap() {
            *map.entry(frames).or_insert(0) += value;
        }
        map
    }

    fn record(tree: &mut Pcct, marks: &mut Marks, stacks: &[&[(MethodId, i32)]]) {
        for stack in stacks {
            let frames: Vec<Frame> = stack.iter().map(|&(method, bci)| Frame::new(method, bci)).collect();
            tree.record(marks, &frames, Weight::sample(10, 20)).unwrap();
        }
    }

    #[test]
    fn a_window_holds_exactly_what_was_recorded_in_it() {
        let mut methods = MethodTable::new();
        let [a, b, c] = ["a", "b", "c"].map(|name| methods.intern("T", name, "()V"));
        let mut tree = Pcct::new(TreeConfig::default()).unwrap();
        let mut marks = Marks::new();
        record(&mut tree, &mut marks, &[&[(a, 1), (b, 0)], &[(a, 2), (c, 0)], &[(a, 0)]]);
        let start = tree.window_start();
        assert_eq!(start.nodes(), tree.node_count());
        let before = tree.clone();
        record(&mut tree, &mut marks, &[&[(a, 1), (b, 0)], &[(a, 1), (b, 0)], &[(a, 3), (b, 0), (c, 5)], &[]]);
        let window = window(&start, &tree).unwrap();
        assert!(!window.restarted);
        assert_eq!(window.since, start.at());
        let mut expected = stacks(&tree, &methods);
        for (frames, value) in stacks(&before, &methods) {
            let entry = expected.get_mut(&frames).unwrap();
            *entry -= value;
        }
        expected.retain(|_, value| *value > 0);
        assert_eq!(stacks(&window.tree, &methods), expected);
        assert_eq!(window.tree.total().samples, 4);
        assert_eq!(window.tree.method_self_weight(b).samples, 2);
        assert_eq!(window.tree.method_summary(a).total.samples, 3);
        // The window's tree is a whole tree: JSON round-trips it.
        let text = json::write(&window.tree, &methods);
        let (again, _) = json::import(&json::parse(&text).unwrap()).unwrap();
        assert_eq!(again.total(), window.tree.total());
    }

    #[test]
    fn a_window_holds_the_allocations_and_monitor_waits_recorded_in_it() {
        let mut methods = MethodTable::new();
        let [a, b, bytes, lock] = ["a", "b", "[B", "Lock"].map(|name| methods.intern("T", name, "()V"));
        let mut tree = Pcct::new(TreeConfig::default()).unwrap();
        let alloc = |tree: &mut Pcct, size: u64| {
            tree.record_event(&[Frame::new(a, 1), Frame::new(b, 2), Frame::new(bytes, -1)], Weight::allocation(size, 1))
        };
        alloc(&mut tree, 1000).unwrap();
        tree.record_event(&[Frame::new(a, 4), Frame::new(lock, -1)], Weight::lock_wait(500)).unwrap();
        let start = tree.window_start();
        assert_eq!(tree.window_start_bytes(), start.bytes());
        alloc(&mut tree, 300).unwrap();
        // A site new in the window.
        tree.record_event(&[Frame::new(b, 9), Frame::new(lock, -1)], Weight::lock_wait(70)).unwrap();
        let window = window(&start, &tree).unwrap();
        let total = window.tree.total();
        assert_eq!((total.alloc_bytes, total.alloc_objects), (300, 1));
        assert_eq!((total.lock_wait_ns, total.lock_enters), (70, 1));
        assert_eq!(window.tree.method_self_weight(bytes).alloc_bytes, 300);
        assert_eq!(window.tree.method_self_weight(lock).lock_wait_ns, 70);
        assert_eq!(stacks(&window.tree, &methods).len(), 0, "no samples in the window");
    }

    #[test]
    fn a_purge_during_a_window_is_said_and_what_followed_is_kept() {
        let mut methods = MethodTable::new();
        let a = methods.intern("T", "a", "()V");
        let mut tree = Pcct::new(TreeConfig::default()).unwrap();
        let mut marks = Marks::new();
        record(&mut tree, &mut marks, &[&[(a, 0)]]);
        let start = tree.window_start();
        tree.purge();
        record(&mut tree, &mut marks, &[&[(a, 0)], &[(a, 0)]]);
        let window = window(&start, &tree).unwrap();
        assert!(window.restarted);
        assert_eq!(window.since, tree.collecting_since());
        assert_eq!(window.tree.total().samples, 2);
        // A window across a new tree (a mode change) is restarted too.
        let other = Pcct::new(TreeConfig::default()).unwrap();
        assert!(super::window(&start, &other).unwrap().restarted);
    }

    #[test]
    fn methods_mode_windows_difference_the_counters() {
        let mut methods = MethodTable::new();
        let [a, b] = ["a", "b"].map(|name| methods.intern("T", name, "()V"));
        let config = TreeConfig { mode: TreeMode::HotMethods, ..TreeConfig::default() };
        let mut tree = Pcct::new(config).unwrap();
        let mut marks = Marks::new();
        record(&mut tree, &mut marks, &[&[(a, 0)], &[(b, 0)]]);
        let start = tree.window_start();
        record(&mut tree, &mut marks, &[&[(a, 0)], &[(a, 0)]]);
        let window = window(&start, &tree).unwrap();
        assert_eq!(window.tree.method_self_weight(a).samples, 2);
        assert_eq!(window.tree.method_self_weight(b).samples, 0);
        assert_eq!(window.tree.total().samples, 2);
        assert_eq!(window.tree.method_summary(a).total.samples, 2);
    }
}
