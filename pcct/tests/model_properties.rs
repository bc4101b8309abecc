//! Property tests of the PCCT against a naive model: a map from the full
//! context (the path of call sites and methods from the root) to weights,
//! updated with the same marked-frame rule but without any tree, list or
//! arena. Events (allocations, monitor waits) are recorded whole, without
//! marks, with a class frame as their leaf; in the model every one of
//! their frames is new, so an edge's event weight is its context's cum.

use std::collections::HashMap;

use pcct::export::xarc;
use pcct::{Frame, Marks, MethodId, MethodTable, Metric, NodeId, Pcct, TreeConfig, TreeMode, Weight};
use proptest::prelude::*;

/// A context: (call site in the caller, method) from the root down.
type Context = Vec<(i32, MethodId)>;

#[derive(Default)]
struct Model {
    self_weight: HashMap<Context, Weight>,
    edge_weight: HashMap<Context, Weight>,
    method_self: HashMap<MethodId, Weight>,
    /// Each sample's weight, once per distinct method on its stack.
    method_total: HashMap<MethodId, Weight>,
    previous: HashMap<usize, Vec<Frame>>,
    total: Weight,
}

fn context_of(stack: &[Frame], depth: usize) -> Context {
    (0..depth).map(|i| (if i == 0 { -1 } else { stack[i - 1].bci }, stack[i].method)).collect()
}

impl Model {
    /// An event: every frame new, the thread's previous stack untouched.
    fn record_event(&mut self, stack: &[Frame], weight: Weight) {
        const EVENTS: usize = usize::MAX;
        self.previous.remove(&EVENTS);
        self.record(EVENTS, stack, weight);
        self.previous.remove(&EVENTS);
    }

    fn record(&mut self, thread: usize, stack: &[Frame], weight: Weight) {
        let previous = self.previous.get(&thread).cloned().unwrap_or_default();
        // Still marked: same methods through i, same bcis before i.
        let mut marked = 0;
        while marked < stack.len().min(previous.len()) && previous[marked].method == stack[marked].method {
            marked += 1;
            if previous[marked - 1].bci != stack[marked - 1].bci {
                break;
            }
        }
        for depth in marked + 1..=stack.len() {
            self.edge_weight.entry(context_of(stack, depth)).or_default().add(&weight);
        }
        self.self_weight.entry(context_of(stack, stack.len())).or_default().add(&weight);
        // An empty stack is a sample of the root itself.
        let leaf = stack.last().map_or(pcct::Builtin::Root.id(), |frame| frame.method);
        self.method_self.entry(leaf).or_default().add(&weight);
        let mut on_stack: Vec<MethodId> = stack.iter().map(|frame| frame.method).collect();
        if on_stack.is_empty() {
            on_stack.push(leaf);
        }
        on_stack.sort_unstable();
        on_stack.dedup();
        for method in on_stack {
            self.method_total.entry(method).or_default().add(&weight);
        }
        self.total.add(&weight);
        self.previous.insert(thread, stack.to_vec());
    }
}

fn tree_context(tree: &Pcct, node: NodeId) -> Context {
    tree.path(node).into_iter().map(|step| (tree.call_site(step), tree.method(step))).collect()
}

/// A thread's samples: each stack derives from the previous one by popping
/// some frames, changing the new leaf's bci, and pushing new frames, so
/// consecutive stacks share prefixes as real ones do.
#[derive(Clone, Debug)]
struct Step {
    thread: usize,
    pop: usize,
    rebci: Option<i32>,
    push: Vec<(u32, i32)>,
    cpu: u64,
    /// Instead of a sample, an event at the thread's new stack: (class,
    /// allocation or monitor, size or wait).
    event: Option<(usize, bool, u64)>,
}

/// Where a thread's event marks are kept, beside its sample marks.
const EVENT_MARKS: usize = 1 << 20;

/// Classes of events' leaves (interned after the methods).
const CLASSES: usize = 2;

fn steps(methods: u32, max_push: usize) -> impl Strategy<Value = Vec<Step>> {
    let event = proptest::option::weighted(0.3, (0..CLASSES, any::<bool>(), 1..5_000u64));
    let step = (
        0..3usize,
        0..6usize,
        proptest::option::of(0..3i32),
        prop::collection::vec((0..methods, 0..3i32), 0..max_push),
        1..2_000u64,
        event,
    )
        .prop_map(|(thread, pop, rebci, push, cpu, event)| Step { thread, pop, rebci, push, cpu, event });
    prop::collection::vec(step, 1..120)
}

