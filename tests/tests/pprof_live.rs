//! pprof from a live JVM, read by real decoders: `/api/pprof` and
//! `/debug/pprof/profile?seconds=2` windows while LiveTarget's busy thread
//! runs, decoded by `go tool pprof` (`-raw`, `-top`), `protoc --decode`
//! and prost, their totals compared with `/api/collapsed` over the same
//! span, and three windows compared stack by stack with the cumulative
//! profile's growth over each.
//!
//! Exact comparisons need a profile that holds still while it is read:
//! sampling is paused (`POST /api/sampling`) around each read, and a read
//! waits until every signal sent has its outcome (nothing is in flight).
//! Windows scraped at once while sampling runs (no pause) are checked by
//! their spans instead: a window inside another holds no more of any stack.

use std::time::{Duration, Instant};

use pcct::export::pprof;
use pcct::export::pprof_proto::Profile;
use pcct_tests::control::{pause, resume, samples_beyond, u64_at};
use pcct_tests::http::{start_served, Client, Served};
use pcct_tests::pprof::{
    add_stacks, difference, go_pprof_raw_totals, go_pprof_top_total, protoc_decode, sample_types, stacks, totals,
    Stacks,
};
use pcct_tests::{assert_no_hs_err, one_jdk, poll_until, Fixture, Jdk, Jvm};

const SOON: Duration = Duration::from_secs(30);

fn get_bytes(client: &Client, path: &str) -> (Vec<u8>, Option<String>) {
    let response = client.get(path).unwrap_or_else(|e| panic!("GET {path}: {e}"));
    assert_eq!(response.status, 200, "GET {path}: {}", response.text());
    assert_eq!(response.header("content-type"), Some("application/octet-stream"));
    (response.body.clone(), response.header("x-pcct-window").map(str::to_string))
}

fn decode(bytes: &[u8]) -> Profile {
    pprof::decode(bytes).expect("a gzipped profile.proto")
}

/// Sum of `/api/collapsed`'s values in `metric`.
fn collapsed_total(client: &Client, metric: &str) -> i64 {
    let text = client.get(&format!("/api/collapsed?metric={metric}")).expect("collapsed").text();
    text.lines().filter_map(|line| line.rsplit_once(' ')?.1.parse::<i64>().ok()).sum()
}

/// Checks one pprof with every decoder: prost, go tool pprof -raw and
/// -top, protoc; returns its prost decoding.
fn read_with_every_decoder(bytes: &[u8], fixture: &Fixture, name: &str) -> Profile {
    let profile = decode(bytes);
    let path = fixture.path(name);
    std::fs::write(&path, bytes).expect("written");
    assert_eq!(go_pprof_raw_totals(&path), totals(&profile), "go tool pprof -raw and prost disagree");
    assert_eq!(go_pprof_top_total(&path, "samples"), totals(&profile)[0], "go tool pprof -top");
    let text = protoc_decode(bytes);
    assert_eq!(text.matches("\nsample {").count() + usize::from(text.starts_with("sample {")), profile.sample.len());
    profile
}

fn live_target(jdk: &Jdk, fixture: &Fixture) -> Served {
    let mut served = start_served(Jvm::new(jdk, fixture, "LiveTarget"), fixture, "interval=1ms");
    served.jvm.wait_for_stdout_line("ready", SOON);
    served
}

/// One window of `seconds=2`, sampling only while it is open: opened
/// while paused, sampled until it has 20 new samples, paused again before
/// it ends. `None` if the machine was so slow that the window ended
/// before the pause (then it holds samples the comparison cannot place).
fn paused_window(client: &Client, base: u64) -> Option<(Vec<u8>, String)> {
    let scraper = {
        let client = client.clone().with_timeout(Duration::from_secs(120));
        std::thread::spawn(move || get_bytes(&client, "/debug/pprof/profile?seconds=2"))
    };
    poll_until(Instant::now() + SOON, || (u64_at(&client.get_json("/api/status"), "/windows/open") == 1).then_some(()))
        .expect("the window opens");
    let opened = Instant::now();
    resume(client);
    samples_beyond(client, base, 20);
    pause(client);
    let early = scraper.is_finished() || opened.elapsed() >= Duration::from_millis(1900);
    let (bytes, window) = scraper.join().expect("the scraper");
    (!early).then(|| (bytes, window.expect("an X-Pcct-Window header")))
}

