//! The live heap: the sampled allocations whose objects are still
//! reachable, as the resources `live_bytes` and `live_objects`.
//!
//! Each recorded allocation can carry a weak reference to its object (the
//! agent's callback makes it; here it is an opaque handle). The sampler
//! thread records the allocation as before and hands the handle here with
//! the allocation's context in the tree and its estimate ([`LiveObject`]).
//! A service thread attached to the VM (the agent's heap thread) checks
//! every handle after each garbage collection ([`LiveHeap::sweep`]): an
//! object collected since, or one whose context a purge removed, leaves
//! the table and its handle is given back. The `GarbageCollectionFinish`
//! callback only counts the collection ([`LiveHeap::gc_finished`]).
//!
//! The profile itself never holds live weights: its weights only grow
//! between purges, and an object's death would take weight away. A view
//! that needs them adds them to its copy of the profile
//! ([`LiveHeap::add_to`]), at the contexts of their allocations, so every
//! view shows the live heap as it shows allocations.
//!
//! Memory is bounded: at most `capacity` objects are tracked (`live_max`);
//! beyond it a new allocation is not tracked, counted as dropped, and its
//! handle given back. Locks: the sampler thread never waits for this
//! table's lock ([`LiveHeap::offer`] tries it and keeps its batch for the
//! next tick when it is held); views and the heap thread hold it only to
//! copy or to remove, never while they call into the VM.

#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use pcct::{NodeId, Pcct, Weight};
use serde::Serialize;

/// One tracked object: where it was allocated and what it stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveObject {
    /// The tree's purge generation when it was recorded.
    pub epoch: u64,
    /// Its allocation's context (the allocated type's node).
    pub node: NodeId,
    /// Its estimate: the bytes and objects it stands for.
    pub bytes: u64,
    pub objects: u64,
    /// The weak reference to the object (opaque here; never 0).
    pub handle: u64,
}

#[derive(Default)]
struct Inner {
    objects: Vec<LiveObject>,
    /// Handles to give back (their allocations were not recorded).
    release: Vec<u64>,
}

/// See the module documentation.
pub struct LiveHeap {
    capacity: usize,
    inner: Mutex<Inner>,
    gcs: AtomicU64,
    tracked_total: AtomicU64,
    dropped_total: AtomicU64,
    collected_total: AtomicU64,
    purged_total: AtomicU64,
    sweeps: AtomicU64,
    sweep_ns: AtomicU64,
}

/// What `/api/status` and `/metrics` show of the live heap.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct LiveHeapStatus {
    /// Most objects tracked at once (`live_max`; 0: the live heap is off).
    pub capacity: usize,
    /// Objects tracked now.
    pub tracked: usize,
    /// What they stand for (those found collected at the last sweep left).
    pub live_bytes: u64,
    pub live_objects: u64,
    /// Garbage collections seen (`GarbageCollectionFinish`).
    pub gcs: u64,
    /// Sweeps done after them.
    pub sweeps: u64,
    /// CPU time of the last sweep on the heap thread, in nanoseconds.
    pub last_sweep_ns: u64,
    /// Objects tracked since the start.
    pub tracked_total: u64,
    /// Allocations not tracked because the table was full.
    pub dropped_total: u64,
    /// Tracked objects found collected.
    pub collected_total: u64,
    /// Tracked objects dropped because a purge removed their contexts.
    pub purged_total: u64,
}

/// What one sweep found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Swept {
    pub checked: usize,
    pub collected: usize,
    pub purged: usize,
    pub released: usize,
}

impl LiveHeap {
    /// A table for at most `capacity` objects (0: the live heap is off).
    pub fn new(capacity: usize) -> LiveHeap {
        LiveHeap {
            capacity,
            inner: Mutex::new(Inner::default()),
            gcs: AtomicU64::new(0),
            tracked_total: AtomicU64::new(0),
            dropped_total: AtomicU64::new(0),
            collected_total: AtomicU64::new(0),
            purged_total: AtomicU64::new(0),
            sweeps: AtomicU64::new(0),
            sweep_ns: AtomicU64::new(0),
        }
    }

    /// Whether allocations carry weak references here at all.
    pub fn is_on(&self) -> bool {
        self.capacity > 0
    }

    /// From `GarbageCollectionFinish`: counts the collection, nothing more
    /// (no lock, no allocation, no call into the VM).
    pub fn gc_finished(&self) {
        self.gcs.fetch_add(1, Ordering::Release);
    }

    /// Collections seen so far.
    pub fn gcs(&self) -> u64 {
        self.gcs.load(Ordering::Acquire)
    }

