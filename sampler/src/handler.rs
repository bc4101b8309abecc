//! The sampling signal handler.
//!
//! # Rules (async-signal safety) — every line of this module keeps them
//!
//! The handler interrupts a Java thread at an arbitrary instruction: inside
//! malloc, holding a lock, in the middle of a GC barrier. It therefore:
//!
//! 1. **allocates nothing** — no `Box`, `Vec`, `String`, `format!`, no
//!    panicking code paths that format (only `wrapping_*` arithmetic, no
//!    indexing that can panic: the slot index is checked first);
//! 2. **takes no lock** — only atomics (loads, stores, compare-and-swap);
//! 3. **logs nothing and formats nothing**;
//! 4. **calls into no JNI or JVMTI function** — only AsyncGetCallTrace,
//!    which is designed for signal handlers, pcct's own walker
//!    (`hotspot::walker`), which reads HotSpot's frames and structures,
//!    and, with `native=on`, the native unwinder (`native_frames`:
//!    framehop through `pcct-native`, with a cache from a fixed pool and
//!    a snapshot of the modules published ahead of time);
//! 5. **touches no lazily initialised state and no thread-locals** — the
//!    slot table, the counters and the frame cache all threads share
//!    (`hotspot::cache`) are `static` atomics initialised at compile
//!    time (so are the cycle counters of a `cycles` build,
//!    [`crate::cycles`], added to with relaxed atomics around `rdtsc`);
//!    the thread's slot comes from the signal's `si_value` (the
//!    sampler's signal) or from the static tables of timer descriptors
//!    (`cpu_timer`, the thread's own timer's signal, by its `si_fd`: the
//!    value, and the timer's perf page), checked against the slot's
//!    generation (with its state, in one compare-and-swap) and the thread
//!    id (`gettid`); the processor counter's rate is a static atomic
//!    (`tsc`);
//! 6. **saves and restores `errno`** ([`ErrnoGuard`]);
//! 7. **writes only into fixed-size buffers** allocated at registration or
//!    by the sampler thread (the walkers get a region of the slot's buffer,
//!    or one it borrowed from the slots' pool, and its capacity) and into the
//!    static frame cache, whose entries it takes with one compare-and-swap
//!    or leaves (it never waits for another thread);
//! 8. **reads VM memory only through fault-safe reads** — every read pcct's
//!    walker makes goes through `hotspot::safe_read`, whose fault handler
//!    turns a bad pointer into a failed read (the walk stops, counted),
//!    never a crash; the walker bounds every loop and checks every address
//!    it follows (the thread's stack, the code heaps, jmethodIDs that point
//!    back to their method). So does the read of a timer's perf page
//!    and its ring of kernel call chains (`kernel_frames`), which the
//!    sampler may unmap meanwhile. It also issues prefetch
//!    hints for VM addresses (`PREFETCHT0`: no value is read, and no
//!    address, however bad, can fault).
//!
//! Other system calls used: `gettid` and `clock_gettime` (both
//! async-signal-safe; most of a timer's handlers read no clock: "Timing
//! itself", below), `getrusage` (a plain system call, made through
//! `syscall`: the sampler's signals only, after a filtered sample and when
//! a thread with unchanged registers used CPU; "Has the thread run?"), and
//! `futex(FUTEX_WAKE)` when a timer's handler rings the sampler's doorbell
//! (`doorbell`: its slot half full, the pool running low or a signal
//! refused) while the sampler sleeps on it. The process id a signal must
//! come from is read once, when the handler is installed ([`remember_process_id`]), not by a
//! `getpid` per signal (a system call costs about 1.4 µs on the virtual
//! machines of BENCHMARKS.md).
//!
//! # The walk
//!
//! With `kernel=on`, a timer's signal's kernel frames come first (the call
//! chain its timer recorded when the thread was in the kernel). With
//! `native=on`, the native frames come next: from the interrupted
//! registers, when they are outside the code HotSpot generated, to the
//! thread's last Java frame (`native_frames`); a thread that runs no Java
//! code has only those. Then pcct's own HotSpot walker
//! (`hotspot::walker`) walks, from the interrupted registers or the
//! thread's last Java frame, after the native frames; when it stops
//! before the bottom of the stack, AsyncGetCallTrace walks, into the buffer
//! after the frames pcct's walker read, so that if it fails too the top of
//! the stack is still recorded (under a `[break_<reason>]` pseudo-frame).
//!
//! # Whose signal?
//!
//! Two senders ask for samples. With `timer=thread` (cpu mode, the
//! default) each thread's own CPU timer (`cpu_timer`) signals it after
//! every interval of its CPU time, from its own CPU: the signal comes with
//! `si_code` `POLL_IN` and the timer's descriptor, and it takes a place in
//! the slot (the first if its previous samples were drained, else behind
//! them, writing a region of the frame buffer they leave free, the slot's
//! own or one borrowed from the pool; `slots`): the sampler asks for
//! nothing, it only drains.
//! Such a thread has run and was on a CPU, so the two checks below are
//! skipped; the handler counts the signal in the slot (taken or refused,
//! each stands for an interval of the thread's CPU: the sample's weight,
//! `Slot::timer_signals`, below). Otherwise the sampler signals the thread
//! itself (`SI_QUEUE`, the slot in `si_value`), and the checks below apply.
//!
//! # Timing itself, and a timer's sample's weight
//!
//! The handler measures its own time ([`HandlerClock`]): for the sampler's
//! signal by the thread's CPU clock, read at its start (the checks below
//! need the reading) and at its end. For a timer's signal, by the
//! processor's counter (`rdtsc`, `tsc`) from its first instruction to its
//! last, which is its CPU time if the thread stayed on its CPU: the timer's
//! perf page's sequence word, read at both ends with a fault-safe read
//! (`cpu_timer::switches`), moves when the thread is switched out, and such
//! a call is timed by the CPU clock if it read it at its start (below),
//! else counted ([`HANDLER_UNMEASURED`], `handler_switched`) rather than
//! timed.
//!
//! A timer's sample weighs the intervals its signals stand for, counted in
//! the slot; the handler reads the thread's CPU clock (one system call) only
//! on every [`CPU_CLOCK_EVERY`]th signal and on a signal that comes over one
//! and a half intervals of the counter after the previous one's handler
//! ended ([`needs_cpu_clock`]): signals may have been lost (one still
//! pending when the next interval ran out, in the kernel, merges with it: a
//! long system call's intervals arrive as one signal at its return; a timer
//! late in a virtual machine skips intervals), or the thread waited for a
//! CPU, which only the clock tells apart. The sampler then weighs the
//! sample by that reading, so the intervals' sum stays on the thread's CPU
//! clock, and intervals lost go to the sample right after them, where the
//! thread was when they ran out, as when every handler read the clock.
//! On a quiet machine most handlers thus make none of the two system calls
//! (1-3 µs each with the kernel cold after an interval of Java;
//! BENCHMARKS.md, "The handler without system calls"); on a busy one, a
//! thread that waited for a CPU reads the clock once after the wait.
//! Before the sampler thread has calibrated the counter (its first 20 ms),
//! or without an invariant counter or a perf page, a timer's handler reads
//! the CPU clock at its start and end, as the sampler's does.
//!
//! # Has the thread run?
//!
//! Equal register checksums mean the thread has not run (HPROF's
//! ThreadHasRun) — except for a thread that keeps making short system
//! calls: a signal reaches a running thread tens of microseconds after it is
//! sent, usually on its way out of the kernel, where its registers are the
//! same at every exit from the same call (measured: a thread reading its CPU
//! clock in a loop had 2986 of 3030 signals "unchanged"). So the handler
//! also asks how much CPU the thread used between its previous handler's
//! return and the moment the sampler decided to signal it (the sampler reads
//! the thread's CPU clock then, and leaves the reading in the slot): a
//! sample is filtered only when the checksum is unchanged *and* that CPU
//! time is below the sampler's idle threshold (the `idle` share of an
//! interval, at least [`RAN_CPU_NS`]; [`set_ran_threshold_ns`]): the same
//! threshold below which the CPU-clock prefilter calls a thread idle, so
//! a thread the prefilter let through is not filtered for the same reason
//! and its CPU is not lost.
//!
//! The window ends at the request, not at this handler's start, because
//! delivering a signal to a blocked thread is itself charged to it: about
//! 10 µs at the median, but 100-900 µs in about 0.5% of deliveries on a
//! loaded VM (measured on a parked thread at 1 ms with `prefilter=off`).
//! Counting delivery made those outliers look like running threads, and a
//! parked thread was recorded in `Unsafe.park`. A thread that keeps making
//! system calls runs for most of the interval and still counts as running.
//! Signals sent without a reading (tests that signal by hand) fall back to
//! the thread's CPU clock at this handler's start. The handler's own stack
//! walk is never counted.
//!
//! The kernel still charges a blocked thread 100-300 µs between a
//! handler's return and the next request in a few ticks in a thousand on a
//! loaded VM, for its return to the wait and the futex restart, which
//! take 5-10 µs at the median (measured on that parked thread with 3 to 5
//! JVMs on 2 cores: it was recorded in `Unsafe.park` 4-11 times in 2000-
//! 3000 ticks). So a thread with unchanged registers that used more CPU than the
//! threshold is still filtered when it only went back to its wait: after a
//! handler that filtered its sample (and read the thread's voluntary
//! context switches with `getrusage`), exactly one more voluntary switch,
//! its block after that handler's signal woke it ([`blocked_once`]). A
//! thread woken by anything else and blocked again at the same place has
//! made two or more; one that kept making system calls, none.
//!
//! # Was the thread on a CPU when it was signalled?
//!
//! A signal sent to a thread that is waiting for a CPU (preempted) reaches
//! it when it next runs, with the registers of the moment it was switched
//! out. The scheduler switches a thread out mostly where it enters the
//! kernel, at a system call's exit, so those samples pile up on system
//! calls. The handler measures the wall time since the request that the
//! thread did not spend on a CPU (the monotonic clock's advance less the
//! thread's CPU clock's) and, where the sampler allows it (cpu mode, the
//! thread's previous samples not all deferred), defers a sample whose wait
//! is long ([`OFF_CPU_DEFER_NS`]): no walk, [`RESULT_DEFERRED`]. Unless
//! the thread ran on after the request ([`RAN_IN_KERNEL_NS`] of CPU or
//! more) without taking the signal: a thread in user mode takes it within
//! microseconds, so that thread was in one system call all along, switched
//! out at its exit, and the stack there is where that CPU went. Deferring
//! it sent the CPU of SyscallTruth's 32 MiB reads to the thread's next
//! sample, in `stat`: with two such JVMs on two vCPUs `readBig` had 54-77 %
//! against 78 % (BENCHMARKS.md, "Long system calls").
//!
//! A test with a counting global allocator
//! (`tests/handler_allocates_nothing.rs`) checks rule 1 on the paths of
//! pcct's walker and AsyncGetCallTrace; the native unwinder's walks are
//! checked by `native/tests/allocates_nothing.rs`, and the source scan of
//! the same test covers every file the handler runs, `native_frames.rs`,
//! `kernel_frames.rs` and the native crate's `unwind.rs` included.

