//! Bearer-token authentication: with a token set every route but /healthz
//! refuses requests without it (401, JSON, WWW-Authenticate), the long
//! ones (a profile window) and /logout included; without a token no header
//! is needed. The roles, the throttle and the cookie's port: `roles.rs`.

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

// The clock is paused: a wrong token's wait passes at once.
#[tokio::test(start_paused = true)]
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
    let more = [("GET", "/no-such-route", ""), ("GET", "/debug/pprof/profile?seconds=1", ""), ("POST", "/logout", "")];
    for (verb, path, body) in ROUTES.iter().chain(&more) {
        if *path == "/healthz" {
            continue;
        }
        for authorization in wrong {
            let answer = call(&fixture, verb, path, body, authorization).await;
            assert_refused(&answer, &format!("{verb} {path} with {authorization:?}"));
        }
        // Refused before the parameters are looked at.
        let separator = if path.contains('?') { '&' } else { '?' };
        let answer = call(&fixture, verb, &format!("{path}{separator}limit=0"), body, None).await;
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
async fn healthz_needs_no_token_and_names_pcct_and_its_process() {
    let fixture = Fixture::with_token();
    for authorization in [None, Some("Bearer wrong"), Some("Basic abc")] {
        let answer = call(&fixture, "GET", "/healthz", "", authorization).await;
        assert_eq!(answer.status, StatusCode::OK, "{authorization:?}");
        assert_eq!(answer.text(), "ok\n");
        let identity = answer.headers["x-pcct-agent"].to_str().unwrap().to_string();
        assert!(identity.starts_with("pcct/") && identity.ends_with(&format!(" pid={}", std::process::id())));
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
    use pcct_server::secret::same_secret;
    assert!(same_secret(TOKEN.as_bytes(), TOKEN.as_bytes()));
    assert!(!same_secret(TOKEN.as_bytes(), &TOKEN.as_bytes()[1..]));
    let mut flipped = TOKEN.as_bytes().to_vec();
    for index in 0..flipped.len() {
        flipped[index] ^= 1;
        assert!(!same_secret(TOKEN.as_bytes(), &flipped), "byte {index}");
        flipped[index] ^= 1;
    }
    assert!(same_secret(b"", b""));
}

/// The session cookie a successful login sets (`name=value`).
async fn log_in(fixture: &Fixture) -> String {
    let form = format!("token={TOKEN}");
    let headers = [("content-type", "application/x-www-form-urlencoded"), ("origin", "http://127.0.0.1:1")];
    let headers = [headers[0], headers[1], ("host", "127.0.0.1:1")];
    let answer = fixture.send_raw(method("POST"), "/login", &headers, Body::from(form)).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", String::from_utf8_lossy(&answer.body));
    assert_eq!(answer.headers[header::LOCATION], "/");
    let cookie = answer.headers[header::SET_COOKIE].to_str().unwrap().to_string();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    assert!(!cookie.contains(TOKEN), "the cookie carries the token: {cookie}");
    cookie.split(';').next().unwrap().to_string()
}

#[tokio::test]
async fn a_browser_logs_in_with_the_token_and_then_uses_a_session_cookie() {
    let fixture = Fixture::with_token();
    // A browser asking for the page without credentials gets the login form.
    let page = fixture.send_raw(method("GET"), "/", &[("accept", "text/html,*/*")], Body::empty()).await;
    assert_eq!(page.status, StatusCode::UNAUTHORIZED);
    assert!(page.content_type().starts_with("text/html") && page.text().contains("action=\"/login\""));
    let form = fixture.get("/login").await;
    assert_eq!(form.status, StatusCode::OK);
    assert!(form.text().contains("type=\"password\""));
    // A wrong token: the form again, 401, after a wait.
    let started = std::time::Instant::now();
    let wrong = fixture
        .send_raw(
            method("POST"),
            "/login",
            &[("content-type", "application/x-www-form-urlencoded")],
            Body::from("token=nope"),
        )
        .await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(wrong.text().contains("not the token") && wrong.headers.get(header::SET_COOKIE).is_none());
    assert!(started.elapsed() >= pcct_server::throttle::PENALTY);
    // From another origin, even the right token is refused.
    let foreign = [
        ("content-type", "application/x-www-form-urlencoded"),
        ("origin", "http://evil.example"),
        ("host", "127.0.0.1:1"),
    ];
    let answer = fixture.send_raw(method("POST"), "/login", &foreign, Body::from(format!("token={TOKEN}"))).await;
    assert_eq!(answer.error(StatusCode::FORBIDDEN), None);

    let cookie = log_in(&fixture).await;
    let with_cookie = |extra: &[(&'static str, &'static str)]| {
        let mut headers: Vec<(&str, &str)> = vec![("cookie", cookie.as_str())];
        headers.extend_from_slice(extra);
        headers
    };
    for path in ["/", "/api/status", "/flamegraph.svg", "/api/pprof"] {
        let answer = fixture.send_raw(method("GET"), path, &with_cookie(&[]), Body::empty()).await;
        assert_eq!(answer.status, StatusCode::OK, "GET {path} with the session cookie");
    }
    // Changes need the cross-site checks: JSON, and no other origin.
    const JSON: [(&str, &str); 1] = [("content-type", "application/json")];
    let json = JSON;
    let answer = fixture.send_raw(method("POST"), "/api/sampling", &with_cookie(&json), Body::from("{}")).await;
    assert_eq!(answer.status, StatusCode::OK);
    let form_typed = [("content-type", "application/x-www-form-urlencoded")];
    let answer = fixture.send_raw(method("POST"), "/api/purge", &with_cookie(&form_typed), Body::empty()).await;
    assert_eq!(answer.error(StatusCode::FORBIDDEN), None);
    let other = [("content-type", "application/json"), ("origin", "http://127.0.0.1:9999"), ("host", "127.0.0.1:1")];
    let answer = fixture.send_raw(method("POST"), "/api/purge", &with_cookie(&other), Body::empty()).await;
    assert_eq!(answer.error(StatusCode::FORBIDDEN), None);
    assert_eq!(fixture.shared.profile.lock().tree.total().samples, TOTAL_SAMPLES, "a refused purge purged");
    // A made-up session is no session; logging out ends the real one.
    let answer =
        fixture.send_raw(method("GET"), "/api/status", &[("cookie", "pcct_session=00ff")], Body::empty()).await;
    assert_refused(&answer, "a made-up session");
    let out = fixture.send_raw(method("POST"), "/logout", &with_cookie(&json), Body::empty()).await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    assert!(out.headers[header::SET_COOKIE].to_str().unwrap().contains("Max-Age=0"));
    let answer = fixture.send_raw(method("GET"), "/api/status", &with_cookie(&[]), Body::empty()).await;
    assert_refused(&answer, "a session after logout");
}

#[tokio::test]
async fn without_a_token_the_login_form_leads_to_the_page() {
    let fixture = Fixture::new();
    let answer = fixture.get("/login").await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    assert_eq!(answer.headers[header::LOCATION], "/");
}