    /// The sampler thread hands over `batch` (tracked objects) and
    /// `release` (handles of allocations it did not record), if the lock is
    /// free; otherwise both stay for the next tick. Beyond `capacity`
    /// (tracked and waiting together) an object is dropped, counted, and
    /// its handle goes to `release`.
    pub fn offer(&self, batch: &mut Vec<LiveObject>, release: &mut Vec<u64>) {
        if batch.is_empty() && release.is_empty() {
            return;
        }
        let Some(mut inner) = self.inner.try_lock() else {
            self.bound_waiting(batch, release);
            return;
        };
        let room = self.capacity.saturating_sub(inner.objects.len());
        let kept = batch.len().min(room);
        for object in batch.drain(kept..) {
            release.push(object.handle);
            self.dropped_total.fetch_add(1, Ordering::Relaxed);
        }
        self.tracked_total.fetch_add(kept as u64, Ordering::Relaxed);
        inner.objects.append(batch);
        inner.release.append(release);
    }

    /// A batch that waits for the lock never holds more than `capacity`.
    fn bound_waiting(&self, batch: &mut Vec<LiveObject>, release: &mut Vec<u64>) {
        if batch.len() > self.capacity {
            for object in batch.drain(self.capacity..) {
                release.push(object.handle);
                self.dropped_total.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Whether a sweep has work: a collection since `seen_gcs`, handles to
    /// give back, or objects of an older purge generation than `epoch`.
    pub fn needs_sweep(&self, seen_gcs: u64, epoch: u64) -> bool {
        if self.gcs() != seen_gcs {
            return true;
        }
        let inner = self.inner.lock();
        !inner.release.is_empty() || inner.objects.first().is_some_and(|object| object.epoch != epoch)
    }

    /// On the heap thread: drops every object `collected` says is gone and
    /// every one recorded before the purge generation `epoch`, and hands
    /// their handles, and those waiting to be released, to `release`. The
    /// checks and the releases run without the lock, so views and the
    /// sampler wait for no call into the VM.
    pub fn sweep(&self, epoch: u64, mut collected: impl FnMut(u64) -> bool, mut release: impl FnMut(u64)) -> Swept {
        let started = crate::slots::current_thread_cpu_ns();
        let (handles, waiting) = {
            let mut inner = self.inner.lock();
            let handles: Vec<(u64, bool)> =
                inner.objects.iter().map(|object| (object.handle, object.epoch != epoch)).collect();
            (handles, std::mem::take(&mut inner.release))
        };
        let mut gone: Vec<u64> = Vec::new();
        let mut swept = Swept { checked: handles.len(), released: waiting.len(), ..Swept::default() };
        for (handle, purged) in handles {
            if purged {
                swept.purged += 1;
                gone.push(handle);
            } else if collected(handle) {
                swept.collected += 1;
                gone.push(handle);
            }
        }
        gone.sort_unstable();
        if !gone.is_empty() {
            self.inner.lock().objects.retain(|object| gone.binary_search(&object.handle).is_err());
        }
        for handle in gone.into_iter().chain(waiting) {
            release(handle);
        }
        self.collected_total.fetch_add(swept.collected as u64, Ordering::Relaxed);
        self.purged_total.fetch_add(swept.purged as u64, Ordering::Relaxed);
        self.sweeps.fetch_add(1, Ordering::Relaxed);
        self.sweep_ns.store(crate::slots::current_thread_cpu_ns().saturating_sub(started), Ordering::Relaxed);
        swept
    }

    /// Adds the tracked objects of `tree`'s purge generation to it, each at
    /// its allocation's context: for a copy of the profile a view reads.
    pub fn add_to(&self, tree: &mut Pcct) {
        if !self.is_on() {
            return;
        }
        let epoch = tree.epoch();
        let objects: Vec<(NodeId, Weight)> = {
            let inner = self.inner.lock();
            let current = inner.objects.iter().filter(|object| object.epoch == epoch);
            current.map(|object| (object.node, Weight::live(object.bytes, object.objects))).collect()
        };
        for (node, weight) in objects {
            tree.add_event_at(node, &weight);
        }
    }

    /// Adds the tracked objects to `tree`, the profile itself, once, and
    /// tracks nothing more, so no later view adds them again: at VM death,
    /// when nothing records any more (their weak references go with the VM).
    pub fn fold_into(&self, tree: &mut Pcct) {
        self.add_to(tree);
        self.inner.lock().objects.clear();
    }

    pub fn status(&self) -> LiveHeapStatus {
        let (tracked, weight) = {
            let inner = self.inner.lock();
            let weights = inner.objects.iter().map(|object| Weight::live(object.bytes, object.objects));
            (inner.objects.len(), weights.sum::<Weight>())
        };
        LiveHeapStatus {
            capacity: self.capacity,
            tracked,
            live_bytes: weight.live_bytes,
            live_objects: weight.live_objects,
            gcs: self.gcs(),
            sweeps: self.sweeps.load(Ordering::Relaxed),
            last_sweep_ns: self.sweep_ns.load(Ordering::Relaxed),
            tracked_total: self.tracked_total.load(Ordering::Relaxed),
            dropped_total: self.dropped_total.load(Ordering::Relaxed),
            collected_total: self.collected_total.load(Ordering::Relaxed),
            purged_total: self.purged_total.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcct::{Frame, Metric, TreeConfig};

    fn tree_with_two_sites() -> (Pcct, NodeId, NodeId) {
        let mut tree = Pcct::new(TreeConfig::default()).unwrap();
        let (a, b, x, y) = (pcct::MethodId(10), pcct::MethodId(11), pcct::MethodId(12), pcct::MethodId(13));
        let first = tree.record_event(&[Frame::new(a, 1), Frame::new(x, 0)], Weight::allocation(100, 1)).unwrap();
        let second = tree.record_event(&[Frame::new(b, 2), Frame::new(y, 0)], Weight::allocation(50, 1)).unwrap();
        (tree, first.leaf, second.leaf)
    }

    fn object(tree: &Pcct, node: NodeId, bytes: u64, handle: u64) -> LiveObject {
        LiveObject { epoch: tree.epoch(), node, bytes, objects: 1, handle }
    }

    #[test]
    fn a_copy_gets_the_objects_that_survive_the_sweep_and_their_handles_come_back() {
        let (tree, x, y) = tree_with_two_sites();
        let heap = LiveHeap::new(10);
        let mut batch = vec![object(&tree, x, 60, 1), object(&tree, x, 60, 2), object(&tree, y, 40, 3)];
        let mut release = vec![9];
        heap.offer(&mut batch, &mut release);
        assert!(batch.is_empty() && release.is_empty());
        heap.gc_finished();
        assert!(heap.needs_sweep(0, tree.epoch()));
        let mut released = Vec::new();
        let swept = heap.sweep(tree.epoch(), |handle| handle == 2, |handle| released.push(handle));
        assert_eq!(swept, Swept { checked: 3, collected: 1, purged: 0, released: 1 });
        released.sort_unstable();
        assert_eq!(released, vec![2, 9]);
        assert!(!heap.needs_sweep(1, tree.epoch()));

        let mut copy = tree.clone();
        heap.add_to(&mut copy);
        assert_eq!((copy.node_value(x, Metric::LiveBytes), copy.node_value(y, Metric::LiveBytes)), (60, 40));
        assert_eq!(copy.total().live_objects, 2);
        assert_eq!(copy.top_nodes_by(Metric::LiveBytes, 2), vec![x, y]);
        assert_eq!(copy.method_self_weight(copy.method(x)).live_bytes, 60, "the type's self");
        assert_eq!(copy.method_self_weight(copy.method(y)).live_objects, 1);
        assert_eq!(tree.total().live_bytes, 0, "the profile itself holds no live weight");
        let status = heap.status();
        assert_eq!((status.tracked, status.live_bytes, status.collected_total), (2, 100, 1));
    }

    #[test]
    fn memory_is_bounded_and_what_did_not_fit_is_counted_and_released() {
        let (tree, x, _) = tree_with_two_sites();
        let heap = LiveHeap::new(2);
        let mut batch: Vec<LiveObject> = (1..=5).map(|handle| object(&tree, x, 8, handle)).collect();
        let mut release = Vec::new();
        heap.offer(&mut batch, &mut release);
        assert!(batch.is_empty() && release.is_empty(), "handed over");
        let status = heap.status();
        assert_eq!((status.tracked, status.dropped_total, status.tracked_total), (2, 3, 2));
        // What did not fit is given back at the next sweep.
        let mut released = Vec::new();
        heap.sweep(tree.epoch(), |_| false, |handle| released.push(handle));
        assert_eq!(released, vec![3, 4, 5]);
        // While the lock is held the batch waits, but never beyond the capacity.
        let held = heap.inner.lock();
        let mut batch: Vec<LiveObject> = (10..=13).map(|handle| object(&tree, x, 8, handle)).collect();
        let mut release = Vec::new();
        heap.offer(&mut batch, &mut release);
        drop(held);
        assert_eq!((batch.len(), release.len()), (2, 2));
    }

    #[test]
    fn a_purge_drops_the_objects_of_its_contexts() {
        let (mut tree, x, _) = tree_with_two_sites();
        let heap = LiveHeap::new(4);
        heap.offer(&mut vec![object(&tree, x, 8, 1)], &mut Vec::new());
        tree.purge();
        let mut copy = tree.clone();
        heap.add_to(&mut copy);
        assert_eq!(copy.total().live_bytes, 0, "another generation's contexts are not this tree's");
        assert!(heap.needs_sweep(heap.gcs(), tree.epoch()));
        let mut released = Vec::new();
        let swept = heap.sweep(tree.epoch(), |_| false, |handle| released.push(handle));
        assert_eq!((swept.purged, released), (1, vec![1]));
        assert_eq!(heap.status().tracked, 0);
    }
}
