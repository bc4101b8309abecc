//! Starting the HTTP server with the agent's options.

use pcct_server::{AppConfig, AppState, ServerConfig, ServerHandle};

use crate::agent::Agent;

/// The options in force, as /api/status shows them.
fn settings(agent: &Agent) -> serde_json::Value {
    let o = &agent.options;
    serde_json::json!({
        "interval_ns": o.interval.as_nanos() as u64,
        "mode": o.mode.name(),
        "tree": o.tree.name(),
        "depth": o.depth,
        "walk": o.walk_limit,
        "purge_ns": o.purge.map(|d| d.as_nanos() as u64),
        "arena_bytes": o.arena_bytes,
        "on_full": format!("{:?}", o.on_full).to_lowercase(),
        "prefilter": o.prefilter,
        "idle": o.idle_share,
        "signal": pcct_sampler::signal::signal_name(o.signal),
        "spin_ns": o.max_spin.as_nanos() as u64,
        "jitter": o.jitter,
        "recent": o.recent,
        "hot": o.hot_list,
        "methods_bytes": o.methods_limit,
        "file": o.file.as_ref().map(|f| f.display().to_string()),
        "format": o.file.as_ref().map(|_| o.dump_format().name()),
        "metric": o.report_metric().name(),
        "http": o.http,
        "port": o.port,
        "bind": o.bind,
        "token": o.token.as_ref().map(|_| "(set)"),
        "top": o.metrics_top,
        "compiled": o.compiled,
        "arrival": format!("{:?}", agent.arrival).to_lowercase(),
    })
}

pub fn start(agent: &Agent) -> Result<ServerHandle, pcct_server::ServerError> {
    let options = &agent.options;
    let config = AppConfig {
        token: options.token.clone(),
        settings: settings(agent),
        metrics_top: options.metrics_top,
        report_metric: options.report_metric(),
        heavy_requests: 2,
        text_budget: pcct_server::text_budget::MAX_TEXT_BYTES,
    };
    let state = AppState::new(agent.shared.clone(), config);
    let server = ServerConfig {
        bind: options.bind.parse().map_err(|_| pcct_server::ServerError::Bind {
            address: options.bind.clone(),
            reason: "not an IP address".to_string(),
        })?,
        port: options.port,
        addr_file: options.addr_file.clone(),
        block_signal: Some(options.signal),
        ..ServerConfig::default()
    };
    pcct_server::start(state, server)
}
