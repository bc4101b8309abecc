//! A plain blocking HTTP/1.1 client over loopback for the tests of the
//! agent's server, and [`start_served`], which starts a JVM whose agent
//! serves on an ephemeral port and waits (with a deadline) for the address
//! the agent writes to its `addr_file`.
//!
//! The client opens one connection per request (`Connection: close`),
//! sends an optional bearer token, and reads the status line, the headers
//! and a body framed by `Content-Length`, by chunked transfer coding, or by
//! the end of the connection. Every socket operation has a timeout, and a
//! whole request has a deadline.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::fixture::Fixture;
use crate::jvm::{Jvm, RunningJvm};
use crate::poll::poll_until;

/// Longest header section accepted from a server.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Longest body accepted from a server.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// A response: status, headers (names lower-cased, in order) and body.
#[derive(Clone, Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy UTF-8).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body parsed as JSON; panics with the body when it is not JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}), status {}: {}", self.status, self.text()))
    }
}

/// A client for one server.
#[derive(Clone, Debug)]
pub struct Client {
    address: SocketAddr,
    token: Option<String>,
    timeout: Duration,
}

impl Client {
    /// A client of `address`, without a token, with a 10 s deadline per request.
    pub fn new(address: SocketAddr) -> Client {
        Client { address, token: None, timeout: Duration::from_secs(10) }
    }

    /// Sends `Authorization: Bearer <token>` with every request.
    pub fn with_token(mut self, token: &str) -> Client {
        self.token = Some(token.to_string());
        self
    }

