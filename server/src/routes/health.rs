//! `/healthz`: liveness, without authentication, and who answers: the
//! `X-Pcct-Agent` header names pcct and the process it serves
//! (`pcct/<version> pid=<pid>`), so that a client such as `pcct advise`
//! can tell a pcct agent from another service of the same process before
//! it sends a token.

use axum::extract::RawQuery;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::params::Params;

/// The identity header's name.
pub const IDENTITY_HEADER: &str = "x-pcct-agent";

/// The identity header's value: `pcct/<version> pid=<pid>`.
pub fn identity() -> String {
    format!("pcct/{} pid={}", env!("CARGO_PKG_VERSION"), std::process::id())
}

pub async fn healthz(RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    Params::parse(query.as_deref(), &[])?;
    let mut response = "ok\n".into_response();
    if let Ok(value) = HeaderValue::from_str(&identity()) {
        response.headers_mut().insert(IDENTITY_HEADER, value);
    }
    Ok(response)
}
