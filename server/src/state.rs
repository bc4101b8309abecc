//! What every handler gets: the sampler's shared state (profile, counters,
//! recent samples, control) and the server's own settings and metrics.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::response::Response;
use pcct::Metric;
use pcct_sampler::Shared;
use serde::Serialize;

use crate::error::ApiError;
use crate::heavy::HeavyJobs;
use crate::metrics::Metrics;
use crate::push::{PushConfig, PushStats};
use crate::recompile::RecompileGate;
use crate::secret::Credentials;
use crate::sessions::Sessions;
use crate::throttle::Throttle;
use crate::window::WindowBudget;

/// Settings of the server, from the agent's options.
#[derive(Clone)]
pub struct AppConfig {
    /// The control token (`token=`): every route but /healthz needs it or
    /// the read-only token; changes (pause, purge, interval, recompile)
    /// need this one (`crate::auth`).
    pub token: Option<String>,
    /// The read-only token (`read_token=`): routes that only read.
    pub read_token: Option<String>,
    /// Recompile requests are served without a control token
    /// (`recompile=unsafe-without-token`); else they need one.
    pub recompile_without_token: bool,
    /// Least time between two recompile requests (`crate::recompile`).
    pub recompile_every: Duration,
    /// Without a token: names besides loopback addresses and `localhost`
    /// that requests may give in `Host` (`same_origin`).
    pub allowed_hosts: Vec<String>,
    /// The agent's options in force, shown by /api/status.
    pub settings: serde_json::Value,
    /// Hot methods exported as a Prometheus gauge.
    pub metrics_top: usize,
    /// The metric reports and flame graphs count by default.
    pub report_metric: Metric,
    /// Requests that copy the whole profile (reports, flame graph, tree)
    /// allowed at once; more get 503.
    pub heavy_requests: usize,
    /// Most bytes of one text answer (reports, collapsed stacks, the flame
    /// graph's input); larger ones get 413.
    pub text_budget: usize,
    /// Most bytes of one JSON answer; larger ones get 413.
    pub json_budget: usize,
    /// The periodic push, if there is one (`crate::push`): its settings
    /// and counters, shown by /api/status and /metrics.
    pub push: Option<(Arc<PushStats>, PushConfig)>,
}

impl Default for AppConfig {
    fn default() -> Self {
        AppConfig {
            token: None,
            read_token: None,
            recompile_without_token: false,
            recompile_every: crate::recompile::DEFAULT_EVERY,
            allowed_hosts: Vec::new(),
            settings: serde_json::Value::Null,
            metrics_top: 10,
            report_metric: Metric::CpuNs,
            heavy_requests: 2,
            text_budget: crate::text_budget::MAX_TEXT_BYTES,
            json_budget: crate::json_answer::MAX_JSON_BYTES,
            push: None,
        }
    }
}

pub struct Inner {
    pub shared: Arc<Shared>,
    pub config: AppConfig,
    pub metrics: Metrics,
    pub heavy: HeavyJobs,
    /// The bytes the starts of open profile windows hold.
    pub windows: Arc<WindowBudget>,
    /// The tokens' digests and the roles they give.
    pub credentials: Credentials,
    /// Wrong tokens slowed down per client.
    pub throttle: Throttle,
    /// Browser sessions opened by the login form (with a token).
    pub sessions: parking_lot::Mutex<Sessions>,
    /// Recompile requests: one at a time, at most one per `recompile_every`.
    pub recompile: RecompileGate,
    pub started: Instant,
}

/// Cheap to clone: handlers share one `Inner`.
#[derive(Clone)]
pub struct AppState(pub Arc<Inner>);

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

/// The profile's vital signs, included in answers so a client knows how
/// fresh and how large the data is.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ProfileHeader {
    /// Every resource recorded since the last purge (`samples`, `cpu_ns`,
    /// `wall_ns`, and the event resources that are not zero).
    #[serde(flatten)]
    pub total: pcct::Weight,
    pub nodes: usize,
    /// Purge generation: node ids are valid within one epoch.
    pub epoch: u64,
    /// What the hot lists are sorted by.
    pub metric: &'static str,
    /// The sampler's current tick and the last tick it drained.
    pub tick: u64,
    pub drained_tick: u64,
    pub interval_ns: u64,
    /// The batch interval while the sampler drains in batches (null while
    /// it ticks every interval): the answer then asked for a drain first
    /// and waited for it, at most this long (`fresh`).
    pub batch_ns: Option<u64>,
    /// How long ago that drain completed: the answer holds every sample
    /// taken up to then (signalled up to one tick gap before then when the
    /// sampler ticks every interval; null before the first drain).
    pub drained_ago_ns: Option<u64>,
}

impl AppState {
    pub fn new(shared: Arc<Shared>, config: AppConfig) -> AppState {
        let heavy = HeavyJobs::new(config.heavy_requests);
        let metrics = Metrics::new(
            Arc::clone(&shared),
            config.metrics_top,
            config.push.as_ref().map(|(stats, _)| Arc::clone(stats)),
        );
        let windows = WindowBudget::new(crate::window::MAX_WINDOW_BYTES);
        let credentials = Credentials::new(config.token.as_deref(), config.read_token.as_deref());
        let recompile = RecompileGate::new(config.recompile_every);
        AppState(Arc::new(Inner {
            shared,
            config,
            metrics,
            heavy,
            windows,
            credentials,
            throttle: Throttle::default(),
            sessions: parking_lot::Mutex::default(),
            recompile,
            started: Instant::now(),
        }))
    }

    /// `value` as a JSON answer within the server's JSON budget, or 413
    /// naming `shrink` ([`crate::json_answer::json`]).
    pub fn json<T: Serialize>(&self, shrink: Option<&str>, value: &T) -> Result<Response, ApiError> {
        crate::json_answer::json(self.config.json_budget, shrink, value)
    }

    pub fn header(&self, tree: &pcct::Pcct) -> ProfileHeader {
        ProfileHeader {
            total: tree.total(),
            nodes: tree.node_count(),
            epoch: tree.epoch(),
            metric: tree.config().metric.name(),
            tick: self.shared.counters.ticks.load(Ordering::Relaxed),
            drained_tick: self.shared.drained_tick.load(Ordering::Acquire),
            interval_ns: self.shared.control.interval().as_nanos() as u64,
            batch_ns: self.shared.batching().map(|batch| batch.as_nanos() as u64),
            drained_ago_ns: match self.shared.drained_at_ns.load(Ordering::Acquire) {
                0 => None,
                at => Some(pcct_sampler::timer::now_ns().saturating_sub(at)),
            },
        }
    }
}
