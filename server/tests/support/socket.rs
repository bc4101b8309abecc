//! The real server on a loopback socket for the tests that need one: a
//! [`Server`] that shuts down when dropped, and raw HTTP/1.1 exchanges
//! over a `TcpStream`, read with a deadline (never a fixed sleep).

use std::io::{self, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use pcct_server::{start, ServerConfig, ServerHandle};

use super::Fixture;

/// A running server that shuts down when dropped.
pub struct Server(Option<ServerHandle>);

impl Server {
    pub fn start(config: ServerConfig) -> Server {
        Server::start_with(Fixture::new(), config)
    }

    pub fn start_with(fixture: Fixture, config: ServerConfig) -> Server {
        Server(Some(start(fixture.state, config).expect("the server starts")))
    }

    pub fn address(&self) -> SocketAddr {
        self.0.as_ref().expect("running").address
    }

    pub fn shut_down(mut self, deadline: Duration) {
        self.0.take().expect("running").shut_down(deadline);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(handle) = self.0.take() {
            handle.shut_down(Duration::from_secs(2));
        }
    }
}

pub fn connect(address: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(Duration::from_millis(50))).expect("read timeout");
    stream
}

/// Sends a keep-alive GET and reads one whole response; returns its status line and body.
pub fn get(stream: &mut TcpStream, path: &str) -> (String, String) {
    exchange(stream, &format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n"))
}

/// Sends `request` (head and body, as written) and reads one whole
/// response within 5 s; returns its status line and body.
pub fn exchange(stream: &mut TcpStream, request: &str) -> (String, String) {
    exchange_within(stream, request, Duration::from_secs(5))
}

/// [`exchange`], waiting at most `wait` for the response.
pub fn exchange_within(stream: &mut TcpStream, request: &str, wait: Duration) -> (String, String) {
    let what = request.lines().next().unwrap_or("").to_string();
    try_exchange(stream, request, wait).unwrap_or_else(|error| panic!("{what}: {error}"))
}

/// [`exchange_within`], returning errors (a connection the server closed
/// or reset, no complete response within `wait`) instead of panicking.
pub fn try_exchange(stream: &mut TcpStream, request: &str, wait: Duration) -> io::Result<(String, String)> {
    stream.write_all(request.as_bytes())?;
    let deadline = Instant::now() + wait;
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        if Instant::now() >= deadline {
            return Err(io::Error::new(ErrorKind::TimedOut, "no complete response"));
        }
        if let Some(end) = find(&received, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&received[..end]).to_string();
            let length: usize = head
                .lines()
                .find_map(|line| {
                    line.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_string())
                })
                .expect("a content length")
                .parse()
                .expect("a number");
            if received.len() >= end + 4 + length {
                let body = String::from_utf8_lossy(&received[end + 4..end + 4 + length]).to_string();
                return Ok((head.lines().next().unwrap_or("").to_string(), body));
            }
        }
        match stream.read(&mut buffer) {
            Ok(0) => return Err(io::Error::new(ErrorKind::UnexpectedEof, "closed before the response was complete")),
            Ok(n) => received.extend_from_slice(&buffer[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => return Err(e),
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

/// Polls until the server closes `stream` (EOF or reset); returns how long it took,
/// or `None` if it is still open at `deadline`. Any bytes the server sends first
/// (an error response) are read and ignored.
pub fn closed_within(stream: &mut TcpStream, deadline: Duration) -> Option<Duration> {
    let start = Instant::now();
    let mut buffer = [0u8; 1024];
    while start.elapsed() < deadline {
        match stream.read(&mut buffer) {
            Ok(0) => return Some(start.elapsed()),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return Some(start.elapsed()),
        }
    }
    None
}
