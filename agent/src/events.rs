//! The JVMTI events pcct records beside its samples: sampled allocations
//! (`SampledObjectAlloc`) and contended monitor enters
//! (`MonitorContendedEnter` / `MonitorContendedEntered`). Each callback,
//! on the Java thread the event happened on, reads that thread's own stack
//! (pcct's walker from the thread's last Java frame, else `GetStackTrace`,
//! safe there) and the event's class, and hands an [`Event`] to the
//! sampler through its lock-free queue; the sampler names and records it
//! at its next tick (`pcct_sampler::events`). Like a CPU sample, an event
//! starts from its thread's previous one: only the frames new since then
//! are walked and sent (`OwnEvents`, `pcct_sampler::event_stacks`).
//!
//! What a callback never does: take the profile lock or any lock the
//! sampler waits for (the queue's push never blocks; a full queue drops
//! the event, counted), run Java code, or keep a JNI reference other than
//! the one weak reference to a recorded allocation's object that the live
//! heap needs (the agent's heap thread deletes it; a dropped event's is
//! deleted at once). What it
//! costs: one walk of the frames new on the thread's own stack, the class's
//! name (from the thread's earlier names when HotSpot's structures show the
//! same class, `pcct_sampler::hotspot::classes`; else from JVMTI), two
//! small allocations, at most once per sampled allocation (every 512 KiB
//! allocated by default) and once per contended enter. With `alloc=off`
//! and `locks=off` the capabilities are not even asked for.
//!
//! A contended enter's wait is the time between the two events, kept in
//! JVMTI's thread-local storage of the thread (a virtual thread has its
//! own, so a wait across a remount is still one wait).

#![forbid(unsafe_code)]

use std::sync::Arc;

use pcct_sampler::counters::Counters;
use pcct_sampler::cycles::{self, Part};
use pcct_sampler::events::{allocation_weight, uniform_from, Chain, Event, EventKind, EventStream, Throttle};
use pcct_sampler::hotspot::classes::{class_symbol_here, ClassNames, MAX_NAME};
use pcct_sampler::hotspot::OwnWalks;
use pcct_sampler::slots::current_tid;
use pcct_sampler::timer::now_ns;
use pcct_sampler::Shared;

use crate::jvmti::{Jni, Jvmti};
use crate::jvmti_sys::{jclass, jobject};
use crate::resolver::java_type_name;

/// The class name an event gets when its class cannot be read.
const UNKNOWN_CLASS: &str = "[unknown_class]";

thread_local! {
    /// This thread's event walks and stream (made at its first recorded
    /// event, freed when it ends).
    static OWN_EVENTS: std::cell::RefCell<Option<OwnEvents>> = const { std::cell::RefCell::new(None) };
}

/// Which events the agent reports (from the `alloc` and `locks` options,
/// less what this JVM cannot do).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reported {
    /// Mean bytes between sampled allocations, if allocations are sampled.
    pub alloc_interval: Option<u64>,
    /// Sampled allocations recorded a second at most, on average (`None`:
    /// all of them).
    pub alloc_rate: Option<u64>,
    /// Whether contended monitor enters are recorded.
    pub locks: bool,
    /// Most allocations tracked for the live heap, if it is on.
    pub live: Option<usize>,
    /// Whether GarbageCollectionFinish tells the heap thread when to look
    /// (else it looks every second).
    pub gc_events: bool,
}

impl Reported {
    pub fn any(self) -> bool {
        self.alloc_interval.is_some() || self.locks
    }

    /// What /api/status says.
    pub fn describe(self) -> String {
        let alloc = match (self.alloc_interval, self.alloc_rate) {
            (Some(bytes), Some(rate)) => format!(
                "allocations sampled every {bytes} bytes on average, about {rate} a second recorded at most (the rest thinned, the kept ones weighed for them)"
            ),
            (Some(bytes), None) => format!("allocations sampled every {bytes} bytes on average, all recorded"),
            (None, _) => "allocations not sampled".to_string(),
        };
        let locks = if self.locks { "contended monitor enters recorded" } else { "monitors not recorded" };
        let live = match (self.live, self.gc_events) {
            (Some(max), true) => format!("live heap: up to {max} sampled objects, checked after each collection"),
            (Some(max), false) => format!("live heap: up to {max} sampled objects, checked every second"),
            (None, _) => "live heap off".to_string(),
        };
        format!("{alloc}; {locks}; {live}")
    }
}

