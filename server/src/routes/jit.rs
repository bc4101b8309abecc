//! `/api/jit/advice`, `/api/jit/directives`, `/api/jit/events`,
//! `/api/jit/inline-tree` and `POST /api/jit/recompile`: the hot edges
//! joined with what HotSpot compiled and inlined (the inline table,
//! `pcct_jit`), advice as compiler directives, what the JIT did to the code
//! as it happened, a method's code as its inlining tree, and recompiling
//! classes so that new directives take effect.
//!
//! The advice is one heavy job (`crate::heavy`: a permit first, given up
//! when the client goes away): the hot edges and their calling contexts
//! are copied under the profile lock (ids only,
//! `pcct_jit::profile::EdgeContexts`; from a copy of the profile when the
//! hot-edge list does not cover them), then named and joined: under the
//! inline table's lock (which the sampler never takes) only what the join
//! reads is copied (`InlineTable::extract`), and the join runs after it is
//! released.
//!
//! A recompile request costs the JVM its compiled code, so it is guarded
//! more than any other route: it needs the control token (or the agent's
//! explicit `recompile=unsafe-without-token`), names only classes the
//! current advice names, and goes through [`crate::recompile`] (one at a
//! time, at most one per `recompile_every`, a retry joins or repeats the
//! request it retries). It is queued for the agent's JIT thread, which
//! retransforms the classes (one VM operation); the handler waits for its
//! answer on the async runtime, at most [`RECOMPILE_WAIT`].

use std::sync::Arc;
use std::time::Duration;

use std::collections::BTreeSet;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use pcct::{MethodTable, NodeId};
use pcct_jit::directives::{directives, render, to_inline, Matching};
use pcct_jit::inline_tree::{inline_trees, MethodName};
use pcct_jit::live::{AdviceReport, Refused, MAX_CLASSES};
use pcct_jit::profile::{self, EdgeContexts};
use pcct_jit::{Advice, RecompileReport};
use pcct_sampler::timer::now_ns;
use pcct_sampler::Profile;
use serde::Serialize;

use super::hot::MAX_HOT_NODE_STEPS;
use crate::error::ApiError;
use crate::heavy::{self, Cancel};
use crate::params::Params;
use crate::recompile::{Answer, Decision, Outcome, Request};
use crate::state::{AppState, ProfileHeader};

/// Hot edges weighed for advice (the hot-edge list's default length).
pub const ADVICE_EDGES: usize = 1024;
/// Longest wait for a recompile request's answer.
pub const RECOMPILE_WAIT: Duration = Duration::from_secs(60);
/// When to retry a request an identical one overtook.
const RETRY_SOON: Duration = Duration::from_secs(1);
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
    let contexts = EdgeContexts::copy_for_advice(&profile.tree, nodes, MAX_HOT_NODE_STEPS);
    (state.header(&profile.tree), contexts, Arc::clone(&profile.methods))
}

/// The hottest [`ADVICE_EDGES`] edges with their contexts: from the
/// hot-edge list under the lock, else from a copy of the profile (none
/// when the request is gone by then). Blocking: run it in a heavy job.
fn hot_edge_contexts(state: &AppState, cancel: &Cancel) -> Option<Copied> {
    let listed = {
        let profile = state.shared.profile.lock();
        profile.tree.listed_top_edges(ADVICE_EDGES).map(|edges| copy(state, &profile, &edges))
    };
    listed.or_else(|| {
        let profile = (!cancel.is_set()).then(|| state.shared.snapshot())?;
        Some(copy(state, &profile, &profile.tree.top_edges(ADVICE_EDGES)))
    })
}

/// `limit` (1..1000, 20) and `min_share` (0..1, 0.01) of the advice routes.
fn advice_params(params: &Params) -> Result<(usize, f64), ApiError> {
    let limit = params.integer("limit", 1, super::MAX_LIMIT, 20)? as usize;
    let min_share = params.number("min_share", 0.0, 1.0, 0.01)?;
    Ok((limit, min_share))
}

/// Runs `work` (a join with the inline table) as a heavy job: it names
/// methods and walks every edge's path, too long for a runtime worker.
pub async fn join<T: Send + 'static>(
    state: &AppState,
    work: impl FnOnce(&pcct_jit::Jit) -> T + Send + 'static,
) -> Result<T, ApiError> {
    let shared = Arc::clone(&state.shared);
    heavy::blocking(state, move |_| work(&shared.jit)).await
}

