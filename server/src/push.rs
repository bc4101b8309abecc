//! Periodic push of the profile, window by window, to a Pyroscope-style
//! `/ingest` endpoint (Grafana Pyroscope, Alloy's `pyroscope.receive_http`):
//! `POST <url>?name=<app>{instance=<instance>}&from=&until=&format=pprof
//! &sampleRate=&spyName=pcct`, the window's pprof in the multipart field
//! `profile`.
//!
//! Its own thread (`pcct-push`, the sampling signal blocked) with a
//! one-thread tokio runtime and hyper's HTTP/1 client (already built for
//! the server: no other HTTP client in the tree). Every `every`, the push
//! takes a snapshot of the profile (a copy under the lock, as any heavy
//! answer does) and makes the window since the previous snapshot
//! (`pcct::window`); the next window starts from the same snapshot, so
//! windows follow each other without a gap. Windows wait in a bounded
//! queue ([`QUEUE`] windows, [`QUEUE_BYTES`] bytes); a full queue drops
//! its oldest (counted). A failed
//! send (no connection, a timeout, a 5xx) is retried after a back-off
//! that doubles from 1 s to 60 s, as are a 408 and a 429 (a rate limit);
//! another 4xx drops the window (the receiver refuses it; counted). The
//! push reads the profile like an HTTP reader: a copy under the profile
//! lock every `push_every`, which the sampler waits for at most half an
//! interval (then defers its drain, counted in `drains_deferred`).
//!
//! A URL's user information (`http://user:password@host/`) is sent as
//! HTTP Basic authentication and never shown: the status, `/metrics`, the
//! agent's messages and its errors give the URL [`redacted`]. A host may
//! be an IPv6 literal (`http://[::1]:4040`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::http::{header, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use pcct::export::ReportOptions;
use pcct::window::WindowStart;
use pcct_sampler::{Profile, Shared};
use serde::Serialize;

/// Windows waiting to be sent, at most.
pub const QUEUE: usize = 16;
/// Bytes the waiting windows may hold together.
pub const QUEUE_BYTES: usize = 64 << 20;
/// Longest one send may take.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// First and longest wait after a failed send.
const BACKOFF: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(60));
/// Most bytes of one window's pprof.
const MAX_WINDOW_BYTES: usize = 64 << 20;

/// Where and how to push.
#[derive(Clone, PartialEq, Eq)]
pub struct PushConfig {
    /// `http://[user:password@]host[:port]/path` of the ingest endpoint
    /// (`/ingest` when the URL has no path). Show it [`redacted`].
    pub url: String,
    pub every: Duration,
    /// The `app` and `instance` labels.
    pub app: String,
    pub instance: String,
}

impl std::fmt::Debug for PushConfig {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("PushConfig")
            .field("url", &redacted(&self.url))
            .field("every", &self.every)
            .field("app", &self.app)
            .field("instance", &self.instance)
            .finish()
    }
}

/// `url` as it may be shown: its user information (`user:password@`), if
/// any, replaced by `***@`.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}://***{}", &rest[at..]),
        None => url.to_string(),
    }
}

/// The value of an `Authorization: Basic` header for the user information
/// of `uri` (percent-decoded), if it has some.
fn basic_authorization(uri: &Uri) -> Option<String> {
    use base64::Engine;
    let authority = uri.authority()?.as_str();
    let (userinfo, _) = authority.rsplit_once('@')?;
    let decoded = percent_decode(userinfo);
    Some(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(decoded)))
}

/// `text` with its `%XX` escapes decoded (others kept as they are).
fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let escaped = (bytes[index] == b'%').then(|| text.get(index + 1..index + 3)).flatten();
        match escaped.and_then(|hex| u8::from_str_radix(hex, 16).ok()) {
            Some(byte) => {
                out.push(byte);
                index += 3;
            }
            None => {
                out.push(bytes[index]);
                index += 1;
            }
        }
    }
    out
}

/// The host of `uri` to connect to (an IPv6 literal without its brackets)
/// and the `Host` header's value (without user information).
fn host_and_header(uri: &Uri) -> (String, String) {
    let host = uri.host().unwrap_or("localhost");
    let header = match uri.port_u16() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    };
    (host.trim_start_matches('[').trim_end_matches(']').to_string(), header)
}

/// Checks a push URL: plain `http://` with a host. Returns it with the
/// path `/ingest` when it had none.
pub fn check_url(text: &str) -> Result<String, String> {
    let uri: Uri = text.parse().map_err(|_| "not a URL".to_string())?;
    if uri.scheme_str() != Some("http") {
        return Err("must start with http:// (no TLS: push through a local proxy or Alloy for https)".to_string());
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err("names no host".to_string());
    }
    if uri.query().is_some() {
        return Err("must not have a query (pcct adds it)".to_string());
    }
    Ok(if uri.path() == "/" && !text.ends_with('/') { format!("{text}/ingest") } else { text.to_string() })
}

