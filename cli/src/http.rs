//! A small blocking HTTP/1.1 client for the agent's own server: plain HTTP
//! to the `host:port` the agent printed (usually loopback), one connection
//! per request (`Connection: close`), a timeout on every socket operation,
//! the answer read up to a bound, bodies framed by `Content-Length`,
//! chunked transfer coding or the end of the connection.
//!
//! Hand-written rather than a client crate: it talks to one known server,
//! needs no TLS, redirects, proxies or cookies, and keeps the tool's
//! dependencies to the parsers it already has.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Largest answer read.
const MAX_RESPONSE: u64 = 64 << 20;

/// The agent's server at `address`, with its bearer token if it needs one.
#[derive(Clone, Debug)]
pub struct Server {
    pub address: String,
    pub token: Option<String>,
    pub timeout: Duration,
}

/// A status, the header lines (lower-cased) and a body.
pub struct Answer {
    pub status: u16,
    head: String,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The value of the first header named `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == name).then(|| value.trim())
        })
    }
}

impl Server {
    pub fn new(address: &str, token: Option<String>) -> Server {
        Server { address: address.to_string(), token, timeout: Duration::from_secs(90) }
    }

    pub fn get(&self, path: &str) -> Result<Answer, String> {
        self.request("GET", path, None)
    }

    pub fn post_json(&self, path: &str, body: &str) -> Result<Answer, String> {
        self.request("POST", path, Some(body))
    }

    /// `GET path`, expecting 200 and JSON.
    pub fn get_json(&self, path: &str) -> Result<serde_json::Value, String> {
        let answer = self.get(path)?;
        if answer.status != 200 {
            return Err(format!("http://{}{path} answered {}: {}", self.address, answer.status, answer.text()));
        }
        serde_json::from_slice(&answer.body)
            .map_err(|e| format!("http://{}{path} did not answer JSON: {e}", self.address))
    }

    fn request(&self, method: &str, path: &str, body: Option<&str>) -> Result<Answer, String> {
        let failed = |e: &dyn std::fmt::Display| format!("{method} http://{}{path}: {e}", self.address);
        let target =
            self.address.to_socket_addrs().map_err(|e| failed(&e))?.next().ok_or_else(|| failed(&"no address"))?;
        let mut stream = TcpStream::connect_timeout(&target, self.timeout).map_err(|e| failed(&e))?;
        stream.set_read_timeout(Some(self.timeout)).map_err(|e| failed(&e))?;
        stream.set_write_timeout(Some(self.timeout)).map_err(|e| failed(&e))?;
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n", self.address);
        if let Some(token) = &self.token {
            head.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        if let Some(body) = body {
            head.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).map_err(|e| failed(&e))?;
        stream.write_all(body.unwrap_or("").as_bytes()).map_err(|e| failed(&e))?;
        let mut raw = Vec::new();
        stream.take(MAX_RESPONSE).read_to_end(&mut raw).map_err(|e| failed(&e))?;
        parse(&raw).map_err(|e| failed(&e))
    }
}

/// Splits a whole response into its status and (de-chunked) body.
fn parse(raw: &[u8]) -> Result<Answer, String> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or("no complete header in the answer")?;
    let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
    let status = head
        .lines()
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or("no status line in the answer")?;
    let rest = &raw[end + 4..];
    let header = |name: &str| head.lines().find_map(|line| line.strip_prefix(name).map(|v| v.trim().to_string()));
    let body = if header("transfer-encoding:").is_some_and(|v| v.contains("chunked")) {
        dechunk(rest)?
    } else if let Some(length) = header("content-length:").and_then(|v| v.parse::<usize>().ok()) {
        rest.get(..length).ok_or("the answer ended before its Content-Length")?.to_vec()
    } else {
        rest.to_vec()
    };
    Ok(Answer { status, head, body })
}

fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n").ok_or("a chunk size line is cut")?;
        let size_text = String::from_utf8_lossy(&rest[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| format!("a bad chunk size `{size_text}`"))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        body.extend_from_slice(rest.get(..size).ok_or("a chunk is cut")?);
        rest = rest.get(size + 2..).ok_or("a chunk is cut")?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_framed_by_length_chunks_or_the_end_parse() {
        let framed = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiXX").unwrap();
        assert_eq!(framed.header("content-length"), Some("2"));
        assert_eq!(framed.header("retry-after"), None);
        assert_eq!((framed.status, framed.body), (200, b"hi".to_vec()));
        let chunked =
            parse(b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
                .unwrap();
        assert_eq!((chunked.status, chunked.body), (404, b"abcde".to_vec()));
        let until_end = parse(b"HTTP/1.1 200 OK\r\n\r\nall of it").unwrap();
        assert_eq!(until_end.body, b"all of it".to_vec());
        assert!(parse(b"HTTP/1.1 200 OK\r\n").is_err());
        assert!(parse(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhi").is_err());
    }
}
