//! Whaley's Figure 6 example and the marked-frame semantics around it.
//!
//! The figure itself is a drawing that the text of the paper we have does
//! not carry, so the six samples are reconstructed from Section 5.1: the
//! program of Figure 5 (M calls A and D; A calls B and C; D calls A and C),
//! six samples in which B never appears, M calls A twice through one call
//! site and D once. The PCCT has one shared M->A edge, two A nodes (called
//! by M and by D), two C nodes, and no B node.

use pcct::{Frame, Marks, MethodId, MethodTable, NodeId, Pcct, TreeConfig, Weight};

struct Program {
    methods: MethodTable,
    m: MethodId,
    a: MethodId,
    c: MethodId,
    d: MethodId,
}

fn program() -> Program {
    let mut methods = MethodTable::new();
    let m = methods.intern("Fig5", "M", "()V");
    let a = methods.intern("Fig5", "A", "()V");
    let _b = methods.intern("Fig5", "B", "()V");
    let c = methods.intern("Fig5", "C", "()V");
    let d = methods.intern("Fig5", "D", "()V");
    Program { methods, m, a, c, d }
}

fn child(tree: &Pcct, parent: NodeId, method: MethodId, call_site: i32) -> NodeId {
    tree.children(parent)
        .find(|&n| tree.method(n) == method && tree.call_site(n) == call_site)
        .unwrap_or_else(|| panic!("no child {method:?}@{call_site} under {parent:?}"))
}

fn one() -> Weight {
    Weight::sample(1_000_000, 1_000_000)
}

#[test]
fn figure_6_six_samples_give_the_pcct_of_6c() {
    let p = program();
    let f = Frame::new;
    // M's call sites: A at bci 1, D at bci 6. A calls C at 4; D calls A at 3, C at 7.
    let samples = [
        vec![f(p.m, 1), f(p.a, 4), f(p.c, 0)], // first A, in C
        vec![f(p.m, 1), f(p.a, 5)],            // back in A after C returned
        vec![f(p.m, 1), f(p.a, 4), f(p.c, 2)], // A calls C again: a new C
        vec![f(p.m, 6), f(p.d, 0)],            // M moved on to D
        vec![f(p.m, 6), f(p.d, 3), f(p.a, 0)], // D calls A: a second A node
        vec![f(p.m, 6), f(p.d, 7), f(p.c, 0)], // D calls C
    ];
    let mut tree = Pcct::new(TreeConfig::default()).unwrap();
    let mut marks = Marks::new();
    let mut new_frames = Vec::new();
    for stack in &samples {
        new_frames.push(tree.record(&mut marks, stack, one()).unwrap().new_frames);
    }
    assert_eq!(new_frames, vec![3, 0, 1, 1, 1, 1], "frames new at each sample");

    let m = child(&tree, NodeId::ROOT, p.m, -1);
    let a_from_m = child(&tree, m, p.a, 1);
    let c_from_a = child(&tree, a_from_m, p.c, 4);
    let d = child(&tree, m, p.d, 6);
    let a_from_d = child(&tree, d, p.a, 3);
    let c_from_d = child(&tree, d, p.c, 7);
    assert_eq!(tree.node_count(), 7, "root, M, A, C, D, A, C and no B");

    let samples_of = |w: Weight| w.samples;
    // (self, edge) in samples.
    let expect = [(m, 0, 1), (a_from_m, 1, 1), (c_from_a, 2, 2), (d, 1, 1), (a_from_d, 1, 1), (c_from_d, 1, 1)];
    for (node, self_samples, edge_samples) in expect {
        let name = p.methods.display_name(tree.method(node));
        assert_eq!(samples_of(tree.node_weight(node)), self_samples, "self of {name}");
        assert_eq!(samples_of(tree.edge_weight(node)), edge_samples, "edge into {name}");
    }
    assert_eq!(tree.total().samples, 6);
    assert_eq!(tree.cumulative()[m.index()].samples, 6);
    // The hottest context is M->A->C, the hottest edge the call A->C.
    assert_eq!(tree.top_nodes(1), vec![c_from_a]);
    assert_eq!(tree.top_edges(1), vec![c_from_a]);
    // Two A contexts, one A method.
    let hot = tree.hot_methods(10, pcct::MethodOrder::Total, pcct::Metric::CpuNs);
    let a = hot.iter().find(|h| h.method == p.a).unwrap();
    assert_eq!((a.self_weight.samples, a.total.samples, a.contexts), (2, 4, 2));
}

