//! Heavy requests: every route that starts work on a blocking thread
//! takes a permit first, so at most `heavy_requests` such jobs exist at
//! once. That is reports, collapsed stacks, the flame graph, the tree and
//! pprof (each copies the whole profile under the lock the sampler needs),
//! hot nodes beyond the hot list, the joins of hot edges with the inline
//! table (`/api/hot-edges`, `/api/jit/advice`, `/api/jit/directives`, the
//! check of a recompile request), and the start and end of a profile window.
//!
//! The permit is moved into the blocking job and released when the job
//! ends, not when the request does: a client that sends a heavy request
//! and disconnects cannot queue more jobs than there are permits. The job
//! is told when its request is gone ([`Cancel`], set when the handler is
//! dropped: the client disconnected or the connection's lifetime ended):
//! one that has not started yet returns at once, and one of several steps
//! stops between them, so an abandoned job gives its permit back soon. The
//! profile is copied inside the job, after the permit is held. Live jobs
//! are counted ([`HeavyJobs::live`], shown by `/api/status` and
//! `/metrics`), and so is the most that were ever alive at once.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pcct_sampler::{Profile, Shared};
use serde::Serialize;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;
use crate::state::AppState;

/// How long a heavy request waits for a permit before it gets 503.
const PERMIT_WAIT: Duration = Duration::from_secs(2);

/// The permits and the count of jobs holding them.
pub struct HeavyJobs {
    permits: Arc<Semaphore>,
    limit: usize,
    gauge: Arc<Gauge>,
}

#[derive(Default)]
struct Gauge {
    live: AtomicUsize,
    peak: AtomicUsize,
    started: AtomicU64,
}

/// What `/api/status` shows of the heavy jobs.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
pub struct HeavyJobsStatus {
    /// Jobs started and not yet finished (queued or running).
    pub live: usize,
    /// The most jobs alive at once since the server started.
    pub peak: usize,
    /// Jobs allowed at once.
    pub limit: usize,
    /// Jobs started since the server started.
    pub started: u64,
}

/// A job alive: holds its permit and counts itself out when dropped (the
/// job returned, panicked, or was never run).
struct LiveJob {
    gauge: Arc<Gauge>,
    _permit: OwnedSemaphorePermit,
}

impl LiveJob {
    fn start(gauge: &Arc<Gauge>, permit: OwnedSemaphorePermit) -> LiveJob {
        let live = gauge.live.fetch_add(1, Ordering::AcqRel) + 1;
        gauge.peak.fetch_max(live, Ordering::AcqRel);
        gauge.started.fetch_add(1, Ordering::Relaxed);
        LiveJob { gauge: Arc::clone(gauge), _permit: permit }
    }
}

impl Drop for LiveJob {
    fn drop(&mut self) {
        self.gauge.live.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Whether the request that started a job is gone. Cheap to check.
#[derive(Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// The request is gone: nobody waits for the job's result.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// Sets its [`Cancel`] when dropped before [`CancelOnDrop::finished`]:
/// held by the handler's future while its job runs.
struct CancelOnDrop(Option<Cancel>);

impl CancelOnDrop {
    fn finished(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(cancel) = self.0.take() {
            cancel.0.store(true, Ordering::Release);
        }
    }
}

impl HeavyJobs {
    pub fn new(limit: usize) -> HeavyJobs {
        let limit = limit.max(1);
        HeavyJobs { permits: Arc::new(Semaphore::new(limit)), limit, gauge: Arc::default() }
    }

    /// Jobs started and not yet finished.
    pub fn live(&self) -> usize {
        self.gauge.live.load(Ordering::Acquire)
    }

    pub fn status(&self) -> HeavyJobsStatus {
        HeavyJobsStatus {
            live: self.live(),
            peak: self.gauge.peak.load(Ordering::Acquire),
            limit: self.limit,
            started: self.gauge.started.load(Ordering::Relaxed),
        }
    }

    /// Runs `work` on a copy of the profile on a blocking thread, once a
    /// permit is free (waiting at most two seconds, else 503). The copy is
    /// taken in the job, under the permit; the permit is released when the
    /// job ends, even if the request that started it is gone.
    pub async fn run<T: Send + 'static>(
        &self,
        shared: &Arc<Shared>,
        work: impl FnOnce(Profile) -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        self.run_waiting(shared, PERMIT_WAIT, work).await
    }

    /// [`HeavyJobs::run`], waiting at most `wait` for a permit (the end of
    /// a profile window waits longer than a report: giving up would lose
    /// the whole window).
    pub async fn run_waiting<T: Send + 'static>(
        &self,
        shared: &Arc<Shared>,
        wait: Duration,
        work: impl FnOnce(Profile) -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        let shared = Arc::clone(shared);
        self.run_blocking(wait, move |_| work(shared.snapshot())).await
    }

    /// Runs `work` on a blocking thread once a permit is free (waiting at
    /// most `wait`, else 503). `work` does not run if its request is gone
    /// before it starts, and may check [`Cancel`] between its steps.
    pub async fn run_blocking<T: Send + 'static>(
        &self,
        wait: Duration,
        work: impl FnOnce(&Cancel) -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        let permit = tokio::time::timeout(wait, Arc::clone(&self.permits).acquire_owned())
            .await
            .map_err(|_| ApiError::busy("too many report requests at once; retry shortly"))?
            .map_err(|_| ApiError::busy("shutting down"))?;
        let job = LiveJob::start(&self.gauge, permit);
        let cancel = Cancel::default();
        let guard = CancelOnDrop(Some(cancel.clone()));
        let done = tokio::task::spawn_blocking(move || {
            let _job = job;
            (!cancel.is_set()).then(|| work(&cancel))
        })
        .await;
        guard.finished();
        done.ok().flatten().ok_or_else(|| ApiError::internal("the report failed"))
    }
}

/// Runs `work` on a copy of `state`'s profile as a heavy job ([`HeavyJobs::run`]).
pub async fn with_snapshot<T: Send + 'static>(
    state: &AppState,
    work: impl FnOnce(Profile) -> T + Send + 'static,
) -> Result<T, ApiError> {
    state.heavy.run(&state.shared, work).await
}

/// Runs `work` as a heavy job of `state` ([`HeavyJobs::run_blocking`],
/// waiting for a permit as long as a report does).
pub async fn blocking<T: Send + 'static>(
    state: &AppState,
    work: impl FnOnce(&Cancel) -> T + Send + 'static,
) -> Result<T, ApiError> {
    state.heavy.run_blocking(PERMIT_WAIT, work).await
}
