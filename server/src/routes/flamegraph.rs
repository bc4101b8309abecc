//! `/flamegraph.svg`: the profile as a flame graph, rendered by `inferno`
//! from the collapsed stacks.

use axum::extract::{RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use pcct::export::collapsed;
use pcct::Metric;

use super::reports::with_snapshot;
use crate::error::ApiError;
use crate::params::Params;
use crate::state::AppState;

/// Renders collapsed-stack `lines` to SVG.
pub fn render(lines: &str, title: &str, metric: Metric) -> Result<Vec<u8>, String> {
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_string();
    options.count_name = match metric {
        Metric::Samples => "samples".to_string(),
        Metric::CpuNs => "CPU ns".to_string(),
        Metric::WallNs => "wall ns".to_string(),
    };
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

/// `GET /flamegraph.svg?metric=cpu|wall|samples&title=...`
pub async fn flamegraph(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &["metric", "title"])?;
    let metric = params.metric(state.config.report_metric)?;
    let title = params.get("title").unwrap_or("pcct flame graph").to_string();
    if title.chars().count() > 200 {
        return Err(ApiError::parameter("title", "at most 200 characters"));
    }
    let svg = with_snapshot(&state, move |profile| {
        let lines = collapsed::write(&profile.tree, &profile.methods, metric);
        render(&lines, &title, metric)
    })
    .await?
    .map_err(ApiError::internal)?;
    Ok(([(header::CONTENT_TYPE, "image/svg+xml")], svg).into_response())
}
