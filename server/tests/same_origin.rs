//! Without a token, what a web page could make a browser send is refused
//! with a JSON 403: any request naming another host than a loopback
//! address or `localhost` (DNS rebinding), unless `allow_hosts` lists it,
//! and POSTs from another origin or without a JSON content type (CSRF).
//! Refused requests change nothing. With a token none of it applies.

mod support;

use axum::body::Body;
use axum::http::StatusCode;
use pcct_server::{AppConfig, ServerConfig};
use support::socket::*;
use support::*;

fn assert_forbidden(answer: &Answer, what: &str) {
    assert_eq!(answer.error(StatusCode::FORBIDDEN), None, "{what}");
}

/// Sampling still runs and the profile still holds every sample.
fn assert_unchanged(fixture: &Fixture) {
    assert_eq!(fixture.shared.profile.lock().tree.total().samples, TOTAL_SAMPLES, "purged");
    assert!(fixture.shared.control.is_running(), "paused");
}

/// Every route, each asked as its clients ask, with `headers` added.
async fn every_route(fixture: &Fixture, headers: &[(&str, &str)]) -> Vec<(String, Answer)> {
    let mut answers = Vec::new();
    for (verb, path, body) in ROUTES {
        let body = if *path == "/api/sampling" { r#"{"running": true}"# } else { body };
        let answer = fixture.send(method(verb), path, headers, Body::from(body.to_string())).await;
        answers.push((format!("{verb} {path}"), answer));
    }
    answers
}

#[tokio::test]
async fn a_host_other_than_loopback_is_refused_on_every_route_but_healthz() {
    let fixture = Fixture::new();
    for host in ["evil.example:8080", "evil.example", "127.0.0.1.evil.example:80", "10.1.2.3:8080", "[::2]:80", ""] {
        for (route, answer) in every_route(&fixture, &[("host", host)]).await {
            if route == "GET /healthz" {
                assert_eq!(answer.status, StatusCode::OK, "{route} with Host {host:?}");
            } else {
                assert_forbidden(&answer, &format!("{route} with Host {host:?}"));
            }
        }
        assert_unchanged(&fixture);
    }
    // An absolute URI names its host too.
    let absolute = fixture.get("http://evil.example:8080/api/status").await;
    assert_forbidden(&absolute, "an absolute URI");
    assert!(absolute.json()["error"].as_str().unwrap().contains("allow_hosts"), "{}", absolute.text());
}

#[tokio::test]
async fn loopback_hosts_localhost_and_no_host_are_answered() {
    let fixture = Fixture::new();
    for host in [None, Some("127.0.0.1:8080"), Some("localhost:8080"), Some("localhost"), Some("[::1]:8080")] {
        let headers: Vec<(&str, &str)> = host.map(|host| ("host", host)).into_iter().collect();
        for (route, answer) in every_route(&fixture, &headers).await {
            assert_eq!(answer.status, StatusCode::OK, "{route} with Host {host:?}: {}", answer.text());
        }
    }
}

#[tokio::test]
async fn allow_hosts_lets_the_names_it_lists_through() {
    let allowed = vec!["box.example".to_string(), "10.1.2.3".to_string()];
    let fixture = Fixture::with_config(AppConfig { allowed_hosts: allowed, ..AppConfig::default() });
    for host in ["box.example:8080", "BOX.EXAMPLE", "10.1.2.3:80", "127.0.0.1:80"] {
        let answer = fixture.send(method("GET"), "/api/status", &[("host", host)], Body::empty()).await;
        assert_eq!(answer.status, StatusCode::OK, "Host {host}");
    }
    let other = fixture.send(method("GET"), "/api/status", &[("host", "other.example")], Body::empty()).await;
    assert_forbidden(&other, "a name allow_hosts does not list");
}

#[tokio::test]
async fn a_post_from_another_origin_is_refused_and_changes_nothing() {
    let fixture = Fixture::new();
    for origin in ["http://evil.example", "http://127.0.0.1:8081", "null", "https://localhost:8080.evil.example"] {
        let headers = [("host", "127.0.0.1:8080"), ("origin", origin)];
        for path in ["/api/purge", "/api/sampling", "/api/jit/recompile"] {
            let body = Body::from(r#"{"running": false}"#);
            let answer = fixture.send(method("POST"), path, &headers, body).await;
            assert_forbidden(&answer, &format!("POST {path} from {origin}"));
        }
        assert_unchanged(&fixture);
    }
    // Its own page's origin is welcome.
    for (host, origin) in [("127.0.0.1:8080", "http://127.0.0.1:8080"), ("localhost:9", "http://LOCALHOST:9")] {
        let headers = [("host", host), ("origin", origin)];
        let answer = fixture.send(method("POST"), "/api/sampling", &headers, Body::from("{}")).await;
        assert_eq!(answer.status, StatusCode::OK, "from {origin}: {}", answer.text());
    }
    // A GET from another origin is answered: the browser keeps the answer from the page.
    let get = fixture.send(method("GET"), "/api/status", &[("origin", "http://evil.example")], Body::empty()).await;
    assert_eq!(get.status, StatusCode::OK);
}

#[tokio::test]
async fn a_post_without_a_json_content_type_is_refused_and_changes_nothing() {
    let fixture = Fixture::new();
    let types = [None, Some("text/plain"), Some("application/x-www-form-urlencoded"), Some("multipart/form-data")];
    for content_type in types {
        let headers: Vec<(&str, &str)> = content_type.map(|value| ("content-type", value)).into_iter().collect();
        for path in ["/api/purge", "/api/sampling", "/api/jit/recompile"] {
            // The body is valid JSON: only its declared type is wrong.
            let answer = fixture.send_raw(method("POST"), path, &headers, Body::from(r#"{"running": false}"#)).await;
            assert_forbidden(&answer, &format!("POST {path} as {content_type:?}"));
            assert!(answer.json()["error"].as_str().unwrap().contains("application/json"), "{}", answer.text());
        }
        assert_unchanged(&fixture);
    }
    let typed = [("content-type", "application/json; charset=utf-8")];
    let answer = fixture.send_raw(method("POST"), "/api/purge", &typed, Body::empty()).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
}

#[tokio::test]
async fn with_a_token_none_of_these_checks_apply() {
    let fixture = Fixture::with_token();
    let bearer = format!("Bearer {TOKEN}");
    let headers = [
        ("authorization", bearer.as_str()),
        ("host", "box.example:8080"),
        ("origin", "http://elsewhere.example"),
        ("content-type", "text/plain"),
    ];
    let answer = fixture.send_raw(method("POST"), "/api/sampling", &headers, Body::from(r#"{"running": false}"#)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert!(!fixture.shared.control.is_running());
}

/// The same over a real socket, as curl and a browser send it.
#[test]
fn over_http_loopback_clients_are_answered_and_web_pages_refused() {
    let server = Server::start(ServerConfig::default());
    let port = server.address().port();
    let ask = |head: &str, body: &str| {
        let request = format!("{head}\r\nContent-Length: {}\r\n\r\n{body}", body.len());
        let (status, body) = exchange(&mut connect(server.address()), &request);
        (status.split(' ').nth(1).unwrap_or("").to_string(), body)
    };
    for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
        let (status, body) = ask(&format!("GET /api/status HTTP/1.1\r\nHost: {host}"), "");
        assert_eq!(status, "200", "Host {host}: {body}");
    }
    let (status, body) = ask(&format!("GET /api/status HTTP/1.1\r\nHost: rebound.example:{port}"), "");
    assert_eq!(status, "403", "{body}");
    assert!(body.starts_with("{\"error\":"), "{body}");
    let host = format!("Host: 127.0.0.1:{port}");
    let (status, body) = ask(&format!("POST /api/purge HTTP/1.1\r\n{host}\r\nOrigin: http://evil.example"), "");
    assert_eq!(status, "403", "{body}");
    let (status, body) = ask(&format!("POST /api/sampling HTTP/1.1\r\n{host}\r\nContent-Type: text/plain"), "{}");
    assert_eq!(status, "403", "{body}");
    let own = format!("POST /api/sampling HTTP/1.1\r\n{host}\r\nOrigin: http://127.0.0.1:{port}");
    let (status, body) = ask(&format!("{own}\r\nContent-Type: application/json"), r#"{"running": true}"#);
    assert_eq!(status, "200", "{body}");
}
