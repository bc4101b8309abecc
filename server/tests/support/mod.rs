//! Shared fixture of the server's integration tests: an [`AppState`] over a
//! synthetic profile whose every weight is known, a recent-samples ring with
//! recorded, checksum-filtered and failed records, and helpers to send one
//! request through `app(state)` with `oneshot`.
//!
//! Each test binary uses part of this module.
#![allow(dead_code)]

pub mod socket;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::body::{to_bytes, Body};
use axum::http::{header, HeaderMap, Method, Request, StatusCode};
use pcct::{Frame, LineEntry, Marks, MethodId, TreeConfig, Weight};
use pcct_sampler::recent::{Broken, Outcome, SampleRecord, Walker, TOP_FRAMES};
use pcct_sampler::{SamplerConfig, Shared};
use pcct_server::serve::Connection;
use pcct_server::{app, AppConfig, AppState};
use tower::ServiceExt;

/// One millisecond of CPU time: the weight of every synthetic sample.
pub const MS: u64 = 1_000_000;

pub const MAIN: &str = "demo.Main.main";
pub const COMPUTE: &str = "demo.Work.compute";
pub const HASH: &str = "demo.Work.hash";
pub const READ: &str = "demo.Io.read";

/// `main` calls `compute` at bci 10 (line 12) and `read` at bci 20 (line 15);
/// `compute` calls `hash` at bci 5 (line 41).
pub const MAIN_TO_COMPUTE_BCI: i32 = 10;
pub const MAIN_TO_COMPUTE_LINE: u32 = 12;
pub const MAIN_TO_READ_BCI: i32 = 20;
pub const COMPUTE_TO_HASH_BCI: i32 = 5;
pub const COMPUTE_TO_HASH_LINE: u32 = 41;

/// Samples per stack of the synthetic tree, each weighing [`MS`]:
/// main>compute>hash 6, main>compute 2, main>read 1, main 1 (10 in all).
pub const HASH_SAMPLES: u64 = 6;
pub const COMPUTE_SELF_SAMPLES: u64 = 2;
pub const READ_SAMPLES: u64 = 1;
pub const MAIN_SELF_SAMPLES: u64 = 1;
pub const TOTAL_SAMPLES: u64 = HASH_SAMPLES + COMPUTE_SELF_SAMPLES + READ_SAMPLES + MAIN_SELF_SAMPLES;

/// Capacity of the recent-samples ring and the records pushed into it: the
/// first [`OVERWRITTEN`] are overwritten.
pub const RING_CAPACITY: usize = 8;
pub const RING_PUSHED: u64 = 12;
pub const OVERWRITTEN: u64 = RING_PUSHED - RING_CAPACITY as u64;

/// The ring record whose stack walk failed (AsyncGetCallTrace code -2).
pub const FAILED_SEQ: u64 = 9;
/// The ring's sample whose walk pcct's walker could not finish (its frames
/// are the stack's top, under `[break_stack_range]`).
pub const PARTIAL_SEQ: u64 = 8;

/// Counter values set in the fixture (read back through /metrics and /api/status).
pub const COUNTED_RECORDED: u64 = 10;
pub const COUNTED_FILTERED: u64 = 3;

/// A tree whose arena holds the synthetic profile and `contexts` more.
pub fn arena_for(contexts: usize) -> TreeConfig {
    let bytes = pcct::BYTES_PER_NODE_AND_EDGE + pcct::BYTES_PER_EVENT_CONTEXT;
    TreeConfig { arena_bytes: (contexts + 64) * bytes * 2, ..TreeConfig::default() }
}

/// Events of the synthetic profile (no samples, no CPU): allocations of
/// byte[] in compute at bci [`ALLOC_BCI`] (line 44) and of
/// java.lang.Object in read, and waits for a java.lang.Object monitor in
/// main at bci [`LOCK_BCI`].
pub const BYTE_ARRAYS: u64 = 3;
pub const BYTE_ARRAY_BYTES: u64 = 300 * 1024;
pub const OBJECTS: u64 = 1;
pub const OBJECT_BYTES: u64 = 100 * 1024;
pub const LOCK_WAITS: u64 = 2;
pub const LOCK_WAIT_NS: u64 = 4 * MS;
pub const ALLOC_BCI: i32 = 30;
pub const ALLOC_LINE: u32 = 44;
pub const LOCK_BCI: i32 = 25;
pub const BYTE_ARRAY: &str = "byte[]";
pub const OBJECT: &str = "java.lang.Object";

