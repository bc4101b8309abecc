//! Every read-only route answers with the synthetic profile's real content
//! (handlers called through `oneshot` on `app(state)`, no socket).

mod support;

use axum::http::{header, StatusCode};
use pcct_server::AppConfig;
use serde_json::Value;
use support::*;

fn names(list: &Value, field: &str) -> Vec<String> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|entry| entry[field]["display"].as_str().expect("a display name").to_string())
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[tokio::test]
async fn healthz_answers_ok() {
    let fixture = Fixture::new();
    let answer = fixture.get("/healthz").await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.text(), "ok\n");
}

#[tokio::test]
async fn page_is_self_contained_html_using_the_api() {
    let fixture = Fixture::new();
    let answer = fixture.get("/").await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.content_type().starts_with("text/html"), "{}", answer.content_type());
    let page = answer.text();
    assert!(page.to_ascii_lowercase().contains("<html"));
    for route in ["/api/hot-methods", "/api/hot-edges", "/flamegraph.svg", "/api/jit/advice"] {
        assert!(page.contains(route), "the page does not use {route}");
    }
    for external in ["src=\"http", "href=\"http", "src='http", "href='http", "url(http", "@import"] {
        assert!(!page.contains(external), "the page loads an external resource ({external})");
    }
}

#[tokio::test]
async fn hot_methods_by_self_puts_the_hottest_method_first_with_its_share() {
    let fixture = Fixture::new();
    let body = fixture.get("/api/hot-methods").await.ok_json();
    assert_eq!(body["by"], "self");
    assert_eq!(body["profile"]["samples"], TOTAL_SAMPLES);
    assert_eq!(body["profile"]["cpu_ns"], TOTAL_SAMPLES * MS);
    assert_eq!(body["profile"]["metric"], "cpu_ns");
    let methods = &body["methods"];
    // main and read tie on self weight: ties go by method id (main was interned first).
    assert_eq!(names(methods, "method"), [HASH, COMPUTE, MAIN, READ].map(String::from));
    let hottest = &methods[0];
    assert_eq!(hottest["method"]["class"], "demo.Work");
    assert_eq!(hottest["method"]["name"], "hash");
    assert_eq!(hottest["method"]["signature"], "(I)I");
    assert_eq!(hottest["self"]["samples"], HASH_SAMPLES);
    assert_eq!(hottest["self"]["cpu_ns"], HASH_SAMPLES * MS);
    assert!(close(hottest["self_share"].as_f64().unwrap(), HASH_SAMPLES as f64 / TOTAL_SAMPLES as f64));
    let main = &methods[2];
    assert_eq!(main["total"]["samples"], TOTAL_SAMPLES);
    assert!(close(main["total_share"].as_f64().unwrap(), 1.0));
}

