//! Hot edges of a PCCT, copied with their calling contexts, joined with
//! the inline table: what `/api/hot-edges`, `/api/jit/*` and the dump ask.
//!
//! [`EdgeContexts::copy`] runs under the profile lock and copies only ids
//! (each edge's path of methods and call sites, at most a budget of steps
//! in all: an edge beyond it keeps the last [`TAIL_STEPS`] steps of its
//! path); naming and the join run after the lock is released, on the
//! method table (shared copy-on-write) and on a copy of what the join
//! reads of the inline table (`InlineTable::extract`, made under its lock:
//! the methods on the paths and their current code).

use std::collections::{BTreeSet, HashMap};

use pcct::view::Completeness;
use pcct::{FrameKind, MethodId, MethodKind, MethodTable, NodeId, Pcct, Weight};
use serde::Serialize;

use crate::advice::{advise, assess, Advice, CallSite, EdgeAdvice, HotCall, InlineFlags};
use crate::context::{edge_state, EdgeState, Inlined, Step};
use crate::live::Jit;
use crate::table::{InlineTable, JitMethod, MethodKey};

/// Steps an edge keeps when the budget is spent: more than HotSpot's
/// inlining depth (`MaxInlineLevel`, 15), so the code that runs the caller
/// is still found unless the path above was cut inside a chain of inlined
/// frames.
pub const TAIL_STEPS: usize = 64;

/// One hot edge as copied: its path, outermost first, ending with the
/// callee (each step's method and the call site in the step above).
#[derive(Clone, Debug, PartialEq)]
pub struct CopiedEdge {
    pub node: NodeId,
    pub path: Vec<(MethodId, i32)>,
    pub weight: Weight,
    /// The method of the context's outermost frame (the path may be cut
    /// short of it): it says whether the context is whole.
    pub outermost: MethodId,
    /// Every sample with this context on its stack (the self weights of
    /// its subtree), for an edge whose call site calls other methods too
    /// in the copied edges ([`EdgeContexts::copy_for_advice`]); `None` for
    /// the others, in a plain copy, or when the budget of [`SITE_NODES`]
    /// was spent (the hottest sites are weighed first).
    pub cum: Option<Weight>,
    /// How the callee ran in this context, as the samples saw it
    /// (`Unknown` unless the agent records kinds).
    pub kind: FrameKind,
}

impl CopiedEdge {
    /// The call this edge is: (caller, call site bci, callee), from the
    /// last two steps of its path; `None` for an edge from the root.
    fn call(&self) -> Option<(MethodId, i32, MethodId)> {
        let [.., (caller, _), (callee, bci)] = self.path.as_slice() else { return None };
        Some((*caller, *bci, *callee))
    }
}

/// Most nodes one copy reaches to weigh the contexts of polymorphic call
/// sites: 1-1.5 ms under the profile's lock on a tree of 5.6 million
/// nodes whose hot edges' subtrees are all larger (measured); a site the
/// budget does not cover is judged by its edges' weights.
pub const SITE_NODES: usize = 20_000;

/// The hot edges' contexts, copied from a tree.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EdgeContexts {
    pub edges: Vec<CopiedEdge>,
    pub total: Weight,
    pub metric: pcct::Metric,
}

impl EdgeContexts {
    /// Copies `nodes` (edges into them) with their paths, at most
    /// `max_steps` steps in all.
    pub fn copy(tree: &Pcct, nodes: &[NodeId], max_steps: usize) -> EdgeContexts {
        let mut budget = max_steps;
        let edges = nodes
            .iter()
            .map(|&node| {
                let depth = tree.depth(node);
                let keep = if depth <= budget { depth } else { depth.min(TAIL_STEPS) };
                budget = budget.saturating_sub(keep);
                let mut path = Vec::with_capacity(keep);
                let (mut step, mut last) = (node, node);
                while step != NodeId::ROOT && path.len() < keep {
                    path.push((tree.method(step), tree.call_site(step)));
                    last = step;
                    step = tree.parent(step).unwrap_or(NodeId::ROOT);
                }
                path.reverse();
                // The path's first step when it reached the root, else walk
                // on from where the budget cut it.
                let outermost = tree.method(if step == NodeId::ROOT { last } else { tree.outermost(step) });
                CopiedEdge { node, path, weight: tree.edge_weight(node), outermost, cum: None, kind: tree.kind(node) }
            })
            .collect();
        EdgeContexts { edges, total: tree.total(), metric: tree.config().metric }
    }

