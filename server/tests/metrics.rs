//! `/metrics`: Prometheus text exposition of the sampler's counters, the
//! profile's size, the top-K hot methods and the server's own requests.

mod support;

use axum::http::StatusCode;
use support::*;

/// The value of the sample whose line starts with `name{labels}` or `name `.
fn value(exposition: &str, series: &str) -> Option<f64> {
    exposition
        .lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| line.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')))
        .map(|value| value.trim().parse().expect("a number"))
}

fn lines_of<'a>(exposition: &'a str, name: &str) -> Vec<&'a str> {
    exposition.lines().filter(|line| line.starts_with(name) && !line.starts_with('#')).collect()
}

#[tokio::test]
async fn metrics_expose_sample_outcomes_and_the_profile() {
    let fixture = Fixture::new();
    let answer = fixture.get("/metrics").await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.content_type().starts_with("text/plain; version=0.0.4"), "{}", answer.content_type());
    let text = answer.text();
    assert_eq!(value(&text, "pcct_samples_total{outcome=\"recorded\"}"), Some(COUNTED_RECORDED as f64), "{text}");
    assert_eq!(value(&text, "pcct_samples_total{outcome=\"filtered\"}"), Some(COUNTED_FILTERED as f64));
    // The root, main, compute, hash, read, and the classes of the three events' sites.
    assert_eq!(value(&text, "pcct_pcct_nodes"), Some(8.0));
    assert_eq!(value(&text, "pcct_pcct_edges"), Some(7.0));
    assert_eq!(value(&text, "pcct_profile_samples"), Some(TOTAL_SAMPLES as f64));
    assert_eq!(value(&text, "pcct_methods_named"), Some(4.0));
    assert_eq!(value(&text, "pcct_sampling_running"), Some(1.0));
    assert_eq!(value(&text, "pcct_sampling_interval_seconds"), Some(0.01));
    for family in ["pcct_handler_duration_seconds", "pcct_drain_duration_seconds", "pcct_sampler_ticks_total"] {
        assert!(text.contains(&format!("# TYPE {family} ")), "{family} is missing");
    }
}

#[tokio::test]
async fn metrics_rank_the_hottest_method_first() {
    let fixture = Fixture::new();
    let text = fixture.get("/metrics").await.text();
    let ratio = lines_of(&text, "pcct_hot_method_self_ratio{");
    let first = ratio.iter().find(|line| line.contains("rank=\"1\"")).expect("a rank 1 series");
    assert!(first.contains(&format!("method=\"{HASH}\"")), "{first}");
    let share: f64 = first.rsplit(' ').next().unwrap().parse().unwrap();
    assert!((share - HASH_SAMPLES as f64 / TOTAL_SAMPLES as f64).abs() < 1e-9, "{first}");
    let seconds = lines_of(&text, "pcct_hot_method_self_seconds{");
    let first = seconds.iter().find(|line| line.contains("rank=\"1\"")).expect("a rank 1 series");
    assert!(first.contains(HASH) && first.ends_with(&format!(" {}", HASH_SAMPLES as f64 * MS as f64 / 1e9)));
    assert_eq!(ratio.len(), 4, "one series per method with self weight: {ratio:?}");
}

#[tokio::test]
async fn hot_method_series_are_bounded_by_top_k() {
    let fixture = Fixture::with_config(pcct_server::AppConfig { metrics_top: 2, ..Default::default() });
    let text = fixture.get("/metrics").await.text();
    assert_eq!(lines_of(&text, "pcct_hot_method_self_ratio{").len(), 2);
    assert_eq!(lines_of(&text, "pcct_hot_method_self_seconds{").len(), 2);
}

#[tokio::test]
async fn http_requests_are_counted_by_route_and_status() {
    let fixture = Fixture::new();
    assert_eq!(fixture.get("/api/status").await.status, StatusCode::OK);
    assert_eq!(fixture.get("/api/hot-methods?limit=0").await.status, StatusCode::BAD_REQUEST);
    assert_eq!(fixture.get("/api/reports/xprof").await.status, StatusCode::OK);
    let text = fixture.get("/metrics").await.text();
    assert_eq!(value(&text, "pcct_http_requests_total{route=\"/api/status\",status=\"200\"}"), Some(1.0), "{text}");
    assert_eq!(value(&text, "pcct_http_requests_total{route=\"/api/hot-methods\",status=\"400\"}"), Some(1.0));
    assert_eq!(value(&text, "pcct_http_requests_total{route=\"/api/reports/{kind}\",status=\"200\"}"), Some(1.0));
    assert!(text.contains("pcct_http_request_duration_seconds_count{route=\"/api/status\"} 1"), "{text}");
    // Unknown paths share one label, so they cannot grow the series without bound.
    for path in ["/a", "/b", "/c"] {
        fixture.get(path).await;
    }
    let text = fixture.get("/metrics").await.text();
    assert_eq!(value(&text, "pcct_http_requests_total{route=\"unmatched\",status=\"404\"}"), Some(3.0), "{text}");
}

#[tokio::test]
async fn heavy_jobs_are_exported_live_and_at_their_peak() {
    let fixture = Fixture::new();
    let text = fixture.get("/metrics").await.text();
    assert_eq!(value(&text, "pcct_http_heavy_jobs"), Some(0.0), "{text}");
    assert_eq!(value(&text, "pcct_http_heavy_jobs_peak"), Some(0.0), "{text}");
    assert_eq!(fixture.get("/api/reports/xprof").await.status, StatusCode::OK);
    let text = fixture.get("/metrics").await.text();
    assert_eq!(value(&text, "pcct_http_heavy_jobs"), Some(0.0), "the job is over: {text}");
    assert_eq!(value(&text, "pcct_http_heavy_jobs_peak"), Some(1.0), "{text}");
    let status = fixture.get("/api/status").await.ok_json();
    assert_eq!(status["heavy_jobs"], serde_json::json!({"live": 0, "peak": 1, "limit": 2, "started": 1}));
}
