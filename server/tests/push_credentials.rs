//! The push to an IPv6 literal with credentials in its URL, over a real
//! socket on `[::1]`: the window arrives, with the credentials as HTTP
//! Basic authentication and a `Host` without them, and the status shows
//! the URL redacted. Waiting is by polling with a deadline.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pcct_sampler::{SamplerConfig, Shared};
use pcct_server::push::{self, PushConfig};

/// Answers every request 200 and keeps each request's header lines.
fn receive(listener: TcpListener, heads: Arc<Mutex<Vec<Vec<String>>>>) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { return };
        let mut reader = BufReader::new(stream.try_clone().expect("a second handle"));
        let mut head = Vec::new();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                break;
            }
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap_or(0);
            }
            head.push(line.trim_end().to_string());
        }
        let mut body = vec![0u8; length];
        let _ = reader.read_exact(&mut body);
        heads.lock().unwrap().push(head);
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    }
}

#[test]
fn a_push_to_an_ipv6_literal_sends_its_credentials_as_basic_authentication_and_shows_none() {
    let Ok(listener) = TcpListener::bind("[::1]:0") else {
        eprintln!("no IPv6 loopback here: skipped");
        return;
    };
    let port = listener.local_addr().unwrap().port();
    let heads = Arc::new(Mutex::new(Vec::new()));
    std::thread::spawn({
        let heads = Arc::clone(&heads);
        move || receive(listener, heads)
    });
    let shared = Arc::new(Shared::new(SamplerConfig::default()).unwrap());
    let url = format!("http://pcct:s%3Acret@[::1]:{port}/ingest");
    let config = PushConfig { url, every: Duration::from_millis(100), app: "test".into(), instance: "one".into() };
    let handle = push::start(shared, config.clone(), None).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while handle.stats.sent.load(Ordering::Relaxed) == 0 {
        let status = handle.stats.status(&config);
        assert!(Instant::now() < deadline, "nothing sent: {status:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = handle.stats.status(&config);
    assert_eq!(status.url, format!("http://***@[::1]:{port}/ingest"));
    handle.stop(Duration::from_millis(500));
    let head = heads.lock().unwrap()[0].clone();
    assert!(head[0].starts_with("POST /ingest?"), "{head:?}");
    assert!(head.contains(&format!("host: [::1]:{port}")), "{head:?}");
    // "pcct:s:cret", the password percent-decoded.
    assert!(head.contains(&"authorization: Basic cGNjdDpzOmNyZXQ=".to_string()), "{head:?}");
}