    /// [`EdgeContexts::copy`], with the contexts of polymorphic call sites
    /// weighed ([`CopiedEdge::cum`]): what the advice needs, and only it.
    pub fn copy_for_advice(tree: &Pcct, nodes: &[NodeId], max_steps: usize) -> EdgeContexts {
        let mut contexts = EdgeContexts::copy(tree, nodes, max_steps);
        contexts.weigh_polymorphic_sites(tree);
        contexts
    }

    /// Sets `cum` of the edges whose call site (caller and bci) calls more
    /// than one method among the copied edges: a callee's share of its
    /// site is its share of those contexts' samples. The edge weight would
    /// not do: it counts the samples in which the call was new, and a call
    /// that repeats at the same frame (the major receiver's) is not new
    /// from one sample to the next, while a rare one nearly always is.
    fn weigh_polymorphic_sites(&mut self, tree: &Pcct) {
        // Sites in the order of their hottest edge: the budget goes to those first.
        let mut order: HashMap<(MethodId, i32), usize> = HashMap::new();
        let mut sites: Vec<Vec<(usize, MethodId)>> = Vec::new();
        for (index, edge) in self.edges.iter().enumerate() {
            if let Some((caller, bci, callee)) = edge.call() {
                let site = *order.entry((caller, bci)).or_insert_with(|| {
                    sites.push(Vec::new());
                    sites.len() - 1
                });
                sites[site].push((index, callee));
            }
        }
        let mut budget = SITE_NODES;
        for site in sites {
            if site.iter().all(|&(_, callee)| callee == site[0].1) {
                continue;
            }
            let indices: Vec<usize> = site.into_iter().map(|(index, _)| index).collect();
            // All of a site's contexts weighed, or none (one unit per site).
            let weights: Option<Vec<Weight>> =
                indices.iter().map(|&index| subtree_weight(tree, self.edges[index].node, &mut budget)).collect();
            if let Some(weights) = weights {
                for (index, cum) in indices.into_iter().zip(weights) {
                    self.edges[index].cum = Some(cum);
                }
            }
        }
    }

    fn share(&self, weight: &Weight) -> f64 {
        match self.total.get(self.metric) {
            0 => 0.0,
            whole => weight.get(self.metric) as f64 / whole as f64,
        }
    }
}

/// The profile's method as the table keys it.
pub fn key_of(methods: &MethodTable, method: MethodId) -> MethodKey {
    let info = methods.get(method);
    MethodKey::new(&info.class, &info.name, &info.signature)
}

/// Profile methods to table methods, each looked up once.
struct Names<'a> {
    methods: &'a MethodTable,
    table: &'a InlineTable,
    known: HashMap<MethodId, Option<JitMethod>>,
}

impl Names<'_> {
    fn get(&mut self, method: MethodId) -> Option<JitMethod> {
        let (methods, table) = (self.methods, self.table);
        *self.known.entry(method).or_insert_with(|| table.method(&key_of(methods, method)))
    }
}

/// The self weights of `node`'s subtree, reaching at most `budget` nodes
/// (spent as they are reached); `None` when that was not enough.
fn subtree_weight(tree: &Pcct, node: NodeId, budget: &mut usize) -> Option<Weight> {
    *budget = budget.checked_sub(1)?;
    let mut sum = Weight::ZERO;
    let mut pending = vec![node];
    while let Some(next) = pending.pop() {
        sum.add(&tree.node_weight(next));
        for child in tree.children(next) {
            *budget = budget.checked_sub(1)?;
            pending.push(child);
        }
    }
    Some(sum)
}

/// The state of each copied edge, in order.
pub fn edge_states(table: &InlineTable, methods: &MethodTable, contexts: &EdgeContexts) -> Vec<EdgeState> {
    let mut names = Names { methods, table, known: HashMap::new() };
    contexts.edges.iter().map(|edge| state(table, &mut names, edge)).collect()
}

fn state(table: &InlineTable, names: &mut Names, edge: &CopiedEdge) -> EdgeState {
    let Some((&(callee, call_bci), above)) = edge.path.split_last() else { return EdgeState::UNKNOWN };
    let path: Vec<Step> = above.iter().map(|&(method, bci)| Step { method: names.get(method), bci }).collect();
    edge_state(table, &path, call_bci, names.get(callee))
}

