//! `POST /api/purge` and `POST /api/sampling`: changing what the sampler does.

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::Json;
use pcct_sampler::config::{parse_duration, MAX_INTERVAL, MIN_INTERVAL};
use pcct_sampler::Mode;
use serde::{Deserialize, Serialize};

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
pub async fn purge(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Json<Purged>, ApiError> {
    Params::parse(query.as_deref(), &[])?;
    let mut profile = state.shared.profile.lock();
    profile.tree.purge();
    Ok(Json(Purged { purged: true, epoch: profile.tree.epoch() }))
}

/// Body of `POST /api/sampling`; every field optional.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamplingChange {
    /// `true` resumes, `false` pauses sampling.
    pub running: Option<bool>,
    /// A duration such as `1ms` or `500us` (100us to 1s).
    pub interval: Option<String>,
    /// `cpu` or `wall`; changing it starts a new profile.
    pub mode: Option<String>,
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
    body: Bytes,
) -> Result<Json<SamplingState>, ApiError> {
    Params::parse(query.as_deref(), &[])?;
    let change: SamplingChange = serde_json::from_slice(&body).map_err(|error| {
        let message = error.to_string();
        // serde names the offending field in its message: pass it on.
        let field = ["running", "interval", "mode"].into_iter().find(|field| message.contains(field));
        match field {
            Some(field) => ApiError::parameter(field, format!("invalid value: {message}")),
            None => ApiError::bad_request(format!(
                "the body must be a JSON object with running, interval and/or mode: {message}"
            )),
        }
    })?;
    let interval = match change.interval.as_deref() {
        None => None,
        Some(text) => Some(
            parse_duration(text)
                .filter(|d| *d >= MIN_INTERVAL && *d <= MAX_INTERVAL)
                .ok_or_else(|| ApiError::parameter("interval", "must be a duration from 100us to 1s, such as 1ms"))?,
        ),
    };
    let mode = match change.mode.as_deref() {
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
    if let Some(running) = change.running {
        control.set_running(running);
    }
    Ok(Json(SamplingState {
        running: control.is_running(),
        interval_ns: control.interval().as_nanos() as u64,
        mode: control.mode().name(),
    }))
}