/// What the push did, as counters (shown by `/api/status` and `/metrics`).
#[derive(Default)]
pub struct PushStats {
    /// Windows made.
    pub windows: AtomicU64,
    /// Windows the receiver accepted.
    pub sent: AtomicU64,
    /// Send attempts that failed (each is retried).
    pub failures: AtomicU64,
    /// Windows dropped: the queue was full, or the receiver refused them (4xx).
    pub dropped: AtomicU64,
    /// Windows waiting now.
    pub queued: AtomicU64,
    /// Bytes the receiver accepted.
    pub bytes_sent: AtomicU64,
    last_error: parking_lot::Mutex<Option<String>>,
}

/// A copy of [`PushStats`].
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct PushStatus {
    pub url: String,
    pub every_ms: u64,
    pub windows: u64,
    pub sent: u64,
    pub failures: u64,
    pub dropped: u64,
    pub queued: u64,
    pub bytes_sent: u64,
    pub last_error: Option<String>,
}

impl PushStats {
    pub fn status(&self, config: &PushConfig) -> PushStatus {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        PushStatus {
            url: redacted(&config.url),
            every_ms: config.every.as_millis() as u64,
            windows: load(&self.windows),
            sent: load(&self.sent),
            failures: load(&self.failures),
            dropped: load(&self.dropped),
            queued: load(&self.queued),
            bytes_sent: load(&self.bytes_sent),
            last_error: self.last_error.lock().clone(),
        }
    }

    fn failed(&self, error: String) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        *self.last_error.lock() = Some(error);
    }
}

/// One window ready to send.
struct Pushed {
    bytes: Vec<u8>,
    from: u64,
    until: u64,
}

/// The running push.
pub struct PushHandle {
    pub stats: Arc<PushStats>,
    pub config: PushConfig,
    stop: Arc<AtomicBool>,
    wake: Arc<tokio::sync::Notify>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PushHandle {
    /// Stops the push: the last window is made and sent with what is
    /// queued, for at most `deadline`; the rest is dropped (counted).
    pub fn stop(mut self, deadline: Duration) {
        self.stop.store(true, Ordering::Release);
        self.wake.notify_one();
        let until = Instant::now() + deadline + Duration::from_millis(200);
        if let Some(thread) = self.thread.take() {
            while !thread.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
    }
}

/// Starts pushing `shared`'s profile as `config` says, on a thread of its
/// own that blocks `block_signal`.
pub fn start(shared: Arc<Shared>, config: PushConfig, block_signal: Option<i32>) -> std::io::Result<PushHandle> {
    let stats = Arc::new(PushStats::default());
    let stop = Arc::new(AtomicBool::new(false));
    let wake = Arc::new(tokio::sync::Notify::new());
    let pusher = Pusher {
        shared,
        config: config.clone(),
        stats: Arc::clone(&stats),
        stop: Arc::clone(&stop),
        wake: Arc::clone(&wake),
        queue: VecDeque::new(),
    };
    let thread = std::thread::Builder::new().name("pcct-push".to_string()).spawn(move || {
        if let Some(signal) = block_signal {
            pcct_sampler::signal::block_in_current_thread(signal);
        }
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().max_blocking_threads(1).build();
        if let Ok(runtime) = runtime {
            runtime.block_on(pusher.run());
            runtime.shutdown_timeout(Duration::from_millis(100));
        }
    })?;
    Ok(PushHandle { stats, config, stop, wake, thread: Some(thread) })
}

struct Pusher {
    shared: Arc<Shared>,
    config: PushConfig,
    stats: Arc<PushStats>,
    stop: Arc<AtomicBool>,
    wake: Arc<tokio::sync::Notify>,
    queue: VecDeque<Pushed>,
}

fn unix_seconds(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs())
}

impl Pusher {
    async fn run(mut self) {
        let (mut start, mut resets) = self.snapshot_start();
        let mut started_at = SystemTime::now();
        let mut next_window = Instant::now() + self.config.every;
        let mut backoff = BACKOFF.0;
        let mut next_send = Instant::now();
        loop {
            let stopping = self.stop.load(Ordering::Acquire);
            if stopping || Instant::now() >= next_window {
                let now = SystemTime::now();
                let (profile, next_start) = self.snapshot();
                self.make_window(&start, resets, &profile, (started_at, now));
                (start, resets) = next_start;
                started_at = now;
                next_window += self.config.every;
                if next_window < Instant::now() {
                    next_window = Instant::now() + self.config.every;
                }
            }
            if stopping {
                let deadline = Instant::now() + Duration::from_secs(1);
                while !self.queue.is_empty() && Instant::now() < deadline && self.send_first(deadline).await {}
                self.stats.dropped.fetch_add(self.queue.len() as u64, Ordering::Relaxed);
                self.queue.clear();
                self.stats.queued.store(0, Ordering::Relaxed);
                return;
            }
            while !self.queue.is_empty() && Instant::now() >= next_send {
                if self.send_first(Instant::now() + SEND_TIMEOUT).await {
                    backoff = BACKOFF.0;
                } else {
                    next_send = Instant::now() + backoff;
                    backoff = (backoff * 2).min(BACKOFF.1);
                }
            }
            let wait_until = if self.queue.is_empty() { next_window } else { next_window.min(next_send) };
            let wait = wait_until.saturating_duration_since(Instant::now());
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.wake.notified() => {}
            }
        }
    }

