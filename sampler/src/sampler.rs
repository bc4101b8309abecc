//! The sampler thread's loop: wait for the tick, drain what the handlers
//! wrote, update the PCCT, choose the threads that ran and signal them.
//!
//! One tick, in order:
//! 1. [`BusyWaitTimer::wait`] for the deadline.
//! 2. Collect: copy every READY slot's result out (READY -> DRAINING ->
//!    IDLE), free the slots of threads that ended, withdraw requests that
//!    were never answered.
//! 3. Name new method ids through the agent's resolver (no lock held).
//! 4. Apply: under the profile lock, turn each result into a stack of
//!    interned methods (or a pseudo-frame) and record it through the
//!    thread's marks, weighted by the CPU time since its previous sample.
//! 5. Signal: for each idle slot, read the thread's CPU clock; in cpu mode
//!    skip it if it used less than `idle_share` of an interval since its
//!    last sample (its CPU time carries over), else mark the slot REQUESTED
//!    and send the signal. Its handler runs on the thread (see `handler`);
//!    the result is collected at the next tick, its CPU weight up to the
//!    handler's reading of the thread's CPU clock.
//!
//! With threads' own CPU timers (`timer=thread`, cpu mode; `cpu_timer`),
//! step 5 opens a timer for each new thread, and that timer asks for the
//! thread's samples: it signals the thread after every interval of its CPU,
//! and the handler takes the slot if it is idle (`Slot::claim`). The sample
//! weighs the intervals the timer signalled since the previous sample
//! (taken or refused; `Slot::timer_signals`), or, where the handler read
//! the thread's CPU clock (every 16th signal, and after a gap over one and
//! a half intervals: signals lost, or a wait for a CPU; see `handler`), the
//! CPU since the previous sample. The sampler then ticks strictly periodically without spinning,
//! reads a timed thread's CPU clock only every [`TIMED_READ_EVERY_TICKS`]
//! ticks, and signals only the threads the kernel refused a timer.
//!
//! # Batches
//!
//! With every thread's own timer taking its samples, nothing needs the
//! sampler at each interval: it drains in batches (`batch=`, default 20 ms,
//! when longer than the interval). Between two drains it sleeps on its
//! [`crate::doorbell`], and wakes at the batch's end or when the bell rings:
//! a handler whose slot holds [`slots::RING_AT_WAITING`] samples (half its
//! places), or that borrowed a region of a pool half borrowed, or whose
//! signal found no place; a thread's registration (its timer opens at the
//! drain); an event queue half full; a control change; an answer that wants
//! the newest samples (the server's `fresh`, which waits for that drain, at
//! most one batch). Such a drain also waits, at most half a batch, for a
//! thread found inside its handler: the samples queued in its slot before
//! the one it writes are drained when it is done (a thread switched out
//! in its handler on a loaded machine would hold them to the next batch,
//! [`Sampler::collect_after_handlers`]). A rung bell wakes it at most once
//! per interval. The pool is made when the first timer opens, since a batch queues samples
//! behind each slot's two regions; a walk into a pool region reuses the
//! thread's previous walk (`handler::capture`). The samples of a batch
//! are drained in order, thread by thread, and weighed as any queued
//! samples are, so marks and weights are those of per-interval drains.
//! Where the sampler signals a thread itself (a timer refused), with
//! `timer=sampler`, in wall mode and with `batch=off`, it ticks every
//! interval as above. (`BENCHMARKS.md`, "The sampler thread in batches",
//! measures what a batch saves.)
//!
//! Steps 2-4 also take the events (sampled allocations, monitor waits) the
//! agent's callbacks queued since the previous tick (see `events`): their
//! frames are named with the samples', and each is recorded with its whole
//! stack under its class, without marks.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pcct::{Builtin, Frame, Marks, MethodId, MethodTable, Weight, NO_BCI};
use rustc_hash::FxHashMap;

use crate::agct::AgctError;
use crate::config::{Mode, TimerSource};
use crate::counters::Counters;
use crate::cpu_timer::ThreadTimer;
use crate::doorbell::DOORBELL;
use crate::event_stacks::EventStacks;
use crate::events::Event;
use crate::handler::{self, Walker};
use crate::hotspot::walker::Broken;
use crate::kernel_frames::KERNEL_START;
use crate::live_heap::LiveObject;
use crate::named_stack::{NamedStack, ResolvedStack};
use crate::native_frames::{NativeFrames, NATIVE_BCI};
use crate::recent::{Outcome, SampleRecord, TOP_FRAMES};
use crate::resolve::{MethodCache, MethodResolver};
use crate::shared::Shared;
use crate::signal::{self, SendError};
use crate::slots::{
    self, Drained, HandlerResult, Registry, Slot, SlotState, ThreadOrigin, HANDLER_UNMEASURED, HIGH_WATER, OWN_REGIONS,
    RESULT_DEFERRED, RESULT_FILTERED, RESULT_NATIVE_THREAD, RESULT_NO_AGCT, SLOTS,
};
use crate::timer::{now_ns, BusyWaitTimer};

/// Ticks a request may stay unanswered before it is withdrawn.
const LOST_AFTER_TICKS: u64 = 50;
/// With threads' own CPU timers, the sampler reads the CPU clock of a thread
/// that has one only every this many ticks (to find discovered threads that
/// ended, and for `cpu_ns_observed`): the timer, not the clock, decides
/// when it is sampled, and its handler reads the clock for the weight.
const TIMED_READ_EVERY_TICKS: u64 = 16;
/// Samples kept across ticks while the profile lock is busy.
const MAX_PENDING: usize = 65_536;

/// What the sampler keeps about one registered thread.
struct ThreadState {
    generation: u32,
    tid: i32,
    marks: Marks,
    /// CPU and wall clocks at the thread's previous sample (the weight baseline).
    cpu_at_sample: u64,
    wall_at_sample: u64,
    /// CPU clock when the thread was first seen, and at the latest reading.
    cpu_first_seen: u64,
    cpu_last_read: u64,
    /// Clocks read when the pending request was made.
    cpu_at_request: u64,
    wall_at_request: u64,
    requested_tick: u64,
    /// A signal was sent and its sample not yet collected (or withdrawn).
    outstanding: bool,
    /// Sampling was paused since this thread's last sample: at its next idle
    /// moment its baselines move to "now", so the CPU and wall time it used
    /// while nobody sampled are not credited to its next sample.
    rebase: bool,
    consecutive_failures: u32,
    ever_walked: bool,
    excluded: bool,
    /// Its own CPU timer (`cpu_timer`), while the sampler uses one for it.
    timer: Option<ThreadTimer>,
    /// The kernel refused it a timer: the sampler signals it.
    timer_refused: bool,
    /// Its samples deferred in a row, up to the last one drained.
    deferred_in_row: u32,
    /// Its timers' signals ([`Slot::timer_signals`]) accounted for so far,
    /// and the period of its latest timer: a timed sample whose handler
    /// did not read the CPU clock weighs the intervals signalled since.
    timer_signals_seen: u64,
    timer_period_ns: u64,
    /// Its previous whole stack, named (recording), and its previous
    /// stack's frames asked to be named (naming): `named_stack`.
    named: NamedStack,
    resolved: ResolvedStack,
    /// A thread that runs no Java code: its samples' pseudo-frames (kind,
    /// family).
    native_stack: PseudoStack,
}

/// A fixed stack of pseudo-frames, interned in one method table (its
/// epoch) and named again in a new one.
#[derive(Debug, Default)]
struct PseudoStack {
    named_in: Option<u64>,
    frames: Vec<Frame>,
}

impl PseudoStack {
    /// The frames, root first, interned in `methods` (method table
    /// `epoch`) from `names` unless they were in this table already.
    fn frames(&mut self, methods: &mut Arc<MethodTable>, epoch: u64, names: impl FnOnce() -> Vec<String>) -> &[Frame] {
        if self.named_in != Some(epoch) {
            let methods = Arc::make_mut(methods);
            self.frames = names().iter().map(|name| Frame::new(methods.intern_pseudo(name), NO_BCI)).collect();
            self.named_in = Some(epoch);
        }
        &self.frames
    }
}

/// A result copied out of a slot.
struct Collected {
    slot: usize,
    generation: u32,
    tid: i32,
    result: i32,
    checksum: u64,
    cpu_delta: u64,
    wall_delta: u64,
    /// Which walker wrote the frames, and why pcct's stopped early (0: it did not).
    walker: Walker,
    broken: u8,
    /// (jmethodID, bci), leaf first.
    frames: Vec<(usize, i32)>,
}

/// What a collected sample is, decided before anything is recorded
/// ([`classify`]); [`Sampler::apply`] records each kind its own way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Classification {
    /// The register checksum matched: the thread had not run (no walk).
    Filtered,
    /// Filtered in wall mode: the thread's wall time is credited to its
    /// previous leaf.
    Credited,
    /// The walk failed with this code (recorded under its pseudo-frame).
    Failed(AgctError),
    /// Walked, but the CPU clock says the thread had not run since it was
    /// first seen (cpu mode; its first signal has no checksum to compare):
    /// filtered like a matching checksum.
    ZeroCpu,
    /// Walked: recorded, under `[truncated]` when deeper than `depth`.
    Recorded { truncated: bool },
    /// A thread that runs no Java code (`threads=all`): recorded under
    /// its kind and family (`thread_kinds`).
    Native,
    /// Only the top of the stack could be walked (pcct's walker stopped
    /// for this reason and AsyncGetCallTrace failed): recorded under a
    /// `[break_<reason>]` pseudo-frame in place of the callers.
    Partial(Broken),
    /// Cpu mode: the signal reached the thread after it had been off the
    /// CPU for over [`handler::OFF_CPU_DEFER_NS`]: its registers were where
    /// it stopped running, not where it ran (not walked). Not recorded: its
    /// CPU time goes to the thread's next sample.
    Deferred,
}

/// Deferred samples in a row after which a thread's next sample is
/// recorded whatever its wait.
pub const MAX_DEFERRED_IN_ROW: u32 = 4;

