//! Counters of everything the sampler does, as atomics (written by the
//! sampler thread, read by anyone), and fixed-bucket histograms.
//!
//! No tick that does not become a sample goes uncounted: a thread skipped
//! at a tick is counted once (`samples_idle` or `samples_busy`), and every
//! signal sent ends in exactly one outcome:
//!
//! ```text
//! signals_sent = samples_recorded + samples_failed + samples_filtered
//!              + samples_deferred + samples_dropped_full + samples_lost
//!              + samples_retired
//!              (+ requests still outstanding while sampling runs)
//! ```
//!
//! (A signal of a thread's own CPU timer counts as sent when the sample
//! it took is drained; one that found no place in its slot is
//! `timer_signals_busy`.)
//!
//! The profile's sample total is `samples_recorded + samples_failed +
//! samples_wall_credited + sampler_samples` (less what purges cleared), its
//! CPU `cpu_ns_recorded + sampler_cpu_ns_recorded`.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use pcct::Weight;

use crate::agct::AgctError;
use crate::events::EventKind;
use crate::hotspot::walker::Broken;

/// A histogram with fixed upper bounds (nanoseconds), lock-free.
pub struct Histogram {
    bounds: &'static [u64],
    counts: Vec<AtomicU64>,
    sum: AtomicU64,
    count: AtomicU64,
}

/// Bucket bounds for durations from 1 µs to 100 ms.
pub const DURATION_BOUNDS_NS: &[u64] = &[
    1_000,
    2_500,
    5_000,
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    10_000_000,
    100_000_000,
];

/// A point-in-time copy of a [`Histogram`].
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct HistogramSnapshot {
    /// (upper bound in ns, cumulative count) pairs, ascending.
    pub buckets: Vec<(u64, u64)>,
    pub sum_ns: u64,
    pub count: u64,
}

