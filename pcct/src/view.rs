//! Named, serialisable answers built from a tree and its method table: what
//! the HTTP server and the command-line tool hand to people and programs.

use serde::{Deserialize, Serialize};

use crate::frame::FrameKind;
use crate::method::{Builtin, MethodId, MethodInfo, MethodKind, MethodTable};
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
        let caller = tree.method(tree.parent(node).unwrap_or(NodeId::ROOT));
        CallSiteView::at(methods, caller, tree.call_site(node))
    }

    /// The call at `bci` in `caller` (none for a negative bci: no call site).
    fn at(methods: &MethodTable, caller: MethodId, bci: i32) -> Option<CallSiteView> {
        (bci >= 0).then(|| CallSiteView { bci, line: methods.get(caller).line_of(bci) })
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
    /// Self and total as a share (0..=1) of all recorded weight, by the
    /// resource asked for.
    pub self_share: f64,
    pub total_share: f64,
    pub contexts: usize,
}

/// How much of a context's callers the profile knows, said by the
/// context's outermost frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Completeness {
    /// The walks reached the thread's first frame.
    Whole,
    /// The stacks were deeper than `depth=`: the frames kept are the
    /// stack's top and true, the outermost ones are cut (under `[truncated]`).
    Truncated,
    /// The walks stopped short (under `[break_<reason>]` or
    /// `[unattached]`) or named no Java frame (`[unknown_Java]`, ...): the
    /// callers below the break are unknown.
    Partial,
}

impl Completeness {
    /// The context whose outermost frame is of `outermost`. A frame the VM
    /// reported without a name (`[unknown_method]`, `[unloaded]`) is a
    /// frame all the same.
    pub fn of_outermost(methods: &MethodTable, outermost: MethodId) -> Completeness {
        let frames = [Builtin::Root, Builtin::Unloaded, Builtin::UnknownMethod];
        if outermost == Builtin::Truncated.id() {
            Completeness::Truncated
        } else if methods.get(outermost).kind == MethodKind::Pseudo && !frames.iter().any(|b| b.id() == outermost) {
            Completeness::Partial
        } else {
            Completeness::Whole
        }
    }
}

/// An entry of the hot-edges answer: the input of an inlining decision.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HotEdge {
    pub caller: MethodName,
    pub call_site: Option<CallSiteView>,
    pub callee: MethodName,
    /// Samples in which this call was new, and what they weighed. Its
    /// event resources (the callee context's cum) are filled in when the
    /// edges are ranked by one of them, else left out.
    pub weight: Weight,
    pub share: f64,
    /// Depth of the caller's context (0: the callee is called from the root).
    pub caller_depth: usize,
    /// Whether the walks that recorded the callee's context reached the
    /// thread's first frame: an edge in a partial context is a call seen
    /// on a stack whose bottom is unknown.
    pub context: Completeness,
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
    /// How the method ran in this context, when kinds are recorded.
    #[serde(skip_serializing_if = "FrameKind::is_unknown")]
    pub kind: FrameKind,
    pub call_site: Option<CallSiteView>,
    #[serde(rename = "self")]
    pub self_weight: Weight,
    /// The edge into this context: time resources in the samples in which
    /// the call was new, event resources as the context's cum.
    pub edge: Weight,
    pub cum: Weight,
    pub cum_share: f64,
    /// Children left out by `min_share` or `max_depth`.
    /// (Children with nothing of the resource are not counted: an
    /// allocation site in a CPU view, a CPU context in an allocation view.)
    pub pruned_children: usize,
    pub children: Vec<SubtreeNode>,
}

