//! Property tests of bad input: random values, names, whole query strings,
//! bodies and credentials never panic a handler; every answer is 200 or a
//! 400 (401 for credentials) with a JSON body naming the parameter or the query.

mod support;

use std::future::Future;

use axum::body::Body;
use axum::http::StatusCode;
use pcct_server::params::MAX_QUERY_BYTES;
use proptest::prelude::*;
use support::*;

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime").block_on(future)
}

/// [`block_on`] with tokio's clock paused: waits (a wrong token's) pass at once.
fn block_on_paused<F: Future>(future: F) -> F::Output {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build();
    runtime.expect("a runtime").block_on(future)
}

/// What a 400 answer must say: the parameter it names, if any, and whether
/// its message is about the query as a whole.
fn error_of(answer: &Answer) -> Result<Option<String>, String> {
    let text = String::from_utf8_lossy(&answer.body).to_string();
    if !answer.content_type().starts_with("application/json") {
        return Err(format!("not JSON ({}): {text}", answer.content_type()));
    }
    let json: serde_json::Value = serde_json::from_slice(&answer.body).map_err(|e| format!("{e}: {text}"))?;
    let message = json["error"].as_str().ok_or(format!("no error message: {text}"))?;
    match json.get("parameter") {
        Some(parameter) => Ok(Some(parameter.as_str().ok_or(format!("parameter not a string: {text}"))?.to_string())),
        None if message.contains("query") => Ok(None),
        None => Err(format!("a 400 naming neither a parameter nor the query: {text}")),
    }
}

fn body_for(path: &str) -> &'static str {
    if path == "/api/sampling" {
        "{}"
    } else {
        ""
    }
}

/// Values: any unicode, %-escapes and URL syntax, numbers near the bounds,
/// huge values, empty.
fn values() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        ".{0,40}",
        "[%&=+;*0-9a-fA-F .-]{0,40}",
        "-?[0-9]{0,25}(\\.[0-9]{0,5})?(e-?[0-9]{1,4})?",
        prop::sample::select(vec![
            "NaN", "inf", "-0", "0x10", "1_000", "١٢", "０", "self", "total", "only", "cpu", "*", ";", "%", "%zz",
            "%FF"
        ])
        .prop_map(String::from),
        (prop::char::any(), 500..2000usize).prop_map(|(c, n)| c.to_string().repeat(n)),
        "[0-9]{4000,5000}",
    ]
}