/// Every copied edge that is a call between Java methods assessed (see
/// [`crate::advice`]); edges from the tree's root or into or out of
/// pseudo-frames (`[unknown_Java]`, `[gc_active]`, ...) are not calls and
/// are left out.
pub fn assess_edges(
    table: &InlineTable,
    methods: &MethodTable,
    contexts: &EdgeContexts,
    flags: InlineFlags,
    now_ns: u64,
) -> Vec<EdgeAdvice> {
    let mut names = Names { methods, table, known: HashMap::new() };
    let mut assessed = Vec::with_capacity(contexts.edges.len());
    let callees = callees_by_site(methods, contexts);
    for edge in &contexts.edges {
        let Some((&(callee, bci), above)) = edge.path.split_last() else { continue };
        let Some(&(caller, _)) = above.last() else { continue };
        let java = |method| methods.get(method).kind == MethodKind::Java;
        if bci < 0 || !java(caller) || !java(callee) {
            continue;
        }
        let mut roots: Vec<MethodKey> = Vec::new();
        for &(method, _) in above.iter().rev().filter(|&&(method, _)| java(method)).take(flags.inline_depth() + 1) {
            let key = key_of(methods, method);
            if !roots.contains(&key) {
                roots.push(key);
            }
        }
        let call = HotCall {
            caller: key_of(methods, caller),
            call_site: CallSite { bci, line: methods.get(caller).line_of(bci) },
            callee: key_of(methods, callee),
            weight: edge.weight,
            share: contexts.share(&edge.weight),
            roots,
            callees_at_site: callees.get(&(caller, bci)).map_or(1, Vec::len),
            site_share: site_share(callees.get(&(caller, bci)), callee),
            context: Completeness::of_outermost(methods, edge.outermost),
        };
        let state = state(table, &mut names, edge);
        assessed.push(assess(call, &state, table, flags, now_ns));
    }
    assessed
}

/// The different methods the copied edges call from each call site
/// (caller, bci), across contexts, each with its contexts' samples (see
/// [`CopiedEdge::cum`]): more methods than C2's type profile holds is a
/// megamorphic call, unless one has the major share.
fn callees_by_site(methods: &MethodTable, contexts: &EdgeContexts) -> HashMap<(MethodId, i32), Vec<(MethodId, u64)>> {
    let mut sites: HashMap<(MethodId, i32), Vec<(MethodId, u64)>> = HashMap::new();
    for edge in &contexts.edges {
        let Some((caller, bci, callee)) = edge.call() else { continue };
        if methods.get(callee).kind != MethodKind::Java {
            continue;
        }
        let samples = edge.cum.unwrap_or(edge.weight).samples;
        let callees = sites.entry((caller, bci)).or_default();
        match callees.iter_mut().find(|(method, _)| *method == callee) {
            Some((_, sum)) => *sum += samples,
            None => callees.push((callee, samples)),
        }
    }
    sites
}

/// `callee`'s share of the samples of the calls from its site (1 when the
/// site has no samples).
fn site_share(callees: Option<&Vec<(MethodId, u64)>>, callee: MethodId) -> f64 {
    let Some(callees) = callees else { return 1.0 };
    let all: u64 = callees.iter().map(|&(_, samples)| samples).sum();
    let mine = callees.iter().find(|&&(method, _)| method == callee).map_or(0, |&(_, samples)| samples);
    if all == 0 {
        1.0
    } else {
        mine as f64 / all as f64
    }
}

/// What `/api/hot-edges` adds to each edge.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EdgeInlining {
    /// Whether the call is inlined in the code that runs the caller here:
    /// `true`, `false` or `"unknown"`.
    pub inlined: Inlined,
    /// That code's compile level: 0 interpreted, 1-3 C1, 4 C2.
    pub caller_level: Option<u8>,
    /// The method whose compiled code runs the caller here (`class.name`).
    pub compiled_in: Option<String>,
    /// The loop bci when that code is on-stack-replacement code.
    pub osr_bci: Option<i32>,
    /// How long ago that method's current code last changed.
    pub code_changed_ago_ns: Option<u64>,
    /// How the samples saw the callee run in this context (`kinds=on`):
    /// `inlined`, `interpreted`, `c1_tier1`..`c1_tier3`, `c2`, `native`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampled_kind: Option<FrameKind>,
    /// Whether the samples saw the call inlined (`kinds=on`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampled_inlined: Option<bool>,
    /// Where the samples and the inline records disagree, why they can.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disagreement: Option<String>,
}

