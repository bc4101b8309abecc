//! What a profile window costs on a tree of 100k nodes: its start (the
//! O(nodes) copy of weights taken under the profile lock), the same tree
//! cloned whole (what every heavy answer copies under the lock, for
//! comparison), building the window's tree off the lock, and writing it
//! as gzipped pprof.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use pcct::export::pprof::{self, PprofContext};
use pcct::export::ReportOptions;
use pcct::{Marks, MethodTable};
use pcct_benches::synthetic::{self, Rng};

fn window(c: &mut Criterion) {
    let mut methods = MethodTable::new();
    let mut tree = synthetic::tree_with_nodes(100_000, &mut methods);
    let start = tree.window_start();
    // A window in which a tenth of the contexts gained weight.
    let ids = synthetic::methods(&mut methods, 2_000);
    let mut rng = Rng::new(5);
    let mut marks = Marks::new();
    for seed in 0..2_000 {
        let stack = synthetic::stack(&ids, 20, seed % 500);
        let _ = tree.record(&mut marks, &stack, synthetic::weight(&mut rng));
    }
    let mut group = c.benchmark_group("window_100k_nodes");
    group.bench_function("start_under_lock", |bench| bench.iter(|| black_box(tree.window_start())));
    group.bench_function("clone_tree_under_lock", |bench| bench.iter(|| black_box(tree.clone())));
    group.bench_function("build_window_tree", |bench| {
        bench.iter(|| black_box(pcct::window::window(&start, &tree).unwrap()))
    });
    let cut = pcct::window::window(&start, &tree).unwrap();
    group.bench_function("write_window_pprof", |bench| {
        bench.iter(|| black_box(pprof::write(&cut.tree, &methods, &ReportOptions::default(), &PprofContext::default())))
    });
    group.bench_function("write_whole_pprof", |bench| {
        bench.iter(|| black_box(pprof::write(&tree, &methods, &ReportOptions::default(), &PprofContext::default())))
    });
    group.finish();
    eprintln!("nodes {}; window contexts {}", tree.node_count(), cut.tree.node_count());
}

criterion_group!(benches, window);
criterion_main!(benches);