use std::ffi::c_void;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use crate::agct::{self, CallFrame, CallTrace};
use crate::cpu_timer;
use crate::cycles::{self, Part};
use crate::doorbell::DOORBELL;
use crate::hotspot::walker::{Broken, Ending};
use crate::hotspot::{self, cache::FrameCache, memory::VmMemory, walker};
use crate::kernel_frames;
use crate::native_frames;
use crate::registers::{self, REGISTER_COUNT};
use crate::slots::{
    HandlerResult, Place, Slot, HANDLER_UNMEASURED, MAX_THREADS, NO_SWITCHES, OWN_REGIONS, RESULT_DEFERRED,
    RESULT_FILTERED, RESULT_NATIVE_THREAD, RESULT_NO_AGCT, RESULT_NO_REGION, RING_AT_WAITING, SLOTS,
};
use crate::tsc;

/// Signals that did not come from the sampler (no pcct `si_value`).
pub(crate) static STRAY_SIGNALS: AtomicU64 = AtomicU64::new(0);
/// pcct signals that arrived for a slot no longer waiting for them (thread
/// gone, id reused, request withdrawn).
pub(crate) static STALE_SIGNALS: AtomicU64 = AtomicU64::new(0);
/// Signals of a thread's CPU timer that found its slot busy (no place
/// left, or the sampler draining it).
pub(crate) static BUSY_TIMER_SIGNALS: AtomicU64 = AtomicU64::new(0);

