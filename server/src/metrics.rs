//! Prometheus metrics through the `prometheus` crate: the sampler's
//! counters and histograms and the profile's size (read at scrape time by a
//! custom collector), the top-K hot methods (bounded cardinality: K series,
//! labelled by rank and method), and HTTP requests by route and status.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use pcct_sampler::counters::HistogramSnapshot;
use pcct_sampler::handler::Walker;
use pcct_sampler::Shared;
use prometheus::core::{Collector, Desc};
use prometheus::proto::{Bucket, Counter, Gauge, Histogram, LabelPair, Metric, MetricFamily, MetricType};
use prometheus::{Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts, Registry, TextEncoder};

use crate::heavy::HeavyJobsStatus;

/// The families the sampler collector emits: (name, help, type, labels).
const FAMILIES: &[(&str, &str, MetricType, &[&str])] = &[
    ("pcct_build_info", "Agent version (always 1).", MetricType::GAUGE, &["version"]),
    ("pcct_sampler_ticks_total", "Timer ticks of the sampler thread.", MetricType::COUNTER, &[]),
    ("pcct_sampler_ticks_late_total", "Ticks that started more than a tenth of the interval late.", MetricType::COUNTER, &[]),
    ("pcct_sampler_ticks_missed_total", "Whole intervals the timer skipped because it fell behind.", MetricType::COUNTER, &[]),
    ("pcct_sampler_spin_seconds_total", "CPU time the busy-wait timer spun.", MetricType::COUNTER, &[]),
    ("pcct_sampler_wakes_rung_total", "Wakes of the batching sampler before its batch ended (a slot half full, the pool low, a new thread, a query, a control change).", MetricType::COUNTER, &[]),
    ("pcct_http_fresh_waits_expired_total", "Answers that waited a whole batch interval for a drain and answered without it.", MetricType::COUNTER, &[]),
    ("pcct_sampler_cpu_seconds_total", "CPU time of the sampler thread itself (waking, spinning, draining, signalling).", MetricType::COUNTER, &[]),
    ("pcct_sampling_interval_seconds", "Current sampling interval.", MetricType::GAUGE, &[]),
    ("pcct_sampling_running", "1 while sampling, 0 when paused, finished or disabled.", MetricType::GAUGE, &[]),
    ("pcct_signals_total", "Sampling signals by result: sent (by the sampler, or by a thread's CPU timer for a sample), failed (thread gone), stray (not ours), stale (arrived too late), busy (a thread's CPU timer fired while its two previous samples waited to be drained, or while they were being drained).", MetricType::COUNTER, &["result"]),
    ("pcct_thread_timers_total", "Threads' own CPU timers (timer=thread, cpu mode): opened, or refused by the kernel (the sampler signals those threads).", MetricType::COUNTER, &["event"]),
    ("pcct_samples_timed_total", "Samples taken at a signal of the thread's own CPU timer (part of pcct_signals_total{result=\"sent\"}).", MetricType::COUNTER, &[]),
    ("pcct_samples_queued_total", "Samples of a thread's own CPU timer taken while an earlier sample of it still waited for the sampler thread (a place behind the first in its slot; part of pcct_samples_timed_total).", MetricType::COUNTER, &[]),
    ("pcct_samples_total", "Per-thread tick outcomes: recorded, idle (CPU clock barely moved), filtered (register checksum unchanged), failed (stack walk failed), busy (previous sample pending), lost (never handled), retired (thread ended before its sample was drained), deferred (cpu mode: the signal reached the thread after it waited off the CPU, so its registers were where it was preempted; its CPU time went to its next sample), dropped_full (arena full).", MetricType::COUNTER, &["outcome"]),
    ("pcct_samples_wall_credited_total", "Checksum-filtered samples whose wall time was credited to the thread's previous context (wall mode).", MetricType::COUNTER, &[]),
    ("pcct_samples_failed_total", "Failed stack walks by AsyncGetCallTrace reason.", MetricType::COUNTER, &["reason"]),
    ("pcct_walks_total", "Recorded samples by the walker that gave their frames: pcct (its own HotSpot walker, to the bottom or the depth), agct (AsyncGetCallTrace, after pcct's walker stopped early or where it is not available), partial (both failed; pcct's top frames under a [break_<reason>] pseudo-frame), native (a thread that runs no Java code, its native frames: threads=all, native=on).", MetricType::COUNTER, &["walker"]),
    ("pcct_walker_breaks_total", "Walks pcct's own walker stopped early, by reason.", MetricType::COUNTER, &["reason"]),
    ("pcct_walker_frames_total", "Java frames in pcct's walks: walked (all of them) and reused (taken unchanged from the thread's previous walk, its marked frames).", MetricType::COUNTER, &["kind"]),
    ("pcct_native_frames_total", "Native frames in recorded samples (native=on): below Java threads' last Java frames, and the stacks of threads that run no Java code.", MetricType::COUNTER, &[]),
    ("pcct_kernel_frames_total", "Of pcct_native_frames_total, the kernel's (kernel=on): the call chains threads' timers recorded where the thread was in the kernel.", MetricType::COUNTER, &[]),
    ("pcct_kernel_frames_refused", "1 when kernel=on but the kernel refused the timers' call chains (perf_event_paranoid above 1 without CAP_PERFMON): samples carry no kernel frames; /api/status says why.", MetricType::GAUGE, &[]),
    ("pcct_native_walks_total", "Native walks (native=on) by how they ended: root (the stack's bottom), java_frame (the last Java frame), unknown_code (a return into generated code, or code in no module), and the truncated ones: buffer_full, read_refused, sp_not_increasing, sp_outside_stack, bad_unwind_data, no_cache (every unwind cache in use).", MetricType::COUNTER, &["ending"]),
    ("pcct_samples_truncated_total", "Stacks deeper than the configured depth.", MetricType::COUNTER, &[]),
    ("pcct_drains_deferred_total", "Ticks whose drain waited for a reader holding the profile.", MetricType::COUNTER, &[]),
    ("pcct_cpu_seconds_total", "Thread CPU time accounted: recorded into the profile, or spent between checksum-filtered samples.", MetricType::COUNTER, &["kind"]),
    ("pcct_threads_total", "Thread events: registered, ended, excluded (never walkable), untracked (table full).", MetricType::COUNTER, &["event"]),
    ("pcct_threads_tracked", "Threads currently registered for sampling.", MetricType::GAUGE, &[]),
    ("pcct_methods_total", "Method ids named (resolved), found unloaded, or failing to resolve.", MetricType::COUNTER, &["result"]),
    ("pcct_method_table_resets_total", "Times the method table outgrew its limit and started over.", MetricType::COUNTER, &[]),
    ("pcct_classes_given_method_ids_total", "Classes whose methods pcct had HotSpot give jmethodIDs (HotSpot keeps a block of ids per class loader until the JVM exits).", MetricType::COUNTER, &[]),
    ("pcct_methods_named", "Java methods with names in the method table.", MetricType::GAUGE, &[]),
    ("pcct_handler_duration_seconds", "CPU time spent in the signal handler per sample (the thread's CPU clock, or for a thread's own timer the processor's counter while the thread stayed on its CPU).", MetricType::HISTOGRAM, &[]),
    ("pcct_handler_switched_total", "Signal handler calls not in pcct_handler_duration_seconds: the thread was switched out during the handler, so its wall time was not its CPU time.", MetricType::COUNTER, &[]),
    ("pcct_callback_duration_seconds", "Time an event callback (a recorded allocation sample or contended enter) took on its Java thread (monotonic clock: about its CPU time, never less).", MetricType::HISTOGRAM, &[]),
    ("pcct_drain_duration_seconds", "Time one drain took (copy, name resolution, tree update).", MetricType::HISTOGRAM, &[]),
    ("pcct_tick_duration_seconds", "Time one sampler tick took (drain and signals).", MetricType::HISTOGRAM, &[]),
    ("pcct_pcct_nodes", "Nodes in the calling context tree.", MetricType::GAUGE, &[]),
    ("pcct_pcct_edges", "Edges in the calling context tree.", MetricType::GAUGE, &[]),
    ("pcct_arena_bytes", "Bytes of the tree's arena in use.", MetricType::GAUGE, &[]),
    ("pcct_arena_limit_bytes", "Bytes the tree's arena may grow to.", MetricType::GAUGE, &[]),
    ("pcct_agent_heap_bytes", "Bytes the agent's own heap holds, as its counting allocator sees them: allocated, not all resident (the arena is reserved whole at start).", MetricType::GAUGE, &[]),
    ("pcct_agent_heap_peak_bytes", "The most bytes the agent's own heap held at once.", MetricType::GAUGE, &[]),
    ("pcct_pcct_purges_total", "Purges of the tree (periodic, requested or forced by a full arena).", MetricType::COUNTER, &[]),
    ("pcct_profile_samples", "Samples in the profile since its last purge.", MetricType::GAUGE, &[]),
    ("pcct_profile_cpu_seconds", "CPU time in the profile since its last purge.", MetricType::GAUGE, &[]),
    ("pcct_jit_code_events_total", "CompiledMethodLoad/Unload events: loaded (code compiled), unloaded (code freed).", MetricType::COUNTER, &["event"]),
    ("pcct_jit_inline_records_total", "Inline records of compiled code: kept (entered the inline table), repeated (known or older code), refused (table full), malformed.", MetricType::COUNTER, &["result"]),
    ("pcct_jit_table_codes", "Pieces of current compiled code in the inline table.", MetricType::GAUGE, &[]),
    ("pcct_jit_table_bytes", "About how much memory the inline table holds.", MetricType::GAUGE, &[]),
    ("pcct_jit_table_complete", "1 when the inline table holds all of HotSpot's code, 0 when events are off or records were refused.", MetricType::GAUGE, &[]),
    ("pcct_jit_table_restarts_total", "Times the inline table was full and started over.", MetricType::COUNTER, &[]),
    ("pcct_jit_classes_retransformed_total", "Classes retransformed on recompile requests: done, or failed (not loaded, refused).", MetricType::COUNTER, &["result"]),
    ("pcct_hot_method_self_seconds", "CPU (or wall) seconds of the top-K methods' self time since the last purge.", MetricType::GAUGE, &["rank", "method"]),
    ("pcct_hot_method_self_ratio", "Share (0..1) of the profile in the top-K methods' self time.", MetricType::GAUGE, &["rank", "method"]),
    ("pcct_allocations_total", "Sampled allocations: recorded in the profile, dropped (queue to the sampler or arena full), or thinned by alloc_rate (the recorded ones weigh for them).", MetricType::COUNTER, &["result"]),
    ("pcct_alloc_bytes_total", "Bytes allocated, estimated from the recorded allocation samples (rate(): the allocation rate).", MetricType::COUNTER, &[]),
    ("pcct_alloc_objects_total", "Objects allocated, estimated from the recorded allocation samples.", MetricType::COUNTER, &[]),
    ("pcct_alloc_bytes_dropped_total", "Bytes the dropped allocation samples stood for (estimated): what pcct_alloc_bytes_total misses.", MetricType::COUNTER, &[]),
    ("pcct_live_heap_bytes", "Bytes of the sampled allocations still reachable at the last garbage collection (estimated; the live_bytes resource).", MetricType::GAUGE, &[]),
    ("pcct_live_heap_objects", "Objects of the sampled allocations still reachable at the last garbage collection (estimated).", MetricType::GAUGE, &[]),
    ("pcct_live_heap_tracked", "Sampled objects the live heap tracks now (at most live_max).", MetricType::GAUGE, &[]),
    ("pcct_live_heap_objects_total", "Sampled objects of the live heap: tracked, dropped (table full), found collected, or let go at a purge.", MetricType::COUNTER, &["event"]),
    ("pcct_live_heap_sweeps_total", "Sweeps of the live heap's weak references (after garbage collections).", MetricType::COUNTER, &[]),
    ("pcct_monitor_waits_total", "Contended monitor enters: recorded in the profile, or dropped (queue or arena full).", MetricType::COUNTER, &["result"]),
    ("pcct_lock_wait_seconds_total", "Time threads waited to enter contended monitors (recorded enters).", MetricType::COUNTER, &[]),
    ("pcct_hot_alloc_bytes", "Bytes allocated at the top-K allocation sites (type, allocating method) since the last purge.", MetricType::GAUGE, &["rank", "method", "type"]),
    ("pcct_hot_lock_wait_seconds", "Seconds waited at the top-K contended monitor sites (monitor class, waiting method) since the last purge.", MetricType::GAUGE, &["rank", "method", "monitor"]),
];

