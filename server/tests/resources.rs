//! Every route that counts something counts any resource: the synthetic
//! profile's allocations (byte[] in compute, 75 % of the bytes; an Object
//! in read, 25 %) and monitor waits (a java.lang.Object monitor in main)
//! come back by `resource=` (or `metric=`) on hot methods, edges, nodes,
//! sites, the tree, collapsed stacks, the flame graph, the reports and the
//! metrics, with exact weights and shares.

mod support;

use axum::http::StatusCode;
use serde_json::Value;
use support::*;

const ALLOC_TOTAL: u64 = BYTE_ARRAY_BYTES + OBJECT_BYTES;

fn close(a: &Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-9)
}

fn displays(list: &Value, field: &str) -> Vec<String> {
    list.as_array().expect("a list").iter().map(|e| e[field]["display"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn hot_methods_by_an_event_resource_rank_the_classes_and_their_code() {
    let fixture = Fixture::new();
    let body = fixture.get("/api/hot-methods?resource=alloc_bytes").await.ok_json();
    assert_eq!(body["resource"], "alloc_bytes");
    assert_eq!(body["profile"]["alloc_bytes"], ALLOC_TOTAL);
    let methods = &body["methods"];
    assert_eq!(methods[0]["method"]["display"], BYTE_ARRAY);
    assert_eq!(methods[0]["method"]["kind"], "type");
    assert!(close(&methods[0]["self_share"], 0.75), "{methods}");
    assert_eq!(methods[1]["method"]["display"], OBJECT);
    assert!(close(&methods[1]["self_share"], 0.25));
    // Then the code on the allocating paths (no self allocation of their own).
    assert_eq!(displays(methods, "method")[2..], [MAIN, COMPUTE, READ].map(String::from));
    // By total, the callers come first; methods without allocations are left out.
    let total = fixture.get("/api/hot-methods?by=total&metric=alloc_bytes").await.ok_json();
    assert_eq!(displays(&total["methods"], "method")[..2], [MAIN, COMPUTE].map(String::from));
    assert!(close(&total["methods"][1]["total_share"], 0.75));
    assert!(!displays(&total["methods"], "method").contains(&HASH.to_string()), "hash allocates nothing");
    let locks = fixture.get("/api/hot-methods?resource=lock_wait_ns").await.ok_json();
    assert_eq!(locks["methods"][0]["method"]["display"], OBJECT);
    assert_eq!(locks["methods"][0]["self"]["lock_enters"], LOCK_WAITS);
    assert!(close(&locks["methods"][0]["self_share"], 1.0));
}

#[tokio::test]
async fn sites_rank_class_and_code_pairs_with_shares_lines_and_accum() {
    let fixture = Fixture::new();
    let body = fixture.get("/api/sites").await.ok_json();
    assert_eq!(body["resource"], "alloc_bytes", "allocated bytes by default");
    let sites = body["sites"].as_array().expect("sites");
    assert_eq!(sites.len(), 2, "{body}");
    let first = &sites[0];
    assert_eq!((first["rank"].as_u64(), first["type"].as_str()), (Some(1), Some(BYTE_ARRAY)));
    assert_eq!(first["method"]["display"], COMPUTE);
    assert_eq!(
        (first["at"]["bci"].as_i64(), first["at"]["line"].as_u64()),
        (Some(ALLOC_BCI as i64), Some(ALLOC_LINE as u64))
    );
    let context: Vec<&str> =
        first["context"].as_array().unwrap().iter().map(|s| s["method"].as_str().unwrap()).collect();
    assert_eq!(context, [MAIN, COMPUTE]);
    assert_eq!(first["self"]["alloc_bytes"], BYTE_ARRAY_BYTES);
    assert!(close(&first["share"], 0.75) && close(&first["accumulated"], 0.75));
    assert_eq!((sites[1]["type"].as_str(), sites[1]["method"]["display"].as_str()), (Some(OBJECT), Some(READ)));
    assert!(close(&sites[1]["share"], 0.25) && close(&sites[1]["accumulated"], 1.0));

    let locks = fixture.get("/api/sites?resource=lock_wait_ns").await.ok_json();
    let site = &locks["sites"][0];
    assert_eq!((site["type"].as_str(), site["method"]["display"].as_str()), (Some(OBJECT), Some(MAIN)));
    assert_eq!(
        (site["at"]["bci"].as_i64(), site["self"]["lock_enters"].as_u64()),
        (Some(LOCK_BCI as i64), Some(LOCK_WAITS))
    );
    assert_eq!(locks["sites"].as_array().unwrap().len(), 1);

    // For time, a site is a context alone: HPROF's CPU SAMPLES.
    let cpu = fixture.get("/api/sites?resource=cpu&limit=1").await.ok_json();
    let site = &cpu["sites"][0];
    assert!(site["type"].is_null() && site["at"].is_null(), "{cpu}");
    assert_eq!(site["method"]["display"], HASH);
    assert!(close(&site["share"], HASH_SAMPLES as f64 / TOTAL_SAMPLES as f64));
}

#[tokio::test]
async fn hot_edges_and_nodes_by_an_event_resource() {
    let fixture = Fixture::new();
    // An edge's allocation weight is what flowed through the call.
    let edges = fixture.get("/api/hot-edges?resource=alloc_bytes&limit=3").await.ok_json();
    assert_eq!(edges["resource"], "alloc_bytes");
    let edges = edges["edges"].as_array().unwrap();
    assert_eq!(edges[0]["callee"]["display"], MAIN);
    assert_eq!(edges[0]["weight"]["alloc_bytes"], ALLOC_TOTAL);
    assert!(close(&edges[0]["share"], 1.0));
    assert_eq!(edges[1]["callee"]["display"], COMPUTE);
    assert!(close(&edges[1]["share"], 0.75));
    // Their time weights are the samples' as ever.
    assert_eq!(edges[1]["weight"]["samples"], HASH_SAMPLES + COMPUTE_SELF_SAMPLES);

    let nodes = fixture.get("/api/hot-nodes?resource=alloc_objects").await.ok_json();
    let first = &nodes["nodes"][0];
    assert_eq!(first["method"]["display"], OBJECT, "6,400 small objects outnumber 900 arrays: {nodes}");
    let objects = 6400.0 / (6400.0 + 900.0);
    assert!(close(&first["share"], objects));
    let path: Vec<&str> = first["path"].as_array().unwrap().iter().map(|s| s["method"].as_str().unwrap()).collect();
    assert_eq!(path, [MAIN, READ, OBJECT]);
}

#[tokio::test]
async fn the_tree_orders_and_prunes_by_the_resource() {
    let fixture = Fixture::new();
    let body = fixture.get(&format!("/api/tree?path={MAIN}&resource=alloc_bytes&min_share=0")).await.ok_json();
    assert_eq!(body["resource"], "alloc_bytes");
    let main = &body["subtrees"][0];
    let children: Vec<&str> =
        main["children"].as_array().unwrap().iter().map(|c| c["method"].as_str().unwrap()).collect();
    assert_eq!(children, [COMPUTE, READ], "by cum of allocated bytes; the monitor's site holds none");
    assert_eq!(main["pruned_children"], 0, "children without allocations are not pruned, just not in this view");
    let compute = &main["children"][0];
    assert_eq!(compute["children"][0]["method"], BYTE_ARRAY);
    assert_eq!(compute["cum"]["alloc_bytes"], BYTE_ARRAY_BYTES);
    assert_eq!(compute["edge"]["alloc_bytes"], BYTE_ARRAY_BYTES, "an edge carries its context's cum");
    assert!(close(&compute["cum_share"], 0.75));
    let half = fixture.get(&format!("/api/tree?path={MAIN}&metric=alloc_bytes&min_share=0.5")).await.ok_json();
    assert_eq!(half["subtrees"][0]["pruned_children"], 1, "read's 25 % is under min_share");
}

#[tokio::test]
async fn collapsed_stacks_flame_graph_and_reports_by_resource() {
    let fixture = Fixture::new();
    let mut lines: Vec<String> =
        fixture.get("/api/collapsed?resource=alloc_bytes").await.text().lines().map(String::from).collect();
    lines.sort();
    let mut expected =
        [format!("{MAIN};{COMPUTE};{BYTE_ARRAY} {BYTE_ARRAY_BYTES}"), format!("{MAIN};{READ};{OBJECT} {OBJECT_BYTES}")];
    expected.sort();
    assert_eq!(lines, expected);
    let locks = fixture.get("/api/collapsed?metric=lock_enters").await.text();
    assert_eq!(locks, format!("{MAIN};{OBJECT} {LOCK_WAITS}\n"));

    let svg = fixture.get("/flamegraph.svg?resource=lock_wait_ns").await;
    assert_eq!(svg.status, StatusCode::OK);
    let svg = svg.text();
    assert!(svg.contains(OBJECT) && svg.contains("lock wait ns"), "the class and the unit are drawn");

    let sites = fixture.get("/api/reports/sites?resource=alloc_bytes").await.text();
    let mut rows = sites.lines().skip(2);
    let first = rows.next().expect("a row");
    assert!(first.contains("75.00%") && first.contains(BYTE_ARRAY) && first.contains("line 44"), "{sites}");
    assert!(rows.next().is_some_and(|row| row.contains("100.00%") && row.contains(OBJECT)), "{sites}");
    for kind in ["xtree", "xarc", "xprof", "sites"] {
        for metric in pcct::Metric::ALL {
            let text = fixture.get(&format!("/api/reports/{kind}?resource={}&min_share=0", metric.name())).await;
            assert_eq!(text.status, StatusCode::OK);
            assert!(text.text().lines().next().unwrap().contains(metric.name()), "{kind} by {metric:?}");
        }
    }
}

#[tokio::test]
async fn metrics_give_allocation_and_lock_totals_and_the_top_sites() {
    let fixture = Fixture::new();
    {
        let counters = &fixture.shared.counters;
        counters.alloc_bytes_recorded.store(ALLOC_TOTAL, std::sync::atomic::Ordering::Relaxed);
        counters.lock_wait_ns_recorded.store(LOCK_WAIT_NS, std::sync::atomic::Ordering::Relaxed);
    }
    let text = fixture.get("/metrics").await.text();
    let line = |prefix: &str| {
        text.lines().find(|line| line.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}\n{text}")).to_string()
    };
    assert!(line("pcct_alloc_bytes_total ").ends_with(&format!(" {ALLOC_TOTAL}")));
    assert!(line("pcct_lock_wait_seconds_total ").ends_with(" 0.004"));
    let top = line("pcct_hot_alloc_bytes{rank=\"1\"");
    assert!(
        top.contains("method=\"demo.Work.compute\"")
            && top.contains(&format!("type=\"{BYTE_ARRAY}\""))
            && top.ends_with(&format!(" {BYTE_ARRAY_BYTES}")),
        "{top}"
    );
    let lock = line("pcct_hot_lock_wait_seconds{");
    assert!(lock.contains("method=\"demo.Main.main\"") && lock.contains(&format!("monitor=\"{OBJECT}\"")), "{lock}");
    assert!(lock.ends_with(" 0.004"), "{lock}");
}