/// Raw query text (not encoded) of random length up to 10k.
fn raw_queries() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        "[A-Za-z0-9%&=+;,.~_*!$'()/:@?-]{0,12}",
        prop::sample::select(vec![
            "limit=",
            "by=",
            "since=",
            "filtered=",
            "path=",
            "min_share=",
            "max_depth=",
            "max_nodes=",
            "metric=",
            "title=",
            "&",
            "=",
            "%",
            "%2",
            "%zz",
            "%FF%FE",
            "%00",
            "+",
            ";",
            "&&",
            "==",
        ])
        .prop_map(String::from),
    ];
    prop_oneof![
        prop::collection::vec(fragment, 0..40).prop_map(|parts| parts.concat()),
        "[A-Za-z0-9%&=+;,.~_*!$'()/:@?-]{0,10000}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn any_value_of_any_parameter_is_200_or_a_400_naming_it(value in values()) {
        block_on(async {
            let fixture = Fixture::new();
            let encoded = encode(&value);
            for (verb, path, parameters) in PARAMETERS {
                let names: &[&str] = if parameters.is_empty() { &["x"] } else { parameters };
                for name in names {
                    let uri = format!("{path}?{name}={encoded}");
                    let answer = fixture.send(method(verb), &uri, &[], Body::from(body_for(path))).await;
                    match answer.status {
                        StatusCode::OK => prop_assert!(!parameters.is_empty(), "{verb} {path} took {name}"),
                        StatusCode::BAD_REQUEST => {
                            let named = error_of(&answer).map_err(|e| TestCaseError::fail(format!("{uri}: {e}")))?;
                            if uri.len() - path.len() - 1 <= MAX_QUERY_BYTES {
                                prop_assert_eq!(named.as_deref(), Some(*name), "{} {}", verb, path);
                            }
                        }
                        status => prop_assert!(false, "{verb} {path}?{name}=<{} bytes>: {status}", value.len()),
                    }
                }
            }
            Ok(())
        })?;
    }

    #[test]
    fn unknown_parameter_names_are_400_naming_them(name in ".{1,100}", value in "[a-z0-9]{0,5}") {
        block_on(async {
            let fixture = Fixture::new();
            for (verb, path, parameters) in PARAMETERS {
                if parameters.contains(&name.as_str()) {
                    continue;
                }
                let uri = format!("{path}?{}={value}", encode(&name));
                let answer = fixture.send(method(verb), &uri, &[], Body::from(body_for(path))).await;
                prop_assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", uri);
                let named = error_of(&answer).map_err(TestCaseError::fail)?;
                let expected: String = name.chars().take(64).collect();
                prop_assert_eq!(named, Some(expected), "{}", uri);
            }
            Ok(())
        })?;
    }

    #[test]
    fn any_raw_query_string_is_200_or_400(query in raw_queries()) {
        block_on(async {
            let fixture = Fixture::new();
            for (verb, path, body) in ROUTES {
                let uri = format!("{path}?{query}");
                let answer = fixture.send(method(verb), &uri, &[], Body::from(*body)).await;
                let validates = PARAMETERS.iter().any(|(_, p, _)| p == path);
                match answer.status {
                    StatusCode::OK => prop_assert!(
                        !validates || query.len() <= MAX_QUERY_BYTES,
                        "{} {} accepted a {}-byte query", verb, path, query.len()
                    ),
                    StatusCode::BAD_REQUEST => {
                        error_of(&answer).map_err(|e| TestCaseError::fail(format!("{verb} {path}: {e}")))?;
                    }
                    status => prop_assert!(false, "{verb} {path}?<{} bytes>: {status}", query.len()),
                }
            }
            Ok(())
        })?;
    }

    #[test]
    fn any_sampling_body_is_200_or_a_json_400(body in prop_oneof![
        ".{0,200}",
        "\\{\"(running|interval|mode)\": (true|false|null|-?[0-9]{1,20}|\"[a-z0-9.µ]{0,8}\")\\}",
        prop::collection::vec(any::<u8>(), 0..300).prop_map(|bytes| String::from_utf8_lossy(&bytes).to_string()),
    ]) {
        block_on(async {
            let fixture = Fixture::new();
            let answer = fixture.post("/api/sampling", body.clone()).await;
            match answer.status {
                StatusCode::OK => {}
                StatusCode::BAD_REQUEST => {
                    let text = String::from_utf8_lossy(&answer.body).to_string();
                    let json: serde_json::Value = serde_json::from_str(&text)
                        .map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
                    prop_assert!(json["error"].is_string(), "{}", text);
                    let interval = fixture.shared.control.interval();
                    prop_assert_eq!(interval, std::time::Duration::from_millis(10), "a refused body changed the interval");
                }
                status => prop_assert!(false, "{body:?}: {status}"),
            }
            Ok(())
        })?;
    }

    #[test]
    fn any_wrong_credential_is_401(credential in "[ -~]{0,80}") {
        prop_assume!(credential != format!("Bearer {TOKEN}"));
        block_on_paused(async {
            let fixture = Fixture::with_token();
            for path in ["/api/status", "/api/hot-methods", "/metrics"] {
                let answer = fixture.send(method("GET"), path, &[("authorization", &credential)], Body::empty()).await;
                prop_assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{} with {:?}", path, credential);
            }
            Ok(())
        })?;
    }
}
