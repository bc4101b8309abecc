//! JSON answers are serialised into a byte budget, as text answers are
//! (`text_budget`): the server never builds an answer larger than
//! [`AppConfig::json_budget`](crate::AppConfig) (64 MiB by default). Past
//! it the route answers 413, naming the parameter that makes the answer
//! smaller (`limit`, `max_nodes`), if it has one.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::ApiError;
use crate::text_budget::BudgetedText;

/// Most bytes of one JSON answer.
pub const MAX_JSON_BYTES: usize = 64 << 20;

/// `value` as a JSON answer of at most `budget` bytes, or 413 naming
/// `shrink`, the parameter that makes it smaller (`None` for answers that
/// no parameter bounds).
pub fn json<T: Serialize>(budget: usize, shrink: Option<&str>, value: &T) -> Result<Response, ApiError> {
    let mut text = BudgetedText::new(budget);
    let written = serde_json::to_writer(&mut text, value);
    let body = written.ok().and_then(|()| text.finish()).ok_or_else(|| too_large(budget, shrink))?;
    let mut response = body.into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(response)
}

fn too_large(budget: usize, shrink: Option<&str>) -> ApiError {
    let limit = format!("the answer would exceed the server's JSON size limit ({budget} bytes)");
    match shrink {
        Some(parameter) => ApiError::too_large(shrink, format!("{limit}; ask for less with a smaller {parameter}")),
        None => ApiError::too_large(None, limit),
    }
}

#[cfg(test)]
mod tests {
    use axum::body::to_bytes;
    use axum::http::StatusCode;

    use super::*;

    #[tokio::test]
    async fn an_answer_within_the_budget_is_json_and_beyond_it_413_naming_the_parameter() {
        let value = serde_json::json!({"list": [1, 2, 3]});
        let exact = serde_json::to_string(&value).unwrap().len();
        let response = json(exact, Some("limit"), &value).expect("fits");
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        let body = to_bytes(response.into_body(), exact).await.unwrap();
        assert_eq!(serde_json::from_slice::<serde_json::Value>(&body).unwrap(), value);
        let refused = json(exact - 1, Some("limit"), &value).expect_err("one byte over");
        assert_eq!((refused.status, refused.parameter.as_deref()), (StatusCode::PAYLOAD_TOO_LARGE, Some("limit")));
        assert!(refused.message.contains("smaller limit"), "{}", refused.message);
        let unnamed = json(exact - 1, None, &value).expect_err("one byte over");
        assert_eq!((unnamed.status, unnamed.parameter), (StatusCode::PAYLOAD_TOO_LARGE, None));
    }
}