/// The advice of the hottest edges, from `min_share` on, at most `limit`
/// of each kind: one heavy job, stopped between its steps when the
/// request is gone.
async fn advice_answer(state: &AppState, limit: usize, min_share: f64) -> Result<AdviceAnswer, ApiError> {
    let job_state = state.clone();
    let answer = heavy::blocking(state, move |cancel| {
        let (header, contexts, methods) = hot_edge_contexts(&job_state, cancel)?;
        if cancel.is_set() {
            return None;
        }
        let jit = &job_state.shared.jit;
        let advice = profile::advice(jit, &methods, &contexts, min_share, limit, now_ns());
        Some(AdviceAnswer { profile: header, report: AdviceReport { jit: jit.summary(), min_share, advice } })
    });
    answer.await?.ok_or_else(|| ApiError::internal("the advice was abandoned"))
}

/// `GET /api/jit/advice?limit=1..1000 (20)&min_share=0..1 (0.01)`
pub async fn advice(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let (limit, min_share) = advice_params(&Params::parse(query.as_deref(), &["limit", "min_share"])?)?;
    let answer = advice_answer(&state, limit, min_share).await?;
    state.json(Some("limit"), &answer)
}

/// `GET /api/jit/directives?limit=&min_share=&match_jdk=off|on`: a HotSpot
/// compiler directives file for the `limit` hottest edges a directive can
/// ask to inline (with none, a directive that matches nothing: HotSpot
/// refuses an empty file). JDK methods are matched only with
/// `match_jdk=on` (`pcct_jit::directives`, "JDK methods").
pub async fn directives_file(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &["limit", "min_share", "match_jdk"])?;
    let (limit, min_share) = advice_params(&params)?;
    let matching = match params.choice("match_jdk", &["off", "on"], "off")? {
        "on" => Matching::Jdk,
        _ => Matching::Application,
    };
    let answer = advice_answer(&state, super::MAX_LIMIT as usize, min_share).await?;
    let chosen = to_inline(&answer.report.advice.not_inlined, limit, matching);
    let mut response = render(&directives(&chosen, matching)).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(response)
}

/// Events a page of `/api/jit/events` holds by default.
pub const EVENTS_PAGE: u64 = 1000;

/// `GET /api/jit/events?since=0..(0)&limit=1..4096 (1000)`: what the JIT did
/// to the code the inline table follows (compiled, not entrant, replaced,
/// unloaded; `pcct_jit::events`), from event number `since` on, with the
/// number to ask from next and how many were dropped. Copies at most one
/// page under the ring's lock (which only JVMTI callbacks and the JIT
/// thread take, for a push).
pub async fn events(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &["since", "limit"])?;
    let since = params.integer("since", 0, u64::MAX, 0)?;
    let limit = params.integer("limit", 1, pcct_jit::events::CAPACITY as u64, EVENTS_PAGE)? as usize;
    let page = state.shared.jit.events.lock().since(since, limit);
    state.json(Some("limit"), &page)
}

/// Most nodes an inline-tree answer holds by default, and at most.
pub const INLINE_TREE_NODES: u64 = 2_000;
pub const MAX_INLINE_TREE_NODES: u64 = 20_000;
/// Longest `method` an inline-tree request may give.
pub const MAX_METHOD_NAME: usize = 4096;

/// `GET /api/jit/inline-tree?method=Class.name[(signature)]&max_nodes=`:
/// the current code of the method (each entry) as a tree of the calls
/// inlined into it (`pcct_jit::inline_tree`). The table's lock is taken in
/// a heavy job, never on a runtime worker.
pub async fn inline_tree(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &["method", "max_nodes"])?;
    let max_nodes = params.integer("max_nodes", 1, MAX_INLINE_TREE_NODES, INLINE_TREE_NODES)? as usize;
    let text = params.get("method").ok_or_else(|| ApiError::parameter("method", "is required: Class.method"))?;
    if text.len() > MAX_METHOD_NAME {
        return Err(ApiError::parameter("method", format!("at most {MAX_METHOD_NAME} bytes")));
    }
    let name = MethodName::parse(text).map_err(|error| ApiError::parameter("method", error))?;
    let trees = join(&state, move |jit| inline_trees(&jit.table.lock(), &name, max_nodes, now_ns())).await?;
    state.json(Some("max_nodes"), &trees)
}

