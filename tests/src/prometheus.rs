//! A real Prometheus on loopback and promtool, for the tests of the shipped
//! dashboards, scrape configuration and alert rules (`dashboards/`).
//!
//! [`Prometheus::start`] runs `/usr/bin/prometheus` (Debian package
//! `prometheus`, installed by `scripts/install-test-deps`) with a generated
//! configuration ([`ScrapeConfig`]) and a fresh TSDB in the test's own
//! directory, on a free loopback port; it is killed when dropped. The
//! helpers wait with a deadline until targets were scraped and rules
//! evaluated, and run instant queries through the HTTP API. [`promtool`]
//! runs the checker.
//!
//! The tests crate has no JSON dependency, so the API's answers (and the
//! dashboard) are read with the small parser in [`json`].

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::poll::poll_until;

pub use json::Json;

/// `$PCCT_PROMETHEUS`, else `/usr/bin/prometheus`.
pub fn prometheus_binary() -> PathBuf {
    binary("PCCT_PROMETHEUS", "/usr/bin/prometheus")
}

/// `$PCCT_PROMTOOL`, else `/usr/bin/promtool`.
pub fn promtool_binary() -> PathBuf {
    binary("PCCT_PROMTOOL", "/usr/bin/promtool")
}

fn binary(variable: &str, default: &str) -> PathBuf {
    let path = std::env::var_os(variable).map_or_else(|| PathBuf::from(default), PathBuf::from);
    assert!(
        path.is_file(),
        "{} is missing: install the Debian package prometheus (scripts/install-test-deps does), or set {variable}",
        path.display()
    );
    path
}

/// Runs `promtool <args>` (in the current directory) and returns its output.
pub fn promtool<S: AsRef<OsStr>>(args: &[S]) -> Output {
    let tool = promtool_binary();
    Command::new(&tool).args(args).output().unwrap_or_else(|e| panic!("cannot run {}: {e}", tool.display()))
}

/// Runs `promtool <args>`, panics with its output unless it succeeds, and
/// returns what it printed (stdout and stderr).
pub fn assert_promtool<S: AsRef<OsStr>>(args: &[S]) -> String {
    let output = promtool(args);
    let printed = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let shown: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy().into_owned()).collect();
    assert!(output.status.success(), "promtool {} failed ({}):\n{printed}", shown.join(" "), output.status);
    printed
}

/// One scrape job for the generated configuration: scrape and rule
/// evaluation every second.
#[derive(Clone, Debug)]
pub struct ScrapeConfig {
    job: String,
    targets: Vec<String>,
    labels: Vec<(String, String)>,
    rule_files: Vec<PathBuf>,
    bearer_token: Option<String>,
}

impl ScrapeConfig {
    /// Scrapes `/metrics` of `target` (`host:port`) as job `job`.
    pub fn new(job: &str, target: &str) -> ScrapeConfig {
        ScrapeConfig {
            job: job.to_string(),
            targets: vec![target.to_string()],
            labels: Vec::new(),
            rule_files: Vec::new(),
            bearer_token: None,
        }
    }

    /// A label added to every target (like `app` in `dashboards/prometheus.yml`).
    pub fn label(mut self, name: &str, value: &str) -> ScrapeConfig {
        self.labels.push((name.to_string(), value.to_string()));
        self
    }

    /// A rule file Prometheus loads and evaluates (an absolute path).
    pub fn rule_file(mut self, path: &Path) -> ScrapeConfig {
        self.rule_files.push(std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()));
        self
    }

    /// Scrapes with `Authorization: Bearer <token>` (agents started with `token=`).
    pub fn bearer_token(mut self, token: &str) -> ScrapeConfig {
        self.bearer_token = Some(token.to_string());
        self
    }

    /// The configuration file (YAML; every string is written JSON-quoted,
    /// which YAML reads as is).
    pub fn yaml(&self) -> String {
        let q = |s: &str| json::quote(s);
        let mut out = String::from("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n");
        if !self.rule_files.is_empty() {
            out.push_str("rule_files:\n");
            for file in &self.rule_files {
                out.push_str(&format!("  - {}\n", q(&file.to_string_lossy())));
            }
        }
        out.push_str(&format!("scrape_configs:\n  - job_name: {}\n    metrics_path: /metrics\n", q(&self.job)));
        if let Some(token) = &self.bearer_token {
            out.push_str(&format!("    authorization:\n      type: Bearer\n      credentials: {}\n", q(token)));
        }
        out.push_str("    static_configs:\n      - targets:\n");
        for target in &self.targets {
            out.push_str(&format!("          - {}\n", q(target)));
        }
        if !self.labels.is_empty() {
            out.push_str("        labels:\n");
            for (name, value) in &self.labels {
                out.push_str(&format!("          {name}: {}\n", q(value)));
            }
        }
        out
    }
}

