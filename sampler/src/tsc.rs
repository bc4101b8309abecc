//! The processor's time-stamp counter as the clock of the signal handler's
//! own time, where it can be one.
//!
//! A sample of a thread's own CPU timer needs no clock for its weight (the
//! timer fires after every interval of the thread's CPU: `cpu_timer`, and
//! the sampler counts the intervals), so the only clock such a handler
//! read was the thread's CPU clock, twice, to measure itself: two system
//! calls with the kernel's code and data cold, 1-3 µs each (BENCHMARKS.md,
//! "The handler without system calls"). `rdtsc` costs tens of cycles. It
//! counts wall time, which is the handler's CPU time only while the thread
//! stays on its CPU; the handler checks that with the timer's perf page
//! (`cpu_timer::switches`), and a handler that was switched out is counted,
//! not timed.
//!
//! The counter is used only where the processor says it is invariant (runs
//! at a constant rate in every power state: CPUID leaf 0x8000_0007, EDX bit
//! 8), and only once the sampler thread has measured its rate against the
//! monotonic clock ([`Calibration`], its first 20 ms); until then, or without it, handlers
//! time themselves with the CPU clock as before.
//!
//! Async-signal-safe: [`now`] is one instruction and [`to_ns`] one atomic
//! load and a multiplication.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Nanoseconds per cycle in 32.32 fixed point; 0 until calibrated.
static NS_PER_CYCLE_Q32: AtomicU64 = AtomicU64::new(0);

/// [`gap_cycles`]: cycles (u64::MAX until calibrated).
static GAP_CYCLES: AtomicU64 = AtomicU64::new(u64::MAX);

/// How long a [`Calibration`] compares the two clocks: the error of the rate
/// is the clocks' read jitter (about a microsecond) over this.
pub const CALIBRATION: Duration = Duration::from_millis(20);

/// Rates believed (a processor's counter runs at 0.1 to 10 GHz).
const MIN_HZ: u64 = 100_000_000;
const MAX_HZ: u64 = 10_000_000_000;

/// The time-stamp counter.
#[inline(always)]
pub fn now() -> u64 {
    // SAFETY: RDTSC only reads the time-stamp counter into registers;
    // every x86-64 processor has it.
    unsafe { std::arch::x86_64::_rdtsc() }
}

/// Whether the processor says its counter is invariant.
pub fn invariant() -> bool {
    // Leaf 0x8000_0000 says which extended leaves exist.
    let highest = std::arch::x86_64::__cpuid(0x8000_0000).eax;
    highest >= 0x8000_0007 && std::arch::x86_64::__cpuid(0x8000_0007).edx & (1 << 8) != 0
}

/// Measuring the counter's rate against the monotonic clock: two readings
/// of both at least [`CALIBRATION`] apart, taken by the sampler thread at
/// its start and at its ticks (no wait).
#[derive(Debug)]
pub struct Calibration {
    /// The first reading (counter, clock); `None` once done, or when the
    /// counter is not invariant.
    first: Option<(u64, u64)>,
}

impl Calibration {
    /// Takes the first reading, if the counter is invariant.
    pub fn begin() -> Calibration {
        Calibration { first: invariant().then(reading) }
    }

    /// Once [`CALIBRATION`] has passed since the first reading, takes the
    /// second and publishes the rate if believable; returns it (Hz) then.
    pub fn tick(&mut self) -> Option<u64> {
        let (cycles_before, wall_before) = self.first?;
        let (cycles_after, wall_after) = reading();
        let nanos = wall_after.saturating_sub(wall_before);
        if nanos < CALIBRATION.as_nanos() as u64 {
            return None;
        }
        self.first = None;
        let cycles = cycles_after.wrapping_sub(cycles_before).max(1);
        let hz = u64::try_from(u128::from(cycles) * 1_000_000_000 / u128::from(nanos)).ok()?;
        if !(MIN_HZ..=MAX_HZ).contains(&hz) {
            return None;
        }
        let q32 = u64::try_from((u128::from(nanos) << 32) / u128::from(cycles)).ok()?;
        NS_PER_CYCLE_Q32.store(q32, Ordering::Relaxed);
        Some(hz)
    }
}

/// The counter and the monotonic clock read together: of five tries, the
/// one whose clock read the fewest cycles bracket (a try preempted between
/// the reads would skew the rate by the time it waited).
fn reading() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..5 {
        let before = now();
        let wall = crate::timer::now_ns();
        let after = now();
        let span = after.wrapping_sub(before);
        if span < best.0 {
            best = (span, before.wrapping_add(span / 2), wall);
        }
    }
    (best.1, best.2)
}

/// Whether a [`Calibration`] published a rate.
#[inline]
pub fn calibrated() -> bool {
    NS_PER_CYCLE_Q32.load(Ordering::Relaxed) != 0
}

/// Sets [`gap_cycles`] to one and a half `interval`s, once calibrated
/// (sampler thread, at every tick: the interval may change).
pub fn set_gap(interval: Duration) {
    let q32 = NS_PER_CYCLE_Q32.load(Ordering::Relaxed);
    if q32 != 0 {
        let cycles = (interval.as_nanos() * 3 / 2) << 32;
        let gap = u64::try_from(cycles / u128::from(q32)).unwrap_or(u64::MAX);
        GAP_CYCLES.store(gap, Ordering::Relaxed);
    }
}

/// The counter's cycles from the end of a timer's handler to the start of
/// the thread's next one past which the thread was not running all along
/// (one and a half sampling intervals): it was off its CPU, or its timer's
/// signals were lost (`handler`). Async-signal-safe: one atomic load.
#[inline]
pub fn gap_cycles() -> u64 {
    GAP_CYCLES.load(Ordering::Relaxed)
}

/// `cycles` of the counter in nanoseconds; `None` before calibration.
#[inline]
pub fn to_ns(cycles: u64) -> Option<u64> {
    let q32 = NS_PER_CYCLE_Q32.load(Ordering::Relaxed);
    (q32 != 0).then(|| ((u128::from(cycles) * u128::from(q32)) >> 32) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calibrated_counter_measures_a_sleep_as_the_monotonic_clock_does() {
        let mut calibration = Calibration::begin();
        if !invariant() {
            assert!(calibration.tick().is_none());
            eprintln!("no invariant time-stamp counter here: nothing to test");
            return;
        }
        std::thread::sleep(CALIBRATION + Duration::from_millis(5));
        let hz = calibration.tick().expect("a rate after the calibration's time");
        assert!((MIN_HZ..=MAX_HZ).contains(&hz) && calibrated());
        assert!(calibration.tick().is_none(), "published once");
        let (cycles_before, wall_before) = reading();
        std::thread::sleep(Duration::from_millis(30));
        let (cycles_after, wall_after) = reading();
        let measured = to_ns(cycles_after - cycles_before).unwrap() as f64;
        let wall = (wall_after - wall_before) as f64;
        // The rate's error is about a microsecond over 20 ms, 5e-5 (each
        // reading is the best of five, so one preempted read does not
        // count); a percent leaves room.
        assert!((measured / wall - 1.0).abs() < 0.01, "{measured} ns by the counter, {wall} by the clock");
    }

    #[test]
    fn no_rate_before_the_calibrations_time() {
        let started = crate::timer::now_ns();
        let mut calibration = Calibration::begin();
        let rate = calibration.tick();
        // (A thread preempted for the whole calibration time may have one.)
        if crate::timer::now_ns() - started < CALIBRATION.as_nanos() as u64 {
            assert!(rate.is_none());
        }
    }
}
