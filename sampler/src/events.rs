//! Events the VM reports on the thread they happen on (a sampled
//! allocation, a contended monitor enter), on their way from the agent's
//! JVMTI callbacks to the sampler thread, which records them into the
//! profile at its next tick.
//!
//! The callbacks run on Java threads. They must never take the profile
//! lock or any lock the sampler waits for, so they hand each event over
//! through a bounded lock-free queue ([`EventQueue`], `crossbeam-queue`'s
//! `ArrayQueue`): a push never blocks, and an event that finds the queue
//! full is dropped and counted. The sampler drains the queue at every
//! tick, names the frames' methods with the same cache and resolver as its
//! samples', and records each event with [`pcct::Pcct::record_event_near`]:
//! the whole stack, the event's class as its leaf, found from the marks of
//! the thread's last sample (the frames they share lead to their nodes
//! without a search from the root) and leaving those marks as they are
//! (they weigh the thread's CPU samples).
//!
//! ## What an allocation sample stands for
//!
//! HotSpot samples allocations by bytes: each thread draws the distance to
//! its next sample point from an exponential distribution with mean `I`
//! (`SetHeapSamplingInterval`), and the object whose allocation crosses the
//! point is reported (`SampledObjectAlloc`, with its size `s`). Sample
//! points then fall like a Poisson process over the allocated bytes, so an
//! object of `s` bytes is reported with probability `p = 1 - exp(-s/I)`.
//! [`allocation_weight`] weighs each sample by the inverse of that
//! probability (the Horvitz-Thompson estimator, as Go's and pprof's heap
//! profiles scale theirs): `s/p` bytes and `1/p` objects. Then the expected
//! weight of every (type, context) is exactly what it allocated, whatever
//! the object sizes: about `I` bytes and `I/s` objects for `s` much
//! smaller than `I` (the estimate), `s` bytes and one object for
//! `s` much larger. async-profiler weighs a sample `max(s, I)` bytes,
//! which is the same at both ends but undercounts objects near `I` (by up
//! to 37 % at `s = I`); JFR weighs it by the bytes its thread allocated
//! since its previous sample, which is right in total but charges those
//! bytes to whatever stack the next sample lands on, wrong per context
//! when a thread alternates between a large and a small allocator.

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_queue::ArrayQueue;
use pcct::Weight;

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A sampled allocation; the class is the allocated type.
    Allocation,
    /// A contended monitor enter that waited; the class is the monitor's.
    Monitor,
}

/// One event, as a callback hands it over.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub kind: EventKind,
    /// The thread it happened on (Linux thread id): the sampler records
    /// the event near that thread's marks.
    pub tid: i32,
    /// (jmethodID, bytecode index), leaf first, as JVMTI's GetStackTrace
    /// gives them: the leaf's index is the allocation or monitor enter.
    pub frames: Vec<(usize, i32)>,
    /// Whether the stack was deeper than the frames kept.
    pub truncated: bool,
    /// The class, as Java writes it (`byte[]`, `java.lang.Object`).
    pub class: String,
    /// What the event stands for (event resources only).
    pub weight: Weight,
}

/// Events waiting for the sampler. Pushes come from any thread and never
/// block; the sampler pops.
pub struct EventQueue {
    queue: ArrayQueue<Event>,
    /// Events dropped because the queue was full, by [`EventKind`].
    dropped: [AtomicU64; 2],
}

impl EventQueue {
    /// A queue of `capacity` events (at least one).
    pub fn new(capacity: usize) -> EventQueue {
        EventQueue { queue: ArrayQueue::new(capacity.max(1)), dropped: Default::default() }
    }