/// Classifies a sample from the handler's `result` (frames written or a
/// failure code), the CPU time since the thread's previous sample, the
/// number of frames copied, the mode and the depth limit. Pure.
fn classify(sample: &Collected, mode: Mode, depth: usize) -> Classification {
    match sample.result {
        RESULT_FILTERED if mode == Mode::Wall => Classification::Credited,
        RESULT_FILTERED => Classification::Filtered,
        RESULT_DEFERRED => Classification::Deferred,
        RESULT_NATIVE_THREAD => Classification::Native,
        RESULT_NO_AGCT => Classification::Failed(AgctError::Other(sample.result)),
        code if code <= 0 => Classification::Failed(AgctError::from_code(code)),
        _ if mode == Mode::Cpu && sample.cpu_delta == 0 => Classification::ZeroCpu,
        _ => match (sample.walker, Broken::from_u8(sample.broken)) {
            (Walker::Native, _) => Classification::Native,
            (Walker::VmPartial, Some(reason)) => Classification::Partial(reason),
            _ => Classification::Recorded { truncated: sample.frames.len() > depth },
        },
    }
}

pub struct Sampler<'r> {
    shared: Arc<Shared>,
    /// The process's modules and native names (`native=on`).
    native: Option<NativeFrames>,
    registry: Arc<Registry>,
    resolver: &'r mut dyn MethodResolver,
    threads: Vec<Option<ThreadState>>,
    cache: MethodCache,
    pending: Vec<Collected>,
    /// Events taken from the queue, waiting to be recorded.
    events: Vec<Event>,
    /// Event classes interned in the profile's method table, by name.
    classes: FxHashMap<Arc<str>, MethodId>,
    /// Each thread's previous event stack (chained events carry the rest).
    event_stacks: EventStacks,
    /// Recorded allocations with weak references to their objects, and
    /// the references of those not recorded, for the live heap (handed
    /// over when its lock is free).
    live_batch: Vec<LiveObject>,
    live_release: Vec<u64>,
    /// How many times the method table started over (names of an older
    /// table are not used).
    methods_epoch: u64,
    /// (tid, slot) of the threads known at this tick's events, by tid: an
    /// event is recorded near its thread's marks.
    event_threads: Vec<(i32, usize)>,
    scratch_stack: Vec<Frame>,
    scratch_marks: Marks,
    pseudo: Vec<MethodId>,
    /// `[break_<reason>]` pseudo-frames, indexed like [`Broken::ALL`].
    break_pseudo: Vec<MethodId>,
    tick: u64,
    mode: Mode,
    /// Sampling was paused (`/api/sampling`) at the previous tick.
    paused: bool,
    /// `threads=all`: the sampler thread's CPU and wall clocks when it last
    /// recorded its own CPU, and its pseudo-frames (method table `.0`).
    own_clocks: Option<(u64, u64)>,
    own_stack: PseudoStack,
    /// Slots a handler was writing when the drain asked for by an answer
    /// looked (reused each tick).
    in_handler: Vec<usize>,
    /// At the previous tick the sampler signalled a thread itself (its
    /// timer refused): it then ticks every interval, not in batches.
    signals_threads: bool,
    started_ns: u64,
    /// The processor counter's rate, measured over the first ticks (`tsc`).
    calibration: crate::tsc::Calibration,
}

fn counters_add(counter: &std::sync::atomic::AtomicU64, value: u64) {
    Counters::add(counter, value);
}

/// How often a drain asked for by an answer looks again at a slot whose
/// handler was in progress ([`Sampler::collect_after_handlers`]).
const HANDLER_POLL: Duration = Duration::from_micros(100);

/// Ticks between two looks for the event streams of ended threads.
const FORGET_STREAMS_EVERY: u64 = 64;

/// An event's stack as the tree records it: `named` (root first; its leaf-
/// most `depth` frames, under `[truncated]` when it was deeper), then its
/// `class`.
fn fill_event_stack(stack: &mut Vec<Frame>, named: &[Frame], truncated: bool, depth: usize, class: MethodId) {
    stack.clear();
    if truncated || named.len() > depth {
        stack.push(Frame::new(Builtin::Truncated.id(), NO_BCI));
    }
    stack.extend_from_slice(&named[named.len().saturating_sub(depth)..]);
    stack.push(Frame::new(class, NO_BCI));
}

/// A raw frame (id, bci) as the tree records it: its method as the cache
/// named it (`[unknown_method]` if it did not), its kind if the bci
/// carries one ([`crate::agct::pack_kind`]), a native frame without a
/// call site.
fn named_frame(cache: &MethodCache, (id, raw): (usize, i32)) -> Frame {
    let method = cache.get(id).unwrap_or(Builtin::UnknownMethod.id());
    let (bci, kind) = crate::agct::unpack_kind(raw);
    Frame::with_kind(method, if bci == NATIVE_BCI { NO_BCI } else { bci }, kind)
}

/// How many of `frames` (leaf first) are the kernel's and native frames
/// before the Java ones.
fn native_prefix(frames: &[(usize, i32)]) -> usize {
    frames.iter().take_while(|&&(_, bci)| bci == NATIVE_BCI).count()
}

/// Counts the native frames `native` of a recorded sample, and the
/// kernel's among them.
fn count_native_frames(counters: &Counters, native: &[(usize, i32)]) {
    counters_add(&counters.frames_native, native.len() as u64);
    counters_add(
        &counters.frames_kernel,
        native.iter().filter(|&&(address, _)| address >= KERNEL_START).count() as u64,
    );
}

/// Starts native frames if `native=on` (their names only, for kernel
/// frames, with `kernel=on` alone), and says how in the VM's status.
fn start_native_frames(shared: &Shared) -> Option<NativeFrames> {
    if !shared.config.native && !shared.config.kernel {
        return None;
    }
    // Their reads are fault-safe reads, whichever stack walker walks
    // (`walker=agct` installs no fault handler of its own).
    if let Err(error) = crate::hotspot::safe_read::install() {
        shared.vm.lock().native = format!("off: {error}");
        return None;
    }
    let (native, status) = match NativeFrames::start(shared.config.native, shared.config.kernel) {
        Ok((native, status)) => (Some(native), status),
        Err(reason) => (None, format!("off: {reason}")),
    };
    shared.vm.lock().native = status;
    native
}