    /// A snapshot of the profile and the start of the next window on it.
    fn snapshot(&self) -> (Profile, (WindowStart, u64)) {
        let resets = self.shared.counters.method_table_resets.load(Ordering::Acquire);
        let profile = self.shared.snapshot();
        let start = profile.tree.window_start();
        (profile, (start, resets))
    }

    fn snapshot_start(&self) -> (WindowStart, u64) {
        self.snapshot().1
    }

    /// The window from `start` to `profile`, queued as pprof.
    fn make_window(
        &mut self,
        start: &WindowStart,
        resets: u64,
        profile: &Profile,
        (from, until): (SystemTime, SystemTime),
    ) {
        self.stats.windows.fetch_add(1, Ordering::Relaxed);
        let period = self.shared.control.interval().as_nanos() as u64;
        let options = ReportOptions { metric: profile.tree.config().metric, min_cum_share: 0.0, annotate: false };
        let changed = self.shared.counters.method_table_resets.load(Ordering::Acquire) != resets;
        let window = match crate::window::pprof_of(start, changed, profile, &options, period, MAX_WINDOW_BYTES) {
            Ok(Some(window)) => window,
            Ok(None) => return self.lost("a window was larger than 64 MiB".to_string()),
            Err(error) => return self.lost(error),
        };
        let queued_bytes = |queue: &VecDeque<Pushed>| queue.iter().map(|pushed| pushed.bytes.len()).sum::<usize>();
        while !self.queue.is_empty()
            && (self.queue.len() == QUEUE || queued_bytes(&self.queue) + window.bytes.len() > QUEUE_BYTES)
        {
            self.queue.pop_front();
            self.stats.dropped.fetch_add(1, Ordering::Relaxed);
        }
        self.queue.push_back(Pushed { bytes: window.bytes, from: unix_seconds(from), until: unix_seconds(until) });
        self.stats.queued.store(self.queue.len() as u64, Ordering::Relaxed);
    }

    /// A window that could not be made.
    fn lost(&self, why: String) {
        self.stats.failed(why);
        self.stats.dropped.fetch_add(1, Ordering::Relaxed);
    }

    /// Sends the oldest queued window, giving up at `deadline`; whether the
    /// queue moved on (sent, or refused for good).
    async fn send_first(&mut self, deadline: Instant) -> bool {
        let Some(first) = self.queue.front() else { return true };
        let outcome = tokio::time::timeout_at(deadline.into(), self.send(first)).await;
        let moved_on = match outcome {
            Ok(Ok(status)) if status.is_success() => {
                self.stats.sent.fetch_add(1, Ordering::Relaxed);
                self.stats.bytes_sent.fetch_add(first.bytes.len() as u64, Ordering::Relaxed);
                true
            }
            // 408 and 429 (a receiver's rate limit) mean "later": retried.
            Ok(Ok(status))
                if status.is_client_error()
                    && status != StatusCode::REQUEST_TIMEOUT
                    && status != StatusCode::TOO_MANY_REQUESTS =>
            {
                self.stats.failed(format!("the receiver refused a window: HTTP {status}"));
                self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                true
            }
            Ok(Ok(status)) => {
                self.stats.failed(format!("HTTP {status}"));
                false
            }
            Ok(Err(error)) => {
                self.stats.failed(error);
                false
            }
            Err(_) => {
                self.stats.failed("no answer in time".to_string());
                false
            }
        };
        if moved_on {
            self.queue.pop_front();
            self.stats.queued.store(self.queue.len() as u64, Ordering::Relaxed);
        }
        moved_on
    }

