//! Starting the HTTP server with the agent's options.

#![forbid(unsafe_code)]

use std::sync::Arc;

use pcct_sampler::Shared;
use pcct_server::{AppConfig, AppState, ServerConfig, ServerHandle};

use crate::options::{Options, Recompile};

/// The options in force, as /api/status shows them, and how the agent came
/// (`arrival`: `startup` or `attach`).
fn settings(options: &Options, arrival: &str) -> serde_json::Value {
    let mut settings = options.settings();
    settings.insert("arrival".to_string(), arrival.into());
    serde_json::Value::Object(settings)
}

/// Serves `shared` as `options` say (address, port, token, ...).
pub fn start(
    shared: Arc<Shared>,
    options: &Options,
    arrival: &str,
    push: Option<(Arc<pcct_server::push::PushStats>, pcct_server::push::PushConfig)>,
) -> Result<ServerHandle, pcct_server::ServerError> {
    let config = AppConfig {
        token: options.token.clone(),
        read_token: options.read_token.clone(),
        recompile_without_token: options.recompile == Recompile::UnsafeWithoutToken,
        recompile_every: options.recompile_every,
        allowed_hosts: options.allow_hosts.clone(),
        settings: settings(options, arrival),
        metrics_top: options.metrics_top,
        report_metric: options.report_metric(),
        heavy_requests: 2,
        text_budget: pcct_server::text_budget::MAX_TEXT_BYTES,
        json_budget: pcct_server::json_answer::MAX_JSON_BYTES,
        push,
    };
    let state = AppState::new(shared, config);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_shows_every_option_and_the_arrival() {
        let options = Options::parse("interval=2ms,port=0").unwrap();
        let settings = settings(&options, "attach");
        assert_eq!(settings["arrival"], "attach");
        assert_eq!(settings["interval_ns"], options.settings()["interval_ns"]);
        assert_eq!(settings["interval_ns"], 2_000_000);
        assert_eq!(settings.as_object().unwrap().len(), options.settings().len() + 1);
    }
}