/// One element of an instant query's answer: its labels and value (a
/// scalar answer is one sample without labels).
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// A rule as Prometheus loaded it (`/api/v1/rules`).
#[derive(Clone, Debug)]
pub struct Rule {
    pub name: String,
    /// `alerting` or `recording`.
    pub kind: String,
    /// The expression, as Prometheus formats it.
    pub query: String,
    /// `for:` in seconds (alerting rules).
    pub duration: f64,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// `ok`, `err` or `unknown` (not evaluated yet).
    pub health: String,
    pub last_error: String,
}

/// A scrape target (`/api/v1/targets`).
#[derive(Clone, Debug)]
pub struct Target {
    pub labels: BTreeMap<String, String>,
    /// `up`, `down` or `unknown`.
    pub health: String,
    pub last_error: String,
}

/// A Prometheus server on `127.0.0.1:<port>`, killed when dropped.
pub struct Prometheus {
    child: Child,
    address: String,
    log: PathBuf,
}

/// How many free ports [`Prometheus::start`] tries: the port is free when
/// chosen, but someone else may take it before Prometheus binds it.
const START_ATTEMPTS: usize = 5;

/// A loopback port nobody listened on a moment ago (Prometheus cannot listen
/// on port 0 and tell which port it got).
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().expect("local address").port()
}

impl Prometheus {
    /// Writes `config` to `dir/prometheus.yml` and starts Prometheus with a
    /// fresh TSDB under `dir`, on a free loopback port, retrying with another
    /// port when it was taken; waits (up to 60 s) until it is ready.
    pub fn start(dir: &Path, config: &ScrapeConfig) -> Prometheus {
        let config_file = dir.join("prometheus.yml");
        std::fs::write(&config_file, config.yaml())
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", config_file.display()));
        let binary = prometheus_binary();
        let mut failures = String::new();
        for attempt in 0..START_ATTEMPTS {
            let address = format!("127.0.0.1:{}", free_port());
            let log = dir.join(format!("prometheus-{attempt}.log"));
            let log_file = File::create(&log).unwrap_or_else(|e| panic!("cannot create {}: {e}", log.display()));
            let stderr = log_file.try_clone().expect("clone the log file");
            let child = Command::new(&binary)
                .arg(format!("--config.file={}", config_file.display()))
                .arg(format!("--storage.tsdb.path={}", dir.join(format!("tsdb-{attempt}")).display()))
                .arg(format!("--web.listen-address={address}"))
                .current_dir(dir)
                .stdin(Stdio::null())
                .stdout(log_file)
                .stderr(stderr)
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
            let mut prometheus = Prometheus { child, address, log };
            match prometheus.wait_until_ready(Instant::now() + Duration::from_secs(60)) {
                Ok(()) => return prometheus,
                Err(why) => {
                    let log = prometheus.log();
                    drop(prometheus);
                    if !log.contains("address already in use") {
                        panic!("Prometheus did not start: {why}\n--- log ---\n{log}");
                    }
                    failures.push_str(&format!("attempt {attempt}: {why}\n"));
                }
            }
        }
        panic!("Prometheus did not start in {START_ATTEMPTS} attempts (ports taken):\n{failures}")
    }

