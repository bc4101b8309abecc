//! The partial calling context tree and its update algorithm (Whaley
//! Figure 7, adapted to stacks that arrive whole; see the crate docs).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{PcctError, Result};
use crate::frame::{Frame, FrameKind, NO_BCI};
use crate::hot_list::{HotList, RankedStore};
use crate::marks::{Marks, TreeToken};
use crate::method::{Builtin, MethodId};
use crate::method_counters::MethodCounters;
use crate::slot::{EventSlot, Link, NodeId, Slot, BYTES_PER_EVENT_CONTEXT, BYTES_PER_NODE_AND_EDGE, NIL};
use crate::top_set::TopSet;
use crate::weight::{Metric, Weight, EVENT_COUNT};

/// What the tree records for each sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TreeMode {
    /// The full PCCT: contexts, edges and hot-method counters.
    #[default]
    Pcct,
    /// Only the hot-method counters of Figure 12 (depth zero, one counter per
    /// method); the tree stays a bare root.
    HotMethods,
}

impl TreeMode {
    pub fn name(self) -> &'static str {
        match self {
            TreeMode::Pcct => "pcct",
            TreeMode::HotMethods => "hot-methods",
        }
    }
}

/// What to do when a sample needs a node and the arena is full.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FullPolicy {
    /// Drop the sample (counted in [`TreeStats::dropped_full`]); samples of
    /// contexts already in the tree are still recorded.
    #[default]
    Drop,
    /// Purge the whole tree and record the sample into the empty tree
    /// (counted in [`TreeStats::purges_full`]).
    Purge,
}

/// Construction parameters of a [`Pcct`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TreeConfig {
    pub mode: TreeMode,
    /// The time resource the hot lists are sorted by (the event resources
    /// have hot lists of their own).
    pub metric: Metric,
    /// Upper bound of the arena in bytes (nodes with their edges, and the
    /// event weights of the contexts that have any).
    pub arena_bytes: usize,
    /// How many elements each hot list keeps in order.
    pub hot_list_capacity: usize,
    /// Whaley's BUFSIZE: the most new frames one update may add. When more
    /// frames are new, the leaf-most `walk_limit` frames are hung under an
    /// unattached root (Figure 10). `None`: unbounded.
    pub walk_limit: Option<usize>,
    pub full_policy: FullPolicy,
    /// Purge the tree when this much time passed since the last purge
    /// (checked by [`Pcct::purge_if_due`]).
    pub purge_period: Option<Duration>,
}

impl Default for TreeConfig {
    fn default() -> Self {
        TreeConfig {
            mode: TreeMode::Pcct,
            metric: Metric::CpuNs,
            arena_bytes: 64 << 20,
            hot_list_capacity: 1024,
            walk_limit: None,
            full_policy: FullPolicy::Drop,
            purge_period: None,
        }
    }
}

impl TreeConfig {
    /// Number of nodes (with their edges) the arena holds, root included.
    pub fn max_nodes(&self) -> usize {
        (self.arena_bytes / BYTES_PER_NODE_AND_EDGE).clamp(1, u32::MAX as usize - 2)
    }

    pub fn validate(&self) -> Result<()> {
        if self.arena_bytes < 16 * BYTES_PER_NODE_AND_EDGE {
            return Err(PcctError::ArenaTooSmall { bytes: self.arena_bytes, minimum: 16 * BYTES_PER_NODE_AND_EDGE });
        }
        if self.walk_limit == Some(0) {
            return Err(PcctError::WalkLimitZero);
        }
        if self.metric.is_event() {
            return Err(PcctError::EventMetric { metric: self.metric.name() });
        }
        Ok(())
    }
}

/// Counters of what the tree did with the samples it was given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TreeStats {
    /// Purges done, for any reason.
    pub purges: u64,
    /// Purges forced by a full arena under [`FullPolicy::Purge`].
    pub purges_full: u64,
    /// Samples dropped because the arena was full (since the tree was made).
    pub dropped_full: u64,
    /// Samples whose new frames exceeded the walk limit (Figure 10).
    pub unattached: u64,
    /// Nodes created since the tree was made.
    pub nodes_created: u64,
}