/// This process's id, which the sampler's signals come from (0 until the
/// handler is installed: every signal is then stray).
static PROCESS_ID: AtomicI32 = AtomicI32::new(0);

/// Reads the process id for the handler's check of a signal's sender; the
/// installer calls it before installing the handler.
pub(crate) fn remember_process_id() {
    // SAFETY: getpid cannot fail.
    PROCESS_ID.store(unsafe { libc::getpid() }, Ordering::Relaxed);
}

/// Least CPU time a thread with unchanged registers must have used to count
/// as running, whatever the interval: more than returning from a signal and
/// blocking again costs a blocked thread (a few µs).
pub const RAN_CPU_NS: u64 = 50_000;

/// CPU time a thread with unchanged registers must have used since its
/// previous handler to count as running. Set by the sampler at every tick
/// (the interval can change); the handler only loads it.
static RAN_THRESHOLD_NS: AtomicU64 = AtomicU64::new(100_000);

/// Sets the CPU time (at least [`RAN_CPU_NS`]) a thread with unchanged
/// registers must have used to count as running: the sampler's idle
/// threshold, `idle` x interval.
pub fn set_ran_threshold_ns(threshold_ns: u64) {
    RAN_THRESHOLD_NS.store(threshold_ns.max(RAN_CPU_NS), Ordering::Relaxed);
}

/// `si_code` of signals sent with `rt_tgsigqueueinfo` by the sampler.
pub(crate) const SI_QUEUE: i32 = -1;
/// Marks the sampler's `si_value` (top 16 bits).
const MAGIC: usize = 0x9CC7;

/// Packs a slot index and generation into a signal value.
///
/// Public for tests and embedders that send signals the way the sampler
/// does ([`crate::signal::send`]); the sampler itself is its only user in
/// the agent.
pub fn encode(slot: usize, generation: u32) -> usize {
    (MAGIC << 48) | ((generation as usize) << 16) | (slot & 0xFFFF)
}

/// Unpacks a signal value; `None` if it is not one of ours.
#[inline]
pub(crate) fn decode(value: usize) -> Option<(usize, u32)> {
    if value >> 48 != MAGIC {
        return None;
    }
    Some((value & 0xFFFF, ((value >> 16) & 0xFFFF_FFFF) as u32))
}

/// Saves `errno` on creation and restores it on drop.
struct ErrnoGuard(i32);

impl ErrnoGuard {
    #[inline]
    fn save() -> ErrnoGuard {
        // SAFETY: __errno_location returns this thread's errno; reading it is always valid.
        ErrnoGuard(unsafe { *libc::__errno_location() })
    }
}

impl Drop for ErrnoGuard {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: as in `save`; restoring the value the thread had.
        unsafe { *libc::__errno_location() = self.0 };
    }
}

#[inline]
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime is async-signal-safe and writes one timespec we own.
    unsafe { libc::clock_gettime(clock, &mut now) };
    (now.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(now.tv_nsec as u64)
}