/// A sampled stack or an event.
struct Sampled {
    thread: usize,
    stack: Vec<Frame>,
    weight: Weight,
    event: bool,
}

impl Sampled {
    fn record(&self, tree: &mut Pcct, marks: &mut HashMap<usize, Marks>) -> Result<pcct::Recorded, pcct::Dropped> {
        if self.event && self.thread == 2 {
            // From the thread's marks where it has any: the same tree as
            // from the root.
            match marks.get(&self.thread) {
                Some(near) => tree.record_event_near(near, &self.stack, self.weight),
                None => tree.record_event(&self.stack, self.weight),
            }
        } else if self.event {
            // Through the thread's event marks (as the sampler records
            // them), started from its sample marks: the same tree again.
            let near = marks.get(&self.thread).cloned();
            let events = marks.entry(self.thread + EVENT_MARKS).or_default();
            tree.record_event_marked(events, near.as_ref(), &self.stack, self.weight)
        } else {
            tree.record(marks.entry(self.thread).or_default(), &self.stack, self.weight)
        }
    }

    fn record_in(&self, model: &mut Model) {
        if self.event {
            model.record_event(&self.stack, self.weight);
        } else {
            model.record(self.thread, &self.stack, self.weight);
        }
    }
}

/// `count` methods, then [`CLASSES`] classes.
fn intern(table: &mut MethodTable, count: u32) -> Vec<MethodId> {
    let mut ids: Vec<MethodId> = (0..count).map(|i| table.intern(&format!("C{i}"), &format!("m{i}"), "()V")).collect();
    ids.extend((0..CLASSES).map(|i| table.intern_type(&format!("T{i}[]"))));
    ids
}

/// Applies the steps, returning the stacks that were sampled (events with
/// their class frame on top).
fn stacks_of(steps: &[Step], ids: &[MethodId], distinct: bool) -> Vec<Sampled> {
    let classes = &ids[ids.len() - CLASSES..];
    let mut current: HashMap<usize, Vec<Frame>> = HashMap::new();
    let mut out = Vec::new();
    for step in steps {
        let stack = current.entry(step.thread).or_default();
        let keep = stack.len().saturating_sub(step.pop);
        stack.truncate(keep);
        if let (Some(bci), Some(last)) = (step.rebci, stack.last_mut()) {
            last.bci = bci;
        }
        for &(method, bci) in &step.push {
            let frame = Frame::new(ids[method as usize], bci);
            if distinct && stack.iter().any(|f| f.method == frame.method) {
                continue;
            }
            stack.push(frame);
        }
        let sampled = match step.event {
            None => Sampled {
                thread: step.thread,
                stack: stack.clone(),
                weight: Weight::sample(step.cpu, 1_000),
                event: false,
            },
            Some((class, allocation, amount)) => {
                let mut stack = stack.clone();
                stack.push(Frame::new(classes[class], -1));
                let weight =
                    if allocation { Weight::allocation(amount * 16, amount) } else { Weight::lock_wait(amount) };
                Sampled { thread: step.thread, stack, weight, event: true }
            }
        };
        out.push(sampled);
    }
    out
}

/// The totals and context counts the tree keeps as it records equal those
/// of a full pass over the tree.
fn assert_incremental_totals_match(tree: &Pcct) -> Result<(), TestCaseError> {
    for entry in tree.method_totals() {
        let kept = tree.method_summary(entry.method);
        prop_assert_eq!(kept.total, entry.total, "total of {:?}", entry.method);
        prop_assert_eq!(kept.self_weight, entry.self_weight, "self of {:?}", entry.method);
        if entry.method != pcct::Builtin::Root.id() {
            prop_assert_eq!(kept.contexts, entry.contexts, "contexts of {:?}", entry.method);
        }
    }
    Ok(())
}