impl<'r> Sampler<'r> {
    pub fn new(shared: Arc<Shared>, registry: Arc<Registry>, resolver: &'r mut dyn MethodResolver) -> Sampler<'r> {
        let depth = shared.config.depth;
        let mode = shared.control.mode();
        let native = start_native_frames(&shared);
        Sampler {
            shared,
            native,
            registry,
            resolver,
            threads: (0..slots::MAX_THREADS).map(|_| None).collect(),
            cache: MethodCache::default(),
            pending: Vec::new(),
            events: Vec::new(),
            classes: FxHashMap::default(),
            event_stacks: EventStacks::default(),
            live_batch: Vec::new(),
            live_release: Vec::new(),
            methods_epoch: 0,
            event_threads: Vec::new(),
            scratch_stack: Vec::with_capacity(depth + 1),
            scratch_marks: Marks::new(),
            pseudo: Vec::new(),
            break_pseudo: Vec::new(),
            tick: 0,
            mode,
            paused: false,
            own_clocks: None,
            own_stack: PseudoStack::default(),
            in_handler: Vec::new(),
            signals_threads: false,
            started_ns: now_ns(),
            calibration: crate::tsc::Calibration::begin(),
        }
    }

    /// Runs until [`crate::shared::Control::request_stop`], then drains once
    /// more so that every sample taken is in the profile.
    pub fn run(&mut self) {
        signal::block_in_current_thread(self.shared.config.signal);
        let mut waiting = None;
        let mut timer = BusyWaitTimer::new(self.shared.control.interval(), Duration::ZERO, 0.0);
        // Rings after this reading wake the next batch's wait: read before
        // each drain, so a sample published during one is drained soon.
        let mut bell = DOORBELL.seen();
        let mut woke_at = now_ns();
        while !self.shared.control.stop_requested() {
            let interval = self.shared.control.interval();
            let tick = match self.batch(interval) {
                Some(batch) => {
                    waiting = None;
                    self.shared.batch_ns.store(batch.as_nanos() as u64, Ordering::Release);
                    self.wait_for_batch(bell, woke_at, batch, interval)
                }
                None => {
                    self.shared.batch_ns.store(0, Ordering::Release);
                    let now_waiting = self.waiting();
                    if waiting != Some(now_waiting) {
                        waiting = Some(now_waiting);
                        timer = BusyWaitTimer::new(interval, now_waiting.0, now_waiting.1);
                    }
                    timer.set_interval(interval);
                    timer.wait()
                }
            };
            bell = DOORBELL.seen();
            woke_at = now_ns();
            let tick_start = woke_at;
            let counters = &self.shared.counters;
            counters_add(&counters.ticks, 1);
            counters_add(&counters.ticks_missed, tick.missed);
            counters_add(&counters.spin_ns, tick.spun_ns);
            if tick.is_late(interval) {
                counters_add(&counters.ticks_late, 1);
            }
            self.tick += 1;
            self.calibration.tick();
            crate::tsc::set_gap(interval);
            self.follow_mode();
            let handler_wait = match self.shared.drain_asked.swap(false, Ordering::AcqRel) {
                true => self.shared.batching().map_or(Duration::ZERO, |batch| batch / 2),
                false => Duration::ZERO,
            };
            self.drain(interval / 2, handler_wait);
            if let Some(native) = self.native.as_mut() {
                native.refresh_if_due(Instant::now());
            }
            if self.shared.control.is_running() && self.handler_installed() {
                if std::mem::take(&mut self.paused) {
                    self.threads.iter_mut().flatten().for_each(|thread| thread.rebase = true);
                }
                self.signal_threads(interval);
            } else {
                if !self.paused {
                    self.close_timers();
                }
                self.paused = true;
            }
            self.shared.counters.tick_time.observe(now_ns() - tick_start);
            self.shared.counters.sampler_cpu_ns.store(slots::current_thread_cpu_ns(), Ordering::Relaxed);
        }
        // Final drain: no more timer signals; give outstanding handlers a
        // moment, then apply everything.
        self.shared.batch_ns.store(0, Ordering::Release);
        self.close_timers();
        let deadline = Instant::now() + Duration::from_millis(50);
        while Instant::now() < deadline && self.any_pending() {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.drain(Duration::from_secs(2), Duration::ZERO);
        // Requests no handler answered: withdrawn, so a signal still on its
        // way finds nothing to answer once the sampler is gone.
        let high = HIGH_WATER.load(Ordering::Acquire);
        SLOTS[..high].iter().filter(|slot| slot.state() == SlotState::Requested).for_each(|slot| {
            slot.withdraw();
        });
        // Account the CPU the live threads used while observed, and the
        // requests no handler answered in time.
        for thread in self.threads.iter().flatten() {
            if thread.outstanding {
                counters_add(&self.shared.counters.samples_lost, 1);
            }
            let now = slots::thread_cpu_ns(thread.tid).unwrap_or(thread.cpu_last_read);
            counters_add(&self.shared.counters.cpu_ns_observed, now.saturating_sub(thread.cpu_first_seen));
        }
        self.shared.finished.store(true, Ordering::Release);
    }

    fn follow_mode(&mut self) {
        let mode = self.shared.control.mode();
        if mode != self.mode {
            self.mode = mode;
            let mut profile = self.shared.profile.lock();
            let mut config = profile.tree.config().clone();
            config.metric = mode.metric();
            if let Ok(tree) = pcct::Pcct::new(config) {
                profile.tree = tree;
            }
        }
    }

    /// Whether a sample is still on its way: a signal the sampler sent
    /// unanswered, or a handler writing one (behind a waiting sample too,
    /// which the last drain would otherwise leave).
    fn any_pending(&self) -> bool {
        let high = HIGH_WATER.load(Ordering::Acquire).min(self.threads.len());
        self.threads[..high].iter().enumerate().any(|(index, thread)| match SLOTS[index].state() {
            SlotState::Requested => thread.as_ref().is_some_and(|t| t.outstanding),
            SlotState::InHandler => true,
            _ => false,
        })
    }

    /// Whether threads are interrupted by their own CPU timers now (cpu
    /// mode with `timer=thread`, and a sampling signal below SIGRTMIN:
    /// `cpu_timer::TimerError::QueuedSignal`).
    fn thread_timers(&self) -> bool {
        self.mode == Mode::Cpu
            && self.shared.config.timer == TimerSource::Thread
            && crate::cpu_timer::signal_allowed(self.shared.config.signal)
    }

    /// How the sampler waits for its ticks: its spin cap and jitter. With
    /// threads' own timers the sampler only drains: it never spins (when it
    /// wakes does not matter) and ticks strictly periodically, so that
    /// between two timer signals of a thread (at least an interval apart)
    /// there is a drain unless the sampler thread is late.
    fn waiting(&self) -> (Duration, f64) {
        if self.thread_timers() {
            (Duration::ZERO, 0.0)
        } else {
            (self.shared.config.max_spin, self.shared.config.jitter)
        }
    }

    /// The batch interval when the sampler drains in batches now
    /// ("Batches" in the module doc): threads' own timers take every
    /// sample (none of the threads is signalled by the sampler), and the
    /// batch is longer than the interval.
    fn batch(&self, interval: Duration) -> Option<Duration> {
        let batch = self.shared.config.batch;
        (self.thread_timers() && batch > interval && !self.signals_threads).then_some(batch)
    }

    /// Sleeps until `batch` after the previous wake (`woke_at`), or until
    /// the doorbell rings after the reading `bell`; but a rung bell wakes
    /// the sampler at most once per `interval`, however often it rings.
    fn wait_for_batch(&self, bell: u32, woke_at: u64, batch: Duration, interval: Duration) -> crate::timer::Tick {
        let batch_end = woke_at + batch.as_nanos() as u64;
        if DOORBELL.wait_until(bell, batch_end) {
            counters_add(&self.shared.counters.wakes_rung, 1);
            crate::timer::sleep_until(woke_at + interval.as_nanos() as u64);
        }
        crate::timer::Tick::default()
    }

    /// Closes every thread's timer (pause, stop).
    fn close_timers(&mut self) {
        self.threads.iter_mut().flatten().for_each(|thread| thread.timer = None);
    }

    /// Steps 2-4 of a tick; `handler_wait`: how long step 2 waits for
    /// handlers in progress ([`Sampler::collect_after_handlers`]).
    pub(crate) fn drain(&mut self, lock_wait: Duration, handler_wait: Duration) {
        let start = now_ns();
        self.collect(handler_wait);
        self.record_pending(lock_wait, start);
    }

    /// Steps 3-4: names the collected samples' methods and records them
    /// (or keeps them for the next tick when the profile lock stays busy).
    fn record_pending(&mut self, lock_wait: Duration, start: u64) {
        self.take_events();
        self.resolve_new_methods();
        let shared = Arc::clone(&self.shared);
        if self.pending.is_empty() && self.events.is_empty() {
            if let Some(mut profile) = shared.profile.try_lock() {
                profile.tree.purge_if_due(Instant::now());
            }
            shared.drained_at_ns.store(now_ns(), Ordering::Release);
            shared.drained_tick.store(self.tick, Ordering::Release);
            return;
        }
        let Some(mut profile) = shared.profile.try_lock_for(lock_wait) else {
            counters_add(&shared.counters.drains_deferred, 1);
            if self.pending.len() > MAX_PENDING {
                let excess = self.pending.len() - MAX_PENDING;
                self.pending.drain(..excess);
                counters_add(&shared.counters.samples_lost, excess as u64);
            }
            return;
        };
        let profile = &mut *profile;
        self.bound_method_table(profile);
        if self.cache.has_pending() {
            let (resolved, unloaded, failed) = self.cache.intern_pending(Arc::make_mut(&mut profile.methods));
            counters_add(&shared.counters.methods_resolved, resolved);
            counters_add(&shared.counters.methods_unloaded, unloaded);
            counters_add(&shared.counters.methods_failed, failed);
        }
        if self.pseudo.is_empty() {
            let names = AgctError::ALL.iter().chain(std::iter::once(&AgctError::Other(0)));
            let methods = Arc::make_mut(&mut profile.methods);
            self.pseudo = names.map(|error| methods.intern_pseudo(error.pseudo_frame())).collect();
            self.break_pseudo = Broken::ALL
                .iter()
                .map(|reason| methods.intern_pseudo(&format!("[break_{}]", reason.label())))
                .collect();
        }
        let mut recent = shared.recent.lock();
        let pending = std::mem::take(&mut self.pending);
        for sample in &pending {
            let record = self.apply(profile, sample);
            recent.push(record);
        }
        drop(recent);
        self.pending = pending;
        self.pending.clear();
        self.record_events(profile);
        if self.shared.config.all_threads && self.shared.control.is_running() {
            self.record_own_cpu(profile);
        } else {
            // Paused: the time until it resumes is nobody's.
            self.own_clocks = None;
        }
        profile.tree.purge_if_due(Instant::now());
        shared.drained_at_ns.store(now_ns(), Ordering::Release);
        shared.drained_tick.store(self.tick, Ordering::Release);
        shared.counters.drain_time.observe(now_ns() - start);
    }

    /// Keeps the method table within `methods_limit` bytes: past it, the
    /// tree is purged (it is the only user of the old ids), the table and the
    /// id cache start over, and the recent samples (whose frames are ids of
    /// the old table) are forgotten. Ids named in this tick are named again.
    fn bound_method_table(&mut self, profile: &mut crate::shared::Profile) {
        if profile.methods.approx_bytes() <= self.shared.config.methods_limit {
            return;
        }
        if profile.tree.node_count() > 1 {
            profile.tree.purge();
        }
        profile.methods = Arc::new(pcct::MethodTable::new());
        self.pseudo.clear();
        self.classes.clear();
        self.cache.clear();
        self.methods_epoch += 1;
        self.shared.recent.lock().clear();
        counters_add(&self.shared.counters.method_table_resets, 1);
        self.resolve_new_methods();
        // Chained events take their shared frames' names from the
        // previous event's stack: those are named again too.
        for &(method_id, _) in self.event_stacks.raw_frames() {
            self.cache.resolve_if_new(method_id, self.resolver);
        }
    }

    /// Names the method ids of the waiting samples' and events' frames
    /// that the cache does not know (no lock held).
    fn resolve_new_methods(&mut self) {
        for sample in &self.pending {
            // Frames its thread's previous stack shares from the root were
            // asked for then (`named_stack`).
            let frames = match self.threads[sample.slot].as_mut().filter(|s| s.generation == sample.generation) {
                Some(state) => state.resolved.new_frames(&sample.frames, self.methods_epoch),
                None => &sample.frames[..],
            };
            for &(method_id, bci) in frames {
                // A native frame's id is a code address: never a jmethodID
                // for the VM (which would dereference it). Without names
                // for native code it stays `[unknown_method]`.
                match (bci == NATIVE_BCI, self.native.as_mut()) {
                    (true, Some(native)) => self.cache.name_native_if_new(method_id, native),
                    (true, None) => false,
                    (false, _) => self.cache.resolve_if_new(method_id, self.resolver),
                };
            }
        }
        let started = crate::slots::current_thread_cpu_ns();
        for event in &self.events {
            for &(method_id, _) in &event.frames {
                self.cache.resolve_if_new(method_id, self.resolver);
            }
        }
        if !self.events.is_empty() {
            counters_add(&self.shared.counters.event_record_ns, crate::slots::current_thread_cpu_ns() - started);
        }
    }

    /// Takes the events the callbacks queued since the previous tick (the
    /// callbacks count those a full queue dropped). At most a queue's worth
    /// waits here (for a profile lock readers hold): the rest stays in the
    /// queue, which then drops new events, so the memory of events is at
    /// most two queues' worth.
    fn take_events(&mut self) {
        let Some(queue) = self.shared.events.as_ref() else { return };
        for _ in self.events.len()..queue.capacity() {
            match queue.pop() {
                Some(event) => self.events.push(event),
                None => break,
            }
        }
    }

    /// Records every waiting event (under the profile lock): its stack,
    /// named, root first (under `[truncated]` when it was deeper than
    /// `depth`), its class on top, recorded whole, near the marks of its
    /// thread's last sample (which stay as they are).
    fn record_events(&mut self, profile: &mut crate::shared::Profile) {
        let started = crate::slots::current_thread_cpu_ns();
        let events = std::mem::take(&mut self.events);
        let depth = self.shared.config.depth;
        if !events.is_empty() {
            self.event_threads.clear();
            // Only the slots ever used: the table has room for MAX_THREADS
            // (1.4 MB), and reading it all at every tick with an event cost
            // the sampler 0.1-0.3 ms (perf on javac with allocation sampling).
            let high = HIGH_WATER.load(Ordering::Acquire).min(self.threads.len());
            let known = self.threads[..high].iter().enumerate();
            self.event_threads.extend(known.filter_map(|(slot, thread)| Some((thread.as_ref()?.tid, slot))));
            self.event_threads.sort_unstable();
        }
        for event in &events {
            let class = self.class_of(profile, &event.class);
            let slot = self.event_threads.binary_search_by_key(&event.tid, |&(tid, _)| tid).ok();
            let near = slot.and_then(|index| self.threads[self.event_threads[index].1].as_ref()).map(|t| &t.marks);
            let recorded = match self.event_stacks.apply(
                &event.chain,
                &event.frames,
                event.truncated,
                self.methods_epoch,
                self.tick,
            ) {
                // Chained to its thread's previous event: only the new
                // frames are named, and found from that event's marks.
                Some(Ok(applied)) => {
                    let start = applied.named.len();
                    let names = applied.raw[start..].iter().map(|&frame| named_frame(&self.cache, frame));
                    applied.named.extend(names);
                    fill_event_stack(&mut self.scratch_stack, applied.named, event.truncated, depth, class);
                    profile.tree.record_event_marked(applied.marks, near, &self.scratch_stack, event.weight).ok()
                }
                Some(Err(_)) => {
                    counters_add(&self.shared.counters.events_unchained, 1);
                    None
                }
                None => {
                    self.scratch_stack.clear();
                    let names = event.frames.iter().rev().map(|&frame| named_frame(&self.cache, frame));
                    self.scratch_stack.extend(names);
                    let named = std::mem::take(&mut self.scratch_stack);
                    fill_event_stack(&mut self.scratch_stack, &named, event.truncated, depth, class);
                    let recorded = match near {
                        Some(near) => profile.tree.record_event_near(near, &self.scratch_stack, event.weight),
                        None => profile.tree.record_event(&self.scratch_stack, event.weight),
                    };
                    recorded.ok()
                }
            };
            self.shared.counters.count_event(event.kind, &event.weight, recorded.is_some());
            if event.object != 0 {
                match recorded {
                    Some(recorded) => self.live_batch.push(LiveObject {
                        epoch: profile.tree.epoch(),
                        node: recorded.leaf,
                        bytes: event.weight.alloc_bytes,
                        objects: event.weight.alloc_objects,
                        handle: event.object,
                    }),
                    None => self.live_release.push(event.object),
                }
            }
        }
        self.shared.live.offer(&mut self.live_batch, &mut self.live_release);
        if self.tick.is_multiple_of(FORGET_STREAMS_EVERY) {
            self.event_stacks.forget_ended(self.tick);
        }
        self.events = events;
        self.events.clear();
        counters_add(&self.shared.counters.event_record_ns, crate::slots::current_thread_cpu_ns() - started);
    }

    /// The interned method of an event's class (a method of kind `type`).
    fn class_of(&mut self, profile: &mut crate::shared::Profile, name: &Arc<str>) -> MethodId {
        if let Some(&class) = self.classes.get(name) {
            return class;
        }
        let class = Arc::make_mut(&mut profile.methods).intern_type(name);
        self.classes.insert(Arc::clone(name), class);
        class
    }

    /// Step 2: copy READY results, free retired slots, withdraw lost requests.
    fn collect(&mut self, handler_wait: Duration) {
        let high = HIGH_WATER.load(Ordering::Acquire);
        for (index, slot) in SLOTS[..high].iter().enumerate() {
            match slot.state() {
                SlotState::Ready => self.collect_ready(index, slot),
                SlotState::InHandler if !handler_wait.is_zero() => self.in_handler.push(index),
                SlotState::Retired => {
                    if let Some(old) = self.threads[index].take() {
                        self.forget(old);
                    }
                    if let Some(timed) = self.registry.release(index) {
                        // Its timer's samples that waited when the thread
                        // ended: taken, never drained.
                        let counters = &self.shared.counters;
                        for counter in [&counters.signals_sent, &counters.timer_samples, &counters.samples_retired] {
                            counters_add(counter, timed as u64);
                        }
                    }
                }
                SlotState::Requested => {
                    // A request whose signal was sent (outstanding) and not
                    // answered in LOST_AFTER_TICKS is lost (a signal that
                    // could not be sent was withdrawn at once).
                    let lost = self.threads[index].as_ref().is_some_and(|state| {
                        state.outstanding && self.tick.saturating_sub(state.requested_tick) > LOST_AFTER_TICKS
                    });
                    if lost && slot.withdraw() {
                        counters_add(&self.shared.counters.samples_lost, 1);
                        if let Some(state) = self.threads[index].as_mut() {
                            state.outstanding = false;
                        }
                    }
                }
                _ => {}
            }
        }
        self.collect_after_handlers(handler_wait);
        // Registrations are counted by the registry: most short-lived
        // threads start and end between two ticks, unseen here.
        let counters = &self.shared.counters;
        counters.threads_registered.store(self.registry.registered_total(), Ordering::Relaxed);
        counters.threads_ended.store(self.registry.ended_total(), Ordering::Relaxed);
        let stray = handler::STRAY_SIGNALS.swap(0, Ordering::Relaxed);
        let stale = handler::STALE_SIGNALS.swap(0, Ordering::Relaxed);
        let busy = handler::BUSY_TIMER_SIGNALS.swap(0, Ordering::Relaxed);
        counters_add(&self.shared.counters.timer_signals_busy, busy);
        counters_add(&self.shared.counters.signals_stray, stray);
        counters_add(&self.shared.counters.signals_stale, stale);
    }

    /// Takes the samples of the slots whose thread was in its handler when
    /// `collect` looked, once the handler is done: at most `wait` (0
    /// unless an answer asked for this drain). The samples a slot queued
    /// before the one its handler writes are drained only with it, so a
    /// thread switched out inside its handler (microseconds of work, but
    /// milliseconds off the CPU on a loaded machine) would otherwise keep
    /// them out of the answer until the next batch. The sampler sleeps
    /// meanwhile; it holds no lock.
    fn collect_after_handlers(&mut self, wait: Duration) {
        let mut in_handler = std::mem::take(&mut self.in_handler);
        let deadline = now_ns() + wait.as_nanos() as u64;
        while !in_handler.is_empty() && now_ns() < deadline {
            std::thread::sleep(HANDLER_POLL);
            in_handler.retain(|&index| match SLOTS[index].state() {
                SlotState::InHandler => true,
                SlotState::Ready => {
                    self.collect_ready(index, &SLOTS[index]);
                    false
                }
                _ => false,
            });
        }
        in_handler.clear();
        self.in_handler = in_handler;
    }

    /// Copies one READY slot's samples into `pending`, the older first.
    fn collect_ready(&mut self, index: usize, slot: &Slot) {
        let drained = slot.drain(self.shared.config.kinds);
        let now = now_ns();
        counters_add(&self.shared.counters.timer_samples_queued, drained.len().saturating_sub(1) as u64);
        if drained.len() >= OWN_REGIONS {
            // Samples queue in this slot (its own regions may both have
            // held frames): its thread's next signals may borrow from the
            // pool.
            slot.prepare_pool();
        }
        let handlers: Vec<HandlerResult> = drained.iter().map(|sample| sample.handler).collect();
        let ends = match self.threads[index].as_ref() {
            Some(state) if drained.first().is_some_and(|first| first.generation == state.generation) => {
                state.wall_ends(&handlers, now)
            }
            _ => vec![now; drained.len()],
        };
        for (sample, end) in drained.into_iter().zip(ends) {
            self.collect_sample(index, sample, end);
        }
    }

    /// Copies one drained sample into `pending`, with the CPU and wall time
    /// since the thread's previous sample (for a timer's, up to `wall_end`).
    fn collect_sample(&mut self, index: usize, drained: Drained, wall_end: u64) {
        self.count_walk(&drained.handler, native_prefix(&drained.frames));
        let timed = drained.handler.timed;
        if timed {
            // A thread's timer's signal counts as sent when it is drained.
            counters_add(&self.shared.counters.signals_sent, 1);
            counters_add(&self.shared.counters.timer_samples, 1);
            if drained.handler.cpu_ns == 0 {
                counters_add(&self.shared.counters.timer_samples_counter_timed, 1);
            }
        }
        let Some(state) = self.threads[index].as_mut().filter(|s| s.generation == drained.generation) else {
            counters_add(&self.shared.counters.samples_retired, 1);
            return;
        };
        state.outstanding = false;
        if timed {
            state.timer_sample(&drained.handler, wall_end);
        } else {
            state.request_answered(&drained.handler);
        }
        let deferred = drained.handler.result == RESULT_DEFERRED;
        state.deferred_in_row = if deferred { state.deferred_in_row + 1 } else { 0 };
        let (cpu_delta, wall_delta) = state.take_time(deferred);
        self.pending.push(Collected {
            slot: index,
            generation: drained.generation,
            tid: state.tid,
            result: drained.handler.result,
            checksum: drained.handler.checksum,
            walker: Walker::from_u8(drained.handler.walker),
            broken: drained.handler.broken,
            cpu_delta,
            wall_delta,
            frames: drained.frames,
        });
    }

    /// Counts which walker walked a sample (`native_frames`: the native
    /// frames before its Java ones), and why pcct's stopped early.
    fn count_walk(&self, handler: &HandlerResult, native_frames: usize) {
        let counters = &self.shared.counters;
        if handler.handler_ns == HANDLER_UNMEASURED {
            counters_add(&counters.handler_switched, 1);
        } else {
            counters.handler_time.observe(handler.handler_ns);
        }
        if let Some(reason) = Broken::from_u8(handler.broken) {
            counters.count_walker_broken(reason);
        }
        if handler.result > 0 {
            match Walker::from_u8(handler.walker) {
                Walker::Vm => {
                    counters_add(&counters.walks_vm, 1);
                    // Java frames: the native ones before them are not the walker's.
                    counters_add(&counters.frames_walked, (handler.result as u64).saturating_sub(native_frames as u64));
                    counters_add(&counters.frames_reused, handler.reused as u64);
                }
                Walker::Agct => counters_add(&counters.walks_agct, 1),
                Walker::VmPartial => counters_add(&counters.walks_partial, 1),
                Walker::Native => counters_add(&counters.walks_native, 1),
                Walker::None => {}
            }
        }
    }

    /// Step 4 for one sample: classify it, then record it.
    fn apply(&mut self, profile: &mut crate::shared::Profile, sample: &Collected) -> SampleRecord {
        let mut record = SampleRecord {
            seq: 0,
            time_ns: now_ns().saturating_sub(self.started_ns),
            tid: sample.tid,
            cpu_delta_ns: sample.cpu_delta,
            wall_delta_ns: sample.wall_delta,
            checksum: sample.checksum,
            outcome: Outcome::Recorded,
            depth: 0,
            top: [Builtin::UnknownMethod.id(); TOP_FRAMES],
            top_len: 0,
            walker: sample.walker,
            walk_stopped: Broken::from_u8(sample.broken),
        };
        let Some(mut state) = self.threads[sample.slot].take_if(|s| s.generation == sample.generation) else {
            counters_add(&self.shared.counters.samples_retired, 1);
            record.outcome = Outcome::Retired;
            return record;
        };
        let depth = self.shared.config.depth;
        let weight = Weight::sample(sample.cpu_delta, sample.wall_delta);
        record.outcome = match classify(sample, self.mode, depth) {
            Classification::Filtered => self.record_filtered(sample.cpu_delta),
            Classification::Credited => self.record_credit(profile, &state, weight),
            Classification::Failed(error) => self.record_failure(profile, &mut state, error, weight, &mut record),
            Classification::ZeroCpu => self.record_filtered(0),
            Classification::Deferred => {
                counters_add(&self.shared.counters.samples_deferred, 1);
                Outcome::Deferred
            }
            Classification::Native => self.record_native(profile, &mut state, sample, weight, &mut record),
            Classification::Recorded { truncated: false } => {
                state.walked();
                let ThreadState { marks, named, .. } = &mut state;
                self.record_stack(profile, marks, Some(named), sample, None, weight, &mut record)
            }
            Classification::Recorded { truncated: true } => {
                state.walked();
                state.named.forget();
                let root = Some(Builtin::Truncated.id());
                self.record_stack(profile, &mut state.marks, None, sample, root, weight, &mut record)
            }
            Classification::Partial(reason) => {
                // The stack's bottom is missing: recorded with throwaway
                // marks, so the thread's own marks stay those of its last
                // whole stack and the frames below the break, which did not
                // change, are not counted as new calls at the next sample.
                let root = Some(self.break_pseudo[reason as usize - 1]);
                state.walked();
                let mut marks = std::mem::take(&mut self.scratch_marks);
                marks.clear();
                let outcome = self.record_stack(profile, &mut marks, None, sample, root, weight, &mut record);
                self.scratch_marks = marks;
                outcome
            }
        };
        self.threads[sample.slot] = Some(state);
        record
    }

    /// A sample of a thread that runs no Java code: recorded under its
    /// kind and family, then its native frames (`native=on`; none
    /// otherwise), through its own marks.
    fn record_native(
        &mut self,
        profile: &mut crate::shared::Profile,
        state: &mut ThreadState,
        sample: &Collected,
        weight: Weight,
        record: &mut SampleRecord,
    ) -> Outcome {
        let tid = state.tid;
        let roots = state.native_stack.frames(&mut profile.methods, self.methods_epoch, || {
            let name = crate::thread_names::kernel_name(tid).unwrap_or_default();
            std::iter::once(crate::thread_kinds::kind_of(&name).to_string())
                .chain(crate::thread_kinds::family_of(&name))
                .collect()
        });
        self.scratch_stack.clear();
        self.scratch_stack.extend_from_slice(roots);
        let native = &sample.frames[..sample.frames.len().min(self.shared.config.depth)];
        self.scratch_stack.extend(native.iter().rev().map(|&frame| named_frame(&self.cache, frame)));
        count_native_frames(&self.shared.counters, native);
        let frames = &self.scratch_stack;
        record.depth = frames.len() as u32;
        for (slot, frame) in record.top.iter_mut().zip(frames.iter().rev()) {
            *slot = frame.method;
        }
        record.top_len = frames.len().min(TOP_FRAMES) as u8;
        let counters = &self.shared.counters;
        if profile.tree.record(&mut state.marks, frames, weight).is_err() {
            counters_add(&counters.samples_dropped_full, 1);
            return Outcome::DroppedFull;
        }
        counters_add(&counters.samples_recorded, 1);
        counters_add(&counters.samples_native_threads, 1);
        counters_add(&counters.cpu_ns_recorded, weight.cpu_ns);
        Outcome::Recorded
    }

    /// `threads=all`: the sampler thread's own CPU since it last recorded
    /// it, once it is an interval or more, as one sample under `[pcct]`
    /// `[pcct-sampler]` (it blocks the sampling signal, so no timer samples
    /// it; its stack is always its drain).
    fn record_own_cpu(&mut self, profile: &mut crate::shared::Profile) {
        let (cpu, wall) = (slots::current_thread_cpu_ns(), now_ns());
        let (cpu_before, wall_before) = self.own_clocks.get_or_insert((cpu, wall));
        let cpu_delta = cpu.saturating_sub(*cpu_before);
        if cpu_delta < self.shared.control.interval().as_nanos() as u64 {
            return;
        }
        let weight = Weight::sample(cpu_delta, wall.saturating_sub(*wall_before));
        self.own_clocks = Some((cpu, wall));
        let frames = self.own_stack.frames(&mut profile.methods, self.methods_epoch, || {
            vec!["[pcct]".to_string(), "[pcct-sampler]".to_string()]
        });
        let mut marks = std::mem::take(&mut self.scratch_marks);
        marks.clear();
        if profile.tree.record(&mut marks, frames, weight).is_ok() {
            counters_add(&self.shared.counters.sampler_samples, 1);
            counters_add(&self.shared.counters.sampler_cpu_ns_recorded, cpu_delta);
        }
        self.scratch_marks = marks;
    }

    /// A sample of a thread that had not run: counted, nothing recorded.
    fn record_filtered(&self, cpu_delta: u64) -> Outcome {
        counters_add(&self.shared.counters.samples_filtered, 1);
        counters_add(&self.shared.counters.cpu_ns_filtered, cpu_delta);
        Outcome::Filtered
    }

    /// Wall mode, a thread that had not run: its wall time (and the little
    /// CPU taking the signal cost) goes to its previous leaf, without a walk.
    fn record_credit(&self, profile: &mut crate::shared::Profile, state: &ThreadState, weight: Weight) -> Outcome {
        let counters = &self.shared.counters;
        counters_add(&counters.samples_filtered, 1);
        if profile.tree.record_at_marked_leaf(&state.marks, weight) {
            counters_add(&counters.samples_wall_credited, 1);
            counters_add(&counters.cpu_ns_recorded, weight.cpu_ns);
        } else {
            counters_add(&counters.cpu_ns_filtered, weight.cpu_ns);
        }
        Outcome::Filtered
    }

    /// A failed walk: recorded under its pseudo-frame with throwaway marks
    /// (the thread's own marks stay those of its last stack).
    fn record_failure(
        &mut self,
        profile: &mut crate::shared::Profile,
        state: &mut ThreadState,
        error: AgctError,
        weight: Weight,
        record: &mut SampleRecord,
    ) -> Outcome {
        let counters = &self.shared.counters;
        counters.count_agct_failure(error);
        // Only "not Java at all" failures count towards excluding a thread
        // that was never walked (JVM service threads).
        state.consecutive_failures = if error.means_not_java() { state.consecutive_failures + 1 } else { 0 };
        if !state.ever_walked && state.consecutive_failures >= self.shared.config.exclude_after_failures {
            state.excluded = true;
            counters_add(&counters.threads_excluded, 1);
        }
        let index = AgctError::ALL.iter().position(|known| *known == error).unwrap_or(AgctError::ALL.len());
        let pseudo = self.pseudo[index];
        record.top[0] = pseudo;
        record.top_len = 1;
        self.scratch_marks.clear();
        if profile.tree.record(&mut self.scratch_marks, &[Frame::new(pseudo, -1)], weight).is_err() {
            counters_add(&counters.samples_dropped_full, 1);
            return Outcome::DroppedFull;
        }
        counters_add(&counters.samples_failed, 1);
        counters_add(&counters.cpu_ns_recorded, weight.cpu_ns);
        Outcome::Failed { code: error.code() }
    }

    /// A walked stack: named, recorded through `marks`, under `root`
    /// (`[truncated]`, `[break_<reason>]`) when its bottom is missing.
    #[allow(clippy::too_many_arguments)]
    fn record_stack(
        &mut self,
        profile: &mut crate::shared::Profile,
        marks: &mut Marks,
        named: Option<&mut NamedStack>,
        sample: &Collected,
        root: Option<MethodId>,
        weight: Weight,
        record: &mut SampleRecord,
    ) -> Outcome {
        let counters = &self.shared.counters;
        let used = &sample.frames[..sample.frames.len().min(self.shared.config.depth)];
        self.scratch_stack.clear();
        if let Some(root) = root {
            if root == Builtin::Truncated.id() {
                counters_add(&counters.samples_truncated, 1);
            }
            self.scratch_stack.push(Frame::new(root, -1));
        }
        // The frames shared with the thread's previous whole stack from the
        // root are named as they were then; the rest through the cache.
        let shared = named.as_deref().map_or(&[][..], |named| named.shared_names(used, self.methods_epoch));
        self.scratch_stack.extend_from_slice(shared);
        let unshared = used[..used.len() - shared.len()].iter().rev();
        self.scratch_stack.extend(unshared.map(|&frame| named_frame(&self.cache, frame)));
        count_native_frames(counters, &used[..native_prefix(used)]);
        if let Some(named) = named {
            named.keep(used, &self.scratch_stack, self.methods_epoch);
        }
        record.depth = sample.frames.len() as u32;
        for (slot, frame) in record.top.iter_mut().zip(self.scratch_stack.iter().rev().take(used.len())) {
            *slot = frame.method;
        }
        record.top_len = used.len().min(TOP_FRAMES) as u8;
        if profile.tree.record(marks, &self.scratch_stack, weight).is_err() {
            counters_add(&counters.samples_dropped_full, 1);
            return Outcome::DroppedFull;
        }
        counters_add(&counters.samples_recorded, 1);
        counters_add(&counters.cpu_ns_recorded, weight.cpu_ns);
        Outcome::Recorded
    }

    /// Step 5: decide which threads to signal, and signal them; open the
    /// timers of threads that get their own (which then ask for their
    /// samples themselves).
    fn signal_threads(&mut self, interval: Duration) {
        let high = HIGH_WATER.load(Ordering::Acquire);
        let threshold = (interval.as_nanos() as f64 * self.shared.config.idle_share) as u64;
        handler::set_ran_threshold_ns(threshold);
        let prefilter = self.shared.config.prefilter && self.mode == Mode::Cpu;
        let signal = self.shared.config.signal;
        let thread_timers = self.thread_timers();
        let read_timed = self.tick.is_multiple_of(TIMED_READ_EVERY_TICKS);
        let wall_now = now_ns();
        self.signals_threads = false;
        for (index, slot) in SLOTS[..high].iter().enumerate() {
            let state = slot.state();
            if state == SlotState::Free || state == SlotState::Retired {
                continue;
            }
            let generation = slot.generation();
            let tid = slot.tid.load(Ordering::Relaxed);
            let known = self.threads[index].as_ref().is_some_and(|thread| thread.generation == generation);
            if known && !read_timed && self.keeps_timer(index, interval) {
                continue;
            }
            let Some(cpu_now) = slots::thread_cpu_ns(tid) else {
                // The thread is gone. A thread found in /proc/self/task gets
                // no ThreadEnd: retire it here, or its slot would stay taken
                // (and its tid signalled) forever.
                self.retire_if_discovered(index, generation);
                continue;
            };
            if !known {
                // First sight: CPU time before it is not attributed to any stack.
                if let Some(old) = self.threads[index].take() {
                    self.forget(old);
                }
                self.threads[index] = Some(ThreadState::new(generation, tid, cpu_now, wall_now));
            }
            let Some(thread) = self.threads[index].as_mut() else { continue };
            if thread.rebase && state == SlotState::Idle {
                // Resumed after a pause: the time it ran unobserved is
                // accounted as observed up to the pause, then dropped.
                counters_add(&self.shared.counters.cpu_ns_observed, thread.observed_cpu());
                thread.rebase_to(cpu_now, wall_now);
                thread.timer_signals_seen = slot.timer_signals.load(Ordering::Acquire);
            }
            thread.cpu_last_read = cpu_now;
            if thread.excluded {
                continue;
            }
            if thread_timers && thread.timer.is_none() && !thread.timer_refused && state == SlotState::Idle {
                // Published to its handler by the timer's table entry.
                slot.prepare_history();
                let value = handler::encode(index, generation);
                let signals = slot.timer_signals.load(Ordering::Acquire);
                match ThreadTimer::open(tid, interval, signal, value, self.shared.config.kernel) {
                    Ok(timer) => {
                        if self.shared.config.batch > interval {
                            // Its samples queue for a batch: behind its
                            // slot's two regions, in the pool's.
                            slot.prepare_pool();
                        }
                        thread.timer_opened(timer.period(), signals, cpu_now);
                        thread.timer = Some(timer);
                        counters_add(&self.shared.counters.timers_opened, 1);
                    }
                    Err(_) => {
                        thread.timer_refused = true;
                        counters_add(&self.shared.counters.timers_refused, 1);
                    }
                }
            }
            if self.keeps_timer(index, interval) {
                continue;
            }
            let Some(thread) = self.threads[index].as_mut() else { continue };
            self.signals_threads = true;
            if state != SlotState::Idle {
                counters_add(&self.shared.counters.samples_busy, 1);
                continue;
            }
            if prefilter && cpu_now.saturating_sub(thread.cpu_at_sample) < threshold {
                counters_add(&self.shared.counters.samples_idle, 1);
                continue;
            }
            // The handler compares the reading with the CPU clock at its
            // previous return (see `handler`).
            let wall_at_request = now_ns();
            // In cpu mode a sample may be deferred (see `handler`), but not
            // more than MAX_DEFERRED_IN_ROW in a row.
            let may_defer = self.mode == Mode::Cpu && thread.deferred_in_row < MAX_DEFERRED_IN_ROW;
            if !slot.request(cpu_now, if may_defer { wall_at_request } else { 0 }) {
                continue;
            }
            thread.cpu_at_request = cpu_now;
            thread.wall_at_request = wall_at_request;
            thread.requested_tick = self.tick;
            match signal::send(signal, tid, handler::encode(index, generation)) {
                Ok(()) => {
                    thread.outstanding = true;
                    counters_add(&self.shared.counters.signals_sent, 1);
                }
                Err(error) => {
                    slot.withdraw();
                    counters_add(&self.shared.counters.signal_failures, 1);
                    if error == SendError::NoSuchThread {
                        self.retire_if_discovered(index, generation);
                    }
                }
            }
        }
    }
}

impl Sampler<'_> {
    /// Whether the thread in slot `index` keeps its own timer, which then
    /// asks for its samples (nothing to do at this tick). Closes a timer
    /// that should not run (wall mode, an excluded thread, a period that is
    /// no longer the interval) and returns false: the thread is then
    /// handled as one without a timer.
    fn keeps_timer(&mut self, index: usize, interval: Duration) -> bool {
        let thread_timers = self.thread_timers();
        let Some(thread) = self.threads[index].as_mut() else { return false };
        let Some(timer) = thread.timer.as_ref() else { return false };
        if !thread_timers || thread.excluded || timer.period() != interval {
            thread.timer = None;
            return false;
        }
        true
    }

    /// Accounts a thread that ended (or whose slot a new thread took): the
    /// CPU it used while observed, and a sample it still owed.
    fn forget(&self, old: ThreadState) {
        counters_add(&self.shared.counters.cpu_ns_observed, old.observed_cpu());
        if old.outstanding {
            counters_add(&self.shared.counters.samples_retired, 1);
        }
    }

    /// Whether pcct's signal handler is still the signal's disposition,
    /// checked before every tick's signals (one `sigaction` query): if
    /// another library replaced it (or reset it to the default, which would
    /// kill the JVM), sampling stops for good before a signal is sent.
    fn handler_installed(&self) -> bool {
        let signal = self.shared.config.signal;
        let installed = signal::is_installed(signal);
        if !installed {
            self.shared.disable(format!(
                "another handler replaced pcct's {} handler; sampling stopped (choose another signal with signal=)",
                signal::signal_name(signal)
            ));
        }
        installed
    }

    /// Retires the registration (`index`, `generation`) of a thread that is
    /// gone, if it was discovered (started threads are retired by their
    /// ThreadEnd).
    fn retire_if_discovered(&self, index: usize, generation: u32) {
        if matches!(self.registry.origin(index), Some(ThreadOrigin::Discovered | ThreadOrigin::Native)) {
            self.registry.retire_key(slots::ThreadKey { slot: index, generation });
        }
    }
}

impl ThreadState {
    /// CPU time the thread used between first sight and the last reading.
    fn observed_cpu(&self) -> u64 {
        self.cpu_last_read.saturating_sub(self.cpu_first_seen)
    }