    /// Hands `event` to the sampler; false (counted) when the queue is full.
    pub fn push(&self, event: Event) -> bool {
        let kind = event.kind;
        match self.queue.push(event) {
            Ok(()) => true,
            Err(_) => {
                self.dropped[kind as usize].fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    /// Whether a push now would be dropped (checked before the costly part
    /// of making an event, the stack walk).
    pub fn is_full(&self) -> bool {
        self.queue.is_full()
    }

    /// The oldest waiting event.
    pub fn pop(&self) -> Option<Event> {
        self.queue.pop()
    }

    pub fn capacity(&self) -> usize {
        self.queue.capacity()
    }

    /// Events of `kind` dropped since the last call (the counter restarts).
    pub fn take_dropped(&self, kind: EventKind) -> u64 {
        self.dropped[kind as usize].swap(0, Ordering::Relaxed)
    }
}

/// The weight of an allocation sample of an object of `size` bytes at a
/// mean sampling interval of `interval` bytes: `size/p` bytes and `1/p`
/// objects with `p = 1 - exp(-size/interval)` (see the module docs).
///
/// Weights are whole numbers: `1/p` objects is rounded up or down at
/// random, up with the probability of its fraction, so rounding adds no
/// bias (rounding 4.52 objects to 5 every time would overcount objects of
/// a quarter of the interval by 10 %). `uniform` is that draw, in 0..1.
pub fn allocation_weight(size: u64, interval: u64, uniform: f64) -> Weight {
    let size = size.max(1);
    if interval == 0 {
        return Weight::allocation(size, 1); // every allocation is reported
    }
    let probability = -(-(size as f64) / interval as f64).exp_m1();
    let objects = 1.0 / probability;
    let whole = objects.floor();
    let objects = if objects - whole > uniform { whole + 1.0 } else { whole };
    Weight::allocation((size as f64 / probability).round() as u64, objects.max(1.0) as u64)
}

/// A number in 0..1 for [`allocation_weight`]'s rounding, from a
/// `seed` that differs at every call (a clock reading): a few
/// multiply-xorshift rounds (SplitMix64's finaliser) spread its bits.
pub fn uniform_from(seed: u64) -> f64 {
    let mut x = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_objects_stand_for_the_interval_and_large_ones_for_themselves() {
        let interval = 512 * 1024;
        let small = allocation_weight(16, interval, 0.5);
        assert!((small.alloc_bytes as f64 - interval as f64).abs() < 16.0, "{small:?}");
        assert!((small.alloc_objects as f64 - interval as f64 / 16.0).abs() <= 1.0, "{small:?}");
        let large = allocation_weight(100 * interval, interval, 0.5);
        assert_eq!(large, Weight::allocation(100 * interval, 1));
        let even = allocation_weight(interval, interval, 0.5);
        let expected = interval as f64 / (1.0 - (-1.0f64).exp());
        assert!((even.alloc_bytes as f64 - expected).abs() < 1.0, "{even:?}");
        assert_eq!(allocation_weight(24, 0, 0.5), Weight::allocation(24, 1));
        // 1/p = 4.52 objects: 4 or 5, 5 about half the time.
        assert_eq!(allocation_weight(256, 1024, 0.9).alloc_objects, 4);
        assert_eq!(allocation_weight(256, 1024, 0.1).alloc_objects, 5);
        let draws: Vec<f64> = (0..10_000u64).map(|seed| uniform_from(seed * 7919)).collect();
        assert!(draws.iter().all(|u| (0.0..1.0).contains(u)));
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
    }

    /// Sampling a known stream by HotSpot's rule (exponential distances
    /// between sample points) and weighing the samples gives back the
    /// bytes and objects of each size within a few percent (16 MiB of
    /// each size, about 16,000 samples each; a fixed seed).
    #[test]
    fn the_estimate_is_unbiased_for_every_size() {
        let interval = 1024u64;
        let sizes = [16u64, 256, 1024, 8192];
        let counts = sizes.map(|size| (16 << 20) / size);
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut uniform = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut until_sample = -(interval as f64) * (1.0 - uniform()).ln();
        let mut estimated = [Weight::ZERO; 4];
        for round in 0..counts[0] {
            for (index, &size) in sizes.iter().enumerate() {
                if round >= counts[index] {
                    continue;
                }
                until_sample -= size as f64;
                if until_sample <= 0.0 {
                    estimated[index].add(&allocation_weight(size, interval, uniform()));
                    while until_sample <= 0.0 {
                        until_sample += -(interval as f64) * (1.0 - uniform()).ln();
                    }
                }
            }
        }
        for (index, &size) in sizes.iter().enumerate() {
            let (count, bytes) = (counts[index] as f64, (counts[index] * size) as f64);
            let bytes_error = (estimated[index].alloc_bytes as f64 - bytes).abs() / bytes;
            let objects_error = (estimated[index].alloc_objects as f64 - count).abs() / count;
            assert!(
                bytes_error < 0.05 && objects_error < 0.05,
                "size {size}: {:?} for {count} objects",
                estimated[index]
            );
        }
    }

    #[test]
    fn a_full_queue_drops_and_counts() {
        let queue = EventQueue::new(2);
        let event = |kind| Event {
            kind,
            tid: 1,
            frames: vec![(1, 2)],
            truncated: false,
            class: "byte[]".to_string(),
            weight: Weight::allocation(1, 1),
        };
        assert!(queue.push(event(EventKind::Allocation)));
        assert!(!queue.is_full());
        assert!(queue.push(event(EventKind::Monitor)));
        assert!(queue.is_full());
        assert!(!queue.push(event(EventKind::Allocation)));
        assert_eq!(queue.take_dropped(EventKind::Allocation), 1);
        assert_eq!(queue.take_dropped(EventKind::Allocation), 0);
        assert_eq!(queue.pop().map(|e| e.kind), Some(EventKind::Allocation));
        assert_eq!(queue.pop().map(|e| e.kind), Some(EventKind::Monitor));
        assert_eq!(queue.pop(), None);
    }
}
