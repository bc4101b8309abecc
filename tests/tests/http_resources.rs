//! Allocations and monitor waits of a live JVM over real HTTP: EventTarget
//! allocates byte[4096] in EventTarget.allocate and waits for
//! EventTarget$Gate's monitor in EventTarget.waitAtGate until its stdin
//! closes. While it runs, every route that counts answers by every
//! resource (`resource=`, and `metric=`, its other name), the sites name
//! the allocated type and the monitor's class under the code with its
//! line, a bad resource is a 400 naming the parameter, and `/metrics`
//! gives the allocation and lock-wait totals and the top allocation site.
//! Paused, no event is recorded (nor dropped); resumed, they come back.

use std::time::{Duration, Instant};

use pcct::Metric;
use pcct_tests::http::{start_served, Client};
use pcct_tests::{assert_no_hs_err, one_jdk, poll_until, Fixture, Jvm};
use serde_json::Value;

const SOON: Duration = Duration::from_secs(30);

/// Every route that counts something, with a query to add the resource to.
const ROUTES: [&str; 12] = [
    "/api/hot-methods?limit=10&",
    "/api/hot-methods?limit=10&by=total&",
    "/api/hot-edges?limit=10&",
    "/api/hot-nodes?limit=10&",
    "/api/sites?limit=10&",
    "/api/tree?max_depth=6&",
    "/api/collapsed?",
    "/flamegraph.svg?",
    "/api/reports/xtree?",
    "/api/reports/xarc?",
    "/api/reports/xprof?",
    "/api/reports/sites?",
];

/// Waits until the sites by `resource` hold one of `class` in `EventTarget.<method>`.
fn site_of(client: &Client, resource: &str, class: &str, method: &str) -> Value {
    let code = format!("EventTarget.{method}");
    poll_until(Instant::now() + SOON, || {
        let answer = client.get_json(&format!("/api/sites?resource={resource}&limit=50"));
        let sites = answer["sites"].as_array()?.clone();
        sites.into_iter().find(|site| site["type"] == class && site["method"]["display"] == code.as_str())
    })
    .unwrap_or_else(|| panic!("no {class} site in {code} within {SOON:?}: {}", client.get_json("/api/status")))
}

one_jdk! {
    fn every_route_answers_by_every_resource(jdk) {
        let fixture = Fixture::new("http-resources");
        let mut served = start_served(Jvm::new(jdk, &fixture, "EventTarget"), &fixture, "interval=5ms,alloc=64k");
        served.jvm.wait_for_stdout_line("ready", SOON);
        let client = &served.client;

        let allocation = site_of(client, "alloc_bytes", "byte[]", "allocate");
        assert!(allocation["at"]["line"].as_u64().is_some(), "the allocation's line: {allocation}");
        assert!(allocation["self"]["alloc_objects"].as_u64().unwrap() > 0, "{allocation}");
        let wait = site_of(client, "lock_wait_ns", "EventTarget$Gate", "waitAtGate");
        assert!(wait["self"]["lock_enters"].as_u64().unwrap() > 0, "{wait}");

        for route in ROUTES {
            for metric in Metric::ALL {
                for parameter in ["resource", "metric"] {
                    let uri = format!("{route}{parameter}={}", metric.name());
                    let answer = client.get(&uri).expect("an answer");
                    assert_eq!(answer.status, 200, "{uri}: {}", answer.text());
                    if answer.header("content-type").is_some_and(|t| t.starts_with("application/json")) {
                        assert_eq!(answer.json()["resource"], metric.name(), "{uri}");
                    }
                }
            }
            let bad = client.get(&format!("{route}resource=bytes")).expect("an answer");
            assert_eq!(bad.status, 400, "{route}: {}", bad.text());
            assert_eq!(bad.json()["parameter"], "resource", "{route}");
        }
        // The allocation view of the flame graph draws the type over its code.
        let svg = client.get("/flamegraph.svg?resource=alloc_bytes").expect("an answer").text();
        assert!(svg.contains("EventTarget.allocate") && svg.contains("byte[]"), "the allocating frames are drawn");
        let collapsed = client.get("/api/collapsed?resource=alloc_bytes").expect("an answer").text();
        assert!(collapsed.lines().any(|line| line.contains("EventTarget.allocate;byte[] ")), "{collapsed}");

        let metrics = client.get("/metrics").expect("an answer").text();
        let value = |prefix: &str| -> f64 {
            let line = metrics.lines().find(|line| line.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}\n{metrics}"));
            line.rsplit(' ').next().unwrap().parse().expect("a number")
        };
        assert!(value("pcct_alloc_bytes_total ") > 0.0 && value("pcct_lock_wait_seconds_total ") > 0.0, "{metrics}");
        assert!(value("pcct_allocations_total{result=\"recorded\"}") > 0.0);
        let top = metrics.lines().find(|line| line.starts_with("pcct_hot_alloc_bytes{rank=\"1\"")).expect("a top site");
        assert!(top.contains("method=\"EventTarget.allocate\"") && top.contains("type=\"byte[]\""), "{top}");

        // Paused, nothing is recorded: the events stop with the samples.
        let answer = client.post_json("/api/sampling", r#"{"running": false}"#);
        assert_eq!(answer["running"], false, "{answer}");
        let events = |status: &Value| {
            ["/counters/allocations_recorded", "/counters/monitor_waits_recorded", "/counters/allocations_dropped"]
                .map(|pointer| status.pointer(pointer).and_then(Value::as_u64).expect("a counter"))
        };
        let ticks = |status: &Value| status.pointer("/counters/ticks").and_then(Value::as_u64).expect("ticks");
        let mut quiet_since = client.get_json("/api/status");
        let quiet = poll_until(Instant::now() + SOON, || {
            let now = client.get_json("/api/status");
            if events(&now) != events(&quiet_since) {
                quiet_since = now;
                return None;
            }
            (ticks(&now) >= ticks(&quiet_since) + 100).then_some(now)
        });
        assert!(quiet.is_some(), "events went on for {SOON:?} after the pause: {}", client.get_json("/api/status"));
        client.post_json("/api/sampling", r#"{"running": true}"#);
        let before = events(&quiet_since)[0];
        let resumed = poll_until(Instant::now() + SOON, || {
            (events(&client.get_json("/api/status"))[0] > before).then_some(())
        });
        assert!(resumed.is_some(), "no allocation recorded after the resume");

        let finished = served.jvm.wait_with_deadline(Duration::from_secs(60));
        finished.assert_success();
        assert!(finished.stdout.lines().any(|line| line.trim() == "done"), "{}", finished.report());
        assert_no_hs_err(fixture.dir());
    }
}
