//! The HTTP API's reference: every route, its parameters with their limits
//! and defaults, who may call it and what it answers, described once in
//! [`ROUTES`] and served as an OpenAPI 3 document at `GET /api/openapi.json`.
//!
//! Why a table and not annotations (`utoipa`): the routes parse their
//! queries by hand ([`crate::params::Params`], which refuses unknown names
//! and values out of bounds), so an annotation would restate each limit a
//! second time in another place. Here the table is the one statement, and
//! tests hold it to the server: every route of the router is in it (and no
//! other), every documented parameter is accepted at its bounds and refused
//! past them by name, and an undocumented one is refused
//! (`server/tests/openapi.rs`); the document validates as OpenAPI 3 with
//! `openapi-spec-validator`.

#![forbid(unsafe_code)]

use serde_json::{json, Map, Value};

/// Who may call a route (see `auth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// No token ever (`/healthz`, the login form).
    Public,
    /// The read-only token or the control token.
    Read,
    /// The control token only.
    Control,
}

/// What a query parameter takes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// A whole number in `min..=max`.
    Integer { min: u64, max: u64, default: u64 },
    /// A number in `min..=max`.
    Number { min: f64, max: f64, default: f64 },
    /// One of the values.
    Choice { values: &'static [&'static str], default: &'static str },
    /// A resource by its name (`Metric::ALL`, `cpu` and `wall` too); also
    /// called `metric` on the routes that take `resource`.
    Resource,
    /// Free text of at most this many characters.
    Text { max_chars: usize },
    /// A method, `Class.method` or `Class.method(signature)`, of at most
    /// this many characters; required.
    Method { max_chars: usize },
}

/// A query parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Param {
    pub name: &'static str,
    pub kind: Kind,
    pub doc: &'static str,
}

/// A route: method, path (axum's `{name}` for a path parameter), access,
/// query parameters, the JSON body's fields (POST), and the answer.
#[derive(Clone, Copy, Debug)]
pub struct Route {
    pub method: &'static str,
    pub path: &'static str,
    pub summary: &'static str,
    pub access: Access,
    pub params: &'static [Param],
    /// A JSON request body (`Content-Type: application/json`), described.
    pub body: Option<&'static str>,
    /// The media type of a 200 answer.
    pub answers: &'static str,
}

const JSON: &str = "application/json";
const TEXT: &str = "text/plain";
const HTML: &str = "text/html";

const LIMIT: Param = Param {
    name: "limit",
    kind: Kind::Integer { min: 1, max: crate::routes::MAX_LIMIT, default: 20 },
    doc: "most entries answered",
};
const RESOURCE: Param = Param {
    name: "resource",
    kind: Kind::Resource,
    doc: "the resource that ranks and weighs (default: the agent's `metric`); `metric` is a second name for it",
};
const MIN_SHARE_0: Param = Param {
    name: "min_share",
    kind: Kind::Number { min: 0.0, max: 1.0, default: 0.0 },
    doc: "leave out subtrees under this share of the total",
};

/// The JIT routes' parameters (advice and directives take the same).
const JIT_PARAMS: [Param; 2] = [
    LIMIT,
    Param {
        name: "min_share",
        kind: Kind::Number { min: 0.0, max: 1.0, default: 0.01 },
        doc: "leave out edges under this share",
    },
];

