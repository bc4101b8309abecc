//! The real server on a socket: loopback by default, slow clients are cut
//! off by the header timeout, connections beyond the cap are closed at once,
//! and shutting down keeps its deadline with connections open.
//!
//! Waiting is by polling with a deadline, never by a fixed sleep.

mod support;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use pcct_server::{start, ServerConfig};
use support::socket::*;
use support::*;

#[test]
fn binds_loopback_by_default_and_answers_over_http() {
    assert!(ServerConfig::default().bind.is_loopback());
    let server = Server::start(ServerConfig::default());
    assert!(server.address().ip().is_loopback(), "{}", server.address());
    assert_ne!(server.address().port(), 0, "port 0 picks a free port");
    let mut stream = connect(server.address());
    let (status, body) = get(&mut stream, "/healthz");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(body, "ok\n");
    let (status, body) = get(&mut stream, "/api/hot-methods?limit=1");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(body.contains(HASH), "{body}");
    let (status, body) = get(&mut stream, "/api/hot-methods?limit=0");
    assert_eq!(status, "HTTP/1.1 400 Bad Request");
    assert!(body.contains("\"parameter\":\"limit\""), "{body}");
}

/// A file removed when the test ends.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn writes_the_chosen_address_to_the_address_file() {
    let file = TempFile(std::env::temp_dir().join(format!("pcct-server-test-{}.addr", std::process::id())));
    let server = Server::start(ServerConfig { addr_file: Some(file.0.clone()), ..ServerConfig::default() });
    let written = std::fs::read_to_string(&file.0).expect("the address file");
    assert_eq!(written.trim(), server.address().to_string());
}

#[test]
fn the_address_file_is_new_owner_only_and_never_written_through_a_symlink() {
    use std::os::unix::fs::PermissionsExt;
    let directory = tempfile::tempdir().expect("a directory");
    let victim = directory.path().join("victim");
    std::fs::write(&victim, "keep me").expect("victim");
    let path = directory.path().join("addr");
    std::os::unix::fs::symlink(&victim, &path).expect("symlink");
    let server = Server::start(ServerConfig { addr_file: Some(path.clone()), ..ServerConfig::default() });
    assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "keep me", "the symlink's target is untouched");
    let metadata = std::fs::symlink_metadata(&path).expect("the address file");
    assert!(metadata.file_type().is_file(), "the symlink was replaced by a file");
    assert_eq!(metadata.permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::read_to_string(&path).expect("read").trim(), server.address().to_string());
    let names: Vec<_> =
        std::fs::read_dir(directory.path()).expect("list").map(|e| e.expect("entry").file_name()).collect();
    assert_eq!(names.len(), 2, "no temporary is left: {names:?}");
}

#[test]
fn a_taken_port_is_a_bind_error() {
    let server = Server::start(ServerConfig::default());
    let error = start(Fixture::new().state, ServerConfig { port: server.address().port(), ..ServerConfig::default() })
        .err()
        .expect("the port is taken");
    assert!(matches!(error, pcct_server::ServerError::Bind { .. }), "{error}");
}

fn short_timeout() -> ServerConfig {
    ServerConfig { header_timeout: Duration::from_millis(300), ..ServerConfig::default() }
}

#[test]
fn a_client_stalling_inside_its_headers_is_cut_off() {
    let server = Server::start(short_timeout());
    let mut stream = connect(server.address());
    stream.write_all(b"GET /api/status HTTP/1.1\r\nHost: localhost\r\nX-Slow: ").expect("send");
    let took = closed_within(&mut stream, Duration::from_secs(5)).expect("the server kept a stalled connection open");
    assert!(took < Duration::from_secs(2), "closed only after {took:?} (header timeout 300 ms)");
}