impl EdgeInlining {
    /// What the samples saw of an edge whose callee ran as `kind`, beside
    /// what the inline records say (`inlined`).
    fn sampled(mut self, kind: FrameKind) -> EdgeInlining {
        if kind == FrameKind::Unknown {
            return self;
        }
        let sampled_inlined = kind == FrameKind::Inlined;
        self.sampled_kind = Some(kind);
        self.sampled_inlined = Some(sampled_inlined);
        self.disagreement = match (sampled_inlined, self.inlined) {
            (true, Inlined::No) => Some(
                "the samples saw the call inlined; the caller's current code does not inline it: that code \
                 replaced the code sampled here (deoptimized or recompiled), or the sampled code is the other \
                 entry's (OSR or normal)"
                    .to_string(),
            ),
            (false, Inlined::Yes) => Some(format!(
                "the samples saw the callee run as {} code; the caller's current code inlines it: the samples \
                 here are older than that code, or ran the other entry's (OSR or normal)",
                kind.name()
            )),
            _ => None,
        };
        self
    }
}

/// The inlining of each copied edge, in order.
pub fn inlining(jit: &Jit, methods: &MethodTable, contexts: &EdgeContexts, now_ns: u64) -> Vec<EdgeInlining> {
    let table = extract(jit, methods, contexts);
    edge_states(&table, methods, contexts)
        .into_iter()
        .zip(&contexts.edges)
        .map(|(state, edge)| {
            EdgeInlining {
                inlined: state.inlined,
                caller_level: state.caller_level,
                compiled_in: state.code.map(|code| table.key(code.root).display()),
                osr_bci: state.code.and_then(|code| code.osr_bci),
                code_changed_ago_ns: state.changed_ns.map(|at| now_ns.saturating_sub(at)),
                sampled_kind: None,
                sampled_inlined: None,
                disagreement: None,
            }
            .sampled(edge.kind)
        })
        .collect()
}

/// What the join of `contexts` reads of the inline table, copied under
/// its lock (the keys are made before it is taken): the join runs after.
fn extract(jit: &Jit, methods: &MethodTable, contexts: &EdgeContexts) -> InlineTable {
    let ids: BTreeSet<MethodId> = contexts.edges.iter().flat_map(|edge| edge.path.iter().map(|&(id, _)| id)).collect();
    let keys: Vec<MethodKey> = ids.into_iter().map(|id| key_of(methods, id)).collect();
    jit.table.lock().extract(&keys)
}

