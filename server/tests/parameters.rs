//! Every parameter error of every route: out of range, not a number, not a
//! choice, unknown name, repeated name, oversized query → 400 with a JSON
//! body `{"error": ..., "parameter": "<name>"}`.

mod support;

use axum::body::Body;
use axum::http::StatusCode;
use support::*;

/// (query, parameter the error must name) for each route.
fn bad_queries(path: &str) -> Vec<(String, &'static str)> {
    let limit = [
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("limit=-1", "limit"),
        ("limit=abc", "limit"),
        ("limit=1.5", "limit"),
        ("limit=", "limit"),
        ("limit=%201", "limit"),
        ("limit=18446744073709551616", "limit"),
        ("limit=1&limit=2", "limit"),
        ("limt=5", "limt"),
        ("LIMIT=5", "LIMIT"),
    ];
    // The resource goes by two names, `resource` and `metric`.
    let metric = [
        ("metric=bogus", "metric"),
        ("metric=", "metric"),
        ("metric=CPU", "metric"),
        ("metric=cpu&metric=wall", "metric"),
        ("resource=bytes", "resource"),
        ("resource=", "resource"),
        ("resource=ALLOC_BYTES", "resource"),
        ("resource=alloc_bytes&resource=lock_wait_ns", "resource"),
        ("resource=cpu&metric=cpu", "resource"),
    ];
    let min_share = [
        ("min_share=-0.1", "min_share"),
        ("min_share=1.01", "min_share"),
        ("min_share=NaN", "min_share"),
        ("min_share=inf", "min_share"),
        ("min_share=-inf", "min_share"),
        ("min_share=half", "min_share"),
        ("min_share=", "min_share"),
        ("min_share=1e400", "min_share"),
        ("min_share=0.1&min_share=0.2", "min_share"),
    ];
    let mut cases: Vec<(&str, &'static str)> = vec![("bogus=1", "bogus"), ("&&unknown", "unknown")];
    match path {
        "/api/hot-methods" => {
            cases.extend(limit);
            cases.extend(metric);
            cases.extend([("by=cum", "by"), ("by=", "by"), ("by=SELF", "by"), ("by=self&by=total", "by")]);
        }
        "/api/hot-edges" | "/api/hot-nodes" | "/api/sites" => {
            cases.extend(limit);
            cases.extend(metric);
        }
        "/api/jit/advice" | "/api/jit/directives" => {
            cases.extend(limit);
            cases.extend(min_share);
        }
        "/api/tree" => {
            cases.extend(min_share);
            cases.extend(metric);
            cases.extend([
                ("max_depth=0", "max_depth"),
                ("max_depth=65", "max_depth"),
                ("max_depth=deep", "max_depth"),
                ("max_depth=1&max_depth=2", "max_depth"),
                ("max_nodes=0", "max_nodes"),
                ("max_nodes=20001", "max_nodes"),
                ("max_nodes=-5", "max_nodes"),
                ("max_nodes=1&max_nodes=1", "max_nodes"),
                ("path=a;;b", "path"),
                ("path=;", "path"),
                ("path=%20", "path"),
                ("path=a&path=b", "path"),
            ]);
        }
        "/api/samples" => {
            cases.extend(limit);
            cases.extend([
                ("since=-1", "since"),
                ("since=abc", "since"),
                ("since=18446744073709551616", "since"),
                ("since=", "since"),
                ("since=0&since=1", "since"),
                ("filtered=yes", "filtered"),
                ("filtered=", "filtered"),
                ("filtered=only&filtered=only", "filtered"),
            ]);
        }
        "/api/reports/xprof" | "/api/reports/xarc" | "/api/reports/xtree" | "/api/reports/sites" => {
            cases.extend(min_share);
            cases.extend(metric);
        }
        "/api/collapsed" => {
            cases.extend(metric);
            cases.extend(min_share);
        }
        "/flamegraph.svg" => {
            cases.extend(metric);
            cases.extend(min_share);
            cases.extend([("title=a&title=b", "title"), ("x=abc", "x"), ("y=-1", "y"), ("x=1&x=2", "x")]);
        }
        _ => cases.extend([("limit=5", "limit"), ("since=0", "since")]),
    }
    let mut owned: Vec<(String, &'static str)> = cases.into_iter().map(|(q, p)| (q.to_string(), p)).collect();
    match path {
        "/api/tree" => {
            owned.push((format!("path={}", vec!["*"; 257].join(";")), "path"));
            owned.push((format!("path={}", "a".repeat(1025)), "path"));
        }
        "/flamegraph.svg" => {
            owned.push((format!("title={}", "t".repeat(201)), "title"));
            owned.push((format!("s={}", "s".repeat(201)), "s"));
        }
        _ => {}
    }
    owned
}

#[tokio::test]
async fn every_parameter_error_of_every_route_is_a_400_naming_the_parameter() {
    let fixture = Fixture::new();
    let mut failures = Vec::new();
    for (verb, path, _) in PARAMETERS {
        let body = if *path == "/api/sampling" { "{}" } else { "" };
        for (query, parameter) in bad_queries(path) {
            let uri = format!("{path}?{query}");
            let answer = fixture.send(method(verb), &uri, &[], Body::from(body)).await;
            let ok = answer.status == StatusCode::BAD_REQUEST
                && answer.content_type().starts_with("application/json")
                && serde_json::from_slice::<serde_json::Value>(&answer.body)
                    .is_ok_and(|json| json["error"].is_string() && json["parameter"] == parameter);
            if !ok {
                failures.push(format!("{verb} {uri} -> {} {}", answer.status, String::from_utf8_lossy(&answer.body)));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // None of the refused requests purged the profile or changed the control.
    assert_eq!(fixture.shared.profile.lock().tree.total().samples, TOTAL_SAMPLES);
    assert!(fixture.shared.control.is_running());
}

#[tokio::test]
async fn valid_bounds_are_accepted() {
    let fixture = Fixture::new();
    let good = [
        "/api/hot-methods?limit=1&by=self",
        "/api/hot-methods?limit=1000&by=total",
        "/api/hot-edges?limit=1000",
        "/api/hot-nodes?limit=1",
        "/api/tree?min_share=0&max_depth=64&max_nodes=20000",
        "/api/tree?min_share=1&max_depth=1&max_nodes=1&path=",
        "/api/tree?min_share=1e-1",
        "/api/samples?since=0&limit=1000&filtered=exclude",
        "/api/samples?since=18446744073709551615",
        "/api/reports/xprof?min_share=0&metric=samples",
        "/api/reports/xarc?min_share=1&metric=wall",
        "/api/reports/xtree?metric=cpu",
        "/api/collapsed?metric=wall",
        "/flamegraph.svg?metric=samples&title=",
    ];
    for uri in good {
        let answer = fixture.get(uri).await;
        assert_eq!(answer.status, StatusCode::OK, "{uri}: {}", String::from_utf8_lossy(&answer.body));
    }
    let title = "t".repeat(200);
    assert_eq!(fixture.get(&format!("/flamegraph.svg?title={title}")).await.status, StatusCode::OK);
    // Every resource, by its name and alias and by either parameter name,
    // on every route that takes one.
    let names = pcct::Metric::ALL.iter().flat_map(|metric| std::iter::once(metric.name()).chain(metric.alias()));
    for name in names {
        for (_, path, parameters) in PARAMETERS.iter().filter(|(_, _, parameters)| parameters.contains(&"resource")) {
            for parameter in ["resource", "metric"] {
                assert!(parameters.contains(&parameter), "{path} takes both names");
                let uri = format!("{path}?{parameter}={name}");
                let answer = fixture.get(&uri).await;
                assert_eq!(answer.status, StatusCode::OK, "{uri}: {}", String::from_utf8_lossy(&answer.body));
            }
        }
    }
    let path = vec!["*"; 256].join(";");
    assert_eq!(fixture.get(&format!("/api/tree?path={path}")).await.status, StatusCode::OK);
}

#[tokio::test]
async fn oversized_and_malformed_queries_are_400_json() {
    let fixture = Fixture::new();
    let long = format!("limit=1&pad={}", "a".repeat(4096));
    for (verb, path, _) in PARAMETERS {
        let body = if *path == "/api/sampling" { "{}" } else { "" };
        let answer = fixture.send(method(verb), &format!("{path}?{long}"), &[], Body::from(body)).await;
        let named = answer.error(StatusCode::BAD_REQUEST);
        assert_eq!(named, None, "{path}: the oversized query is refused as a whole");
        assert!(answer.json()["error"].as_str().unwrap().contains("query"), "{path}: {}", answer.text());
    }
    // Exactly at the limit the query is parsed (and here refused for its unknown name).
    let at_limit = format!("pad={}", "a".repeat(4096 - 4));
    fixture.get(&format!("/api/hot-edges?{at_limit}")).await.bad_parameter("pad");
}