#[test]
fn a_loop_calling_a_short_method_weights_only_new_calls() {
    // main -> loop (long-running) -> short (called again and again).
    let mut methods = MethodTable::new();
    let main = methods.intern("T", "main", "()V");
    let looping = methods.intern("T", "loop", "()V");
    let short = methods.intern("T", "short", "()V");
    let f = Frame::new;
    let mut tree = Pcct::new(TreeConfig::default()).unwrap();
    let mut marks = Marks::new();
    // Samples alternate between the loop body and short().
    for i in 0..10 {
        let stack =
            if i % 2 == 0 { vec![f(main, 3), f(looping, 12), f(short, 1)] } else { vec![f(main, 3), f(looping, 20)] };
        tree.record(&mut marks, &stack, one()).unwrap();
    }
    let main_node = child(&tree, NodeId::ROOT, main, -1);
    let loop_node = child(&tree, main_node, looping, 3);
    let short_node = child(&tree, loop_node, short, 12);
    // The old prefix is not re-walked: main and loop got their edges once.
    assert_eq!(tree.edge_weight(main_node).samples, 1);
    assert_eq!(tree.edge_weight(loop_node).samples, 1);
    // Every sample in short() was a new call of it.
    assert_eq!(tree.edge_weight(short_node).samples, 5);
    assert_eq!(tree.node_weight(short_node).samples, 5);
    assert_eq!(tree.node_weight(loop_node).samples, 5);
}

#[test]
fn bounded_walk_leaves_deep_new_chains_unattached() {
    // Figure 10: a first sample on one branch, then a very deep new chain.
    let mut methods = MethodTable::new();
    let ids: Vec<MethodId> = (0..12).map(|i| methods.intern("Deep", &format!("f{i}"), "()V")).collect();
    let f = Frame::new;
    let config = TreeConfig { walk_limit: Some(4), ..TreeConfig::default() };
    let mut tree = Pcct::new(config).unwrap();
    let mut marks = Marks::new();
    tree.record(&mut marks, &[f(ids[0], 0), f(ids[1], 0)], one()).unwrap();
    let deep: Vec<Frame> = std::iter::once(f(ids[0], 1)).chain((2..12).map(|i| f(ids[i], 0))).collect();
    let recorded = tree.record(&mut marks, &deep, one()).unwrap();
    assert_eq!(recorded.new_frames, 4);
    assert_eq!(tree.stats().unattached, 1);
    let holder = child(&tree, NodeId::ROOT, pcct::Builtin::Unattached.id(), -1);
    // The unattached root is the method just beyond the four frames walked.
    let anchor = child(&tree, holder, ids[7], -1);
    assert_eq!(tree.path(recorded.leaf).len(), 6, "[unattached] -> f7 -> f8..f11");
    assert_eq!(tree.parent(tree.path(recorded.leaf)[2]), Some(anchor));
    // The same stack again continues inside the unattached subtree.
    let again = tree.record(&mut marks, &deep, one()).unwrap();
    assert_eq!((again.leaf, again.new_frames), (recorded.leaf, 0));
    assert_eq!(tree.node_weight(recorded.leaf).samples, 2);
}

#[test]
fn wall_credit_goes_to_the_previous_leaf() {
    let mut methods = MethodTable::new();
    let a = methods.intern("W", "a", "()V");
    let b = methods.intern("W", "b", "()V");
    let mut tree = Pcct::new(TreeConfig::default()).unwrap();
    let mut marks = Marks::new();
    let leaf = tree.record(&mut marks, &[Frame::new(a, 1), Frame::new(b, 0)], one()).unwrap().leaf;
    assert!(tree.record_at_marked_leaf(&marks, Weight { samples: 1, cpu_ns: 0, wall_ns: 5, ..Weight::ZERO }));
    assert_eq!(tree.node_weight(leaf).samples, 2);
    assert_eq!(tree.node_weight(leaf).wall_ns, 1_000_005);
    tree.purge();
    assert!(!tree.record_at_marked_leaf(&marks, one()), "stale marks are refused");
}

#[test]
fn events_are_recorded_whole_whatever_the_walk_bound() {
    // An allocation comes with its whole stack (no walk to bound): its
    // site hangs under its real callers, not under [unattached].
    let mut methods = MethodTable::new();
    let ids: Vec<MethodId> = (0..8).map(|i| methods.intern("Deep", &format!("f{i}"), "()V")).collect();
    let bytes = methods.intern_type("byte[]");
    let config = TreeConfig { walk_limit: Some(4), ..TreeConfig::default() };
    let mut tree = Pcct::new(config).unwrap();
    let stack: Vec<Frame> = ids.iter().map(|&id| Frame::new(id, 1)).chain([Frame::new(bytes, -1)]).collect();
    let recorded = tree.record_event(&stack, pcct::Weight::allocation(512, 1)).unwrap();
    assert_eq!(recorded.new_frames, 9);
    assert_eq!(tree.stats().unattached, 0);
    assert_eq!(tree.path(recorded.leaf).len(), 9, "f0 -> ... -> f7 -> byte[]");
    assert_eq!(tree.path(recorded.leaf)[0], child(&tree, NodeId::ROOT, ids[0], -1));
}

