//! Waiting for something by polling it until a deadline.

use std::time::{Duration, Instant};

/// Calls `check` until it returns `Some` (returned) or `deadline` passes
/// (`None`), pausing a few milliseconds between calls.
pub fn poll_until<T>(deadline: Instant, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    loop {
        if let Some(value) = check() {
            return Some(value);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5).min(deadline - now));
    }
}
