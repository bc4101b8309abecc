//! The agent's heap thread: keeps the live heap's table
//! (`pcct_sampler::live_heap`) to the sampled objects still reachable.
//!
//! It wakes every [`POLL`] and sweeps when there is work: a garbage
//! collection since its last sweep (counted by the GarbageCollectionFinish
//! callback, which may do nothing more), weak references to give back, or
//! objects a purge orphaned. Without GarbageCollectionFinish events it
//! sweeps every [`SWEEP_WITHOUT_GC_EVENTS`] instead. A sweep asks JNI
//! whether each tracked object was collected (`IsSameObject` with null,
//! about 20 ns each: 1-2 ms for the 65,536 objects `live=` tracks by
//! default) and deletes the weak references of those gone. It never holds
//! the table's lock while it calls into the VM.

#![forbid(unsafe_code)]

use std::time::{Duration, Instant};

use pcct_sampler::Shared;

use crate::jvmti::Jni;
use crate::jvmti_sys::jobject;

/// How often the thread looks for work.
const POLL: Duration = Duration::from_millis(100);

/// How often it sweeps when the VM sends no GarbageCollectionFinish.
const SWEEP_WITHOUT_GC_EVENTS: Duration = Duration::from_secs(1);

/// Runs until `stopping` says so.
pub fn serve(shared: &Shared, jni: Jni, gc_events: bool, stopping: impl Fn() -> bool) {
    let live = &shared.live;
    let mut seen_gcs = live.gcs();
    let mut last_sweep = Instant::now();
    while !stopping() {
        std::thread::sleep(POLL);
        let epoch = shared.profile.lock().tree.epoch();
        let due = !gc_events && last_sweep.elapsed() >= SWEEP_WITHOUT_GC_EVENTS;
        if !due && !live.needs_sweep(seen_gcs, epoch) {
            continue;
        }
        seen_gcs = live.gcs();
        last_sweep = Instant::now();
        live.sweep(
            epoch,
            |handle| jni.is_collected(handle as jobject),
            |handle| jni.delete_weak_global_ref(handle as jobject),
        );
    }
}