/// Contexts (frames) of each stack [`Fixture::sizable`] adds.
pub const SIZABLE_DEPTH: usize = 10;

/// The control token of [`Fixture::with_token`] and [`Fixture::with_tokens`].
pub const TOKEN: &str = "s3cret-token-0123";
/// The read-only token of [`Fixture::with_tokens`].
pub const READ_TOKEN: &str = "read-only-token-4567";

#[derive(Clone, Copy)]
pub struct Methods {
    pub main: MethodId,
    pub compute: MethodId,
    pub hash: MethodId,
    pub read: MethodId,
}

pub struct Fixture {
    pub shared: Arc<Shared>,
    pub state: AppState,
    pub methods: Methods,
}

/// What the outcome of a ring record `seq` is: every third (1, 4, 7, 10)
/// is checksum-filtered, seq [`FAILED_SEQ`] failed, the rest recorded.
pub fn outcome_of(seq: u64) -> Outcome {
    if seq % 3 == 1 {
        Outcome::Filtered
    } else if seq == FAILED_SEQ {
        Outcome::Failed { code: -2 }
    } else {
        Outcome::Recorded
    }
}

/// The fixtures' server settings: the defaults, but recompile requests
/// served without a token, so that every route answers in every test
/// (`tests/recompile.rs` checks the default, which refuses them).
pub fn open_config() -> AppConfig {
    AppConfig { recompile_without_token: true, ..AppConfig::default() }
}

impl Fixture {
    pub fn new() -> Fixture {
        Fixture::with_config(open_config())
    }

    pub fn with_token() -> Fixture {
        Fixture::with_config(AppConfig { token: Some(TOKEN.to_string()), ..AppConfig::default() })
    }

    /// The control token [`TOKEN`] and the read-only token [`READ_TOKEN`].
    pub fn with_tokens() -> Fixture {
        let tokens = AppConfig { read_token: Some(READ_TOKEN.to_string()), ..AppConfig::default() };
        Fixture::with_config(AppConfig { token: Some(TOKEN.to_string()), ..tokens })
    }

    pub fn with_config(config: AppConfig) -> Fixture {
        Fixture::with_tree(config, TreeConfig { arena_bytes: 1 << 20, ..TreeConfig::default() })
    }

    /// The synthetic profile plus `stacks` stacks of [`SIZABLE_DEPTH`]
    /// contexts each ([`Fixture::add_stacks`]): a profile whose copy and
    /// reports take a while.
    pub fn sizable(config: AppConfig, stacks: usize) -> Fixture {
        let fixture = Fixture::with_tree(config, arena_for(stacks * SIZABLE_DEPTH));
        fixture.add_stacks(stacks, SIZABLE_DEPTH);
        fixture
    }

    /// Records `stacks` stacks of `depth` new contexts each under `main`
    /// (`main` at bci 1000 + i, then `compute` at bci 0, 1, ..., then
    /// `hash`), one sample of [`MS`] each.
    pub fn add_stacks(&self, stacks: usize, depth: usize) {
        let Methods { main, compute, hash, .. } = self.methods;
        let mut profile = self.shared.profile.lock();
        for index in 0..stacks {
            let mut stack = vec![Frame::new(main, 1000 + index as i32)];
            stack.extend((0..depth as i32 - 2).map(|bci| Frame::new(compute, bci)));
            stack.push(Frame::new(hash, 3));
            let mut marks = Marks::new();
            profile.tree.record(&mut marks, &stack, Weight::sample(MS, 2 * MS)).expect("room in the arena");
        }
    }

    /// The synthetic profile in a tree configured by `tree`.
    pub fn with_tree(config: AppConfig, tree: TreeConfig) -> Fixture {
        let fixture = Fixture::unserved(config, tree);
        serve_recompile_requests(&fixture.shared);
        fixture
    }