/// The advice for the copied edges: at least `min_share`, at most `limit`
/// of each list.
pub fn advice(
    jit: &Jit,
    methods: &MethodTable,
    contexts: &EdgeContexts,
    min_share: f64,
    limit: usize,
    now_ns: u64,
) -> Advice {
    let flags = jit.setup().flags;
    let edges = assess_edges(&extract(jit, methods, contexts), methods, contexts, flags, now_ns);
    advise(edges, min_share, limit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Inlined;
    use crate::table::{CodeFacts, Limits, MethodFacts};
    use crate::tree::TreeBuilder;
    use pcct::{Frame, Marks, TreeConfig};

    /// A profile main -> caller -> {big, small}, and a table in which
    /// main's OSR code inlines caller and small but calls big.
    fn setup() -> (Pcct, MethodTable, InlineTable) {
        let mut methods = MethodTable::new();
        let main = methods.intern("p.T", "main", "()V");
        let caller = methods.intern("p.T", "caller", "()V");
        let big = methods.intern("p.T", "big", "()V");
        let small = methods.intern("p.T", "small", "()V");
        let mut tree = Pcct::new(TreeConfig::default()).unwrap();
        let weight = Weight { samples: 1, cpu_ns: 10, wall_ns: 10, ..Weight::default() };
        for (leaf, bci) in [(big, 3), (small, 4), (big, 3)] {
            let stack = [Frame::new(main, 2), Frame::new(caller, bci), Frame::new(leaf, 0)];
            tree.record(&mut Marks::new(), &stack, weight).unwrap();
        }
        let mut table = InlineTable::new(Limits::default());
        let names = ["main", "caller", "big", "small"]
            .iter()
            .enumerate()
            .map(|(i, name)| {
                (i as u64 + 1, Some(MethodFacts { key: MethodKey::new("p.T", name, "()V"), bytecodes: Some(9) }))
            })
            .collect();
        let mut osr = TreeBuilder::new(1, 64);
        osr.add_chain(&[(4, 0), (2, 4), (1, 2)]).unwrap();
        osr.add_chain(&[(2, 3), (1, 2)]).unwrap();
        osr.add_chain(&[(2, 9), (1, 2)]).unwrap();
        let facts = CodeFacts {
            address: 1,
            method: 1,
            level: Some(4),
            osr_bci: Some(0),
            compile_id: Some(1),
            ..CodeFacts::default()
        };
        table.load(facts, osr, names, 0);
        table.mark_complete();
        (tree, methods, table)
    }

    #[test]
    fn edges_are_joined_in_their_context() {
        let (tree, methods, table) = setup();
        let contexts = EdgeContexts::copy(&tree, &tree.top_edges(10), 1000);
        let states = edge_states(&table, &methods, &contexts);
        let by_callee: Vec<(String, Inlined)> = contexts
            .edges
            .iter()
            .zip(&states)
            .map(|(edge, state)| (methods.get(edge.path.last().unwrap().0).name.to_string(), state.inlined))
            .collect();
        assert!(by_callee.contains(&("big".to_string(), Inlined::No)), "{by_callee:?}");
        assert!(by_callee.contains(&("small".to_string(), Inlined::Yes)), "{by_callee:?}");
        assert!(by_callee.contains(&("caller".to_string(), Inlined::Yes)), "{by_callee:?}");
        let advice = assess_edges(&table, &methods, &contexts, InlineFlags::default(), 5);
        let big = advice.iter().find(|edge| edge.callee.name == "big").unwrap();
        assert_eq!(big.compiled_in.as_ref().map(|key| key.name.as_str()), Some("main"));
        assert_eq!(big.call_site.bci, 3);
        let roots: Vec<&str> = big.roots.iter().map(|key| key.name.as_str()).collect();
        assert_eq!(roots, vec!["caller", "main"]);
        assert!(big.share > 0.0);
    }

    /// Advice for the calls from `caller` at bci 9 to a, b and c, sampled
    /// `samples` times each, one thread's samples in a row: the call is
    /// new only in the first of each (its edge weight is 1).
    fn three_callees(samples: [u64; 3]) -> Vec<EdgeAdvice> {
        let (mut tree, mut methods, table) = setup();
        let caller = methods.intern("p.T", "caller", "()V");
        let main = methods.intern("p.T", "main", "()V");
        let mut marks = Marks::new();
        for (name, samples) in ["a", "b", "c"].into_iter().zip(samples) {
            let callee = methods.intern("p.T", name, "()V");
            let stack = [Frame::new(main, 2), Frame::new(caller, 9), Frame::new(callee, 0)];
            for _ in 0..samples {
                let weight = Weight { samples: 1, cpu_ns: 10, wall_ns: 10, ..Weight::default() };
                tree.record(&mut marks, &stack, weight).unwrap();
            }
        }
        let contexts = EdgeContexts::copy_for_advice(&tree, &tree.top_edges(20), 1000);
        assert!(EdgeContexts::copy(&tree, &tree.top_edges(20), 1000).edges.iter().all(|edge| edge.cum.is_none()));
        let advice = assess_edges(&table, &methods, &contexts, InlineFlags::default(), 5);
        let big = advice.iter().find(|edge| edge.callee.name == "big").unwrap();
        assert_eq!((big.callees_at_site, big.site_share), (1, 1.0));
        advice.into_iter().filter(|edge| edge.call_site.bci == 9).collect()
    }

    #[test]
    fn a_site_calling_three_methods_is_megamorphic_unless_one_has_the_major_share() {
        let even = three_callees([10, 10, 10]);
        assert_eq!(even.len(), 3);
        for edge in &even {
            assert_eq!(edge.callees_at_site, 3);
            assert!((edge.site_share - 1.0 / 3.0).abs() < 1e-9);
            assert_eq!(edge.action, crate::Action::Cannot, "{}", edge.why);
            assert!(edge.why.contains("megamorphic") && edge.why.contains("33 %"), "{}", edge.why);
        }
        let major = three_callees([90, 5, 5]);
        let action = |name: &str| major.iter().find(|edge| edge.callee.name == name).unwrap();
        assert_eq!(action("a").calls, 1, "the call to a was new in one sample only");
        assert_eq!(action("a").action, crate::Action::Inline, "{}", action("a").why);
        assert!(action("a").why.contains("90 % of its samples"), "{}", action("a").why);
        assert_eq!(action("b").action, crate::Action::Cannot);
        assert_eq!(action("c").action, crate::Action::Cannot);
        let just_under = three_callees([89, 6, 5]);
        assert!(just_under.iter().all(|edge| edge.action == crate::Action::Cannot));
    }

    #[test]
    fn a_spent_budget_keeps_the_tail_of_each_path() {
        let (tree, _, _) = setup();
        let nodes = tree.top_edges(10);
        let contexts = EdgeContexts::copy(&tree, &nodes, 0);
        assert!(contexts.edges.iter().all(|edge| edge.path.len() == tree.depth(edge.node).min(TAIL_STEPS)));
        for budget in [0, 1000] {
            let contexts = EdgeContexts::copy(&tree, &nodes, budget);
            assert!(contexts.edges.iter().all(|edge| edge.outermost == tree.method(tree.outermost(edge.node))));
        }
    }

    #[test]
    fn an_edge_in_a_partial_stack_says_so_with_its_path_cut_or_not() {
        let (mut tree, mut methods, table) = setup();
        let broken = methods.intern_pseudo("[break_native]");
        let caller = methods.intern("p.T", "caller", "()V");
        let big = methods.intern("p.T", "big", "()V");
        // A recursion deeper than TAIL_STEPS above the break: with no
        // budget left the copied path is cut short of the pseudo-frame.
        let mut stack = vec![Frame::new(broken, pcct::NO_BCI)];
        stack.extend([Frame::new(caller, 8); TAIL_STEPS + 8]);
        stack.extend([Frame::new(caller, 7), Frame::new(big, 0)]);
        tree.record(&mut Marks::new(), &stack, Weight { samples: 1, cpu_ns: 10, wall_ns: 10, ..Weight::default() })
            .unwrap();
        for budget in [1000, 0] {
            let contexts = EdgeContexts::copy(&tree, &tree.top_edges(20), budget);
            let into_big = contexts.edges.iter().find(|edge| tree.depth(edge.node) == stack.len()).unwrap();
            assert_eq!(into_big.path.len(), if budget == 0 { TAIL_STEPS } else { stack.len() });
            let advice = assess_edges(&table, &methods, &contexts, InlineFlags::default(), 5);
            let partial = |bci: i32| {
                advice.iter().find(|edge| edge.call_site.bci == bci).map(|edge| (edge.partial_calls, edge.calls))
            };
            assert_eq!(partial(7), Some((1, 1)), "budget {budget}: {advice:?}");
            assert_eq!(partial(3), Some((0, 2)), "budget {budget}: {advice:?}");
        }
    }

    #[test]
    fn an_edge_says_what_the_samples_saw_beside_the_records_and_names_a_disagreement() {
        let records = |inlined| EdgeInlining {
            inlined,
            caller_level: Some(4),
            compiled_in: None,
            osr_bci: None,
            code_changed_ago_ns: None,
            sampled_kind: None,
            sampled_inlined: None,
            disagreement: None,
        };
        let agreed = records(Inlined::Yes).sampled(FrameKind::Inlined);
        assert_eq!((agreed.sampled_inlined, agreed.disagreement), (Some(true), None));
        let older = records(Inlined::Yes).sampled(FrameKind::Interpreted);
        assert_eq!(older.sampled_kind, Some(FrameKind::Interpreted));
        assert!(older.disagreement.is_some_and(|why| why.contains("interpreted code")));
        let replaced = records(Inlined::No).sampled(FrameKind::Inlined);
        assert!(replaced.disagreement.is_some_and(|why| why.contains("does not inline it")));
        let unknown = records(Inlined::No).sampled(FrameKind::Unknown);
        assert_eq!((unknown.sampled_kind, unknown.sampled_inlined, unknown.disagreement), (None, None, None));
        let json = serde_json::to_value(records(Inlined::No).sampled(FrameKind::Tier4)).unwrap();
        assert_eq!((json["sampled_kind"].as_str(), json["sampled_inlined"].as_bool()), (Some("c2"), Some(false)));
    }
}