/// Every route the server answers.
pub const ROUTES: &[Route] = &[
    Route {
        method: "get",
        path: "/",
        summary: "The live page",
        access: Access::Read,
        params: &[],
        body: None,
        answers: HTML,
    },
    Route {
        method: "get",
        path: "/healthz",
        summary: "Liveness, and the X-Pcct-Agent identity header",
        access: Access::Public,
        params: &[],
        body: None,
        answers: TEXT,
    },
    Route {
        method: "get",
        path: "/login",
        summary: "The login form",
        access: Access::Public,
        params: &[],
        body: None,
        answers: HTML,
    },
    Route {
        method: "post",
        path: "/login",
        summary: "Log in with a token (form field `token`); sets the session cookie",
        access: Access::Public,
        params: &[],
        body: None,
        answers: HTML,
    },
    Route {
        method: "post",
        path: "/logout",
        summary: "End the session",
        access: Access::Read,
        params: &[],
        body: None,
        answers: HTML,
    },
    Route {
        method: "get",
        path: "/metrics",
        summary: "Prometheus text exposition (docs/metrics.md)",
        access: Access::Read,
        params: &[],
        body: None,
        answers: TEXT,
    },
    Route {
        method: "get",
        path: "/flamegraph.svg",
        summary: "A flame graph rendered by inferno, with its search and zoom",
        access: Access::Read,
        params: &[
            Param { name: "title", kind: Kind::Text { max_chars: 200 }, doc: "the graph's title" },
            Param {
                name: "min_share",
                kind: Kind::Number { min: 0.0, max: 1.0, default: 0.0001 },
                doc: "leave out frames under this share of the total",
            },
            Param { name: "s", kind: Kind::Text { max_chars: 200 }, doc: "the graph's search term (its own state)" },
            Param {
                name: "x",
                kind: Kind::Number { min: 0.0, max: 1e9, default: 0.0 },
                doc: "the graph's zoomed frame (its own state)",
            },
            Param {
                name: "y",
                kind: Kind::Number { min: 0.0, max: 1e9, default: 0.0 },
                doc: "the graph's zoomed frame (its own state)",
            },
            RESOURCE,
            Param {
                name: "kinds",
                kind: Kind::Choice { values: &["off", "on"], default: "off" },
                doc: "colour Java frames by their kind (async-profiler's palette), each named with its suffix; \
                      `on` by default where the agent records kinds (`kinds=on`)",
            },
        ],
        body: None,
        answers: "image/svg+xml",
    },
    Route {
        method: "get",
        path: "/api/status",
        summary: "Options in force, JVM and agent, counters, profile size, walker and JIT state",
        access: Access::Read,
        params: &[],
        body: None,
        answers: JSON,
    },
    Route {
        method: "get",
        path: "/api/hot-methods",
        summary: "Methods ranked by self or total weight, with their shares",
        access: Access::Read,
        params: &[
            LIMIT,
            Param {
                name: "by",
                kind: Kind::Choice { values: &["self", "total"], default: "self" },
                doc: "the ranking",
            },
            RESOURCE,
        ],
        body: None,
        answers: JSON,
    },
    Route {
        method: "get",
        path: "/api/hot-edges",
        summary: "Hot call edges: caller, call site, callee, share, and what the JIT made of the call",
        access: Access::Read,
        params: &[LIMIT, RESOURCE],
        body: None,
        answers: JSON,
    },
    Route {
        method: "get",
        path: "/api/hot-nodes",
        summary: "The hottest calling contexts with their full paths",
        access: Access::Read,
        params: &[LIMIT, RESOURCE],
        body: None,
        answers: JSON,
    },
    Route {
        method: "get",
        path: "/api/sites",
        summary: "Allocation and monitor sites: (type or monitor class, context) ranked by the resource",
        access: Access::Read,
        params: &[LIMIT, RESOURCE],
        body: None,
        answers: JSON,
    },
    Route {
        method: "get",
        path: "/api/tree",
        summary: "The subtrees under the contexts matching a path, nested and pruned",
        access: Access::Read,
        params: &[
            Param {
                name: "path",
                kind: Kind::Text { max_chars: 4096 },
                doc: "`class.method` steps or `*`, root first, separated by `;`",
            },
            Param {
                name: "min_share",
                kind: Kind::Number { min: 0.0, max: 1.0, default: 0.01 },
                doc: "leave out subtrees under this share",
            },
            Param {
                name: "max_depth",
                kind: Kind::Integer { min: 1, max: 64, default: 12 },
                doc: "deepest level answered",
            },
            Param {
                name: "max_nodes",
                kind: Kind::Integer { min: 1, max: 20_000, default: 2_000 },
                doc: "most nodes answered",
            },
            RESOURCE,
        ],
        body: None,
        answers: JSON,
    },
    Route {
        method: "get",
        path: "/api/samples",
        summary: "Recent raw samples, paged by sequence number",
        access: Access::Read,
        params: &[
            Param {
                name: "since",
                kind: Kind::Integer { min: 0, max: u64::MAX, default: 0 },
                doc: "answer samples after this sequence number (the previous answer's `next_since`)",
            },
            Param {
                name: "limit",
                kind: Kind::Integer { min: 1, max: crate::routes::MAX_LIMIT, default: 100 },
                doc: "most samples answered",
            },
            Param {
                name: "filtered",
                kind: Kind::Choice { values: &["exclude", "include", "only"], default: "include" },
                doc: "checksum-filtered samples",
            },
        ],
        body: None,
        answers: JSON,
    },
    Route {
        method: "get",
        path: "/api/reports/{kind}",
        summary:
            "Arcflow's xtree, xarc and xprof reports and HPROF's sites table, as text (kind: xtree, xarc, xprof, sites)",
        access: Access::Read,
        params: &[
            Param {
                name: "min_share",
                kind: Kind::Number { min: 0.0, max: 1.0, default: 0.0 },
                doc: "leave out contexts under this share (xtree: 0.005 by default)",
            },
            RESOURCE,
        ],
        body: None,
        answers: TEXT,
    },
    Route {
        method: "get",
        path: "/api/collapsed",
        summary: "Collapsed stacks: `frame;frame value` lines",
        access: Access::Read,
        params: &[
            MIN_SHARE_0,
            RESOURCE,
            Param {
                name: "annotate",
                kind: Kind::Choice { values: &["off", "on"], default: "off" },
                doc: "each Java frame's kind as async-profiler's suffix (`_[0]` interpreted, `_[1]` C1, `_[j]` C2, \
                      `_[i]` inlined), where the agent records kinds (`kinds=on`)",
            },
        ],
        body: None,
        answers: TEXT,
    },
    Route {
        method: "get",
        path: "/api/pprof",
        summary: "The profile since its last purge as gzipped pprof, every resource a sample type",
        access: Access::Read,
        params: &[Param { name: "metric", kind: Kind::Resource, doc: "the default sample type" }, MIN_SHARE_0],
        body: None,
        answers: "application/octet-stream",
    },
    Route {
        method: "get",
        path: "/debug/pprof/profile",
        summary: "Waits, then answers the pprof of that window only",
        access: Access::Read,
        params: &[
            Param {
                name: "seconds",
                kind: Kind::Integer { min: 1, max: crate::routes::pprof::MAX_SECONDS, default: 30 },
                doc: "the window's length",
            },
            Param { name: "metric", kind: Kind::Resource, doc: "the default sample type" },
        ],
        body: None,
        answers: "application/octet-stream",
    },
    Route {
        method: "post",
        path: "/api/purge",
        summary: "Clears the profile",
        access: Access::Control,
        params: &[],
        body: Some("empty"),
        answers: JSON,
    },
    Route {
        method: "post",
        path: "/api/sampling",
        summary: "Pauses or resumes, changes the interval or the mode",
        access: Access::Control,
        params: &[],
        body: Some("`running` (boolean), `interval` (100us..1s, e.g. \"1ms\"), `mode` (cpu or wall); any of them"),
        answers: JSON,
    },
    Route {
        method: "get",
        path: "/api/jit/advice",
        summary: "Hot calls HotSpot did not inline, ranked, with an action and why",
        access: Access::Read,
        params: &JIT_PARAMS,
        body: None,
        answers: JSON,
    },
    Route {
        method: "get",
        path: "/api/jit/directives",
        summary: "A HotSpot compiler directives file that inlines the advised calls",
        access: Access::Read,
        params: &[
            JIT_PARAMS[0],
            JIT_PARAMS[1],
            Param {
                name: "match_jdk",
                kind: Kind::Choice { values: &["off", "on"], default: "off" },
                doc: "whether directives may match the JDK's own methods (java., javax., jdk., sun., com.sun.)",
            },
        ],
        body: None,
        answers: JSON,
    },
    Route {
        method: "get",
        path: "/api/jit/events",
        summary: "What the JIT did to the compiled code as it happened: compiled, not entrant, replaced, unloaded",
        access: Access::Read,
        params: &[
            Param {
                name: "since",
                kind: Kind::Integer { min: 0, max: u64::MAX, default: 0 },
                doc: "the first event number to give (an answer's `next` asks for what came after it)",
            },
            Param {
                name: "limit",
                kind: Kind::Integer {
                    min: 1,
                    max: pcct_jit::events::CAPACITY as u64,
                    default: crate::routes::jit::EVENTS_PAGE,
                },
                doc: "most events in the answer",
            },
        ],
        body: None,
        answers: JSON,
    },
    Route {
        method: "get",
        path: "/api/jit/inline-tree",
        summary: "A method's current code (each entry) as the tree of the calls inlined into it, with their call sites",
        access: Access::Read,
        params: &[
            Param {
                name: "method",
                kind: Kind::Method { max_chars: crate::routes::jit::MAX_METHOD_NAME },
                doc: "`Class.method` (every overload), or `Class.method(signature)` for one",
            },
            Param {
                name: "max_nodes",
                kind: Kind::Integer {
                    min: 1,
                    max: crate::routes::jit::MAX_INLINE_TREE_NODES,
                    default: crate::routes::jit::INLINE_TREE_NODES,
                },
                doc: "most methods in the answer, all trees together",
            },
        ],
        body: None,
        answers: JSON,
    },
    Route {
        method: "post",
        path: "/api/jit/recompile",
        summary: "Retransforms classes the advice names, so HotSpot compiles them again under the directives",
        access: Access::Control,
        params: &[],
        body: Some("`classes`: the class names (1..100); `request`: an id of 1..64 bytes a retry repeats (optional)"),
        answers: JSON,
    },
    Route {
        method: "get",
        path: "/docs/{page}",
        summary: "This build's documentation as HTML (readme, benchmarks, architecture, and each page of docs/)",
        access: Access::Read,
        params: &[],
        body: None,
        answers: HTML,
    },
    Route {
        method: "get",
        path: "/api/openapi.json",
        summary: "This document",
        access: Access::Read,
        params: &[],
        body: None,
        answers: JSON,
    },
];

