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
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn now_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

fn sleep_until(deadline_ns: u64) {
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
    /// A timer whose first deadline is one interval from now. Call on the
    /// thread that will wait: it lowers that thread's timer slack.
    pub fn new(interval: Duration, max_spin: Duration) -> BusyWaitTimer {
        // SAFETY: PR_SET_TIMERSLACK changes only the calling thread's slack.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0u64, 0u64, 0u64) };
        let interval_ns = (interval.as_nanos() as u64).max(10_000);
        BusyWaitTimer {
            interval_ns,
            max_spin_ns: max_spin.as_nanos() as u64,
            deadline_ns: now_ns() + interval_ns,
            oversleep_x16: 10_000 * 16,
        }
    }

    pub fn interval(&self) -> Duration {
        Duration::from_nanos(self.interval_ns)
    }

    /// Changes the interval from the next tick on.
    pub fn set_interval(&mut self, interval: Duration) {
        let interval_ns = (interval.as_nanos() as u64).max(10_000);
        if interval_ns != self.interval_ns {
            self.interval_ns = interval_ns;
            self.deadline_ns = now_ns() + interval_ns;
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
        self.deadline_ns += (missed + 1) * self.interval_ns;
        Tick { late_ns, missed, spun_ns }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_keep_their_period_and_report_lateness() {
        let interval = Duration::from_millis(2);
        let mut timer = BusyWaitTimer::new(interval, Duration::from_micros(50));
        let start = now_ns();
        let mut missed = 0;
        for _ in 0..50 {
            missed += timer.wait().missed;
        }
        let elapsed = now_ns() - start;
        // 50 ticks (plus the ones skipped) of 2 ms each, never early.
        assert!(elapsed >= (50 + missed) * 2_000_000, "elapsed {elapsed}");
        assert!(timer.spin_window_ns() <= 50_000);
    }

    #[test]
    fn spinning_can_be_turned_off() {
        let mut timer = BusyWaitTimer::new(Duration::from_millis(1), Duration::ZERO);
        assert_eq!(timer.spin_window_ns(), 0);
        timer.wait();
    }
}