one_jdk! {
    /// Three windows, each exactly the cumulative profile's growth over it,
    /// stack by stack; every decoder agrees on their totals, and so does
    /// `/api/collapsed` on the cumulative profile and its growth.
    fn windows_hold_exactly_their_samples_and_every_decoder_reads_them(jdk) {
        let fixture = Fixture::new("pprof-windows");
        let served = live_target(jdk, &fixture);
        let client = served.client.clone();
        samples_beyond(&client, 0, 50);
        pause(&client);
        let (bytes, _) = get_bytes(&client, "/api/pprof");
        let mut before = read_with_every_decoder(&bytes, &fixture, "cumulative.pb.gz");
        let types = sample_types(&before);
        assert_eq!(types[0], ("samples".to_string(), "count".to_string()));
        assert!(types.contains(&("cpu".to_string(), "nanoseconds".to_string())), "{types:?}");
        assert_eq!(totals(&before)[0], collapsed_total(&client, "samples"));
        assert_eq!(totals(&before)[1], collapsed_total(&client, "cpu"));
        let mut windows = 0;
        let mut attempts = 0;
        while windows < 3 {
            attempts += 1;
            assert!(attempts <= 6, "the machine was too slow for five windows out of six");
            let base = totals(&before)[0] as u64;
            let collapsed_before = collapsed_total(&client, "samples");
            let Some((window, kind)) = paused_window(&client, base) else {
                before = decode(&get_bytes(&client, "/api/pprof").0);
                continue;
            };
            assert_eq!(kind, "whole");
            let window = read_with_every_decoder(&window, &fixture, &format!("window-{windows}.pb.gz"));
            assert!(window.duration_nanos >= 2_000_000_000, "{}", window.duration_nanos);
            assert!(window.period > 0 && window.time_nanos > 0);
            let after = decode(&get_bytes(&client, "/api/pprof").0);
            let growth: Stacks = difference(&stacks(&after), &stacks(&before));
            assert!(totals(&window)[0] >= 20, "{:?}", totals(&window));
            assert_eq!(stacks(&window), growth, "window {windows} is not the profile's growth over it");
            assert_eq!(totals(&window)[0], collapsed_total(&client, "samples") - collapsed_before);
            assert!(
                stacks(&window).keys().any(|frames| frames.last().is_some_and(|leaf| leaf.starts_with("LiveTarget."))),
                "{:?}", stacks(&window).keys().collect::<Vec<_>>()
            );
            before = after;
            windows += 1;
        }
        let finished = served.jvm.wait_with_deadline(Duration::from_secs(60));
        finished.assert_success();
        assert_no_hs_err(fixture.dir());
    }
}

/// `(start, end)` of a window in Unix nanoseconds, from its profile.
fn span(profile: &Profile) -> (i64, i64) {
    (profile.time_nanos, profile.time_nanos + profile.duration_nanos)
}

/// Whether `inner` lies inside `outer`. A window's start is the instant
/// of its first snapshot (taken under the profile's lock, so two windows'
/// starts are ordered); its end is read after its last snapshot, late by
/// the time it took to cut the window: `margin` nanoseconds must spare
/// at that end.
fn inside(inner: (i64, i64), outer: (i64, i64), margin: i64) -> bool {
    inner.0 > outer.0 && inner.1 + margin <= outer.1
}

/// Asserts `smaller` holds no more of any stack, in any sample type, than `larger`.
fn assert_within(smaller: &Stacks, larger: &Stacks, what: &str) {
    let excess: Vec<_> =
        difference(larger, smaller).into_iter().filter(|(_, values)| values.iter().any(|&v| v < 0)).collect();
    assert!(excess.is_empty(), "{what}: stacks with more than the larger span holds: {excess:?}");
}

one_jdk! {
    /// Windows scraped at once while sampling runs (no pause): a 6 s window
    /// and, inside it, two 2 s windows one after the other. Each holds its
    /// own span: the two short ones (disjoint) hold together no more of any
    /// stack than the long one, the long one no more than the cumulative
    /// profile grew over it, and every one holds the busy thread's samples.
    /// (Exact equality needs a profile that holds still: the test above.)
    fn concurrent_windows_each_hold_their_own_span(jdk) {
        let fixture = Fixture::new("pprof-concurrent");
        let served = live_target(jdk, &fixture);
        let client = served.client.clone();
        samples_beyond(&client, 0, 50);
        let mut attempts = 0;
        loop {
            attempts += 1;
            assert!(attempts <= 3, "the machine was too slow to fit two 2 s windows in a 6 s one, three times");
            let before = stacks(&decode(&get_bytes(&client, "/api/pprof").0));
            let long = {
                let client = client.clone().with_timeout(Duration::from_secs(120));
                std::thread::spawn(move || get_bytes(&client, "/debug/pprof/profile?seconds=6"))
            };
            poll_until(Instant::now() + SOON, || (u64_at(&client.get_json("/api/status"), "/windows/open") >= 1).then_some(()))
                .expect("the long window opens");
            let slow = client.clone().with_timeout(Duration::from_secs(120));
            let short = [0, 1].map(|_| get_bytes(&slow, "/debug/pprof/profile?seconds=2"));
            let long = long.join().expect("the long window's scraper");
            let after = stacks(&decode(&get_bytes(&client, "/api/pprof").0));
            for (_, kind) in short.iter().chain([&long]) {
                assert_eq!(kind.as_deref(), Some("whole"));
            }
            let [first, second] = short.map(|(bytes, _)| decode(&bytes));
            let long = decode(&long.0);
            const MARGIN: i64 = 50_000_000;
            if !(inside(span(&first), span(&long), MARGIN) && inside(span(&second), span(&long), MARGIN)) {
                continue;
            }
            assert!(span(&first).1 <= span(&second).0, "{:?} then {:?}", span(&first), span(&second));
            for (window, seconds) in [(&first, 2), (&second, 2), (&long, 6)] {
                assert!(window.duration_nanos >= seconds * 1_000_000_000, "{}", window.duration_nanos);
                assert!(totals(window)[0] >= 20, "a {seconds} s window: {:?}", totals(window));
                assert!(
                    stacks(window).keys().any(|frames| frames.last().is_some_and(|leaf| leaf.starts_with("LiveTarget."))),
                    "{:?}", stacks(window).keys().collect::<Vec<_>>()
                );
            }
            let mut shorts = stacks(&first);
            add_stacks(&mut shorts, &stacks(&second));
            assert_within(&shorts, &stacks(&long), "the two 2 s windows against the 6 s one around them");
            assert_within(&stacks(&long), &difference(&after, &before), "the 6 s window against the profile's growth");
            assert!(totals(&long)[0] > totals(&first)[0] && totals(&long)[0] > totals(&second)[0]);
            break;
        }
        let finished = served.jvm.wait_with_deadline(Duration::from_secs(60));
        finished.assert_success();
        assert_no_hs_err(fixture.dir());
    }
}
