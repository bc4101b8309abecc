//! `/flamegraph.svg`: the profile as a flame graph, rendered by `inferno`
//! from the collapsed stacks.

use axum::extract::{RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use pcct::export::{collapsed, ReportOptions};
use pcct::Metric;

use super::reports::too_large;
use crate::error::ApiError;
use crate::heavy::with_snapshot;
use crate::params::{with_resource, Params};
use crate::state::AppState;
use crate::text_budget::within_budget;

/// Renders collapsed-stack `lines` to SVG.
pub fn render(lines: &str, title: &str, metric: Metric) -> Result<Vec<u8>, String> {
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_string();
    options.count_name = metric.unit().to_string();
    options.hash = true;
    options.deterministic = true;
    options.min_width = 0.05;
    let mut svg = Vec::new();
    if lines.trim().is_empty() {
        // inferno refuses an empty profile; draw an empty graph that says so.
        let placeholder = "[no samples yet] 1\n";
        inferno::flamegraph::from_lines(&mut options, placeholder.lines(), &mut svg).map_err(|e| e.to_string())?;
    } else {
        inferno::flamegraph::from_lines(&mut options, lines.lines(), &mut svg).map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// Contexts below this share of the total are left out of a flame graph by
/// default: 0.01% is a tenth of a pixel at inferno's 1200 px width.
const DEFAULT_MIN_SHARE: f64 = 0.0001;

/// `GET /flamegraph.svg?resource=<any resource>&title=...&min_share=0..1 (0.0001)`.
/// `s`, `x` and `y` are the flame graph's own state (its search term and
/// zoomed frame), which its script keeps in the URL and applies on load:
/// accepted and left to the script.
pub async fn flamegraph(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &with_resource(&["title", "min_share", "s", "x", "y"]))?;
    let metric = params.metric(state.config.report_metric)?;
    let options = ReportOptions { metric, min_cum_share: params.number("min_share", 0.0, 1.0, DEFAULT_MIN_SHARE)? };
    let title = params.get("title").unwrap_or("pcct flame graph").to_string();
    if title.chars().count() > 200 {
        return Err(ApiError::parameter("title", "at most 200 characters"));
    }
    if params.get("s").is_some_and(|search| search.chars().count() > 200) {
        return Err(ApiError::parameter("s", "at most 200 characters"));
    }
    for coordinate in ["x", "y"] {
        params.number(coordinate, 0.0, 1e9, 0.0)?;
    }
    let budget = state.config.text_budget;
    let svg = with_snapshot(&state, move |profile| {
        within_budget(budget, |out| collapsed::write_to(out, &profile.tree, &profile.methods, &options))
            .map(|lines| render(&lines, &title, metric))
    })
    .await?
    .ok_or_else(too_large)?
    .map_err(ApiError::internal)?;
    Ok(([(header::CONTENT_TYPE, "image/svg+xml")], svg).into_response())
}
