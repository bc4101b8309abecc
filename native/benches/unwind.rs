//! ns per native frame unwound, warm (the rule cache holds every frame's
//! rule) and cold (a fresh cache per walk: every frame's rule is found in
//! `.eh_frame_hdr` and evaluated from the CFI), over a real stack of this
//! thread: 16 distinct Rust functions, then criterion's and the runtime's
//! frames down to the thread's start.
//!
//! `cargo bench -p pcct-native --bench unwind`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use pcct_native::{Modules, Registers, StackBounds, UnwindCache, Unwinder};

type Leaf<'a> = &'a mut dyn FnMut(Registers);

macro_rules! link {
    ($name:ident -> $next:ident) => {
        #[inline(never)]
        fn $name(leaf: Leaf) {
            $next(leaf);
            black_box(());
        }
    };
}

link!(f1 -> f2);
link!(f2 -> f3);
link!(f3 -> f4);
link!(f4 -> f5);
link!(f5 -> f6);
link!(f6 -> f7);
link!(f7 -> f8);
link!(f8 -> f9);
link!(f9 -> f10);
link!(f10 -> f11);
link!(f11 -> f12);
link!(f12 -> f13);
link!(f13 -> f14);
link!(f14 -> f15);
link!(f15 -> f16);

#[inline(never)]
fn f16(leaf: Leaf) {
    leaf(pcct_native::here!());
    black_box(());
}

fn read(address: u64) -> Option<u64> {
    // SAFETY: the unwinder reads only inside this thread's stack bounds,
    // above the walk's start, whose frames stay live while the leaf runs.
    Some(unsafe { std::ptr::read_unaligned(address as *const u64) })
}

fn walks(c: &mut Criterion) {
    let modules = Modules::load().unwrap();
    let unwinder = Unwinder::new(&modules);
    let stack = StackBounds::current_thread().unwrap();
    let mut out = [0u64; 256];
    f1(&mut |start| {
        let walk = unwinder.unwind(start, stack, None, read, &mut UnwindCache::new(), &mut out);
        eprintln!("native_unwind: {} frames per walk, ending {:?}", walk.frames, walk.ending);
        let mut group = c.benchmark_group("native_unwind");
        let mut warm = UnwindCache::new();
        group.bench_function("warm", |b| b.iter(|| unwinder.unwind(start, stack, None, read, &mut warm, &mut out)));
        group.bench_function("cold", |b| {
            b.iter_batched_ref(
                UnwindCache::new,
                |cache| unwinder.unwind(start, stack, None, read, cache, &mut out),
                BatchSize::SmallInput,
            )
        });
        group.finish();
    });
}

criterion_group!(benches, walks);
criterion_main!(benches);
