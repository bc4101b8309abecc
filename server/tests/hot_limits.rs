//! Hot-list answers stay bounded and cheap under the profile lock: hot
//! nodes' paths have a budget of steps (413 naming `limit` beyond it), and
//! a `limit` beyond what a full hot list holds (`hot=` below `limit`) is
//! answered from a copy of the profile, as a heavy job, not by sorting
//! every node under the lock.

mod support;

use axum::http::StatusCode;
use pcct::{NodeId, TreeConfig};
use pcct_server::routes::hot::MAX_HOT_NODE_STEPS;
use pcct_server::AppConfig;
use serde_json::Value;
use support::*;

/// Node ids of a hot-nodes answer, or callee nodes of a hot-edges answer.
fn ids(list: &Value, field: &str) -> Vec<u32> {
    list.as_array().expect("a list").iter().map(|entry| entry[field].as_u64().expect("an id") as u32).collect()
}

fn raw(nodes: Vec<NodeId>) -> Vec<u32> {
    nodes.into_iter().map(NodeId::raw).collect()
}

async fn heavy_jobs_started(fixture: &Fixture) -> u64 {
    fixture.get("/api/status").await.ok_json()["heavy_jobs"]["started"].as_u64().expect("a count")
}

#[tokio::test]
async fn hot_node_paths_beyond_the_step_budget_are_413_naming_limit() {
    // 1000 contexts 128 frames deep: their paths hold 128k steps.
    let depth = 128;
    let fixture = Fixture::with_tree(AppConfig::default(), arena_for(1000 * depth));
    fixture.add_stacks(1000, depth);
    assert!(1000 * depth > MAX_HOT_NODE_STEPS);
    let answer = fixture.get("/api/hot-nodes?limit=1000").await;
    assert_eq!(answer.error(StatusCode::PAYLOAD_TOO_LARGE).as_deref(), Some("limit"));
    assert!(answer.json()["error"].as_str().unwrap().contains("smaller limit"), "{}", answer.text());
    let fewer = fixture.get("/api/hot-nodes?limit=100").await.ok_json();
    let nodes = fewer["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 100);
    assert_eq!(nodes[0]["method"]["display"], HASH, "the fixture's heaviest context first");
    // Beside the fixture's four contexts, all are the deep ones, with whole paths.
    let deep = nodes.iter().filter(|node| node["path"].as_array().unwrap().len() == depth).count();
    assert!(deep >= 96, "{deep} of 100 contexts have {depth} steps");
}

#[tokio::test]
async fn a_limit_beyond_a_full_hot_list_is_answered_from_a_copy() {
    // hot=16, and 34 contexts with weight: the list is full.
    let tree = TreeConfig { hot_list_capacity: 16, ..arena_for(100) };
    let fixture = Fixture::with_tree(AppConfig::default(), tree);
    fixture.add_stacks(30, 2);
    // What the tree answers: from its full lists, and by sorting every node.
    let (listed_nodes, listed_edges, top_nodes, top_edges) = {
        let tree = &fixture.shared.profile.lock().tree;
        let listed = (tree.listed_top_nodes(16).expect("covered"), tree.listed_top_edges(16).expect("covered"));
        assert_eq!((tree.listed_top_nodes(20), tree.listed_top_edges(20)), (None, None), "the lists are full");
        (raw(listed.0), raw(listed.1), raw(tree.top_nodes(20)), raw(tree.top_edges(20)))
    };
    // Hot edges are joined with the inline table in a heavy job of their own either way.
    let routes = [
        ("/api/hot-nodes", "node", "nodes", listed_nodes, top_nodes, 0),
        ("/api/hot-edges", "callee_node", "edges", listed_edges, top_edges, 1),
    ];
    for (route, field, list, listed, sorted, joins) in routes {
        let started = heavy_jobs_started(&fixture).await;
        let covered = fixture.get(&format!("{route}?limit=16")).await.ok_json();
        assert_eq!(ids(&covered[list], field), listed, "{route}?limit=16");
        assert_eq!(heavy_jobs_started(&fixture).await, started + joins, "{route}?limit=16 is read from the hot list");
        let beyond = fixture.get(&format!("{route}?limit=20")).await.ok_json();
        assert_eq!(ids(&beyond[list], field), sorted, "{route}?limit=20");
        assert_eq!(heavy_jobs_started(&fixture).await, started + 2 * joins + 1, "{route}?limit=20 sorts a copy");
    }
}