/// Longest request id a recompile request may give.
pub const MAX_REQUEST_ID: usize = 64;

/// Reads `{"classes": ["pkg.Class", ...], "request": "id"}`: 1..=
/// [`MAX_CLASSES`] names in source form, each at most [`MAX_CLASS_NAME`]
/// bytes, and optionally the id the client gave this request (a retry
/// sends the same one), nothing else. The classes come sorted, without
/// duplicates.
fn parse_request(body: &[u8]) -> Result<Request, ApiError> {
    let shape = "the body must be a JSON object {\"classes\": [\"pkg.Class\", ...], \"request\": \"id\"}";
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|error| ApiError::bad_request(format!("{shape}: {error}")))?;
    let serde_json::Value::Object(fields) = value else { return Err(ApiError::bad_request(shape)) };
    if let Some(unknown) = fields.keys().find(|key| *key != "classes" && *key != "request") {
        return Err(ApiError::parameter(unknown, "unknown field; the body takes classes and request"));
    }
    let Some(serde_json::Value::Array(list)) = fields.get("classes") else {
        return Err(ApiError::parameter("classes", "must be an array of class names"));
    };
    if list.is_empty() || list.len() > MAX_CLASSES {
        return Err(ApiError::parameter("classes", format!("must hold 1 to {MAX_CLASSES} class names")));
    }
    let mut classes = list
        .iter()
        .map(|item| match item {
            serde_json::Value::String(name) if !name.is_empty() && name.len() <= MAX_CLASS_NAME => Ok(name.clone()),
            _ => Err(ApiError::parameter(
                "classes",
                format!("each must be a class name of 1 to {MAX_CLASS_NAME} bytes, such as java.util.HashMap"),
            )),
        })
        .collect::<Result<Vec<String>, ApiError>>()?;
    classes.sort();
    classes.dedup();
    let id = match fields.get("request") {
        None => None,
        Some(serde_json::Value::String(id)) if !id.is_empty() && id.len() <= MAX_REQUEST_ID => Some(id.clone()),
        Some(_) => {
            return Err(ApiError::parameter(
                "request",
                format!(
                    "must be a string of 1 to {MAX_REQUEST_ID} bytes that names this request (a retry sends the same)"
                ),
            ))
        }
    };
    Ok(Request { classes, id })
}

/// The classes an advice names: of every edge's caller, callee, the code
/// that runs it and the methods whose compilations may hold it.
fn advised_classes(advice: &Advice) -> BTreeSet<String> {
    let edges = advice.not_inlined.iter().chain(&advice.inlined).chain(&advice.unknown);
    edges
        .flat_map(|edge| {
            let methods = [&edge.caller, &edge.callee].into_iter().chain(&edge.compiled_in).chain(&edge.roots);
            methods.map(|method| method.class.clone())
        })
        .collect()
}

/// 403 when recompiling is not open to this server's clients: it needs a
/// control token, or the agent's explicit opt-in.
fn recompile_allowed(state: &AppState) -> Result<(), ApiError> {
    if state.credentials.has_control() || state.config.recompile_without_token {
        return Ok(());
    }
    Err(ApiError::forbidden(
        "recompiling needs a control token (the agent's token= or token_file=): each request costs the JVM its \
         compiled code; recompile=unsafe-without-token serves it to anyone who reaches this port",
    ))
}

/// 400 naming the first of `classes` the current advice does not name.
async fn check_advised(state: &AppState, classes: &[String]) -> Result<(), ApiError> {
    let answer = advice_answer(state, super::MAX_LIMIT as usize, 0.0).await?;
    let named = advised_classes(&answer.report.advice);
    match classes.iter().find(|class| !named.contains(*class)) {
        None => Ok(()),
        Some(stray) => Err(ApiError::parameter(
            "classes",
            format!(
                "{stray} is not named by the current JIT advice (/api/jit/advice); only its classes are recompiled"
            ),
        )),
    }
}

