//! `GET /`: a page for people: hot methods, hot edges, the flame graph and
//! the counters, refreshing itself. Self-contained (no external resources);
//! with a token, the page asks for it once and sends it with its requests.

use axum::extract::RawQuery;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::params::Params;

const PAGE: &str = include_str!("page.html");

pub async fn page(RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    Params::parse(query.as_deref(), &[])?;
    Ok(([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-store")], PAGE)
        .into_response())
}