    /// One POST of `window`; the answer's status.
    async fn send(&self, window: &Pushed) -> Result<axum::http::StatusCode, String> {
        let uri: Uri = self.config.url.parse().map_err(|_| "bad URL".to_string())?;
        let (host, host_header) = host_and_header(&uri);
        let port = uri.port_u16().unwrap_or(80);
        let stream = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|error| format!("cannot connect to {host_header}: {error}"))?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|error| error.to_string())?;
        tokio::spawn(connection);
        let boundary = format!("pcct-{:016x}", window.from ^ window.until.rotate_left(17) ^ window.bytes.len() as u64);
        let mut request = Request::post(self.target(&uri, window))
            .header(header::HOST, host_header)
            .header(header::CONTENT_TYPE, format!("multipart/form-data; boundary={boundary}"))
            .header(header::USER_AGENT, concat!("pcct/", env!("CARGO_PKG_VERSION")))
            .body(Body::from(multipart(&boundary, &window.bytes)))
            .map_err(|error| error.to_string())?;
        if let Some(credentials) = basic_authorization(&uri).and_then(|value| value.parse().ok()) {
            request.headers_mut().insert(header::AUTHORIZATION, credentials);
        }
        let response = sender.send_request(request).await.map_err(|error| error.to_string())?;
        Ok(response.status())
    }

    /// The path and query of a window's POST.
    fn target(&self, uri: &Uri, window: &Pushed) -> String {
        let name = format!("{}{{instance={}}}", self.config.app, self.config.instance);
        let rate = 1_000_000_000 / self.shared.control.interval().as_nanos().max(1) as u64;
        let query = serde_urlencoded::to_string([
            ("name", name.as_str()),
            ("from", &window.from.to_string()),
            ("until", &window.until.max(window.from + 1).to_string()),
            ("format", "pprof"),
            ("sampleRate", &rate.max(1).to_string()),
            ("spyName", "pcct"),
        ])
        .unwrap_or_default();
        format!("{}?{query}", uri.path())
    }
}

/// A multipart/form-data body with the pprof as the field `profile`.
fn multipart(boundary: &str, bytes: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(bytes.len() + 256);
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"profile\"; filename=\"profile.pprof\"\r\n\
             Content-Type: application/octet-stream\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_plain_http_with_a_host_and_get_the_ingest_path() {
        assert_eq!(check_url("http://pyroscope:4040").unwrap(), "http://pyroscope:4040/ingest");
        assert_eq!(check_url("http://127.0.0.1:9/in").unwrap(), "http://127.0.0.1:9/in");
        assert!(check_url("https://pyroscope:4040").unwrap_err().contains("http://"));
        assert!(check_url("pyroscope:4040").is_err());
        assert!(check_url("http://x/ingest?a=b").is_err());
        assert!(check_url("not a url").is_err());
    }

    #[test]
    fn credentials_are_never_shown_and_go_as_basic_authentication() {
        let url = "http://user:p%40ss@pyroscope:4040/ingest";
        assert_eq!(redacted(url), "http://***@pyroscope:4040/ingest");
        assert_eq!(redacted("http://pyroscope:4040/a@b"), "http://pyroscope:4040/a@b", "an @ in the path is no user");
        assert_eq!(redacted("http://[::1]:4040"), "http://[::1]:4040");
        let config =
            PushConfig { url: url.into(), every: Duration::from_secs(1), app: "a".into(), instance: "b".into() };
        assert!(!format!("{config:?}").contains("p%40ss"));
        assert!(!PushStats::default().status(&config).url.contains("p%40ss"));
        let uri: Uri = url.parse().unwrap();
        assert_eq!(basic_authorization(&uri).as_deref(), Some("Basic dXNlcjpwQHNz"), "user:p@ss");
        assert_eq!(host_and_header(&uri), ("pyroscope".to_string(), "pyroscope:4040".to_string()));
        assert_eq!(basic_authorization(&"http://pyroscope:4040/".parse().unwrap()), None);
    }

    #[test]
    fn ipv6_literals_are_connected_to_without_brackets() {
        assert_eq!(check_url("http://[::1]:4040").unwrap(), "http://[::1]:4040/ingest");
        let uri: Uri = "http://[::1]:4040/ingest".parse().unwrap();
        assert_eq!(host_and_header(&uri), ("::1".to_string(), "[::1]:4040".to_string()));
    }

    #[test]
    fn the_profile_is_the_multipart_field_named_profile() {
        let body = multipart("b0", b"\x1f\x8bdata");
        let text = String::from_utf8_lossy(&body);
        assert!(
            text.starts_with("--b0\r\nContent-Disposition: form-data; name=\"profile\"; filename=\"profile.pprof\"")
        );
        assert!(text.ends_with("\r\n--b0--\r\n"));
    }
}