/// Result of recording one sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// The node of the sample's leaf frame.
    pub leaf: NodeId,
    /// Frames that were not still marked (edges that received weight).
    pub new_frames: usize,
    /// Nodes this sample created.
    pub created: usize,
}

/// Why a sample was not recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Dropped {
    #[error("the arena is full")]
    ArenaFull,
}

static NEXT_TREE: AtomicU64 = AtomicU64::new(1);

/// A partial calling context tree (see the crate docs).
#[derive(Clone, Debug)]
pub struct Pcct {
    config: TreeConfig,
    pub(crate) slots: Vec<Slot>,
    /// Event weights of the contexts that have any ([`Slot::events`]):
    /// grown as needed, its bytes counted against the arena's limit.
    pub(crate) events: Vec<EventSlot>,
    max_nodes: usize,
    hot_nodes: HotList,
    hot_edges: HotList,
    /// Contexts by self weight in each of [`Metric::EVENTS`] (the sites of
    /// allocations and monitors), threaded through `events`.
    event_nodes: [TopSet; EVENT_COUNT],
    /// Throwaway marks for events ([`Pcct::record_event`]).
    scratch: Marks,
    pub(crate) counters: MethodCounters,
    total: Weight,
    pub(crate) token: TreeToken,
    stats: TreeStats,
    last_purge: Instant,
}

struct NodeRank<'a> {
    slots: &'a mut [Slot],
    metric: Metric,
}

impl RankedStore for NodeRank<'_> {
    fn key(&self, id: u32) -> u64 {
        self.slots[id as usize].node_time.get(self.metric)
    }
    fn link(&self, id: u32) -> Link {
        self.slots[id as usize].node_link
    }
    fn link_mut(&mut self, id: u32) -> &mut Link {
        &mut self.slots[id as usize].node_link
    }
}

struct EdgeRank<'a> {
    slots: &'a mut [Slot],
    metric: Metric,
}

impl RankedStore for EdgeRank<'_> {
    fn key(&self, id: u32) -> u64 {
        self.slots[id as usize].edge_time.get(self.metric)
    }
    fn link(&self, id: u32) -> Link {
        self.slots[id as usize].edge_link
    }
    fn link_mut(&mut self, id: u32) -> &mut Link {
        &mut self.slots[id as usize].edge_link
    }
}

/// Contexts ranked by their self weight in one event resource.
impl Pcct {
    /// An empty tree. The whole arena is reserved up front, so recording
    /// never reallocates it (and never pauses to copy it; only the small
    /// side table of sites grows as they appear).
    pub fn new(config: TreeConfig) -> Result<Pcct> {
        config.validate()?;
        let max_nodes = config.max_nodes();
        let mut slots = Vec::new();
        slots.try_reserve_exact(max_nodes).map_err(|_| PcctError::ArenaAllocation { bytes: config.arena_bytes })?;
        slots.push(Slot::new(NIL, Builtin::Root.id(), NO_BCI, 0, false));
        // The event side table grows as sites appear (they are few; growing
        // it copies them, not the arena), within the arena's limit.
        let events = Vec::new();
        let token = TreeToken { tree: NEXT_TREE.fetch_add(1, Ordering::Relaxed), epoch: 1 };
        Ok(Pcct {
            hot_nodes: HotList::new(config.hot_list_capacity),
            hot_edges: HotList::new(config.hot_list_capacity),
            event_nodes: std::array::from_fn(|_| TopSet::new(config.hot_list_capacity)),
            counters: MethodCounters::new(config.metric, config.hot_list_capacity),
            config,
            slots,
            events,
            scratch: Marks::new(),
            max_nodes,
            total: Weight::ZERO,
            token,
            stats: TreeStats::default(),
            last_purge: Instant::now(),
        })
    }

    pub fn config(&self) -> &TreeConfig {
        &self.config
    }

    pub fn stats(&self) -> TreeStats {
        self.stats
    }

    /// Sum of the weights of all recorded samples since the last purge.
    pub fn total(&self) -> Weight {
        self.total
    }

    /// Nodes in the tree, root included.
    pub fn node_count(&self) -> usize {
        self.slots.len()
    }

    /// Edges in the tree (every node but the root has one incoming edge).
    pub fn edge_count(&self) -> usize {
        self.slots.len() - 1
    }