    /// [`Fixture::with_config`] whose recompile requests are queued and
    /// never answered: no thread stands in for the agent's JIT thread
    /// (the test takes the requests with `next_work`).
    pub fn without_jit_thread(config: AppConfig) -> Fixture {
        let fixture = Fixture::unserved(config, TreeConfig { arena_bytes: 1 << 20, ..TreeConfig::default() });
        fixture.shared.jit.set_serving(true);
        fixture
    }

    fn unserved(config: AppConfig, tree: TreeConfig) -> Fixture {
        let sampler = SamplerConfig { recent_capacity: RING_CAPACITY, tree, ..SamplerConfig::default() };
        let shared = Arc::new(Shared::new(sampler).expect("the sampler state needs no JVM"));
        let methods = {
            let mut profile = shared.profile.lock();
            let table = Arc::make_mut(&mut profile.methods);
            let methods = Methods {
                main: table.intern("demo.Main", "main", "([Ljava/lang/String;)V"),
                compute: table.intern("demo.Work", "compute", "()J"),
                hash: table.intern("demo.Work", "hash", "(I)I"),
                read: table.intern("demo.Io", "read", "()V"),
            };
            let main_lines = vec![
                LineEntry { start_bci: 0, line: 3 },
                LineEntry { start_bci: 8, line: MAIN_TO_COMPUTE_LINE },
                LineEntry { start_bci: 18, line: 15 },
            ];
            table.set_lines(methods.main, main_lines);
            let compute_lines = vec![
                LineEntry { start_bci: 0, line: 40 },
                LineEntry { start_bci: 4, line: COMPUTE_TO_HASH_LINE },
                LineEntry { start_bci: ALLOC_BCI as u32, line: ALLOC_LINE },
            ];
            table.set_lines(methods.compute, compute_lines);
            let Methods { main, compute, hash, read } = methods;
            let stacks: [(Vec<Frame>, u64); 4] = [
                (
                    vec![
                        Frame::new(main, MAIN_TO_COMPUTE_BCI),
                        Frame::new(compute, COMPUTE_TO_HASH_BCI),
                        Frame::new(hash, 3),
                    ],
                    HASH_SAMPLES,
                ),
                (vec![Frame::new(main, MAIN_TO_COMPUTE_BCI), Frame::new(compute, 7)], COMPUTE_SELF_SAMPLES),
                (vec![Frame::new(main, MAIN_TO_READ_BCI), Frame::new(read, 0)], READ_SAMPLES),
                (vec![Frame::new(main, 2)], MAIN_SELF_SAMPLES),
            ];
            for (stack, samples) in &stacks {
                for _ in 0..*samples {
                    // Fresh marks: every frame of every sample is new, so
                    // edge weights equal the samples through the edge.
                    let mut marks = Marks::new();
                    profile.tree.record(&mut marks, stack, Weight::sample(MS, 2 * MS)).expect("room in the arena");
                }
            }
            let table = Arc::make_mut(&mut profile.methods);
            let (byte_array, object) = (table.intern_type(BYTE_ARRAY), table.intern_type(OBJECT));
            let events = [
                (
                    vec![
                        Frame::new(main, MAIN_TO_COMPUTE_BCI),
                        Frame::new(compute, ALLOC_BCI),
                        Frame::new(byte_array, -1),
                    ],
                    Weight::allocation(BYTE_ARRAY_BYTES / BYTE_ARRAYS, 300),
                    BYTE_ARRAYS,
                ),
                (
                    vec![Frame::new(main, MAIN_TO_READ_BCI), Frame::new(read, 4), Frame::new(object, -1)],
                    Weight::allocation(OBJECT_BYTES / OBJECTS, 6400),
                    OBJECTS,
                ),
                (
                    vec![Frame::new(main, LOCK_BCI), Frame::new(object, -1)],
                    Weight::lock_wait(LOCK_WAIT_NS / LOCK_WAITS),
                    LOCK_WAITS,
                ),
            ];
            for (stack, weight, count) in &events {
                for _ in 0..*count {
                    profile.tree.record_event(stack, *weight).expect("room in the arena");
                }
            }
            methods
        };
        {
            let mut recent = shared.recent.lock();
            for seq in 0..RING_PUSHED {
                let outcome = outcome_of(seq);
                let mut top = [MethodId(0); TOP_FRAMES];
                let top_len = if outcome == Outcome::Recorded {
                    top[..3].copy_from_slice(&[methods.hash, methods.compute, methods.main]);
                    3
                } else {
                    0
                };
                recent.push(SampleRecord {
                    seq: 0,
                    time_ns: seq * MS,
                    tid: 100 + (seq % 2) as i32,
                    cpu_delta_ns: MS,
                    wall_delta_ns: 2 * MS,
                    checksum: 0xabc0 + seq,
                    outcome,
                    depth: top_len as u32,
                    top,
                    top_len,
                    walker: match (top_len, seq) {
                        (0, _) => Walker::None,
                        (_, PARTIAL_SEQ) => Walker::VmPartial,
                        _ => Walker::Vm,
                    },
                    walk_stopped: (seq == PARTIAL_SEQ).then_some(Broken::StackRange),
                });
            }
        }
        shared.counters.samples_recorded.store(COUNTED_RECORDED, Ordering::Relaxed);
        shared.counters.samples_filtered.store(COUNTED_FILTERED, Ordering::Relaxed);
        let state = AppState::new(Arc::clone(&shared), config);
        Fixture { shared, state, methods }
    }

