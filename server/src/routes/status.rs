//! `/api/status`: options in force, uptime, counters, JVM and agent versions.

use std::sync::atomic::Ordering;

use axum::extract::{RawQuery, State};
use axum::response::Response;
use pcct_sampler::counters::CountersSnapshot;
use serde::Serialize;

use crate::error::ApiError;
use crate::heavy::HeavyJobsStatus;
use crate::params::Params;
use crate::state::{AppState, ProfileHeader};
use crate::window::WindowsStatus;

#[derive(Serialize)]
pub struct Sampling {
    pub running: bool,
    pub mode: &'static str,
    pub interval_ns: u64,
    /// Why sampling is off for good (signal taken, no AsyncGetCallTrace, ...).
    pub disabled: Option<String>,
    /// The sampler thread has returned (after VM death or a fatal problem).
    pub finished: bool,
}

#[derive(Serialize)]
pub struct Status {
    pub agent: &'static str,
    pub agent_version: &'static str,
    pub jvm_name: String,
    pub jvm_version: String,
    pub pid: u32,
    /// The stack walker in use.
    pub walker: String,
    /// Compiled code's debug information (DebugNonSafepoints).
    pub debug_info: String,
    /// Which events are recorded beside the samples (allocations, monitors).
    pub events: String,
    /// Whether samples carry native frames (`native=`), and from how many
    /// modules, or why not.
    pub native: String,
    /// Whether samples carry kernel frames (`kernel=`), or why not.
    pub kernel: String,
    pub uptime_s: f64,
    pub sampling: Sampling,
    pub settings: serde_json::Value,
    pub profile: ProfileHeader,
    pub arena_bytes_used: usize,
    pub arena_bytes_limit: usize,
    /// Contexts with event weights of their own (allocation and monitor
    /// sites), each taking `BYTES_PER_EVENT_CONTEXT` of the arena.
    pub event_contexts: usize,
    pub methods_named: usize,
    pub tree_stats: pcct::TreeStats,
    pub counters: CountersSnapshot,
    /// Report, tree and flame-graph computations alive (queued or running).
    pub heavy_jobs: HeavyJobsStatus,
    /// The live heap's table of sampled objects (`live=`).
    pub live_heap: pcct_sampler::live_heap::LiveHeapStatus,
    /// The inline records (CompiledMethodLoad) and the inline table.
    pub jit: pcct_jit::live::Summary,
    /// Profile windows open (`/debug/pprof/profile`).
    pub windows: WindowsStatus,
    /// The resources reports can count (`metric=`), from `pcct::Metric::ALL`,
    /// and the one they count by default.
    pub metrics: Vec<&'static str>,
    pub report_metric: &'static str,
    /// The periodic push, if there is one.
    pub push: Option<crate::push::PushStatus>,
}

/// `GET /api/status`
pub async fn status(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    Params::parse(query.as_deref(), &[])?;
    let vm = state.shared.vm.lock().clone();
    let control = &state.shared.control;
    let (profile, arena_used, arena_limit, event_contexts, methods, stats) = {
        let profile = state.shared.profile.lock();
        (
            state.header(&profile.tree),
            profile.tree.arena_used(),
            profile.tree.arena_limit(),
            profile.tree.event_contexts(),
            profile.methods.java_methods(),
            profile.tree.stats(),
        )
    };
    let answer = Status {
        agent: "pcct",
        agent_version: env!("CARGO_PKG_VERSION"),
        jvm_name: vm.jvm_name,
        jvm_version: vm.jvm_version,
        pid: vm.pid,
        walker: vm.walker,
        debug_info: vm.debug_info,
        events: vm.events,
        native: vm.native,
        kernel: kernel_status(state.shared.config.kernel),
        uptime_s: state.shared.started.elapsed().as_secs_f64(),
        sampling: Sampling {
            running: control.is_running() && !state.shared.finished.load(Ordering::Acquire),
            mode: control.mode().name(),
            interval_ns: control.interval().as_nanos() as u64,
            disabled: state.shared.disabled_reason(),
            finished: state.shared.finished.load(Ordering::Acquire),
        },
        settings: state.config.settings.clone(),
        profile,
        arena_bytes_used: arena_used,
        arena_bytes_limit: arena_limit,
        event_contexts,
        methods_named: methods,
        tree_stats: stats,
        counters: state.shared.counters.snapshot(),
        heavy_jobs: state.heavy.status(),
        live_heap: state.shared.live.status(),
        jit: state.shared.jit.summary(),
        windows: state.windows.status(),
        metrics: pcct::Metric::ALL.iter().map(|metric| metric.name()).collect(),
        report_metric: state.config.report_metric.name(),
        push: state.config.push.as_ref().map(|(stats, config)| stats.status(config)),
    };
    state.json(None, &answer)
}

/// What `/api/status` says of kernel frames: off, on, or refused by the
/// kernel (and why).
pub fn kernel_status(asked: bool) -> String {
    match (asked, pcct_sampler::cpu_timer::kernel_frames_refused()) {
        (false, _) => "off (kernel=off)".to_string(),
        (true, None) => "on: threads' own timers record the kernel's call chains (timer=thread, cpu mode)".to_string(),
        (true, Some(errno)) => format!(
            "refused by the kernel ({}): samples carry no kernel frames (EACCES: perf_event_paranoid must be 1 or \
             less, or the process needs CAP_PERFMON; EOVERFLOW: kernel.perf_event_max_stack is below 64; EINVAL: \
             the kernel has no backward rings)",
            std::io::Error::from_raw_os_error(errno)
        ),
    }
}
