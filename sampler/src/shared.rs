//! State the sampler shares with the agent and the HTTP server.
//!
//! The sampler thread owns the sampling; others read answers here:
//! - `profile` (tree + method names) behind a mutex. The sampler holds it
//!   only while it applies one tick's samples; readers hold it only to copy
//!   out an answer (hot lists: microseconds; a whole-tree snapshot: a
//!   memcpy). The sampler waits at most half an interval for it and
//!   otherwise keeps the samples for the next tick (counted as a deferred
//!   drain), so no reader can stall sampling.
//! - `counters`: atomics.
//! - `recent`: the recent samples ring.
//! - `control`: what the sampler should do, read at every tick.
//!
//! **Lock order: `profile`, then `recent`.** The sampler takes `recent` only
//! while it holds `profile`, and so does every reader (`/api/samples` names
//! a page's frames with the profile's method table); so a reader that holds
//! `recent` holds `profile` too, and the sampler, which only ever *tries*
//! `profile` for a bounded time, never waits for `recent` behind a reader.
//! `vm`, `disabled` and `thread_names` are leaf locks (nothing else is
//! taken under them); the sampler thread never takes `thread_names`, so
//! JVMTI callbacks on Java threads may. `jit` (the inline table,
//! `pcct_jit::live`) is never taken by the sampler thread either: the JVMTI
//! callbacks that load and unload code, HTTP readers and the dump take it,
//! with nothing else held.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pcct::{MethodTable, Pcct, TreeConfig};

use crate::config::{Mode, SamplerConfig};
use crate::counters::Counters;
use crate::error::Result;
use crate::events::EventQueue;
use crate::live_heap::LiveHeap;
use crate::recent::RecentSamples;
use crate::thread_names::ThreadNames;

/// The tree and the names of its methods.
///
/// The method table is shared copy-on-write: a snapshot ([`Shared::snapshot`])
/// shares it, and the sampler copies it only if it must intern a new name
/// while a snapshot still holds the old table (rare once the program's hot
/// methods are named).
#[derive(Clone)]
pub struct Profile {
    pub tree: Pcct,
    pub methods: Arc<MethodTable>,
}

impl Profile {
    pub fn new(config: TreeConfig) -> Result<Profile> {
        Ok(Profile { tree: Pcct::new(config)?, methods: Arc::new(MethodTable::new()) })
    }
}

/// Run-time control of the sampler (the `/api/sampling` knobs).
pub struct Control {
    running: AtomicBool,
    stop: AtomicBool,
    interval_ns: AtomicU64,
    mode: AtomicU8,
}

impl Control {
    fn new(config: &SamplerConfig) -> Control {
        Control {
            running: AtomicBool::new(true),
            stop: AtomicBool::new(false),
            interval_ns: AtomicU64::new(config.interval.as_nanos() as u64),
            mode: AtomicU8::new(config.mode.as_u8()),
        }
    }

    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }

    /// Pauses (false) or resumes (true) sampling; the thread keeps ticking.
    pub fn set_running(&self, running: bool) {
        self.running.store(running, Ordering::Release);
        // The sampler follows at its next wake: now.
        crate::doorbell::DOORBELL.ring();
    }

    pub fn interval(&self) -> Duration {
        Duration::from_nanos(self.interval_ns.load(Ordering::Acquire))
    }

    pub fn set_interval(&self, interval: Duration) {
        self.interval_ns.store(interval.as_nanos() as u64, Ordering::Release);
        // The sampler follows at its next wake: now.
        crate::doorbell::DOORBELL.ring();
    }

    pub fn mode(&self) -> Mode {
        Mode::from_u8(self.mode.load(Ordering::Acquire))
    }

    /// Changes the mode; the sampler purges the tree when it takes effect,
    /// since cpu and wall profiles are sorted by different weights.
    pub fn set_mode(&self, mode: Mode) {
        self.mode.store(mode.as_u8(), Ordering::Release);
        // The sampler follows at its next wake: now.
        crate::doorbell::DOORBELL.ring();
    }

    /// Asks the sampler thread to finish its last drain and return.
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::Release);
        // The sampler follows at its next wake: now.
        crate::doorbell::DOORBELL.ring();
    }

    pub fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }
}

/// Facts about the profiled VM, filled in by the agent.
#[derive(Clone, Debug, Default)]
pub struct VmInfo {
    pub jvm_name: String,
    pub jvm_version: String,
    pub pid: u32,
    /// Which stack walker walks (pcct's own with AsyncGetCallTrace as the
    /// fallback, or AsyncGetCallTrace alone, and why).
    pub walker: String,
    /// What compiled code's debug information describes: every instruction
    /// (DebugNonSafepoints on) or only safepoints, and who decided.
    pub debug_info: String,
    /// Which events (sampled allocations, contended monitor enters) are
    /// recorded beside the samples.
    pub events: String,
    /// Whether samples carry native frames, and from how many modules
    /// (`native=`; "off" unless the sampler started them).
    pub native: String,
}