/// The server's own families (registered as `prometheus` vectors and
/// gauges by [`Metrics::new`]).
const HTTP_FAMILIES: [(&str, &str, MetricType, &[&str]); 4] = [
    (
        "pcct_http_requests_total",
        "HTTP requests by route template and status code.",
        MetricType::COUNTER,
        &["route", "status"],
    ),
    (
        "pcct_http_request_duration_seconds",
        "Time to answer HTTP requests, by route template.",
        MetricType::HISTOGRAM,
        &["route"],
    ),
    (
        "pcct_http_heavy_jobs",
        "Report, tree and flame-graph computations alive (queued or running) now.",
        MetricType::GAUGE,
        &[],
    ),
    (
        "pcct_http_heavy_jobs_peak",
        "The most report, tree and flame-graph computations alive at once since start.",
        MetricType::GAUGE,
        &[],
    ),
];

/// Every family `/metrics` can export, from the tables the collectors use:
/// (name, type, labels, help).
pub fn families() -> Vec<(&'static str, MetricType, &'static [&'static str], &'static str)> {
    let sampler =
        FAMILIES.iter().chain(HTTP_FAMILIES.iter()).map(|(name, help, kind, labels)| (*name, *kind, *labels, *help));
    let push = PUSH_FAMILIES.iter().map(|(name, help, kind)| (*name, *kind, &[][..], *help));
    sampler.chain(push).collect()
}

/// The metrics reference (`docs/metrics.md`'s table), generated from
/// [`families`]; a test fails when the document differs.
pub fn reference_table() -> String {
    let mut table = String::from("| metric | type | labels | meaning |\n|---|---|---|---|\n");
    for (name, kind, labels, help) in families() {
        let kind = match kind {
            MetricType::COUNTER => "counter",
            MetricType::GAUGE => "gauge",
            MetricType::HISTOGRAM => "histogram",
            MetricType::SUMMARY => "summary",
            MetricType::UNTYPED => "untyped",
        };
        let labels: Vec<String> = labels.iter().map(|label| format!("`{label}`")).collect();
        let help = help.replace('|', "\\|");
        table.push_str(&format!("| `{name}` | {kind} | {} | {help} |\n", labels.join(", ")));
    }
    table
}

struct SamplerCollector {
    shared: Arc<Shared>,
    top_k: usize,
    descs: Vec<Desc>,
}

fn label(name: &str, value: &str) -> LabelPair {
    let mut pair = LabelPair::default();
    pair.set_name(name.to_string());
    pair.set_value(value.to_string());
    pair
}

fn counter(value: f64, labels: Vec<LabelPair>) -> Metric {
    let mut metric = Metric::default();
    let mut counter = Counter::default();
    counter.set_value(value);
    metric.set_counter(counter);
    metric.set_label(labels);
    metric
}

fn gauge(value: f64, labels: Vec<LabelPair>) -> Metric {
    let mut metric = Metric::default();
    let mut gauge = Gauge::default();
    gauge.set_value(value);
    metric.set_gauge(gauge);
    metric.set_label(labels);
    metric
}

fn histogram(snapshot: &HistogramSnapshot) -> Metric {
    let mut histogram = Histogram::default();
    histogram.set_sample_count(snapshot.count);
    histogram.set_sample_sum(snapshot.sum_ns as f64 / 1e9);
    histogram.set_bucket(
        snapshot
            .buckets
            .iter()
            .map(|&(bound, cumulative)| {
                let mut bucket = Bucket::default();
                bucket.set_upper_bound(bound as f64 / 1e9);
                bucket.set_cumulative_count(cumulative);
                bucket
            })
            .collect(),
    );
    let mut metric = Metric::default();
    metric.set_histogram(histogram);
    metric
}

impl SamplerCollector {
    fn new(shared: Arc<Shared>, top_k: usize) -> SamplerCollector {
        let descs = FAMILIES
            .iter()
            .map(|(name, help, _, labels)| {
                Desc::new(
                    name.to_string(),
                    help.to_string(),
                    labels.iter().map(|l| l.to_string()).collect(),
                    HashMap::new(),
                )
                .expect("valid metric description")
            })
            .collect();
        SamplerCollector { shared, top_k, descs }
    }

    fn values(&self) -> HashMap<&'static str, Vec<Metric>> {
        let counters = self.shared.counters.snapshot();
        let control = &self.shared.control;
        let finished = self.shared.finished.load(Ordering::Acquire);
        let mut out: HashMap<&'static str, Vec<Metric>> = HashMap::new();
        let mut put = |name: &'static str, metric: Metric| out.entry(name).or_default().push(metric);
        let c = |value: u64| counter(value as f64, Vec::new());
        let g = |value: f64| gauge(value, Vec::new());

        put("pcct_build_info", gauge(1.0, vec![label("version", env!("CARGO_PKG_VERSION"))]));
        put("pcct_sampler_ticks_total", c(counters.ticks));
        put("pcct_sampler_ticks_late_total", c(counters.ticks_late));
        put("pcct_sampler_ticks_missed_total", c(counters.ticks_missed));
        put("pcct_sampler_spin_seconds_total", counter(counters.spin_ns as f64 / 1e9, Vec::new()));
        put("pcct_sampler_wakes_rung_total", c(counters.wakes_rung));
        put("pcct_http_fresh_waits_expired_total", c(counters.fresh_waits_expired));
        put("pcct_sampler_cpu_seconds_total", counter(counters.sampler_cpu_ns as f64 / 1e9, Vec::new()));
        put("pcct_sampling_interval_seconds", g(control.interval().as_secs_f64()));
        put("pcct_sampling_running", g(if control.is_running() && !finished { 1.0 } else { 0.0 }));
        for (result, value) in [
            ("sent", counters.signals_sent),
            ("failed", counters.signal_failures),
            ("stray", counters.signals_stray),
            ("stale", counters.signals_stale),
            ("busy", counters.timer_signals_busy),
        ] {
            put("pcct_signals_total", counter(value as f64, vec![label("result", result)]));
        }
        for (event, value) in [("opened", counters.timers_opened), ("refused", counters.timers_refused)] {
            put("pcct_thread_timers_total", counter(value as f64, vec![label("event", event)]));
        }
        put("pcct_samples_timed_total", c(counters.timer_samples));
        put("pcct_samples_queued_total", c(counters.timer_samples_queued));
        for (outcome, value) in [
            ("recorded", counters.samples_recorded),
            ("idle", counters.samples_idle),
            ("filtered", counters.samples_filtered),
            ("failed", counters.samples_failed),
            ("busy", counters.samples_busy),
            ("lost", counters.samples_lost),
            ("retired", counters.samples_retired),
            ("deferred", counters.samples_deferred),
            ("dropped_full", counters.samples_dropped_full),
        ] {
            put("pcct_samples_total", counter(value as f64, vec![label("outcome", outcome)]));
        }
        put("pcct_samples_wall_credited_total", c(counters.samples_wall_credited));
        for (reason, value) in &counters.agct_failures {
            put("pcct_samples_failed_total", counter(*value as f64, vec![label("reason", reason)]));
        }
        for (walker, value) in [
            (Walker::Vm, counters.walks_vm),
            (Walker::Agct, counters.walks_agct),
            (Walker::VmPartial, counters.walks_partial),
            (Walker::Native, counters.walks_native),
        ] {
            let Some(name) = walker.label() else { continue };
            put("pcct_walks_total", counter(value as f64, vec![label("walker", name)]));
        }
        for (reason, value) in &counters.walker_broken {
            put("pcct_walker_breaks_total", counter(*value as f64, vec![label("reason", reason)]));
        }
        for (kind, value) in [("walked", counters.frames_walked), ("reused", counters.frames_reused)] {
            put("pcct_walker_frames_total", counter(value as f64, vec![label("kind", kind)]));
        }
        put("pcct_native_frames_total", c(counters.frames_native));
        put("pcct_kernel_frames_total", c(counters.frames_kernel));
        let refused = self.shared.config.kernel && pcct_sampler::cpu_timer::kernel_frames_refused().is_some();
        put("pcct_kernel_frames_refused", g(if refused { 1.0 } else { 0.0 }));
        for (ending, value) in &counters.native_endings {
            put("pcct_native_walks_total", counter(*value as f64, vec![label("ending", ending)]));
        }
        put("pcct_samples_truncated_total", c(counters.samples_truncated));
        put("pcct_drains_deferred_total", c(counters.drains_deferred));
        put("pcct_cpu_seconds_total", counter(counters.cpu_ns_recorded as f64 / 1e9, vec![label("kind", "recorded")]));
        put("pcct_cpu_seconds_total", counter(counters.cpu_ns_filtered as f64 / 1e9, vec![label("kind", "filtered")]));
        for (event, value) in [
            ("registered", counters.threads_registered),
            ("ended", counters.threads_ended),
            ("excluded", counters.threads_excluded),
            ("untracked", counters.threads_untracked),
        ] {
            put("pcct_threads_total", counter(value as f64, vec![label("event", event)]));
        }
        put("pcct_threads_tracked", g(counters.threads_registered.saturating_sub(counters.threads_ended) as f64));
        for (result, value) in [
            ("resolved", counters.methods_resolved),
            ("unloaded", counters.methods_unloaded),
            ("failed", counters.methods_failed),
        ] {
            put("pcct_methods_total", counter(value as f64, vec![label("result", result)]));
        }
        put("pcct_method_table_resets_total", c(counters.method_table_resets));
        put("pcct_classes_given_method_ids_total", c(counters.classes_given_method_ids));
        for (result, value) in [
            ("recorded", counters.allocations_recorded),
            ("dropped", counters.allocations_dropped),
            ("thinned", counters.allocations_thinned),
        ] {
            put("pcct_allocations_total", counter(value as f64, vec![label("result", result)]));
        }
        put("pcct_alloc_bytes_total", c(counters.alloc_bytes_recorded));
        put("pcct_alloc_objects_total", c(counters.alloc_objects_recorded));
        put("pcct_alloc_bytes_dropped_total", c(counters.alloc_bytes_dropped));
        let live = self.shared.live.status();
        put("pcct_live_heap_bytes", g(live.live_bytes as f64));
        put("pcct_live_heap_objects", g(live.live_objects as f64));
        put("pcct_live_heap_tracked", g(live.tracked as f64));
        for (event, value) in [
            ("tracked", live.tracked_total),
            ("dropped", live.dropped_total),
            ("collected", live.collected_total),
            ("purged", live.purged_total),
        ] {
            put("pcct_live_heap_objects_total", counter(value as f64, vec![label("event", event)]));
        }
        put("pcct_live_heap_sweeps_total", c(live.sweeps));
        for (result, value) in
            [("recorded", counters.monitor_waits_recorded), ("dropped", counters.monitor_waits_dropped)]
        {
            put("pcct_monitor_waits_total", counter(value as f64, vec![label("result", result)]));
        }
        put("pcct_lock_wait_seconds_total", counter(counters.lock_wait_ns_recorded as f64 / 1e9, Vec::new()));
        put("pcct_handler_duration_seconds", histogram(&counters.handler_time));
        put("pcct_handler_switched_total", c(counters.handler_switched));
        put("pcct_callback_duration_seconds", histogram(&counters.callback_time));
        put("pcct_drain_duration_seconds", histogram(&counters.drain_time));
        put("pcct_tick_duration_seconds", histogram(&counters.tick_time));
        put("pcct_agent_heap_bytes", g(counters.agent_heap_bytes as f64));
        put("pcct_agent_heap_peak_bytes", g(counters.agent_heap_peak_bytes as f64));
        for (event, value) in [("loaded", counters.methods_compiled), ("unloaded", counters.code_unloaded)] {
            put("pcct_jit_code_events_total", counter(value as f64, vec![label("event", event)]));
        }
        for (result, value) in [
            ("kept", counters.inline_records_kept),
            ("repeated", counters.inline_records_repeated),
            ("refused", counters.inline_records_refused),
            ("malformed", counters.inline_records_malformed),
        ] {
            put("pcct_jit_inline_records_total", counter(value as f64, vec![label("result", result)]));
        }
        for (result, value) in [("done", counters.classes_retransformed), ("failed", counters.retransform_failures)] {
            put("pcct_jit_classes_retransformed_total", counter(value as f64, vec![label("result", result)]));
        }
        let table = self.shared.jit.table.lock().stats();
        put("pcct_jit_table_codes", g(table.codes as f64));
        put("pcct_jit_table_bytes", g(table.bytes as f64));
        put("pcct_jit_table_complete", g(if table.complete { 1.0 } else { 0.0 }));
        put("pcct_jit_table_restarts_total", c(table.restarts));

        let profile = self.shared.profile.lock();
        let tree = &profile.tree;
        put("pcct_methods_named", g(profile.methods.java_methods() as f64));
        put("pcct_pcct_nodes", g(tree.node_count() as f64));
        put("pcct_pcct_edges", g(tree.edge_count() as f64));
        put("pcct_arena_bytes", g(tree.arena_used() as f64));
        put("pcct_arena_limit_bytes", g(tree.arena_limit() as f64));
        put("pcct_pcct_purges_total", c(tree.stats().purges));
        put("pcct_profile_samples", g(tree.total().samples as f64));
        put("pcct_profile_cpu_seconds", g(tree.total().cpu_ns as f64 / 1e9));
        let metric = tree.config().metric;
        let total = tree.total().get(metric).max(1) as f64;
        // The counters' sorted list: O(K), no pass over the tree.
        for (rank, (method, weight)) in tree.top_methods_by_self(self.top_k).into_iter().enumerate() {
            let name = profile.methods.display_name(method);
            let labels = || vec![label("rank", &(rank + 1).to_string()), label("method", &name)];
            let value = weight.get(metric) as f64;
            let seconds = if metric == pcct::Metric::Samples { value } else { value / 1e9 };
            put("pcct_hot_method_self_seconds", gauge(seconds, labels()));
            put("pcct_hot_method_self_ratio", gauge(value / total, labels()));
        }
        // The sites' sorted lists: O(K).
        let sites = [
            ("pcct_hot_alloc_bytes", "type", pcct::Metric::AllocBytes, 1.0),
            ("pcct_hot_lock_wait_seconds", "monitor", pcct::Metric::LockWaitNs, 1e-9),
        ];
        for (family, class_label, metric, scale) in sites {
            for (rank, node) in tree.hot_node_list_by(metric).into_iter().flatten().take(self.top_k).enumerate() {
                let (class, code) = site_names(tree, &profile.methods, node);
                let labels =
                    vec![label("rank", &(rank + 1).to_string()), label("method", &code), label(class_label, &class)];
                put(family, gauge(tree.node_value(node, metric) as f64 * scale, labels));
            }
        }
        out
    }
}

