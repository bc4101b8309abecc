//! `POST /api/purge` and `POST /api/sampling`: changing what the sampler does.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{RawQuery, State};
use axum::response::Response;
use pcct_sampler::config::{parse_duration, MAX_INTERVAL, MIN_INTERVAL};
use pcct_sampler::Mode;
use serde::Serialize;

use crate::error::ApiError;
use crate::params::Params;
use crate::state::AppState;

#[derive(Serialize)]
pub struct Purged {
    pub purged: bool,
    /// The new purge generation.
    pub epoch: u64,
}

/// `POST /api/purge`: clears the profile now.
pub async fn purge(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    Params::parse(query.as_deref(), &[])?;
    let epoch = {
        let mut profile = state.shared.profile.lock();
        profile.tree.purge();
        profile.tree.epoch()
    };
    state.json(None, &Purged { purged: true, epoch })
}

/// The fields `POST /api/sampling` accepts.
const FIELDS: [&str; 3] = ["running", "interval", "mode"];

/// A validated request body: every field optional.
struct SamplingChange {
    running: Option<bool>,
    interval: Option<String>,
    mode: Option<String>,
}

/// Reads the body as a JSON object with only known fields, each of the
/// right type; errors name the field.
fn parse_change(body: &[u8]) -> Result<SamplingChange, ApiError> {
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|error| {
        ApiError::bad_request(format!("the body must be a JSON object with running, interval and/or mode: {error}"))
    })?;
    let serde_json::Value::Object(fields) = value else {
        return Err(ApiError::bad_request("the body must be a JSON object with running, interval and/or mode"));
    };
    if let Some(unknown) = fields.keys().find(|key| !FIELDS.contains(&key.as_str())) {
        return Err(ApiError::parameter(unknown, "unknown field; the body takes running, interval and mode"));
    }
    let running = match fields.get("running") {
        None => None,
        Some(serde_json::Value::Bool(running)) => Some(*running),
        Some(_) => return Err(ApiError::parameter("running", "must be true or false")),
    };
    let text = |name: &str| match fields.get(name) {
        None => Ok(None),
        Some(serde_json::Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(ApiError::parameter(name, "must be a string")),
    };
    Ok(SamplingChange { running, interval: text("interval")?, mode: text("mode")? })
}

#[derive(Serialize)]
pub struct SamplingState {
    pub running: bool,
    pub interval_ns: u64,
    pub mode: &'static str,
}

/// `POST /api/sampling` with `{"running": bool, "interval": "1ms", "mode": "cpu"|"wall"}`.
pub async fn sampling(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    Params::parse(query.as_deref(), &[])?;
    let body = body?;
    let SamplingChange { running, interval, mode } = parse_change(&body)?;
    let interval = match interval.as_deref() {
        None => None,
        Some(text) => Some(
            parse_duration(text)
                .filter(|d| *d >= MIN_INTERVAL && *d <= MAX_INTERVAL)
                .ok_or_else(|| ApiError::parameter("interval", "must be a duration from 100us to 1s, such as 1ms"))?,
        ),
    };
    let mode = match mode.as_deref() {
        None => None,
        Some(text) => Some(Mode::parse(text).ok_or_else(|| ApiError::parameter("mode", "must be cpu or wall"))?),
    };
    let control = &state.shared.control;
    if let Some(interval) = interval {
        control.set_interval(interval);
    }
    if let Some(mode) = mode {
        control.set_mode(mode);
    }
    if let Some(running) = running {
        control.set_running(running);
    }
    let answer = SamplingState {
        running: control.is_running(),
        interval_ns: control.interval().as_nanos() as u64,
        mode: control.mode().name(),
    };
    state.json(None, &answer)
}
