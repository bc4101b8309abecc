//! # pcct-server — live answers over HTTP and Prometheus metrics
//!
//! Owns the HTTP API of a running pcct agent: [`app`] builds the axum
//! `Router` from an [`AppState`] (so handlers are tested with `oneshot`,
//! without a socket), [`serve::start`] serves it on a thread of its own with
//! a one-thread tokio runtime, connection limits and graceful shutdown.
//!
//! It must never call into the JVM, and never hold the profile lock longer
//! than it takes to copy an answer out: the sampler waits for that lock at
//! most half an interval (see `pcct_sampler::shared`). Answers are at most
//! one tick gap (an interval, up to 1 + `jitter` intervals) plus one drain
//! old: every JSON answer carries the
//! sampler's current tick and the last tick it drained.

#![forbid(unsafe_code)]

pub mod auth;
pub mod backoff;
pub mod error;
pub mod fresh;
pub mod heavy;
pub mod json_answer;
pub mod metrics;
pub mod openapi;
pub mod params;
pub mod push;
pub mod recompile;
pub mod routes;
pub mod same_origin;
pub mod secret;
pub mod serve;
pub mod sessions;
pub mod state;
pub mod text_budget;
pub mod throttle;
pub mod window;

use std::time::Instant;

use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

pub use error::{ApiError, Result, ServerError};
pub use serve::{start, ServerConfig, ServerHandle};
pub use state::{AppConfig, AppState};

/// Largest request body accepted (POST /api/sampling takes a small JSON object).
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// Every route of the API.
pub fn app(state: AppState) -> Router {
    Router::new()
        .route("/", get(routes::page::page))
        .route("/healthz", get(routes::health::healthz))
        .route("/docs/{page}", get(routes::docs::page))
        .route("/api/openapi.json", get(routes::docs::openapi))
        .route("/login", get(routes::login::show).post(routes::login::login))
        .route("/logout", post(routes::login::logout))
        .route("/metrics", get(routes::metrics::metrics))
        .route("/flamegraph.svg", get(routes::flamegraph::flamegraph))
        .route("/api/status", get(routes::status::status))
        .route("/api/hot-methods", get(routes::hot::hot_methods))
        .route("/api/hot-edges", get(routes::hot::hot_edges))
        .route("/api/hot-nodes", get(routes::hot::hot_nodes))
        .route("/api/sites", get(routes::hot::sites))
        .route("/api/tree", get(routes::tree::tree))
        .route("/api/samples", get(routes::samples::samples))
        .route("/api/reports/{kind}", get(routes::reports::report))
        .route("/api/collapsed", get(routes::reports::collapsed))
        .route("/api/pprof", get(routes::pprof::cumulative))
        .route("/debug/pprof/profile", get(routes::pprof::window))
        .route("/api/purge", post(routes::control::purge))
        .route("/api/sampling", post(routes::control::sampling))
        .route("/api/jit/advice", get(routes::jit::advice))
        .route("/api/jit/directives", get(routes::jit::directives_file))
        .route("/api/jit/events", get(routes::jit::events))
        .route("/api/jit/inline-tree", get(routes::jit::inline_tree))
        .route("/api/jit/recompile", post(routes::jit::recompile))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), fresh::drain_first))
        .layer(middleware::from_fn_with_state(state.clone(), auth::require_token))
        .layer(middleware::from_fn_with_state(state.clone(), same_origin::require_same_origin))
        .layer(middleware::from_fn_with_state(state.clone(), record_request))
        .layer(middleware::from_fn(no_framing))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such route; see GET / or the README for the routes")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(axum::http::StatusCode::METHOD_NOT_ALLOWED, "method not allowed on this route")
}

/// Every answer forbids being shown in another site's frame (the page's
/// buttons pause and purge: a framing page could trick a click) and being
/// read as another type than it says. The flame graph, which the page
/// embeds (an `<object>`, so that its search and zoom run), may be framed
/// by this server's own pages only.
async fn no_framing(request: Request, next: Next) -> Response {
    let embedded = request.uri().path() == "/flamegraph.svg";
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let (policy, frame_options) =
        if embedded { ("frame-ancestors 'self'", "SAMEORIGIN") } else { ("frame-ancestors 'none'", "DENY") };
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(policy));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static(frame_options));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// Counts every request by route template and status, and times it.
async fn record_request(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().map_or("unmatched", |path| path.as_str()).to_string();
    let start = Instant::now();
    let response = next.run(request).await.into_response();
    let status = response.status().as_u16().to_string();
    state.metrics.http_requests.with_label_values(&[route.as_str(), status.as_str()]).inc();
    state.metrics.http_duration.with_label_values(&[route.as_str()]).observe(start.elapsed().as_secs_f64());
    response
}
