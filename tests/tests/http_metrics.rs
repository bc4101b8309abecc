//! `/metrics` of a live, profiled JVM (LiveTarget.java, its busy thread
//! hottest in LiveTarget.alpha, with a parked thread and the CPU-clock
//! prefilter off so that checksum-filtered samples occur): `promtool check
//! metrics` accepts the exposition, and it holds samples by outcome, the
//! hot-method gauges naming the hottest method (at most `top` series), and
//! HTTP request counters that count exactly the requests this test made.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pcct_tests::http::{start_served, Client};
use pcct_tests::{one_jdk, poll_until, Fixture, Jvm};

/// One sample line of the text exposition: name, labels, value.
#[derive(Debug, Clone)]
struct Series {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Parses the sample lines of a Prometheus text exposition (comments
/// skipped; label values unescaped).
fn parse_exposition(text: &str) -> Vec<Series> {
    let mut all = Vec::new();
    for line in text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let name_end = line.find(['{', ' ']).unwrap_or_else(|| panic!("bad line {line:?}"));
        let name = line[..name_end].to_string();
        let mut labels = BTreeMap::new();
        let mut rest = &line[name_end..];
        if let Some(inner) = rest.strip_prefix('{') {
            let mut chars = inner.char_indices();
            let mut key = String::new();
            let mut end = None;
            while let Some((at, c)) = chars.next() {
                match c {
                    '}' => {
                        end = Some(at + 1);
                        break;
                    }
                    ',' | ' ' => {}
                    '=' => {
                        assert_eq!(chars.next().map(|(_, c)| c), Some('"'), "{line}");
                        let mut value = String::new();
                        loop {
                            match chars.next().unwrap_or_else(|| panic!("unterminated label in {line}")).1 {
                                '"' => break,
                                '\\' => match chars.next().expect("escape").1 {
                                    'n' => value.push('\n'),
                                    other => value.push(other),
                                },
                                other => value.push(other),
                            }
                        }
                        labels.insert(std::mem::take(&mut key), value);
                    }
                    other => key.push(other),
                }
            }
            rest = &inner[end.unwrap_or_else(|| panic!("no closing brace in {line}"))..];
        }
        let value = rest.split_whitespace().next().unwrap_or_else(|| panic!("no value in {line}"));
        let value = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            number => number.parse().unwrap_or_else(|_| panic!("bad value in {line:?}")),
        };
        all.push(Series { name, labels, value });
    }
    all
}

struct Scrape {
    text: String,
    series: Vec<Series>,
}

impl Scrape {
    fn take(client: &Client) -> Scrape {
        let response = client.get("/metrics").expect("GET /metrics");
        assert_eq!(response.status, 200, "{}", response.text());
        let kind = response.header("content-type").unwrap_or_default();
        assert!(kind.starts_with("text/plain") && kind.contains("version=0.0.4"), "content type {kind:?}");
        let text = response.text();
        Scrape { series: parse_exposition(&text), text }
    }

    fn all(&self, name: &str) -> Vec<&Series> {
        self.series.iter().filter(|s| s.name == name).collect()
    }

    /// The value of `name` with exactly `labels`, or 0 when absent.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let wanted: BTreeMap<String, String> = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        self.series.iter().find(|s| s.name == name && s.labels == wanted).map_or(0.0, |s| s.value)
    }
}

/// Runs `promtool check metrics` on `text`; panics with its output unless it passes.
fn promtool_check_metrics(text: &str) -> String {
    let promtool = std::env::var_os("PCCT_PROMTOOL").unwrap_or_else(|| "/usr/bin/promtool".into());
    let mut child = Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {promtool:?} ({e}): install the Debian package prometheus (scripts/install-test-deps does)"
            )
        });
    child.stdin.take().expect("stdin").write_all(text.as_bytes()).expect("write to promtool");
    let output = child.wait_with_output().expect("promtool output");
    let printed = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(
        output.status.success(),
        "promtool check metrics failed ({}):\n{printed}\n--- exposition ---\n{text}",
        output.status
    );
    printed
}

const OUTCOMES: [&str; 7] = ["recorded", "idle", "filtered", "failed", "busy", "lost", "dropped_full"];
const TOP: usize = 5;

