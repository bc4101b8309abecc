//! Named, serialisable answers built from a tree and its method table: what
//! the HTTP server and the command-line tool hand to people and programs.

use serde::Serialize;

use crate::method::{MethodId, MethodInfo, MethodKind, MethodTable};
use crate::query::MethodOrder;
use crate::slot::NodeId;
use crate::tree::Pcct;
use crate::weight::{Metric, Weight};

/// A method as shown to users.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MethodName {
    pub id: u32,
    pub class: String,
    pub name: String,
    pub signature: String,
    /// `class.name`, or the bracketed pseudo-method name.
    pub display: String,
    pub kind: MethodKind,
}

impl MethodName {
    pub fn of(methods: &MethodTable, method: MethodId) -> MethodName {
        let info: &MethodInfo = methods.get(method);
        MethodName {
            id: method.0,
            class: info.class.to_string(),
            name: info.name.to_string(),
            signature: info.signature.to_string(),
            display: info.display_name(),
            kind: info.kind,
        }
    }
}

/// A call site: bytecode index in the caller and its source line if known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CallSiteView {
    pub bci: i32,
    pub line: Option<u32>,
}

impl CallSiteView {
    fn of(tree: &Pcct, methods: &MethodTable, node: NodeId) -> Option<CallSiteView> {
        let bci = tree.call_site(node);
        if bci < 0 {
            return None;
        }
        let line = tree.parent(node).and_then(|parent| methods.get(tree.method(parent)).line_of(bci));
        Some(CallSiteView { bci, line })
    }
}

/// One step of a context path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PathStep {
    pub method: String,
    pub call_site: Option<CallSiteView>,
}

fn share(part: &Weight, total: &Weight, metric: Metric) -> f64 {
    let whole = total.get(metric);
    if whole == 0 {
        0.0
    } else {
        part.get(metric) as f64 / whole as f64
    }
}

/// An entry of the hot-methods answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HotMethod {
    pub method: MethodName,
    #[serde(rename = "self")]
    pub self_weight: Weight,
    pub total: Weight,
    /// Self and total as a share (0..=1) of all recorded weight, by the metric.
    pub self_share: f64,
    pub total_share: f64,
    pub contexts: usize,
}

/// An entry of the hot-edges answer: the input of an inlining decision.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HotEdge {
    pub caller: MethodName,
    pub call_site: Option<CallSiteView>,
    pub callee: MethodName,
    /// Samples in which this call was new, and what they weighed.
    pub weight: Weight,
    pub share: f64,
    /// Depth of the caller's context (0: the callee is called from the root).
    pub caller_depth: usize,
    /// Node id of the callee context (valid until the next purge).
    pub callee_node: u32,
}

/// An entry of the hot-nodes answer: a calling context.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HotNode {
    pub node: u32,
    pub method: MethodName,
    pub depth: usize,
    #[serde(rename = "self")]
    pub self_weight: Weight,
    pub share: f64,
    /// From the outermost frame down to this context.
    pub path: Vec<PathStep>,
}

/// A nested subtree (bounded by the caller's `max_depth`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SubtreeNode {
    pub node: u32,
    pub method: String,
    pub call_site: Option<CallSiteView>,
    #[serde(rename = "self")]
    pub self_weight: Weight,
    pub edge: Weight,
    pub cum: Weight,
    pub cum_share: f64,
    /// Children left out by `min_share` or `max_depth`.
    pub pruned_children: usize,
    pub children: Vec<SubtreeNode>,
}

pub fn hot_methods(tree: &Pcct, methods: &MethodTable, limit: usize, order: MethodOrder) -> Vec<HotMethod> {
    let metric = tree.config().metric;
    let total = tree.total();
    tree.hot_methods(limit, order)
        .into_iter()
        .map(|entry| HotMethod {
            method: MethodName::of(methods, entry.method),
            self_weight: entry.self_weight,
            total: entry.total,
            self_share: share(&entry.self_weight, &total, metric),
            total_share: share(&entry.total, &total, metric),
            contexts: entry.contexts,
        })
        .collect()
}