    /// Bytes of the arena in use: nodes with their edges, and the event
    /// weights of the contexts that have any.
    pub fn arena_used(&self) -> usize {
        self.slots.len() * BYTES_PER_NODE_AND_EDGE + self.events.len() * BYTES_PER_EVENT_CONTEXT
    }

    /// Contexts with event weights of their own (allocation and monitor sites).
    pub fn event_contexts(&self) -> usize {
        self.events.len()
    }

    /// Whether `nodes` more nodes and `events` more event contexts fit.
    fn fits(&self, nodes: usize, events: usize) -> bool {
        let needed = nodes * BYTES_PER_NODE_AND_EDGE + events * BYTES_PER_EVENT_CONTEXT;
        self.arena_used() + needed <= self.arena_limit() && self.slots.len() + nodes <= self.max_nodes
    }

    /// Bytes the arena may grow to.
    pub fn arena_limit(&self) -> usize {
        self.max_nodes * BYTES_PER_NODE_AND_EDGE
    }

    /// Purge generation: grows by one at every purge.
    pub fn epoch(&self) -> u64 {
        self.token.epoch
    }

    /// Clears the profile ("to purge the profile data, we simply clear the
    /// buffer"). Every thread's marks become stale and are ignored.
    pub fn purge(&mut self) {
        self.slots.truncate(1);
        self.slots[0] = Slot::new(NIL, Builtin::Root.id(), NO_BCI, 0, false);
        self.events.clear();
        self.hot_nodes.clear();
        self.hot_edges.clear();
        self.event_nodes.iter_mut().for_each(TopSet::clear);
        self.counters.clear();
        self.total = Weight::ZERO;
        self.token.epoch += 1;
        self.stats.purges += 1;
        self.last_purge = Instant::now();
    }

    /// When the profile began: the last purge, or the tree's creation.
    pub fn collecting_since(&self) -> Instant {
        self.last_purge
    }

    /// Purges when the configured period has passed since the last purge.
    pub fn purge_if_due(&mut self, now: Instant) -> bool {
        match self.config.purge_period {
            Some(period) if now.saturating_duration_since(self.last_purge) >= period => {
                self.purge();
                true
            }
            _ => false,
        }
    }

    /// Records one sample of a thread: `stack` is root first, `marks` are the
    /// thread's marked frames and are updated to `stack`.
    pub fn record(
        &mut self,
        marks: &mut Marks,
        stack: &[Frame],
        weight: Weight,
    ) -> std::result::Result<Recorded, Dropped> {
        let result = self.try_record(marks, stack, &weight);
        match result {
            Err(Dropped::ArenaFull) if self.config.full_policy == FullPolicy::Purge => {
                self.purge();
                self.stats.purges_full += 1;
                let retried = self.try_record(marks, stack, &weight);
                if retried.is_err() {
                    self.stats.dropped_full += 1;
                }
                retried
            }
            Err(Dropped::ArenaFull) => {
                self.stats.dropped_full += 1;
                Err(Dropped::ArenaFull)
            }
            ok => ok,
        }
    }

    /// Records one event (a sampled allocation, a contended monitor enter)
    /// with its whole stack, root first, whose leaf is the event's class
    /// (the allocated type, the monitor's class). Throwaway marks are used:
    /// every frame counts as new and no thread's marks are disturbed. The
    /// weight normally holds event resources only.
    pub fn record_event(&mut self, stack: &[Frame], weight: Weight) -> std::result::Result<Recorded, Dropped> {
        let mut marks = std::mem::take(&mut self.scratch);
        marks.clear();
        let recorded = self.record(&mut marks, stack, weight);
        self.scratch = marks;
        recorded
    }

    /// Records one event as [`Pcct::record_event`] does, to the same
    /// context with the same weights, but starts from `near`: the marks of
    /// the event's thread at its last sample. The frames the event's stack
    /// shares with them (usually all but the last few) lead to their nodes
    /// without a search from the root, which on a deep stack in a wide tree
    /// costs far more than the rest of the update. `near` itself is not
    /// changed (it goes on weighing the thread's samples); marks of another
    /// tree or purge, or off a rooted path, are not used.
    pub fn record_event_near(
        &mut self,
        near: &Marks,
        stack: &[Frame],
        weight: Weight,
    ) -> std::result::Result<Recorded, Dropped> {
        let mut marks = std::mem::take(&mut self.scratch);
        if near.token == self.token && near.rooted {
            marks.clone_from(near);
        } else {
            marks.clear();
        }
        let recorded = self.record(&mut marks, stack, weight);
        self.scratch = marks;
        recorded
    }

