//! The exporters agree with the tree and with each other.

use pcct::export::{self, collapsed, json, Format, ReportOptions};
use pcct::{Frame, Marks, MethodTable, Metric, Pcct, TreeConfig, Weight};

fn sample_tree() -> (Pcct, MethodTable) {
    let mut methods = MethodTable::new();
    let main = methods.intern("app.Main", "main", "([Ljava/lang/String;)V");
    let work = methods.intern("app.Main", "work", "()V");
    let hash = methods.intern("java.util.HashMap", "get", "(Ljava/lang/Object;)Ljava/lang/Object;");
    let fib = methods.intern("app.Main", "fib", "(I)I");
    methods
        .set_lines(main, vec![pcct::LineEntry { start_bci: 0, line: 10 }, pcct::LineEntry { start_bci: 8, line: 12 }]);
    let gc = methods.intern_pseudo("[gc_active]");
    let mut tree = Pcct::new(TreeConfig::default()).unwrap();
    let mut marks = Marks::new();
    let f = Frame::new;
    let w = |ms: u64| Weight::sample(ms * 1_000_000, ms * 1_000_000);
    for round in 0..20 {
        tree.record(&mut marks, &[f(main, 8), f(work, 3), f(hash, 0)], w(1)).unwrap();
        tree.record(&mut marks, &[f(main, 8), f(work, 5)], w(2)).unwrap();
        if round % 4 == 0 {
            // Recursion: fib calls fib.
            tree.record(&mut marks, &[f(main, 9), f(fib, 2), f(fib, 2), f(fib, 7)], w(1)).unwrap();
        }
    }
    let mut other = Marks::new();
    tree.record(&mut other, &[f(gc, -1)], w(3)).unwrap();
    // Events: allocations in work and hash, a monitor waited for in main.
    let (bytes, object) = (methods.intern_type("byte[]"), methods.intern_type("java.lang.Object"));
    for _ in 0..3 {
        tree.record_event(&[f(main, 8), f(work, 4), f(bytes, -1)], Weight::allocation(64 << 10, 60)).unwrap();
    }
    let kept = tree
        .record_event(&[f(main, 8), f(work, 3), f(hash, 2), f(object, -1)], Weight::allocation(64 << 10, 4096))
        .unwrap();
    // The live heap, as a view's copy of the profile gets it: half of
    // that allocation still reachable.
    assert!(tree.add_event_at(kept.leaf, &Weight::live(32 << 10, 2048)));
    tree.record_event(&[f(main, 11), f(object, -1)], Weight::lock_wait(7_000_000)).unwrap();
    (tree, methods)
}

#[test]
fn collapsed_lines_sum_to_the_total() {
    let (tree, methods) = sample_tree();
    let text = collapsed::write(&tree, &methods, Metric::CpuNs);
    let stacks = collapsed::parse(&text).unwrap();
    let sum: u64 = stacks.iter().map(|(_, v)| v).sum();
    assert_eq!(sum, tree.total().cpu_ns);
    assert!(stacks.iter().any(|(frames, _)| frames == &["app.Main.main", "app.Main.work", "java.util.HashMap.get"]));
    assert!(stacks.iter().any(|(frames, _)| frames == &["[gc_active]"]));
    assert!(collapsed::parse("a;b notanumber").is_err());
}

