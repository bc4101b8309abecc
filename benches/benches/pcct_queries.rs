//! Reading answers from a 100k-node tree: the sorted hot lists (O(N)) and
//! the whole-tree aggregates (O(nodes)) for comparison.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use pcct::{MethodOrder, MethodTable, Metric};
use pcct_benches::synthetic;

fn queries(c: &mut Criterion) {
    let mut methods = MethodTable::new();
    let tree = synthetic::tree_with_nodes(100_000, &mut methods);
    eprintln!(
        "tree: {} nodes, {} bytes per node+edge, arena {} bytes",
        tree.node_count(),
        pcct::BYTES_PER_NODE_AND_EDGE,
        tree.arena_used()
    );
    let mut group = c.benchmark_group("pcct_queries_100k");
    group.bench_function("top20_hot_methods_by_self", |b| b.iter(|| black_box(tree.top_methods_by_self(20))));
    group.bench_function("top20_hot_nodes", |b| b.iter(|| black_box(tree.top_nodes(20))));
    group.bench_function("top20_hot_edges", |b| b.iter(|| black_box(tree.top_edges(20))));
    group.bench_function("top20_named_hot_methods_by_self_with_totals", |b| {
        b.iter(|| black_box(pcct::view::hot_methods(&tree, &methods, 20, MethodOrder::SelfWeight, Metric::CpuNs)))
    });
    group.bench_function("top20_named_hot_methods_by_total", |b| {
        b.iter(|| black_box(pcct::view::hot_methods(&tree, &methods, 20, MethodOrder::Total, Metric::CpuNs)))
    });
    group.bench_function("method_totals_full_pass", |b| b.iter(|| black_box(tree.method_totals())));
    group.bench_function("cumulative_all_nodes", |b| b.iter(|| black_box(tree.cumulative())));
    group.finish();
}

criterion_group!(benches, queries);
criterion_main!(benches);