    /// Records one event as [`Pcct::record_event`] does, to the same
    /// context with the same weights, through `marks`: the marks of its
    /// thread's previous *event* (Whaley's marked frames for a thread's
    /// events, which share more of their stacks with each other than with
    /// its samples), updated to this event. Marks of another tree or from
    /// before a purge start from `near` (the thread's sample marks) when
    /// those are current, else from the root.
    pub fn record_event_marked(
        &mut self,
        marks: &mut Marks,
        near: Option<&Marks>,
        stack: &[Frame],
        weight: Weight,
    ) -> std::result::Result<Recorded, Dropped> {
        if marks.token != self.token || !marks.rooted {
            match near.filter(|near| near.token == self.token && near.rooted) {
                Some(near) => marks.clone_from(near),
                None => marks.clear(),
            }
        }
        self.record(marks, stack, weight)
    }

    /// Credits `weight` to the leaf of the thread's previous sample without
    /// walking (wall-clock mode, for a thread that has not run). Returns
    /// `false` when the marks are stale or empty.
    pub fn record_at_marked_leaf(&mut self, marks: &Marks, weight: Weight) -> bool {
        if self.config.mode == TreeMode::HotMethods {
            return match marks.frames.last() {
                Some(leaf) if marks.token == self.token => {
                    self.add_totals(leaf.method, &weight);
                    true
                }
                _ => false,
            };
        }
        if marks.token != self.token {
            return false;
        }
        match (marks.leaf_node(), marks.frames.last()) {
            (Some(node), Some(leaf)) if (node as usize) < self.slots.len() => {
                self.add_node_weight(node, &weight);
                self.add_totals(leaf.method, &weight);
                self.add_path_totals(marks, node, &weight);
                true
            }
            _ => false,
        }
    }

    /// Adds `weight`'s event resources at `node`, a context events were
    /// recorded to, as one more event there would: to the node, to its
    /// method's self and to the total of every method on its path, once
    /// each. For a copy of the profile that gets resources the profile
    /// itself never holds (the live heap, whose weights shrink when objects
    /// die); the copy's weights still only grow while they are added.
    /// `false` if `node` is not in this tree (a purge came between) or the
    /// tree keeps no contexts (hot-methods mode), or `weight` holds time.
    pub fn add_event_at(&mut self, node: NodeId, weight: &Weight) -> bool {
        if self.config.mode == TreeMode::HotMethods || !self.contains(node) || weight.has_time() || node.index() == 0 {
            return false;
        }
        self.add_node_weight(node.0, weight);
        self.add_totals(self.slots[node.index()].method, weight);
        self.add_totals_walking_up(node.0, weight);
        true
    }

    /// Adds a sample's weight to the total of every method on the path to
    /// `leaf`, once each: the outermost activations the marks list, or, off
    /// a rooted path (under an unattached root), those found by walking up.
    #[inline]
    fn add_path_totals(&mut self, marks: &Marks, leaf: u32, weight: &Weight) {
        if leaf == 0 {
            self.counters.add_total(Builtin::Root.id(), weight);
        } else if marks.rooted {
            self.counters.add_totals_of(&marks.outermost, weight);
        } else {
            self.add_totals_walking_up(leaf, weight);
        }
    }

    /// Adds `weight` to the total of every outermost activation from
    /// `leaf` up to the root, found by walking the parents.
    fn add_totals_walking_up(&mut self, leaf: u32, weight: &Weight) {
        let mut node = leaf;
        while node != 0 && node != NIL {
            let slot = &self.slots[node as usize];
            let (method, parent, outermost) = (slot.method, slot.parent, slot.is_outermost());
            if outermost {
                self.counters.add_total(method, weight);
            }
            node = parent;
        }
    }

    #[inline]
    fn add_totals(&mut self, leaf_method: MethodId, weight: &Weight) {
        self.total.add(weight);
        self.counters.add(leaf_method, weight);
    }

