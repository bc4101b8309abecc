//! Frame kinds: part of a context's identity, written by every format that
//! carries them, and absent from every format when unknown.

use pcct::export::{collapsed, json, pprof, ReportOptions};
use pcct::{Frame, FrameKind, Marks, MethodTable, Metric, NodeId, Pcct, TreeConfig, Weight};

const ONE_MS: u64 = 1_000_000;

/// main (interpreted) calls work, sampled interpreted, then in C2 code with
/// leaf inlined into it.
fn kinded_tree() -> (Pcct, MethodTable) {
    let mut methods = MethodTable::new();
    let main = methods.intern("app.Main", "main", "()V");
    let work = methods.intern("app.Main", "work", "()V");
    let leaf = methods.intern("app.Main", "leaf", "()V");
    let mut tree = Pcct::new(TreeConfig::default()).unwrap();
    let mut marks = Marks::new();
    let w = Weight::sample(ONE_MS, ONE_MS);
    let main_frame = Frame::with_kind(main, 4, FrameKind::Interpreted);
    tree.record(&mut marks, &[main_frame, Frame::with_kind(work, 2, FrameKind::Interpreted)], w).unwrap();
    for _ in 0..3 {
        let stack =
            [main_frame, Frame::with_kind(work, 7, FrameKind::Tier4), Frame::with_kind(leaf, 0, FrameKind::Inlined)];
        tree.record(&mut marks, &stack, w).unwrap();
    }
    (tree, methods)
}

fn children_of(tree: &Pcct, node: NodeId) -> Vec<(FrameKind, u64)> {
    let mut children: Vec<_> =
        tree.children(node).map(|child| (tree.kind(child), tree.node_weight(child).samples)).collect();
    children.sort();
    children
}

#[test]
fn a_method_run_as_two_kinds_is_two_contexts_and_one_method() {
    let (tree, mut methods) = kinded_tree();
    let main = tree.children(NodeId::ROOT).next().unwrap();
    assert_eq!(tree.kind(main), FrameKind::Interpreted);
    // work interpreted (self 1) and work in C2 code (its samples in leaf).
    assert_eq!(children_of(&tree, main), vec![(FrameKind::Interpreted, 1), (FrameKind::Tier4, 0)]);
    let work = methods.intern("app.Main", "work", "()V");
    let leaf = methods.intern("app.Main", "leaf", "()V");
    assert_eq!(tree.method_self_weight(work).samples, 1);
    assert_eq!(tree.method_self_weight(leaf).samples, 3);
    // The C2 context's edge weight counts one new call: the kind change made
    // the frame new, the next two samples found it still marked.
    let compiled = tree.children(main).find(|&child| tree.kind(child) == FrameKind::Tier4).unwrap();
    assert_eq!(tree.edge_weight(compiled).samples, 1);
}

#[test]
fn collapsed_stacks_carry_async_profilers_suffixes_only_when_annotated() {
    let (tree, methods) = kinded_tree();
    let options = |annotate| ReportOptions { metric: Metric::Samples, min_cum_share: 0.0, annotate };
    let plain = pcct::export::write(pcct::export::Format::Collapsed, &tree, &methods, &options(false));
    assert!(!plain.contains("_["), "{plain}");
    let annotated = pcct::export::write(pcct::export::Format::Collapsed, &tree, &methods, &options(true));
    let mut lines: Vec<&str> = annotated.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        ["app.Main.main_[0];app.Main.work_[0] 1", "app.Main.main_[0];app.Main.work_[j];app.Main.leaf_[i] 3"]
    );
    // The suffixes parse back as part of the frame names.
    assert_eq!(collapsed::parse(&annotated).unwrap().len(), 2);
}

#[test]
fn json_writes_each_known_kind_and_reads_it_back() {
    let (tree, methods) = kinded_tree();
    let text = json::write(&tree, &methods);
    assert!(text.contains("\"kind\":\"c2\"") && text.contains("\"kind\":\"inlined\""), "{text}");
    let (imported, _) = json::import(&json::parse(&text).unwrap()).unwrap();
    let kinds = |tree: &Pcct| {
        let mut kinds: Vec<_> = tree.nodes().map(|node| tree.kind(node)).collect();
        kinds.sort();
        kinds
    };
    assert_eq!(kinds(&imported), kinds(&tree));
    // Each node of a known kind says it once (main and work interpreted).
    let count = |kind: &str| text.matches(&format!("\"kind\":\"{kind}\"")).count();
    assert_eq!((count("interpreted"), count("c2"), count("inlined"), count("unknown")), (2, 1, 1, 0));
}

#[test]
fn pprof_samples_carry_their_frames_kinds_leaf_first() {
    let (tree, methods) = kinded_tree();
    let options = ReportOptions { metric: Metric::Samples, min_cum_share: 0.0, annotate: false };
    let bytes = pprof::write(&tree, &methods, &options, &pprof::PprofContext::default());
    let profile = pprof::decode(&bytes).unwrap();
    let text = |index: i64| profile.string_table[index as usize].clone();
    let mut labels: Vec<(String, String, usize)> = profile
        .sample
        .iter()
        .flat_map(|sample| sample.label.iter().map(move |label| (label, sample.location_id.len())))
        .map(|(label, locations)| (text(label.key), text(label.str), locations))
        .collect();
    labels.sort();
    assert_eq!(
        labels,
        [("frame_kinds".to_string(), "00".to_string(), 2), ("frame_kinds".to_string(), "ij0".to_string(), 3)]
    );
}

#[test]
fn a_tree_without_kinds_writes_none() {
    let mut methods = MethodTable::new();
    let main = methods.intern("app.Main", "main", "()V");
    let mut tree = Pcct::new(TreeConfig::default()).unwrap();
    tree.record(&mut Marks::new(), &[Frame::new(main, 0)], Weight::sample(ONE_MS, ONE_MS)).unwrap();
    let options = ReportOptions { metric: Metric::Samples, min_cum_share: 0.0, annotate: true };
    let annotated = pcct::export::write(pcct::export::Format::Collapsed, &tree, &methods, &options);
    assert_eq!(annotated.trim(), "app.Main.main 1");
    let profile = pprof::decode(&pprof::write(&tree, &methods, &options, &pprof::PprofContext::default())).unwrap();
    assert!(profile.sample.iter().all(|sample| sample.label.is_empty()));
    assert!(!json::write(&tree, &methods).contains("\"kind\":\"unknown\""));
}