/// Where a callback hands its event, and what it needs to build it.
pub struct Sink<'a> {
    pub shared: &'a Shared,
    /// Thins sampled allocations to `alloc_rate=`.
    pub throttle: &'a Throttle,
    pub jvmti: Jvmti,
    /// Most frames kept per event (`depth=`).
    pub depth: usize,
}

impl Sink<'_> {
    /// Whether events are recorded now: not while sampling is paused
    /// (`/api/sampling`) or after the sampler stopped for good, so a pause
    /// costs the allocating threads no stack walk and fills no queue.
    fn recording(&self) -> bool {
        self.shared.control.is_running() && !self.shared.finished.load(std::sync::atomic::Ordering::Acquire)
    }

    /// `SampledObjectAlloc` of `object`, of `class` and `size` bytes, on
    /// the allocating thread. With the live heap on, a recorded allocation
    /// carries a weak reference to its object (`pcct_sampler::live_heap`).
    pub fn allocation(&self, jni: Jni, object: jobject, class: jclass, size: i64, interval: u64) {
        if !self.recording() {
            return;
        }
        let size = size.max(1) as u64;
        let now = now_ns();
        let seed = now ^ size.rotate_left(32);
        let Some(kept) = self.throttle.admit(now, uniform_from(seed)) else {
            Counters::add(&self.shared.counters.allocations_thinned, 1);
            return;
        };
        let weight = allocation_weight(size, interval, kept, uniform_from(seed.rotate_left(17) ^ 0x5DEE_CE66));
        let live = self.shared.live.is_on().then_some((jni, object));
        self.push(jni.raw() as usize, EventKind::Allocation, class, weight, live);
    }

    /// `MonitorContendedEnter`: the thread starts to wait.
    pub fn monitor_waiting(&self) {
        if !self.recording() {
            return;
        }
        // 0 means "not waiting": a clock reading is never 0 after boot.
        let _ = self.jvmti.set_own_thread_value(now_ns().max(1));
    }

    /// `MonitorContendedEntered` of `object`'s monitor: the wait is over.
    /// A wait whose start was not seen (events enabled meanwhile) is skipped.
    pub fn monitor_entered(&self, jni: Jni, object: jobject) {
        let started = self.jvmti.own_thread_value();
        if started == 0 {
            return;
        }
        let _ = self.jvmti.set_own_thread_value(0);
        if !self.recording() {
            return;
        }
        let waited = now_ns().saturating_sub(started);
        let class = jni.object_class(object);
        self.push(jni.raw() as usize, EventKind::Monitor, class, pcct::Weight::lock_wait(waited), None);
        jni.delete_local_ref(class);
    }

    /// A park on a java.util.concurrent lock of `class` that waited
    /// `waited` ns (`parks.rs`): recorded as a monitor wait is, on the
    /// thread that waited, after it woke.
    pub fn lock_parked(&self, jni: Jni, class: jclass, waited: u64) {
        if !self.recording() {
            return;
        }
        self.push(jni.raw() as usize, EventKind::Monitor, class, pcct::Weight::lock_wait(waited), None);
    }

    /// Queues the event; its time on this thread is measured
    /// (`callback_time`), so the agent's cost includes the callbacks'. On the
    /// monotonic clock, not the thread's CPU clock: reading that clock is a
    /// system call, and a system call on a Java thread is where a pending
    /// sampling signal is taken, so two per event drew samples from the
    /// tens of microseconds of work before them onto the allocation site
    /// (about 0.5 % of H2's samples). A callback is short and seldom
    /// preempted, so its wall time is about its CPU time, and never less.
    fn push(&self, env: usize, kind: EventKind, class: jclass, weight: pcct::Weight, live: Option<LiveRef>) {
        let started = now_ns();
        let cpu = cycles::thread_cpu_ns();
        self.build_and_queue(env, kind, class, weight, live);
        cycles::add(Part::EventCpuNs, cycles::thread_cpu_ns().wrapping_sub(cpu));
        cycles::add(Part::EventCallbacks, 1);
        let spent = now_ns().saturating_sub(started);
        self.shared.counters.callback_time.observe(spent);
    }

    fn build_and_queue(&self, env: usize, kind: EventKind, class: jclass, weight: pcct::Weight, live: Option<LiveRef>) {
        let Some(queue) = self.shared.events.as_ref() else { return };
        // A full queue would drop the event anyway: not worth a stack walk
        // (a starved sampler must not make every allocation slower). Its
        // thread's previous event stays the one the sampler knows.
        if queue.is_full() {
            self.shared.counters.count_event(kind, &weight, false);
            return;
        }
        // `try_with`: no walk (JVMTI instead) if the thread-local is gone
        // already, in a callback during the thread's very end; taken only
        // if no callback of this thread holds it (none should).
        let own = OWN_EVENTS.try_with(|own| {
            let mut own = own.try_borrow_mut().ok()?;
            let own = own.get_or_insert_with(|| OwnEvents::new(self.depth + 1));
            let event = self.own_event(own, env, kind, class, weight);
            let pushed = event.is_some_and(|event| self.queue(queue, with_object(event, live)));
            own.pushed(pushed);
            Some(())
        });
        if own.ok().flatten().is_none() {
            if let Some(event) = self.jvmti_event(kind, class, weight) {
                self.queue(queue, with_object(event, live));
            }
        }
    }

    /// Pushes `event`; a full queue drops it, counted with its weight (and
    /// its weak reference deleted).
    fn queue(&self, queue: &pcct_sampler::events::EventQueue, event: (Event, Option<Jni>)) -> bool {
        let (event, jni) = event;
        let (kind, weight, object) = (event.kind, event.weight, event.object);
        let pushed = queue.push(event);
        if !pushed {
            self.shared.counters.count_event(kind, &weight, false);
            if let Some(jni) = jni {
                jni.delete_weak_global_ref(object as jobject);
            }
        }
        pushed
    }

    /// The event, from the thread's own walk (its frames above those it
    /// shares with the thread's previous event, when the sampler has that
    /// one), else from JVMTI (whole). `None`: no stack (counted).
    fn own_event(
        &self,
        own: &mut OwnEvents,
        env: usize,
        kind: EventKind,
        class: jclass,
        weight: pcct::Weight,
    ) -> Option<Event> {
        let Some(NewFrames { frames, truncated, shared }) = own.stack(env, self.depth, self.shared.config.kinds) else {
            own.unchain();
            return self.jvmti_event(kind, class, weight).map(|event| Event { chain: own.chain(0), ..event });
        };
        Counters::add(&self.shared.counters.event_walks_vm, 1);
        Counters::add(&self.shared.counters.event_frames_shared, shared as u64);
        let chain = own.chain(shared as u32);
        let class = own.class_name(class, &self.shared.counters, || self.class_name(class));
        Some(Event { kind, tid: own.walks.tid(), chain, frames, truncated, class, weight, object: 0 })
    }

    /// A whole event from JVMTI's `GetStackTrace` (pcct's walker was not
    /// ready or stopped early); `None`, counted, if that failed too.
    fn jvmti_event(&self, kind: EventKind, class: jclass, weight: pcct::Weight) -> Option<Event> {
        Counters::add(&self.shared.counters.event_walks_jvmti, 1);
        let Ok((frames, truncated)) = self.jvmti.own_stack_trace(self.depth) else {
            self.shared.counters.count_event(kind, &weight, false);
            return None;
        };
        let class = self.class_name(class);
        Some(Event { kind, tid: current_tid(), chain: Chain::default(), frames, truncated, class, weight, object: 0 })
    }

    /// The class's name as Java writes it.
    fn class_name(&self, class: jclass) -> Arc<str> {
        if class.is_null() {
            return Arc::from(UNKNOWN_CLASS);
        }
        let name = self.jvmti.class_signature(class).map_or_else(|_| UNKNOWN_CLASS.to_string(), |s| java_type_name(&s));
        Arc::from(name)
    }
}