    #[inline]
    fn add_node_weight(&mut self, node: u32, weight: &Weight) {
        if weight.has_time() {
            let old = self.slots[node as usize].node_time.get(self.config.metric);
            self.slots[node as usize].node_time.add(weight);
            let mut rank = NodeRank { slots: &mut self.slots, metric: self.config.metric };
            self.hot_nodes.raised(&mut rank, node, old);
        }
        if weight.has_events() {
            self.add_node_events(node, weight);
        }
    }

    /// Adds `weight`'s event resources to `node`'s (given a place in the
    /// side table on its first event; the caller checked that it fits) and
    /// re-sorts it in each event's hot-node list the event changed.
    fn add_node_events(&mut self, node: u32, weight: &Weight) {
        if self.slots[node as usize].events == NIL {
            self.slots[node as usize].events = self.events.len() as u32;
            self.events.push(EventSlot::EMPTY);
        }
        let index = self.slots[node as usize].events as usize;
        for (event, value) in weight.events().into_iter().enumerate() {
            if value == 0 {
                continue;
            }
            let old = self.events[index].node[event];
            let key = old.saturating_add(value);
            self.events[index].node[event] = key;
            self.event_nodes[event].raised(node, old, key);
        }
    }

    #[inline]
    fn add_edge_weight(&mut self, node: u32, weight: &Weight) {
        if !weight.has_time() {
            return; // an edge's event weight is its context's cum: not stored
        }
        let old = self.slots[node as usize].edge_time.get(self.config.metric);
        self.slots[node as usize].edge_time.add(weight);
        let mut rank = EdgeRank { slots: &mut self.slots, metric: self.config.metric };
        self.hot_edges.raised(&mut rank, node, old);
    }

    fn try_record(
        &mut self,
        marks: &mut Marks,
        stack: &[Frame],
        weight: &Weight,
    ) -> std::result::Result<Recorded, Dropped> {
        let leaf_method = stack.last().map_or(Builtin::Root.id(), |frame| frame.method);
        if self.config.mode == TreeMode::HotMethods {
            marks.token = self.token;
            marks.frames.clear();
            marks.nodes.clear();
            if let Some(&leaf) = stack.last() {
                marks.frames.push(leaf);
                marks.nodes.push(NIL);
            }
            self.add_totals(leaf_method, weight);
            // Depth zero: a method's total is its self weight.
            self.counters.add_total(leaf_method, weight);
            return Ok(Recorded { leaf: NodeId::ROOT, new_frames: stack.len().min(1), created: 0 });
        }

        // Upward phase: find the deepest still-marked frame that has a node.
        let marked = if marks.token == self.token { marks.still_marked(stack) } else { 0 };
        let anchor = marks.nodes[..marked].iter().rposition(|&node| node != NIL);
        let (mut node, mut first_new) = match anchor {
            Some(index) => (marks.nodes[index], index + 1),
            None => (0, 0),
        };
        // Whether the frames above `first_new` are the tree path to `node`
        // (not so when the anchor hangs under an unattached root).
        let rooted = anchor.is_none() || marks.rooted;

        // Bounded walk: too many new frames leaves the profile point
        // unattached. Events (which carry no time) come with their whole
        // stack and are recorded whole: the bound is the sampler's cost of
        // walking, which they do not have.
        let mut unattached = false;
        if let Some(limit) = self.config.walk_limit.filter(|_| weight.has_time()) {
            if stack.len() - first_new > limit {
                unattached = true;
                first_new = stack.len() - limit;
            }
        }

        let new_frames = stack.len() - first_new;
        let events = usize::from(weight.has_events());
        if !self.fits(new_frames + 2, events) && !self.path_fits(node, stack, first_new, unattached, events > 0) {
            return Err(Dropped::ArenaFull);
        }

        if unattached {
            self.stats.unattached += 1;
            let holder = self.child(0, NO_BCI, Frame::new(Builtin::Unattached.id(), NO_BCI), true, None).0;
            node = self.child(holder, NO_BCI, stack[first_new - 1], true, None).0;
        }

        // Keep the marks that still hold, drop the rest; record the new ones.
        let keep = if unattached { 0 } else { first_new };
        marks.token = self.token;
        marks.truncate(keep);
        if keep > 0 {
            marks.frames[keep - 1] = stack[keep - 1];
        } else if unattached {
            marks.frames.extend_from_slice(&stack[..first_new]);
            marks.nodes.extend(std::iter::repeat_n(NIL, first_new));
            let last = marks.nodes.len() - 1;
            marks.nodes[last] = node;
        }

        // Downward phase.
        let rooted = !unattached && rooted;
        let mut searching = true;
        let mut created = 0;
        for index in first_new..stack.len() {
            let call_site = if index == 0 { NO_BCI } else { stack[index - 1].bci };
            // On a rooted path the ancestors of this frame are exactly the
            // frames above it, which makes the recursion check cheap.
            let ancestors = rooted.then(|| &stack[..index]);
            let (child, was_created) = self.child(node, call_site, stack[index], searching, ancestors);
            if was_created {
                searching = false;
                created += 1;
            }
            self.add_edge_weight(child, weight);
            marks.frames.push(stack[index]);
            marks.nodes.push(child);
            if rooted && self.slots[child as usize].is_outermost() {
                marks.outermost.push((index as u32, stack[index].method));
            }
            node = child;
        }
        marks.rooted = rooted;
        self.add_node_weight(node, weight);
        self.add_totals(leaf_method, weight);
        self.add_path_totals(marks, node, weight);
        Ok(Recorded { leaf: NodeId(node), new_frames, created })
    }