    /// The deadline of one request (connect, send, receive).
    pub fn with_timeout(mut self, timeout: Duration) -> Client {
        self.timeout = timeout;
        self
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://host:port` of the server.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// `GET path` (path includes the query).
    pub fn get(&self, path: &str) -> io::Result<Response> {
        self.request("GET", path, None)
    }

    /// `POST path` with a JSON body (an empty body when `body` is empty).
    pub fn post(&self, path: &str, body: &str) -> io::Result<Response> {
        self.request("POST", path, Some(body.as_bytes()))
    }

    /// `GET path`, expecting 200 and JSON; panics otherwise.
    pub fn get_json(&self, path: &str) -> serde_json::Value {
        let response = self.get(path).unwrap_or_else(|e| panic!("GET {path} on {}: {e}", self.address));
        assert_eq!(response.status, 200, "GET {path}: {}", response.text());
        response.json()
    }

    /// `POST path` with `body`, expecting 200 and JSON; panics otherwise.
    pub fn post_json(&self, path: &str, body: &str) -> serde_json::Value {
        let response = self.post(path, body).unwrap_or_else(|e| panic!("POST {path} on {}: {e}", self.address));
        assert_eq!(response.status, 200, "POST {path} {body}: {}", response.text());
        response.json()
    }

    /// One request on a fresh connection.
    pub fn request(&self, method: &str, path: &str, body: Option<&[u8]>) -> io::Result<Response> {
        let deadline = Instant::now() + self.timeout;
        let mut stream = TcpStream::connect_timeout(&self.address, self.timeout)?;
        stream.set_nodelay(true)?;
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: pcct-tests\r\nAccept: */*\r\nConnection: close\r\n",
            self.address
        );
        if let Some(token) = &self.token {
            head.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        if let Some(body) = body {
            head.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let mut request = head.into_bytes();
        request.extend_from_slice(body.unwrap_or_default());
        set_timeouts(&stream, deadline)?;
        stream.write_all(&request)?;
        stream.flush()?;
        let mut reader = Reader { stream, buffer: Vec::new(), deadline };
        read_response(&mut reader, method == "HEAD")
    }
}

fn set_timeouts(stream: &TcpStream, deadline: Instant) -> io::Result<()> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::Error::new(io::ErrorKind::TimedOut, "request deadline passed"));
    }
    stream.set_read_timeout(Some(left))?;
    stream.set_write_timeout(Some(left))
}

/// Buffered reads from the connection, each bounded by the deadline.
struct Reader {
    stream: TcpStream,
    buffer: Vec<u8>,
    deadline: Instant,
}

impl Reader {
    /// Reads more bytes into the buffer; `Ok(false)` at end of stream.
    fn fill(&mut self) -> io::Result<bool> {
        set_timeouts(&self.stream, self.deadline)?;
        let mut chunk = [0u8; 16 * 1024];
        let read = self.stream.read(&mut chunk)?;
        self.buffer.extend_from_slice(&chunk[..read]);
        Ok(read > 0)
    }

    /// Takes bytes up to and including the first `delimiter`.
    fn take_through(&mut self, delimiter: &[u8], limit: usize) -> io::Result<Vec<u8>> {
        loop {
            if let Some(at) = self.buffer.windows(delimiter.len()).position(|w| w == delimiter) {
                return Ok(self.buffer.drain(..at + delimiter.len()).collect());
            }
            if self.buffer.len() > limit {
                return Err(invalid("a line or header section is too long"));
            }
            if !self.fill()? {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the connection closed mid-response"));
            }
        }
    }

    /// Takes exactly `count` bytes.
    fn take(&mut self, count: usize) -> io::Result<Vec<u8>> {
        while self.buffer.len() < count {
            if !self.fill()? {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the connection closed mid-body"));
            }
        }
        Ok(self.buffer.drain(..count).collect())
    }

    /// Takes everything until the server closes the connection.
    fn take_to_end(&mut self) -> io::Result<Vec<u8>> {
        while self.fill()? {
            if self.buffer.len() > MAX_BODY_BYTES {
                return Err(invalid("the body is too long"));
            }
        }
        Ok(std::mem::take(&mut self.buffer))
    }
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

fn read_response(reader: &mut Reader, head_only: bool) -> io::Result<Response> {
    let head = reader.take_through(b"\r\n\r\n", MAX_HEAD_BYTES)?;
    let head = String::from_utf8(head).map_err(|_| invalid("the header section is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(invalid(&format!("not an HTTP/1.x status line: {status_line:?}")));
    }
    let status: u16 = parts
        .next()
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| invalid(&format!("bad status: {status_line:?}")))?;
    let mut headers = Vec::new();
    for line in lines.filter(|line| !line.is_empty()) {
        let (name, value) = line.split_once(':').ok_or_else(|| invalid(&format!("bad header line: {line:?}")))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let mut response = Response { status, headers, body: Vec::new() };
    if head_only || status == 204 || status == 304 || (100..200).contains(&status) {
        return Ok(response);
    }
    let chunked = response
        .header("transfer-encoding")
        .is_some_and(|coding| coding.split(',').any(|c| c.trim().eq_ignore_ascii_case("chunked")));
    response.body = if chunked {
        read_chunked(reader)?
    } else if let Some(length) = response.header("content-length") {
        let length: usize = length.parse().map_err(|_| invalid("bad Content-Length"))?;
        if length > MAX_BODY_BYTES {
            return Err(invalid("the body is too long"));
        }
        reader.take(length)?
    } else {
        reader.take_to_end()?
    };
    Ok(response)
}

/// Decodes a chunked body (RFC 9112 section 7.1), ignoring chunk
/// extensions and trailers.
fn read_chunked(reader: &mut Reader) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line = reader.take_through(b"\r\n", 4096)?;
        let line = String::from_utf8_lossy(&line[..line.len() - 2]).into_owned();
        let size = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16).map_err(|_| invalid(&format!("bad chunk size: {line:?}")))?;
        if size == 0 {
            // Trailers, up to an empty line.
            loop {
                let trailer = reader.take_through(b"\r\n", MAX_HEAD_BYTES)?;
                if trailer == b"\r\n" {
                    return Ok(body);
                }
            }
        }
        if body.len() + size > MAX_BODY_BYTES {
            return Err(invalid("the body is too long"));
        }
        body.extend(reader.take(size)?);
        if reader.take(2)? != b"\r\n" {
            return Err(invalid("a chunk does not end with CRLF"));
        }
    }
}

/// A JVM whose agent serves HTTP, and a client of it.
pub struct Served {
    pub jvm: RunningJvm,
    pub client: Client,
    /// What the agent wrote to its addr file (`host:port`).
    pub addr_text: String,
}

impl Served {
    /// The server's address.
    pub fn address(&self) -> SocketAddr {
        self.client.address()
    }
}

/// Reads `host:port` from the agent's addr file once it exists.
pub fn read_addr_file(path: &Path) -> Option<(String, SocketAddr)> {
    let text = std::fs::read_to_string(path).ok()?;
    let text = text.trim().to_string();
    let address = text.parse().ok()?;
    Some((text, address))
}

/// Starts `jvm` with the agent options `<options>,port=0,addr_file=<fixture>/addr`
/// (replacing any agent options given to `jvm` before) and waits up to
/// 60 s for the address the agent writes; panics with the JVM's output if
/// it does not come or the JVM exits first. Each call uses the fixture's
/// `addr` file: one served JVM per fixture at a time.
pub fn start_served(jvm: Jvm, fixture: &Fixture, options: &str) -> Served {
    let addr_file = fixture.path("addr");
    let _ = std::fs::remove_file(&addr_file);
    let separator = if options.is_empty() { "" } else { "," };
    let mut running = jvm.agent(format!("{options}{separator}port=0,addr_file={}", addr_file.display())).spawn();
    let deadline = Instant::now() + Duration::from_secs(60);
    let found = poll_until(deadline, || {
        if let Some(found) = read_addr_file(&addr_file) {
            return Some(Some(found));
        }
        (!running.is_running()).then_some(None)
    });
    let Some(Some((addr_text, address))) = found else {
        let why = if found.is_some() { "the JVM exited" } else { "60 s passed" };
        panic!(
            "no address in {} ({why})\n--- stdout ---\n{}\n--- stderr ---\n{}",
            addr_file.display(),
            running.stdout(),
            running.stderr()
        );
    };
    Served { jvm: running, client: Client::new(address), addr_text }
}
