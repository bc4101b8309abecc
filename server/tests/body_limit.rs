//! Request bodies over `MAX_BODY_BYTES` are refused and change nothing.

mod support;

use std::time::Duration;

use axum::body::Body;
use axum::http::StatusCode;
use pcct_sampler::Mode;
use pcct_server::MAX_BODY_BYTES;
use support::*;

/// A valid change of every knob, padded with whitespace to `size` bytes.
fn padded_change(size: usize) -> String {
    let change = r#"{"running": false, "interval": "1ms", "mode": "wall"}"#;
    format!("{change}{}", " ".repeat(size - change.len()))
}

fn assert_unchanged(fixture: &Fixture) {
    let control = &fixture.shared.control;
    assert!(control.is_running());
    assert_eq!(control.interval(), Duration::from_millis(10));
    assert_eq!(control.mode(), Mode::Cpu);
}

fn assert_refused(answer: &Answer) {
    assert!(
        answer.status == StatusCode::PAYLOAD_TOO_LARGE || answer.status == StatusCode::BAD_REQUEST,
        "{} {}",
        answer.status,
        String::from_utf8_lossy(&answer.body)
    );
    // Refusals are JSON like every other error.
    let body: serde_json::Value = serde_json::from_slice(&answer.body).expect("a JSON error body");
    assert!(body["error"].is_string(), "{body}");
}

#[tokio::test]
async fn an_oversized_sampling_body_is_413_and_changes_nothing() {
    let fixture = Fixture::new();
    let answer = fixture.post("/api/sampling", padded_change(MAX_BODY_BYTES + 1)).await;
    assert_refused(&answer);
    assert_unchanged(&fixture);
    let huge = fixture.post("/api/sampling", padded_change(4 << 20)).await;
    assert_refused(&huge);
    assert_unchanged(&fixture);
}

#[tokio::test]
async fn an_oversized_body_with_content_length_is_413() {
    let fixture = Fixture::new();
    let body = padded_change(MAX_BODY_BYTES * 2);
    let length = body.len().to_string();
    let answer = fixture.send(method("POST"), "/api/sampling", &[("content-length", &length)], Body::from(body)).await;
    assert_refused(&answer);
    assert_unchanged(&fixture);
}

#[tokio::test]
async fn a_streamed_oversized_body_is_refused() {
    let fixture = Fixture::new();
    // No length known in advance: the limit applies while reading.
    let chunks = (0..40).map(|index| {
        let chunk = if index == 0 { padded_change(1024) } else { " ".repeat(1024) };
        Ok::<_, std::io::Error>(chunk)
    });
    let body = Body::from_stream(futures_util::stream::iter(chunks));
    let answer = fixture.send(method("POST"), "/api/sampling", &[], body).await;
    assert_refused(&answer);
    assert_unchanged(&fixture);
}

#[tokio::test]
async fn a_body_at_the_limit_is_accepted() {
    let fixture = Fixture::new();
    let body = fixture.post("/api/sampling", padded_change(MAX_BODY_BYTES)).await.ok_json();
    assert_eq!(body["mode"], "wall");
    assert!(!fixture.shared.control.is_running());
}