    /// Whether everything a sample needs below `node` exists already:
    /// every node, and the leaf's event weights when `events`.
    fn path_fits(&self, mut node: u32, stack: &[Frame], first_new: usize, unattached: bool, events: bool) -> bool {
        if unattached {
            let unattached = Frame::new(Builtin::Unattached.id(), NO_BCI);
            let Some(holder) = self.find_child(0, NO_BCI, unattached) else { return false };
            let Some(root) = self.find_child(holder, NO_BCI, stack[first_new - 1]) else { return false };
            node = root;
        }
        for index in first_new..stack.len() {
            let call_site = if index == 0 { NO_BCI } else { stack[index - 1].bci };
            match self.find_child(node, call_site, stack[index]) {
                Some(child) => node = child,
                None => return false,
            }
        }
        !events || self.slots[node as usize].events != NIL || self.fits(0, 1)
    }

    /// The child of `parent` through `call_site` to `callee`'s method and
    /// kind (its bci is not part of the edge).
    fn find_child(&self, parent: u32, call_site: i32, callee: Frame) -> Option<u32> {
        let mut child = self.slots[parent as usize].first_child;
        while child != NIL {
            let slot = &self.slots[child as usize];
            if slot.is_call_to(call_site, callee) {
                return Some(child);
            }
            child = slot.next_sibling;
        }
        None
    }

    /// The child of `parent` through `call_site` to `callee`'s method and
    /// kind, created if
    /// absent (`search == false`: known absent, create at once). A found
    /// child moves to the front of its siblings, so hot edges are found first.
    /// `ancestors`, when given, are the frames of the path to `parent`, used
    /// to flag recursion without walking the tree.
    #[inline]
    fn child(
        &mut self,
        parent: u32,
        call_site: i32,
        callee: Frame,
        search: bool,
        ancestors: Option<&[Frame]>,
    ) -> (u32, bool) {
        if search {
            let mut previous = NIL;
            let mut child = self.slots[parent as usize].first_child;
            while child != NIL {
                let slot = &self.slots[child as usize];
                let next = slot.next_sibling;
                if slot.is_call_to(call_site, callee) {
                    if previous != NIL {
                        self.slots[previous as usize].next_sibling = next;
                        self.slots[child as usize].next_sibling = self.slots[parent as usize].first_child;
                        self.slots[parent as usize].first_child = child;
                    }
                    return (child, false);
                }
                previous = child;
                child = next;
            }
        }
        let recursive = match ancestors {
            Some(frames) => frames.iter().any(|frame| frame.method == callee.method),
            None => self.has_ancestor(parent, callee.method),
        };
        (self.push_child(parent, call_site, callee, recursive), true)
    }

