//! The typed-index arena of the `pcct` crate against its first design's
//! bumpalo arena with `Cell` reference links (`src/bump_pcct.rs`), on the
//! same warm update at depth 64 with 0, 2 and all frames new.

use bumpalo::Bump;
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use pcct::{Frame, Marks, MethodTable, Pcct, TreeConfig};
use pcct_benches::bump_pcct::{self, BumpMarks, BumpPcct};
use pcct_benches::synthetic::{self, Rng};

const DEPTH: usize = 64;

fn stacks() -> (Vec<Frame>, Vec<Frame>) {
    let mut methods = MethodTable::new();
    let ids = synthetic::methods(&mut methods, 2_000);
    let a = synthetic::stack(&ids, DEPTH, 42);
    let mut b = a.clone();
    b[DEPTH - 2] = Frame::new(ids[7], 3);
    b[DEPTH - 1] = Frame::new(ids[8], 0);
    (a, b)
}

fn compare(c: &mut Criterion) {
    eprintln!(
        "bytes per node+edge: typed index {} / bumpalo references {}",
        pcct::BYTES_PER_NODE_AND_EDGE,
        bump_pcct::BYTES_PER_NODE_AND_EDGE
    );
    let (a, b) = stacks();
    let mut group = c.benchmark_group("arena_depth64");
    let mut rng = Rng::new(5);

    let mut tree = Pcct::new(TreeConfig::default()).unwrap();
    let mut marks = Marks::with_capacity(DEPTH);
    for stack in [&a, &b, &a] {
        tree.record(&mut marks, stack, synthetic::weight(&mut rng)).unwrap();
    }
    let bump = Bump::new();
    let bump_tree = BumpPcct::new(&bump);
    let mut bump_marks = BumpMarks::default();
    for stack in [&a, &b, &a] {
        bump_tree.record(&mut bump_marks, stack, synthetic::weight(&mut rng));
    }

    for (label, new) in [("0_new", 0), ("2_new", 2), ("all_new", DEPTH)] {
        let mut flip = false;
        group.bench_function(BenchmarkId::new("typed_index", label), |bench| {
            bench.iter(|| {
                flip = !flip;
                if new == DEPTH {
                    marks.clear();
                }
                let stack = if new == 2 && flip { &b } else { &a };
                black_box(tree.record(&mut marks, black_box(stack), synthetic::weight(&mut rng)).unwrap());
            })
        });
        group.bench_function(BenchmarkId::new("bumpalo_refs", label), |bench| {
            bench.iter(|| {
                flip = !flip;
                if new == DEPTH {
                    bump_marks.clear();
                }
                let stack = if new == 2 && flip { &b } else { &a };
                bump_tree.record(&mut bump_marks, black_box(stack), synthetic::weight(&mut rng));
            })
        });
    }
    group.finish();
}

criterion_group!(benches, compare);
criterion_main!(benches);