    pub async fn get(&self, uri: &str) -> Answer {
        self.send(Method::GET, uri, &[], Body::empty()).await
    }

    pub async fn post(&self, uri: &str, body: impl Into<Body>) -> Answer {
        self.send(Method::POST, uri, &[], body.into()).await
    }

    /// Sends a request as the API's clients do: anything but GET or HEAD
    /// with `Content-Type: application/json` unless `headers` name one.
    pub async fn send(&self, method: Method, uri: &str, headers: &[(&str, &str)], body: Body) -> Answer {
        let mut headers = headers.to_vec();
        let typed = headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("content-type"));
        if !typed && method != Method::GET && method != Method::HEAD {
            headers.push(("content-type", "application/json"));
        }
        self.send_raw(method, uri, &headers, body).await
    }

    /// Sends a request with exactly `headers`.
    pub async fn send_raw(&self, method: Method, uri: &str, headers: &[(&str, &str)], body: Body) -> Answer {
        send_on(&self.state, None, method, uri, headers, body).await
    }
}

/// Sends a request with exactly `headers` to `state`'s app, as if it came
/// on `connection` (from its peer to its local address) when one is given.
pub async fn send_on(
    state: &AppState,
    connection: Option<Connection>,
    method: Method,
    uri: &str,
    headers: &[(&str, &str)],
    body: Body,
) -> Answer {
    let mut request = Request::builder().method(method).uri(uri);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(connection) = connection {
        request = request.extension(connection);
    }
    let request = request.body(body).expect("a valid request");
    let response = app(state.clone()).oneshot(request).await.expect("the router is infallible");
    let status = response.status();
    let headers = response.headers().clone();
    let body = to_bytes(response.into_body(), 64 << 20).await.expect("a readable body").to_vec();
    Answer { status, headers, body }
}

/// A connection from `peer` (an IP address) to port `port` of loopback.
pub fn connection(peer: &str, port: u16) -> Connection {
    Connection {
        peer: SocketAddr::new(peer.parse().expect("an IP address"), 40000),
        local: ([127, 0, 0, 1], port).into(),
    }
}

impl Fixture {}

impl Default for Fixture {
    fn default() -> Self {
        Fixture::new()
    }
}

/// A response with its body read.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).expect("a UTF-8 body")
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|error| panic!("not JSON ({error}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn content_type(&self) -> &str {
        self.headers.get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()).unwrap_or("")
    }

    /// Asserts a 200 answer and returns its JSON body.
    pub fn ok_json(&self) -> serde_json::Value {
        assert_eq!(self.status, StatusCode::OK, "body: {}", String::from_utf8_lossy(&self.body));
        assert!(self.content_type().starts_with("application/json"), "content type {}", self.content_type());
        self.json()
    }

    /// Asserts a JSON error answer with `status` and returns the named parameter, if any.
    pub fn error(&self, status: StatusCode) -> Option<String> {
        assert_eq!(self.status, status, "body: {}", String::from_utf8_lossy(&self.body));
        assert!(self.content_type().starts_with("application/json"), "content type {}", self.content_type());
        let body = self.json();
        let message = body["error"].as_str().expect("an \"error\" string");
        assert!(!message.is_empty(), "an empty error message");
        body.get("parameter").map(|parameter| parameter.as_str().expect("a \"parameter\" string").to_string())
    }

    /// Asserts a 400 JSON error naming `parameter`.
    pub fn bad_parameter(&self, parameter: &str) {
        let named = self.error(StatusCode::BAD_REQUEST);
        assert_eq!(named.as_deref(), Some(parameter), "body: {}", String::from_utf8_lossy(&self.body));
    }
}