    /// Adds a new child of `parent`; `recursive`: an ancestor has `callee`'s method.
    fn push_child(&mut self, parent: u32, call_site: i32, callee: Frame, recursive: bool) -> u32 {
        let id = self.slots.len() as u32;
        let depth = self.slots[parent as usize].depth() + 1;
        let mut slot = Slot::new(parent, callee.method, call_site, depth, recursive).with_kind(callee.kind);
        slot.next_sibling = self.slots[parent as usize].first_child;
        self.slots.push(slot);
        self.slots[parent as usize].first_child = id;
        self.stats.nodes_created += 1;
        self.counters.add_context(callee.method);
        id
    }

    /// Adds a node under `parent` with the given weights, as an import of a
    /// written profile does (no marks, no search: the caller guarantees the
    /// node is new, and says whether an ancestor has `method`, which it can
    /// know in O(1) where walking up would cost the depth). Hot lists are
    /// kept sorted; counters are not touched.
    pub(crate) fn restore_node(
        &mut self,
        parent: NodeId,
        (method, kind): (MethodId, FrameKind),
        call_site: i32,
        (self_weight, edge_weight): (Weight, Weight),
        recursive: bool,
    ) -> std::result::Result<NodeId, Dropped> {
        if !self.fits(1, usize::from(self_weight.has_events())) {
            return Err(Dropped::ArenaFull);
        }
        let node = self.push_child(parent.0, call_site, Frame::with_kind(method, NO_BCI, kind), recursive);
        if !edge_weight.is_zero() {
            self.add_edge_weight(node, &edge_weight);
        }
        if !self_weight.is_zero() {
            self.add_node_weight(node, &self_weight);
        }
        Ok(NodeId(node))
    }

    /// Restores the root's self weight and a method's counter (import).
    pub(crate) fn restore_root_weight(&mut self, weight: Weight) {
        if !weight.is_zero() && self.fits(0, usize::from(weight.has_events())) {
            self.add_node_weight(0, &weight);
        }
    }

    pub(crate) fn restore_counter(&mut self, method: MethodId, weight: Weight) {
        self.add_totals(method, &weight);
    }

    /// Sets every method's total and context count from the tree itself
    /// (after an import, which restores nodes and counters only).
    pub(crate) fn restore_method_totals(&mut self) {
        for entry in self.method_totals() {
            self.counters.restore_total(entry.method, entry.total, entry.contexts as u32);
        }
    }

    /// Whether `node` or one of its ancestors has `method`.
    fn has_ancestor(&self, mut node: u32, method: MethodId) -> bool {
        while node != NIL {
            let slot = &self.slots[node as usize];
            if slot.method == method && node != 0 {
                return true;
            }
            node = slot.parent;
        }
        false
    }

    // ----- read access used by queries and exports -----

    pub(crate) fn slot(&self, node: NodeId) -> &Slot {
        &self.slots[node.index()]
    }

    /// Whether `node` exists in this tree (ids die at purges).
    pub fn contains(&self, node: NodeId) -> bool {
        node.index() < self.slots.len()
    }

    pub fn method(&self, node: NodeId) -> MethodId {
        self.slot(node).method
    }

    /// Bytecode index in the parent of the call into `node` (`NO_BCI` for
    /// children of the root).
    pub fn call_site(&self, node: NodeId) -> i32 {
        self.slot(node).call_site
    }

    /// How the context's method ran ([`FrameKind::Unknown`] unless the
    /// samples said).
    pub fn kind(&self, node: NodeId) -> FrameKind {
        self.slot(node).kind()
    }

    pub fn depth(&self, node: NodeId) -> usize {
        self.slot(node).depth() as usize
    }

    /// Whether `node` is an outermost activation of its method (no ancestor
    /// has the same method).
    pub fn is_outermost(&self, node: NodeId) -> bool {
        self.slot(node).is_outermost()
    }

    pub fn parent(&self, node: NodeId) -> Option<NodeId> {
        let parent = self.slot(node).parent;
        (parent != NIL).then_some(NodeId(parent))
    }