/// Queues `request` with the JIT thread unless the gate
/// says otherwise; where its answer comes.
fn submit(state: &AppState, request: Request) -> Result<Answer, ApiError> {
    let (decision, start) = state.recompile.claim(&request)?;
    let Some(start) = start else {
        return match decision {
            Decision::Join(answer) => Ok(answer),
            // Done meanwhile by an identical request: wait for nothing new.
            _ => Err(ApiError::too_many("an identical recompile request has just been answered", RETRY_SOON)),
        };
    };
    start.send(|reply| state.shared.jit.submit(request.classes, reply)).map_err(|refused| match refused {
        Refused::Unavailable(why) => {
            ApiError::new(StatusCode::CONFLICT, format!("recompiling is not available: {why}"))
        }
        Refused::Busy => ApiError::busy("too many recompile requests wait already; retry later"),
    })
}

/// What a recompile request answers: the JIT thread's report, and whether
/// it is that of an earlier identical request (nothing done again).
#[derive(Serialize)]
struct RecompileAnswer {
    #[serde(flatten)]
    report: RecompileReport,
    repeated: bool,
}

fn answer(state: &AppState, outcome: Outcome, repeated: bool) -> Result<Response, ApiError> {
    match outcome {
        Ok(report) => state.json(None, &RecompileAnswer { report, repeated }),
        Err(error) => Err(ApiError::internal(format!("the JIT thread could not retransform: {error}"))),
    }
}

/// Waits (on the runtime) for the JIT thread's answer, at most [`RECOMPILE_WAIT`].
async fn wait(mut answer: Answer) -> Result<Outcome, ApiError> {
    let waited = tokio::time::timeout(RECOMPILE_WAIT, answer.wait_for(Option::is_some)).await;
    match waited {
        Ok(Ok(outcome)) => Ok(outcome.clone().unwrap_or_else(|| Err("no answer".to_string()))),
        Ok(Err(_)) => Err(ApiError::internal("the JIT thread's answer was lost")),
        Err(_) => Err(ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            format!(
                "the JIT thread did not answer within {} s; the request stays queued: a retry with the same \
                 classes waits for its answer and does not recompile again",
                RECOMPILE_WAIT.as_secs()
            ),
        )),
    }
}

/// `POST /api/jit/recompile` with `{"classes": ["pkg.Class", ...],
/// "request": "id"}` (the id optional):
/// retransforms them, so HotSpot compiles their code (and code that
/// inlined their methods) again, under the compiler directives in force.
pub async fn recompile(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    Params::parse(query.as_deref(), &[])?;
    recompile_allowed(&state)?;
    let request = parse_request(&body?)?;
    let pending = match state.recompile.decide(&request)? {
        Decision::Repeat(outcome) => return answer(&state, outcome, true),
        Decision::Join(pending) => pending,
        Decision::Start => {
            check_advised(&state, &request.classes).await?;
            submit(&state, request)?
        }
    };
    let outcome = wait(pending).await?;
    answer(&state, outcome, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recompile_body_is_a_bounded_list_of_class_names() {
        let read = parse_request(br#"{"classes": ["C$D", "a.B", "C$D"]}"#).unwrap();
        assert_eq!((read.classes, read.id), (vec!["C$D".to_string(), "a.B".to_string()], None));
        let read = parse_request(br#"{"classes": ["a.B"], "request": "7f3a"}"#).unwrap();
        assert_eq!(read.id.as_deref(), Some("7f3a"));
        let refused = [
            &br#"[]"#[..],
            br#"{"classes": []}"#,
            br#"{"classes": "a.B"}"#,
            br#"{"classes": [1]}"#,
            br#"{"classes": [""]}"#,
            br#"{"classes": ["a"], "all": true}"#,
            br#"{"classes": ["a"], "request": ""}"#,
            br#"{"classes": ["a"], "request": 7}"#,
            br#"not json"#,
        ];
        for body in refused {
            assert!(parse_request(body).is_err(), "{}", String::from_utf8_lossy(body));
        }
        let many = serde_json::json!({"classes": vec!["a.B"; MAX_CLASSES + 1]}).to_string();
        assert_eq!(parse_request(many.as_bytes()).unwrap_err().parameter.as_deref(), Some("classes"));
        let long = serde_json::json!({"classes": ["x".repeat(MAX_CLASS_NAME + 1)]}).to_string();
        assert!(parse_request(long.as_bytes()).is_err());
        let long = serde_json::json!({"classes": ["a.B"], "request": "x".repeat(MAX_REQUEST_ID + 1)}).to_string();
        assert_eq!(parse_request(long.as_bytes()).unwrap_err().parameter.as_deref(), Some("request"));
    }
}
