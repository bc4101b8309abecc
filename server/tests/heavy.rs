//! Heavy requests (every route that starts work on a blocking thread:
//! reports, collapsed stacks, the flame graph, the tree, pprof, hot lists
//! beyond their lists, the joins with the inline table, the advice and
//! directives, a recompile request's check, a profile window's start) are
//! bounded by the jobs they start, not by the requests in flight: a
//! client that sends 200 of them over a real socket and disconnects at
//! once leaves at most `heavy_requests` (2) blocking jobs alive, counted by
//! `/api/status`'s `heavy_jobs`.
//!
//! Waiting is by polling with a deadline, never by a fixed sleep.

mod support;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use pcct_server::ServerConfig;
use serde_json::Value;
use support::socket::*;
use support::*;

/// Stacks of the sizable profile: 200k contexts, whose copy and collapsed
/// stacks take long enough for requests to pile up behind them.
const STACKS: usize = 20_000;

/// Every route that starts blocking work: (method, path, body).
const HEAVY: [(&str, &str, &str); 15] = [
    ("GET", "/api/collapsed", ""),
    ("GET", "/flamegraph.svg", ""),
    ("GET", "/api/reports/xtree?min_share=0", ""),
    ("GET", "/api/reports/xarc", ""),
    ("GET", "/api/reports/xprof", ""),
    ("GET", "/api/reports/sites", ""),
    ("GET", "/api/tree?min_share=0", ""),
    ("GET", "/api/pprof", ""),
    ("GET", "/api/hot-edges?limit=1000", ""),
    ("GET", "/api/hot-nodes?limit=1000&resource=wall", ""),
    ("GET", "/api/sites?limit=1000&resource=samples", ""),
    ("GET", "/api/jit/advice?limit=1000&min_share=0", ""),
    ("GET", "/api/jit/directives?min_share=0", ""),
    ("GET", "/debug/pprof/profile?seconds=1", ""),
    ("POST", "/api/jit/recompile", r#"{"classes": ["demo.Work"]}"#),
];

/// `/api/status`'s `heavy_jobs`, or `None` when the connection was refused
/// (closed at once while the server holds its 64 connections).
fn heavy_jobs(address: SocketAddr) -> Option<Value> {
    let request = "GET /api/status HTTP/1.1\r\nHost: localhost\r\n\r\n";
    let (status, body) = try_exchange(&mut connect(address), request, Duration::from_secs(5)).ok()?;
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    let status: Value = serde_json::from_str(&body).expect("JSON");
    Some(status["heavy_jobs"].clone())
}

/// Polls the heavy-job count until `done` holds, failing as soon as more
/// jobs than the limit were ever alive at once.
fn poll_heavy_jobs(address: SocketAddr, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let Some(jobs) = heavy_jobs(address) else {
            assert!(Instant::now() < deadline, "{what}: /api/status was never answered");
            continue;
        };
        assert!(jobs["peak"].as_u64() <= jobs["limit"].as_u64(), "more heavy jobs alive than allowed: {jobs}");
        if done(&jobs) {
            return jobs;
        }
        assert!(Instant::now() < deadline, "{what}: {jobs}");
    }
}

/// Asks for `path` on fresh connections until it is answered 200 (a 503
/// says every permit is taken, a closed connection that the server holds
/// its 64: asked again).
fn answered(address: SocketAddr, path: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");
        match try_exchange(&mut connect(address), &request, Duration::from_secs(30)) {
            Ok((status, _)) if status == "HTTP/1.1 200 OK" => return,
            Ok((status, body)) => assert!(status.starts_with("HTTP/1.1 503"), "{path}: {status} {body}"),
            Err(_) => {} // refused at the connection cap
        }
        assert!(Instant::now() < deadline, "{path} was never answered");
    }
}

#[test]
fn dropped_heavy_requests_leave_at_most_two_jobs_alive() {
    let fixture = Fixture::sizable(open_config(), STACKS);
    let server = Server::start_with(fixture, ServerConfig::default());
    let address = server.address();
    for index in 0..200 {
        let mut stream = TcpStream::connect(address).expect("connect");
        let (method, path, body) = HEAVY[index % HEAVY.len()];
        let typed = if method == "POST" { "Content-Type: application/json\r\n" } else { "" };
        let head =
            format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n{typed}Content-Length: {}\r\n\r\n", body.len());
        // The server may already have closed a connection beyond its cap.
        let _ = write!(stream, "{head}{body}");
        drop(stream);
    }
    poll_heavy_jobs(address, "no dropped request started a job", |jobs| jobs["started"].as_u64() >= Some(1));
    // Connections are accepted in order: once a request sent after the 200
    // is answered, every one of them has been read, and has started its job,
    // been dropped, or is waiting for a permit behind that request.
    answered(address, "/api/collapsed");
    let jobs = poll_heavy_jobs(address, "heavy jobs still alive", |jobs| jobs["live"] == 0);
    assert_eq!(jobs["limit"], 2, "{jobs}");
}