    /// Self weight of the context (Whaley's node weight), every resource.
    pub fn node_weight(&self, node: NodeId) -> Weight {
        let slot = self.slot(node);
        let mut weight = slot.node_time.weight();
        if slot.events != NIL {
            let events = &self.events[slot.events as usize].node;
            for (event, value) in Metric::EVENTS.into_iter().zip(events) {
                *weight.get_mut(event) = *value;
            }
        }
        weight
    }

    /// Self weight of the context in one resource.
    pub fn node_value(&self, node: NodeId, metric: Metric) -> u64 {
        let slot = self.slot(node);
        match metric.event_index() {
            None => slot.node_time.get(metric),
            Some(_) if slot.events == NIL => 0,
            Some(event) => self.events[slot.events as usize].node[event],
        }
    }

    /// Weight of the edge into `node` in the time resources (samples in
    /// which the call was new). Its event resources are zero here: every
    /// event is recorded with its whole stack, so an edge's weight in an
    /// event resource is the cum of its context ([`Pcct::cumulative`]),
    /// which the exports write in its place ([`Weight::with_events_of`]).
    pub fn edge_weight(&self, node: NodeId) -> Weight {
        self.slot(node).edge_time.weight()
    }

    pub fn children(&self, node: NodeId) -> Children<'_> {
        Children { tree: self, next: self.slot(node).first_child }
    }

    /// Every node id, root first; parents always come before their children.
    pub fn nodes(&self) -> impl Iterator<Item = NodeId> {
        (0..self.slots.len() as u32).map(NodeId)
    }

    /// The nodes from the root's child down to `node`.
    pub fn path(&self, node: NodeId) -> Vec<NodeId> {
        let mut path = Vec::with_capacity(self.depth(node));
        let mut current = Some(node);
        while let Some(id) = current {
            if id == NodeId::ROOT {
                break;
            }
            path.push(id);
            current = self.parent(id);
        }
        path.reverse();
        path
    }

    /// The outermost frame of `node`'s context: its ancestor right below
    /// the root (`node` itself at depth 1, the root for the root).
    pub fn outermost(&self, node: NodeId) -> NodeId {
        let mut current = node;
        while let Some(parent) = self.parent(current).filter(|&parent| parent != NodeId::ROOT) {
            current = parent;
        }
        current
    }

    /// Nodes from the heaviest self weight down (the sorted hot-node list).
    pub fn hot_node_list(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.hot_nodes.iter(|id| self.slots[id as usize].node_link).map(NodeId)
    }

    /// Nodes from the heaviest self weight in `metric` down, if a hot list
    /// is sorted by it (the tree's metric and every event resource).
    pub fn hot_node_list_by(&self, metric: Metric) -> Option<Box<dyn Iterator<Item = NodeId> + '_>> {
        match metric.event_index() {
            Some(event) => Some(Box::new(self.event_nodes[event].iter().map(NodeId))),
            None if metric == self.config.metric => Some(Box::new(self.hot_node_list())),
            None => None,
        }
    }

    /// Nodes the hot list sorted by `metric` holds (0 without such a list).
    pub(crate) fn hot_nodes_listed_by(&self, metric: Metric) -> usize {
        match metric.event_index() {
            Some(event) => self.event_nodes[event].len(),
            None if metric == self.config.metric => self.hot_nodes.len(),
            None => 0,
        }
    }

    /// Edges (named by their target node) from the heaviest down.
    pub fn hot_edge_list(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.hot_edges.iter(|id| self.slots[id as usize].edge_link).map(NodeId)
    }

    /// Elements each hot list holds at most.
    pub fn hot_list_capacity(&self) -> usize {
        self.hot_nodes.capacity()
    }

    pub(crate) fn hot_edges_listed(&self) -> usize {
        self.hot_edges.len()
    }

    /// Self weight of `method` summed over all its contexts (the hot-method
    /// counter of Figure 12).
    pub fn method_self_weight(&self, method: MethodId) -> Weight {
        self.counters.weight(method)
    }
}

/// Iterator over a node's children.
pub struct Children<'a> {
    tree: &'a Pcct,
    next: u32,
}

impl Iterator for Children<'_> {
    type Item = NodeId;

    fn next(&mut self) -> Option<NodeId> {
        if self.next == NIL {
            return None;
        }
        let id = self.next;
        self.next = self.tree.slots[id as usize].next_sibling;
        Some(NodeId(id))
    }
}