    fn wait_until_ready(&mut self, deadline: Instant) -> Result<(), String> {
        let ready = poll_until(deadline, || {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(Err(format!("it exited ({status})")));
            }
            match http_get(&self.address, "/-/ready") {
                Ok((200, _)) => Some(Ok(())),
                _ => None,
            }
        });
        ready.unwrap_or_else(|| Err("not ready within the deadline".to_string()))
    }

    /// `127.0.0.1:<port>`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// What Prometheus logged so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// GETs an API path and returns the `data` of a successful answer, or
    /// the error Prometheus gave.
    pub fn api(&self, path_and_query: &str) -> Result<Json, String> {
        let (status, body) = http_get(&self.address, path_and_query)?;
        let answer = json::parse(&body).map_err(|e| format!("HTTP {status}, not JSON ({e}): {body}"))?;
        if answer.get("status").and_then(Json::as_str) == Some("success") {
            return Ok(answer.get("data").cloned().unwrap_or(Json::Null));
        }
        let kind = answer.get("errorType").and_then(Json::as_str).unwrap_or("?");
        let error = answer.get("error").and_then(Json::as_str).unwrap_or(&body);
        Err(format!("HTTP {status}, {kind}: {error}"))
    }

    /// Evaluates `expr` now (`/api/v1/query`): the samples of a vector or
    /// scalar answer, or the error.
    pub fn query(&self, expr: &str) -> Result<Vec<Sample>, String> {
        let data = self.api(&format!("/api/v1/query?query={}", url_encode(expr)))?;
        let kind = data.get("resultType").and_then(Json::as_str).unwrap_or("");
        let result = data.get("result").ok_or("no result in the answer")?;
        match kind {
            "vector" => result
                .as_array()
                .ok_or("the vector is not an array")?
                .iter()
                .map(|element| {
                    let labels = string_map(element.get("metric"));
                    let value = sample_value(element.get("value"))?;
                    Ok(Sample { labels, value })
                })
                .collect(),
            "scalar" => Ok(vec![Sample { labels: BTreeMap::new(), value: sample_value(Some(result))? }]),
            other => Err(format!("unexpected result type {other:?} for {expr}")),
        }
    }

    /// The active scrape targets.
    pub fn targets(&self) -> Result<Vec<Target>, String> {
        let data = self.api("/api/v1/targets?state=active")?;
        let targets = data.get("activeTargets").and_then(Json::as_array).ok_or("no activeTargets")?;
        Ok(targets
            .iter()
            .map(|target| Target {
                labels: string_map(target.get("labels")),
                health: target.get("health").and_then(Json::as_str).unwrap_or("").to_string(),
                last_error: target.get("lastError").and_then(Json::as_str).unwrap_or("").to_string(),
            })
            .collect())
    }

    /// Every rule of every loaded rule group.
    pub fn rules(&self) -> Result<Vec<Rule>, String> {
        let data = self.api("/api/v1/rules")?;
        let groups = data.get("groups").and_then(Json::as_array).ok_or("no rule groups")?;
        let text = |rule: &Json, key: &str| rule.get(key).and_then(Json::as_str).unwrap_or("").to_string();
        Ok(groups
            .iter()
            .flat_map(|group| group.get("rules").and_then(Json::as_array).map(Vec::as_slice).unwrap_or(&[]))
            .map(|rule| Rule {
                name: text(rule, "name"),
                kind: text(rule, "type"),
                query: text(rule, "query"),
                duration: rule.get("duration").and_then(Json::as_f64).unwrap_or(0.0),
                labels: string_map(rule.get("labels")),
                annotations: string_map(rule.get("annotations")),
                health: text(rule, "health"),
                last_error: text(rule, "lastError"),
            })
            .collect())
    }

    /// Waits until every target is up and has been scraped at least
    /// `scrapes` times; panics with the targets and the log at `deadline`.
    pub fn wait_for_scrapes(&self, scrapes: usize, deadline: Instant) {
        let done = poll_until(deadline, || {
            let targets = self.targets().ok()?;
            if targets.is_empty() || targets.iter().any(|t| t.health != "up") {
                return None;
            }
            let fewest = self.query("min(count_over_time(up[1h]))").ok()?.first()?.value;
            (fewest >= scrapes as f64).then_some(())
        });
        if done.is_none() {
            panic!(
                "targets not up and scraped {scrapes} times in time: {:?}\n--- log ---\n{}",
                self.targets(),
                self.log()
            );
        }
    }

    /// Waits until every loaded rule has been evaluated (its health is no
    /// longer `unknown`) and returns the rules; panics at `deadline`.
    pub fn wait_for_rule_evaluation(&self, deadline: Instant) -> Vec<Rule> {
        let rules = poll_until(deadline, || {
            let rules = self.rules().ok()?;
            (!rules.is_empty() && rules.iter().all(|rule| rule.health != "unknown")).then_some(rules)
        });
        rules.unwrap_or_else(|| panic!("rules not evaluated in time: {:?}\n--- log ---\n{}", self.rules(), self.log()))
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The string values of a JSON object (labels, annotations).
fn string_map(object: Option<&Json>) -> BTreeMap<String, String> {
    let Some(Json::Object(members)) = object else {
        return BTreeMap::new();
    };
    members.iter().filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_string()))).collect()
}

/// The value of `[timestamp, "value"]` (Prometheus writes values as strings:
/// `"1.5"`, `"NaN"`, `"+Inf"`).
fn sample_value(pair: Option<&Json>) -> Result<f64, String> {
    let text = pair.and_then(|p| p.as_array()?.get(1)?.as_str()).ok_or("a sample without a value")?;
    match text {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        _ => text.parse().map_err(|e| format!("bad sample value {text:?}: {e}")),
    }
}

/// Percent-encodes everything but the unreserved characters (RFC 3986).
pub fn url_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A plain HTTP/1.0 GET (the server closes the connection after a whole,
/// unchunked body): the status code and the body.
fn http_get(address: &str, path_and_query: &str) -> Result<(u16, String), String> {
    let mut stream = TcpStream::connect(address).map_err(|e| format!("connect {address}: {e}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(30))).map_err(|e| e.to_string())?;
    write!(stream, "GET {path_and_query} HTTP/1.0\r\nHost: {address}\r\n\r\n").map_err(|e| format!("send: {e}"))?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).map_err(|e| format!("receive: {e}"))?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(|| format!("no end of headers in {text:?}"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("no status code in {head:?}"))?;
    Ok((status, body.to_string()))
}

/// JSON through serde_json: the value type and the two helpers the
/// dashboard tests use.
pub mod json {
    /// A parsed JSON value.
    pub type Json = serde_json::Value;

    /// `text` as a JSON string literal (also a valid YAML double-quoted scalar).
    pub fn quote(text: &str) -> String {
        serde_json::to_string(text).expect("a string serialises")
    }

    /// Parses one JSON document.
    pub fn parse(text: &str) -> Result<Json, String> {
        serde_json::from_str(text).map_err(|error| error.to_string())
    }
}