/// The allocating thread's JNI and the allocated object, for the live heap.
type LiveRef = (Jni, jobject);

/// `event` with a weak reference to the allocated object of `live`, if
/// the VM gave one, and the JNI that deletes it if the event is dropped.
fn with_object(mut event: Event, live: Option<LiveRef>) -> (Event, Option<Jni>) {
    let Some((jni, object)) = live else { return (event, None) };
    let weak = jni.new_weak_global_ref(object);
    if weak.is_null() {
        jni.clear_exception();
        return (event, None);
    }
    event.object = weak as u64;
    (event, Some(jni))
}

/// An event's frames from the thread's own walk.
struct NewFrames {
    /// Leaf first, above the `shared` ones.
    frames: Vec<(usize, i32)>,
    /// The stack was deeper than `depth`.
    truncated: bool,
    /// Frames at the bottom the stream's previous event has too.
    shared: usize,
}

/// What a thread's callbacks keep between its events: the walks of its
/// own stack (`OwnWalks`: from the thread's last Java frame, reusing the
/// frames that did not change since its previous event's walk, verified on
/// the stack), its stream of events, whether the sampler has the stack
/// of the previous walk (then an event sends only the frames above those it
/// shares with it), and the names it made for classes. Measured on javac
/// before chaining (a whole callback, CPU time): 155-162 µs with
/// `GetStackTrace`, 126 with pcct's walker and no history, 90 with the
/// history.
struct OwnEvents {
    walks: OwnWalks,
    stream: Arc<EventStream>,
    /// Events pushed to the sampler (the next one's number).
    pushed: u32,
    /// The previous walk made the stream's last pushed event, whole
    /// enough to chain to (not truncated).
    chained: bool,
    /// This walk's event can be chained to (until it is known whether it
    /// was pushed).
    chainable: bool,
    names: ClassNames,
}

