//! Cost of one PCCT update for warm contexts (every node already exists):
//! stack depth 16 / 64 / 256, with 0, 2 or all frames new since the
//! thread's previous sample.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use pcct::{Frame, Marks, MethodTable, Pcct};
use pcct_benches::synthetic::{self, Rng};

/// Two stacks of `depth` frames that differ in their last two frames.
fn pair(depth: usize) -> (Vec<Frame>, Vec<Frame>, Pcct) {
    // Both contexts are warm, in a tree with a realistic population of 100k nodes.
    let mut methods = MethodTable::new();
    let mut tree = synthetic::tree_with_nodes(100_000, &mut methods);
    let ids = synthetic::methods(&mut methods, 2_000);
    let a = synthetic::stack(&ids, depth, 42);
    let mut b = a.clone();
    b[depth - 2] = Frame::new(ids[7], 3);
    b[depth - 1] = Frame::new(ids[8], 0);
    let mut marks = Marks::new();
    let mut rng = Rng::new(3);
    for _ in 0..4 {
        tree.record(&mut marks, &a, synthetic::weight(&mut rng)).unwrap();
        tree.record(&mut marks, &b, synthetic::weight(&mut rng)).unwrap();
    }
    (a, b, tree)
}

fn update(c: &mut Criterion) {
    let mut group = c.benchmark_group("pcct_update_warm");
    for depth in [16usize, 64, 256] {
        let (a, b, mut tree) = pair(depth);
        let mut rng = Rng::new(9);
        let mut marks = Marks::with_capacity(depth);
        tree.record(&mut marks, &a, synthetic::weight(&mut rng)).unwrap();

        group.bench_function(BenchmarkId::new("0_new", depth), |bench| {
            bench.iter(|| {
                let w = synthetic::weight(&mut rng);
                black_box(tree.record(&mut marks, black_box(&a), w).unwrap());
            })
        });
        group.bench_function(BenchmarkId::new("2_new", depth), |bench| {
            let mut flip = false;
            bench.iter(|| {
                flip = !flip;
                let stack = if flip { &b } else { &a };
                let w = synthetic::weight(&mut rng);
                black_box(tree.record(&mut marks, black_box(stack), w).unwrap());
            })
        });
        group.bench_function(BenchmarkId::new("all_new", depth), |bench| {
            bench.iter(|| {
                marks.clear();
                let w = synthetic::weight(&mut rng);
                black_box(tree.record(&mut marks, black_box(&a), w).unwrap());
            })
        });
    }
    group.finish();
}

criterion_group!(benches, update);
criterion_main!(benches);