pub struct Shared {
    /// Taken before `recent` (see the module documentation).
    pub profile: Mutex<Profile>,
    pub counters: Counters,
    /// Taken only while `profile` is held.
    pub recent: Mutex<RecentSamples>,
    pub control: Control,
    pub config: SamplerConfig,
    /// Events the agent's callbacks hand to the sampler (lock-free; none
    /// when no event is reported).
    pub events: Option<EventQueue>,
    pub vm: Mutex<VmInfo>,
    pub started: Instant,
    /// Set when the sampler thread has returned.
    pub finished: AtomicBool,
    /// The tick whose drain last completed: every sample signalled before
    /// that tick is in the profile (answers are at most one tick gap, up to
    /// 1 + `jitter` intervals, plus the drain behind).
    pub drained_tick: AtomicU64,
    /// When that drain completed (CLOCK_MONOTONIC nanoseconds; 0: never).
    pub drained_at_ns: AtomicU64,
    /// The batch interval while the sampler drains in batches (`sampler`,
    /// "Batches"), in nanoseconds; 0 while it ticks every interval.
    pub batch_ns: AtomicU64,
    /// Set by an answer that waits for a drain ([`Shared::ask_for_drain`]):
    /// that drain also waits for handlers it finds writing, at most half a
    /// batch (`sampler`, "Batches").
    pub drain_asked: AtomicBool,
    /// Why sampling is off for good, if it is (shown by /api/status, the
    /// metrics and the summary at exit).
    pub disabled: Mutex<Option<String>>,
    /// What HotSpot's JIT compiled and inlined (the inline table), fed by
    /// the agent's CompiledMethodLoad/Unload callbacks.
    pub jit: pcct_jit::Jit,
    /// Java thread names by kernel thread id (written at registration,
    /// read by answers; never by the sampler thread).
    pub thread_names: Mutex<ThreadNames>,
    /// The sampled allocations still reachable (`live_max`; off at 0).
    pub live: LiveHeap,
}

impl Shared {
    pub fn new(config: SamplerConfig) -> Result<Shared> {
        Ok(Shared {
            profile: Mutex::new(Profile::new(config.tree.clone())?),
            counters: Counters::default(),
            recent: Mutex::new(RecentSamples::new(config.recent_capacity)),
            control: Control::new(&config),
            events: (config.event_capacity > 0).then(|| EventQueue::new(config.event_capacity)),
            live: LiveHeap::new(config.live_capacity),
            config,
            vm: Mutex::new(VmInfo::default()),
            started: Instant::now(),
            finished: AtomicBool::new(false),
            drained_tick: AtomicU64::new(0),
            drained_at_ns: AtomicU64::new(0),
            batch_ns: AtomicU64::new(0),
            drain_asked: AtomicBool::new(false),
            disabled: Mutex::new(None),
            jit: pcct_jit::Jit::default(),
            thread_names: Mutex::new(ThreadNames::new()),
        })
    }

    /// Turns sampling off for good with `reason` (the first reason given
    /// stays); the sampler thread finishes its last drain and returns.
    pub fn disable(&self, reason: String) {
        self.disabled.lock().get_or_insert(reason);
        self.control.request_stop();
    }

    /// Why sampling is off for good, if it is.
    pub fn disabled_reason(&self) -> Option<String> {
        self.disabled.lock().clone()
    }

    /// The batch interval while the sampler drains in batches (and has not
    /// stopped): an answer may then ask for a drain first (`doorbell`).
    pub fn batching(&self) -> Option<Duration> {
        match self.batch_ns.load(Ordering::Acquire) {
            0 => None,
            _ if self.finished.load(Ordering::Acquire) => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }

    /// Asks the sampler to drain now for an answer that wants the newest
    /// samples (it waits for `drained_tick` to pass the tick it read).
    pub fn ask_for_drain(&self) {
        self.drain_asked.store(true, Ordering::Release);
        crate::doorbell::DOORBELL.ring();
    }

    /// Purges the tree now (readers' request: `POST /api/purge`).
    pub fn purge(&self) {
        self.profile.lock().tree.purge();
    }

    /// A copy of the whole profile, taken under the lock (a copy of the
    /// arena and the hot lists; the method table is shared), for answers
    /// that take longer to compute than a lock may be held. The copy holds
    /// the live heap too (`live_bytes`, `live_objects`), which the profile
    /// itself never does.
    /// At VM death, when nothing records any more: the live heap's tracked
    /// objects added to the profile itself, once ([`LiveHeap::fold_into`]),
    /// so the file is written without a copy of the tree (which would double
    /// the arena); a view taken after finds them there.
    pub fn fold_live_heap(&self) {
        let mut profile = self.profile.lock();
        self.live.fold_into(&mut profile.tree);
    }

    pub fn snapshot(&self) -> Profile {
        let mut profile = self.profile.lock().clone();
        self.live.add_to(&mut profile.tree);
        profile
    }
}
