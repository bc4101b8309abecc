//! The busy-wait timer (Whaley Section 6.4, tuned per `shared/NOTES.md`).
//!
//! Each tick has an absolute deadline on CLOCK_MONOTONIC. The timer sleeps
//! with `clock_nanosleep(TIMER_ABSTIME)` until a *spin window* before the
//! deadline, then spins to it. The thread's timer slack is set to 1 ns
//! (`PR_SET_TIMERSLACK`), which makes the sleep itself wake within a few
//! microseconds, so the window only has to cover that lateness.
//!
//! The window adapts: it follows the recent oversleep of the sleep call
//! (how late it woke against the point it was asked to wake), plus a small
//! margin, and is capped by `max_spin`. Long spins backfire on a machine
//! whose cores are all busy (the spinning thread is preempted and misses
//! ticks), and every microsecond spun is a microsecond of a core taken from
//! the application, so the cap is small and `max_spin = 0` turns spinning off.
//!
//! Ticks are counted as *late* when they start more than a tenth of the
//! interval after their deadline, and as *missed* when a whole interval
//! passed: the timer then skips to the next deadline in the future instead of
//! firing a burst of catch-up ticks.
//!
//! # Jitter
//!
//! A strictly periodic sampler aliases with a program whose work is
//! periodic at the same period (or a divisor of it): every sample lands in
//! the same phase, and the profile shows whatever that phase runs. The
//! harness found it: `GroundTruth` runs rounds of 50 ms of CPU, and at a
//! 50 ms interval pcct's per-context precision fell to 0.13 where the
//! jittery JFR kept 0.99. So each gap between deadlines is drawn uniformly
//! from `(1 - jitter) .. (1 + jitter)` intervals (option `jitter`, default
//! 0.5, `0` for the strictly periodic timer of the paper). The mean gap
//! stays one interval, so rates and CPU weights are unchanged; the phase
//! of the samples against any period becomes a random walk (with jitter
//! 0.5, a step of 0.29 intervals: within about a dozen ticks a sample can
//! land anywhere in a period as long as the interval). Mytkowicz et al.
//! ("Evaluating the accuracy of Java profilers", PLDI 2010) make the same
//! point for sampling profilers in general: samples must be taken at
//! random points.

use std::time::Duration;

/// What happened at one tick.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tick {
    /// Nanoseconds between the deadline and the moment the tick started.
    pub late_ns: u64,
    /// Whole intervals skipped before this tick.
    pub missed: u64,
    /// Nanoseconds spent spinning for this tick.
    pub spun_ns: u64,
}

impl Tick {
    pub fn is_late(&self, interval: Duration) -> bool {
        self.late_ns > interval.as_nanos() as u64 / 10
    }
}

pub struct BusyWaitTimer {
    interval_ns: u64,
    max_spin_ns: u64,
    deadline_ns: u64,
    /// Smoothed oversleep of clock_nanosleep, nanoseconds (x16 fixed point).
    oversleep_x16: u64,
    /// Largest deviation of a gap from the interval, in 1/65536 of an interval.
    jitter_x65536: u64,
    /// xorshift64* state for the gaps (never 0).
    random_state: u64,
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn now_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

pub(crate) fn sleep_until(deadline_ns: u64) {
    let target =
        libc::timespec { tv_sec: (deadline_ns / 1_000_000_000) as i64, tv_nsec: (deadline_ns % 1_000_000_000) as i64 };
    loop {
        // SAFETY: absolute sleep on CLOCK_MONOTONIC with a timespec we own.
        let rc =
            unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &target, std::ptr::null_mut()) };
        if rc != libc::EINTR {
            return;
        }
    }
}

impl BusyWaitTimer {
    /// A timer whose gaps between deadlines are drawn uniformly from
    /// `(1 - jitter) .. (1 + jitter)` intervals (`jitter` is clamped to
    /// 0..=0.9; 0: strictly periodic); the first deadline is one such gap
    /// from now. Call on the thread that will wait: it lowers that thread's
    /// timer slack.
    pub fn new(interval: Duration, max_spin: Duration, jitter: f64) -> BusyWaitTimer {
        // SAFETY: PR_SET_TIMERSLACK changes only the calling thread's slack.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0u64, 0u64, 0u64) };
        let interval_ns = (interval.as_nanos() as u64).max(10_000);
        let jitter = if jitter.is_finite() { jitter.clamp(0.0, 0.9) } else { 0.0 };
        let seed = now_ns() ^ (std::process::id() as u64).rotate_left(32) ^ 0x9E37_79B9_7F4A_7C15;
        let mut timer = BusyWaitTimer {
            interval_ns,
            max_spin_ns: max_spin.as_nanos() as u64,
            deadline_ns: 0,
            oversleep_x16: 10_000 * 16,
            jitter_x65536: (jitter * 65536.0) as u64,
            random_state: seed | 1,
        };
        timer.deadline_ns = now_ns() + timer.next_gap_ns();
        timer
    }

