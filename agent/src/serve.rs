//! Starting the HTTP server with the agent's options.

use pcct_server::{AppConfig, AppState, ServerConfig, ServerHandle};

use crate::agent::Agent;

/// The options in force, as /api/status shows them, and how the agent came.
fn settings(agent: &Agent) -> serde_json::Value {
    let mut settings = agent.options.settings();
    settings.insert("arrival".to_string(), format!("{:?}", agent.arrival).to_lowercase().into());
    serde_json::Value::Object(settings)
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