/// The hot-methods answer: the `limit` hottest methods in `metric`.
pub fn hot_methods(
    tree: &Pcct,
    methods: &MethodTable,
    limit: usize,
    order: MethodOrder,
    metric: Metric,
) -> Vec<HotMethod> {
    let total = tree.total();
    tree.hot_methods(limit, order, metric)
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

/// The hot-edges answer: the `limit` heaviest edges in `metric`.
pub fn hot_edges(tree: &Pcct, methods: &MethodTable, limit: usize, metric: Metric) -> Vec<HotEdge> {
    hot_edges_of(tree, methods, &tree.top_edges_by(metric, limit), metric)
}

/// The hot-edges answer for `edges` (named by their target nodes), with
/// shares in `metric`. For an event resource the edges' event weights are
/// their contexts' cum, which takes a pass over the tree: call it on a
/// copy of the profile, not under the lock the sampler needs.
pub fn hot_edges_of(tree: &Pcct, methods: &MethodTable, edges: &[NodeId], metric: Metric) -> Vec<HotEdge> {
    let edges: Vec<_> = edges.iter().map(|&node| (node, tree.method(tree.outermost(node)))).collect();
    hot_edges_known(tree, methods, &edges, metric)
}

/// [`hot_edges_of`] for edges whose context's outermost method the caller
/// already found (`(target node, outermost method)`), so it is not walked
/// to again.
pub fn hot_edges_known(
    tree: &Pcct,
    methods: &MethodTable,
    edges: &[(NodeId, MethodId)],
    metric: Metric,
) -> Vec<HotEdge> {
    let total = tree.total();
    let cum = metric.is_event().then(|| tree.cumulative());
    edges
        .iter()
        .map(|&(node, outermost)| {
            let parent = tree.parent(node).unwrap_or(NodeId::ROOT);
            let weight = match &cum {
                Some(cum) => crate::export::edge_weight(tree, cum, node),
                None => tree.edge_weight(node),
            };
            HotEdge {
                caller: MethodName::of(methods, tree.method(parent)),
                call_site: CallSiteView::of(tree, methods, node),
                callee: MethodName::of(methods, tree.method(node)),
                weight,
                share: share(&weight, &total, metric),
                caller_depth: tree.depth(parent),
                context: Completeness::of_outermost(methods, outermost),
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

/// The hot-nodes answer: the `limit` contexts of highest self weight in `metric`.
pub fn hot_nodes(tree: &Pcct, methods: &MethodTable, limit: usize, metric: Metric) -> Vec<HotNode> {
    HotNodeIds::copy(tree, &tree.top_nodes_by(metric, limit), usize::MAX, metric)
        .map(|copy| copy.name(methods))
        .unwrap_or_default()
}

/// An entry of the sites answer (HPROF's `SITES`): a context and, for an
/// allocation or a monitor, the class allocated or waited for, ranked by
/// self weight in one resource.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Site {
    pub rank: usize,
    /// The allocated type or the monitor's class (a leaf of kind `type`);
    /// none for a time resource's site, which is a context alone.
    #[serde(rename = "type")]
    pub class: Option<String>,
    /// The code that allocated or waited: its method and path, root first
    /// (the class's frame not included); with it, the bytecode index and
    /// line of the allocation or monitor enter when known.
    pub method: MethodName,
    pub at: Option<CallSiteView>,
    pub context: Vec<PathStep>,
    /// The site's weight (all resources) and its share of the total, and
    /// the shares of this and every heavier site together (HPROF's accum).
    #[serde(rename = "self")]
    pub self_weight: Weight,
    pub share: f64,
    pub accumulated: f64,
    pub node: u32,
}

/// The sites answer: the `limit` heaviest sites in `metric`.
pub fn sites(tree: &Pcct, methods: &MethodTable, limit: usize, metric: Metric) -> Vec<Site> {
    HotNodeIds::copy(tree, &tree.top_nodes_by(metric, limit), usize::MAX, metric)
        .map(|copy| copy.sites(methods))
        .unwrap_or_default()
}

/// Hot nodes as copied from the tree (under the profile lock, in a live
/// profiler): ids, weights, and the methods and call sites of their paths,
/// nothing named. [`HotNodeIds::name`] builds the answer from the method
/// table alone, without the tree (so after the lock is released).
#[derive(Clone, Debug, PartialEq)]
pub struct HotNodeIds {
    total: Weight,
    /// The resource the shares are of.
    metric: Metric,
    root_method: MethodId,
    nodes: Vec<CopiedNode>,
    /// Every node's path, root side first, one after the other: each
    /// step's method and the call site in its caller.
    steps: Vec<(MethodId, i32)>,
}

#[derive(Clone, Debug, PartialEq)]
struct CopiedNode {
    node: NodeId,
    method: MethodId,
    depth: usize,
    self_weight: Weight,
    /// Its path in `HotNodeIds::steps`.
    path: std::ops::Range<usize>,
}

/// Nodes whose paths hold more steps than a [`HotNodeIds::copy`] may.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooManySteps {
    /// The steps of all the paths asked for.
    pub steps: usize,
}

impl HotNodeIds {
    /// Copies `nodes` with their paths, if those hold at most `max_steps`
    /// steps in all: O(nodes) to find out, O(steps) to copy. Shares will
    /// be of `metric`.
    pub fn copy(tree: &Pcct, nodes: &[NodeId], max_steps: usize, metric: Metric) -> Result<HotNodeIds, TooManySteps> {
        let steps = nodes.iter().map(|&node| tree.depth(node)).sum();
        if steps > max_steps {
            return Err(TooManySteps { steps });
        }
        let mut copy = HotNodeIds {
            total: tree.total(),
            metric,
            root_method: tree.method(NodeId::ROOT),
            nodes: Vec::with_capacity(nodes.len()),
            steps: Vec::with_capacity(steps),
        };
        for &node in nodes {
            let start = copy.steps.len();
            let mut step = node;
            while step != NodeId::ROOT {
                copy.steps.push((tree.method(step), tree.call_site(step)));
                step = tree.parent(step).unwrap_or(NodeId::ROOT);
            }
            copy.steps[start..].reverse();
            let (depth, self_weight) = (tree.depth(node), tree.node_weight(node));
            let path = start..copy.steps.len();
            copy.nodes.push(CopiedNode { node, method: tree.method(node), depth, self_weight, path });
        }
        Ok(copy)
    }

    /// Path steps in all.
    pub fn steps(&self) -> usize {
        self.steps.len()
    }

    /// The hot-nodes answer, named from `methods`.
    pub fn name(&self, methods: &MethodTable) -> Vec<HotNode> {
        let named = |copied: &CopiedNode| HotNode {
            node: copied.node.raw(),
            method: MethodName::of(methods, copied.method),
            depth: copied.depth,
            self_weight: copied.self_weight,
            share: share(&copied.self_weight, &self.total, self.metric),
            path: self.path(methods, &self.steps[copied.path.clone()]),
        };
        self.nodes.iter().map(named).collect()
    }

    /// The sites answer, named from `methods`: each copied node is a site;
    /// a leaf of kind `type` is the class of the site, its caller the code.
    pub fn sites(&self, methods: &MethodTable) -> Vec<Site> {
        let mut accumulated = 0.0;
        let site = |(rank, copied): (usize, &CopiedNode)| {
            let steps = &self.steps[copied.path.clone()];
            let is_type = methods.get(copied.method).kind == MethodKind::Type && !steps.is_empty();
            let (code, class, at) = if is_type {
                let code = &steps[..steps.len() - 1];
                let caller = code.last().map_or(self.root_method, |&(method, _)| method);
                let at = CallSiteView::at(methods, caller, steps[steps.len() - 1].1);
                (code, Some(methods.display_name(copied.method)), at)
            } else {
                (steps, None, None)
            };
            let method = code.last().map_or(self.root_method, |&(method, _)| method);
            let share = share(&copied.self_weight, &self.total, self.metric);
            accumulated += share;
            Site {
                rank: rank + 1,
                class,
                method: MethodName::of(methods, method),
                at,
                context: self.path(methods, code),
                self_weight: copied.self_weight,
                share,
                accumulated,
                node: copied.node.raw(),
            }
        };
        self.nodes.iter().enumerate().map(site).collect()
    }

    fn path(&self, methods: &MethodTable, steps: &[(MethodId, i32)]) -> Vec<PathStep> {
        let callers = std::iter::once(self.root_method).chain(steps.iter().map(|&(method, _)| method));
        steps
            .iter()
            .zip(callers)
            .map(|(&(method, bci), caller)| PathStep {
                method: methods.display_name(method),
                call_site: CallSiteView::at(methods, caller, bci),
            })
            .collect()
    }
}

/// Bounds of a [`subtree`] answer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SubtreeLimits {
    /// The resource children are ordered and pruned by.
    pub metric: Metric,
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
    let metric = limits.metric;
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
        if child_cum == 0 {
            continue; // nothing of this resource: not part of this view
        }
        if levels_left == 0 || child_cum < threshold || *budget == 0 {
            pruned += 1;
        } else {
            *budget -= 1;
            kept.push(build(context, child, levels_left - 1, budget));
        }
    }
    SubtreeNode {
        node: node.raw(),
        method: methods.display_name(tree.method(node)),
        kind: tree.kind(node),
        call_site: CallSiteView::of(tree, methods, node),
        self_weight: tree.node_weight(node),
        edge: crate::export::edge_weight(tree, cum, node),
        cum: cum[node.index()],
        cum_share: share(&cum[node.index()], total, metric),
        pruned_children: pruned,
        children: kept,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Frame, LineEntry, Marks, TreeConfig, NO_BCI};

    /// main calls work (line 12) and fib, which recurses; some samples in each.
    fn sample_tree() -> (Pcct, MethodTable) {
        let mut methods = MethodTable::new();
        let main = methods.intern("app.Main", "main", "([Ljava/lang/String;)V");
        let work = methods.intern("app.Main", "work", "()V");
        let fib = methods.intern("app.Main", "fib", "(I)I");
        methods.set_lines(main, vec![LineEntry { start_bci: 0, line: 10 }, LineEntry { start_bci: 8, line: 12 }]);
        methods.set_lines(fib, vec![LineEntry { start_bci: 0, line: 30 }]);
        let mut tree = Pcct::new(TreeConfig::default()).unwrap();
        let f = Frame::new;
        for round in 0..12u64 {
            let mut marks = Marks::new();
            let stack = match round % 3 {
                0 => vec![f(main, 8), f(work, 3)],
                1 => vec![f(main, 9), f(fib, 2), f(fib, 2), f(fib, 7)],
                _ => vec![f(main, 1)],
            };
            tree.record(&mut marks, &stack, Weight::sample(1_000 * (round + 1), 0)).unwrap();
        }
        (tree, methods)
    }

    /// The answer named straight from the tree, node by node.
    fn named_from_the_tree(tree: &Pcct, methods: &MethodTable, nodes: &[NodeId]) -> Vec<HotNode> {
        let metric = tree.config().metric;
        let named = |&node: &NodeId| HotNode {
            node: node.raw(),
            method: MethodName::of(methods, tree.method(node)),
            depth: tree.depth(node),
            self_weight: tree.node_weight(node),
            share: share(&tree.node_weight(node), &tree.total(), metric),
            path: path_of(tree, methods, node),
        };
        nodes.iter().map(named).collect()
    }

    #[test]
    fn copied_hot_nodes_are_named_as_the_tree_names_them() {
        let (tree, methods) = sample_tree();
        let nodes = tree.top_nodes(100);
        assert!(nodes.len() >= 3, "{nodes:?}");
        let copy = HotNodeIds::copy(&tree, &nodes, usize::MAX, tree.config().metric).unwrap();
        let named = copy.name(&methods);
        assert_eq!(named, named_from_the_tree(&tree, &methods, &nodes));
        let deepest = named.iter().find(|node| node.depth == 4).expect("the recursive context");
        let lines: Vec<Option<u32>> =
            deepest.path.iter().map(|step| step.call_site.and_then(|site| site.line)).collect();
        assert_eq!(lines, [None, Some(12), Some(30), Some(30)], "lines come from each step's caller");
        assert_eq!(hot_nodes(&tree, &methods, 100, tree.config().metric), named);
    }

    #[test]
    fn a_copy_holds_at_most_its_steps() {
        let (tree, _) = sample_tree();
        let nodes = tree.top_nodes(100);
        let steps: usize = nodes.iter().map(|&node| tree.depth(node)).sum();
        let metric = tree.config().metric;
        assert_eq!(HotNodeIds::copy(&tree, &nodes, steps, metric).unwrap().steps(), steps);
        assert_eq!(HotNodeIds::copy(&tree, &nodes, steps - 1, metric), Err(TooManySteps { steps }));
    }

    #[test]
    fn an_edge_says_whether_its_context_is_whole_truncated_or_partial() {
        let mut methods = MethodTable::new();
        let main = methods.intern("app.Main", "main", "()V");
        let work = methods.intern("app.Main", "work", "()V");
        let hash = methods.intern("app.Main", "hash", "()I");
        let broken = methods.intern_pseudo("[break_native]");
        let unknown = methods.intern_pseudo("[unknown_Java]");
        let f = Frame::new;
        let truncated = f(Builtin::Truncated.id(), NO_BCI);
        let stacks = [
            vec![f(main, 1), f(work, 2), f(hash, 3)],
            vec![truncated, f(work, 4), f(hash, 5)],
            vec![f(broken, NO_BCI), f(work, 6), f(hash, 7)],
            vec![f(Builtin::UnknownMethod.id(), NO_BCI), f(work, 8)],
            vec![f(unknown, NO_BCI)],
        ];
        let mut tree = Pcct::new(TreeConfig::default()).unwrap();
        for stack in &stacks {
            tree.record(&mut Marks::new(), stack, Weight::sample(1_000, 0)).unwrap();
        }
        let metric = tree.config().metric;
        let edges = hot_edges(&tree, &methods, 100, metric);
        let context = |caller: &str, callee: &str, call_site: Option<i32>| {
            let edge = edges
                .iter()
                .find(|edge| {
                    edge.caller.display == caller
                        && edge.callee.display == callee
                        && edge.call_site.map(|site| site.bci) == call_site
                })
                .unwrap_or_else(|| panic!("no edge {caller} -> {callee} at {call_site:?} in {edges:?}"));
            edge.context
        };
        assert_eq!(context("[root]", "app.Main.main", None), Completeness::Whole);
        assert_eq!(context("app.Main.main", "app.Main.work", Some(1)), Completeness::Whole);
        assert_eq!(context("app.Main.work", "app.Main.hash", Some(2)), Completeness::Whole);
        assert_eq!(context("[truncated]", "app.Main.work", None), Completeness::Truncated);
        assert_eq!(context("app.Main.work", "app.Main.hash", Some(4)), Completeness::Truncated);
        assert_eq!(context("[root]", "[break_native]", None), Completeness::Partial);
        assert_eq!(context("app.Main.work", "app.Main.hash", Some(6)), Completeness::Partial);
        assert_eq!(context("[unknown_method]", "app.Main.work", None), Completeness::Whole);
        assert_eq!(context("[root]", "[unknown_Java]", None), Completeness::Partial);
        assert_eq!(
            Completeness::of_outermost(&methods, tree.method(tree.outermost(NodeId::ROOT))),
            Completeness::Whole
        );
    }
}
