//! `/api/reports/xprof|xarc|xtree|sites` and `/api/collapsed`: text reports
//! of a snapshot of the profile in any resource, computed off the async
//! runtime.

use axum::extract::{Path, RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use pcct::export::{self, Format, ReportOptions};

use crate::error::ApiError;
use crate::heavy::with_snapshot;
use crate::params::{with_resource, Params};
use crate::state::AppState;
use crate::text_budget::within_budget;

fn text(body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response()
}

/// The 413 of a text answer over the server's text budget.
pub fn too_large() -> ApiError {
    ApiError::too_large(
        Some("min_share"),
        "the answer would exceed the server's size limit; prune it with a larger min_share",
    )
}

/// `GET /api/reports/{xprof|xarc|xtree|sites}?min_share=0..1&resource=<any resource>`
pub async fn report(
    State(state): State<AppState>,
    Path(kind): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let format = match kind.as_str() {
        "xprof" => Format::Xprof,
        "xarc" => Format::Xarc,
        "xtree" => Format::Xtree,
        "sites" => Format::Sites,
        _ => return Err(ApiError::not_found("reports are xprof, xarc, xtree and sites")),
    };
    let params = Params::parse(query.as_deref(), &with_resource(&["min_share"]))?;
    let default_share = if format == Format::Xtree { 0.005 } else { 0.0 };
    let options = ReportOptions {
        metric: params.metric(state.config.report_metric)?,
        min_cum_share: params.number("min_share", 0.0, 1.0, default_share)?,
        annotate: false,
    };
    let budget = state.config.text_budget;
    let body = with_snapshot(&state, move |profile| {
        within_budget(budget, |out| export::write_to(out, format, &profile.tree, &profile.methods, &options))
    })
    .await?
    .ok_or_else(too_large)?;
    Ok(text(body))
}

/// `GET /api/collapsed?resource=<any resource>&min_share=0..1 (0)&annotate=off|on`:
/// `frame;frame value` lines, leaving out subtrees below `min_share` of the
/// total; `annotate=on` writes each frame's kind as async-profiler does
/// (`_[0]`, `_[1]`, `_[j]`, `_[i]`; frame kinds are recorded with the
/// agent's `kinds=on`, and unknown kinds get no suffix).
pub async fn collapsed(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &with_resource(&["min_share", "annotate"]))?;
    let options = ReportOptions {
        metric: params.metric(state.config.report_metric)?,
        min_cum_share: params.number("min_share", 0.0, 1.0, 0.0)?,
        annotate: params.choice("annotate", &["off", "on"], "off")? == "on",
    };
    let budget = state.config.text_budget;
    let body = with_snapshot(&state, move |profile| {
        within_budget(budget, |out| export::collapsed::write_to(out, &profile.tree, &profile.methods, &options))
    })
    .await?
    .ok_or_else(too_large)?;
    Ok(text(body))
}
