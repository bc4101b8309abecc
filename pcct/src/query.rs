//! Questions asked of a tree: the hottest nodes, edges and methods,
//! cumulative weights, and contexts named by a path.

use serde::Serialize;

use crate::error::{PcctError, Result};
use crate::method::{Builtin, MethodId, MethodTable};
use crate::slot::NodeId;
use crate::tree::{Pcct, TreeMode};
use crate::weight::{Metric, Weight};

/// A method's weight summed over all its contexts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct MethodTotals {
    pub method: MethodId,
    /// Base: samples whose leaf was this method.
    pub self_weight: Weight,
    /// Cum: samples with this method anywhere on the stack, each sample
    /// counted once however often the method recurs in it.
    pub total: Weight,
    /// Nodes (calling contexts) of the method.
    pub contexts: usize,
}

/// Order of [`Pcct::hot_methods`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MethodOrder {
    SelfWeight,
    Total,
}

/// Whether a method with this total belongs in a list by `metric`: any
/// time for a time resource (a sample without CPU is still a sample), the
/// resource itself for an event resource (a CPU profile's methods are not
/// hot by allocated bytes).
fn counts_in(total: &Weight, metric: Metric) -> bool {
    if metric.is_event() {
        total.get(metric) > 0
    } else {
        total.has_time()
    }
}

impl Pcct {
    /// The `limit` contexts of highest self weight in the tree's metric,
    /// heaviest first (see [`Pcct::top_nodes_by`]).
    pub fn top_nodes(&self, limit: usize) -> Vec<NodeId> {
        self.top_nodes_by(self.config().metric, limit)
    }

    /// The `limit` contexts of highest self weight in `metric`, heaviest
    /// first. Read from a hot-node list in O(limit) when one is sorted by
    /// `metric` and covers the request; otherwise every node is sorted.
    pub fn top_nodes_by(&self, metric: Metric, limit: usize) -> Vec<NodeId> {
        self.listed_top_nodes_by(metric, limit)
            .unwrap_or_else(|| self.sorted_by(limit, |tree, node| tree.node_value(node, metric)))
    }

    /// [`Pcct::top_nodes`] when the hot-node list covers the request.
    pub fn listed_top_nodes(&self, limit: usize) -> Option<Vec<NodeId>> {
        self.listed_top_nodes_by(self.config().metric, limit)
    }

    /// [`Pcct::top_nodes_by`] when a hot-node list is sorted by `metric`
    /// (the tree's metric, or an event resource) and covers the request (it
    /// holds `limit` nodes, or every node with weight): O(limit). `None`
    /// when the answer needs a sort of every node.
    pub fn listed_top_nodes_by(&self, metric: Metric, limit: usize) -> Option<Vec<NodeId>> {
        let list = self.hot_node_list_by(metric)?;
        let listed = self.hot_nodes_listed_by(metric);
        (limit <= listed || listed < self.hot_list_capacity()).then(|| list.take(limit).collect())
    }

    /// The `limit` edges of highest weight in the tree's metric (named by
    /// their target node).
    pub fn top_edges(&self, limit: usize) -> Vec<NodeId> {
        self.top_edges_by(self.config().metric, limit)
    }

    /// The `limit` edges of highest weight in `metric`. An event
    /// resource's edge weight is its context's cum, so that needs the cum
    /// pass; a time resource other than the tree's metric, a sort.
    pub fn top_edges_by(&self, metric: Metric, limit: usize) -> Vec<NodeId> {
        if let Some(listed) = self.listed_top_edges_by(metric, limit) {
            return listed;
        }
        if metric.is_event() {
            let cum = self.cumulative();
            self.sorted_by(limit, |_, node| if node == NodeId::ROOT { 0 } else { cum[node.index()].get(metric) })
        } else {
            self.sorted_by(limit, |tree, node| tree.edge_weight(node).get(metric))
        }
    }

    /// [`Pcct::top_edges`] when the hot-edge list covers the request, in
    /// O(limit); `None` when the answer needs a sort of every node.
    pub fn listed_top_edges(&self, limit: usize) -> Option<Vec<NodeId>> {
        self.listed_top_edges_by(self.config().metric, limit)
    }

    /// [`Pcct::top_edges_by`] in O(limit) from the hot-edge list, when it
    /// is sorted by `metric` (the tree's metric) and covers the request.
    pub fn listed_top_edges_by(&self, metric: Metric, limit: usize) -> Option<Vec<NodeId>> {
        if metric != self.config().metric {
            return None;
        }
        let listed = self.hot_edges_listed();
        (limit <= listed || listed < self.hot_list_capacity()).then(|| self.hot_edge_list().take(limit).collect())
    }