/// A site's class (the node's type) and its code (the caller's name).
fn site_names(tree: &pcct::Pcct, methods: &pcct::MethodTable, node: pcct::NodeId) -> (String, String) {
    let code = tree.parent(node).unwrap_or(pcct::NodeId::ROOT);
    (methods.display_name(tree.method(node)), methods.display_name(tree.method(code)))
}

/// The periodic push's counters (`crate::push`), when it runs.
struct PushCollector {
    stats: Arc<crate::push::PushStats>,
    descs: Vec<Desc>,
}

/// The push's families: (name, help, type).
const PUSH_FAMILIES: &[(&str, &str, MetricType)] = &[
    ("pcct_push_windows_total", "Profile windows the push made.", MetricType::COUNTER),
    ("pcct_push_sent_total", "Windows the receiver accepted.", MetricType::COUNTER),
    ("pcct_push_failures_total", "Send attempts that failed (retried after a back-off).", MetricType::COUNTER),
    (
        "pcct_push_dropped_total",
        "Windows dropped: the queue was full or the receiver refused them.",
        MetricType::COUNTER,
    ),
    ("pcct_push_queued", "Windows waiting to be sent.", MetricType::GAUGE),
    ("pcct_push_sent_bytes_total", "Bytes the receiver accepted.", MetricType::COUNTER),
];