    /// The next gap between deadlines: the interval, moved by up to
    /// `jitter` intervals either way.
    fn next_gap_ns(&mut self) -> u64 {
        if self.jitter_x65536 == 0 {
            return self.interval_ns;
        }
        // xorshift64* (Vigna): plenty for spreading ticks.
        let mut x = self.random_state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.random_state = x;
        let random = x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32; // 0 .. 2^32
        let spread = self.interval_ns as u128 * self.jitter_x65536 as u128 / 65536; // max deviation
        let offset = (spread * 2 * random as u128) >> 32; // 0 .. 2 x spread
        (self.interval_ns as u128 - spread + offset) as u64
    }

    pub fn interval(&self) -> Duration {
        Duration::from_nanos(self.interval_ns)
    }

    /// Changes the interval from the next tick on.
    pub fn set_interval(&mut self, interval: Duration) {
        let interval_ns = (interval.as_nanos() as u64).max(10_000);
        if interval_ns != self.interval_ns {
            self.interval_ns = interval_ns;
            self.deadline_ns = now_ns() + self.next_gap_ns();
        }
    }

    /// The spin window in use now.
    pub fn spin_window_ns(&self) -> u64 {
        // Cover the typical oversleep with a margin of a quarter plus 2 µs.
        let typical = self.oversleep_x16 / 16;
        (typical + typical / 4 + 2_000).min(self.max_spin_ns)
    }

    /// Waits for the next deadline.
    pub fn wait(&mut self) -> Tick {
        let window = self.spin_window_ns();
        let wake_at = self.deadline_ns.saturating_sub(window);
        let before = now_ns();
        if wake_at > before {
            sleep_until(wake_at);
            let woke = now_ns();
            let oversleep = woke.saturating_sub(wake_at).min(self.interval_ns);
            // Exponential moving average with weight 1/8.
            self.oversleep_x16 = self.oversleep_x16 - self.oversleep_x16 / 8 + oversleep * 2;
        }
        let spin_start = now_ns();
        let mut now = spin_start;
        while now < self.deadline_ns {
            std::hint::spin_loop();
            now = now_ns();
        }
        let spun_ns = if spin_start < self.deadline_ns { now - spin_start } else { 0 };
        let late_ns = now - self.deadline_ns;
        let missed = late_ns / self.interval_ns;
        self.deadline_ns += missed * self.interval_ns + self.next_gap_ns();
        Tick { late_ns, missed, spun_ns }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_keep_their_period_and_report_lateness() {
        let interval = Duration::from_millis(2);
        let start = now_ns();
        let mut timer = BusyWaitTimer::new(interval, Duration::from_micros(50), 0.0);
        let mut missed = 0;
        for _ in 0..49 {
            missed += timer.wait().missed;
        }
        timer.wait();
        let elapsed = now_ns() - start;
        // 50 ticks (plus the ones skipped before the last) of 2 ms each,
        // never early.
        assert!(elapsed >= (50 + missed) * 2_000_000, "elapsed {elapsed}");
        assert!(timer.spin_window_ns() <= 50_000);
    }

    #[test]
    fn jittered_gaps_stay_in_range_and_average_one_interval() {
        let interval = Duration::from_millis(10);
        let mut timer = BusyWaitTimer::new(interval, Duration::ZERO, 0.5);
        let gaps: Vec<u64> = (0..20_000).map(|_| timer.next_gap_ns()).collect();
        assert!(gaps.iter().all(|&g| (5_000_000..=15_000_000).contains(&g)), "a gap outside 5..15 ms");
        let mean = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64;
        assert!((mean - 10e6).abs() < 0.02 * 10e6, "mean gap {mean} ns");
        // Spread over the whole range: each tenth of it gets about a tenth.
        let mut deciles = [0usize; 10];
        for &g in &gaps {
            deciles[(((g - 5_000_000) * 10 / 10_000_001) as usize).min(9)] += 1;
        }
        assert!(deciles.iter().all(|&n| (1_600..=2_400).contains(&n)), "deciles {deciles:?}");
        // Successive gaps are not correlated.
        let centred: Vec<f64> = gaps.iter().map(|&g| g as f64 - mean).collect();
        let lag1: f64 = centred.windows(2).map(|w| w[0] * w[1]).sum::<f64>();
        let var: f64 = centred.iter().map(|c| c * c).sum::<f64>();
        assert!((lag1 / var).abs() < 0.05, "lag-1 autocorrelation {}", lag1 / var);
    }

    #[test]
    fn no_jitter_is_strictly_periodic() {
        let mut timer = BusyWaitTimer::new(Duration::from_millis(3), Duration::ZERO, 0.0);
        assert!((0..100).all(|_| timer.next_gap_ns() == 3_000_000));
    }

    #[test]
    fn spinning_can_be_turned_off() {
        let mut timer = BusyWaitTimer::new(Duration::from_millis(1), Duration::ZERO, 0.0);
        assert_eq!(timer.spin_window_ns(), 0);
        timer.wait();
    }
}
