//! Windows of the live profile, as pprof: the part of the profile recorded
//! between [`open`] and [`finish`] (`pcct::window`), for
//! `/debug/pprof/profile?seconds=N` and the periodic push.
//!
//! Opening copies every node's weights under the profile lock (48 bytes a
//! node, 32 more a site; the sampler waits for that lock at most half an interval, as for
//! any reader), on a blocking thread. Finishing works on a snapshot, off
//! the lock. Each window has its own start, so concurrent windows of any
//! lengths never disturb one another; the open windows are bounded in
//! number ([`MAX_OPEN_WINDOWS`]) and their starts together in bytes
//! ([`WindowBudget`]); beyond either, 503.
//!
//! A purge, a new tree (mode change) or a method table that started over
//! during a window is said in the answer: a pprof comment, and the
//! `X-Pcct-Window` header of the HTTP route.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pcct::export::pprof::{self, PprofContext};
use pcct::export::ReportOptions;
use pcct::window::WindowStart;
use pcct_sampler::{Profile, Shared};

use crate::error::ApiError;
use crate::text_budget::within_budget_bytes;

/// Most bytes the starts of all open windows may hold together.
pub const MAX_WINDOW_BYTES: usize = 64 << 20;

/// Most windows open at once, whatever the profile's size: each holds a
/// connection (of the server's 64) until it ends, up to 300 s.
pub const MAX_OPEN_WINDOWS: usize = 16;

/// The bytes held by the starts of open windows, and their limit.
pub struct WindowBudget {
    used: AtomicUsize,
    open: AtomicUsize,
    limit: usize,
}

/// What `/api/status` shows of the open windows.
#[derive(Clone, Copy, Debug, serde::Serialize, PartialEq, Eq)]
pub struct WindowsStatus {
    /// Windows open now.
    pub open: usize,
    /// Bytes their starts hold.
    pub bytes: usize,
    /// Most bytes they may hold together.
    pub limit: usize,
}

impl WindowBudget {
    pub fn new(limit: usize) -> Arc<WindowBudget> {
        Arc::new(WindowBudget { used: AtomicUsize::new(0), open: AtomicUsize::new(0), limit })
    }

    pub fn status(&self) -> WindowsStatus {
        WindowsStatus { open: self.open.load(Ordering::Acquire), bytes: self.used(), limit: self.limit }
    }

    /// Bytes held now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// One of the [`MAX_OPEN_WINDOWS`] places, and `bytes` of the limit.
    fn reserve(self: &Arc<Self>, bytes: usize) -> Option<Reservation> {
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| (open < MAX_OPEN_WINDOWS).then_some(open + 1))
            .ok()?;
        let reserved = self.used.fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
            used.checked_add(bytes).filter(|&wanted| wanted <= self.limit)
        });
        if reserved.is_err() {
            self.open.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Reservation { budget: Arc::clone(self), bytes })
    }
}

