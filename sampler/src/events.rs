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
//!
//! Above `alloc_rate=` samples a second, the [`Throttle`] keeps each
//! reported sample with a probability `q` and the kept ones weigh `1/q`
//! times more: the probability above becomes `q * p`, and the estimate
//! stays unbiased while the cost per second stays bounded.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

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
    /// Its place in its thread's stream of events: which of its frames
    /// are the thread's previous event's.
    pub chain: Chain,
    /// (jmethodID, bytecode index), leaf first, as JVMTI's GetStackTrace
    /// gives them: the leaf's index is the allocation or monitor enter.
    /// Only the frames above the `chain.shared` bottom ones.
    pub frames: Vec<(usize, i32)>,
    /// Whether the stack was deeper than the frames kept.
    pub truncated: bool,
    /// The class, as Java writes it (`byte[]`, `java.lang.Object`).
    pub class: Arc<str>,
    /// What the event stands for (event resources only).
    pub weight: Weight,
    /// A sampled allocation's weak reference to its object, for the live
    /// heap (`live_heap`; opaque here), or 0. Whoever drops the event
    /// hands it to the live heap to be released.
    pub object: u64,
}

/// Where an event stands in its thread's stream of events
/// (`event_stacks`): a *whole* event (`shared == 0`) carries every frame,
/// a *chained* one only those above the `shared` frames at the bottom of
/// the stack that it has in common with the stream's previous event.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Chain {
    /// The stream ([`EventStream::id`]); 0: none (a whole event the
    /// sampler remembers for nothing).
    pub stream: u64,
    /// The stream itself, on whole events: how the sampler asks the
    /// callbacks for a whole event, and sees that the thread ended.
    pub handle: Option<Arc<EventStream>>,
    /// The event's number in its stream (a chained event must follow the
    /// one before it).
    pub seq: u32,
    /// Frames at the bottom of the stack shared with the previous event.
    pub shared: u32,
}

/// A thread's stream of events, held by its callbacks (a thread-local)
/// and by the sampler, which asks through it for the next event to come
/// whole (it forgot the stream's previous stack, or an event went
/// missing). Once the thread ended only the sampler holds it.
#[derive(Debug)]
pub struct EventStream {
    id: u64,
    whole_next: AtomicBool,
}

static NEXT_STREAM: AtomicU64 = AtomicU64::new(1);

/// Streams are the same when their ids are.
impl PartialEq for EventStream {
    fn eq(&self, other: &EventStream) -> bool {
        self.id == other.id
    }
}

impl EventStream {
    pub fn new() -> Arc<EventStream> {
        Arc::new(EventStream { id: NEXT_STREAM.fetch_add(1, Ordering::Relaxed), whole_next: AtomicBool::new(false) })
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// Asks the callbacks for a whole event next (the sampler).
    pub fn ask_whole(&self) {
        self.whole_next.store(true, Ordering::Release);
    }

    /// Whether the next event must be whole, forgetting the request (the
    /// callback).
    pub fn take_whole(&self) -> bool {
        self.whole_next.load(Ordering::Acquire) && self.whole_next.swap(false, Ordering::AcqRel)
    }
}

/// Events waiting for the sampler. Pushes come from any thread and never
/// block; the sampler pops.
pub struct EventQueue {
    queue: ArrayQueue<Event>,
}

impl EventQueue {
    /// A queue of `capacity` events (at least one).
    pub fn new(capacity: usize) -> EventQueue {
        EventQueue { queue: ArrayQueue::new(capacity.max(1)) }
    }

