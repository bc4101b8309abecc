//! Where the signal handler's time goes: processor cycles (`rdtsc`) spent
//! in each part of the handler and of the walk, summed over the run (and
//! the event callbacks' CPU time, on their threads' CPU clocks), for
//! the breakdowns in BENCHMARKS.md ("The handler with the thread's own
//! timer, against the agent of the day" and "Two caches for the handler's
//! misses").
//!
//! Only a build with the `cycles` feature counts (`cargo build --release -p
//! pcct-agent --features pcct-sampler/cycles`); the agent then prints the
//! sums as one JSON line on stderr at VM death, `pcct cycles {...}`, which
//! `benches/jvm/handler_ab.py --cycles` reads. Without the feature (the
//! default, and every build that ships) each function here is empty and
//! inlined, and the compiler removes the calls and the `rdtsc`s with them.
//!
//! Async-signal-safe: a counter is a static atomic, added to with one
//! relaxed `fetch_add`; `rdtsc` is one instruction.

use std::sync::atomic::{AtomicU64, Ordering};

/// Declares an enum once: its variants, and the names the report gives
/// them (in a constant, in the enum's order).
macro_rules! named {
    ($(#[$what:meta])* $enum:ident, $names:ident: $($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        $(#[$what])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $enum {
            $($(#[$doc])* $variant,)*
        }

        /// Each variant's name in the report, in the enum's order.
        const $names: &[&str] = &[$($name,)*];
    };
}

named! {
    /// A counted part of the handler or of a walk.
    Part, NAMES:
    /// Handler calls that reached the end (walked or not).
    Handlers = "handlers",
    /// Cycles from the handler's start to its closing clock read's end.
    Handler = "handler_cycles",
    /// Cycles of the opening read of the thread's CPU clock.
    FirstClock = "first_clock_cycles",
    /// Cycles of `gettid`.
    Gettid = "gettid_cycles",
    /// Cycles of the closing read of the thread's CPU clock.
    ClosingClock = "closing_clock_cycles",
    /// Walks by pcct's walker.
    Walks = "walks",
    /// Their cycles.
    Walk = "walk_cycles",
    /// Cycles of prefetching what the previous walk read.
    Prefetch = "prefetch_cycles",
    /// Cycles of looking for, and verifying, the previous walk's frames.
    Reuse = "reuse_cycles",
    /// Walks that ended by taking the previous walk's frames.
    Reused = "reused_walks",
    /// Verifications of the previous walk's frames from a matching frame
    /// down (at most two a walk).
    ReuseTries = "reuse_tries",
    /// Those that found a frame below changed.
    ReuseRefused = "reuse_refused",
    /// A top compiled frame decoded (not from the frame cache): cycles of
    /// finding its blob in the segment map.
    TopFind = "top_find_cycles",
    /// Of its PcDesc search and scope decoding.
    TopScopes = "top_scopes_cycles",
    /// Of its scopes' jmethodIDs.
    TopMethodIds = "top_method_id_cycles",
    /// Event callbacks that built an event (walked a stack).
    EventCallbacks = "event_callbacks",
    /// Their CPU time on their threads, in nanoseconds (the thread's CPU
    /// clock, a system call on each side: not in a build that ships, where
    /// a system call on a Java thread is where a pending sampling signal
    /// is taken).
    EventCpuNs = "event_cpu_ns",
}

named! {
    /// How a frame was walked.
    FrameKind, KINDS:
    Interpreted = "interpreted",
    Native = "native",
    /// A compiled frame from the frame cache.
    CachedFrame = "cached_frame",
    /// Found in the code heap's segment map (nmethods and stubs).
    Blob = "blob",
    /// In the code heap, but in no blob.
    Unknown = "unknown",
}

static COUNTS: [AtomicU64; NAMES.len()] = [const { AtomicU64::new(0) }; NAMES.len()];
/// [top, below][kind] -> [frames, cycles].
static FRAMES: [[[AtomicU64; 2]; KINDS.len()]; 2] =
    [const { [const { [AtomicU64::new(0), AtomicU64::new(0)] }; KINDS.len()] }; 2];

/// The time-stamp counter (0 without the feature).
#[inline(always)]
pub fn now() -> u64 {
    #[cfg(feature = "cycles")]
    {
        crate::tsc::now()
    }
    #[cfg(not(feature = "cycles"))]
    0
}

/// The calling thread's CPU clock in nanoseconds (0 without the feature).
#[inline(always)]
pub fn thread_cpu_ns() -> u64 {
    #[cfg(feature = "cycles")]
    {
        crate::slots::current_thread_cpu_ns()
    }
    #[cfg(not(feature = "cycles"))]
    0
}

/// Adds the cycles since `started` (a [`now`]) to `part`.
#[inline(always)]
pub fn since(part: Part, started: u64) {
    if cfg!(feature = "cycles") {
        add(part, now().wrapping_sub(started));
    }
}

/// Adds `value` to `part`.
#[inline(always)]
pub fn add(part: Part, value: u64) {
    if cfg!(feature = "cycles") {
        if let Some(counter) = COUNTS.get(part as usize) {
            counter.fetch_add(value, Ordering::Relaxed);
        }
    }
}

/// Counts a frame of `kind`, walked in the cycles since `started`.
#[inline(always)]
pub fn frame(top: bool, kind: FrameKind, started: u64) {
    if cfg!(feature = "cycles") {
        if let Some([frames, cycles]) = FRAMES[usize::from(!top)].get(kind as usize) {
            frames.fetch_add(1, Ordering::Relaxed);
            cycles.fetch_add(now().wrapping_sub(started), Ordering::Relaxed);
        }
    }
}

/// The sums as one JSON object (`None` without the feature): each part's
/// count or cycles, and for top frames and frames below, per kind,
/// `[frames, cycles]`.
pub fn report() -> Option<String> {
    if !cfg!(feature = "cycles") {
        return None;
    }
    let mut fields: Vec<String> = NAMES
        .iter()
        .zip(&COUNTS)
        .map(|(name, count)| format!("\"{name}\":{}", count.load(Ordering::Relaxed)))
        .collect();
    for (place, kinds) in ["top", "below"].iter().zip(&FRAMES) {
        let pairs: Vec<String> = KINDS
            .iter()
            .zip(kinds)
            .map(|(kind, [frames, cycles])| {
                format!("\"{kind}\":[{},{}]", frames.load(Ordering::Relaxed), cycles.load(Ordering::Relaxed))
            })
            .collect();
        fields.push(format!("\"{place}\":{{{}}}", pairs.join(",")));
    }
    Some(format!("{{{}}}", fields.join(",")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_every_part_when_counting_and_is_absent_otherwise() {
        add(Part::Handlers, 1);
        frame(true, FrameKind::Blob, now());
        let Some(line) = report() else {
            // Only a build without the feature reports nothing.
            #[cfg(feature = "cycles")]
            panic!("no report from a counting build");
            #[cfg(not(feature = "cycles"))]
            return;
        };
        assert!(line.starts_with('{') && line.ends_with('}'), "{line}");
        for name in NAMES {
            assert!(line.contains(&format!("\"{name}\":")), "{name} in {line}");
        }
        assert!(!line.contains("\"handlers\":0,"), "{line}");
        assert!(line.contains("\"top\":{\"interpreted\":[") && line.contains("\"below\":{"), "{line}");
    }
}