#[test]
fn flat_json_parses_and_matches_the_tree() {
    let (tree, methods) = sample_tree();
    let text = json::write(&tree, &methods);
    let profile = json::parse(&text).unwrap();
    assert_eq!(profile.format, "pcct-json");
    assert_eq!(profile.total, tree.total());
    assert_eq!(profile.nodes.len(), tree.node_count());
    let self_sum: u64 = profile.nodes.iter().map(|n| n.self_weight.samples).sum();
    assert_eq!(self_sum, tree.total().samples);
    assert_eq!(profile.nodes[0].cum, tree.total());
    let counters: u64 = profile.methods_self.iter().map(|m| m.self_weight.samples).sum();
    assert_eq!(counters, tree.total().samples);
    // Every node's method is described, and lines come from the caller's table.
    for node in &profile.nodes {
        assert!(profile.methods.iter().any(|m| m.id == node.method));
    }
    assert!(profile.nodes.iter().any(|n| n.call_site == 8 && n.line == Some(12)));

    // Importing gives back the same answers.
    let (back, back_methods) = json::import(&profile).unwrap();
    assert_eq!(back.total(), tree.total());
    assert_eq!(back.node_count(), tree.node_count());
    let names = |t: &Pcct, m: &MethodTable| {
        pcct::view::hot_methods(t, m, 10, pcct::MethodOrder::Total, pcct::Metric::CpuNs)
            .into_iter()
            .map(|h| (h.method.display, h.self_weight, h.total))
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&back, &back_methods), names(&tree, &methods));
    let edges = |t: &Pcct| t.top_edges(5).into_iter().map(|e| t.edge_weight(e)).collect::<Vec<_>>();
    assert_eq!(edges(&back), edges(&tree));
    // Every resource survives the round trip, and so do the event hot lists.
    for metric in Metric::ALL {
        let sites = |t: &Pcct, m: &MethodTable| {
            pcct::view::sites(t, m, 10, metric).into_iter().map(|s| (s.class, s.self_weight)).collect::<Vec<_>>()
        };
        assert_eq!(sites(&back, &back_methods), sites(&tree, &methods), "{metric:?}");
    }
    assert_eq!(back.event_contexts(), tree.event_contexts());
    assert_eq!(tree.total().alloc_bytes, 4 * (64 << 10));
    let site = profile.nodes.iter().find(|n| n.self_weight.lock_wait_ns > 0).expect("the monitor's site");
    assert_eq!(site.edge.lock_wait_ns, 7_000_000, "an edge's event weight is its context's cum");
    let main = profile.nodes.iter().find(|n| n.depth == 1 && n.call_site == -1 && n.cum.alloc_bytes > 0).unwrap();
    assert_eq!(main.edge.alloc_bytes, tree.total().alloc_bytes);
}

#[test]
fn every_report_counts_any_resource() {
    let (tree, methods) = sample_tree();
    for metric in Metric::ALL {
        let options = ReportOptions { metric, min_cum_share: 0.0, annotate: false };
        for format in Format::ALL.into_iter().filter(|format| format.is_text()) {
            let text = export::write(format, &tree, &methods, &options);
            assert!(!text.is_empty(), "{format:?} {metric:?}");
            if format != Format::Json && format != Format::Collapsed {
                assert!(text.lines().next().unwrap().contains(metric.name()), "{format:?} says {metric:?}:\n{text}");
            }
        }
        let stacks = collapsed::parse(&collapsed::write(&tree, &methods, metric)).unwrap();
        let sum: u64 = stacks.iter().map(|(_, v)| v).sum();
        assert_eq!(sum, tree.total().get(metric), "{metric:?}");
    }
    let text = collapsed::write(&tree, &methods, Metric::AllocBytes);
    assert!(text.contains("app.Main.main;app.Main.work;byte[] 196608\n"), "{text}");
    let xtree = export::write(
        Format::Xtree,
        &tree,
        &methods,
        &ReportOptions { metric: Metric::LockWaitNs, min_cum_share: 0.0, annotate: false },
    );
    assert!(xtree.contains("java.lang.Object @11"), "the class under the code, at the enter: {xtree}");
    let xprof = export::write(
        Format::Xprof,
        &tree,
        &methods,
        &ReportOptions { metric: Metric::AllocObjects, min_cum_share: 0.0, annotate: false },
    );
    assert!(xprof.lines().any(|line| line.ends_with("java.lang.Object") && line.contains("95.79%")), "{xprof}");
}

#[test]
fn reports_name_methods_and_prune_by_cum() {
    let (tree, methods) = sample_tree();
    let options = ReportOptions { metric: Metric::CpuNs, min_cum_share: 0.0, annotate: false };
    let xtree = export::write(Format::Xtree, &tree, &methods, &options);
    assert!(xtree.contains("java.util.HashMap.get @3"), "{xtree}");
    assert!(xtree.contains("app.Main.work @8 (line 12)"), "{xtree}");
    let pruned = export::write(Format::Xtree, &tree, &methods, &ReportOptions { min_cum_share: 0.2, ..options });
    assert!(!pruned.contains("fib"), "{pruned}");
    assert!(pruned.contains("app.Main.work"));

    let xprof = export::write(Format::Xprof, &tree, &methods, &options);
    let fib_line = xprof.lines().find(|l| l.ends_with("app.Main.fib")).unwrap();
    assert!(fib_line.contains("5.000"), "fib's cum counts each sample once: {fib_line}");
    let xarc = export::write(Format::Xarc, &tree, &methods, &options);
    assert!(xarc.contains("SELF"));
    assert!(xarc.contains("parent"));
    for format in Format::ALL {
        assert_eq!(Format::parse(format.name()), Some(format));
    }
}

