//! pprof over HTTP, as Go services serve it, so `go tool pprof`, Grafana
//! Alloy's `pyroscope.scrape` and Parca read a JVM like any Go program:
//! - `GET /debug/pprof/profile?seconds=N`: waits N seconds and answers the
//!   profile of that window only (`crate::window`); its start and its end
//!   are heavy jobs, and a client that goes away meanwhile ends the window
//!   (its start's copy is dropped with the request);
//! - `GET /api/pprof`: the whole profile since its last purge.
//!
//! Both answer gzipped `profile.proto` (`application/octet-stream`), every
//! resource pcct records as a sample type, `metric` the default one.

use std::time::Duration;

use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use pcct::export::pprof::{self, PprofContext};
use pcct::export::ReportOptions;

use super::reports::too_large;
use crate::error::ApiError;
use crate::heavy::with_snapshot;
use crate::params::Params;
use crate::serve::LongRequests;
use crate::state::AppState;
use crate::text_budget::within_budget_bytes;
use crate::window;

/// Longest window, seconds.
pub const MAX_SECONDS: u64 = 300;
/// Window when `seconds` is not given (Go's default).
const DEFAULT_SECONDS: u64 = 30;
/// How long the end of a window waits for a heavy-job permit: a 503 then
/// would lose the whole window.
const END_PERMIT_WAIT: Duration = Duration::from_secs(30);

/// The pprof bytes as an answer; `restarted`, for a window, fills `X-Pcct-Window`.
fn pprof_answer(bytes: Vec<u8>, restarted: Option<bool>) -> Response {
    let mut response = (
        [
            (header::CONTENT_TYPE, "application/octet-stream"),
            (header::CONTENT_DISPOSITION, "attachment; filename=\"profile.pb.gz\""),
            (header::CACHE_CONTROL, "no-store"),
        ],
        bytes,
    )
        .into_response();
    if let Some(restarted) = restarted {
        let value = HeaderValue::from_static(if restarted { "restarted" } else { "whole" });
        response.headers_mut().insert("x-pcct-window", value);
    }
    response
}

fn period_ns(state: &AppState) -> u64 {
    state.shared.control.interval().as_nanos() as u64
}

/// `GET /api/pprof?metric=cpu|wall|samples&min_share=0..1 (0)`: the whole
/// profile since its last purge.
pub async fn cumulative(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &["metric", "min_share"])?;
    let options = ReportOptions {
        metric: params.metric(state.config.report_metric)?,
        min_cum_share: params.number("min_share", 0.0, 1.0, 0.0)?,
        annotate: false,
    };
    let (budget, period) = (state.config.text_budget, period_ns(&state));
    let bytes = with_snapshot(&state, move |profile| {
        let context = PprofContext::of_tree(&profile.tree, period);
        within_budget_bytes(budget, |out| pprof::write_to(out, &profile.tree, &profile.methods, &options, &context))
    })
    .await?
    .ok_or_else(too_large)?;
    Ok(pprof_answer(bytes, None))
}

/// `GET /debug/pprof/profile?seconds=1..300 (30)&metric=cpu|wall|samples`:
/// blocks `seconds`, then answers what was recorded meanwhile. The
/// `X-Pcct-Window` header says `whole`, or `restarted` when a purge (or a
/// method table that started over) cut the window (a pprof comment says
/// how much it holds).
pub async fn window(
    State(state): State<AppState>,
    long: Option<Extension<LongRequests>>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &["seconds", "metric"])?;
    let seconds = params.integer("seconds", 1, MAX_SECONDS, DEFAULT_SECONDS)?;
    let options =
        ReportOptions { metric: params.metric(state.config.report_metric)?, min_cum_share: 0.0, annotate: false };
    // The connection outlives its usual lifetime for this request.
    let _long = long.map(|Extension(long)| long.hold());
    // Opening copies every node's weights: a heavy job, as the end is.
    let (shared, budget) = (state.shared.clone(), state.windows.clone());
    let open = crate::heavy::blocking(&state, move |_| window::open(&shared, &budget)).await??;
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let (shared, text_budget, period) = (state.shared.clone(), state.config.text_budget, period_ns(&state));
    let answer = state
        .heavy
        .run_waiting(&state.shared, END_PERMIT_WAIT, move |profile| {
            window::finish(&shared, open, &profile, &options, period, text_budget)
        })
        .await??
        .ok_or_else(too_large)?;
    Ok(pprof_answer(answer.bytes, Some(answer.restarted)))
}