    /// Hands `event` to the sampler; false when the queue is full (the
    /// caller counts the drop, `Counters::count_event`).
    #[must_use]
    pub fn push(&self, event: Event) -> bool {
        let pushed = self.queue.push(event).is_ok();
        if self.queue.len() * 2 >= self.queue.capacity() {
            // Half full before the sampler's batch ended: it drains now.
            crate::doorbell::DOORBELL.ring();
        }
        pushed
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
}

/// Keeps the rate of recorded allocation samples near a target
/// (`alloc_rate=`, samples a second) whatever the program allocates, the
/// way JFR throttles its `ObjectAllocationSample` (150 a second by
/// default), but without bias: each sample HotSpot reports is kept at
/// random with a probability `q` known when it is drawn, and a kept
/// sample weighs `1/q` times what it would (the Horvitz-Thompson
/// estimator again, [`allocation_weight`]'s `kept`), so every context's
/// expected weight stays what it allocated. A thinned sample costs the
/// allocating thread a few atomic operations: no stack walk, no event.
///
/// `q` is the target per window (a tenth of a second) over the samples
/// reported in the previous window or so far in this one, whichever is
/// larger (the previous count halved for every quiet window since): a
/// steady rate is thinned to the target from the second window on, and a
/// burst is thinned as it grows (it keeps about
/// `target * (1 + ln(burst / target))` in its first window). Lock-free;
/// two threads that roll the window at once only blur one window's count.
pub struct Throttle {
    /// Samples to keep per window; 0: keep every sample.
    per_window: u64,
    window_start: AtomicU64,
    seen: AtomicU64,
    seen_before: AtomicU64,
}

/// The throttle's window.
const THROTTLE_WINDOW_NS: u64 = 100_000_000;

impl Throttle {
    /// A throttle to about `per_second` kept samples a second; `None`
    /// keeps every sample.
    pub fn new(per_second: Option<u64>) -> Throttle {
        let per_window = per_second.map_or(0, |rate| (rate * THROTTLE_WINDOW_NS).div_ceil(1_000_000_000).max(1));
        Throttle {
            per_window,
            window_start: AtomicU64::new(0),
            seen: AtomicU64::new(0),
            seen_before: AtomicU64::new(0),
        }
    }

    /// Whether the sample reported at `now` (monotonic ns) is kept, and
    /// if so with which probability it was: `uniform` is a draw in 0..1.
    pub fn admit(&self, now: u64, uniform: f64) -> Option<f64> {
        if self.per_window == 0 {
            return Some(1.0);
        }
        self.roll(now);
        let seen = self.seen.fetch_add(1, Ordering::Relaxed) + 1;
        let expected = seen.max(self.seen_before.load(Ordering::Relaxed));
        let keep = (self.per_window as f64 / expected as f64).min(1.0);
        (uniform < keep).then_some(keep)
    }