#[test]
fn correlation_of_a_profile_with_itself_is_one() {
    let (tree, methods) = sample_tree();
    let mut keys = pcct::correlation::ContextKeys::new();
    let a = pcct::correlation::context_profile(&tree, &methods, Metric::Samples, &mut keys);
    let r = pcct::correlation::correlate(&a, &a).unwrap();
    assert!((r - 1.0).abs() < 1e-12);
    let hot = pcct::correlation::method_profile(&tree, &methods, Metric::Samples);
    assert!(hot.contains_key("java.util.HashMap.get"));
}

#[test]
fn subtree_view_is_pruned_and_bounded() {
    let (tree, methods) = sample_tree();
    let cum = tree.cumulative();
    let limits =
        pcct::view::SubtreeLimits { metric: pcct::Metric::CpuNs, min_share: 0.0, max_depth: 1, max_nodes: 100 };
    let view = pcct::view::subtree(&tree, &methods, &cum, pcct::NodeId::ROOT, limits);
    assert_eq!(view.children.len(), 2, "main and [gc_active]");
    assert!(view.children.iter().all(|c| c.children.is_empty()));
    let limits = pcct::view::SubtreeLimits { metric: pcct::Metric::CpuNs, min_share: 0.0, max_depth: 64, max_nodes: 3 };
    let small = pcct::view::subtree(&tree, &methods, &cum, pcct::NodeId::ROOT, limits);
    fn count(node: &pcct::view::SubtreeNode) -> usize {
        1 + node.children.iter().map(count).sum::<usize>()
    }
    assert_eq!(count(&small), 3);
    let contexts = tree.find_contexts(&methods, &["app.Main.main", "app.Main.work"]).unwrap();
    assert_eq!(contexts.len(), 1);
    assert!(tree.find_contexts(&methods, &["app.Main.main", " "]).is_err());
}

/// Class-file names may hold any character: a tree whose methods have a
/// newline, a carriage return, a tab, a `;`, a `\x01` and a backslash in
/// their names, on every level.
const ODD_CLASS: &str = "app.Odd\nClass\\";
const ODD_NAME: &str = "run\r\t;\u{1}x";

fn odd_tree() -> (Pcct, MethodTable) {
    let mut methods = MethodTable::new();
    let main = methods.intern("app.Main", "main", "()V");
    let odd = methods.intern(ODD_CLASS, ODD_NAME, "()V");
    let leaf = methods.intern("app.Leaf;", "\n", "()V");
    let mut tree = Pcct::new(TreeConfig::default()).unwrap();
    let mut marks = Marks::new();
    let f = Frame::new;
    for _ in 0..3 {
        tree.record(&mut marks, &[f(main, 1), f(odd, 2), f(leaf, 3)], Weight::sample(1000, 1000)).unwrap();
        tree.record(&mut marks, &[f(main, 1), f(odd, 2)], Weight::sample(1000, 1000)).unwrap();
        tree.record(&mut marks, &[f(odd, 4)], Weight::sample(1000, 1000)).unwrap();
    }
    (tree, methods)
}

fn odd_display() -> String {
    format!("{ODD_CLASS}.{ODD_NAME}")
}

/// Every line of a text report: no control character in any.
fn clean_lines(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    for line in &lines {
        assert!(!line.contains(|c: char| c.is_control()), "a control character in {line:?}");
    }
    lines
}

#[test]
fn collapsed_escapes_names_and_parses_them_back() {
    let (tree, methods) = odd_tree();
    let text = collapsed::write(&tree, &methods, Metric::Samples);
    let lines = clean_lines(&text);
    assert_eq!(lines.len(), 3, "one line per context with self weight:\n{text}");
    assert!(text.contains("app.Odd\\x0AClass\\\\.run\\x0D\\x09\\x3B\\x01x"), "{text}");
    let stacks = collapsed::parse(&text).unwrap();
    let leaf = "app.Leaf;.\n".to_string();
    assert!(stacks.contains(&(vec!["app.Main.main".to_string(), odd_display(), leaf], 3)), "{stacks:?}");
    assert!(stacks.contains(&(vec![odd_display()], 3)), "{stacks:?}");
    assert!(collapsed::parse("a\\q;b 1").is_err(), "a bad escape is an error");
}

