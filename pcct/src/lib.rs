//! # pcct — the partial calling context tree
//!
//! The profile repository of Whaley's portable sampling profiler ("A
//! Portable Sampling-Based Profiler for Java Virtual Machines", 2000,
//! Sections 5.1-5.4, Figures 6-8 and 12), in safe Rust, with no knowledge
//! of any VM. A sampler hands it stacks of interned methods; it keeps the
//! tree, its sorted hot lists and the hot-method counters, and answers
//! queries and writes reports (collapsed stacks, JSON, and the arcflow
//! xtree / xarc / xprof reports).
//!
//! This crate owns the data structure only. It must never block, spawn
//! threads, do I/O or call into a VM; callers decide where it lives and who
//! may lock it.
//!
//! ## The tree
//!
//! Nodes are calling contexts; the edge into a node is the call that made
//! it, from a caller node, at a *call site* (the caller's bytecode index),
//! to a method. Two calls of the same method from different call sites give
//! two edges and two nodes (the paper's implementation note). Each node
//! carries a *self* weight (samples whose leaf was this context, Whaley's
//! `node.time`) and each edge a weight (samples in which this call was
//! *new*, `edge.weight`). Weights are a resource vector ([`Weight`]:
//! samples, CPU ns and wall ns from the sampler's ticks; allocated bytes and
//! objects, lock wait and contended enters from events), described once by
//! [`Metric`].
//!
//! ## Events
//!
//! An event (a sampled allocation, a contended monitor enter) is recorded
//! with its whole stack by [`Pcct::record_event`] (from the root) or
//! [`Pcct::record_event_near`] (from a copy of its thread's marks, which
//! finds the shared frames' nodes without a search): the same context and
//! weights either way, and no thread's marks move. Its leaf is its class (a
//! method of kind [`MethodKind::Type`]: the allocated type, the monitor's
//! class) under the code, through the bytecode index of the allocation or
//! enter. So the event resources of a context are on the classes' nodes
//! (the *sites*), and an edge's weight in an event resource equals its
//! context's cum, which is why the arena does not store it (below).
//!
//! ## Marked frames: what "still marked" means
//!
//! Whaley marks each stack frame it visits by setting a bit in the frame's
//! return address; a returning and re-entered frame loses the bit. HotSpot
//! lets no one write into Java frames, so each sampled thread instead keeps
//! its [`Marks`]: the stack of its previous sample, root first, with the
//! node each frame mapped to. Given the thread's new stack `S` and marks
//! `M`, frame `i` of `S` is **still marked** when
//!
//! 1. the marks belong to this tree and were taken since its last purge,
//! 2. `S[j].method == M[j].method` for every `j <= i` (same depth, same
//!    methods all the way from the root), and
//! 3. `S[j].bci == M[j].bci` for every `j < i` (every caller still calls
//!    from the same call site; frame `i` itself may have moved on).
//!
//! This is the strongest frame identity HotSpot's AsyncGetCallTrace offers:
//! a frame has no address or activation number, so a method that returned
//! and was called again *from the same call site at the same depth* between
//! two samples looks still marked. A sampler that can supply a stronger
//! identity (a frame address) should fold it into [`Frame::bci`]'s place
//! in the comparison; the rule above then becomes exact.
//!
//! ## The update (Figure 7, adapted to a stack that arrives whole)
//!
//! [`Pcct::record`] takes a thread's marks, its new stack and the sample's
//! weight (the CPU time the thread used since its previous sample):
//!
//! - **Upward phase.** Find the deepest still-marked frame that has a node.
//!   Without marks (first sample of a thread, marks from before a purge) the
//!   walk starts at the root.
//! - **Bounded walk.** With [`TreeConfig::walk_limit`] = BUFSIZE, if more
//!   than BUFSIZE frames are new, only the leaf-most BUFSIZE frames are
//!   added, under an *unattached root* for the method just beyond them, held
//!   by the `[unattached]` pseudo-node under the root (Figure 10).
//! - **Downward phase.** For each new frame, find the edge from the current
//!   node through the frame's call site to its method, or create the edge
//!   and its node; add the weight to the edge. Once an edge had to be
//!   created the search stops: everything below a new node is new. Finally
//!   add the weight to the leaf node, to the tree's total and to the leaf
//!   method's hot-method counter. The marks become the new stack.
//!
//! Every weight change re-sorts the changed element in its hot list
//! (`update_sorted_pos`; a list keeps the `hot_list_capacity` heaviest elements, which bounds every re-sort),
//! so the top N nodes, edges and methods are read in O(N).
//!
//! In [`TreeMode::HotMethods`] only the counters of Figure 12 are kept (the
//! PCCT with depth zero and one node per method).
//!
//! ## Recursion
//!
//! As in the paper (Section 5.4, Figure 9c) recursion is not folded: each
//! recursive call is a new context, and the depth is bounded by the
//! sampler's stack depth and the walk limit. In aggregates over contexts a
//! method's *total* (cum) counts only its outermost activations, so no
//! sample is counted twice for one method; see [`export::xarc`] for how the
//! arcflow invariants hold under that rule.
//!
//! ## The arena, its limit, and purging
//!
//! Nodes and their edges live in one arena reserved up front
//! ([`TreeConfig::arena_bytes`]); recording never reallocates it. Since a tree
//! node has exactly one incoming edge, a node and its edge share one slot
//! ([`BYTES_PER_NODE_AND_EDGE`] bytes: its time weights inline, and an
//! index to a side table holding the event weights of the few contexts
//! that have any, [`BYTES_PER_EVENT_CONTEXT`] bytes each, with their places
//! in the event resources' hot lists; both count against the arena's
//! limit, and the side table, small, grows as sites appear: a `Vec`, so a
//! growth copies it and may hold up to twice what the limit counts). Links are `u32` indices (a
//! typed-index arena), not `bumpalo` references with `Cell` links (Figure 8
//! read literally, pcct's first design). Measured (`BENCHMARKS.md`, `benches/benches/
//! arena_comparison.rs` against the bumpalo variant in
//! `benches/src/bump_pcct.rs`):
//!
//! - **Bytes:** 88 per node+edge with indices (96 since the event index,
//!   measured again in `BENCHMARKS.md`); 136 with references (a 64-byte
//!   node plus a 72-byte edge), which misses the 128-byte goal. An arena of
//!   a given size holds 1.5 times as many contexts.
//! - **Update time:** the reference variant is faster on the micro
//!   benchmark by 7-16 ns per update at depth 64, partly because it keeps
//!   no hot-method counters or totals (numbers in `BENCHMARKS.md`, measured
//!   together). Both are small beside the signal and stack walk that
//!   produced the sample.
//! - **Sharing:** a tree of indices is `Send` and `Clone`, so the sampler
//!   thread owns it behind a mutex that the HTTP server locks briefly. A tree
//!   of `&'bump Cell<..>` links is neither `Send` nor `Sync`: every answer
//!   would have to be computed on the sampler thread, between ticks.
//!
//! Memory and sharing decided it. What the borrow checker would prove for
//! references (no marks outlive a purge) is checked at run time instead:
//! marks carry the tree's identity and purge generation and are ignored
//! when stale.
//!
//! - **Purge** ([`Pcct::purge`]): clears the arena, the hot lists and the
//!   counters in O(1) and bumps the generation. [`Pcct::purge_if_due`]
//!   purges every [`TreeConfig::purge_period`] (the paper purged every 10 s).
//! - **Limit** ([`FullPolicy`]): when a sample needs a node and the arena is
//!   full, the sample is either dropped (default; contexts already in the
//!   tree keep being recorded) or the tree is purged and the sample recorded
//!   into the empty tree. Both are counted in [`TreeStats`].

#![forbid(unsafe_code)]

pub mod correlation;
pub mod diff;
mod error;
pub mod export;
mod frame;
mod hot_list;
pub mod import;
mod marks;
mod method;
mod method_counters;
pub mod names;
mod query;
mod slot;
mod top_set;
mod tree;
pub mod view;
mod weight;
pub mod window;

pub use error::{PcctError, Result};
pub use frame::{Frame, FrameKind, NO_BCI};
pub use marks::Marks;
pub use method::{Builtin, LineEntry, MethodId, MethodInfo, MethodKind, MethodTable};
pub use query::{MethodOrder, MethodTotals};
pub use slot::{NodeId, BYTES_PER_EVENT_CONTEXT, BYTES_PER_NODE_AND_EDGE};
pub use tree::{Children, Dropped, FullPolicy, Pcct, Recorded, TreeConfig, TreeMode, TreeStats};
pub use weight::{Metric, Weight, EVENT_COUNT};