    fn sorted_by(&self, limit: usize, key: impl Fn(&Pcct, NodeId) -> u64) -> Vec<NodeId> {
        let mut all: Vec<(u64, NodeId)> =
            self.nodes().map(|node| (key(self, node), node)).filter(|&(weight, _)| weight > 0).collect();
        let by_weight = |a: &(u64, NodeId), b: &(u64, NodeId)| b.0.cmp(&a.0).then(a.1.cmp(&b.1));
        if limit < all.len() {
            if limit > 0 {
                all.select_nth_unstable_by(limit - 1, by_weight);
            }
            all.truncate(limit);
        }
        all.sort_by(by_weight);
        all.into_iter().map(|(_, node)| node).collect()
    }

    /// The `limit` methods of highest self weight in the tree's metric from
    /// the hot-method counters (Figure 12), heaviest first.
    pub fn top_methods_by_self(&self, limit: usize) -> Vec<(MethodId, Weight)> {
        self.top_methods_by_self_in(self.config().metric, limit)
    }

    /// Every method with a self weight in any resource (the hot-method
    /// counters, Figure 12), by method id: what a written profile keeps.
    pub fn method_self_weights(&self) -> Vec<(MethodId, Weight)> {
        self.counters.all().collect()
    }

    /// The `limit` methods of highest self weight in `metric`, heaviest
    /// first: from a sorted list in O(limit) for the tree's metric and the
    /// event resources, else in one pass over the methods (not the tree).
    pub fn top_methods_by_self_in(&self, metric: Metric, limit: usize) -> Vec<(MethodId, Weight)> {
        let listed = self.counters.listed(metric);
        if self.counters.has_list(metric) && (limit <= listed || listed < self.counters.capacity()) {
            if let Some(hottest) = self.counters.hottest(metric) {
                return hottest.take(limit).collect();
            }
        }
        let mut all: Vec<(MethodId, Weight)> = self.counters.all().filter(|(_, w)| w.get(metric) > 0).collect();
        let by_weight =
            |a: &(MethodId, Weight), b: &(MethodId, Weight)| b.1.get(metric).cmp(&a.1.get(metric)).then(a.0.cmp(&b.0));
        if limit < all.len() {
            if limit > 0 {
                all.select_nth_unstable_by(limit - 1, by_weight);
            }
            all.truncate(limit);
        }
        all.sort_by(by_weight);
        all
    }

    /// Cumulative weight of every node (its self weight plus its
    /// descendants'), indexed by [`NodeId::index`]. O(nodes), no recursion:
    /// a parent always has a smaller index than its children.
    pub fn cumulative(&self) -> Vec<Weight> {
        let mut cum: Vec<Weight> = self.nodes().map(|node| self.node_weight(node)).collect();
        for index in (1..cum.len()).rev() {
            let parent = self.slots[index].parent as usize;
            let child = cum[index];
            cum[parent].add(&child);
        }
        cum
    }

    /// Self and total weight of every method that has any, unordered.
    ///
    /// Recursion rule: a method's total counts only its *outermost*
    /// activations (nodes with no ancestor of the same method), so a sample
    /// is never counted twice for one method.
    pub fn method_totals(&self) -> Vec<MethodTotals> {
        if self.config().mode == TreeMode::HotMethods {
            return self
                .counters
                .all()
                .map(|(method, weight)| MethodTotals { method, self_weight: weight, total: weight, contexts: 1 })
                .collect();
        }
        let cum = self.cumulative();
        let method_slots = self.slots.iter().map(|slot| slot.method.0 as usize + 1).max().unwrap_or(1);
        let mut totals: Vec<MethodTotals> = (0..method_slots)
            .map(|index| MethodTotals {
                method: MethodId(index as u32),
                self_weight: Weight::ZERO,
                total: Weight::ZERO,
                contexts: 0,
            })
            .collect();
        // One pass in arena order: each node knows whether it is outermost.
        for (index, slot) in self.slots.iter().enumerate().skip(1) {
            let entry = &mut totals[slot.method.0 as usize];
            entry.self_weight.add(&self.node_weight(NodeId(index as u32)));
            entry.contexts += 1;
            if slot.is_outermost() {
                entry.total.add(&cum[index]);
            }
        }
        let root_self = self.node_weight(NodeId::ROOT);
        if !root_self.is_zero() {
            let root = &mut totals[Builtin::Root as usize];
            root.self_weight = root_self;
            root.total = root_self;
            root.contexts = 1;
        }
        totals.retain(|entry| !entry.total.is_zero());
        totals
    }

    /// Self and total weight and context count of `method`, from the
    /// counters the tree keeps as it records (no pass over the tree).
    pub fn method_summary(&self, method: MethodId) -> MethodTotals {
        let self_weight = self.counters.weight(method);
        let contexts = match self.config().mode {
            TreeMode::HotMethods => usize::from(!self_weight.is_zero()),
            TreeMode::Pcct => self.counters.contexts(method) as usize,
        };
        MethodTotals { method, self_weight, total: self.counters.total(method), contexts }
    }

