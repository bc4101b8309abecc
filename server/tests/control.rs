//! `POST /api/purge` and `POST /api/sampling`: they change the profile and
//! the sampler's control, and a refused request changes nothing.

mod support;

use std::time::Duration;

use axum::http::StatusCode;
use pcct_sampler::Mode;
use support::*;

/// (running, interval, mode) of the control.
fn control(fixture: &Fixture) -> (bool, Duration, Mode) {
    let control = &fixture.shared.control;
    (control.is_running(), control.interval(), control.mode())
}

const DEFAULT_CONTROL: (bool, Duration, Mode) = (true, Duration::from_millis(10), Mode::Cpu);

#[tokio::test]
async fn purge_empties_the_tree() {
    let fixture = Fixture::new();
    let epoch = fixture.shared.profile.lock().tree.epoch();
    let body = fixture.post("/api/purge", "").await.ok_json();
    assert_eq!(body["purged"], true);
    assert_eq!(body["epoch"], epoch + 1);
    let hot = fixture.get("/api/hot-methods").await.ok_json();
    assert_eq!(hot["methods"], serde_json::json!([]));
    assert_eq!(hot["profile"]["samples"], 0);
    assert_eq!(hot["profile"]["nodes"], 1, "only the root is left");
    assert_eq!(fixture.get("/api/hot-edges").await.ok_json()["edges"], serde_json::json!([]));
    assert_eq!(fixture.get("/api/hot-nodes").await.ok_json()["nodes"], serde_json::json!([]));
    let tree = fixture.get("/api/tree").await.ok_json();
    assert_eq!(tree["subtrees"][0]["children"], serde_json::json!([]));
    assert_eq!(fixture.get("/api/collapsed").await.text(), "");
    let metrics = fixture.get("/metrics").await.text();
    assert!(metrics.contains("\npcct_pcct_nodes 1\n"), "{metrics}");
    assert!(!metrics.contains("pcct_hot_method_self_ratio{"), "hot methods left after a purge");
}

#[tokio::test]
async fn sampling_pauses_and_resumes() {
    let fixture = Fixture::new();
    let body = fixture.post("/api/sampling", r#"{"running": false}"#).await.ok_json();
    assert_eq!(body["running"], false);
    assert!(!fixture.shared.control.is_running());
    let status = fixture.get("/api/status").await.ok_json();
    assert_eq!(status["sampling"]["running"], false);
    let body = fixture.post("/api/sampling", r#"{"running": true}"#).await.ok_json();
    assert_eq!(body["running"], true);
    assert!(fixture.shared.control.is_running());
}

#[tokio::test]
async fn sampling_changes_interval_and_mode() {
    let fixture = Fixture::new();
    let body = fixture.post("/api/sampling", r#"{"interval": "500us"}"#).await.ok_json();
    assert_eq!(body["interval_ns"], 500_000);
    assert_eq!(fixture.shared.control.interval(), Duration::from_micros(500));
    let body = fixture.post("/api/sampling", r#"{"mode": "wall"}"#).await.ok_json();
    assert_eq!(body["mode"], "wall");
    assert_eq!(fixture.shared.control.mode(), Mode::Wall);
    let body = fixture.post("/api/sampling", r#"{"running": false, "interval": "1s", "mode": "cpu"}"#).await.ok_json();
    assert_eq!(body, serde_json::json!({"running": false, "interval_ns": 1_000_000_000u64, "mode": "cpu"}));
    assert_eq!(control(&fixture), (false, Duration::from_secs(1), Mode::Cpu));
    for bound in ["100us", "1000000ns", "0.5ms"] {
        let answer = fixture.post("/api/sampling", format!(r#"{{"interval": "{bound}"}}"#)).await;
        assert_eq!(answer.status, StatusCode::OK, "{bound}: {}", answer.text());
    }
    let unchanged = fixture.post("/api/sampling", "{}").await.ok_json();
    assert_eq!(unchanged["interval_ns"], 500_000);
}

#[tokio::test]
async fn bad_interval_or_mode_is_400_naming_the_field_and_changes_nothing() {
    let fixture = Fixture::new();
    let cases = [
        (r#"{"interval": "99us"}"#, "interval"),
        (r#"{"interval": "2s"}"#, "interval"),
        (r#"{"interval": "fast"}"#, "interval"),
        (r#"{"interval": ""}"#, "interval"),
        (r#"{"interval": "-1ms"}"#, "interval"),
        (r#"{"interval": "1e9ms"}"#, "interval"),
        (r#"{"mode": "gpu"}"#, "mode"),
        (r#"{"mode": ""}"#, "mode"),
        (r#"{"mode": "CPU"}"#, "mode"),
        // Valid fields beside an invalid one are not applied either.
        (r#"{"running": false, "interval": "1ms", "mode": "gpu"}"#, "mode"),
        (r#"{"running": false, "mode": "wall", "interval": "0ms"}"#, "interval"),
    ];
    for (body, field) in cases {
        fixture.post("/api/sampling", body).await.bad_parameter(field);
        assert_eq!(control(&fixture), DEFAULT_CONTROL, "{body} changed the control");
    }
}

#[tokio::test]
async fn wrongly_typed_fields_are_400_naming_the_field() {
    let fixture = Fixture::new();
    let cases = [
        (r#"{"interval": 5}"#, "interval"),
        (r#"{"mode": 1}"#, "mode"),
        (r#"{"running": "yes"}"#, "running"),
        (r#"{"running": "interval"}"#, "running"),
        (r#"{"mode": true, "running": false}"#, "mode"),
    ];
    let mut wrong = Vec::new();
    for (body, field) in cases {
        let answer = fixture.post("/api/sampling", body).await;
        let named = answer.error(StatusCode::BAD_REQUEST);
        if named.as_deref() != Some(field) {
            wrong.push(format!("{body} -> parameter {named:?}, expected {field:?}"));
        }
        assert_eq!(control(&fixture), DEFAULT_CONTROL, "{body} changed the control");
    }
    assert!(wrong.is_empty(), "misnamed fields:\n{}", wrong.join("\n"));
}

#[tokio::test]
async fn unknown_fields_are_400_and_not_blamed_on_a_known_field() {
    let fixture = Fixture::new();
    for (body, field) in [(r#"{"speed": 1}"#, "speed"), (r#"{"running": false, "intervall": "1ms"}"#, "intervall")] {
        let answer = fixture.post("/api/sampling", body).await;
        let named = answer.error(StatusCode::BAD_REQUEST);
        assert_eq!(control(&fixture), DEFAULT_CONTROL, "{body} changed the control");
        assert_eq!(named.as_deref(), Some(field), "{body}: {}", answer.text());
    }
}

#[tokio::test]
async fn a_body_that_is_not_a_json_object_is_400() {
    let fixture = Fixture::new();
    for body in ["", "null", "[]", "true", "running=false", "{", r#"{"running": false} trailing"#, "\u{0}"] {
        let answer = fixture.post("/api/sampling", body).await;
        answer.error(StatusCode::BAD_REQUEST);
        assert_eq!(control(&fixture), DEFAULT_CONTROL, "{body:?} changed the control");
    }
}

#[tokio::test]
async fn query_parameters_are_refused_before_anything_changes() {
    let fixture = Fixture::new();
    fixture.post("/api/purge?now=1", "").await.bad_parameter("now");
    assert_eq!(fixture.shared.profile.lock().tree.total().samples, TOTAL_SAMPLES, "purged anyway");
    fixture.post("/api/sampling?running=false", r#"{"running": false}"#).await.bad_parameter("running");
    assert_eq!(control(&fixture), DEFAULT_CONTROL);
}