pub fn hot_edges(tree: &Pcct, methods: &MethodTable, limit: usize) -> Vec<HotEdge> {
    let metric = tree.config().metric;
    let total = tree.total();
    tree.top_edges(limit)
        .into_iter()
        .map(|node| {
            let parent = tree.parent(node).unwrap_or(NodeId::ROOT);
            HotEdge {
                caller: MethodName::of(methods, tree.method(parent)),
                call_site: CallSiteView::of(tree, methods, node),
                callee: MethodName::of(methods, tree.method(node)),
                weight: tree.edge_weight(node),
                share: share(&tree.edge_weight(node), &total, metric),
                caller_depth: tree.depth(parent),
                callee_node: node.raw(),
            }
        })
        .collect()
}

pub fn path_of(tree: &Pcct, methods: &MethodTable, node: NodeId) -> Vec<PathStep> {
    tree.path(node)
        .into_iter()
        .map(|step| PathStep {
            method: methods.display_name(tree.method(step)),
            call_site: CallSiteView::of(tree, methods, step),
        })
        .collect()
}

pub fn hot_nodes(tree: &Pcct, methods: &MethodTable, limit: usize) -> Vec<HotNode> {
    let metric = tree.config().metric;
    let total = tree.total();
    tree.top_nodes(limit)
        .into_iter()
        .map(|node| HotNode {
            node: node.raw(),
            method: MethodName::of(methods, tree.method(node)),
            depth: tree.depth(node),
            self_weight: tree.node_weight(node),
            share: share(&tree.node_weight(node), &total, metric),
            path: path_of(tree, methods, node),
        })
        .collect()
}

/// Bounds of a [`subtree`] answer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SubtreeLimits {
    /// Leave out children whose cum is below this share (0..=1) of the total.
    pub min_share: f64,
    /// Levels below the subtree's root.
    pub max_depth: usize,
    /// Most nodes in the answer; heavier children are kept first.
    pub max_nodes: usize,
}

impl SubtreeNode {
    /// Nodes in this subtree (as answered: pruned children not counted).
    pub fn node_count(&self) -> usize {
        1 + self.children.iter().map(SubtreeNode::node_count).sum::<usize>()
    }
}

/// The subtree under `node`, children ordered by cum, pruned by `limits`.
pub fn subtree(tree: &Pcct, methods: &MethodTable, cum: &[Weight], node: NodeId, limits: SubtreeLimits) -> SubtreeNode {
    let metric = tree.config().metric;
    let total = cum[0];
    let threshold = (total.get(metric) as f64 * limits.min_share.clamp(0.0, 1.0)).ceil() as u64;
    let mut budget = limits.max_nodes.max(1) - 1;
    let context = Context { tree, methods, cum, threshold, total, metric };
    build(&context, node, limits.max_depth, &mut budget)
}

struct Context<'a> {
    tree: &'a Pcct,
    methods: &'a MethodTable,
    cum: &'a [Weight],
    threshold: u64,
    total: Weight,
    metric: Metric,
}

fn build(context: &Context<'_>, node: NodeId, levels_left: usize, budget: &mut usize) -> SubtreeNode {
    let Context { tree, methods, cum, threshold, metric, .. } = *context;
    let total = &context.total;
    let mut kept = Vec::new();
    let mut pruned = 0;
    for child in crate::export::children_by_cum(tree, cum, node, metric) {
        let child_cum = cum[child.index()].get(metric);
        if levels_left == 0 || child_cum < threshold || child_cum == 0 || *budget == 0 {
            pruned += 1;
        } else {
            *budget -= 1;
            kept.push(build(context, child, levels_left - 1, budget));
        }
    }
    SubtreeNode {
        node: node.raw(),
        method: methods.display_name(tree.method(node)),
        call_site: CallSiteView::of(tree, methods, node),
        self_weight: tree.node_weight(node),
        edge: tree.edge_weight(node),
        cum: cum[node.index()],
        cum_share: share(&cum[node.index()], total, metric),
        pruned_children: pruned,
        children: kept,
    }
}
