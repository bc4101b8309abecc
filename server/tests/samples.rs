//! `/api/samples`: the recent raw samples, paged by sequence number without
//! loss, with the overwritten count and the checksum-filter selection.

mod support;

use pcct::MethodId;
use pcct_sampler::recent::{Outcome, SampleRecord, Walker, TOP_FRAMES};
use serde_json::Value;
use support::*;

fn seqs(page: &Value) -> Vec<u64> {
    page["samples"].as_array().expect("samples").iter().map(|s| s["seq"].as_u64().unwrap()).collect()
}

/// Pages through everything from `since` with `query`, returning every seq seen.
async fn page_all(fixture: &Fixture, mut since: u64, query: &str) -> (Vec<u64>, u64) {
    let mut seen = Vec::new();
    for _ in 0..100 {
        let page = fixture.get(&format!("/api/samples?since={since}&{query}")).await.ok_json();
        let got = seqs(&page);
        let next = page["next_since"].as_u64().unwrap();
        assert!(next >= since, "next_since went back: {since} -> {next}");
        if got.is_empty() && next == since {
            return (seen, since);
        }
        seen.extend(got);
        since = next;
    }
    panic!("paging did not end");
}

fn in_ring() -> Vec<u64> {
    (OVERWRITTEN..RING_PUSHED).collect()
}

#[tokio::test]
async fn the_default_page_holds_the_ring_and_counts_the_overwritten() {
    let fixture = Fixture::new();
    let page = fixture.get("/api/samples").await.ok_json();
    assert_eq!(seqs(&page), in_ring());
    assert_eq!(page["overwritten"], OVERWRITTEN);
    assert_eq!(page["oldest"], OVERWRITTEN);
    assert_eq!(page["capacity"], RING_CAPACITY);
    assert_eq!(page["next_since"], RING_PUSHED);
}

#[tokio::test]
async fn records_carry_their_fields() {
    let fixture = Fixture::new();
    let page = fixture.get("/api/samples?since=5&limit=1").await.ok_json();
    let sample = &page["samples"][0];
    assert_eq!(sample["seq"], 5);
    assert_eq!(sample["outcome"], serde_json::json!({"kind": "recorded"}));
    assert_eq!(sample["checksum"], format!("{:016x}", 0xabc0 + 5));
    assert_eq!(sample["tid"], 101);
    assert_eq!(sample["cpu_delta_ns"], MS);
    assert_eq!(sample["wall_delta_ns"], 2 * MS);
    assert!((sample["time_ms"].as_f64().unwrap() - 5.0).abs() < 1e-9);
    assert_eq!(sample["depth"], 3);
    assert_eq!(sample["top_frames"], serde_json::json!([HASH, COMPUTE, MAIN]), "leaf first");
    assert_eq!(sample["walker"], "pcct");
    assert_eq!(sample["walk_stopped"], serde_json::Value::Null);
    assert_eq!(page["overwritten"], 0);
    let partial = fixture.get(&format!("/api/samples?since={PARTIAL_SEQ}&limit=1")).await.ok_json();
    assert_eq!(partial["samples"][0]["walker"], "partial");
    assert_eq!(partial["samples"][0]["walk_stopped"], "stack_range");
    let failed = fixture.get(&format!("/api/samples?since={FAILED_SEQ}&limit=1")).await.ok_json();
    assert_eq!(failed["samples"][0]["outcome"], serde_json::json!({"kind": "failed", "code": -2}));
    let filtered = fixture.get("/api/samples?since=4&limit=1").await.ok_json();
    assert_eq!(filtered["samples"][0]["outcome"], serde_json::json!({"kind": "filtered"}));
    assert_eq!(filtered["samples"][0]["top_frames"], serde_json::json!([]));
    assert_eq!(filtered["samples"][0]["walker"], serde_json::Value::Null, "not walked");
}

#[tokio::test]
async fn paging_with_since_loses_nothing() {
    let fixture = Fixture::new();
    for limit in 1..=RING_CAPACITY {
        let (seen, end) = page_all(&fixture, OVERWRITTEN, &format!("limit={limit}")).await;
        assert_eq!(seen, in_ring(), "limit {limit}");
        assert_eq!(end, RING_PUSHED);
    }
    let first = fixture.get("/api/samples?since=0&limit=3").await.ok_json();
    assert_eq!(seqs(&first), [4, 5, 6]);
    assert_eq!(first["overwritten"], OVERWRITTEN);
    assert_eq!(first["next_since"], 7);
    let second = fixture.get("/api/samples?since=7&limit=3").await.ok_json();
    assert_eq!(seqs(&second), [7, 8, 9]);
    assert_eq!(second["overwritten"], 0);
    let beyond = fixture.get(&format!("/api/samples?since={}", u64::MAX)).await.ok_json();
    assert_eq!(seqs(&beyond), Vec::<u64>::new());
}

#[tokio::test]
async fn filtered_selects_checksum_filtered_records() {
    let fixture = Fixture::new();
    let filtered: Vec<u64> = in_ring().into_iter().filter(|&seq| outcome_of(seq) == Outcome::Filtered).collect();
    let others: Vec<u64> = in_ring().into_iter().filter(|&seq| outcome_of(seq) != Outcome::Filtered).collect();
    assert_eq!(filtered, [4, 7, 10], "the fixture changed");
    let only = fixture.get("/api/samples?filtered=only").await.ok_json();
    assert_eq!(seqs(&only), filtered);
    assert!(only["samples"].as_array().unwrap().iter().all(|s| s["outcome"]["kind"] == "filtered"));
    let exclude = fixture.get("/api/samples?filtered=exclude").await.ok_json();
    assert_eq!(seqs(&exclude), others);
    let include = fixture.get("/api/samples?filtered=include").await.ok_json();
    assert_eq!(seqs(&include), in_ring());
    for (selection, expected) in [("only", &filtered), ("exclude", &others), ("include", &in_ring())] {
        for limit in 1..=3 {
            let (seen, _) = page_all(&fixture, 0, &format!("filtered={selection}&limit={limit}")).await;
            assert_eq!(&seen, expected, "filtered={selection}&limit={limit}");
        }
    }
}

#[tokio::test]
async fn a_client_that_falls_behind_is_told_how_many_it_missed() {
    let fixture = Fixture::new();
    let first = fixture.get("/api/samples?limit=2").await.ok_json();
    let since = first["next_since"].as_u64().unwrap();
    assert_eq!(since, OVERWRITTEN + 2);
    let more = 10;
    {
        let mut recent = fixture.shared.recent.lock();
        for _ in 0..more {
            recent.push(SampleRecord {
                seq: 0,
                time_ns: 0,
                tid: 7,
                cpu_delta_ns: 0,
                wall_delta_ns: 0,
                checksum: 0,
                outcome: Outcome::Filtered,
                depth: 0,
                top: [MethodId(0); TOP_FRAMES],
                top_len: 0,
                walker: Walker::None,
                walk_stopped: None,
            });
        }
    }
    let pushed = RING_PUSHED + more;
    let oldest = pushed - RING_CAPACITY as u64;
    let next = fixture.get(&format!("/api/samples?since={since}")).await.ok_json();
    assert_eq!(next["overwritten"], oldest - since);
    assert_eq!(next["oldest"], oldest);
    assert_eq!(seqs(&next), (oldest..pushed).collect::<Vec<_>>());
}