impl OwnEvents {
    fn new(capacity: usize) -> OwnEvents {
        OwnEvents {
            walks: OwnWalks::new(capacity),
            stream: EventStream::new(),
            pushed: 0,
            chained: false,
            chainable: false,
            names: ClassNames::default(),
        }
    }

    /// `class`'s name: the one this thread made before for the same class
    /// (`hotspot::classes`), else `make`'s, kept for the next time.
    fn class_name(&mut self, class: jclass, counters: &Counters, make: impl FnOnce() -> Arc<str>) -> Arc<str> {
        let mut buffer = [0u8; MAX_NAME];
        let Some(symbol) = class_symbol_here(class as usize, &mut buffer) else { return make() };
        if let Some(name) = self.names.get(&symbol) {
            Counters::add(&counters.event_classes_reused, 1);
            return name;
        }
        let name = make();
        if &*name != UNKNOWN_CLASS {
            self.names.insert(&symbol, Arc::clone(&name));
        }
        name
    }

    /// The new frames (leaf first; their kinds packed when `kinds`),
    /// whether the stack was deeper than `depth`, and how many frames at
    /// its bottom the previous event of the stream has too (0: the frames
    /// are the whole stack). `None` when pcct's walker cannot walk it.
    fn stack(&mut self, env: usize, depth: usize, kinds: bool) -> Option<NewFrames> {
        let walk = self.walks.walk(env)?;
        let truncated = walk.full || walk.frames.len() > depth;
        let kept = &walk.frames[..walk.frames.len().min(depth)];
        // Whole when the sampler asked for it (it forgot the stream) or
        // when this stack or the previous one was cut at `depth`.
        let asked = self.stream.take_whole();
        let shared = if self.chained && !asked && !truncated { walk.reused.min(kept.len()) } else { 0 };
        let new = &kept[..kept.len() - shared];
        self.chainable = !truncated;
        Some(NewFrames { frames: new.iter().map(|frame| frame.raw(kinds)).collect(), truncated, shared })
    }

    /// This event's place in the stream, sharing `shared` frames.
    fn chain(&self, shared: u32) -> Chain {
        let handle = (shared == 0).then(|| Arc::clone(&self.stream));
        Chain { stream: self.stream.id(), handle, seq: self.pushed, shared }
    }

    /// The event was not made by the walker: the next one comes whole.
    fn unchain(&mut self) {
        self.chainable = false;
    }

    /// After the event of the last walk was pushed or dropped.
    fn pushed(&mut self, pushed: bool) {
        if pushed {
            self.pushed = self.pushed.wrapping_add(1);
        }
        self.chained = pushed && self.chainable;
        self.chainable = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_line_says_what_is_reported() {
        let both =
            Reported { alloc_interval: Some(524_288), alloc_rate: None, locks: true, live: None, gc_events: false };
        assert!(both.any());
        assert_eq!(
            both.describe(),
            "allocations sampled every 524288 bytes on average, all recorded; contended monitor enters recorded; live heap off"
        );
        let live = Reported { live: Some(100), gc_events: true, ..both };
        assert!(live.describe().ends_with("live heap: up to 100 sampled objects, checked after each collection"));
        let throttled = Reported { alloc_rate: Some(150), ..both };
        assert!(throttled.describe().contains("about 150 a second recorded at most"), "{}", throttled.describe());
        assert!(!Reported::default().any());
        assert_eq!(Reported::default().describe(), "allocations not sampled; monitors not recorded; live heap off");
    }
}
