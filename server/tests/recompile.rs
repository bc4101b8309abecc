//! `POST /api/jit/recompile` is safe by default, through `oneshot` on
//! `app(state)`: refused without a control token (unless the agent opts
//! in with `recompile=unsafe-without-token`), one request at a time and at
//! most one per `recompile_every` (429 with `Retry-After`), only classes
//! the current advice names, and a retry after a 504 waits for the request
//! it retries instead of recompiling twice, while a new request for the
//! same classes is not mistaken for a retry.
//!
//! The JIT thread is a test's own: requests are taken from the queue with
//! `next_work` (no JVM). Waits run on tokio's paused clock.

mod support;

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, StatusCode};
use pcct_jit::live::Work;
use pcct_jit::RecompileReport;
use pcct_server::recompile::{Decision, Request};
use pcct_server::routes::jit::RECOMPILE_WAIT;
use pcct_server::AppConfig;
use support::*;

const WORK: &str = r#"{"classes": ["demo.Work"], "request": "first"}"#;
const WORK_AGAIN: &str = r#"{"classes": ["demo.Work"], "request": "second"}"#;
const IO: &str = r#"{"classes": ["demo.Io"]}"#;

async fn recompile(fixture: &Fixture, body: &str, token: Option<&str>) -> Answer {
    let authorization = token.map(|token| format!("Bearer {token}"));
    let headers: Vec<(&str, &str)> = authorization.iter().map(|value| ("authorization", value.as_str())).collect();
    fixture.send(method("POST"), "/api/jit/recompile", &headers, Body::from(body.to_string())).await
}

/// The next queued request's classes, answered as done; `None` when none waits.
fn serve_one(fixture: &Fixture) -> Option<Vec<String>> {
    match fixture.shared.jit.next_work(Duration::from_millis(1)) {
        Work::Recompile(job) => {
            let classes = job.classes.clone();
            job.answer(Ok(RecompileReport { retransformed: classes.clone(), ..RecompileReport::default() }));
            Some(classes)
        }
        _ => None,
    }
}

#[tokio::test]
async fn without_a_token_recompiling_is_refused_at_the_defaults() {
    let fixture = Fixture::without_jit_thread(AppConfig::default());
    let answer = recompile(&fixture, WORK, None).await;
    assert_eq!(answer.error(StatusCode::FORBIDDEN), None);
    let message = answer.json()["error"].as_str().unwrap().to_string();
    assert!(message.contains("control token") && message.contains("recompile=unsafe-without-token"), "{message}");
    assert_eq!(serve_one(&fixture), None, "nothing was queued");
}

#[tokio::test(start_paused = true)]
async fn with_the_control_token_one_request_at_a_time_and_one_per_interval() {
    let config = AppConfig { token: Some(TOKEN.to_string()), ..AppConfig::default() };
    let fixture = Fixture::without_jit_thread(config);
    let first = {
        let state = fixture.state.clone();
        tokio::spawn(async move {
            let headers = [("authorization", "Bearer s3cret-token-0123"), ("content-type", "application/json")];
            send_on(&state, None, method("POST"), "/api/jit/recompile", &headers, Body::from(WORK)).await
        })
    };
    // While it is queued, the same classes would join it, and other classes wait.
    let work = Request { classes: vec!["demo.Work".to_string()], id: Some("first".to_string()) };
    let queued = tokio::time::timeout(Duration::from_secs(5), async {
        while !matches!(fixture.state.recompile.decide(&work), Ok(Decision::Join(_))) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    queued.await.expect("the first request is queued");
    let busy = recompile(&fixture, IO, Some(TOKEN)).await;
    assert_eq!(busy.error(StatusCode::TOO_MANY_REQUESTS), None);
    assert!(busy.json()["error"].as_str().unwrap().contains("queued or running"), "{}", busy.text());
    assert_eq!(serve_one(&fixture), Some(vec!["demo.Work".to_string()]));
    let answer = first.await.expect("the first request");
    assert_eq!(answer.ok_json()["repeated"], false);
    // Within the interval: a retry of the request gets the same answer, nothing is done again.
    let again = recompile(&fixture, WORK, Some(TOKEN)).await.ok_json();
    assert_eq!(
        (again["repeated"].clone(), again["retransformed"].clone()),
        (true.into(), serde_json::json!(["demo.Work"]))
    );
    assert_eq!(serve_one(&fixture), None, "nothing more was queued");
    // A new request for the same classes (the directives may have changed) waits its turn.
    for new in [WORK_AGAIN, r#"{"classes": ["demo.Work"]}"#] {
        let waits = recompile(&fixture, new, Some(TOKEN)).await;
        assert_eq!(waits.error(StatusCode::TOO_MANY_REQUESTS), None, "{new}");
    }
    let limited = recompile(&fixture, IO, Some(TOKEN)).await;
    assert_eq!(limited.error(StatusCode::TOO_MANY_REQUESTS), None);
    let wait: u64 = limited.headers[header::RETRY_AFTER].to_str().unwrap().parse().unwrap();
    assert!((1..=30).contains(&wait), "Retry-After {wait}");
    tokio::time::advance(Duration::from_secs(wait)).await;
    let later = tokio::spawn({
        let state = fixture.state.clone();
        async move {
            let headers = [("authorization", "Bearer s3cret-token-0123"), ("content-type", "application/json")];
            send_on(&state, None, method("POST"), "/api/jit/recompile", &headers, Body::from(IO)).await
        }
    });
    let served = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Some(classes) = serve_one(&fixture) {
                return classes;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    assert_eq!(served.await.expect("queued after the wait"), vec!["demo.Io".to_string()]);
    assert_eq!(later.await.unwrap().status, StatusCode::OK);
}

#[tokio::test]
async fn only_classes_the_current_advice_names_are_recompiled() {
    let fixture = Fixture::without_jit_thread(open_config());
    let answer = recompile(&fixture, r#"{"classes": ["demo.Work", "java.lang.String"]}"#, None).await;
    answer.bad_parameter("classes");
    assert!(answer.json()["error"].as_str().unwrap().starts_with("java.lang.String is not named"), "{}", answer.text());
    // After a purge the advice names nothing.
    fixture.post("/api/purge", "").await.ok_json();
    recompile(&fixture, WORK, None).await.bad_parameter("classes");
    assert_eq!(serve_one(&fixture), None, "nothing was queued");
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_a_timeout_waits_for_the_request_it_retries() {
    let fixture = Fixture::without_jit_thread(open_config());
    let timed_out = recompile(&fixture, WORK, None).await;
    assert_eq!(timed_out.error(StatusCode::GATEWAY_TIMEOUT), None);
    assert!(timed_out.json()["error"].as_str().unwrap().contains("does not recompile again"), "{}", timed_out.text());
    // The retry joins the queued request: the JIT thread finds one request, not two.
    let retry = tokio::spawn({
        let state = fixture.state.clone();
        async move {
            let headers = [("content-type", "application/json")];
            send_on(&state, None, method("POST"), "/api/jit/recompile", &headers, Body::from(WORK)).await
        }
    });
    tokio::time::sleep(RECOMPILE_WAIT / 2).await;
    assert_eq!(serve_one(&fixture), Some(vec!["demo.Work".to_string()]));
    assert_eq!(serve_one(&fixture), None, "the retry queued a second retransform");
    let answer = retry.await.unwrap().ok_json();
    assert_eq!(answer["retransformed"], serde_json::json!(["demo.Work"]));
}