#[test]
fn a_client_trickling_its_headers_is_cut_off() {
    let server = Server::start(short_timeout());
    let mut stream = connect(server.address());
    stream.write_all(b"GET /api/status HTTP/1.1\r\n").expect("send");
    let start = Instant::now();
    let mut closed = false;
    // One header line every 50 ms: each byte arrives in time, the headers never end.
    for line in 0..100 {
        if write!(stream, "X-Line-{line}: a\r\n").is_err()
            || closed_within(&mut stream, Duration::from_millis(50)).is_some()
        {
            closed = true;
            break;
        }
    }
    assert!(closed, "a trickling client held the connection for {:?}", start.elapsed());
    assert!(start.elapsed() < Duration::from_secs(2), "closed only after {:?}", start.elapsed());
}

#[test]
fn a_client_that_never_sends_is_cut_off() {
    let server = Server::start(short_timeout());
    let mut stream = connect(server.address());
    let took = closed_within(&mut stream, Duration::from_secs(5)).expect("the server kept a silent connection open");
    assert!(took < Duration::from_secs(2), "closed only after {took:?} (header timeout 300 ms)");
}

#[test]
fn an_idle_keep_alive_connection_is_cut_off() {
    let server = Server::start(short_timeout());
    let mut stream = connect(server.address());
    let (status, _) = get(&mut stream, "/healthz");
    assert_eq!(status, "HTTP/1.1 200 OK");
    let took = closed_within(&mut stream, Duration::from_secs(5)).expect("an idle connection stayed open");
    assert!(took < Duration::from_secs(2), "closed only after {took:?} (header timeout 300 ms)");
}

#[test]
fn connections_beyond_the_cap_are_closed_at_once() {
    let server = Server::start(ServerConfig { max_connections: 4, ..ServerConfig::default() });
    let mut held: Vec<TcpStream> = (0..4).map(|_| connect(server.address())).collect();
    for stream in &mut held {
        assert_eq!(get(stream, "/healthz").0, "HTTP/1.1 200 OK");
    }
    for _ in 0..3 {
        let mut extra = connect(server.address());
        // Whether or not the server reads it, the request must not be answered.
        let _ = extra.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n");
        let took = closed_within(&mut extra, Duration::from_secs(2)).expect("a connection beyond the cap stayed open");
        assert!(took < Duration::from_secs(1), "closed only after {took:?}");
    }
    for stream in &mut held {
        assert_eq!(get(stream, "/api/status").0, "HTTP/1.1 200 OK", "a held connection stopped working");
    }
    // Closing one frees its place.
    drop(held.pop());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut next = connect(server.address());
        if next.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n").is_ok() {
            let mut buffer = [0u8; 64];
            let wait = Instant::now() + Duration::from_millis(500);
            let answered = loop {
                match next.read(&mut buffer) {
                    Ok(n) if n > 0 => break buffer.starts_with(b"HTTP/1.1 200"),
                    Ok(_) => break false,
                    Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                        if Instant::now() > wait {
                            break false;
                        }
                    }
                    Err(_) => break false,
                }
            };
            if answered {
                break;
            }
        }
        assert!(Instant::now() < deadline, "the freed place was never reused");
    }
}

#[test]
fn shutting_down_keeps_its_deadline_with_connections_open() {
    let server = Server::start(ServerConfig::default());
    let address = server.address();
    let mut idle = connect(address);
    assert_eq!(get(&mut idle, "/healthz").0, "HTTP/1.1 200 OK");
    let mut stalled = connect(address);
    stalled.write_all(b"GET /api/status HTTP/1.1\r\nHost: local").expect("send");
    let deadline = Duration::from_millis(1500);
    let start = Instant::now();
    server.shut_down(deadline);
    let took = start.elapsed();
    assert!(took < deadline + Duration::from_millis(250), "shut_down took {took:?}");
    assert!(closed_within(&mut idle, Duration::from_secs(3)).is_some(), "the idle connection stayed open");
    assert!(TcpStream::connect(address).is_err(), "still accepting after shutting down");
}