/// The `SA_SIGINFO` handler installed for the sampling signal.
///
/// # Safety
/// Called by the kernel only, with a valid `siginfo_t` and `ucontext_t`.
pub(crate) unsafe extern "C" fn on_signal(_signal: i32, info: *mut libc::siginfo_t, ucontext: *mut c_void) {
    let _errno = ErrnoGuard::save();
    // First, so that a handler timed by the processor's counter counts all
    // of its own work.
    let entered_at = tsc::now();
    if info.is_null() || ucontext.is_null() {
        STRAY_SIGNALS.fetch_add(1, Ordering::Relaxed);
        return;
    }
    // SAFETY: the kernel passes a valid siginfo_t to SA_SIGINFO handlers.
    let info = unsafe { &*info };
    let Some((value, timer)) = sampling_value(info) else {
        STRAY_SIGNALS.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let timed = timer.is_some();
    let Some((index, generation)) = decode(value) else {
        STRAY_SIGNALS.fetch_add(1, Ordering::Relaxed);
        return;
    };
    if index >= MAX_THREADS {
        STRAY_SIGNALS.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let slot = &SLOTS[index];
    // One interval of the thread's CPU, whether or not it is sampled.
    let counted =
        (timed && slot.generation() == generation).then(|| slot.timer_signals.fetch_add(1, Ordering::Relaxed));
    let clock = HandlerClock::start(timer, entered_at, || {
        counted.is_some_and(|number| needs_cpu_clock(slot, entered_at, number))
    });
    let asking = cycles::now();
    // SAFETY: gettid is a plain system call, async-signal-safe.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
    cycles::since(Part::Gettid, asking);
    // A timer's signal takes a free place in the slot itself; the
    // sampler's answers its request.
    let place =
        if timed { slot.claim(generation, tid) } else { slot.enter_handler(generation, tid).then_some(Place::FIRST) };
    let Some(place) = place else {
        // A timer runs on whether or not its previous sample was drained.
        let refused = if timed { &BUSY_TIMER_SIGNALS } else { &STALE_SIGNALS };
        refused.fetch_add(1, Ordering::Relaxed);
        if timed {
            // Its places or the pool ran out before the sampler's batch
            // ended: it drains now.
            DOORBELL.ring();
        }
        if counted.is_some() {
            slot.timer_handler_ended(clock.by_counter().then(tsc::now));
        }
        return;
    };

    // SAFETY: `ucontext` is the kernel's ucontext_t for this signal.
    let registers = unsafe { registers::read(ucontext) };
    let checksum = registers::checksum(&registers);
    // A timer's signal comes after an interval of the thread's CPU: it ran,
    // and it was on a CPU when the signal came. Only the sampler's signal
    // is checked (and its handler has read the CPU clock).
    let unwalked = match (timed, clock.cpu_start()) {
        // A thread that runs no Java code has nothing to walk but its
        // native frames, if they are asked for.
        _ if slot.is_native() && !native_frames::enabled() && timer.is_none_or(|fd| !cpu_timer::has_ring(fd)) => {
            Some(RESULT_NATIVE_THREAD)
        }
        (false, Some(start)) => unwalked_result(slot, checksum, start),
        _ => None,
    };
    let captured = match unwalked {
        Some(result) => {
            let region = place.borrowed.unwrap_or(0) as u8;
            Captured { result, walker: Walker::None, broken: 0, region, reused: 0 }
        }
        // SAFETY: as below, for its native frames alone.
        None if slot.is_native() => unsafe { capture_native_thread(slot, place, &registers, timer) },
        // SAFETY: the slot is IN_HANDLER behind `place.waiting` samples, so
        // the region `place` borrowed, or one of its own not in
        // `place.busy`, is this handler's; `ucontext` is the kernel's.
        None => unsafe { capture(slot, place, ucontext, &registers, tid, timer) },
    };
    let (handler_ns, end) = clock.stop();
    if counted.is_some() {
        slot.timer_handler_ended(clock.by_counter().then(tsc::now));
    }
    cycles::since(Part::Handler, entered_at);
    cycles::add(Part::Handlers, 1);
    // A deferred sample is as if it had not been taken: the next handler
    // asks whether the thread ran since the last sample that counts (else
    // a thread that barely ran after a deferral would have the deferred
    // time, which is the next sample's, filtered away with it).
    if captured.result != RESULT_DEFERRED {
        slot.last_checksum.store(checksum, Ordering::Relaxed);
        // 0 (none) after a handler that did not read the clock: the next
        // sampler's signal is then not filtered on the checksum alone.
        slot.last_cpu_ns.store(end.unwrap_or(0), Ordering::Relaxed);
        // Read only where the next handler may ask (`blocked_once`): after
        // a sample the checksum filtered, which costs no walk.
        let switches = match captured.result {
            RESULT_FILTERED if !timed => voluntary_switches().unwrap_or(NO_SWITCHES),
            _ => NO_SWITCHES,
        };
        slot.last_switches.store(switches, Ordering::Relaxed);
    }
    let published = slot.publish(HandlerResult {
        result: captured.result,
        walker: captured.walker as u8,
        broken: captured.broken,
        region: captured.region,
        reused: captured.reused,
        checksum,
        handler_ns,
        timed,
        cpu_ns: clock.cpu_start().unwrap_or(0),
        timer_signal: counted.unwrap_or(0),
    });
    if published
        && timed
        && (place.waiting + 1 >= RING_AT_WAITING || place.borrowed.is_some_and(|_| slot.pool_running_low()))
    {
        DOORBELL.ring();
    }
}

/// A timer's samples between two whose handler reads the thread's CPU
/// clock (at most): the reading puts the sample's weight, the intervals
/// signalled, back on the clock (see the module doc).
pub const CPU_CLOCK_EVERY: u64 = 16;

/// Whether the handler of a timer's signal, the `number`th counted for
/// `slot`, entered at counter value `entered_at`, reads the thread's CPU
/// clock for the sample's weight: every [`CPU_CLOCK_EVERY`]th signal, and
/// one that comes over [`tsc::gap_cycles`] after the previous one's handler
/// ended. Such a thread either ran on and signals were lost (merged with
/// one pending while it was in the kernel: a long system call's intervals
/// are taken as one signal at its return), or it was switched out and
/// waited. Only the clock tells which; taking the intervals lost by a
/// thread switched out meanwhile for a wait (as before 2026-11-28) put them
/// on the next sixteenth signal's sample, elsewhere in the code: a thread
/// reading 32 MiB at a time on a busy machine had its reads' share at 47-68 %
/// against a truth of 76-79 % (BENCHMARKS.md, "Long system calls").
#[inline]
fn needs_cpu_clock(slot: &Slot, entered_at: u64, number: u64) -> bool {
    if number.is_multiple_of(CPU_CLOCK_EVERY) {
        return true;
    }
    let exit = slot.last_timer_handler();
    exit != 0 && entered_at.wrapping_sub(exit) > tsc::gap_cycles()
}

/// How a handler times itself, and the thread's CPU clock if it read it.
#[derive(Clone, Copy)]
struct HandlerClock {
    /// The thread's CPU clock at the handler's start, if read (a system
    /// call): always for the sampler's signal (its has-it-run check needs
    /// it), for a timer's where [`needs_cpu_clock`] says so.
    cpu_start: Option<u64>,
    /// For a timer's signal once the counter is calibrated (`tsc`): the
    /// counter at the handler's entry, the timer's perf page and its
    /// sequence word then (`cpu_timer::switches`), which moves if the
    /// thread is switched out. `None`: timed by the CPU clock.
    counter: Option<(u64, usize, u32)>,
}

impl HandlerClock {
    /// Starts timing a handler entered at `entered_at` (the counter) for a
    /// signal of the timer on descriptor `timer`, or of the sampler
    /// (`None`); a timer's handler timed by the counter reads the CPU clock
    /// too if `read_cpu` says so.
    #[inline]
    fn start(timer: Option<i32>, entered_at: u64, read_cpu: impl FnOnce() -> bool) -> HandlerClock {
        let counter = timer.filter(|_| tsc::calibrated()).and_then(|fd| {
            let page = cpu_timer::page_of(fd);
            cpu_timer::switches(page).map(|switches| (entered_at, page, switches))
        });
        let cpu_start = (counter.is_none() || read_cpu()).then(|| {
            let reading = cycles::now();
            // The handler's own CPU time (not wall time: a handler
            // preempted on a busy machine has not cost more).
            let start = clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
            cycles::since(Part::FirstClock, reading);
            start
        });
        HandlerClock { cpu_start, counter }
    }

    /// The thread's CPU clock at the start, if it was read.
    #[inline]
    fn cpu_start(self) -> Option<u64> {
        self.cpu_start
    }

    /// Whether the handler is timed by the processor's counter (the
    /// counter calibrated, the timer's perf page read at the start).
    #[inline]
    fn by_counter(self) -> bool {
        self.counter.is_some()
    }

    /// The handler's time ([`HANDLER_UNMEASURED`] if the thread was
    /// switched out meanwhile and the handler did not read the CPU clock
    /// at its start), and the thread's CPU clock now if the handler reads
    /// it (timed by the CPU clock).
    #[inline]
    fn stop(self) -> (u64, Option<u64>) {
        if let Some((entered_at, page, switches)) = self.counter {
            let cycles = tsc::now().wrapping_sub(entered_at);
            if cpu_timer::switches(page) == Some(switches) {
                return (tsc::to_ns(cycles).unwrap_or(HANDLER_UNMEASURED), None);
            }
            if self.cpu_start.is_none() {
                return (HANDLER_UNMEASURED, None);
            }
            // Switched out, most often at its own clock read (the kernel
            // may switch a thread at a system call's exit): timed by the
            // CPU clock, as a handler without the counter is.
        }
        let closing = cycles::now();
        let end = clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
        cycles::since(Part::ClosingClock, closing);
        (end.wrapping_sub(self.cpu_start.unwrap_or(end)), Some(end))
    }
}

/// For a sample the sampler's signal asked for: [`RESULT_FILTERED`] if the
/// thread has not run (equal register `checksum`, too little CPU since the
/// previous handler returned), [`RESULT_DEFERRED`] if the signal waited off
/// the CPU (see the module documentation), `None` if it is to be walked.
/// `start` is the thread's CPU clock at the handler's start. Async-signal-safe.
#[inline]
fn unwalked_result(slot: &Slot, checksum: u64, start: u64) -> Option<i32> {
    let previous = slot.last_checksum.load(Ordering::Relaxed);
    // CPU used since the previous handler *returned*: the handler's own work
    // (a stack walk costs tens of microseconds) must not count as running.
    let previous_cpu = slot.last_cpu_ns.load(Ordering::Relaxed);
    let requested_cpu = slot.requested_cpu_ns.load(Ordering::Relaxed);
    let cpu_at_request = if requested_cpu != 0 { requested_cpu } else { start };
    if previous == checksum && previous_cpu != 0 {
        let ran = cpu_at_request.saturating_sub(previous_cpu);
        if ran < RAN_THRESHOLD_NS.load(Ordering::Relaxed)
            || blocked_once(slot.last_switches.load(Ordering::Relaxed), voluntary_switches)
        {
            return Some(RESULT_FILTERED);
        }
    }
    // Wall time since the request that the thread did not run: how long
    // the signal waited for a thread that was not on a CPU (asked for only
    // where the sample may be deferred).
    let requested_wall = slot.requested_wall_ns.load(Ordering::Relaxed);
    if requested_wall != 0 && requested_cpu != 0 {
        let waited = clock_ns(libc::CLOCK_MONOTONIC).saturating_sub(requested_wall);
        if defers(waited, start.saturating_sub(requested_cpu)) {
            return Some(RESULT_DEFERRED);
        }
    }
    None
}

/// Whether a thread whose registers are unchanged since its previous
/// handler, which filtered its sample and counted `previous` voluntary
/// context switches at its end, has only gone back to its wait since: one
/// voluntary switch (`now`, read only when asked), its return to the wait
/// that handler's signal woke it from. A thread woken by anything else and
/// blocked again at the same place has two or more; one that kept running
/// (short system calls), none. Async-signal-safe when `now` is.
#[inline]
fn blocked_once(previous: u64, now: impl FnOnce() -> Option<u64>) -> bool {
    previous != NO_SWITCHES && now().is_some_and(|switches| switches.wrapping_sub(previous) == 1)
}

/// The calling thread's voluntary context switches (`getrusage`,
/// `RUSAGE_THREAD`: a plain system call). Async-signal-safe.
#[inline]
fn voluntary_switches() -> Option<u64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one `rusage` into the buffer given, which
    // is one; RUSAGE_THREAD asks for the calling thread's own.
    let status = unsafe { libc::syscall(libc::SYS_getrusage, libc::RUSAGE_THREAD, usage.as_mut_ptr()) };
    // SAFETY: zeroed, then written by the kernel on success.
    (status == 0).then(|| unsafe { usage.assume_init() }.ru_nvcsw as u64)
}

/// Whether a sample the sampler allowed to be deferred is: its signal
/// reached the thread `waited` ns (wall time) after the request, of which
/// the thread ran `ran` (its CPU clock's advance). Off the CPU over
/// [`OFF_CPU_DEFER_NS`] of it, unless it ran [`RAN_IN_KERNEL_NS`] or more
/// (in a system call: see the module doc). Async-signal-safe.
#[inline]
fn defers(waited: u64, ran: u64) -> bool {
    waited.saturating_sub(ran) > OFF_CPU_DEFER_NS && ran < RAN_IN_KERNEL_NS
}

/// The signal value of a sampling signal, and the descriptor of the
/// thread's CPU timer (`cpu_timer`) that sent it (`None`: the sampler
/// sent it); `None` for any other signal. Async-signal-safe: reads `info`
/// and atomics.
#[inline]
fn sampling_value(info: &libc::siginfo_t) -> Option<(usize, Option<i32>)> {
    match info.si_code {
        SI_QUEUE => {
            // SAFETY: si_code is SI_QUEUE, so the union holds si_pid/si_uid/si_value.
            let (sender, value) = unsafe { (info.si_pid(), info.si_value().sival_ptr as usize) };
            (sender == PROCESS_ID.load(Ordering::Relaxed)).then_some((value, None))
        }
        cpu_timer::POLL_IN => {
            let fd = descriptor_of(info);
            let value = cpu_timer::value_of(fd);
            (value != 0).then_some((value, Some(fd)))
        }
        _ => None,
    }
}

/// `si_fd` of a signal sent for an event on a file descriptor (the libc
/// crate has no accessor for it on glibc): the union's `_sigpoll` member,
/// `{ long si_band; int si_fd; }`, after the three ints and the padding
/// that start every `siginfo_t` on 64-bit Linux.
#[inline]
fn descriptor_of(info: &libc::siginfo_t) -> i32 {
    #[repr(C)]
    struct SigPoll {
        signo: i32,
        errno: i32,
        code: i32,
        padding: i32,
        band: libc::c_long,
        fd: i32,
    }
    const _: () = assert!(std::mem::size_of::<SigPoll>() <= std::mem::size_of::<libc::siginfo_t>());
    // SAFETY: `SigPoll` is a prefix of siginfo_t's layout (checked size,
    // plain integers of the same alignment), and `info` is a valid siginfo_t.
    unsafe { (*(info as *const libc::siginfo_t as *const SigPoll)).fd }
}

/// Off-CPU wait past which a sample the sampler allowed to be deferred is
/// deferred (not walked: [`RESULT_DEFERRED`]). A running thread takes the
/// signal within microseconds (tens on a virtual machine), so its wait off
/// the CPU is about zero; a thread waiting for a CPU when it was signalled
/// takes it when it next runs, with the registers of the moment it was
/// preempted. Preemption is not spread like CPU time: the scheduler
/// switches a thread out mostly where it enters the kernel (a system
/// call's exit), so such samples pile up on system calls. Measured
/// (BENCHMARKS.md): GroundTruth reading its CPU clock every 150 µs (under
/// 1 % of its CPU), three spinning processes on 2 vCPUs: 20-23 % of its
/// samples in the clock read before this rule, 5-13 % after.
pub const OFF_CPU_DEFER_NS: u64 = 200_000;

/// CPU a thread used between the sampler's request and its handler past
/// which its sample is never deferred: it was in one system call all that
/// time (a thread in user mode takes the signal within tens of
/// microseconds), so the stack at the call's exit is where the CPU went,
/// whether or not it then waited for a CPU (see the module doc).
pub const RAN_IN_KERNEL_NS: u64 = 200_000;

/// Which walker produced a sample's frames.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Walker {
    /// No walk (filtered).
    None = 0,
    /// pcct's own walker, to the bottom of the stack (or the depth).
    Vm = 1,
    /// AsyncGetCallTrace (pcct's walker stopped early, or is not available).
    Agct = 2,
    /// pcct's walker stopped early and AsyncGetCallTrace failed too: the
    /// frames are the top of the stack pcct's walker read.
    VmPartial = 3,
    /// A thread that runs no Java code: its native frames alone.
    Native = 4,
}

