//! The JVMTI events pcct records beside its samples: sampled allocations
//! (`SampledObjectAlloc`) and contended monitor enters
//! (`MonitorContendedEnter` / `MonitorContendedEntered`). Each callback,
//! on the Java thread the event happened on, reads that thread's own stack
//! (`GetStackTrace`, safe there) and the event's class, and hands an
//! [`Event`] to the sampler through its lock-free queue; the sampler names
//! and records it at its next tick (`pcct_sampler::events`).
//!
//! What a callback never does: take the profile lock or any lock the
//! sampler waits for (the queue's push never blocks; a full queue drops
//! the event, counted), run Java code, or keep a JNI reference. What it
//! costs: one stack walk of the thread's own stack, one class name, two
//! small allocations, at most once per sampled allocation (every 512 KiB
//! allocated by default) and once per contended enter. With `alloc=off`
//! and `locks=off` the capabilities are not even asked for.
//!
//! A contended enter's wait is the time between the two events, kept in
//! JVMTI's thread-local storage of the thread (a virtual thread has its
//! own, so a wait across a remount is still one wait).

#![forbid(unsafe_code)]

use pcct_sampler::counters::Counters;
use pcct_sampler::events::{allocation_weight, uniform_from, Event, EventKind, Throttle};
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
    /// This thread's event walks (made at its first recorded event, freed
    /// when it ends).
    static OWN_WALKS: std::cell::RefCell<Option<OwnWalks>> = const { std::cell::RefCell::new(None) };
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
        format!("{alloc}; {locks}")
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

    /// `SampledObjectAlloc` of an object of `class` and `size` bytes, on
    /// the allocating thread.
    pub fn allocation(&self, env: usize, class: jclass, size: i64, interval: u64) {
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
        self.push(env, EventKind::Allocation, class, weight);
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
        self.push(jni.raw() as usize, EventKind::Monitor, class, pcct::Weight::lock_wait(waited));
        jni.delete_local_ref(class);
    }

    /// Queues the event; its time on this thread is measured
    /// (`callback_time`), so the agent's cost includes the callbacks'. On the
    /// monotonic clock, not the thread's CPU clock: reading that clock is a
    /// system call, and a system call on a Java thread is where a pending
    /// sampling signal is taken, so two per event drew samples from the
    /// tens of microseconds of work before them onto the allocation site
    /// (about 0.5 % of H2's samples). A callback is short and seldom
    /// preempted, so its wall time is about its CPU time, and never less.
    fn push(&self, env: usize, kind: EventKind, class: jclass, weight: pcct::Weight) {
        let started = now_ns();
        self.build_and_queue(env, kind, class, weight);
        let spent = now_ns().saturating_sub(started);
        self.shared.counters.callback_time.observe(spent);
    }

    fn build_and_queue(&self, env: usize, kind: EventKind, class: jclass, weight: pcct::Weight) {
        let Some(queue) = self.shared.events.as_ref() else { return };
        // A full queue would drop the event anyway: not worth a stack walk
        // (a starved sampler must not make every allocation slower).
        if queue.is_full() {
            self.shared.counters.count_event(kind, &weight, false);
            return;
        }
        let Some((frames, truncated)) = self.own_stack(env) else {
            self.shared.counters.count_event(kind, &weight, false);
            return;
        };
        let class = if class.is_null() {
            UNKNOWN_CLASS.to_string()
        } else {
            self.jvmti.class_signature(class).map_or_else(|_| UNKNOWN_CLASS.to_string(), |s| java_type_name(&s))
        };
        // A full queue drops the event, counted here with its weight.
        let tid = current_tid();
        if !queue.push(Event { kind, tid, frames, truncated, class, weight }) {
            self.shared.counters.count_event(kind, &weight, false);
        }
    }

    /// The thread's own stack, leaf first, and whether it was deeper than
    /// `depth`: walked by pcct's walker from the thread's last Java frame,
    /// reusing what the thread's previous event walk saw (`OwnWalks`, kept
    /// per thread), else by JVMTI's `GetStackTrace`. Measured on javac (a
    /// whole callback, CPU time): 155-162 µs with `GetStackTrace`, 126
    /// with pcct's walker and no history, 90 with the history (of which
    /// the walk about 50, the class's name about 16).
    fn own_stack(&self, env: usize) -> Option<(Vec<(usize, i32)>, bool)> {
        let counters = &self.shared.counters;
        // `try_with`: no walk (JVMTI instead) if the thread-local is gone
        // already, in a callback during the thread's very end.
        let walked = OWN_WALKS.try_with(|walks| {
            // Taken only if no callback of this thread holds it (none should).
            let mut walks = walks.try_borrow_mut().ok()?;
            let walks = walks.get_or_insert_with(|| OwnWalks::new(self.depth + 1));
            let (frames, full) = walks.walk(env)?;
            let kept = &frames[..frames.len().min(self.depth)];
            let truncated = full || frames.len() > self.depth;
            Some((kept.iter().map(|frame| (frame.method_id as usize, frame.lineno)).collect(), truncated))
        });
        let walked = walked.ok().flatten();
        if walked.is_some() {
            Counters::add(&counters.event_walks_vm, 1);
            return walked;
        }
        Counters::add(&counters.event_walks_jvmti, 1);
        self.jvmti.own_stack_trace(self.depth).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_line_says_what_is_reported() {
        let both = Reported { alloc_interval: Some(524_288), alloc_rate: None, locks: true };
        assert!(both.any());
        assert_eq!(
            both.describe(),
            "allocations sampled every 524288 bytes on average, all recorded; contended monitor enters recorded"
        );
        let throttled = Reported { alloc_rate: Some(150), ..both };
        assert!(throttled.describe().contains("about 150 a second recorded at most"), "{}", throttled.describe());
        assert!(!Reported::default().any());
        assert_eq!(Reported::default().describe(), "allocations not sampled; monitors not recorded");
    }
}
