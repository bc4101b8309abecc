//! `/api/jit/*` and the inlining of `/api/hot-edges`, through `oneshot` on
//! `app(state)`: the synthetic profile (main -> compute -> hash, main ->
//! read) joined with an inline table loaded as the agent loads it, and a
//! recompile request served by a thread standing in for the agent's JIT
//! thread (the real one retransforms classes: `tests/tests/jit_advice.rs`).

mod support;

use axum::http::StatusCode;
use pcct_jit::table::{CodeFacts, MethodFacts, MethodKey};
use pcct_jit::tree::TreeBuilder;
use serde_json::Value;
use support::*;

/// VM ids of the synthetic methods.
const MAIN_ID: u64 = 1;
const COMPUTE_ID: u64 = 2;
const HASH_ID: u64 = 3;

fn facts(name: &str) -> Option<MethodFacts> {
    let key = match name {
        "main" => MethodKey::new("demo.Main", "main", "([Ljava/lang/String;)V"),
        "compute" => MethodKey::new("demo.Work", "compute", "()J"),
        _ => MethodKey::new("demo.Work", "hash", "(I)I"),
    };
    Some(MethodFacts { key, bytecodes: Some(400) })
}

/// main's C2 code inlines compute (at the profile's call site) and calls
/// hash from it: a position at compute's call site, no inlined child.
fn load_main_inlining_compute(fixture: &Fixture) {
    let mut tree = TreeBuilder::new(MAIN_ID, 64);
    tree.add_chain(&[(COMPUTE_ID, COMPUTE_TO_HASH_BCI), (MAIN_ID, MAIN_TO_COMPUTE_BCI)]).unwrap();
    tree.add_chain(&[(MAIN_ID, 2)]).unwrap();
    let names = vec![(MAIN_ID, facts("main")), (COMPUTE_ID, facts("compute")), (HASH_ID, facts("hash"))];
    let code = CodeFacts {
        address: 0x1000,
        method: MAIN_ID,
        level: Some(4),
        osr_bci: Some(2),
        compile_id: Some(7),
        ..CodeFacts::default()
    };
    let mut table = fixture.shared.jit.table.lock();
    table.load(code, tree, names, 0);
    table.mark_complete();
}

fn edge<'a>(edges: &'a Value, caller: &str, callee: &str) -> &'a Value {
    edges
        .as_array()
        .expect("edges")
        .iter()
        .find(|e| e["caller"]["display"] == caller && e["callee"]["display"] == callee)
        .unwrap_or_else(|| panic!("no {caller} -> {callee} in {edges:#}"))
}

#[tokio::test]
async fn without_inline_records_every_edge_is_unknown() {
    let fixture = Fixture::new();
    let edges = fixture.get("/api/hot-edges").await.ok_json()["edges"].clone();
    assert_eq!(edge(&edges, COMPUTE, HASH)["inlined"], "unknown");
    let advice = fixture.get("/api/jit/advice?min_share=0").await.ok_json();
    assert_eq!(advice["jit"]["state"], "off");
    assert_eq!(advice["not_inlined"], serde_json::json!([]));
    assert!(!advice["unknown"].as_array().unwrap().is_empty(), "{advice:#}");
    assert_eq!(fixture.get("/api/jit/directives").await.text(), pcct_jit::directives::render(&[]));
}

#[tokio::test]
async fn hot_edges_say_what_the_code_running_their_caller_inlined() {
    let fixture = Fixture::new();
    load_main_inlining_compute(&fixture);
    let edges = fixture.get("/api/hot-edges").await.ok_json()["edges"].clone();
    let to_compute = edge(&edges, MAIN, COMPUTE);
    assert_eq!(
        (to_compute["inlined"].clone(), to_compute["caller_level"].clone()),
        (Value::Bool(true), Value::from(4))
    );
    let to_hash = edge(&edges, COMPUTE, HASH);
    assert_eq!(to_hash["inlined"], false);
    assert_eq!(to_hash["compiled_in"], MAIN);
    assert_eq!(to_hash["osr_bci"], 2);
    // read's caller main has code, and no position at its call site: the
    // call is not in that code (nothing compiled of it), so not a call there.
    assert_eq!(edge(&edges, MAIN, READ)["inlined"], true);
}

#[tokio::test]
async fn the_advice_ranks_the_call_and_the_directives_name_every_method_that_can_compile_it() {
    let fixture = Fixture::new();
    load_main_inlining_compute(&fixture);
    let advice = fixture.get("/api/jit/advice?min_share=0.1").await.ok_json();
    let first = &advice["not_inlined"][0];
    assert_eq!((first["caller"]["name"].clone(), first["callee"]["name"].clone()), ("compute".into(), "hash".into()));
    assert_eq!(first["action"], "inline");
    assert_eq!(first["callee_bytecodes"], 400);
    assert_eq!(first["call_site"]["line"], COMPUTE_TO_HASH_LINE);
    let share = first["share"].as_f64().unwrap();
    assert!((share - HASH_SAMPLES as f64 / TOTAL_SAMPLES as f64).abs() < 1e-9, "{share}");
    assert!(advice["inlined"].as_array().unwrap().iter().any(|e| e["callee"]["name"] == "compute"));

    let directives: Value = fixture.get("/api/jit/directives?min_share=0.1").await.ok_json();
    assert_eq!(
        directives,
        serde_json::json!([{
            "match": ["demo/Main.main([Ljava/lang/String;)V", "demo/Work.compute()J"],
            "c2": {"inline": ["+demo/Work.hash(I)I"]}
        }])
    );
    // Nothing to advise: one directive that matches no method (HotSpot
    // refuses a file without directives).
    let none: Value = fixture.get("/api/jit/directives?min_share=0.9").await.ok_json();
    assert_eq!(none, serde_json::json!([{"match": [pcct_jit::directives::NOTHING_TO_ASK], "c2": {"inline": []}}]));
}

#[tokio::test]
async fn recompile_requests_go_to_the_jit_thread_and_are_refused_without_one() {
    let unlimited = pcct_server::AppConfig { recompile_every: std::time::Duration::ZERO, ..open_config() };
    let fixture = Fixture::with_config(unlimited);
    // The fixture's stand-in JIT thread answers (the classes in order, once each).
    let body = r#"{"classes": ["demo.Work", "demo.Io", "demo.Work"]}"#;
    let answer = fixture.post("/api/jit/recompile", body).await.ok_json();
    assert_eq!(answer["not_found"], serde_json::json!(["demo.Io", "demo.Work"]));
    assert_eq!(answer["repeated"], false);
    fixture.post("/api/jit/recompile", r#"{"classes": []}"#).await.bad_parameter("classes");
    fixture.post("/api/jit/recompile", r#"{"classes": ["a"], "all": true}"#).await.bad_parameter("all");

    fixture.shared.jit.set_setup(|setup| setup.recompile = "off (recompile=off)".to_string());
    fixture.shared.jit.set_serving(false);
    let answer = fixture.post("/api/jit/recompile", r#"{"classes": ["demo.Work"]}"#).await;
    assert_eq!(answer.error(StatusCode::CONFLICT), None);
    assert_eq!(answer.json()["error"], "recompiling is not available: off (recompile=off)");
}