/// The OpenAPI 3.0 document of [`ROUTES`].
pub fn document() -> Value {
    let mut paths = Map::new();
    for route in ROUTES {
        let entry = paths.entry(route.path.to_string()).or_insert_with(|| json!({}));
        entry[route.method] = operation(route);
    }
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "pcct agent",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The live profile of the JVM this agent runs in. Query parameters are refused when unknown, repeated or out of bounds (400 with a JSON error naming the parameter).",
        },
        "paths": Value::Object(paths),
        "components": {
            "securitySchemes": {
                "token": { "type": "http", "scheme": "bearer", "description": "the read-only token (`read_token=`) or the control token (`token=`); or the session cookie of /login" },
            },
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": { "error": { "type": "string" }, "parameter": { "type": "string" } },
                },
            },
        },
    })
}

fn operation(route: &Route) -> Value {
    let mut parameters: Vec<Value> = route.params.iter().map(parameter).collect();
    for name in path_parameters(route.path) {
        parameters.push(json!({ "name": name, "in": "path", "required": true, "schema": { "type": "string" } }));
    }
    let error = json!({ "description": "refused", "content": { JSON: { "schema": { "$ref": "#/components/schemas/Error" } } } });
    let mut responses = Map::new();
    responses.insert("200".into(), json!({ "description": "the answer", "content": { route.answers: {} } }));
    responses
        .insert("400".into(), json!({ "description": "a bad parameter or body", "content": error["content"].clone() }));
    if route.access != Access::Public {
        responses.insert("401".into(), json!({ "description": "a token or session is needed" }));
    }
    if route.access == Access::Control {
        responses.insert("403".into(), json!({ "description": "the read-only token cannot change the JVM" }));
    }
    let mut operation = json!({
        "summary": route.summary,
        "parameters": parameters,
        "responses": Value::Object(responses),
        "x-pcct-access": format!("{:?}", route.access).to_lowercase(),
    });
    if route.access != Access::Public {
        operation["security"] = json!([{ "token": [] }]);
    } else {
        operation["security"] = json!([]);
    }
    if let Some(body) = route.body {
        operation["requestBody"] =
            json!({ "required": false, "description": body, "content": { JSON: { "schema": { "type": "object" } } } });
    }
    operation
}

