//! `/metrics`: Prometheus text exposition.

use axum::extract::{RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::params::Params;
use crate::state::AppState;

/// `GET /metrics`
pub async fn metrics(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    Params::parse(query.as_deref(), &[])?;
    state.metrics.observe_heavy_jobs(&state.heavy.status());
    let body = state.metrics.render();
    Ok(([(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)], body).into_response())
}
