//! The sampler thread's doorbell: how anyone with work for it wakes it
//! before its next batch (`sampler`, "Batches").
//!
//! With the threads' own CPU timers taking the samples, the sampler thread
//! only drains, and sleeps a batch interval between two drains. Whoever
//! needs a drain sooner rings:
//!
//! - a signal handler whose slot holds [`crate::slots::RING_AT_WAITING`]
//!   waiting samples, or that borrowed a region of a pool running low (the
//!   places would run out before the batch ends);
//! - a thread's registration (its timer is opened at the next drain);
//! - a full-ish event queue, a control change (pause, interval, mode,
//!   stop) and an HTTP answer that wants the newest samples
//!   ([`crate::shared::Shared::drain_now`]).
//!
//! [`Doorbell::ring`] is async-signal-safe: two atomic operations, and a
//! `futex(FUTEX_WAKE)` system call only while the sampler sleeps on the bell
//! (so a handler usually makes none). It allocates nothing, takes no lock
//! and leaves `errno` to its caller's guard (the handler's `ErrnoGuard`).
//!
//! The sleeper announces itself before it checks the bell, and the ringer
//! counts its ring before it checks for a sleeper, both sequentially
//! consistent: either the sleeper sees the ring and does not sleep, or the
//! ringer sees the sleeper and wakes it. The kernel's own check of the
//! bell's word (the futex compares it with the value the sleeper saw) closes
//! the gap between the sleeper's check and its sleep.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// The process's one doorbell: the handlers reach it as a static (their
/// rule 5), and there is one sampler thread per agent.
pub static DOORBELL: Doorbell = Doorbell::new();

pub struct Doorbell {
    /// Rings so far (wrapping): the futex word.
    rings: AtomicU32,
    /// The sampler sleeps on the bell (or is about to).
    sleeping: AtomicBool,
}

impl Doorbell {
    pub const fn new() -> Doorbell {
        Doorbell { rings: AtomicU32::new(0), sleeping: AtomicBool::new(false) }
    }

    /// Wakes the sampler if it sleeps on the bell; else its next wait
    /// returns at once. Async-signal-safe (module doc).
    #[inline]
    pub fn ring(&self) {
        self.rings.fetch_add(1, Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) {
            // SAFETY: FUTEX_WAKE on a word we own; it reads nothing else.
            unsafe {
                libc::syscall(libc::SYS_futex, self.rings.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, 1);
            }
        }
    }

    /// The bell's count now: a [`Doorbell::wait_until`] after it returns at
    /// once if anyone rang since.
    pub fn seen(&self) -> u32 {
        self.rings.load(Ordering::SeqCst)
    }

    /// Sleeps until the monotonic clock reads `deadline_ns`, or until
    /// someone rings after `seen` was read. Returns whether it was rung
    /// (sampler thread only).
    pub fn wait_until(&self, seen: u32, deadline_ns: u64) -> bool {
        self.sleeping.store(true, Ordering::SeqCst);
        let rung = loop {
            if self.rings.load(Ordering::SeqCst) != seen {
                break true;
            }
            let now = crate::timer::now_ns();
            if now >= deadline_ns {
                break false;
            }
            let deadline = libc::timespec {
                tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
            };
            // SAFETY: FUTEX_WAIT_BITSET on a word we own, with an absolute
            // CLOCK_MONOTONIC deadline we own; it returns when woken, when
            // the word is no longer `seen`, at the deadline or on a signal.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    self.rings.as_ptr(),
                    libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG,
                    seen,
                    &deadline as *const libc::timespec,
                    std::ptr::null::<u32>(),
                    libc::FUTEX_BITSET_MATCH_ANY,
                );
            }
        };
        self.sleeping.store(false, Ordering::SeqCst);
        rung
    }
}

impl Default for Doorbell {
    fn default() -> Doorbell {
        Doorbell::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timer::now_ns;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn an_unrung_bell_sleeps_to_its_deadline() {
        let bell = Doorbell::new();
        let start = now_ns();
        assert!(!bell.wait_until(bell.seen(), start + 20_000_000));
        assert!(now_ns() - start >= 20_000_000);
    }

    #[test]
    fn a_ring_before_the_wait_returns_at_once() {
        let bell = Doorbell::new();
        let seen = bell.seen();
        bell.ring();
        let start = now_ns();
        assert!(bell.wait_until(seen, start + 10_000_000_000));
        assert!(now_ns() - start < 5_000_000_000);
    }

    #[test]
    fn a_ring_during_the_wait_wakes_the_sleeper() {
        let bell = Arc::new(Doorbell::new());
        let ringer = Arc::clone(&bell);
        let seen = bell.seen();
        let thread = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            ringer.ring();
        });
        let start = now_ns();
        // Ten seconds: a lost wake-up fails the test by its time.
        assert!(bell.wait_until(seen, start + 10_000_000_000));
        assert!(now_ns() - start < 5_000_000_000, "woken late: a lost wake-up");
        thread.join().unwrap();
    }
}