    /// Moves the weight baselines and the observation start to "now".
    fn rebase_to(&mut self, cpu_now: u64, wall_now: u64) {
        self.cpu_at_sample = cpu_now;
        self.cpu_first_seen = cpu_now;
        self.cpu_last_read = cpu_now;
        self.cpu_at_request = cpu_now;
        self.wall_at_sample = wall_now;
        self.wall_at_request = wall_now;
        self.rebase = false;
    }

    /// A timer of `period` was just opened for it, its slot's timer
    /// signals then `signals` and its CPU clock `cpu_now`: the timed
    /// samples' clock starts there.
    fn timer_opened(&mut self, period: Duration, signals: u64, cpu_now: u64) {
        self.timer_signals_seen = signals;
        self.timer_period_ns = period.as_nanos() as u64;
        self.cpu_at_request = cpu_now;
    }

    /// A sample of its own timer was drained, `handler` its result (its
    /// timer gets its perf page now, `ThreadTimer::map_page`): the
    /// request's CPU clock is the handler's reading if it read one (every
    /// `handler::CPU_CLOCK_EVERY`th signal, and after signals lost on its CPU),
    /// else the previous one plus the intervals its timers signalled from
    /// the previous sample's signal to this one's (taken or refused), which
    /// is where the thread's CPU clock was at this one.
    fn timer_sample(&mut self, handler: &HandlerResult, wall_end: u64) {
        // Its timer has fired: the thread runs, and its handler may time
        // itself by the processor's counter if the timer has a page.
        if let Some(timer) = self.timer.as_mut() {
            timer.map_page();
        }
        // The signals from the previous sample's to this one's (those
        // refused after this one go to the next sample).
        let intervals = self.intervals_through(handler);
        self.timer_signals_seen = self.timer_signals_seen.max(handler.timer_signal.saturating_add(1));
        self.cpu_at_request = if handler.cpu_ns != 0 {
            // Never back: the intervals may have run a little ahead of the
            // clock (the perf timer counts a thread's switches as its own),
            // and the clock catches up by the next reading.
            handler.cpu_ns.max(self.cpu_at_sample)
        } else {
            self.cpu_at_request.saturating_add(intervals.saturating_mul(self.timer_period_ns))
        };
        // As good as a reading (the clock at the latest signal): a thread
        // that ends before the next reading has its CPU up to its last
        // sample observed, as that sample recorded it.
        self.cpu_last_read = self.cpu_last_read.max(self.cpu_at_request);
        self.wall_at_request = wall_end;
    }