impl Walker {
    pub fn from_u8(value: u8) -> Walker {
        match value {
            1 => Walker::Vm,
            2 => Walker::Agct,
            3 => Walker::VmPartial,
            4 => Walker::Native,
            _ => Walker::None,
        }
    }

    /// The name `/metrics` and `/api/samples` give it (`None`: not walked).
    pub fn label(self) -> Option<&'static str> {
        match self {
            Walker::None => None,
            Walker::Vm => Some("pcct"),
            Walker::Agct => Some("agct"),
            Walker::VmPartial => Some("partial"),
            Walker::Native => Some("native"),
        }
    }
}

/// What the handler leaves for the sampler besides the frames.
struct Captured {
    result: i32,
    walker: Walker,
    broken: u8,
    region: u8,
    reused: u16,
}

/// Walks the stack into a region of the slot's buffer that `place` leaves
/// free: pcct's walker first, then AsyncGetCallTrace for what it could not
/// finish (written after pcct's partial frames, so they survive if
/// AsyncGetCallTrace fails too).
///
/// A walk into a borrowed region reuses the thread's walk history but does
/// not change it (the region goes back to the pool when it is drained, and
/// another thread may write it then): the history keeps the previous walk
/// in the slot's own region, which holds a waiting sample that nobody
/// writes (read by this walk and by the sampler's drain only).
///
/// # Safety
/// The slot is IN_HANDLER behind `place.waiting` samples: the region
/// `place` borrowed, or the slot's own regions not in `place.busy`, are the
/// caller's to write; `ucontext` is the kernel's for this signal, on the
/// thread `tid` it interrupted.
unsafe fn capture(
    slot: &Slot,
    place: Place,
    ucontext: *mut c_void,
    registers: &[u64; REGISTER_COUNT],
    tid: i32,
    timer: Option<i32>,
) -> Captured {
    // SAFETY: the history is null or a live History (see
    // `Slot::handler_history`), and the slot is IN_HANDLER: it is this
    // handler's until it publishes.
    let mut history = unsafe { slot.handler_history().as_mut() };
    let keeps = place.borrowed.is_none();
    let region = match (place.borrowed, history.as_deref_mut()) {
        (Some(borrowed), _) => borrowed,
        (None, Some(history)) => history.next_region(place.busy, OWN_REGIONS),
        // None free cannot be (`Slot::claim` borrows then): no region.
        (None, None) => place.free_own_region().unwrap_or(usize::MAX),
    };
    let Some((out_region, capacity)) = slot.region(region) else {
        // The region stays named, so a borrowed one goes back at the drain.
        return Captured { result: RESULT_NO_REGION, walker: Walker::None, broken: 0, region: region as u8, reused: 0 };
    };
    let vm = hotspot::vm();
    let env = slot.env.load(Ordering::Relaxed) as usize;
    let thread = vm.and_then(|vm| vm.java_thread_on(env, tid));
    // SAFETY: the region holds `capacity` frames and is ours (not in
    // `place.busy`); the raw writes below come after its last use.
    let all = unsafe { std::slice::from_raw_parts_mut(out_region, capacity) };
    // The kernel's and native frames first (leaf first), the Java frames
    // after them.
    let kernel = kernel_frames_of(timer, all);
    let below_kernel = all.get_mut(kernel..).unwrap_or_default();
    let native = kernel
        + match (vm, thread) {
            (Some(vm), Some(thread)) => java_threads_native_frames(vm, thread, registers, below_kernel),
            // AsyncGetCallTrace alone (`walker=agct`, or a VM pcct's walker
            // cannot read): to the first return into code in no module.
            _ => unwind_without_java_thread(registers, |_| true, below_kernel),
        };
    let mut partial = native;
    let mut broken = 0;
    if let Some(vm) = vm {
        match thread {
            Some(thread) => {
                let out = all.get_mut(native..).unwrap_or_default();
                let walk = match history.as_deref_mut() {
                    Some(history) => {
                        let previous = match history
                            .kept()
                            .and_then(|(kept, first, frames)| Some((slot.region(kept)?, first, frames)))
                        {
                            // SAFETY: the previous walk's region is not the
                            // one written (`History::next_region`), holds
                            // `capacity` frames of which its Java frames
                            // are `frames` from `first`, and is only read here.
                            Some(((frames_at, capacity), first, frames)) if first < capacity => unsafe {
                                std::slice::from_raw_parts(frames_at.add(first), frames.min(capacity - first))
                            },
                            _ => &[],
                        };
                        let cache = Some(FrameCache::process());
                        if keeps {
                            let memo = history.memo(previous, cache);
                            let walk =
                                walker::walk(&VmMemory, &vm.layout, thread, walker_registers(registers), out, memo);
                            history.finish(&walk, region, native);
                            walk
                        } else {
                            let memo = history.memo_to_read(previous, cache);
                            walker::walk(&VmMemory, &vm.layout, thread, walker_registers(registers), out, memo)
                        }
                    }
                    None => {
                        let memo = walker::Memo { cache: Some(FrameCache::process()), ..walker::Memo::default() };
                        walker::walk(&VmMemory, &vm.layout, thread, walker_registers(registers), out, memo)
                    }
                };
                match walk.ending {
                    Ending::Complete | Ending::Full => {
                        return Captured {
                            result: (native + walk.frames) as i32,
                            walker: Walker::Vm,
                            broken: 0,
                            region: region as u8,
                            reused: walk.reused.min(u16::MAX as usize) as u16,
                        }
                    }
                    Ending::Broken(reason) => {
                        partial = native + walk.frames;
                        broken = reason as u8;
                    }
                }
            }
            None => broken = Broken::NoThread as u8,
        }
    }
    if let Some(history) = history.filter(|_| keeps) {
        history.forget();
    }
    let region = region as u8;
    let Some(async_get_call_trace) = agct::function() else {
        return Captured { result: RESULT_NO_AGCT, walker: Walker::Agct, broken, region, reused: 0 };
    };
    if partial >= capacity {
        // Native frames filled the region: nothing left for Java frames.
        return Captured { result: partial as i32, walker: Walker::VmPartial, broken, region, reused: 0 };
    }
    // SAFETY: `partial` < `capacity` (checked above).
    let rest = unsafe { out_region.add(partial) };
    let mut trace = CallTrace { env_id: slot.env.load(Ordering::Relaxed), num_frames: 0, frames: rest };
    // SAFETY: AsyncGetCallTrace is called on the interrupted thread with its
    // ucontext, and writes at most `capacity - partial` frames into the rest
    // of the region.
    unsafe { async_get_call_trace(&mut trace, (capacity - partial) as i32, ucontext) };
    if trace.num_frames > 0 {
        // Its frames replace pcct's partial Java ones, after the native
        // frames (a plain loop: no memmove call in the handler), their kinds
        // unknown (it leaves that byte as an earlier walk wrote it).
        let mut index = 0;
        while index < trace.num_frames as usize {
            // SAFETY: every index is below `partial + num_frames` <= `capacity`.
            unsafe {
                let frame = out_region.add(native + index);
                if partial > native {
                    *frame = *out_region.add(partial + index);
                }
                (*frame).kind = 0;
            }
            index += 1;
        }
        let result = (native + trace.num_frames as usize) as i32;
        return Captured { result, walker: Walker::Agct, broken, region, reused: 0 };
    }
    // pcct's partial Java frames (after the native ones) stand under the
    // break; with none, the failure's code does, as without native frames.
    if partial > native {
        return Captured { result: partial as i32, walker: Walker::VmPartial, broken, region, reused: 0 };
    }
    Captured { result: trace.num_frames, walker: Walker::Agct, broken, region, reused: 0 }
}

