//! A loopback stand-in for Pyroscope's `/ingest`, for the push tests: a
//! real HTTP/1.1 server on 127.0.0.1 that records every POST (its query
//! and the multipart field `profile`) and refuses the first `refuse` of
//! them for now (503 and 429, a rate limit, in turn), then answers 200. Bounded: request heads of at most 64 KiB,
//! bodies of at most 64 MiB, every read with a timeout.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request received.
#[derive(Clone, Debug)]
pub struct Received {
    /// The request target's query (after `?`).
    pub query: String,
    /// The `profile` field's bytes.
    pub profile: Vec<u8>,
    /// Whether it was answered 200.
    pub accepted: bool,
}

pub struct Receiver {
    pub address: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    stop: Arc<AtomicBool>,
}

impl Receiver {
    /// Listens on 127.0.0.1, refusing the first `refuse` requests (503, 429, 503, ...).
    pub fn start(refuse: usize) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        listener.set_nonblocking(true).expect("non-blocking");
        let address = listener.local_addr().expect("an address");
        let received = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (sink, stopped) = (Arc::clone(&received), Arc::clone(&stop));
        let count = Arc::new(AtomicUsize::new(0));
        std::thread::spawn(move || {
            while !stopped.load(Ordering::Acquire) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let index = count.fetch_add(1, Ordering::AcqRel);
                        let status = match index {
                            _ if index >= refuse => "200 OK",
                            _ if index.is_multiple_of(2) => "503 Service Unavailable",
                            _ => "429 Too Many Requests",
                        };
                        if let Some(request) = serve(stream, status) {
                            sink.lock().unwrap().push(request);
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Receiver { address, received, stop }
    }

    pub fn url(&self) -> String {
        format!("http://{}/ingest", self.address)
    }

    /// Every request received so far.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// Reads one request, answers it, and returns what it carried.
fn serve(stream: TcpStream, status: &str) -> Option<Received> {
    stream.set_nonblocking(false).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut head = Vec::new();
    let (mut target, mut length, mut boundary) = (String::new(), 0usize, String::new());
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 || head.len() > 64 * 1024 {
            return None;
        }
        head.push(line.clone());
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if head.len() == 1 {
            target = line.split(' ').nth(1)?.to_string();
        } else if let Some((name, value)) = line.split_once(':') {
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().ok()?,
                "content-type" => boundary = value.split("boundary=").nth(1)?.trim().to_string(),
                _ => {}
            }
        }
    }
    if length > 64 << 20 {
        return None;
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    let accept = status.starts_with("200");
    let mut stream = stream;
    let _ = write!(stream, "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    Some(Received {
        query: target.split_once('?').map_or(String::new(), |(_, query)| query.to_string()),
        profile: profile_field(&body, &boundary)?,
        accepted: accept,
    })
}

/// The bytes of the multipart field named `profile`.
fn profile_field(body: &[u8], boundary: &str) -> Option<Vec<u8>> {
    let delimiter = format!("\r\n--{boundary}");
    let start = find(body, b"name=\"profile\"")?;
    let data = start + find(&body[start..], b"\r\n\r\n")? + 4;
    let end = data + find(&body[data..], delimiter.as_bytes())?;
    Some(body[data..end].to_vec())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}