    /// A sample the sampler's signal asked for was drained, `handler` its
    /// result: its CPU ends at the handler's reading of the thread's CPU
    /// clock (at its start), not at the request's. The stack is where the
    /// thread was then, and the CPU between the two is the thread's on the
    /// way there: a thread in a long system call takes the signal at the
    /// call's return, and the call's CPU after the request went to the
    /// next sample, elsewhere in the code (BENCHMARKS.md, "Long system
    /// calls": `readBig` 2.5 points short, `stat` after it as much over).
    fn request_answered(&mut self, handler: &HandlerResult) {
        self.cpu_at_request = self.cpu_at_request.max(handler.cpu_ns);
        self.cpu_last_read = self.cpu_last_read.max(self.cpu_at_request);
    }

    /// Its timers' signals after those accounted for so far, up to and
    /// including the one that took `handler`'s sample (taken or refused).
    fn intervals_through(&self, handler: &HandlerResult) -> u64 {
        handler.timer_signal.saturating_add(1).saturating_sub(self.timer_signals_seen)
    }

    /// Where the wall time of each of its samples drained together ends,
    /// the drain at `now`: the span since the thread's previous sample
    /// split by the intervals each stands for (a thread that ran has its
    /// wall time about its CPU time), not all of it to the first and none
    /// to the others. All `now` unless all are its timer's.
    fn wall_ends(&self, handlers: &[HandlerResult], now: u64) -> Vec<u64> {
        let all = handlers.last().map_or(0, |last| self.intervals_through(last));
        if handlers.len() < 2 || all == 0 || !handlers.iter().all(|handler| handler.timed) {
            return vec![now; handlers.len()];
        }
        let span = now.saturating_sub(self.wall_at_sample);
        handlers
            .iter()
            .map(|handler| {
                let through = self.intervals_through(handler).min(all);
                self.wall_at_sample.saturating_add((span as u128 * through as u128 / all as u128) as u64)
            })
            .collect()
    }