/// Unwinds the native stack of a thread that runs no Java code
/// (`threads=all`, `native=on`) into a region of the slot's buffer that
/// `place` leaves free: [`Walker::Native`], or [`RESULT_NATIVE_THREAD`]
/// (its kind's pseudo-frames alone) when no frame was found.
///
/// # Safety
/// As for [`capture`]: the slot is IN_HANDLER behind `place.waiting`
/// samples, so the region `place` borrowed, or the slot's own regions not
/// in `place.busy`, are the caller's to write.
unsafe fn capture_native_thread(
    slot: &Slot,
    place: Place,
    registers: &[u64; REGISTER_COUNT],
    timer: Option<i32>,
) -> Captured {
    let region = place.borrowed.or_else(|| place.free_own_region()).unwrap_or(usize::MAX);
    let unwalked =
        Captured { result: RESULT_NATIVE_THREAD, walker: Walker::None, broken: 0, region: region as u8, reused: 0 };
    let Some((out_region, capacity)) = slot.region(region) else { return unwalked };
    // SAFETY: the region holds `capacity` frames and is ours (above).
    let out = unsafe { std::slice::from_raw_parts_mut(out_region, capacity) };
    let generated = |pc: u64| hotspot::vm().is_some_and(|vm| walker::in_generated_code(&vm.layout, pc as usize));
    let kernel = kernel_frames_of(timer, out);
    let user = out.get_mut(kernel..).unwrap_or_default();
    match kernel + unwind_without_java_thread(registers, generated, user) {
        0 => unwalked,
        frames => Captured { result: frames as i32, walker: Walker::Native, ..unwalked },
    }
}

