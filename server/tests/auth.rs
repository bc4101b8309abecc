//! Bearer-token authentication: with a token set every route but /healthz
//! refuses requests without it (401, JSON, WWW-Authenticate); without a
//! token no header is needed.

mod support;

use axum::body::Body;
use axum::http::{header, StatusCode};
use support::*;

async fn call(fixture: &Fixture, verb: &str, path: &str, body: &str, authorization: Option<&str>) -> Answer {
    let headers: Vec<(&str, &str)> = authorization.map(|value| ("authorization", value)).into_iter().collect();
    fixture.send(method(verb), path, &headers, Body::from(body.to_string())).await
}

fn assert_refused(answer: &Answer, what: &str) {
    assert_eq!(answer.error(StatusCode::UNAUTHORIZED), None, "{what}");
    let challenge = answer.headers.get(header::WWW_AUTHENTICATE).unwrap_or_else(|| panic!("{what}: no challenge"));
    assert!(challenge.to_str().unwrap().starts_with("Bearer"), "{what}: {challenge:?}");
}

#[tokio::test]
async fn with_a_token_every_route_but_healthz_refuses_bad_credentials() {
    let fixture = Fixture::with_token();
    let wrong = [
        None,
        Some("Bearer wrong-token!"),
        Some("Bearer s3cret-toke"),
        Some("Bearer s3cret-token2"),
        Some("Bearer "),
        Some("Bearer"),
        Some("Bearer  s3cret-token"),
        Some("s3cret-token"),
        Some("Basic czNjcmV0LXRva2VuOg=="),
        Some("Basic s3cret-token"),
        Some("Token s3cret-token"),
    ];
    for (verb, path, body) in ROUTES.iter().chain(&[("GET", "/no-such-route", "")]) {
        if *path == "/healthz" {
            continue;
        }
        for authorization in wrong {
            let answer = call(&fixture, verb, path, body, authorization).await;
            assert_refused(&answer, &format!("{verb} {path} with {authorization:?}"));
        }
        // Refused before the parameters are looked at.
        let answer = call(&fixture, verb, &format!("{path}?limit=0"), body, None).await;
        assert_refused(&answer, &format!("{verb} {path}?limit=0"));
    }
    assert_eq!(fixture.shared.profile.lock().tree.total().samples, TOTAL_SAMPLES, "a refused purge purged");
    assert!(fixture.shared.control.is_running());
}

#[tokio::test]
async fn with_a_token_the_right_bearer_header_is_accepted_everywhere() {
    let fixture = Fixture::with_token();
    let bearer = format!("Bearer {TOKEN}");
    for (verb, path, body) in ROUTES {
        let answer = call(&fixture, verb, path, body, Some(&bearer)).await;
        assert_eq!(answer.status, StatusCode::OK, "{verb} {path}: {}", String::from_utf8_lossy(&answer.body));
    }
    let missing = call(&fixture, "GET", "/no-such-route", "", Some(&bearer)).await;
    assert_eq!(missing.error(StatusCode::NOT_FOUND), None);
    let bad = call(&fixture, "GET", "/api/hot-methods?limit=0", "", Some(&bearer)).await;
    bad.bad_parameter("limit");
}

#[tokio::test]
async fn healthz_needs_no_token() {
    let fixture = Fixture::with_token();
    for authorization in [None, Some("Bearer wrong"), Some("Basic abc")] {
        let answer = call(&fixture, "GET", "/healthz", "", authorization).await;
        assert_eq!(answer.status, StatusCode::OK, "{authorization:?}");
        assert_eq!(answer.text(), "ok\n");
    }
}

#[tokio::test]
async fn without_a_token_no_header_is_needed() {
    let fixture = Fixture::new();
    for (verb, path, body) in ROUTES {
        for authorization in [None, Some("Bearer anything"), Some("Basic abc")] {
            let answer = call(&fixture, verb, path, body, authorization).await;
            assert_eq!(answer.status, StatusCode::OK, "{verb} {path} with {authorization:?}");
        }
    }
}

#[tokio::test]
async fn a_token_in_the_query_string_is_not_a_credential() {
    let fixture = Fixture::with_token();
    let answer = call(&fixture, "GET", &format!("/api/status?token={TOKEN}"), "", None).await;
    assert_refused(&answer, "token in the query");
}

#[test]
fn the_comparison_is_exact() {
    use pcct_server::auth::constant_time_eq;
    assert!(constant_time_eq(TOKEN.as_bytes(), TOKEN.as_bytes()));
    assert!(!constant_time_eq(TOKEN.as_bytes(), &TOKEN.as_bytes()[1..]));
    let mut flipped = TOKEN.as_bytes().to_vec();
    for index in 0..flipped.len() {
        flipped[index] ^= 1;
        assert!(!constant_time_eq(TOKEN.as_bytes(), &flipped), "byte {index}");
        flipped[index] ^= 1;
    }
    assert!(constant_time_eq(b"", b""));
}