impl Collector for PushCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let stats = &self.stats;
        let values = [&stats.windows, &stats.sent, &stats.failures, &stats.dropped, &stats.queued, &stats.bytes_sent]
            .map(|counter| counter.load(Ordering::Relaxed) as f64);
        PUSH_FAMILIES
            .iter()
            .zip(values)
            .map(|((name, help, kind), value)| {
                let mut family = MetricFamily::default();
                family.set_name(name.to_string());
                family.set_help(help.to_string());
                family.set_field_type(*kind);
                let metric =
                    if *kind == MetricType::GAUGE { gauge(value, Vec::new()) } else { counter(value, Vec::new()) };
                family.set_metric(vec![metric]);
                family
            })
            .collect()
    }
}

impl Collector for SamplerCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let mut values = self.values();
        FAMILIES
            .iter()
            .filter_map(|(name, help, kind, _)| {
                let metrics = values.remove(name)?;
                let mut family = MetricFamily::default();
                family.set_name(name.to_string());
                family.set_help(help.to_string());
                family.set_field_type(*kind);
                family.set_metric(metrics);
                Some(family)
            })
            .collect()
    }
}

/// The server's registry and its HTTP metrics.
pub struct Metrics {
    registry: Registry,
    pub http_requests: IntCounterVec,
    pub http_duration: HistogramVec,
    heavy_jobs: IntGauge,
    heavy_jobs_peak: IntGauge,
}