one_jdk! {
    fn metrics_pass_promtool_and_name_the_hottest_method(jdk) {
        let fixture = Fixture::new("http-metrics");
        let mut served = start_served(
            Jvm::new(jdk, &fixture, "LiveTarget"),
            &fixture,
            &format!("interval=1ms,mode=cpu,timer=sampler,prefilter=off,top={TOP}"),
        );
        served.jvm.wait_for_stdout_line("ready", Duration::from_secs(30));
        let client = served.client.clone();
        let enough = poll_until(Instant::now() + Duration::from_secs(30), || {
            let hot = client.get_json("/api/hot-methods?limit=1");
            (hot["profile"]["samples"].as_u64().unwrap_or(0) >= 500).then_some(hot)
        })
        .expect("500 samples within 30 s");
        assert_eq!(enough["methods"][0]["method"]["display"], "LiveTarget.alpha", "{enough:#}");

        let before = Scrape::take(&client);
        let printed = promtool_check_metrics(&before.text);
        assert!(printed.trim().is_empty(), "promtool has remarks:\n{printed}");

        // Requests this test makes between two scrapes, and their counts.
        for _ in 0..7 {
            client.get_json("/api/status");
        }
        for _ in 0..3 {
            assert_eq!(client.get("/api/hot-methods?limit=0").expect("GET").status, 400);
        }
        assert_eq!(client.get("/no-such-route").expect("GET").status, 404);
        let status = client.get_json("/api/status");
        let after = Scrape::take(&client);
        promtool_check_metrics(&after.text);
        let delta = |name: &str, labels: &[(&str, &str)]| after.value(name, labels) - before.value(name, labels);
        let requests = "pcct_http_requests_total";
        assert_eq!(delta(requests, &[("route", "/api/status"), ("status", "200")]), 8.0, "{}", after.text);
        assert_eq!(delta(requests, &[("route", "/api/hot-methods"), ("status", "400")]), 3.0);
        assert_eq!(delta(requests, &[("route", "unmatched"), ("status", "404")]), 1.0);
        assert_eq!(delta(requests, &[("route", "/metrics"), ("status", "200")]), 1.0, "the first scrape is counted");
        assert_eq!(delta("pcct_http_request_duration_seconds_count", &[("route", "/api/status")]), 8.0);
        assert!(after.value(requests, &[("route", "/api/hot-methods"), ("status", "200")]) >= 1.0);

        // Samples by outcome: every outcome is exported; the busy thread's
        // samples are recorded and the idle threads' filtered (prefilter
        // off); the counters are at least what /api/status said just before.
        for outcome in OUTCOMES {
            assert!(
                after.series.iter().any(|s| s.name == "pcct_samples_total" && s.labels.get("outcome").map(String::as_str) == Some(outcome)),
                "no pcct_samples_total{{outcome={outcome:?}}}:\n{}", after.text
            );
        }
        let recorded = after.value("pcct_samples_total", &[("outcome", "recorded")]);
        let filtered = after.value("pcct_samples_total", &[("outcome", "filtered")]);
        assert!(recorded >= status["counters"]["samples_recorded"].as_f64().unwrap() && recorded >= 500.0, "recorded {recorded}");
        assert!(filtered >= status["counters"]["samples_filtered"].as_f64().unwrap() && filtered > 0.0, "filtered {filtered}");
        assert!(!after.all("pcct_samples_failed_total").is_empty());
        // Walks by walker: pcct's own walker gives most recorded samples'
        // frames, and reuses marked frames of the busy thread's deep loop.
        let by_pcct = after.value("pcct_walks_total", &[("walker", "pcct")]);
        let others = after.value("pcct_walks_total", &[("walker", "agct")]) + after.value("pcct_walks_total", &[("walker", "partial")]);
        assert!(by_pcct > 10.0 * others, "walks: pcct {by_pcct}, others {others}\n{}", after.text);
        assert!(!after.all("pcct_walker_breaks_total").is_empty());
        let reused = after.value("pcct_walker_frames_total", &[("kind", "reused")]);
        assert!(reused > 0.0 && reused <= after.value("pcct_walker_frames_total", &[("kind", "walked")]));
        assert!(after.value("pcct_sampler_ticks_total", &[]) > 0.0);
        assert_eq!(after.value("pcct_sampling_interval_seconds", &[]), 0.001);
        assert_eq!(after.value("pcct_sampling_running", &[]), 1.0);
        assert!(after.value("pcct_pcct_nodes", &[]) > 1.0);
        // The agent's own heap holds at least its arena's used part, and
        // its peak is at least what it holds.
        let heap = after.value("pcct_agent_heap_bytes", &[]);
        assert!(heap >= after.value("pcct_arena_bytes", &[]), "agent heap {heap}");
        assert!(after.value("pcct_agent_heap_peak_bytes", &[]) >= heap);
        // Every class loaded by then was given method ids (the sweep at
        // start, then ClassPrepare): hundreds in any JVM.
        let classes = after.value("pcct_classes_given_method_ids_total", &[]);
        assert!(classes >= 300.0 && classes >= status["counters"]["classes_given_method_ids"].as_f64().unwrap(), "classes {classes}");

        // The hot-method gauges: at most TOP series each, ranks 1..=n once,
        // rank 1 is the hottest method (as /api/hot-methods says).
        for gauge in ["pcct_hot_method_self_seconds", "pcct_hot_method_self_ratio"] {
            let series = after.all(gauge);
            assert!(!series.is_empty() && series.len() <= TOP, "{gauge}: {} series, top={TOP}", series.len());
            let mut ranks: Vec<usize> = series.iter().map(|s| s.labels["rank"].parse().expect("rank")).collect();
            ranks.sort();
            assert_eq!(ranks, (1..=series.len()).collect::<Vec<_>>(), "{gauge}");
            let first = series.iter().find(|s| s.labels["rank"] == "1").expect("rank 1");
            assert_eq!(first.labels["method"], "LiveTarget.alpha", "{gauge}:\n{}", after.text);
            assert!(series.iter().all(|s| s.value <= first.value), "{gauge}: rank 1 is the largest");
        }
        let ratio = after.value("pcct_hot_method_self_ratio", &[("rank", "1"), ("method", "LiveTarget.alpha")]);
        assert!((0.5..=0.9).contains(&ratio), "alpha is 3/4 of the busy thread's CPU: ratio {ratio}");

        let finished = served.jvm.wait_with_deadline(Duration::from_secs(60));
        finished.assert_success();
    }
}

#[test]
fn the_exposition_parser_reads_labels_and_escapes() {
    let series = parse_exposition(
        "# HELP x y\n# TYPE a counter\na 1\nb{k=\"v\",m=\"q\\\"uo\\\\te\"} 2.5\nc_bucket{le=\"+Inf\"} 3\nd +Inf\n",
    );
    assert_eq!(series.len(), 4);
    assert_eq!(series[1].labels["m"], "q\"uo\\te");
    assert_eq!(series[1].value, 2.5);
    assert_eq!(series[2].labels["le"], "+Inf");
    assert!(series[3].value.is_infinite());
}