    /// The `limit` hottest methods in `metric` by self weight or by total,
    /// heaviest first (ties by method id), from the counters the tree keeps
    /// as it records: by self in O(limit) from a sorted hot-method list
    /// (the tree's metric and every event resource have one), by total in
    /// one pass over the methods (not the tree).
    pub fn hot_methods(&self, limit: usize, order: MethodOrder, metric: Metric) -> Vec<MethodTotals> {
        match order {
            MethodOrder::SelfWeight => {
                let mut hottest: Vec<MethodTotals> = self
                    .top_methods_by_self_in(metric, limit)
                    .into_iter()
                    .map(|(method, _)| self.method_summary(method))
                    .collect();
                if hottest.len() < limit {
                    // Methods on stacks that were never a leaf come last.
                    let mut never_leaf: Vec<MethodTotals> = self
                        .counters
                        .all_totals()
                        .filter(|(_, self_weight, total, _)| self_weight.get(metric) == 0 && counts_in(total, metric))
                        .map(|(method, _, _, _)| self.method_summary(method))
                        .collect();
                    never_leaf.sort_by_key(|entry| entry.method);
                    hottest.extend(never_leaf.into_iter().take(limit - hottest.len()));
                }
                hottest
            }
            MethodOrder::Total => {
                let mut all: Vec<(u64, MethodId)> = self
                    .counters
                    .all_totals()
                    .filter(|(_, _, total, _)| counts_in(total, metric))
                    .map(|(method, _, total, _)| (total.get(metric), method))
                    .collect();
                let by_weight = |a: &(u64, MethodId), b: &(u64, MethodId)| b.0.cmp(&a.0).then(a.1.cmp(&b.1));
                if limit < all.len() {
                    if limit > 0 {
                        all.select_nth_unstable_by(limit - 1, by_weight);
                    }
                    all.truncate(limit);
                }
                all.sort_by(by_weight);
                all.into_iter().map(|(_, method)| self.method_summary(method)).collect()
            }
        }
    }

    /// Nodes whose path from the root matches `path`, step by step. A step
    /// is a method's display name (`java.util.HashMap.get`), a bracketed
    /// pseudo-method (`[gc_active]`), or `*` for any method. Different call
    /// sites of a step match alike, so several nodes can match. The empty
    /// path names the root.
    pub fn find_contexts(&self, methods: &MethodTable, path: &[&str]) -> Result<Vec<NodeId>> {
        if let Some(index) = path.iter().position(|step| step.trim().is_empty()) {
            return Err(PcctError::EmptyPathStep { index });
        }
        let mut current = vec![NodeId::ROOT];
        for step in path {
            let step = step.trim();
            let mut next = Vec::new();
            for node in current {
                next.extend(
                    self.children(node)
                        .filter(|&child| step == "*" || methods.get(self.method(child)).display_name() == step),
                );
            }
            current = next;
            if current.is_empty() {
                break;
            }
        }
        Ok(current)
    }

    /// Sum of `metric` over all recorded samples.
    pub fn total_of(&self, metric: Metric) -> u64 {
        self.total().get(metric)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Frame, Marks, MethodTable, Pcct, TreeConfig, Weight};

    /// `leaves` contexts under one root method, the i-th weighing i + 1 ns.
    fn tree_of(leaves: i32, hot_list_capacity: usize) -> Pcct {
        let mut methods = MethodTable::new();
        let (main, leaf) = (methods.intern("a.Main", "main", "()V"), methods.intern("a.Main", "leaf", "()V"));
        let mut tree = Pcct::new(TreeConfig { hot_list_capacity, ..TreeConfig::default() }).unwrap();
        for index in 0..leaves {
            let stack = [Frame::new(main, index), Frame::new(leaf, 0)];
            tree.record(&mut Marks::new(), &stack, Weight::sample(index as u64 + 1, 0)).unwrap();
        }
        tree
    }

    #[test]
    fn the_hot_lists_answer_alone_only_what_they_cover() {
        let full = tree_of(40, 16);
        assert_eq!(full.listed_top_nodes(16).map(|nodes| nodes.len()), Some(16));
        assert_eq!(full.listed_top_nodes(17), None, "17 nodes of 40 need a sort of every node");
        assert_eq!(full.listed_top_edges(17), None);
        let sorted = full.top_nodes(17);
        assert_eq!(sorted.len(), 17);
        assert_eq!(sorted[..16], full.listed_top_nodes(16).unwrap()[..]);
        let small = tree_of(5, 16);
        assert_eq!(small.listed_top_nodes(100).map(|nodes| nodes.len()), Some(5), "the list holds every node");
        assert_eq!(small.listed_top_edges(100).map(|edges| edges.len()), Some(6), "main's edge too");
    }
}