impl Metrics {
    pub fn new(shared: Arc<Shared>, top_k: usize, push: Option<Arc<crate::push::PushStats>>) -> Metrics {
        let registry = Registry::new();
        let [requests, duration, heavy, heavy_peak] = HTTP_FAMILIES;
        let http_requests = IntCounterVec::new(Opts::new(requests.0, requests.1), requests.3).expect("valid metric");
        let http_duration = HistogramVec::new(
            HistogramOpts::new(duration.0, duration.1)
                .buckets(vec![0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0]),
            duration.3,
        )
        .expect("valid metric");
        let heavy_jobs = IntGauge::new(heavy.0, heavy.1).expect("valid metric");
        let heavy_jobs_peak = IntGauge::new(heavy_peak.0, heavy_peak.1).expect("valid metric");
        registry.register(Box::new(http_requests.clone())).expect("unique metric");
        registry.register(Box::new(http_duration.clone())).expect("unique metric");
        registry.register(Box::new(heavy_jobs.clone())).expect("unique metric");
        registry.register(Box::new(heavy_jobs_peak.clone())).expect("unique metric");
        registry.register(Box::new(SamplerCollector::new(shared, top_k))).expect("unique metrics");
        if let Some(stats) = push {
            let descs = PUSH_FAMILIES
                .iter()
                .map(|(name, help, _)| {
                    Desc::new(name.to_string(), help.to_string(), Vec::new(), HashMap::new())
                        .expect("valid metric description")
                })
                .collect();
            registry.register(Box::new(PushCollector { stats, descs })).expect("unique metrics");
        }
        Metrics { registry, http_requests, http_duration, heavy_jobs, heavy_jobs_peak }
    }

