//! Fresh answers while the sampler drains in batches: before a route reads
//! the profile, the sampler is asked to drain now (its doorbell), and the
//! answer waits for that drain, at most one batch interval.
//!
//! With the threads' own CPU timers the sampler thread drains every batch
//! interval (`batch=`), not every sampling interval. Without this step an
//! answer could miss up to a batch of samples already taken. With it, an
//! answer holds every sample taken before its request arrived. That drain
//! waits for a thread switched out inside its signal handler (whose slot
//! holds its earlier samples behind the one it writes) at most half a
//! batch; if the drain takes longer than a batch interval, the answer says
//! what is drained, and `profile.drained_ago_ns` says how old that is. When the
//! sampler ticks every interval (`timer=sampler`, wall mode, `batch=off`, or
//! a batch no longer than the interval), an answer is at most one tick old
//! already and nothing waits.
//!
//! A drain asked for wakes the sampler at most once per sampling interval
//! (`sampler`, "Batches"), however many requests ask: readers cannot make
//! it work harder than it does at `batch=off`.

use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use pcct_sampler::shared::Shared;

use crate::state::AppState;

/// How often a waiting answer looks whether its drain completed.
const POLL: Duration = Duration::from_micros(250);

/// Whether the route at `path` reads the profile (and so wants the newest
/// samples in it).
fn reads_profile(method: &Method, path: &str) -> bool {
    method == Method::GET
        && (path == "/metrics"
            || path == "/flamegraph.svg"
            || (path.starts_with("/api/") && path != "/api/openapi.json" && !path.starts_with("/api/jit/")))
}

/// Middleware: drains first for the routes that read the profile.
pub async fn drain_first(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if reads_profile(request.method(), request.uri().path()) {
        wait_for_drain(&state.shared).await;
    }
    next.run(request).await
}

/// Rings the sampler and waits until a tick that started after the ring
/// has drained, at most one batch interval (nothing when the sampler is not
/// batching, or has stopped).
pub async fn wait_for_drain(shared: &Shared) {
    let Some(batch) = shared.batching() else { return };
    let tick = shared.counters.ticks.load(Ordering::Acquire);
    shared.ask_for_drain();
    let deadline = tokio::time::Instant::now() + batch;
    while shared.drained_tick.load(Ordering::Acquire) <= tick && !shared.finished.load(Ordering::Acquire) {
        if tokio::time::Instant::now() >= deadline {
            shared.counters.fresh_waits_expired.fetch_add(1, Ordering::Relaxed);
            return;
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reads_of_the_profile_wait() {
        for path in ["/metrics", "/flamegraph.svg", "/api/status", "/api/collapsed", "/api/hot-methods"] {
            assert!(reads_profile(&Method::GET, path), "{path}");
        }
        for path in ["/", "/healthz", "/api/openapi.json", "/api/jit/advice", "/login", "/docs/x"] {
            assert!(!reads_profile(&Method::GET, path), "{path}");
        }
        assert!(!reads_profile(&Method::POST, "/api/purge"));
    }
}
