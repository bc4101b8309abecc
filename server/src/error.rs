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
        ApiError {
            status: rejection.status(),
            message: format!("the body was refused: {}", rejection.body_text()),
            parameter: None,
        }
    }
}

impl ApiError {
    /// 400 for a bad query parameter, naming it.
    pub fn parameter(parameter: &str, message: impl Into<String>) -> ApiError {
        let parameter: String = parameter.chars().take(64).collect();
        ApiError { status: StatusCode::BAD_REQUEST, message: message.into(), parameter: Some(parameter) }
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::BAD_REQUEST, message: message.into(), parameter: None }
    }

    pub fn unauthorized() -> ApiError {
        ApiError {
            status: StatusCode::UNAUTHORIZED,
            message: "this server requires Authorization: Bearer <token>".to_string(),
            parameter: None,
        }
    }

    /// 403: a request a web page on another site could have sent (see `same_origin`).
    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::FORBIDDEN, message: message.into(), parameter: None }
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::NOT_FOUND, message: message.into(), parameter: None }
    }

    pub fn busy(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::SERVICE_UNAVAILABLE, message: message.into(), parameter: None }
    }

    /// 413: the answer would be larger than the server sends; `parameter`
    /// names the parameter that makes it smaller, if there is one.
    pub fn too_large(parameter: Option<&str>, message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            message: message.into(),
            parameter: parameter.map(str::to_string),
        }
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::INTERNAL_SERVER_ERROR, message: message.into(), parameter: None }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Body { error: &self.message, parameter: self.parameter.as_deref() };
        let mut response = (self.status, Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"pcct\""));
        }
        response
    }
}