fn check_sorted(values: &[u64]) {
    assert!(values.windows(2).all(|w| w[0] >= w[1]), "not sorted: {values:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn tree_matches_the_model(steps in steps(6, 5), capacity in 1usize..12) {
        let mut methods = MethodTable::new();
        let ids = intern(&mut methods, 6);
        let config = TreeConfig { hot_list_capacity: capacity, ..TreeConfig::default() };
        let mut tree = Pcct::new(config).unwrap();
        let mut model = Model::default();
        let mut marks: HashMap<usize, Marks> = HashMap::new();
        for sampled in stacks_of(&steps, &ids, false) {
            sampled.record(&mut tree, &mut marks).unwrap();
            sampled.record_in(&mut model);
        }
        prop_assert_eq!(tree.total(), model.total);

        // Same contexts, same self and edge weights (an edge's event
        // weights are its context's cum).
        let mut seen = 0;
        let cum = tree.cumulative();
        for node in tree.nodes().skip(1) {
            let context = tree_context(&tree, node);
            let model_edge = model.edge_weight.get(&context).copied().unwrap_or_default();
            let model_self = model.self_weight.get(&context).copied().unwrap_or_default();
            prop_assert_eq!(tree.edge_weight(node), model_edge.time(), "edge {:?}", context);
            prop_assert_eq!(tree.edge_weight(node).with_events_of(&cum[node.index()]), model_edge, "edge {:?}", context);
            for metric in Metric::ALL {
                prop_assert_eq!(tree.node_value(node, metric), model_self.get(metric));
            }
            prop_assert_eq!(tree.node_weight(node), model_self, "self {:?}", context);
            seen += 1;
        }
        prop_assert_eq!(seen, model.edge_weight.len());
        let root_self = model.self_weight.get(&Vec::new()).copied().unwrap_or_default();
        prop_assert_eq!(tree.node_weight(NodeId::ROOT), root_self);

        // Top-N order equals a full sort of the model, for every N.
        let metric = Metric::CpuNs;
        let mut model_nodes: Vec<u64> = model.self_weight.values().map(|w| w.get(metric)).filter(|&v| v > 0).collect();
        model_nodes.sort_unstable_by(|a, b| b.cmp(a));
        let mut model_edges: Vec<u64> = model.edge_weight.values().map(|w| w.get(metric)).filter(|&v| v > 0).collect();
        model_edges.sort_unstable_by(|a, b| b.cmp(a));
        let mut model_methods: Vec<u64> = model.method_self.values().map(|w| w.get(metric)).filter(|&v| v > 0).collect();
        model_methods.sort_unstable_by(|a, b| b.cmp(a));
        for n in [1, 3, capacity, capacity + 5, 1_000] {
            let nodes: Vec<u64> = tree.top_nodes(n).into_iter().map(|id| tree.node_weight(id).get(metric)).collect();
            let edges: Vec<u64> = tree.top_edges(n).into_iter().map(|id| tree.edge_weight(id).get(metric)).collect();
            let hot: Vec<u64> = tree.top_methods_by_self(n).into_iter().map(|(_, w)| w.get(metric)).collect();
            prop_assert_eq!(&nodes[..], &model_nodes[..n.min(model_nodes.len())]);
            prop_assert_eq!(&edges[..], &model_edges[..n.min(model_edges.len())]);
            prop_assert_eq!(&hot[..], &model_methods[..n.min(model_methods.len())]);
        }

        // Every event resource has its hot lists of contexts and methods:
        // the same order as a full sort of the model.
        for event in Metric::EVENTS {
            let mut model_nodes: Vec<u64> = model.self_weight.values().map(|w| w.get(event)).filter(|&v| v > 0).collect();
            model_nodes.sort_unstable_by(|a, b| b.cmp(a));
            let mut model_methods: Vec<u64> = model.method_self.values().map(|w| w.get(event)).filter(|&v| v > 0).collect();
            model_methods.sort_unstable_by(|a, b| b.cmp(a));
            let mut model_edges: Vec<u64> = model.edge_weight.values().map(|w| w.get(event)).filter(|&v| v > 0).collect();
            model_edges.sort_unstable_by(|a, b| b.cmp(a));
            for n in [1, 3, capacity, capacity + 5, 1_000] {
                let nodes: Vec<u64> = tree.top_nodes_by(event, n).into_iter().map(|id| tree.node_value(id, event)).collect();
                prop_assert_eq!(&nodes[..], &model_nodes[..n.min(model_nodes.len())], "{:?}", event);
                let hot: Vec<u64> = tree.top_methods_by_self_in(event, n).into_iter().map(|(_, w)| w.get(event)).collect();
                prop_assert_eq!(&hot[..], &model_methods[..n.min(model_methods.len())], "{:?}", event);
                let edges: Vec<u64> = tree.top_edges_by(event, n).into_iter().map(|id| cum[id.index()].get(event)).collect();
                prop_assert_eq!(&edges[..], &model_edges[..n.min(model_edges.len())], "{:?}", event);
            }
            let listed: Vec<u64> = tree.hot_node_list_by(event).unwrap().map(|id| tree.node_value(id, event)).collect();
            check_sorted(&listed);
            prop_assert!(listed.len() <= capacity);
        }
        // A time resource other than the tree's is answered by a sort.
        let mut model_samples: Vec<u64> = model.self_weight.values().map(|w| w.samples).filter(|&v| v > 0).collect();
        model_samples.sort_unstable_by(|a, b| b.cmp(a));
        let nodes: Vec<u64> = tree.top_nodes_by(Metric::Samples, 5).into_iter().map(|id| tree.node_weight(id).samples).collect();
        prop_assert_eq!(&nodes[..], &model_samples[..5.min(model_samples.len())]);

        // The hot lists themselves are always sorted and bounded.
        let listed: Vec<u64> = tree.hot_node_list().map(|id| tree.node_weight(id).get(metric)).collect();
        check_sorted(&listed);
        prop_assert!(listed.len() <= capacity);
        let listed: Vec<u64> = tree.hot_edge_list().map(|id| tree.edge_weight(id).get(metric)).collect();
        check_sorted(&listed);
        prop_assert!(listed.len() <= capacity);

        // Cum of the root is the total; method self sums equal the counters.
        prop_assert_eq!(tree.cumulative()[0], tree.total());
        // A method's total counts every sample with the method on its stack
        // once, however often it recurs there.
        for entry in tree.method_totals() {
            if entry.method != pcct::Builtin::Root.id() {
                prop_assert_eq!(entry.self_weight, model.method_self.get(&entry.method).copied().unwrap_or_default());
                prop_assert_eq!(entry.total, model.method_total.get(&entry.method).copied().unwrap_or_default());
            }
        }
        assert_incremental_totals_match(&tree)?;
        // hot_methods (from the incremental counters) orders like a full sort
        // of the model, by self and by total.
        for (order, model_map, metric) in [
            (pcct::MethodOrder::SelfWeight, &model.method_self, Metric::CpuNs),
            (pcct::MethodOrder::Total, &model.method_total, Metric::CpuNs),
            (pcct::MethodOrder::SelfWeight, &model.method_self, Metric::AllocBytes),
            (pcct::MethodOrder::Total, &model.method_total, Metric::LockWaitNs),
        ] {
            // A method belongs in a list by an event resource when it has
            // any of it, in a list by a time resource when it has any time.
            let belongs = |m: &MethodId| {
                let total = model.method_total[m];
                if metric.is_event() { total.get(metric) > 0 } else { total.has_time() }
            };
            let mut expected: Vec<(u64, MethodId)> = model.method_total.keys()
                .filter(|m| belongs(m))
                .map(|m| (model_map.get(m).copied().unwrap_or_default().get(metric), *m))
                .collect();
            expected.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            for n in [0, 1, 3, 100] {
                let got: Vec<u64> = tree.hot_methods(n, order, metric).iter().map(|entry| match order {
                    pcct::MethodOrder::SelfWeight => entry.self_weight.get(metric),
                    pcct::MethodOrder::Total => entry.total.get(metric),
                }).collect();
                let want: Vec<u64> = expected.iter().take(n).map(|&(weight, _)| weight).collect();
                prop_assert_eq!(got, want, "{:?} top {}", order, n);
            }
        }
    }

    #[test]
    fn xarc_invariants_hold(steps in steps(8, 5), recursive in any::<bool>()) {
        let mut methods = MethodTable::new();
        let ids = intern(&mut methods, 8);
        let mut tree = Pcct::new(TreeConfig::default()).unwrap();
        let mut marks: HashMap<usize, Marks> = HashMap::new();
        for sampled in stacks_of(&steps, &ids, !recursive) {
            sampled.record(&mut tree, &mut marks).unwrap();
        }
        let totals: HashMap<MethodId, pcct::MethodTotals> = tree.method_totals().into_iter().map(|t| (t.method, t)).collect();
        for stanza in xarc::stanzas(&tree, Metric::CpuNs) {
            let sum = |records: &[(MethodId, xarc::Arc)]| {
                records.iter().fold(xarc::Arc::default(), |mut acc, (_, record)| {
                    acc.calls.add(&record.calls);
                    acc.base.add(&record.base);
                    acc.cum.add(&record.cum);
                    acc
                })
            };
            let parents = sum(&stanza.parents);
            let children = sum(&stanza.children);
            // Always: parents decompose calls, base and cum of self.
            prop_assert_eq!(parents.calls, stanza.own.calls);
            prop_assert_eq!(parents.base, stanza.own.base);
            prop_assert_eq!(parents.cum, stanza.own.cum);
            // Self agrees with the method totals (base = self, cum = total).
            let totals = totals.get(&stanza.method).copied();
            if let Some(totals) = totals {
                prop_assert_eq!(totals.self_weight, stanza.own.base);
                prop_assert_eq!(totals.total, stanza.own.cum);
            }
            // Without recursion: children decompose cum - base.
            if !recursive {
                for metric in Metric::ALL {
                    prop_assert_eq!(children.cum.get(metric), stanza.own.cum.get(metric) - stanza.own.base.get(metric));
                }
            }
        }
    }

    #[test]
    fn limits_hold_and_purge_empties(steps in steps(6, 8), arena_nodes in 16usize..40, walk in proptest::option::of(1usize..4)) {
        let mut methods = MethodTable::new();
        let ids = intern(&mut methods, 6);
        let config = TreeConfig {
            arena_bytes: arena_nodes * pcct::BYTES_PER_NODE_AND_EDGE,
            walk_limit: walk,
            ..TreeConfig::default()
        };
        let max_nodes = config.max_nodes();
        let mut tree = Pcct::new(config).unwrap();
        let mut marks: HashMap<usize, Marks> = HashMap::new();
        let mut recorded = Weight::ZERO;
        let mut dropped = 0;
        let samples = stacks_of(&steps, &ids, false);
        for sampled in &samples {
            match sampled.record(&mut tree, &mut marks) {
                Ok(done) => {
                    recorded.add(&sampled.weight);
                    // A bounded walk never adds more than BUFSIZE frames
                    // (events, which are not walked, are recorded whole).
                    if let Some(limit) = walk.filter(|_| sampled.weight.has_time()) {
                        prop_assert!(done.new_frames <= limit);
                    }
                }
                Err(_) => dropped += 1,
            }
            prop_assert!(tree.node_count() <= max_nodes);
            prop_assert!(tree.arena_used() <= tree.arena_limit(), "{} > {}", tree.arena_used(), tree.arena_limit());
        }
        assert_incremental_totals_match(&tree)?;
        // The recursion flag follows the tree path, unattached roots included.
        for node in tree.nodes().skip(1) {
            let path = tree.path(node);
            let recurs = path[..path.len() - 1].iter().any(|&above| tree.method(above) == tree.method(node));
            prop_assert_eq!(tree.is_outermost(node), !recurs, "node {:?} on {:?}", node, path);
        }
        prop_assert_eq!(tree.total(), recorded);
        prop_assert_eq!(tree.stats().dropped_full, dropped);
        prop_assert_eq!(tree.cumulative()[0], recorded);

        tree.purge();
        prop_assert_eq!(tree.node_count(), 1);
        prop_assert_eq!(tree.total(), Weight::ZERO);
        prop_assert_eq!(tree.top_nodes(10).len(), 0);
        prop_assert_eq!(tree.top_edges(10).len(), 0);
        prop_assert_eq!(tree.top_methods_by_self(10).len(), 0);
        prop_assert_eq!(tree.top_nodes_by(Metric::AllocBytes, 10).len(), 0);
        prop_assert_eq!(tree.event_contexts(), 0);
        // Marks from before the purge are ignored: recording starts at the root.
        if let Some(sampled) = samples.last().filter(|s| s.stack.len() + 3 < max_nodes) {
            let recorded = sampled.record(&mut tree, &mut marks).unwrap();
            let stack = &sampled.stack;
            prop_assert_eq!(recorded.new_frames, match walk.filter(|_| sampled.weight.has_time()) { Some(limit) => stack.len().min(limit), None => stack.len() });
        }
    }

    #[test]
    fn hot_method_mode_counts_leaves(steps in steps(6, 5)) {
        let mut methods = MethodTable::new();
        let ids = intern(&mut methods, 6);
        let mut tree = Pcct::new(TreeConfig { mode: TreeMode::HotMethods, ..TreeConfig::default() }).unwrap();
        let mut model = Model::default();
        let mut marks: HashMap<usize, Marks> = HashMap::new();
        for sampled in stacks_of(&steps, &ids, false) {
            sampled.record(&mut tree, &mut marks).unwrap();
            sampled.record_in(&mut model);
        }
        prop_assert_eq!(tree.node_count(), 1);
        for (method, weight) in tree.top_methods_by_self(usize::MAX) {
            prop_assert_eq!(Some(&weight), model.method_self.get(&method));
        }
        let totals = tree.hot_methods(usize::MAX, pcct::MethodOrder::Total, Metric::CpuNs);
        prop_assert_eq!(totals.len(), model.method_self.values().filter(|w| w.has_time()).count());
    }
}