/// The kernel frames of a timer's signal (`kernel=on`: the call chain its
/// timer recorded, `kernel_frames`), written at the start of `out`; 0 for
/// the sampler's signal. Async-signal-safe.
#[inline]
fn kernel_frames_of(timer: Option<i32>, out: &mut [CallFrame]) -> usize {
    timer.map_or(0, |fd| kernel_frames::read(fd, out))
}

/// The native frames of the Java thread `thread` (`native=on`), written at
/// the start of `out`: from the interrupted registers when they are outside
/// the code HotSpot generated, to its last Java frame or a return into
/// generated code (`native_frames`). 0 when native frames are off, the
/// thread is in generated code, or its stack cannot be read.
/// Async-signal-safe.
#[inline]
fn java_threads_native_frames(
    vm: &hotspot::Vm,
    thread: usize,
    registers: &[u64; REGISTER_COUNT],
    out: &mut [CallFrame],
) -> usize {
    let pc = registers[registers::RIP];
    if !native_frames::enabled() || walker::in_generated_code(&vm.layout, pc as usize) {
        return 0;
    }
    let Some(((low, high), last_java_sp)) = walker::native_bounds(&VmMemory, &vm.layout, thread) else { return 0 };
    let stack = pcct_native::StackBounds { low: low as u64, high: high as u64 };
    let generated = |pc: u64| walker::in_generated_code(&vm.layout, pc as usize);
    native_frames::unwind(native_registers(registers), stack, last_java_sp.map(|sp| sp as u64), generated, out)
}