/// Bytes of the budget a window holds until it is dropped.
struct Reservation {
    budget: Arc<WindowBudget>,
    bytes: usize,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
        self.budget.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A window that has started.
pub struct OpenWindow {
    start: WindowStart,
    /// The method table's resets when the window opened.
    resets: u64,
    _reservation: Reservation,
}

impl OpenWindow {
    /// When the window started.
    pub fn started(&self) -> Instant {
        self.start.at()
    }
}

/// Starts a window of `shared`'s profile: copies its weights under the
/// lock (blocking: call it off the async runtime). 503 when the open
/// windows' starts would exceed `budget`.
pub fn open(shared: &Shared, budget: &Arc<WindowBudget>) -> Result<OpenWindow, ApiError> {
    let profile = shared.profile.lock();
    let bytes = profile.tree.window_start_bytes();
    let reservation = budget.reserve(bytes).ok_or_else(|| {
        ApiError::busy("too many profile windows open at once for this profile's size; retry when one has ended")
    })?;
    let start = profile.tree.window_start();
    drop(profile);
    let resets = shared.counters.method_table_resets.load(Ordering::Acquire);
    Ok(OpenWindow { start, resets, _reservation: reservation })
}

/// A finished window as pprof.
pub struct PprofWindow {
    /// Gzipped profile.proto.
    pub bytes: Vec<u8>,
    /// The window lost what came before a purge (or a new tree, or a
    /// method table that started over).
    pub restarted: bool,
    /// What the window covers.
    pub duration: Duration,
    /// Samples in the window.
    pub samples: u64,
}

/// Ends `window` on `profile` (a snapshot taken now) and writes it as
/// pprof within `budget` bytes (`None` beyond it). `period_ns` is the
/// sampling interval.
pub fn finish(
    shared: &Shared,
    window: OpenWindow,
    profile: &Profile,
    options: &ReportOptions,
    period_ns: u64,
    budget: usize,
) -> Result<Option<PprofWindow>, ApiError> {
    let reset = shared.counters.method_table_resets.load(Ordering::Acquire) != window.resets;
    pprof_of(&window.start, reset, profile, options, period_ns, budget).map_err(ApiError::internal)
}

/// The window from `start` to `profile` as pprof within `budget` bytes
/// (`None` beyond it); `reset`: the method table started over meanwhile.
pub fn pprof_of(
    start: &WindowStart,
    reset: bool,
    profile: &Profile,
    options: &ReportOptions,
    period_ns: u64,
    budget: usize,
) -> Result<Option<PprofWindow>, String> {
    let cut = pcct::window::window(start, &profile.tree)
        .map_err(|error| format!("the window could not be built: {error}"))?;
    let duration = cut.since.elapsed();
    let mut comments = vec![format!("pcct window of {:.3} s", duration.as_secs_f64())];
    if cut.restarted {
        comments.push(format!(
            "the profile was purged during this window: it holds only the last {:.3} s of the {:.3} s asked for",
            duration.as_secs_f64(),
            start.at().elapsed().as_secs_f64()
        ));
    }
    if reset {
        comments.push("the method table started over during this window (methods= limit)".to_string());
    }
    let context = PprofContext {
        period_ns,
        time_nanos: pprof::unix_nanos_before(duration),
        duration_nanos: duration.as_nanos().min(i64::MAX as u128) as i64,
        comments,
    };
    let bytes = within_budget_bytes(budget, |out| pprof::write_to(out, &cut.tree, &profile.methods, options, &context));
    Ok(bytes.map(|bytes| PprofWindow {
        bytes,
        restarted: cut.restarted || reset,
        duration,
        samples: cut.tree.total().samples,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcct::{Frame, Marks, Weight};
    use pcct_sampler::SamplerConfig;

    fn record(shared: &Shared, count: u64) {
        let mut profile = shared.profile.lock();
        let method = Arc::make_mut(&mut profile.methods).intern("A", "run", "()V");
        for _ in 0..count {
            profile.tree.record(&mut Marks::new(), &[Frame::new(method, 0)], Weight::sample(1000, 1000)).unwrap();
        }
    }

    #[test]
    fn a_window_holds_its_samples_and_its_start_holds_budget_until_it_ends() {
        let shared = Shared::new(SamplerConfig::default()).unwrap();
        record(&shared, 3);
        let budget = WindowBudget::new(1 << 20);
        let window = open(&shared, &budget).unwrap();
        assert!(budget.used() > 0);
        assert_eq!(budget.status().open, 1);
        record(&shared, 2);
        let answer =
            finish(&shared, window, &shared.snapshot(), &ReportOptions::default(), 1000, 1 << 20).unwrap().unwrap();
        assert_eq!(budget.used(), 0, "the start is given back when the window ends");
        assert_eq!(budget.status().open, 0);
        assert_eq!(answer.samples, 2);
        assert!(!answer.restarted);
        let profile = pprof::decode(&answer.bytes).unwrap();
        assert_eq!(profile.sample.iter().map(|s| s.value[0]).sum::<i64>(), 2);
        assert_eq!(profile.period, 1000);
    }

    #[test]
    fn no_more_than_the_most_windows_are_open_at_once() {
        let shared = Shared::new(SamplerConfig::default()).unwrap();
        record(&shared, 1);
        let budget = WindowBudget::new(MAX_WINDOW_BYTES);
        let windows: Vec<OpenWindow> = (0..MAX_OPEN_WINDOWS).map(|_| open(&shared, &budget).unwrap()).collect();
        assert_eq!(open(&shared, &budget).err().unwrap().status, axum::http::StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(budget.status().open, MAX_OPEN_WINDOWS);
        drop(windows);
        assert_eq!((budget.status().open, budget.used()), (0, 0));
        assert!(open(&shared, &budget).is_ok());
    }

    #[test]
    fn windows_beyond_the_budget_are_refused_and_a_purge_is_said() {
        let shared = Shared::new(SamplerConfig::default()).unwrap();
        record(&shared, 1);
        let one = shared.profile.lock().tree.window_start_bytes();
        let budget = WindowBudget::new(one + one / 2);
        let first = open(&shared, &budget).unwrap();
        assert_eq!(open(&shared, &budget).err().unwrap().status, axum::http::StatusCode::SERVICE_UNAVAILABLE);
        shared.purge();
        record(&shared, 4);
        let answer =
            finish(&shared, first, &shared.snapshot(), &ReportOptions::default(), 1000, 1 << 20).unwrap().unwrap();
        assert!(answer.restarted);
        assert_eq!(answer.samples, 4);
        let profile = pprof::decode(&answer.bytes).unwrap();
        let comments: Vec<&str> = profile.comment.iter().map(|&i| profile.string_table[i as usize].as_str()).collect();
        assert!(comments.iter().any(|c| c.contains("purged during this window")), "{comments:?}");
        assert!(open(&shared, &budget).is_ok());
    }
}