impl Histogram {
    pub fn new(bounds: &'static [u64]) -> Histogram {
        Histogram {
            bounds,
            counts: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, value_ns: u64) {
        if let Some(index) = self.bounds.iter().position(|&bound| value_ns <= bound) {
            self.counts[index].fetch_add(1, Ordering::Relaxed);
        }
        self.sum.fetch_add(value_ns, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut cumulative = 0;
        let buckets = self
            .bounds
            .iter()
            .zip(&self.counts)
            .map(|(&bound, count)| {
                cumulative += count.load(Ordering::Relaxed);
                (bound, cumulative)
            })
            .collect();
        HistogramSnapshot {
            buckets,
            sum_ns: self.sum.load(Ordering::Relaxed),
            count: self.count.load(Ordering::Relaxed),
        }
    }
}

macro_rules! counters {
    ($( $(#[$doc:meta])* $name:ident ),* $(,)?) => {
        /// The sampler's counters.
        pub struct Counters {
            $( $(#[$doc])* pub $name: AtomicU64, )*
            /// Samples per AsyncGetCallTrace failure, indexed like [`AgctError::ALL`]; the last entry counts unknown codes.
            pub agct_failures: [AtomicU64; AgctError::ALL.len() + 1],
            /// Samples whose walk by pcct's own walker stopped early, by
            /// reason (indexed like [`Broken::ALL`]), whether AsyncGetCallTrace
            /// then walked them or not.
            pub walker_broken: [AtomicU64; Broken::ALL.len()],
            /// CPU time the signal handler took on its thread (measured in the
            /// handler with the thread's CPU clock, observed by the sampler).
            pub handler_time: Histogram,
            /// Time an event callback (a sampled allocation or a contended
            /// enter that is recorded) took on its Java thread: its stack,
            /// its class's name, the queue (monotonic clock: a callback is
            /// seldom preempted, so about its CPU time and never less).
            pub callback_time: Histogram,
            /// Time one drain (copy, resolve, update the tree) took.
            pub drain_time: Histogram,
            /// Time one whole tick took, drain and signals included.
            pub tick_time: Histogram,
        }

        /// A plain copy of [`Counters`].
        #[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
        pub struct CountersSnapshot {
            $( pub $name: u64, )*
            /// (reason label, samples) for each AsyncGetCallTrace failure code.
            pub agct_failures: Vec<(String, u64)>,
            /// (reason label, samples) for each reason pcct's walker stopped early.
            pub walker_broken: Vec<(String, u64)>,
            /// (ending, walks) for each way a native walk ended
            /// ([`crate::native_frames::endings`]; `native=on`).
            pub native_endings: Vec<(String, u64)>,
            pub handler_time: HistogramSnapshot,
            pub callback_time: HistogramSnapshot,
            pub drain_time: HistogramSnapshot,
            pub tick_time: HistogramSnapshot,
            /// Bytes the agent's own heap holds, and the most it held
            /// ([`crate::heap`]; zero where its allocator is not installed).
            pub agent_heap_bytes: u64,
            pub agent_heap_peak_bytes: u64,
        }

        impl Default for Counters {
            fn default() -> Self {
                Counters {
                    $( $name: AtomicU64::new(0), )*
                    agct_failures: Default::default(),
                    walker_broken: Default::default(),
                    handler_time: Histogram::new(DURATION_BOUNDS_NS),
                    callback_time: Histogram::new(DURATION_BOUNDS_NS),
                    drain_time: Histogram::new(DURATION_BOUNDS_NS),
                    tick_time: Histogram::new(DURATION_BOUNDS_NS),
                }
            }
        }

        impl Counters {
            pub fn snapshot(&self) -> CountersSnapshot {
                CountersSnapshot {
                    $( $name: self.$name.load(Ordering::Relaxed), )*
                    agct_failures: AgctError::ALL
                        .iter()
                        .map(|error| error.label().to_string())
                        .chain(std::iter::once("other".to_string()))
                        .zip(&self.agct_failures)
                        .map(|(label, count)| (label, count.load(Ordering::Relaxed)))
                        .collect(),
                    walker_broken: Broken::ALL
                        .iter()
                        .zip(&self.walker_broken)
                        .map(|(reason, count)| (reason.label().to_string(), count.load(Ordering::Relaxed)))
                        .collect(),
                    native_endings: crate::native_frames::endings()
                        .map(|(ending, count)| (ending.to_string(), count))
                        .collect(),
                    handler_time: self.handler_time.snapshot(),
                    callback_time: self.callback_time.snapshot(),
                    drain_time: self.drain_time.snapshot(),
                    tick_time: self.tick_time.snapshot(),
                    agent_heap_bytes: crate::heap::usage().live_bytes,
                    agent_heap_peak_bytes: crate::heap::usage().peak_bytes,
                }
            }
        }
    };
}

counters! {
    /// Timer ticks.
    ticks,
    /// Ticks that started more than a tenth of the interval late.
    ticks_late,
    /// Whole intervals the timer skipped because it fell behind.
    ticks_missed,
    /// Nanoseconds the timer spun waiting for deadlines.
    spin_ns,
    /// Wakes of the batching sampler before its batch ended, for its
    /// doorbell (`doorbell`: a slot half full, the pool running low, a new
    /// thread, a query, a control change).
    wakes_rung,
    /// Answers that waited a whole batch interval for their drain and
    /// answered without it (`fresh`, in the server).
    fresh_waits_expired,
    /// CPU time the sampler thread itself has used (its own CPU clock, read
    /// at every tick): waking up, spinning, draining, signalling.
    sampler_cpu_ns,
    /// Sampling signals sent to threads: by the sampler, and by threads'
    /// own CPU timers when they answered a request (`timer_samples`).
    signals_sent,
    /// Signals that could not be sent (thread already gone, or another error).
    signal_failures,
    /// Signals nobody from pcct sent (received by the handler and ignored).
    signals_stray,
    /// Signals that arrived for a request no longer pending.
    signals_stale,
    /// Threads given their own CPU timer (`timer=thread`, cpu mode; again
    /// after a pause, a change of interval or of mode).
    timers_opened,
    /// Threads the kernel refused a CPU timer (no perf events, or out of
    /// descriptors): the sampler signals them instead.
    timers_refused,
    /// Samples a thread's own CPU timer took (also counted in `signals_sent`).
    timer_samples,
    /// Samples of a thread's own timer taken while an earlier sample of it
    /// still waited for the sampler thread (a place behind the first,
    /// `slots`; part of `timer_samples`).
    timer_samples_queued,
    /// Signals of a thread's CPU timer that found no place in its slot
    /// (`slots::PLACES` samples waiting, or both of the slot's own regions
    /// taken and the pool's all borrowed) or the sampler draining it: no
    /// sample.
    timer_signals_busy,
    /// Samples of a thread's own timer whose handler read no clock: it
    /// timed itself by the processor's counter (`tsc`), and the sample
    /// weighs the timer's intervals (part of `timer_samples`).
    timer_samples_counter_timed,
    /// Handler calls during which the thread was switched out (a timer's
    /// handler timed by the processor's counter, `tsc`): their wall time is
    /// not their CPU time, so they are not in `handler_time`.
    handler_switched,
    /// Samples recorded into the tree with a Java stack, or of a thread
    /// that runs no Java code under its kind (`threads=all`).
    samples_recorded,
    /// Of `samples_recorded`, those of threads that run no Java code
    /// (HotSpot's, pcct's, native ones: `threads=all`).
    samples_native_threads,
    /// The sampler thread's own CPU, recorded under `[pcct]`
    /// `[pcct-sampler]` at its drains (`threads=all`; it takes no signal):
    /// samples, and their CPU. Not signals: outside the outcomes above, and
    /// in the profile's totals beside `samples_recorded` and
    /// `cpu_ns_recorded`.
    sampler_samples,
    sampler_cpu_ns_recorded,
    /// Walked samples whose frames came from pcct's own HotSpot walker
    /// (the bottom of the stack, or the depth, reached).
    walks_vm,
    /// Walked samples whose frames came from AsyncGetCallTrace (pcct's
    /// walker stopped early, or is not available in this JVM).
    walks_agct,
    /// Samples where both walkers failed but pcct's read the top of the
    /// stack: recorded (and counted in `samples_recorded`) under a
    /// `[break_<reason>]` pseudo-frame in place of the missing callers.
    walks_partial,
    /// Samples of threads that run no Java code whose native frames were
    /// unwound (`threads=all`, `native=on`): recorded under their kind.
    walks_native,
    /// Native frames in recorded samples (`native=on`): below Java
    /// threads' last Java frames, and the stacks of threads that run no
    /// Java code.
    frames_native,
    /// Of `frames_native`, the kernel's (`kernel=on`).
    frames_kernel,
    /// Java frames in the samples pcct's walker walked, and of those, the
    /// ones taken unchanged from the thread's previous walk (Whaley's marked
    /// frames) instead of being decoded.
    frames_walked,
    frames_reused,
    /// Threads skipped at a tick because their CPU clock barely moved (cpu mode).
    samples_idle,
    /// Samples whose register checksum matched the previous one: the thread had not run.
    samples_filtered,
    /// Samples where AsyncGetCallTrace failed, recorded under a pseudo-frame
    /// (every failure, recorded or dropped, is counted by code in `agct_failures`).
    samples_failed,
    /// Checksum-filtered samples whose wall time was credited to the
    /// thread's previous context (wall mode; part of `samples_filtered`).
    samples_wall_credited,
    /// Threads not signalled because their previous sample was still being handled or drained.
    samples_busy,
    /// Requests withdrawn because the signal was never handled (also those
    /// still unanswered when sampling stopped).
    samples_lost,
    /// Samples of threads that ended (or were replaced by a new thread in
    /// their slot) between the signal and the drain.
    samples_retired,
    /// Cpu mode: samples whose signal reached the thread after it had
    /// waited off the CPU (its registers were where it was preempted): not
    /// recorded, their CPU time went to the thread's next sample.
    samples_deferred,
    /// Samples dropped because the tree's arena was full.
    samples_dropped_full,
    /// Stacks deeper than the configured depth (recorded under `[truncated]`).
    samples_truncated,
    /// Ticks whose drain was put off because the profile was locked by a reader.
    drains_deferred,
    /// CPU time recorded in samples, nanoseconds.
    cpu_ns_recorded,
    /// CPU time of threads between checksum-filtered samples, nanoseconds.
    cpu_ns_filtered,
    /// CPU time the sampled threads used while registered (from first sight
    /// to their end, or to the end of sampling), nanoseconds: what
    /// `cpu_ns_recorded + cpu_ns_filtered` should add up to. Threads still
    /// running are added when sampling stops.
    cpu_ns_observed,
    /// Threads registered so far (ThreadStart, the main thread at VMInit,
    /// threads found at attach), whether or not a tick ever saw them.
    threads_registered,
    /// Registered threads that ended (ThreadEnd, found gone, or their tid
    /// registered again); `threads_registered - threads_ended` are registered now.
    threads_ended,
    /// Threads no longer sampled because AsyncGetCallTrace never walked them (JVM service threads).
    threads_excluded,
    /// Threads that could not be registered (table full).
    threads_untracked,
    /// Methods whose names were read from the VM.
    methods_resolved,
    /// Method ids whose class was unloaded before they could be named.
    methods_unloaded,
    /// Method ids the VM could not name for another reason.
    methods_failed,
    /// Times the method table outgrew its limit and started over (with a purge).
    method_table_resets,
    /// Classes whose methods pcct had HotSpot give jmethodIDs (the sweep of
    /// loaded classes at start, then ClassPrepare; a class the sweep and the
    /// event both saw counts twice). HotSpot keeps a block of ids for each
    /// class loader among them until the JVM exits (README, "Memory").
    classes_given_method_ids,
    /// CompiledMethodLoad events received (with `compiled=on`, by default).
    methods_compiled,
    /// CompiledMethodUnload events received: code HotSpot freed.
    code_unloaded,
    /// Compiled code whose inline records entered the inline table (new
    /// code, or newer code of a method replacing older).
    inline_records_kept,
    /// Inline records of code the table had already (GenerateEvents
    /// repeats what events told) or older than the code it holds.
    inline_records_repeated,
    /// Inline records refused because the inline table was full (it then
    /// starts over, refilled by GenerateEvents).
    inline_records_refused,
    /// Inline records that could not be read (none sent, or a chain of
    /// scopes not rooted at the compiled method).
    inline_records_malformed,
    /// Compiled code whose nmethod (compile level, compile id, entry)
    /// could not be read when it was loaded: before the walker was ready,
    /// or on a VM it does not read (JDK 11); the JIT thread reads it again.
    code_facts_unread,
    /// Of those, code whose nmethod a later read found.
    code_facts_read_later,
    /// Classes retransformed on request (`POST /api/jit/recompile`) so
    /// that HotSpot compiles their code again.
    classes_retransformed,
    /// Classes a recompile request named that could not be retransformed
    /// (not loaded, or refused by the VM).
    retransform_failures,
    /// Sampled allocations recorded in the profile.
    allocations_recorded,
    /// Sampled allocations not recorded: the queue to the sampler was full,
    /// or the arena was.
    allocations_dropped,
    /// Sampled allocations the rate limit (`alloc_rate=`) left out at
    /// random; the kept ones weigh for them (`events::Throttle`).
    allocations_thinned,
    /// Event stacks (allocations, monitor waits) read by pcct's walker in
    /// the callback, from the thread's last Java frame.
    event_walks_vm,
    /// Event stacks read by JVMTI's GetStackTrace (pcct's walker was not
    /// ready, or stopped early).
    event_walks_jvmti,
    /// Frames of events walked by pcct's walker that the thread's previous
    /// event had too, at the bottom of the stack: the callback neither
    /// decoded nor sent them, and the sampler took their names and nodes
    /// from that event's (`event_stacks`).
    event_frames_shared,
    /// Event classes named from the callback thread's earlier names
    /// (`hotspot::classes`), without a JVMTI call.
    event_classes_reused,
    /// Bytes and objects the recorded allocations stand for (estimated,
    /// see `events::allocation_weight`).
    alloc_bytes_recorded,
    alloc_objects_recorded,
    /// Bytes and objects the dropped allocation samples stood for
    /// (estimated as the recorded ones are): what the profile's allocation
    /// totals miss. Drops come in bursts, when the thinning keeps samples
    /// of large weight, so they miss more than their share of the count.
    alloc_bytes_dropped,
    alloc_objects_dropped,
    /// Events dropped because the stack of their thread's previous event,
    /// which they share frames with, was not known (forgotten, or an event
    /// missing in between): the thread's next event comes whole. Counted
    /// among the dropped allocations and monitor waits too.
    events_unchained,
    /// Contended monitor enters recorded in the profile (each one waited).
    monitor_waits_recorded,
    /// Contended monitor enters not recorded: the queue or the arena was full.
    monitor_waits_dropped,
    /// Nanoseconds the recorded monitor enters waited.
    lock_wait_ns_recorded,
    /// Nanoseconds the sampler thread spent naming and recording events
    /// (part of its CPU, `sampler_cpu_ns`).
    event_record_ns,
    /// Parks the `Unsafe.park` hook checked for a lock blocker (with
    /// `locks=on`, every park with a blocker), and the nanoseconds that
    /// took on the parking threads (monotonic clock, as `callback_time`;
    /// a park that was a lock wait is recorded through the callbacks'
    /// path too, and timed there as well).
    parks_checked,
    park_check_ns,
}

impl Counters {
    pub fn count_agct_failure(&self, error: AgctError) {
        let index = AgctError::ALL.iter().position(|known| *known == error).unwrap_or(AgctError::ALL.len());
        self.agct_failures[index].fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_walker_broken(&self, reason: Broken) {
        if let Some(index) = Broken::ALL.iter().position(|known| *known == reason) {
            self.walker_broken[index].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts an event (an allocation sample, a monitor wait) recorded in
    /// the profile or dropped (the queue or the arena was full, or its
    /// stack could not be read), with what it stands for: the one place
    /// the callbacks and the sampler count events, so a drop's weight is
    /// never counted without the drop.
    pub fn count_event(&self, kind: EventKind, weight: &Weight, recorded: bool) {
        match (kind, recorded) {
            (EventKind::Allocation, true) => {
                Counters::add(&self.allocations_recorded, 1);
                Counters::add(&self.alloc_bytes_recorded, weight.alloc_bytes);
                Counters::add(&self.alloc_objects_recorded, weight.alloc_objects);
            }
            (EventKind::Monitor, true) => {
                Counters::add(&self.monitor_waits_recorded, 1);
                Counters::add(&self.lock_wait_ns_recorded, weight.lock_wait_ns);
            }
            (EventKind::Allocation, false) => {
                Counters::add(&self.allocations_dropped, 1);
                Counters::add(&self.alloc_bytes_dropped, weight.alloc_bytes);
                Counters::add(&self.alloc_objects_dropped, weight.alloc_objects);
            }
            (EventKind::Monitor, false) => Counters::add(&self.monitor_waits_dropped, 1),
        }
    }

    pub fn add(counter: &AtomicU64, value: u64) {
        counter.fetch_add(value, Ordering::Relaxed);
    }
}