    /// Sets the heavy-job series from the server's count (at scrape time).
    pub fn observe_heavy_jobs(&self, status: &HeavyJobsStatus) {
        self.heavy_jobs.set(status.live as i64);
        self.heavy_jobs_peak.set(status.peak as i64);
    }

    /// The text exposition of every metric.
    pub fn render(&self) -> String {
        let mut buffer = Vec::new();
        TextEncoder::new().encode(&self.registry.gather(), &mut buffer).expect("text encoding cannot fail");
        String::from_utf8(buffer).expect("text exposition is UTF-8")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcct_sampler::SamplerConfig;

    /// docs/metrics.md is generated from the families; and every family a
    /// live registry exports (the push's included) is in it.
    #[test]
    fn the_metrics_reference_matches_the_registry() {
        let document = include_str!("../../docs/metrics.md");
        let expected = reference_table();
        assert!(
            document.contains(&expected),
            "docs/metrics.md's table differs from the registry's; it should read:\n{expected}"
        );
        let shared = Arc::new(Shared::new(SamplerConfig::default()).expect("no JVM needed"));
        let metrics = Metrics::new(shared, 10, Some(Arc::new(crate::push::PushStats::default())));
        metrics.http_requests.with_label_values(&["/", "200"]).inc();
        metrics.http_duration.with_label_values(&["/"]).observe(0.001);
        let known: Vec<&str> = families().iter().map(|(name, ..)| *name).collect();
        let exported: Vec<String> = metrics
            .render()
            .lines()
            .filter_map(|line| line.strip_prefix("# HELP ")?.split(' ').next().map(str::to_string))
            .collect();
        assert!(exported.len() > 30, "{exported:?}");
        for name in &exported {
            assert!(known.contains(&name.as_str()), "{name} is exported but not in the reference");
        }
    }
}
