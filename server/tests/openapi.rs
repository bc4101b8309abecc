//! The API's reference (`pcct_server::openapi`) against the server itself:
//! - every route of the router (`server/src/lib.rs`) is documented, and
//!   nothing else is;
//! - every documented query parameter is accepted at its bounds and refused
//!   past them, by name, and a parameter the reference does not name is
//!   refused on every route;
//! - `GET /api/openapi.json` answers the document, and the document
//!   validates as OpenAPI 3 with `openapi-spec-validator` (PyPI, installed
//!   by `scripts/install-test-deps`).

mod support;

use std::collections::BTreeSet;
use std::process::Command;

use axum::http::StatusCode;
use pcct_server::openapi::{self, Kind, Route, ROUTES};
use support::*;

/// (method, path) pairs of the router, read from its source.
fn router_routes() -> BTreeSet<(String, String)> {
    let source = include_str!("../src/lib.rs");
    let mut routes = BTreeSet::new();
    for line in source.lines().map(str::trim).filter(|line| line.starts_with(".route(\"")) {
        let path = line[".route(\"".len()..].split('"').next().expect("a path").to_string();
        for method in ["get", "post", "put", "delete", "patch"] {
            if line.contains(&format!("{method}(routes::")) || line.contains(&format!(".{method}(routes::")) {
                routes.insert((method.to_string(), path.clone()));
            }
        }
    }
    routes
}

#[test]
fn the_reference_holds_every_route_of_the_router_and_no_other() {
    let router = router_routes();
    assert!(router.len() > 20, "the router's routes were not read: {router:?}");
    let documented: BTreeSet<(String, String)> =
        ROUTES.iter().map(|route| (route.method.to_string(), route.path.to_string())).collect();
    let missing: Vec<_> = router.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&router).collect();
    assert!(missing.is_empty() && extra.is_empty(), "not documented: {missing:?}; documented, not routed: {extra:?}");
}

/// A request path for `route` (path parameters filled with a valid value).
fn concrete(route: &Route) -> String {
    route.path.replace("{kind}", "xtree").replace("{page}", "readme")
}

/// Asks `route` with the query `query` (a valid JSON body for a POST, and
/// its required parameters when `query` does not give them).
async fn ask(fixture: &Fixture, route: &Route, query: &str) -> Answer {
    let required: Vec<String> = route
        .params
        .iter()
        .filter(|param| matches!(param.kind, Kind::Method { .. }) && !query.starts_with(&format!("{}=", param.name)))
        .map(|param| format!("{}=java.util.HashMap.get&", param.name))
        .collect();
    let uri = format!("{}?{}{query}", concrete(route), required.concat());
    let body = match route.path {
        "/api/jit/recompile" => r#"{"classes": ["demo.Work"]}"#,
        "/api/sampling" => "{}",
        "/login" => "",
        _ => "",
    };
    fixture.send(method(&route.method.to_uppercase()), &uri, &[], body.to_string().into()).await
}

/// Values of `kind` the server must accept, and values it must refuse.
fn probes(kind: Kind) -> (Vec<String>, Vec<String>) {
    match kind {
        Kind::Integer { min, max, .. } => {
            let mut refused = vec!["x".to_string(), "-1".to_string()];
            if max < u64::MAX {
                refused.push((max + 1).to_string());
            }
            if min > 0 {
                refused.push((min - 1).to_string());
            }
            (vec![min.to_string(), max.to_string()], refused)
        }
        Kind::Number { min, max, .. } => (
            vec![min.to_string(), max.to_string()],
            vec!["x".to_string(), format!("{}", max * 2.0 + 1.0), "NaN".into()],
        ),
        Kind::Choice { values, .. } => (values.iter().map(|v| v.to_string()).collect(), vec!["no-such-choice".into()]),
        Kind::Resource => {
            (openapi::resource_names().iter().map(|v| v.to_string()).collect(), vec!["no-such-resource".into()])
        }
        Kind::Text { max_chars } => (vec!["a".to_string()], vec!["a".repeat(max_chars + 1)]),
        Kind::Method { max_chars } => (
            vec!["java.util.HashMap.get".into(), "java.util.HashMap.get(Ljava/lang/Object;)Ljava/lang/Object;".into()],
            vec!["a".to_string(), "a".repeat(max_chars + 1)],
        ),
    }
}

#[tokio::test]
async fn every_documented_parameter_is_taken_at_its_bounds_and_refused_past_them() {
    let fixture = Fixture::new();
    for route in ROUTES {
        // A whole window of the pprof route at its bound would take minutes.
        let waits = route.path == "/debug/pprof/profile";
        for param in route.params {
            let (accepted, refused) = probes(param.kind);
            for value in accepted.iter().filter(|_| !waits) {
                let answer = ask(&fixture, route, &format!("{}={}", param.name, encode(value))).await;
                assert_ne!(
                    answer.status,
                    StatusCode::BAD_REQUEST,
                    "{} {}={value}: {}",
                    route.path,
                    param.name,
                    answer.text()
                );
            }
            for value in &refused {
                let answer = ask(&fixture, route, &format!("{}={}", param.name, encode(value))).await;
                let named = answer.error(StatusCode::BAD_REQUEST);
                // A text past its bound overflows the whole query: refused unnamed.
                if !matches!(param.kind, Kind::Text { .. } | Kind::Method { .. }) {
                    assert_eq!(named.as_deref(), Some(param.name), "{} {}={value}", route.path, param.name);
                }
            }
        }
        let answer = ask(&fixture, route, "no_such_parameter=1").await;
        if route.path != "/logout" && route.path != "/login" {
            answer.bad_parameter("no_such_parameter");
        }
    }
}

#[tokio::test]
async fn the_server_answers_the_document_and_it_validates_as_openapi_3() {
    let fixture = Fixture::new();
    let served = fixture.get("/api/openapi.json").await.ok_json();
    assert_eq!(served, openapi::document());
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&served).unwrap()).unwrap();
    let output = Command::new("openapi-spec-validator").arg(&file).output().unwrap_or_else(|error| {
        panic!("cannot run openapi-spec-validator ({error}): scripts/install-test-deps installs it from PyPI")
    });
    assert!(
        output.status.success(),
        "openapi-spec-validator refused the document:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