fn parameter(param: &Param) -> Value {
    let schema = match param.kind {
        Kind::Integer { min, max, default } => {
            json!({ "type": "integer", "format": "int64", "minimum": min, "maximum": max, "default": default })
        }
        Kind::Number { min, max, default } => {
            json!({ "type": "number", "minimum": min, "maximum": max, "default": default })
        }
        Kind::Choice { values, default } => json!({ "type": "string", "enum": values, "default": default }),
        Kind::Resource => json!({ "type": "string", "enum": resource_names() }),
        Kind::Text { max_chars } | Kind::Method { max_chars } => json!({ "type": "string", "maxLength": max_chars }),
    };
    let required = matches!(param.kind, Kind::Method { .. });
    json!({ "name": param.name, "in": "query", "required": required, "description": param.doc, "schema": schema })
}

/// Every name a resource parameter takes.
pub fn resource_names() -> Vec<&'static str> {
    pcct::Metric::ALL.iter().flat_map(|metric| std::iter::once(metric.name()).chain(metric.alias())).collect()
}

/// The `{name}` parts of `path`.
fn path_parameters(path: &str) -> Vec<&str> {
    path.split('/').filter_map(|part| part.strip_prefix('{')?.strip_suffix('}')).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_an_operation_with_its_parameters() {
        let document = document();
        for route in ROUTES {
            let operation = &document["paths"][route.path][route.method];
            assert!(operation.is_object(), "{} {}", route.method, route.path);
            let names: Vec<&str> =
                operation["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
            for param in route.params {
                assert!(names.contains(&param.name), "{}: {}", route.path, param.name);
            }
        }
        assert_eq!(document["paths"]["/api/reports/{kind}"]["get"]["parameters"][2]["in"], "path");
        // The roles as `auth` gives them: the login form is public, so is
        // /healthz; GET and POST /logout read; any other POST controls.
        for route in ROUTES {
            let expected = match (route.method, route.path) {
                (_, "/healthz") | (_, "/login") => Access::Public,
                ("get", _) | ("post", "/logout") => Access::Read,
                _ => Access::Control,
            };
            assert_eq!(route.access, expected, "{} {}", route.method, route.path);
        }
        assert!(resource_names().contains(&"alloc_bytes") && resource_names().contains(&"cpu"));
    }
}
