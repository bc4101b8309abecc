//! `/api/jit/advice`, `/api/jit/directives` and `POST /api/jit/recompile`:
//! the hot edges joined with what HotSpot compiled and inlined (the inline
//! table, `pcct_jit`), advice as compiler directives, and recompiling
//! classes so that new directives take effect.
//!
//! The hot edges and their calling contexts are copied under the profile
//! lock (ids only, `pcct_jit::profile::EdgeContexts`; a heavy job on a copy
//! of the profile when the hot-edge list does not cover them), then named
//! and joined on a blocking thread ([`join`]): under the inline table's
//! lock (which the sampler never takes) only what the join reads is copied
//! (`InlineTable::extract`), and the join runs after it is released.
//! A recompile request is queued for the agent's JIT thread, which
//! retransforms the classes (one VM operation); the handler waits for its
//! answer, at most [`RECOMPILE_WAIT`].

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use pcct::{MethodTable, NodeId};
use pcct_jit::directives::{directives, render, to_inline};
use pcct_jit::live::{AdviceReport, Refused, MAX_CLASSES};
use pcct_jit::profile::{self, EdgeContexts};
use pcct_sampler::timer::now_ns;
use pcct_sampler::Profile;
use serde::Serialize;

use super::hot::MAX_HOT_NODE_STEPS;
use crate::error::ApiError;
use crate::heavy::with_snapshot;
use crate::params::Params;
use crate::state::{AppState, ProfileHeader};

/// Hot edges weighed for advice (the hot-edge list's default length).
pub const ADVICE_EDGES: usize = 1024;
/// Longest wait for a recompile request's answer.
pub const RECOMPILE_WAIT: Duration = Duration::from_secs(60);
/// Longest class name a recompile request may give.
pub const MAX_CLASS_NAME: usize = 1024;

#[derive(Serialize)]
pub struct AdviceAnswer {
    pub profile: ProfileHeader,
    #[serde(flatten)]
    pub report: AdviceReport,
}

type Copied = (ProfileHeader, EdgeContexts, Arc<MethodTable>);

fn copy(state: &AppState, profile: &Profile, nodes: &[NodeId]) -> Copied {
    let contexts = EdgeContexts::copy(&profile.tree, nodes, MAX_HOT_NODE_STEPS);
    (state.header(&profile.tree), contexts, Arc::clone(&profile.methods))
}

/// The hottest [`ADVICE_EDGES`] edges with their contexts.
async fn hot_edge_contexts(state: &AppState) -> Result<Copied, ApiError> {
    let listed = {
        let profile = state.shared.profile.lock();
        profile.tree.listed_top_edges(ADVICE_EDGES).map(|edges| copy(state, &profile, &edges))
    };
    match listed {
        Some(copied) => Ok(copied),
        None => {
            let job_state = state.clone();
            with_snapshot(state, move |profile| copy(&job_state, &profile, &profile.tree.top_edges(ADVICE_EDGES))).await
        }
    }
}

/// `limit` (1..1000, 20) and `min_share` (0..1, 0.01) of the advice routes.
fn advice_params(query: Option<&str>) -> Result<(usize, f64), ApiError> {
    let params = Params::parse(query, &["limit", "min_share"])?;
    let limit = params.integer("limit", 1, super::MAX_LIMIT, 20)? as usize;
    let min_share = params.number("min_share", 0.0, 1.0, 0.01)?;
    Ok((limit, min_share))
}

/// Runs `work` (a join with the inline table) on a blocking thread: it
/// names methods and walks every edge's path, too long for a runtime worker.
pub async fn join<T: Send + 'static>(
    state: &AppState,
    work: impl FnOnce(&pcct_jit::Jit) -> T + Send + 'static,
) -> Result<T, ApiError> {
    let shared = Arc::clone(&state.shared);
    tokio::task::spawn_blocking(move || work(&shared.jit))
        .await
        .map_err(|_| ApiError::internal("the join with the inline table failed"))
}

async fn advice_answer(state: &AppState, limit: usize, min_share: f64) -> Result<AdviceAnswer, ApiError> {
    let (header, contexts, methods) = hot_edge_contexts(state).await?;
    let advice = join(state, move |jit| profile::advice(jit, &methods, &contexts, min_share, limit, now_ns())).await?;
    let report = AdviceReport { jit: state.shared.jit.summary(), min_share, advice };
    Ok(AdviceAnswer { profile: header, report })
}