#[test]
fn xtree_escapes_names_one_line_per_context() {
    let (tree, methods) = odd_tree();
    let text = export::write(Format::Xtree, &tree, &methods, &ReportOptions::default());
    let lines = clean_lines(&text);
    assert_eq!(lines.len(), 2 + tree.node_count(), "two header lines and one per context:\n{text}");
    assert!(text.contains("app.Odd\\x0AClass\\\\.run\\x0D\\x09;\\x01x @1"), "{text}");
}

#[test]
fn xarc_escapes_names_every_line_a_record() {
    let (tree, methods) = odd_tree();
    let text = export::write(Format::Xarc, &tree, &methods, &ReportOptions::default());
    let lines = clean_lines(&text);
    for line in &lines[1..] {
        let known = ["====", "      ", "parent ", "SELF ", "child "];
        assert!(known.iter().any(|start| line.starts_with(start)), "a line split off a record: {line:?}\n{text}");
    }
    assert!(text.contains("SELF ") && text.contains("app.Leaf;.\\x0A"), "{text}");
}

#[test]
fn xprof_escapes_names_one_line_per_method() {
    let (tree, methods) = odd_tree();
    let text = export::write(Format::Xprof, &tree, &methods, &ReportOptions::default());
    let lines = clean_lines(&text);
    assert_eq!(lines.len(), 2 + 3, "two header lines and one per method:\n{text}");
    assert!(lines.iter().any(|line| line.ends_with("  app.Odd\\x0AClass\\\\.run\\x0D\\x09;\\x01x")), "{text}");
}

#[test]
fn json_keeps_odd_names_as_they_are_and_stays_valid() {
    let (tree, methods) = odd_tree();
    let text = json::write(&tree, &methods);
    assert_eq!(text.lines().count(), 1, "JSON escapes control characters itself");
    serde_json::from_str::<serde_json::Value>(&text).expect("valid JSON");
    let (_, back) = json::import(&json::parse(&text).unwrap()).unwrap();
    let odd = back.iter().find(|(_, info)| &*info.class == ODD_CLASS).expect("the odd class came back");
    assert_eq!(&*odd.1.name, ODD_NAME);
    assert!(back.iter().any(|(_, info)| &*info.class == "app.Leaf;" && &*info.name == "\n"));
}

/// Whether an ancestor of `node` (the root aside) has its method, walking up.
fn has_recursive_ancestor(tree: &Pcct, node: pcct::NodeId) -> bool {
    let method = tree.method(node);
    let mut current = tree.parent(node);
    while let Some(ancestor) = current.filter(|&ancestor| ancestor != pcct::NodeId::ROOT) {
        if tree.method(ancestor) == method {
            return true;
        }
        current = tree.parent(ancestor);
    }
    false
}

#[test]
fn import_marks_recursion_as_the_tree_did_on_every_branch() {
    let mut methods = MethodTable::new();
    let [a, b, c, d] = ["a", "b", "c", "d"].map(|name| methods.intern("app.R", name, "()V"));
    let mut tree = Pcct::new(TreeConfig::default()).unwrap();
    let f = Frame::new;
    let stacks: [&[Frame]; 5] = [
        &[f(a, 1), f(b, 1), f(a, 1), f(c, 1), f(b, 1), f(d, 1)],
        &[f(a, 1), f(b, 2), f(c, 1), f(c, 1)],
        &[f(a, 2), f(d, 1), f(a, 1), f(a, 1)],
        &[f(b, 1), f(a, 1), f(b, 1)],
        &[f(c, 1)],
    ];
    for stack in stacks {
        tree.record(&mut Marks::new(), stack, Weight::sample(1000, 1000)).unwrap();
    }
    let (back, _) = json::import(&json::parse(&json::write(&tree, &methods)).unwrap()).unwrap();
    assert_eq!(back.node_count(), tree.node_count());
    let flags = |t: &Pcct| t.nodes().skip(1).map(|node| t.is_outermost(node)).collect::<Vec<_>>();
    assert_eq!(flags(&back), flags(&tree), "same nodes in the same order, same flags");
    for node in back.nodes().skip(1) {
        assert_eq!(back.is_outermost(node), !has_recursive_ancestor(&back, node), "node {node:?}");
    }
    assert!(flags(&back).iter().any(|outermost| !outermost), "the stacks recurse");
    let options = ReportOptions { metric: Metric::Samples, min_cum_share: 0.0, annotate: false };
    let xprof = |t: &Pcct| export::write(Format::Xprof, t, &methods, &options);
    assert_eq!(xprof(&back), xprof(&tree), "totals count each sample once per method");
}