    /// A walk named frames: the thread runs Java (it is never excluded as
    /// a JVM service thread).
    fn walked(&mut self) {
        self.consecutive_failures = 0;
        self.ever_walked = true;
    }

    /// The CPU and wall time since the thread's previous sample, up to the
    /// sample just drained (its CPU to its handler's clock reading, its
    /// wall time to the request or, for a timer's, to the drain); a sample
    /// that is `deferred` leaves that time to the thread's next sample.
    fn take_time(&mut self, deferred: bool) -> (u64, u64) {
        let cpu = self.cpu_at_request.saturating_sub(self.cpu_at_sample);
        let wall = self.wall_at_request.saturating_sub(self.wall_at_sample);
        if !deferred {
            self.cpu_at_sample = self.cpu_at_request;
            self.wall_at_sample = self.wall_at_request;
        }
        (cpu, wall)
    }

    fn new(generation: u32, tid: i32, cpu_now: u64, wall_now: u64) -> ThreadState {
        ThreadState {
            generation,
            tid,
            marks: Marks::new(),
            cpu_at_sample: cpu_now,
            cpu_first_seen: cpu_now,
            cpu_last_read: cpu_now,
            wall_at_sample: wall_now,
            cpu_at_request: cpu_now,
            wall_at_request: wall_now,
            requested_tick: 0,
            outstanding: false,
            rebase: false,
            consecutive_failures: 0,
            ever_walked: false,
            deferred_in_row: 0,
            timer_signals_seen: 0,
            timer_period_ns: 0,
            named: NamedStack::default(),
            resolved: ResolvedStack::default(),
            native_stack: PseudoStack::default(),
            excluded: false,
            timer: None,
            timer_refused: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventKind;
    use pcct::NodeId;

    const DEPTH: usize = 8;

    fn sample(result: i32, cpu_delta: u64, frames: usize) -> Collected {
        Collected {
            slot: 0,
            generation: 1,
            tid: 1,
            result,
            checksum: 0,
            cpu_delta,
            wall_delta: 1,
            walker: Walker::Vm,
            broken: 0,
            frames: vec![(0x100, 0); frames],
        }
    }

    #[test]
    fn a_deferred_sample_is_deferred() {
        assert_eq!(classify_one(RESULT_DEFERRED, 5_000, 0, Mode::Cpu), Classification::Deferred);
    }

    #[test]
    fn a_deferred_samples_time_goes_to_the_threads_next_sample() {
        let mut thread = ThreadState::new(1, 7, 1_000, 10_000);
        (thread.cpu_at_request, thread.wall_at_request) = (3_000, 13_000);
        assert_eq!(thread.take_time(true), (2_000, 3_000));
        (thread.cpu_at_request, thread.wall_at_request) = (4_500, 15_000);
        assert_eq!(thread.take_time(false), (3_500, 5_000), "both intervals");
        (thread.cpu_at_request, thread.wall_at_request) = (5_000, 16_000);
        assert_eq!(thread.take_time(false), (500, 1_000));
    }

    #[test]
    fn a_requested_samples_cpu_ends_at_its_handlers_clock_not_at_the_request() {
        let mut thread = ThreadState::new(1, 7, 1_000, 10_000);
        // Asked for at CPU 3,000; the signal reached the thread at the end
        // of a system call, at CPU 9,000 (the reading at its handler's start).
        (thread.cpu_at_request, thread.wall_at_request) = (3_000, 13_000);
        thread.request_answered(&HandlerResult { timed: false, ..timed(0, 9_000) });
        assert_eq!(thread.take_time(false), (8_000, 3_000), "the call's CPU is this sample's, not the next's");
        assert_eq!(thread.cpu_last_read, 9_000);
        // A handler that read no clock (0) leaves the request's reading.
        (thread.cpu_at_request, thread.wall_at_request) = (10_000, 14_000);
        thread.request_answered(&HandlerResult { timed: false, ..timed(0, 0) });
        assert_eq!(thread.take_time(false), (1_000, 1_000));
    }

    const MS: u64 = 1_000_000;

    fn timed(timer_signal: u64, cpu_ns: u64) -> HandlerResult {
        HandlerResult {
            result: 1,
            walker: 1,
            broken: 0,
            region: 0,
            reused: 0,
            checksum: 0,
            handler_ns: 1,
            timed: true,
            cpu_ns,
            timer_signal,
        }
    }

    #[test]
    fn a_timed_sample_weighs_the_intervals_signalled_since_the_previous_or_its_handlers_clock() {
        let mut thread = ThreadState::new(1, 7, 2 * MS, 10_000);
        // Five signals before the timer opened (an earlier timer's).
        thread.timer_opened(Duration::from_millis(1), 5, 2 * MS);
        // Two signals that found the slot busy, then the sample's (the 8th).
        thread.timer_sample(&timed(7, 0), 20_000);
        assert_eq!(thread.take_time(false).0, 3 * MS);
        // A handler that read the thread's CPU clock gives the weight's end.
        thread.timer_sample(&timed(8, 6_100_000), 30_000);
        assert_eq!(thread.take_time(false).0, 1_100_000);
        thread.timer_sample(&timed(10, 0), 40_000);
        assert_eq!(thread.take_time(false).0, 2 * MS);
        // A reading behind the intervals' sum does not take time back.
        thread.timer_sample(&timed(11, 7_900_000), 50_000);
        assert_eq!(thread.take_time(false).0, 0);
        thread.timer_sample(&timed(12, 0), 60_000);
        assert_eq!(thread.take_time(false).0, MS);
        // A sample of the earlier timer, drained after the new one opened.
        thread.timer_opened(Duration::from_millis(1), 20, 10 * MS);
        thread.timer_sample(&timed(15, 0), 70_000);
        assert_eq!(thread.take_time(false).0, 10 * MS - 9_100_000, "up to the clock at the opening");
    }

    #[test]
    fn timed_samples_drained_together_split_the_wall_time_by_their_intervals() {
        let mut thread = ThreadState::new(1, 7, 0, 10_000);
        thread.timer_opened(Duration::from_millis(1), 0, 0);
        // The first stands for signals 1-3 (two refused, then its own),
        // the second for signal 4, the third for 5 and 6; drained at
        // 10_000 + 6 ms.
        let samples = [timed(2, 0), timed(3, 0), timed(5, 0)];
        let now = 10_000 + 6 * MS;
        let ends = thread.wall_ends(&samples, now);
        assert_eq!(ends, vec![10_000 + 3 * MS, 10_000 + 4 * MS, now]);
        for ((sample, end), expected) in samples.iter().zip(ends).zip([3 * MS, MS, 2 * MS]) {
            thread.timer_sample(sample, end);
            assert_eq!(thread.take_time(false), (expected, expected));
        }
        // A sample the sampler's signal asked for keeps the drain's time.
        let untimed = HandlerResult { timed: false, ..timed(7, 0) };
        assert_eq!(thread.wall_ends(&[untimed, timed(8, 0)], now + MS), vec![now + MS; 2]);
        assert_eq!(thread.wall_ends(&[timed(9, 0)], now + MS), vec![now + MS], "one sample: the drain");
    }

    fn classify_one(result: i32, cpu_delta: u64, frames: usize, mode: Mode) -> Classification {
        classify(&sample(result, cpu_delta, frames), mode, DEPTH)
    }

    #[test]
    fn a_matching_checksum_is_filtered_in_cpu_mode_and_credited_in_wall_mode() {
        assert_eq!(classify_one(RESULT_FILTERED, 5_000, 0, Mode::Cpu), Classification::Filtered);
        assert_eq!(classify_one(RESULT_FILTERED, 5_000, 0, Mode::Wall), Classification::Credited);
    }

    #[test]
    fn failure_codes_become_failures_with_their_reason() {
        assert_eq!(classify_one(-2, 1, 0, Mode::Cpu), Classification::Failed(AgctError::GcActive));
        assert_eq!(classify_one(0, 1, 0, Mode::Wall), Classification::Failed(AgctError::NoJavaFrame));
        assert_eq!(classify_one(-42, 1, 0, Mode::Cpu), Classification::Failed(AgctError::Other(-42)));
        assert_eq!(
            classify_one(RESULT_NO_AGCT, 1, 0, Mode::Cpu),
            Classification::Failed(AgctError::Other(RESULT_NO_AGCT))
        );
        // A failure is a failure even with no CPU used.
        assert_eq!(classify_one(-5, 0, 0, Mode::Cpu), Classification::Failed(AgctError::UnknownJava));
    }

    #[test]
    fn a_walked_stack_without_cpu_is_filtered_only_in_cpu_mode() {
        assert_eq!(classify_one(3, 0, 3, Mode::Cpu), Classification::ZeroCpu);
        assert_eq!(classify_one(3, 0, 3, Mode::Wall), Classification::Recorded { truncated: false });
    }

    #[test]
    fn stacks_deeper_than_the_depth_are_truncated() {
        assert_eq!(classify_one(3, 1, 3, Mode::Cpu), Classification::Recorded { truncated: false });
        assert_eq!(classify_one(8, 1, DEPTH, Mode::Cpu), Classification::Recorded { truncated: false });
        assert_eq!(classify_one(9, 1, DEPTH + 1, Mode::Cpu), Classification::Recorded { truncated: true });
    }

    /// Names every id `Fake.m<id>`.
    struct FakeNames;

    impl MethodResolver for FakeNames {
        fn resolve(
            &mut self,
            method_id: *mut std::ffi::c_void,
        ) -> Result<crate::resolve::MethodDesc, crate::resolve::ResolveError> {
            Ok(crate::resolve::MethodDesc {
                class: "Fake".to_string(),
                name: format!("m{:x}", method_id as usize),
                signature: "()V".to_string(),
                lines: Vec::new(),
                file: None,
            })
        }
    }

    /// A sample of thread slot 0 walked by pcct's walker: `frames` leaf first.
    fn walked(frames: &[usize], walker: Walker, broken: Option<Broken>) -> Collected {
        Collected {
            walker,
            broken: broken.map_or(0, |reason| reason as u8),
            frames: frames.iter().map(|&id| (id, 7)).collect(),
            ..sample(frames.len() as i32, 1_000, 0)
        }
    }

    #[test]
    fn a_partial_walk_leaves_the_thread_marks_of_its_last_whole_stack() {
        const MAIN: usize = 0x10;
        const LOOP: usize = 0x20;
        const SHORT: usize = 0x30;
        let shared = Arc::new(Shared::new(crate::SamplerConfig::default()).expect("shared"));
        let registry = Arc::new(Registry::new(DEPTH));
        let mut names = FakeNames;
        let mut sampler = Sampler::new(Arc::clone(&shared), registry, &mut names);
        sampler.threads[0] = Some(ThreadState::new(1, 1, 0, 0));
        sampler.pending = vec![
            walked(&[SHORT, LOOP, MAIN], Walker::Vm, None),
            // The walk stopped below loop: main is missing.
            walked(&[SHORT, LOOP], Walker::VmPartial, Some(Broken::StackRange)),
            walked(&[LOOP, MAIN], Walker::Vm, None),
            walked(&[SHORT, LOOP, MAIN], Walker::Vm, None),
        ];
        sampler.record_pending(Duration::from_secs(1), now_ns());

        let profile = shared.profile.lock();
        let tree = &profile.tree;
        let name = |node: NodeId| profile.methods.display_name(tree.method(node));
        let loops: Vec<NodeId> = tree
            .nodes()
            .filter(|&node| name(node) == format!("Fake.m{LOOP:x}"))
            .filter(|&node| tree.parent(node).is_some_and(|parent| name(parent) == format!("Fake.m{MAIN:x}")))
            .collect();
        assert_eq!(loops.len(), 1, "one context main -> loop");
        let main_to_loop = tree.edge_weight(loops[0]).samples;
        assert_eq!(main_to_loop, 1, "main -> loop was entered once; the partial walk did not make it new again");
        assert_eq!(tree.total().samples, 4);
    }

    #[test]
    fn queued_events_are_recorded_whole_under_their_class_and_leave_the_marks_alone() {
        const MAIN: usize = 0x10;
        const LOOP: usize = 0x20;
        let config = crate::SamplerConfig { event_capacity: 4, ..crate::SamplerConfig::default() };
        let shared = Arc::new(Shared::new(config).expect("shared"));
        let registry = Arc::new(Registry::new(DEPTH));
        let mut names = FakeNames;
        // A registration, so that the slots in use (which the events' map
        // of threads is built from) include slot 0, the thread's here.
        let key = registry.register(1_000_001, std::ptr::null_mut(), crate::slots::ThreadOrigin::Started);
        let mut sampler = Sampler::new(Arc::clone(&shared), Arc::clone(&registry), &mut names);
        sampler.threads[0] = Some(ThreadState::new(1, 1, 0, 0));
        let queue = shared.events.as_ref().expect("a queue");
        let event = |kind, class: &str, weight| crate::events::Event {
            kind,
            tid: 1,
            chain: crate::events::Chain::default(),
            frames: vec![(LOOP, 12), (MAIN, 7)],
            truncated: false,
            class: class.into(),
            weight,
            object: 0,
        };
        sampler.pending = vec![walked(&[LOOP, MAIN], Walker::Vm, None)];
        sampler.record_pending(Duration::from_secs(1), now_ns());
        assert!(queue.push(event(EventKind::Allocation, "byte[]", Weight::allocation(4096, 4))));
        assert!(queue.push(event(EventKind::Monitor, "java.lang.Object", Weight::lock_wait(5_000))));
        sampler.pending = vec![walked(&[LOOP, MAIN], Walker::Vm, None)];
        sampler.record_pending(Duration::from_secs(1), now_ns());

        let profile = shared.profile.lock();
        let tree = &profile.tree;
        let name = |node: NodeId| profile.methods.display_name(tree.method(node));
        let loop_node = tree.nodes().find(|&node| name(node) == format!("Fake.m{LOOP:x}")).expect("main -> loop");
        assert_eq!(tree.edge_weight(loop_node).samples, 1, "the events did not make main -> loop new again");
        let classes: Vec<(String, i32, Weight)> =
            tree.children(loop_node).map(|node| (name(node), tree.call_site(node), tree.node_weight(node))).collect();
        assert_eq!(
            classes.iter().map(|(name, site, _)| (name.as_str(), *site)).collect::<Vec<_>>(),
            [("java.lang.Object", 12), ("byte[]", 12)],
            "each class under the code, through the allocation's bytecode index"
        );
        assert_eq!(tree.total().samples, 2);
        assert_eq!(tree.total().alloc_bytes, 4096);
        assert_eq!(tree.total().lock_wait_ns, 5_000);
        let counters = shared.counters.snapshot();
        assert_eq!((counters.allocations_recorded, counters.alloc_bytes_recorded), (1, 4096));
        assert_eq!((counters.monitor_waits_recorded, counters.lock_wait_ns_recorded), (1, 5_000));
        drop(profile);
        registry.retire_key(key.expect("registered"));
    }

    #[test]
    fn chained_events_are_recorded_with_their_whole_stacks_and_a_gap_drops_until_a_whole_one() {
        use crate::events::{Chain, EventStream};
        const MAIN: usize = 0x10;
        const DEEP: usize = 0x20;
        const LEAF: usize = 0x30;
        const OTHER: usize = 0x40;
        let config = crate::SamplerConfig { event_capacity: 8, ..crate::SamplerConfig::default() };
        let shared = Arc::new(Shared::new(config).expect("shared"));
        let registry = Arc::new(Registry::new(DEPTH));
        let mut names = FakeNames;
        let mut sampler = Sampler::new(Arc::clone(&shared), Arc::clone(&registry), &mut names);
        let queue = shared.events.as_ref().expect("a queue");
        let stream = EventStream::new();
        let event = |seq, shared_frames: u32, frames: Vec<(usize, i32)>| crate::events::Event {
            kind: EventKind::Allocation,
            tid: 1,
            chain: Chain {
                stream: stream.id(),
                handle: (shared_frames == 0).then(|| Arc::clone(&stream)),
                seq,
                shared: shared_frames,
            },
            frames,
            truncated: false,
            class: "byte[]".into(),
            weight: Weight::allocation(100, 1),
            object: 0,
        };
        // main -> deep -> leaf, whole; then the same with leaf at another
        // bci and main -> deep -> other, chained (two and one frames shared).
        assert!(queue.push(event(0, 0, vec![(LEAF, 3), (DEEP, 2), (MAIN, 1)])));
        assert!(queue.push(event(1, 2, vec![(LEAF, 4)])));
        assert!(queue.push(event(2, 2, vec![(OTHER, 5)])));
        // Event 3 went missing: 4 is dropped and the stream asked for a whole one.
        assert!(queue.push(event(4, 2, vec![(LEAF, 6)])));
        sampler.record_pending(Duration::from_secs(1), now_ns());
        assert!(stream.take_whole());
        assert!(queue.push(event(5, 0, vec![(OTHER, 7), (DEEP, 2), (MAIN, 1)])));
        sampler.record_pending(Duration::from_secs(1), now_ns());

        let profile = shared.profile.lock();
        let tree = &profile.tree;
        let name = |node: NodeId| profile.methods.display_name(tree.method(node));
        let mut sites: Vec<(Vec<String>, i32, u64)> = tree
            .nodes()
            .filter(|&node| name(node) == "byte[]")
            .map(|node| {
                let path = tree.path(node).into_iter().map(name).collect();
                (path, tree.call_site(node), tree.node_weight(node).alloc_bytes)
            })
            .collect();
        sites.sort();
        let path = |leaf: usize| {
            vec![format!("Fake.m{MAIN:x}"), format!("Fake.m{DEEP:x}"), format!("Fake.m{leaf:x}"), "byte[]".to_string()]
        };
        assert_eq!(
            sites,
            [(path(LEAF), 3, 100), (path(LEAF), 4, 100), (path(OTHER), 5, 100), (path(OTHER), 7, 100)],
            "every event under its whole stack, through its leaf's bci"
        );
        let counters = shared.counters.snapshot();
        assert_eq!((counters.allocations_recorded, counters.allocations_dropped, counters.events_unchained), (4, 1, 1));
    }

    #[test]
    fn a_stack_only_walked_at_its_top_is_partial_with_the_reason() {
        let mut partial = sample(4, 1, 4);
        partial.walker = Walker::VmPartial;
        partial.broken = Broken::Interpreted as u8;
        assert_eq!(classify(&partial, Mode::Cpu, DEPTH), Classification::Partial(Broken::Interpreted));
        // Walked by AsyncGetCallTrace after pcct's walker stopped: whole.
        partial.walker = Walker::Agct;
        assert_eq!(classify(&partial, Mode::Cpu, DEPTH), Classification::Recorded { truncated: false });
    }
}