/// `GET /api/jit/advice?limit=1..1000 (20)&min_share=0..1 (0.01)`
pub async fn advice(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let (limit, min_share) = advice_params(query.as_deref())?;
    let answer = advice_answer(&state, limit, min_share).await?;
    state.json(Some("limit"), &answer)
}

/// `GET /api/jit/directives?limit=&min_share=`: a HotSpot compiler
/// directives file for the `limit` hottest edges to inline (`[]` when
/// there are none).
pub async fn directives_file(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let (limit, min_share) = advice_params(query.as_deref())?;
    let answer = advice_answer(&state, super::MAX_LIMIT as usize, min_share).await?;
    let mut response = render(&directives(&to_inline(&answer.report.advice.not_inlined, limit))).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(response)
}

/// Reads `{"classes": ["pkg.Class", ...]}`: 1..=[`MAX_CLASSES`] names in
/// source form, each at most [`MAX_CLASS_NAME`] bytes, nothing else.
fn parse_classes(body: &[u8]) -> Result<Vec<String>, ApiError> {
    let shape = "the body must be a JSON object {\"classes\": [\"pkg.Class\", ...]}";
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|error| ApiError::bad_request(format!("{shape}: {error}")))?;
    let serde_json::Value::Object(fields) = value else { return Err(ApiError::bad_request(shape)) };
    if let Some(unknown) = fields.keys().find(|key| *key != "classes") {
        return Err(ApiError::parameter(unknown, "unknown field; the body takes classes"));
    }
    let Some(serde_json::Value::Array(list)) = fields.get("classes") else {
        return Err(ApiError::parameter("classes", "must be an array of class names"));
    };
    if list.is_empty() || list.len() > MAX_CLASSES {
        return Err(ApiError::parameter("classes", format!("must hold 1 to {MAX_CLASSES} class names")));
    }
    list.iter()
        .map(|item| match item {
            serde_json::Value::String(name) if !name.is_empty() && name.len() <= MAX_CLASS_NAME => Ok(name.clone()),
            _ => Err(ApiError::parameter(
                "classes",
                format!("each must be a class name of 1 to {MAX_CLASS_NAME} bytes, such as java.util.HashMap"),
            )),
        })
        .collect()
}

/// `POST /api/jit/recompile` with `{"classes": ["pkg.Class", ...]}`:
/// retransforms them, so HotSpot compiles their code (and code that
/// inlined their methods) again, under the compiler directives in force.
pub async fn recompile(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    Params::parse(query.as_deref(), &[])?;
    let body = body?;
    let classes = parse_classes(&body)?;
    let answer = state.shared.jit.submit(classes).map_err(|refused| match refused {
        Refused::Unavailable(why) => ApiError {
            status: StatusCode::CONFLICT,
            message: format!("recompiling is not available: {why}"),
            parameter: None,
        },
        Refused::Busy => ApiError::busy("too many recompile requests wait already; retry later"),
    })?;
    let waited = tokio::task::spawn_blocking(move || answer.recv_timeout(RECOMPILE_WAIT))
        .await
        .map_err(|error| ApiError::internal(format!("the wait for the JIT thread failed: {error}")))?;
    match waited {
        Ok(Ok(report)) => state.json(None, &report),
        Ok(Err(error)) => Err(ApiError::internal(format!("the JIT thread could not retransform: {error}"))),
        Err(_) => Err(ApiError {
            status: StatusCode::GATEWAY_TIMEOUT,
            message: format!("the JIT thread did not answer within {} s", RECOMPILE_WAIT.as_secs()),
            parameter: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recompile_body_is_a_bounded_list_of_class_names() {
        assert_eq!(parse_classes(br#"{"classes": ["a.B", "C$D"]}"#).unwrap(), vec!["a.B", "C$D"]);
        let refused = [
            &br#"[]"#[..],
            br#"{"classes": []}"#,
            br#"{"classes": "a.B"}"#,
            br#"{"classes": [1]}"#,
            br#"{"classes": [""]}"#,
            br#"{"classes": ["a"], "all": true}"#,
            br#"not json"#,
        ];
        for body in refused {
            assert!(parse_classes(body).is_err(), "{}", String::from_utf8_lossy(body));
        }
        let many = serde_json::json!({"classes": vec!["a.B"; MAX_CLASSES + 1]}).to_string();
        assert_eq!(parse_classes(many.as_bytes()).unwrap_err().parameter.as_deref(), Some("classes"));
        let long = serde_json::json!({"classes": ["x".repeat(MAX_CLASS_NAME + 1)]}).to_string();
        assert!(parse_classes(long.as_bytes()).is_err());
    }
}