#[test]
fn an_event_near_its_threads_marks_lands_where_it_would_from_the_root() {
    // A thread's sample left it unattached (a deep new chain): an event on
    // that thread, recorded near its marks, still hangs under its real
    // callers; near rooted marks it takes the shared frames' nodes.
    let mut methods = MethodTable::new();
    let ids: Vec<MethodId> = (0..12).map(|i| methods.intern("Deep", &format!("f{i}"), "()V")).collect();
    let bytes = methods.intern_type("byte[]");
    let f = Frame::new;
    let config = TreeConfig { walk_limit: Some(4), ..TreeConfig::default() };
    let mut tree = Pcct::new(config).unwrap();
    let mut marks = Marks::new();
    let deep: Vec<Frame> = (0..12).map(|i| f(ids[i], 1)).collect();
    tree.record(&mut marks, &deep, one()).unwrap();
    assert_eq!(tree.stats().unattached, 1);
    let event: Vec<Frame> = deep.iter().copied().chain([f(bytes, -1)]).collect();
    let near = tree.record_event_near(&marks, &event, pcct::Weight::allocation(512, 1)).unwrap();
    assert_eq!(tree.path(near.leaf).len(), 13, "f0 -> ... -> f11 -> byte[], not under [unattached]");
    assert_eq!(tree.path(near.leaf)[0], child(&tree, NodeId::ROOT, ids[0], -1));
    // Rooted marks: the event shares the sample's frames (none new but
    // the class), and lands on the node the root search finds.
    let mut tree = Pcct::new(TreeConfig::default()).unwrap();
    let mut marks = Marks::new();
    tree.record(&mut marks, &deep, one()).unwrap();
    let mut other = deep[..6].to_vec();
    other[5] = f(ids[5], 7);
    other.push(f(ids[9], 0));
    other.push(f(bytes, -1));
    let near = tree.record_event_near(&marks, &other, pcct::Weight::allocation(512, 1)).unwrap();
    assert_eq!(near.new_frames, 2, "f9 (called from f5 at another bci) and byte[] are new");
    let from_root = tree.record_event(&other, pcct::Weight::allocation(512, 1)).unwrap();
    assert_eq!((from_root.leaf, from_root.created), (near.leaf, 0));
    assert_eq!(tree.node_weight(near.leaf).alloc_bytes, 1024);
    let recorded_again = tree.record(&mut marks, &deep, one()).unwrap();
    assert_eq!(recorded_again.new_frames, 0, "the thread's marks were not disturbed");
}

#[test]
fn an_event_through_its_threads_event_marks_adds_only_its_new_frames() {
    let mut methods = MethodTable::new();
    let ids: Vec<MethodId> = (0..12).map(|i| methods.intern("Deep", &format!("f{i}"), "()V")).collect();
    let bytes = methods.intern_type("byte[]");
    let longs = methods.intern_type("long[]");
    let f = Frame::new;
    let mut tree = Pcct::new(TreeConfig::default()).unwrap();
    let (mut samples, mut events) = (Marks::new(), Marks::new());
    let deep: Vec<Frame> = (0..12).map(|i| f(ids[i], 1)).collect();
    tree.record(&mut samples, &deep, one()).unwrap();
    // The first event starts from the thread's sample marks.
    let first: Vec<Frame> = deep.iter().copied().chain([f(bytes, -1)]).collect();
    let weight = pcct::Weight::allocation(512, 1);
    let recorded = tree.record_event_marked(&mut events, Some(&samples), &first, weight).unwrap();
    assert_eq!(recorded.new_frames, 1, "only byte[]");
    // The next one from the first event's marks: the same deep stack, another class.
    let second: Vec<Frame> = deep.iter().copied().chain([f(longs, -1)]).collect();
    let recorded = tree.record_event_marked(&mut events, None, &second, weight).unwrap();
    assert_eq!(recorded.new_frames, 1, "only long[]");
    let from_root = tree.record_event(&second, weight).unwrap();
    assert_eq!((from_root.leaf, from_root.created), (recorded.leaf, 0));
    assert_eq!(tree.node_weight(recorded.leaf).alloc_bytes, 1024);
    assert_eq!(tree.record(&mut samples, &deep, one()).unwrap().new_frames, 0, "the sample marks stay");
    // After a purge both marks are stale: from the root.
    tree.purge();
    let recorded = tree.record_event_marked(&mut events, Some(&samples), &second, weight).unwrap();
    assert_eq!(recorded.new_frames, 13);
}
