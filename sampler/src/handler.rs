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
//!    which is designed for signal handlers;
//! 5. **touches no lazily initialised state and no thread-locals** — the
//!    slot table and counters are `static` atomics initialised at compile
//!    time; the thread's slot comes from the signal's `si_value`, checked
//!    against the slot's generation and the thread id (`gettid`);
//! 6. **saves and restores `errno`** ([`ErrnoGuard`]);
//! 7. **writes only into fixed-size buffers** allocated at registration
//!    (AsyncGetCallTrace gets the slot's buffer and its capacity).
//!
//! Other system calls used: `gettid` and `clock_gettime` (both
//! async-signal-safe).
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
//! A test with a counting global allocator
//! (`tests/handler_allocates_nothing.rs`) checks rule 1 on every path.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::agct::{self, CallTrace};
use crate::registers;
use crate::slots::{HandlerResult, MAX_THREADS, RESULT_FILTERED, RESULT_NO_AGCT, SLOTS};

/// Signals that did not come from the sampler (no pcct `si_value`).
pub(crate) static STRAY_SIGNALS: AtomicU64 = AtomicU64::new(0);
/// pcct signals that arrived for a slot no longer waiting for them (thread
/// gone, id reused, request withdrawn).
pub(crate) static STALE_SIGNALS: AtomicU64 = AtomicU64::new(0);

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

#[inline]
fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// The `SA_SIGINFO` handler installed for the sampling signal.
///
/// # Safety
/// Called by the kernel only, with a valid `siginfo_t` and `ucontext_t`.
pub(crate) unsafe extern "C" fn on_signal(_signal: i32, info: *mut libc::siginfo_t, ucontext: *mut c_void) {
    let _errno = ErrnoGuard::save();
    let start = monotonic_ns();
    if info.is_null() || ucontext.is_null() {
        STRAY_SIGNALS.fetch_add(1, Ordering::Relaxed);
        return;
    }
    // SAFETY: the kernel passes a valid siginfo_t to SA_SIGINFO handlers.
    let info = unsafe { &*info };
    if info.si_code != SI_QUEUE {
        STRAY_SIGNALS.fetch_add(1, Ordering::Relaxed);
        return;
    }
    // SAFETY: si_code is SI_QUEUE, so the union holds si_pid/si_uid/si_value.
    let (sender, value) = unsafe { (info.si_pid(), info.si_value().sival_ptr as usize) };
    // SAFETY: getpid is async-signal-safe.
    if sender != unsafe { libc::getpid() } {
        STRAY_SIGNALS.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let Some((index, generation)) = decode(value) else {
        STRAY_SIGNALS.fetch_add(1, Ordering::Relaxed);
        return;
    };
    if index >= MAX_THREADS {
        STRAY_SIGNALS.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let slot = &SLOTS[index];
    // SAFETY: gettid is a plain system call, async-signal-safe.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
    if !slot.enter_handler(generation, tid) {
        STALE_SIGNALS.fetch_add(1, Ordering::Relaxed);
        return;
    }

    // SAFETY: `ucontext` is the kernel's ucontext_t for this signal.
    let registers = unsafe { registers::read(ucontext) };
    let checksum = registers::checksum(&registers);
    let previous = slot.last_checksum.swap(checksum, Ordering::Relaxed);
    // CPU used since the previous handler *returned*: the handler's own work
    // (a stack walk costs tens of microseconds) must not count as running.
    let previous_cpu = slot.last_cpu_ns.load(Ordering::Relaxed);
    let requested_cpu = slot.requested_cpu_ns.load(Ordering::Relaxed);
    let cpu_at_request = if requested_cpu != 0 { requested_cpu } else { clock_ns(libc::CLOCK_THREAD_CPUTIME_ID) };
    let has_not_run = previous == checksum
        && previous_cpu != 0
        && cpu_at_request.saturating_sub(previous_cpu) < RAN_THRESHOLD_NS.load(Ordering::Relaxed);
    let result = if has_not_run {
        RESULT_FILTERED
    } else {
        match agct::function() {
            None => RESULT_NO_AGCT,
            Some(async_get_call_trace) => {
                let (frames, capacity) = slot.buffer();
                let mut trace = CallTrace { env_id: slot.env.load(Ordering::Relaxed), num_frames: 0, frames };
                // SAFETY: AsyncGetCallTrace is called on the interrupted thread
                // with its ucontext, and writes at most `capacity` frames into
                // the slot's buffer, which holds `capacity` frames and is used by
                // nobody else while the slot is IN_HANDLER.
                unsafe { async_get_call_trace(&mut trace, capacity as i32, ucontext) };
                trace.num_frames
            }
        }
    };
    slot.last_cpu_ns.store(clock_ns(libc::CLOCK_THREAD_CPUTIME_ID), Ordering::Relaxed);
    let handler_ns = monotonic_ns().wrapping_sub(start);
    slot.publish(HandlerResult { result, checksum, handler_ns });
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
}