/// The native frames of a thread without a `JavaThread` known (`native=on`):
/// one that runs no Java code (`threads=all`), or one whose Java frames
/// AsyncGetCallTrace walks alone. From the interrupted registers, within
/// [`native_frames::NATIVE_THREAD_STACK`] above its sp, to its stack's root
/// or code in no module, `generated` saying which of that code is the VM's
/// (where it cannot tell, `|_| true`: no refresh of the modules is asked).
/// Async-signal-safe.
#[inline]
fn unwind_without_java_thread(
    registers: &[u64; REGISTER_COUNT],
    generated: impl Fn(u64) -> bool,
    out: &mut [CallFrame],
) -> usize {
    let start = native_registers(registers);
    native_frames::unwind(start, native_frames::native_thread_stack(start.sp), None, generated, out)
}

/// The registers a native walk starts from.
#[inline]
fn native_registers(registers: &[u64; REGISTER_COUNT]) -> pcct_native::Registers {
    pcct_native::Registers {
        pc: registers[registers::RIP],
        sp: registers[registers::RSP],
        fp: registers[registers::RBP],
    }
}

/// The registers pcct's walker starts from.
#[inline]
fn walker_registers(registers: &[u64; REGISTER_COUNT]) -> walker::Registers {
    walker::Registers {
        pc: registers[registers::RIP] as usize,
        sp: registers[registers::RSP] as usize,
        fp: registers[registers::RBP] as usize,
        rbx: registers[registers::RBX] as usize,
        r13: registers[registers::R13] as usize,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_foreign_values_are_refused() {
        let value = encode(8191, 0xDEAD_BEEF);
        assert_eq!(decode(value), Some((8191, 0xDEAD_BEEF)));
        assert_eq!(decode(0), None);
        assert_eq!(decode(12345), None);
    }

    #[test]
    fn a_sample_that_waited_for_a_cpu_is_deferred_unless_it_ran_on_in_a_system_call() {
        const US: u64 = 1_000;
        assert!(!defers(150 * US, 10 * US), "a running thread's signal");
        assert!(defers(900 * US, 20 * US), "switched out before the request: the registers of the switch");
        assert!(!defers(8_000 * US, 5_000 * US), "a long read, then switched out at its return: the read's stack");
        assert!(!defers(5_000 * US, 5_000 * US));
        assert!(defers(OFF_CPU_DEFER_NS + 1 + (RAN_IN_KERNEL_NS - 1), RAN_IN_KERNEL_NS - 1));
        assert!(!defers(10_000 * US + RAN_IN_KERNEL_NS, RAN_IN_KERNEL_NS));
    }

    #[test]
    fn a_thread_that_only_went_back_to_its_wait_has_not_run() {
        assert!(blocked_once(40, || Some(41)), "back to the wait the previous signal woke it from");
        assert!(!blocked_once(40, || Some(40)), "never blocked: it kept running (short system calls)");
        assert!(!blocked_once(40, || Some(42)), "woken by something else and blocked again");
        assert!(!blocked_once(40, || None), "no reading");
        let mut asked = false;
        assert!(!blocked_once(NO_SWITCHES, || {
            asked = true;
            Some(0)
        }));
        assert!(!asked, "nothing is read without the previous handler's count");
    }

    #[test]
    fn the_calling_threads_voluntary_switches_count_its_blocking() {
        let before = voluntary_switches().expect("getrusage");
        std::thread::sleep(std::time::Duration::from_millis(2));
        let after = voluntary_switches().expect("getrusage");
        assert!(after > before, "a sleep is a voluntary switch: {before} -> {after}");
    }

    #[test]
    fn a_timers_handler_reads_the_cpu_clock_every_sixteenth_signal_and_after_a_gap() {
        let slot = Slot::new();
        let now = tsc::now();
        slot.timer_handler_ended(Some(now));
        // Right after the previous handler: only every sixteenth signal.
        assert!(needs_cpu_clock(&slot, now, 0) && needs_cpu_clock(&slot, now, CPU_CLOCK_EVERY));
        assert!(!needs_cpu_clock(&slot, now, 1) && !needs_cpu_clock(&slot, now, CPU_CLOCK_EVERY - 1));
        let mut calibration = tsc::Calibration::begin();
        std::thread::sleep(tsc::CALIBRATION + std::time::Duration::from_millis(5));
        if calibration.tick().is_none() && !tsc::calibrated() {
            eprintln!("no invariant time-stamp counter here: no gap to test");
            return;
        }
        tsc::set_gap(std::time::Duration::from_millis(1));
        let gap = tsc::gap_cycles();
        assert!(gap < u64::MAX);
        assert!(!needs_cpu_clock(&slot, now + gap, 1), "one and a half intervals later");
        assert!(needs_cpu_clock(&slot, now + gap + 1, 1), "more: lost signals or a wait, the clock tells");
        // Nothing known of a previous handler: only every sixteenth.
        slot.timer_handler_ended(None);
        assert!(!needs_cpu_clock(&slot, now + gap + 1, 1));
    }
}