/// Every route: (method, path, body of a valid request). Recompiling
/// comes before purging: it may name only classes the profile's advice
/// names.
pub const ROUTES: &[(&str, &str, &str)] = &[
    ("GET", "/", ""),
    ("GET", "/healthz", ""),
    ("GET", "/metrics", ""),
    ("GET", "/flamegraph.svg", ""),
    ("GET", "/api/status", ""),
    ("GET", "/api/hot-methods", ""),
    ("GET", "/api/hot-edges", ""),
    ("GET", "/api/hot-nodes", ""),
    ("GET", "/api/sites", ""),
    ("GET", "/api/tree", ""),
    ("GET", "/api/samples", ""),
    ("GET", "/api/reports/xprof", ""),
    ("GET", "/api/reports/xarc", ""),
    ("GET", "/api/reports/xtree", ""),
    ("GET", "/api/reports/sites", ""),
    ("GET", "/api/collapsed", ""),
    ("GET", "/api/pprof", ""),
    ("GET", "/api/jit/advice", ""),
    ("GET", "/api/jit/directives", ""),
    ("POST", "/api/jit/recompile", r#"{"classes": ["demo.Work"], "request": "the-same-each-time"}"#),
    ("POST", "/api/purge", ""),
    ("POST", "/api/sampling", "{}"),
];

/// The query parameters each route that validates its query takes.
pub const PARAMETERS: &[(&str, &str, &[&str])] = &[
    ("GET", "/metrics", &[]),
    ("GET", "/flamegraph.svg", &["metric", "resource", "title", "min_share", "s", "x", "y"]),
    ("GET", "/api/status", &[]),
    ("GET", "/api/hot-methods", &["limit", "by", "metric", "resource"]),
    ("GET", "/api/hot-edges", &["limit", "metric", "resource"]),
    ("GET", "/api/hot-nodes", &["limit", "metric", "resource"]),
    ("GET", "/api/sites", &["limit", "metric", "resource"]),
    ("GET", "/api/tree", &["path", "min_share", "max_depth", "max_nodes", "metric", "resource"]),
    ("GET", "/api/samples", &["since", "limit", "filtered"]),
    ("GET", "/api/reports/xprof", &["min_share", "metric", "resource"]),
    ("GET", "/api/reports/xarc", &["min_share", "metric", "resource"]),
    ("GET", "/api/reports/xtree", &["min_share", "metric", "resource"]),
    ("GET", "/api/reports/sites", &["min_share", "metric", "resource"]),
    ("GET", "/api/collapsed", &["metric", "resource"]),
    ("POST", "/api/purge", &[]),
    ("POST", "/api/sampling", &[]),
    ("GET", "/api/jit/advice", &["limit", "min_share"]),
    ("GET", "/api/jit/directives", &["limit", "min_share"]),
    ("POST", "/api/jit/recompile", &[]),
];

/// A thread standing in for the agent's JIT thread: it answers recompile
/// requests (no JVM here: every class is "not found") until the shared
/// state is dropped.
fn serve_recompile_requests(shared: &Arc<Shared>) {
    shared.jit.set_serving(true);
    let shared = Arc::downgrade(shared);
    std::thread::spawn(move || {
        while let Some(shared) = shared.upgrade() {
            if let pcct_jit::live::Work::Recompile(job) = shared.jit.next_work(std::time::Duration::from_millis(50)) {
                let report = pcct_jit::RecompileReport { not_found: job.classes.clone(), ..Default::default() };
                job.answer(Ok(report));
            }
        }
    });
}

pub fn method(name: &str) -> Method {
    Method::from_bytes(name.as_bytes()).expect("a valid method")
}

/// Percent-encodes every byte outside the URL-unreserved set.
pub fn encode(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}
