//! Errors: `ApiError` is what a handler answers with (a status and a JSON
//! body naming the problem); `ServerError` is what starting the server can
//! fail with.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot listen on {address}: {reason}")]
    Bind { address: String, reason: String },
    #[error("cannot start the HTTP runtime: {0}")]
    Runtime(String),
}

pub type Result<T, E = ServerError> = std::result::Result<T, E>;

/// An error answer: `{"error": "...", "parameter": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub parameter: Option<String>,
    /// Seconds after which a retry may succeed (`Retry-After`, with 429 and 503).
    pub retry_after: Option<u64>,
}

#[derive(Serialize)]
struct Body<'a> {
    error: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameter: Option<&'a str>,
}

impl From<axum::extract::rejection::BytesRejection> for ApiError {
    /// A request body axum refused (too large, unreadable), with its status.
    fn from(rejection: axum::extract::rejection::BytesRejection) -> ApiError {
        ApiError::new(rejection.status(), format!("the body was refused: {}", rejection.body_text()))
    }
}

impl ApiError {
    /// An error answer with `status` and `message`, naming no parameter.
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError { status, message: message.into(), parameter: None, retry_after: None }
    }

    /// 429: too many requests of this kind; a retry after `wait` may succeed.
    pub fn too_many(message: impl Into<String>, wait: std::time::Duration) -> ApiError {
        let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        ApiError { retry_after: Some(seconds.max(1)), ..ApiError::new(StatusCode::TOO_MANY_REQUESTS, message) }
    }

    /// 400 for a bad query parameter, naming it.
    pub fn parameter(parameter: &str, message: impl Into<String>) -> ApiError {
        let parameter: String = parameter.chars().take(64).collect();
        ApiError { parameter: Some(parameter), ..ApiError::new(StatusCode::BAD_REQUEST, message) }
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn unauthorized() -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "this server requires Authorization: Bearer <token>")
    }

    /// 403: a request a web page on another site could have sent (see `same_origin`).
    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, message)
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }

    pub fn busy(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message)
    }

    /// 413: the answer would be larger than the server sends; `parameter`
    /// names the parameter that makes it smaller, if there is one.
    pub fn too_large(parameter: Option<&str>, message: impl Into<String>) -> ApiError {
        ApiError { parameter: parameter.map(str::to_string), ..ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, message) }
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Body { error: &self.message, parameter: self.parameter.as_deref() };
        let mut response = (self.status, Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"pcct\""));
        }
        if let Some(seconds) = self.retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}
