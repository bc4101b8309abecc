//! Deterministic synthetic stacks and trees.

use pcct::{Frame, Marks, MethodId, MethodTable, Pcct, TreeConfig, Weight};

/// A small deterministic generator (xorshift), so benches need no RNG crate.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound.max(1)
    }
}

/// `count` interned methods named `bench.C<i>.m<i>`.
pub fn methods(table: &mut MethodTable, count: usize) -> Vec<MethodId> {
    (0..count).map(|i| table.intern(&format!("bench.C{}", i % 97), &format!("m{i}"), "()V")).collect()
}

/// A stack of `depth` frames whose methods and call sites derive from `seed`.
pub fn stack(ids: &[MethodId], depth: usize, seed: u64) -> Vec<Frame> {
    let mut rng = Rng::new(seed);
    (0..depth).map(|_| Frame::new(ids[rng.below(ids.len() as u64) as usize], rng.below(40) as i32)).collect()
}

/// One sample's weight: about a millisecond of CPU with some jitter.
pub fn weight(rng: &mut Rng) -> Weight {
    let cpu = 900_000 + rng.below(200_000);
    Weight::sample(cpu, 1_000_000)
}

/// A tree with at least `nodes` nodes built from random stacks with a
/// skewed (hot-prefix) distribution, as real profiles are.
pub fn tree_with_nodes(nodes: usize, methods: &mut MethodTable) -> Pcct {
    let ids = self::methods(methods, 4_000);
    let config =
        TreeConfig { arena_bytes: (nodes * 2).max(1 << 16) * pcct::BYTES_PER_NODE_AND_EDGE, ..TreeConfig::default() };
    let mut tree = Pcct::new(config).expect("arena");
    let mut rng = Rng::new(7);
    let mut marks = Marks::new();
    let hot_prefixes: Vec<Vec<Frame>> = (0..50).map(|i| stack(&ids, 8 + i % 10, 1_000 + i as u64)).collect();
    while tree.node_count() < nodes {
        let mut frames = hot_prefixes[rng.below(50) as usize].clone();
        let extra = 1 + rng.below(12) as usize;
        frames.extend(stack(&ids, extra, rng.next_u64()));
        let _ = tree.record(&mut marks, &frames, weight(&mut rng));
    }
    tree
}