    /// Starts a new window once `now` is past the current one.
    fn roll(&self, now: u64) {
        let start = self.window_start.load(Ordering::Relaxed);
        let elapsed = now.saturating_sub(start);
        if elapsed < THROTTLE_WINDOW_NS {
            return;
        }
        if self.window_start.compare_exchange(start, now, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            let seen = self.seen.swap(0, Ordering::Relaxed);
            // After quiet windows the rate is taken as halved for each:
            // a program that stalls and resumes keeps about its rate, so
            // its burst is not kept whole at first and then thinned hard
            // (weights that vary widely make the estimate noisier).
            let windows = (elapsed / THROTTLE_WINDOW_NS).clamp(1, 64);
            self.seen_before.store(seen.checked_shr(windows as u32 - 1).unwrap_or(0), Ordering::Relaxed);
        }
    }
}

/// The weight of an allocation sample of an object of `size` bytes at a
/// mean sampling interval of `interval` bytes, kept by the [`Throttle`]
/// with probability `kept`: `size/p` bytes and `1/p` objects with
/// `p = kept * (1 - exp(-size/interval))`, the probability that the
/// allocation became a recorded sample (see the module docs).
///
/// Weights are whole numbers: `1/p` objects is rounded up or down at
/// random, up with the probability of its fraction, so rounding adds no
/// bias (rounding 4.52 objects to 5 every time would overcount objects of
/// a quarter of the interval by 10 %). `uniform` is that draw, in 0..1.
pub fn allocation_weight(size: u64, interval: u64, kept: f64, uniform: f64) -> Weight {
    let size = size.max(1);
    let kept = if kept > 0.0 && kept <= 1.0 { kept } else { 1.0 };
    let reported = if interval == 0 {
        1.0 // every allocation is reported
    } else {
        -(-(size as f64) / interval as f64).exp_m1()
    };
    let probability = reported * kept;
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
        let small = allocation_weight(16, interval, 1.0, 0.5);
        assert!((small.alloc_bytes as f64 - interval as f64).abs() < 16.0, "{small:?}");
        assert!((small.alloc_objects as f64 - interval as f64 / 16.0).abs() <= 1.0, "{small:?}");
        let large = allocation_weight(100 * interval, interval, 1.0, 0.5);
        assert_eq!(large, Weight::allocation(100 * interval, 1));
        let even = allocation_weight(interval, interval, 1.0, 0.5);
        let expected = interval as f64 / (1.0 - (-1.0f64).exp());
        assert!((even.alloc_bytes as f64 - expected).abs() < 1.0, "{even:?}");
        assert_eq!(allocation_weight(24, 0, 1.0, 0.5), Weight::allocation(24, 1));
        // 1/p = 4.52 objects: 4 or 5, 5 about half the time.
        assert_eq!(allocation_weight(256, 1024, 1.0, 0.9).alloc_objects, 4);
        assert_eq!(allocation_weight(256, 1024, 1.0, 0.1).alloc_objects, 5);
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
                    estimated[index].add(&allocation_weight(size, interval, 1.0, uniform()));
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

    /// A deterministic draw in 0..1 (xorshift), for the tests.
    fn draws(seed: u64) -> impl FnMut() -> f64 {
        let mut state = seed;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// Feeds `rate(second)` samples a second, evenly spaced, for `seconds`
    /// seconds: (samples seen, samples kept, sum of the kept ones' 1/q).
    fn feed(throttle: &Throttle, seconds: u64, rate: impl Fn(u64) -> u64) -> (u64, u64, f64) {
        let mut uniform = draws(0x2545_F491_4F6C_DD1D);
        let (mut seen, mut kept, mut estimate) = (0, 0, 0.0);
        for second in 0..seconds {
            let per_second = rate(second);
            for index in 0..per_second {
                let now = 1_000_000_000 + second * 1_000_000_000 + index * 1_000_000_000 / per_second;
                seen += 1;
                if let Some(keep) = throttle.admit(now, uniform()) {
                    kept += 1;
                    estimate += 1.0 / keep;
                }
            }
        }
        (seen, kept, estimate)
    }

    #[test]
    fn without_a_rate_every_sample_is_kept_whole() {
        let throttle = Throttle::new(None);
        assert_eq!(feed(&throttle, 2, |_| 50_000), (100_000, 100_000, 100_000.0));
    }

    #[test]
    fn a_steady_rate_is_thinned_to_the_target_and_the_kept_weigh_for_all() {
        let throttle = Throttle::new(Some(150));
        let (seen, kept, estimate) = feed(&throttle, 20, |_| 10_000);
        assert!((2_800..=3_300).contains(&kept), "{kept} kept of {seen}");
        assert!((estimate / seen as f64 - 1.0).abs() < 0.05, "{estimate} for {seen}");
        // Below the target nothing is thinned.
        let throttle = Throttle::new(Some(150));
        assert_eq!(feed(&throttle, 5, |_| 100), (500, 500, 500.0));
    }

    #[test]
    fn a_changing_rate_stays_unbiased_and_a_burst_is_bounded() {
        let throttle = Throttle::new(Some(150));
        let (seen, kept, estimate) = feed(&throttle, 20, |second| if second % 4 == 0 { 40_000 } else { 500 });
        assert!((estimate / seen as f64 - 1.0).abs() < 0.05, "{estimate} for {seen}, {kept} kept");
        assert!(kept < 20 * 150 * 2, "{kept} kept");
        // 50,000 samples in one instant: the first window keeps about
        // 15 * (1 + ln(50000 / 15)), about 137.
        let throttle = Throttle::new(Some(150));
        let mut uniform = draws(7);
        let burst = (0..50_000).filter(|_| throttle.admit(5_000_000_000, uniform()).is_some()).count();
        assert!((60..=250).contains(&burst), "{burst} kept of a burst");
    }

    #[test]
    fn after_a_stall_the_rate_is_taken_as_halved_for_every_quiet_window() {
        let throttle = Throttle::new(Some(150)); // 15 a window
        let mut uniform = draws(11);
        // 1,600 in the window from 1.0 s, then nothing until 1.35 s.
        for index in 0..1_600u64 {
            throttle.admit(1_000_000_000 + index * 50_000, uniform());
        }
        // Three windows later: 1,600 / 4 = 400 taken as the rate, so the
        // first sample of the burst is kept with probability 15/400.
        assert_eq!(throttle.admit(1_350_000_000, 0.0), Some(15.0 / 400.0));
        assert_eq!(throttle.admit(1_350_000_001, 0.5), None);
    }

    /// HotSpot's sampling and the throttle together: the bytes and
    /// objects of every size come back within a few percent (a fixed seed).
    #[test]
    fn the_thinned_estimate_is_unbiased_for_every_size() {
        let interval = 1024u64;
        // Each size allocates the same bytes, 8 KiB a round.
        let sizes = [(16u64, 512), (1024, 8), (8192, 1)];
        let mut uniform = draws(0x9E37_79B9_7F4A_7C15);
        let throttle = Throttle::new(Some(2_000));
        let mut until_sample = -(interval as f64) * (1.0 - uniform()).ln();
        let mut estimated = [Weight::ZERO; 3];
        let mut allocated = [0u64; 3];
        let mut now = 1_000_000_000u64;
        // 1 GiB at 200 MiB/s: about a million samples reported in 5 s,
        // about 10,000 kept.
        for _ in 0..(1u64 << 30) / (3 * 8192) {
            for (index, &(size, count)) in sizes.iter().enumerate() {
                for _ in 0..count {
                    now += 5 * size;
                    allocated[index] += size;
                    until_sample -= size as f64;
                    if until_sample > 0.0 {
                        continue;
                    }
                    while until_sample <= 0.0 {
                        until_sample += -(interval as f64) * (1.0 - uniform()).ln();
                    }
                    if let Some(keep) = throttle.admit(now, uniform()) {
                        estimated[index].add(&allocation_weight(size, interval, keep, uniform()));
                    }
                }
            }
        }
        for (index, &(size, _)) in sizes.iter().enumerate() {
            let bytes = allocated[index] as f64;
            let bytes_error = (estimated[index].alloc_bytes as f64 - bytes).abs() / bytes;
            let objects_error =
                (estimated[index].alloc_objects as f64 - bytes / size as f64).abs() / (bytes / size as f64);
            assert!(
                bytes_error < 0.05 && objects_error < 0.05,
                "size {size}: {:?} for {bytes} bytes",
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
            chain: Chain::default(),
            frames: vec![(1, 2)],
            truncated: false,
            class: "byte[]".into(),
            weight: Weight::allocation(1, 1),
            object: 0,
        };
        assert!(queue.push(event(EventKind::Allocation)));
        assert!(!queue.is_full());
        assert!(queue.push(event(EventKind::Monitor)));
        assert!(queue.is_full());
        assert!(!queue.push(event(EventKind::Allocation)));
        assert_eq!(queue.pop().map(|e| e.kind), Some(EventKind::Allocation));
        assert_eq!(queue.pop().map(|e| e.kind), Some(EventKind::Monitor));
        assert_eq!(queue.pop(), None);
    }
}
