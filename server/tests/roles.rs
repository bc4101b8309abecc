//! The control plane's credentials, through `oneshot` on `app(state)`:
//! the read-only token reads every route and changes nothing (pause,
//! purge, interval, recompile: 403), the control token does both; wrong
//! tokens are slowed down per client address (1,000 take at least 100 s,
//! or are refused with 429) while the right one is served at once; the
//! session cookie carries the server's port and its token's role; every
//! answer forbids framing, but the flame graph, which only this server's
//! own page may frame.
//!
//! The throttle's waits run on tokio's paused clock: the test measures
//! them in virtual time, at once and without flakiness.

mod support;

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, StatusCode};
use pcct_server::throttle::{MAX_HELD, PENALTY};
use pcct_server::AppConfig;
use support::*;
use tokio::time::Instant;

/// The routes that change the sampler or the JVM, with valid bodies.
const CHANGES: [(&str, &str); 3] = [
    ("/api/jit/recompile", r#"{"classes": ["demo.Work"]}"#),
    ("/api/purge", ""),
    ("/api/sampling", r#"{"running": false, "interval": "1ms"}"#),
];

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

async fn with_bearer(fixture: &Fixture, verb: &str, path: &str, body: &str, token: &str) -> Answer {
    let authorization = bearer(token);
    fixture.send(method(verb), path, &[("authorization", &authorization)], Body::from(body.to_string())).await
}

fn assert_unchanged(fixture: &Fixture) {
    assert_eq!(fixture.shared.profile.lock().tree.total().samples, TOTAL_SAMPLES, "purged");
    assert!(fixture.shared.control.is_running(), "paused");
    assert_eq!(fixture.shared.control.interval(), Duration::from_millis(10), "the interval changed");
}

#[tokio::test]
async fn the_read_only_token_reads_everything_and_changes_nothing() {
    let fixture = Fixture::with_tokens();
    for (verb, path, body) in ROUTES.iter().filter(|(verb, _, _)| *verb == "GET") {
        let answer = with_bearer(&fixture, verb, path, body, READ_TOKEN).await;
        assert_eq!(answer.status, StatusCode::OK, "{verb} {path} with the read-only token");
    }
    for (path, body) in CHANGES {
        let answer = with_bearer(&fixture, "POST", path, body, READ_TOKEN).await;
        assert_eq!(answer.error(StatusCode::FORBIDDEN), None, "POST {path} with the read-only token");
        assert!(answer.json()["error"].as_str().unwrap().contains("control token"), "{}", answer.text());
    }
    assert_unchanged(&fixture);
    // The control token does both.
    for (path, body) in CHANGES {
        let answer = with_bearer(&fixture, "POST", path, body, TOKEN).await;
        assert_eq!(answer.status, StatusCode::OK, "POST {path} with the control token: {}", answer.text());
    }
    assert!(!fixture.shared.control.is_running());
}

#[tokio::test]
async fn with_only_a_read_only_token_nothing_changes_the_sampler() {
    let fixture = Fixture::with_config(AppConfig { read_token: Some(READ_TOKEN.to_string()), ..open_config() });
    assert_eq!(with_bearer(&fixture, "GET", "/api/status", "", READ_TOKEN).await.status, StatusCode::OK);
    for (path, body) in CHANGES {
        let answer = with_bearer(&fixture, "POST", path, body, READ_TOKEN).await;
        assert_eq!(answer.error(StatusCode::FORBIDDEN), None, "POST {path}");
        assert!(answer.json()["error"].as_str().unwrap().contains("no control token is set"), "{}", answer.text());
    }
    assert_unchanged(&fixture);
}

/// Logs in on port `port` with `token`: the session cookie (`name=value`).
async fn log_in(fixture: &Fixture, port: u16, token: &str) -> String {
    let host = format!("127.0.0.1:{port}");
    let headers = [("content-type", "application/x-www-form-urlencoded"), ("host", host.as_str())];
    let form = Body::from(format!("token={token}"));
    let answer = send_on(&fixture.state, Some(connection("127.0.0.1", port)), method("POST"), "/login", &headers, form);
    let answer = answer.await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.text());
    let cookie = answer.headers[header::SET_COOKIE].to_str().unwrap().to_string();
    assert!(cookie.starts_with(&format!("pcct_session_{port}=")), "{cookie}");
    cookie.split(';').next().unwrap().to_string()
}

#[tokio::test]
async fn a_session_carries_its_port_and_its_tokens_role() {
    let fixture = Fixture::with_tokens();
    let read = log_in(&fixture, 7070, READ_TOKEN).await;
    let on = |port: u16, cookie: &str, verb: &str, path: &str| {
        let headers = [("cookie", cookie.to_string()), ("content-type", "application/json".to_string())];
        let state = fixture.state.clone();
        let (verb, path) = (verb.to_string(), path.to_string());
        async move {
            let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
            send_on(&state, Some(connection("127.0.0.1", port)), method(&verb), &path, &headers, Body::empty()).await
        }
    };
    assert_eq!(on(7070, &read, "GET", "/api/status").await.status, StatusCode::OK);
    assert_eq!(on(7070, &read, "POST", "/api/purge").await.error(StatusCode::FORBIDDEN), None);
    // The same session offered on another port, under that port's name, is no session.
    let elsewhere = read.replacen("7070", "7071", 1);
    assert_eq!(on(7071, &elsewhere, "GET", "/api/status").await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(on(7071, &read, "GET", "/api/status").await.status, StatusCode::UNAUTHORIZED);
    let control = log_in(&fixture, 7070, TOKEN).await;
    assert_eq!(on(7070, &control, "POST", "/api/purge").await.status, StatusCode::OK);
}

#[tokio::test]
async fn every_answer_forbids_framing_but_the_flame_graph_the_page_embeds() {
    let fixture = Fixture::with_token();
    for answer in [fixture.get("/").await, fixture.get("/login").await, fixture.get("/healthz").await] {
        assert_eq!(answer.headers[header::CONTENT_SECURITY_POLICY], "frame-ancestors 'none'");
        assert_eq!(answer.headers[header::X_FRAME_OPTIONS], "DENY");
    }
    let flame = Fixture::new().get("/flamegraph.svg").await;
    assert_eq!(flame.status, StatusCode::OK);
    assert_eq!(flame.headers[header::CONTENT_SECURITY_POLICY], "frame-ancestors 'self'");
    assert_eq!(flame.headers[header::X_FRAME_OPTIONS], "SAMEORIGIN");
}

/// Sends `GET /api/status` from `peer` with bearer `token`; its status, and
/// its `Retry-After` when there is one.
async fn ask(state: pcct_server::AppState, peer: &'static str, token: String) -> (StatusCode, Option<String>) {
    let authorization = bearer(&token);
    let headers = [("authorization", authorization.as_str())];
    let answer = send_on(&state, Some(connection(peer, 7070)), method("GET"), "/api/status", &headers, Body::empty());
    let answer = answer.await;
    let retry = answer.headers.get(header::RETRY_AFTER).map(|value| value.to_str().unwrap().to_string());
    (answer.status, retry)
}

/// `count` wrong tokens from `peer`, `at_once` at a time: the statuses.
async fn guess(
    fixture: &Fixture,
    peer: &'static str,
    count: usize,
    at_once: usize,
) -> Vec<(StatusCode, Option<String>)> {
    let tasks: Vec<_> = (0..at_once)
        .map(|task| {
            let state = fixture.state.clone();
            tokio::spawn(async move {
                let mut statuses = Vec::new();
                for index in (task..count).step_by(at_once) {
                    statuses.push(ask(state.clone(), peer, format!("wrong-token-{index:08}")).await);
                }
                statuses
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.extend(task.await.expect("a guesser"));
    }
    statuses
}

#[tokio::test(start_paused = true)]
async fn a_thousand_wrong_tokens_take_a_hundred_seconds_while_the_right_one_is_served_at_once() {
    let fixture = Fixture::with_tokens();
    let started = Instant::now();
    // Four at a time, fewer than the most held: each is compared, and answered late.
    let guesses = {
        let fixture_state =
            Fixture { shared: fixture.shared.clone(), state: fixture.state.clone(), methods: fixture.methods };
        tokio::spawn(async move { guess(&fixture_state, "10.0.0.1", 1000, 4).await })
    };
    // Meanwhile, half-way, the right token from the same address.
    tokio::time::sleep(Duration::from_secs(50)).await;
    let before = Instant::now();
    assert_eq!(ask(fixture.state.clone(), "10.0.0.1", READ_TOKEN.to_string()).await.0, StatusCode::OK);
    assert_eq!(before.elapsed(), Duration::ZERO, "the right token waited");
    // And another address's wrong token waits for its own penalty only.
    let before = Instant::now();
    assert_eq!(ask(fixture.state.clone(), "10.0.0.2", "nope".to_string()).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(before.elapsed(), PENALTY);
    let statuses = guesses.await.expect("the guesses");
    assert!(statuses.iter().all(|(status, _)| *status == StatusCode::UNAUTHORIZED), "{statuses:?}");
    assert!(started.elapsed() >= Duration::from_secs(100), "1,000 wrong tokens took {:?}", started.elapsed());
}

#[tokio::test(start_paused = true)]
async fn wrong_tokens_beyond_the_most_held_are_refused_with_429_without_being_compared() {
    let fixture = Fixture::with_tokens();
    let started = Instant::now();
    let statuses = guess(&fixture, "10.0.0.3", 1000, 32).await;
    let late = statuses.iter().filter(|(status, _)| *status == StatusCode::UNAUTHORIZED).count();
    let refused: Vec<_> = statuses.iter().filter(|(status, _)| *status == StatusCode::TOO_MANY_REQUESTS).collect();
    assert_eq!(late + refused.len(), 1000, "{statuses:?}");
    // 32 at once, at most MAX_HELD of them waiting: most are refused.
    assert!(refused.len() >= 1000 / 2 && late >= MAX_HELD as usize, "{late} compared, {} refused", refused.len());
    assert!(refused.iter().all(|(_, retry)| retry.as_deref().is_some_and(|s| s.parse::<u64>().unwrap() >= 1)));
    // Each compared guess cost its client a penalty: never faster than that.
    assert!(started.elapsed() >= PENALTY * late as u32, "{late} compared in {:?}", started.elapsed());
}