#[tokio::test]
async fn hot_methods_by_total_and_limit() {
    let fixture = Fixture::new();
    let body = fixture.get("/api/hot-methods?by=total&limit=2").await.ok_json();
    assert_eq!(body["by"], "total");
    assert_eq!(names(&body["methods"], "method"), [MAIN, COMPUTE].map(String::from));
    let compute = &body["methods"][1];
    assert_eq!(compute["total"]["cpu_ns"], (HASH_SAMPLES + COMPUTE_SELF_SAMPLES) * MS);
    assert_eq!(compute["self"]["cpu_ns"], COMPUTE_SELF_SAMPLES * MS);
    let one = fixture.get("/api/hot-methods?limit=1").await.ok_json();
    assert_eq!(names(&one["methods"], "method"), [HASH]);
    let all = fixture.get("/api/hot-methods?limit=1000").await.ok_json();
    assert_eq!(all["methods"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn hot_edges_name_caller_call_site_and_callee() {
    let fixture = Fixture::new();
    let body = fixture.get("/api/hot-edges").await.ok_json();
    let edges = body["edges"].as_array().expect("edges");
    assert_eq!(edges.len(), 4, "{edges:?}");
    let weights: Vec<u64> = edges.iter().map(|edge| edge["weight"]["cpu_ns"].as_u64().unwrap()).collect();
    assert!(weights.windows(2).all(|pair| pair[0] >= pair[1]), "not sorted: {weights:?}");
    let find = |caller: &str, callee: &str| {
        edges
            .iter()
            .find(|edge| edge["caller"]["display"] == caller && edge["callee"]["display"] == callee)
            .unwrap_or_else(|| panic!("no edge {caller} -> {callee} in {edges:?}"))
    };
    let call = find(MAIN, COMPUTE);
    assert_eq!(call["call_site"]["bci"], MAIN_TO_COMPUTE_BCI);
    assert_eq!(call["call_site"]["line"], MAIN_TO_COMPUTE_LINE);
    assert_eq!(call["weight"]["samples"], HASH_SAMPLES + COMPUTE_SELF_SAMPLES);
    assert_eq!(call["caller_depth"], 1);
    assert_eq!(call["callee"]["signature"], "()J");
    let hash = find(COMPUTE, HASH);
    assert_eq!(hash["call_site"]["bci"], COMPUTE_TO_HASH_BCI);
    assert_eq!(hash["call_site"]["line"], COMPUTE_TO_HASH_LINE);
    assert_eq!(hash["caller_depth"], 2);
    assert!(close(hash["share"].as_f64().unwrap(), HASH_SAMPLES as f64 / TOTAL_SAMPLES as f64));
    let read = find(MAIN, READ);
    assert_eq!(read["call_site"]["bci"], MAIN_TO_READ_BCI);
    let entry = find("[root]", MAIN);
    assert!(entry["call_site"].is_null(), "the root's calls have no call site: {entry}");
    assert_eq!(entry["caller_depth"], 0);
    assert!(edges.iter().all(|edge| edge["context"] == "whole"), "every stack was walked whole: {edges:?}");
    let limited = fixture.get("/api/hot-edges?limit=2").await.ok_json();
    assert_eq!(limited["edges"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn hot_nodes_give_the_hottest_context_with_its_path() {
    let fixture = Fixture::new();
    let body = fixture.get("/api/hot-nodes?limit=1").await.ok_json();
    let nodes = body["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 1);
    let hottest = &nodes[0];
    assert_eq!(hottest["method"]["display"], HASH);
    assert_eq!(hottest["self"]["cpu_ns"], HASH_SAMPLES * MS);
    assert_eq!(hottest["depth"], 3);
    let path: Vec<&str> = hottest["path"].as_array().unwrap().iter().map(|s| s["method"].as_str().unwrap()).collect();
    assert_eq!(path, [MAIN, COMPUTE, HASH]);
    assert_eq!(hottest["path"][2]["call_site"]["bci"], COMPUTE_TO_HASH_BCI);
    assert_eq!(hottest["path"][1]["call_site"]["line"], MAIN_TO_COMPUTE_LINE);
    let all = fixture.get("/api/hot-nodes").await.ok_json();
    let methods: Vec<&str> =
        all["nodes"].as_array().unwrap().iter().map(|n| n["method"]["display"].as_str().unwrap()).collect();
    assert_eq!(methods[0], HASH);
    assert_eq!(methods[1], COMPUTE);
    assert_eq!(methods.len(), 4, "{methods:?}");
}

fn children(node: &Value) -> Vec<&str> {
    node["children"].as_array().expect("children").iter().map(|child| child["method"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn tree_from_the_root_and_from_a_path() {
    let fixture = Fixture::new();
    let root = fixture.get("/api/tree").await.ok_json();
    assert_eq!(root["matches"], 1);
    assert_eq!(root["subtrees"][0]["method"], "[root]");
    assert_eq!(children(&root["subtrees"][0]), [MAIN]);

    let answer = fixture.get(&format!("/api/tree?path={MAIN}")).await.ok_json();
    assert_eq!(answer["path"], serde_json::json!([MAIN]));
    assert_eq!(answer["matches"], 1);
    let main = &answer["subtrees"][0];
    assert_eq!(main["method"], MAIN);
    assert_eq!(main["cum"]["cpu_ns"], TOTAL_SAMPLES * MS);
    assert_eq!(main["self"]["cpu_ns"], MAIN_SELF_SAMPLES * MS);
    assert!(close(main["cum_share"].as_f64().unwrap(), 1.0));
    assert_eq!(children(main), [COMPUTE, READ], "children ordered by cum");
    let compute = &main["children"][0];
    assert_eq!(compute["cum"]["cpu_ns"], (HASH_SAMPLES + COMPUTE_SELF_SAMPLES) * MS);
    assert_eq!(compute["call_site"]["bci"], MAIN_TO_COMPUTE_BCI);
    assert_eq!(children(compute), [HASH]);

    let deep = fixture.get(&format!("/api/tree?path={MAIN};{COMPUTE};{HASH}")).await.ok_json();
    assert_eq!(deep["matches"], 1);
    assert_eq!(deep["subtrees"][0]["self"]["samples"], HASH_SAMPLES);
    let wildcard = fixture.get(&format!("/api/tree?path=*;{}", encode(COMPUTE))).await.ok_json();
    assert_eq!(wildcard["matches"], 1);
    let missing = fixture.get("/api/tree?path=demo.Nope.nope").await.ok_json();
    assert_eq!(missing["matches"], 0);
    assert_eq!(missing["subtrees"], serde_json::json!([]));
}

#[tokio::test]
async fn tree_prunes_by_min_share_max_depth_and_max_nodes() {
    let fixture = Fixture::new();
    let share = fixture.get(&format!("/api/tree?path={MAIN}&min_share=0.5")).await.ok_json();
    let main = &share["subtrees"][0];
    assert_eq!(children(main), [COMPUTE], "read (10%) is under min_share");
    assert_eq!(main["pruned_children"], 1);
    assert_eq!(children(&main["children"][0]), [HASH], "hash (60%) is over min_share");

    let depth = fixture.get(&format!("/api/tree?path={MAIN}&max_depth=1&min_share=0")).await.ok_json();
    let main = &depth["subtrees"][0];
    assert_eq!(children(main), [COMPUTE, READ]);
    assert_eq!(children(&main["children"][0]), Vec::<&str>::new());
    assert_eq!(main["children"][0]["pruned_children"], 1);

    let nodes = fixture.get(&format!("/api/tree?path={MAIN}&max_nodes=2&min_share=0")).await.ok_json();
    let main = &nodes["subtrees"][0];
    assert_eq!(children(main), [COMPUTE]);
    assert_eq!(main["pruned_children"], 1);
    assert_eq!(main["children"][0]["pruned_children"], 1);
    let one = fixture.get(&format!("/api/tree?path={MAIN}&max_nodes=1")).await.ok_json();
    assert_eq!(children(&one["subtrees"][0]), Vec::<&str>::new());
}

#[tokio::test]
async fn status_reports_options_counters_and_profile() {
    let config = pcct_server::AppConfig {
        settings: serde_json::json!({"interval": "10ms", "port": 0}),
        ..pcct_server::AppConfig::default()
    };
    let fixture = Fixture::with_config(config);
    {
        let mut vm = fixture.shared.vm.lock();
        vm.jvm_name = "Test VM".to_string();
        vm.jvm_version = "17.0.99".to_string();
        vm.pid = 4242;
    }
    fixture.state.shared.disable("signal taken".to_string());
    let body = fixture.get("/api/status").await.ok_json();
    assert_eq!(body["agent"], "pcct");
    assert_eq!(body["jvm_name"], "Test VM");
    assert_eq!(body["jvm_version"], "17.0.99");
    assert_eq!(body["pid"], 4242);
    assert!(body["uptime_s"].as_f64().unwrap() >= 0.0);
    assert_eq!(body["settings"]["interval"], "10ms");
    assert_eq!(body["sampling"]["running"], true);
    assert_eq!(body["sampling"]["mode"], "cpu");
    assert_eq!(body["sampling"]["interval_ns"], 10 * MS);
    assert_eq!(body["sampling"]["disabled"], "signal taken");
    assert_eq!(body["profile"]["samples"], TOTAL_SAMPLES);
    assert_eq!(body["profile"]["nodes"], 8, "root, main, compute, hash, read, and three event sites");
    assert_eq!(body["event_contexts"], 3);
    assert_eq!(body["profile"]["alloc_bytes"], BYTE_ARRAY_BYTES + OBJECT_BYTES);
    assert_eq!(body["profile"]["lock_wait_ns"], LOCK_WAIT_NS);
    assert_eq!(body["methods_named"], 4);
    assert_eq!(body["counters"]["samples_recorded"], COUNTED_RECORDED);
    assert_eq!(body["counters"]["samples_filtered"], COUNTED_FILTERED);
    assert!(body["arena_bytes_used"].as_u64().unwrap() > 0);
    assert!(body["arena_bytes_limit"].as_u64().unwrap() >= body["arena_bytes_used"].as_u64().unwrap());
}

#[tokio::test]
async fn reports_name_the_methods() {
    let fixture = Fixture::new();
    for kind in ["xprof", "xarc", "xtree"] {
        let answer = fixture.get(&format!("/api/reports/{kind}")).await;
        assert_eq!(answer.status, StatusCode::OK, "{kind}: {}", answer.text());
        assert!(answer.content_type().starts_with("text/plain"), "{kind}: {}", answer.content_type());
        let report = answer.text();
        for name in [HASH, COMPUTE, MAIN] {
            assert!(report.contains(name), "{kind} does not name {name}:\n{report}");
        }
        let by_samples = fixture.get(&format!("/api/reports/{kind}?metric=samples&min_share=0")).await;
        assert_eq!(by_samples.status, StatusCode::OK);
        assert!(by_samples.text().contains(READ), "{kind} with min_share=0 leaves out {READ}");
    }
}

#[tokio::test]
async fn collapsed_stacks_are_exact() {
    let fixture = Fixture::new();
    let answer = fixture.get("/api/collapsed?metric=samples").await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.content_type().starts_with("text/plain"));
    let mut lines: Vec<String> = answer.text().lines().map(String::from).collect();
    lines.sort();
    let mut expected = vec![
        format!("{MAIN} {MAIN_SELF_SAMPLES}"),
        format!("{MAIN};{COMPUTE} {COMPUTE_SELF_SAMPLES}"),
        format!("{MAIN};{COMPUTE};{HASH} {HASH_SAMPLES}"),
        format!("{MAIN};{READ} {READ_SAMPLES}"),
    ];
    expected.sort();
    assert_eq!(lines, expected);
    let cpu = fixture.get("/api/collapsed").await.text();
    assert!(cpu.contains(&format!("{MAIN};{COMPUTE};{HASH} {}", HASH_SAMPLES * MS)), "{cpu}");
}

#[tokio::test]
async fn collapsed_stacks_are_pruned_by_min_share() {
    let fixture = Fixture::new();
    // READ has 1 of TOTAL_SAMPLES samples: a share just above it prunes READ only.
    let share = (READ_SAMPLES as f64 + 0.5) / TOTAL_SAMPLES as f64;
    let answer = fixture.get(&format!("/api/collapsed?metric=samples&min_share={share}")).await;
    assert_eq!(answer.status, StatusCode::OK);
    let text = answer.text();
    assert!(!text.contains(READ), "{READ} is below min_share: {text}");
    assert!(text.contains(&format!("{MAIN};{COMPUTE};{HASH} {HASH_SAMPLES}")), "{text}");
}

#[tokio::test]
async fn text_answers_beyond_the_size_limit_are_refused_naming_min_share() {
    let fixture = Fixture::with_config(AppConfig { text_budget: 110, ..AppConfig::default() });
    for route in ["/api/collapsed?metric=samples", "/flamegraph.svg?metric=samples", "/api/reports/xtree?min_share=0"] {
        let answer = fixture.get(route).await;
        assert_eq!(answer.error(StatusCode::PAYLOAD_TOO_LARGE).as_deref(), Some("min_share"), "{route}");
    }
    // Pruned to the one heavy stack, the collapsed text fits.
    let share = (HASH_SAMPLES as f64 - 0.5) / TOTAL_SAMPLES as f64;
    let answer = fixture.get(&format!("/api/collapsed?metric=samples&min_share={share}")).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert!(answer.text().contains(HASH));
}

#[tokio::test]
async fn json_answers_beyond_the_size_limit_are_refused_naming_what_makes_them_smaller() {
    // (route, the parameter that makes its answer smaller, a smaller answer)
    let routes = [
        ("/api/hot-methods", "limit", "/api/hot-methods?limit=1"),
        ("/api/hot-edges", "limit", "/api/hot-edges?limit=1"),
        ("/api/hot-nodes", "limit", "/api/hot-nodes?limit=1"),
        ("/api/tree?min_share=0", "max_nodes", "/api/tree?min_share=0&max_nodes=1"),
        ("/api/samples", "limit", "/api/samples?limit=1"),
    ];
    for (route, parameter, smaller) in routes {
        // A budget the smaller answer fits exactly.
        let budget = Fixture::new().get(smaller).await.ok_json().to_string().len();
        let fixture = Fixture::with_config(AppConfig { json_budget: budget, ..AppConfig::default() });
        let answer = fixture.get(route).await;
        assert_eq!(answer.error(StatusCode::PAYLOAD_TOO_LARGE).as_deref(), Some(parameter), "{route}");
        fixture.get(smaller).await.ok_json();
    }
    let fixture = Fixture::with_config(AppConfig { json_budget: 100, ..AppConfig::default() });
    assert_eq!(fixture.get("/api/status").await.error(StatusCode::PAYLOAD_TOO_LARGE), None);
}

#[tokio::test]
async fn flame_graph_is_svg_naming_the_hottest_method() {
    let fixture = Fixture::new();
    let answer = fixture.get("/flamegraph.svg?title=Demo%20profile&metric=samples").await;
    assert_eq!(answer.status, StatusCode::OK, "{}", String::from_utf8_lossy(&answer.body));
    assert_eq!(answer.headers[header::CONTENT_TYPE], "image/svg+xml");
    let svg = answer.text();
    assert!(svg.contains("<svg"), "not an SVG");
    assert!(svg.contains(HASH), "the flame graph does not name {HASH}");
    assert!(svg.contains("Demo profile"), "the title is missing");
}

#[tokio::test]
async fn flame_graph_title_is_escaped() {
    let fixture = Fixture::new();
    let title = encode("</text><image href=\"x\" onerror=\"alert(1)\"/>");
    let answer = fixture.get(&format!("/flamegraph.svg?title={title}")).await;
    assert_eq!(answer.status, StatusCode::OK);
    let svg = answer.text();
    assert!(!svg.contains("<image href"), "the title is inserted into the SVG unescaped");
}

#[tokio::test]
async fn empty_profile_still_draws_a_flame_graph() {
    let fixture = Fixture::new();
    fixture.shared.purge();
    let answer = fixture.get("/flamegraph.svg").await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.text().contains("<svg"));
}

#[tokio::test]
async fn unknown_routes_are_404_json() {
    let fixture = Fixture::new();
    for uri in ["/nope", "/api", "/api/hot-method", "/api/reports/nope", "/api/reports/"] {
        let answer = fixture.get(uri).await;
        assert_eq!(answer.error(StatusCode::NOT_FOUND), None, "{uri}");
    }
}

#[tokio::test]
async fn wrong_methods_are_405_json() {
    let fixture = Fixture::new();
    let cases = [
        ("POST", "/api/status"),
        ("POST", "/api/hot-methods"),
        ("DELETE", "/healthz"),
        ("PUT", "/metrics"),
        ("GET", "/api/purge"),
        ("GET", "/api/sampling"),
        ("POST", "/flamegraph.svg"),
        ("POST", "/api/reports/xprof"),
    ];
    for (verb, uri) in cases {
        let answer = fixture.send(method(verb), uri, &[], axum::body::Body::empty()).await;
        assert_eq!(answer.error(StatusCode::METHOD_NOT_ALLOWED), None, "{verb} {uri}");
    }
    // Nothing was purged by the refused requests.
    assert_eq!(fixture.shared.profile.lock().tree.total().samples, TOTAL_SAMPLES);
}
