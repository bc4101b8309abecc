//! `/api/pprof` and `/debug/pprof/profile`: the synthetic profile as pprof,
//! decoded with prost, and windows holding only what was recorded in them.

mod support;

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use pcct::export::pprof::{self, value_type};
use pcct::export::pprof_proto::Profile;
use pcct::Metric;
use support::*;

fn text(profile: &Profile, index: i64) -> &str {
    &profile.string_table[index as usize]
}

/// Sum of each sample type's values.
fn totals(profile: &Profile) -> Vec<i64> {
    let mut totals = vec![0; profile.sample_type.len()];
    for sample in &profile.sample {
        for (total, value) in totals.iter_mut().zip(&sample.value) {
            *total += value;
        }
    }
    totals
}

fn decoded(answer: &Answer) -> Profile {
    assert_eq!(answer.status, StatusCode::OK, "{}", String::from_utf8_lossy(&answer.body));
    assert_eq!(answer.content_type(), "application/octet-stream");
    pprof::decode(&answer.body).expect("gzipped profile.proto")
}

#[tokio::test]
async fn the_cumulative_profile_has_every_resource_every_context_and_the_call_sites_lines() {
    let fixture = Fixture::new();
    let profile = decoded(&fixture.get("/api/pprof").await);
    let types: Vec<(&str, &str)> =
        profile.sample_type.iter().map(|t| (text(&profile, t.r#type), text(&profile, t.unit))).collect();
    assert_eq!(types, Metric::ALL.map(value_type).to_vec());
    assert_eq!(text(&profile, profile.default_sample_type), "cpu");
    assert_eq!(totals(&profile)[0], TOTAL_SAMPLES as i64);
    assert_eq!(totals(&profile)[1], (TOTAL_SAMPLES * MS) as i64);
    let contexts = {
        let profile = fixture.shared.profile.lock();
        profile.tree.nodes().filter(|&node| !profile.tree.node_weight(node).is_zero()).count()
    };
    assert!(contexts > 4, "the fixture has allocation and monitor sites besides its samples");
    assert_eq!(profile.sample.len(), contexts, "one sample per context with a self weight");
    for (index, metric) in Metric::ALL.into_iter().enumerate() {
        let total = fixture.shared.profile.lock().tree.total().get(metric);
        assert_eq!(totals(&profile)[index], total as i64, "{metric:?}");
    }
    assert!(profile.period > 0 && profile.time_nanos > 0 && profile.duration_nanos > 0);
    // main calls compute at line 12: main's location in compute's samples.
    let main_at_12 = profile.location.iter().find(|location| {
        let line = &location.line[0];
        let function = profile.function.iter().find(|f| f.id == line.function_id).unwrap();
        text(&profile, function.name) == MAIN && line.line == MAIN_TO_COMPUTE_LINE as i64
    });
    assert!(main_at_12.is_some(), "no location of main at line {MAIN_TO_COMPUTE_LINE}");
    let wall = decoded(&fixture.get("/api/pprof?metric=wall").await);
    assert_eq!(text(&wall, wall.default_sample_type), "wall");
    fixture.get("/api/pprof?metric=bytes").await.bad_parameter("metric");
}

#[tokio::test]
async fn a_window_holds_only_what_was_recorded_while_it_was_open() {
    let fixture = Fixture::new();
    let request = {
        let fixture_state = fixture.state.clone();
        tokio::spawn(async move {
            let request =
                axum::http::Request::get("/debug/pprof/profile?seconds=1").body(axum::body::Body::empty()).unwrap();
            let response = tower::ServiceExt::oneshot(pcct_server::app(fixture_state), request).await.unwrap();
            let restarted = response.headers()["x-pcct-window"].to_str().unwrap().to_string();
            let body = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
            (restarted, body.to_vec())
        })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while fixture.state.windows.used() == 0 {
        assert!(Instant::now() < deadline, "the window never opened");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    fixture.add_stacks(3, 4);
    let (window, body) = request.await.unwrap();
    assert_eq!(window, "whole");
    let profile = pprof::decode(&body).unwrap();
    assert_eq!(totals(&profile)[0], 3, "only the three stacks recorded in the window");
    assert!(profile.duration_nanos >= 1_000_000_000, "{}", profile.duration_nanos);
    assert_eq!(fixture.state.windows.used(), 0);
}

#[tokio::test]
async fn window_lengths_are_bounded() {
    let fixture = Fixture::new();
    for bad in ["seconds=0", "seconds=301", "seconds=x"] {
        fixture.get(&format!("/debug/pprof/profile?{bad}")).await.bad_parameter("seconds");
    }
    fixture.get("/debug/pprof/profile?debug=1").await.bad_parameter("debug");
}

/// Sends `GET uri` through the app in a task; its `X-Pcct-Window` and body.
fn spawn_window(fixture: &Fixture, uri: &str) -> tokio::task::JoinHandle<(String, Vec<u8>)> {
    let state = fixture.state.clone();
    let uri = uri.to_string();
    tokio::spawn(async move {
        let request = axum::http::Request::get(uri).body(axum::body::Body::empty()).unwrap();
        let response = tower::ServiceExt::oneshot(pcct_server::app(state), request).await.unwrap();
        let window = response.headers()["x-pcct-window"].to_str().unwrap().to_string();
        (window, axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap().to_vec())
    })
}

async fn until_open(fixture: &Fixture, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while fixture.state.windows.status().open < count {
        assert!(Instant::now() < deadline, "{count} windows never opened");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn concurrent_windows_of_different_lengths_each_get_theirs() {
    let fixture = Fixture::new();
    let long = spawn_window(&fixture, "/debug/pprof/profile?seconds=3");
    until_open(&fixture, 1).await;
    fixture.add_stacks(2, 4);
    let short = spawn_window(&fixture, "/debug/pprof/profile?seconds=1");
    until_open(&fixture, 2).await;
    fixture.add_stacks(3, 4);
    let (_, short) = short.await.unwrap();
    fixture.add_stacks(4, 4);
    let (_, long) = long.await.unwrap();
    assert_eq!(totals(&pprof::decode(&short).unwrap())[0], 3, "the short window: what came while it was open");
    assert_eq!(totals(&pprof::decode(&long).unwrap())[0], 9, "the long window: all of it");
    assert_eq!(fixture.state.windows.status().open, 0);
}
