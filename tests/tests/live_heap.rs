//! Ground truth for the live heap: LiveSplit.java keeps byte arrays from
//! two methods, 59.7 % of the kept bytes from `keepA` and 40.3 % from `keepB`,
//! while `garbage` allocates ten times as many bytes and keeps none. At the
//! end it asks for collections and exits with the kept arrays reachable.
//! The profile written at VM death must show `live_bytes` split as they
//! are kept within 3 points, with `garbage` under 5 % of them,
//! while `alloc_bytes` shows the garbage as the bulk of what was allocated.
//!
//! What that takes: at `alloc=64k` the 310 MB kept give about 4,800
//! samples of kept arrays, so a share of 60 % is off by about 0.7 points
//! (one standard error); 3 points are four of them. `alloc_rate=off`
//! keeps every sample (the garbage's 48,000 too, which the live heap
//! tracks until the next sweep after they die).
//!
//! The second test asks a live agent: every view that takes a resource
//! (collapsed stacks, sites, hot methods, pprof) answers `live_bytes` with
//! the same split, and their totals agree with `/api/status`.
//!
//! The third test bounds the table: with `live=500` it never tracks more,
//! counts what did not fit, and every object it tracked is accounted for
//! (still tracked, found collected, or let go at a purge).

use std::time::Duration;

use pcct_tests::http::start_served;
use pcct_tests::stress::profile_json;
use pcct_tests::{one_jdk, per_jdk_and_11, Fixture, Jvm, Profile, QUIET_HTTP};

const CLASS: &str = "LiveSplit";
const TOLERANCE_POINTS: f64 = 3.0;
/// keepA's share of the kept bytes, headers included (616 of 1,032).
const KEPT_A: f64 = 100.0 * 616.0 / 1032.0;

/// `resource` (a field of the nodes' self weights) summed over the nodes
/// whose path passes through `LiveSplit.<method>`.
fn under(profile: &Profile, method: &str, resource: impl Fn(&pcct::Weight) -> u64) -> f64 {
    let wanted = format!("{CLASS}.{method}");
    let nodes = profile.nodes();
    let within = nodes.iter().filter(|node| profile.path(node).contains(&wanted));
    within.map(|node| resource(&node.self_weight) as f64).sum()
}

/// Runs LiveSplit until it kept `megabytes`, with `options`; the profile
/// written at VM death and its JSON.
fn run(jdk: &pcct_tests::Jdk, fixture: &Fixture, megabytes: &str, options: &str) -> (Profile, serde_json::Value) {
    let profile_path = fixture.path("p.json");
    let finished = Jvm::new(jdk, fixture, CLASS)
        .flag("-Xmx2g")
        .arg(megabytes)
        .agent(format!("{options},file={},{QUIET_HTTP}", profile_path.display()))
        .run(Duration::from_secs(300));
    finished.assert_success();
    (Profile::read(&profile_path), profile_json(&profile_path))
}

/// Every object the live heap tracked is still tracked, found collected
/// or let go at a purge.
fn assert_conserved(status: &serde_json::Value) {
    let field = |name: &str| status[name].as_u64().unwrap_or_else(|| panic!("no live_heap.{name}: {status}"));
    assert_eq!(
        field("tracked_total"),
        field("tracked") + field("collected_total") + field("purged_total"),
        "tracked objects unaccounted for: {status}"
    );
}

per_jdk_and_11! {
    fn live_bytes_split_as_the_program_keeps_them(jdk) {
        let fixture = Fixture::new("live-split");
        let (profile, json) = run(jdk, &fixture, "300", "alloc=64k,alloc_rate=off");
        let status = &json["live_heap"];
        let live = |method| under(&profile, method, |weight| weight.live_bytes);
        let allocated = |method| under(&profile, method, |weight| weight.alloc_bytes);
        let (a, b, garbage) = (live("keepA"), live("keepB"), live("garbage"));
        let total: f64 = profile.nodes().iter().map(|node| node.self_weight.live_bytes as f64).sum();
        let share_a = 100.0 * a / (a + b);
        let garbage_share = 100.0 * garbage / total;
        let allocated_garbage = 100.0 * allocated("garbage") / (allocated("keepA") + allocated("keepB") + allocated("garbage"));
        let allocated_a = 100.0 * allocated("keepA") / (allocated("keepA") + allocated("keepB"));
        let context = format!(
            "JDK {}: keepA {share_a:.2} % of the kept live bytes ({KEPT_A:.2} expected), garbage {garbage_share:.2} % of {:.1} MB live; garbage {allocated_garbage:.1} % of the allocated bytes, keepA {allocated_a:.2} % of the kept ones; live heap {status}",
            jdk.major,
            total / 1e6
        );
        eprintln!("{context}");
        assert!((share_a - KEPT_A).abs() <= TOLERANCE_POINTS, "{context}");
        assert!(garbage_share < 5.0, "{context}");
        assert!((a + b) / total > 0.9, "the kept arrays are most of the live bytes: {context}");
        assert!((allocated_garbage - 100.0 * 10160.0 / 11192.0).abs() <= TOLERANCE_POINTS, "{context}");
        // 300 MB of arrays kept (309.6 with their headers), estimated within
        // 15 % (measured: 1 to 8 % over on JDK 11 to 25, the allocation
        // estimate's own bias on this program, not the live heap's), less
        // the share of samples the event queue dropped: the program
        // reports about 15,000 samples a second, and a sampler thread kept
        // off its CPU for 35 ms lets the queue fill (a clean clone's suite
        // on two CPUs dropped 20 % of them, counted). The program makes
        // its garbage and its kept arrays in the same loop, so a drop takes
        // from each in proportion (the split above holds as it is).
        let sampler = &json["sampler"];
        let count = |key: &str| sampler[key].as_u64().unwrap_or(0) as f64;
        let recorded = count("allocations_recorded") / (count("allocations_recorded") + count("allocations_dropped"));
        assert!(recorded > 0.5, "most samples recorded: {recorded:.3}, {context}");
        let kept = 300.0 * 1048576.0 * 1.032 * recorded;
        assert!((a + b - kept).abs() / kept < 0.15, "{recorded:.3} of the samples recorded; {context}");
        assert!(status["sweeps"].as_u64().unwrap_or(0) > 0 && status["collected_total"].as_u64().unwrap_or(0) > 0, "{context}");
        assert_conserved(status);
    }
}

per_jdk_and_11! {
    fn the_table_stays_bounded_under_churn_and_accounts_for_every_object(jdk) {
        let fixture = Fixture::new("live-bounded");
        let (profile, json) = run(jdk, &fixture, "100", "alloc=16k,alloc_rate=off,live=500");
        let status = &json["live_heap"];
        let field = |name: &str| status[name].as_u64().unwrap_or_default();
        let context = format!("JDK {}: live heap {status}", jdk.major);
        eprintln!("{context}");
        assert_eq!(field("capacity"), 500, "{context}");
        assert!(field("tracked") <= 500, "{context}");
        assert!(field("dropped_total") > 0, "the kept arrays alone are more than 500 samples: {context}");
        assert!(field("collected_total") > 0, "{context}");
        assert_conserved(status);
        let nodes_live = profile.nodes().iter().filter(|node| node.self_weight.live_objects > 0).count();
        assert!(nodes_live > 0 && field("tracked") > 0, "{context}");
    }
}

/// keepA's share of the kept bytes in a collapsed-stacks answer.
fn collapsed_share(text: &str) -> (f64, f64) {
    let (mut a, mut b, mut total) = (0.0, 0.0, 0.0);
    for line in text.lines() {
        let Some((stack, value)) = line.rsplit_once(' ') else { continue };
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("not a collapsed line: {line}"));
        total += value;
        if stack.contains(&format!("{CLASS}.keepA")) {
            a += value;
        } else if stack.contains(&format!("{CLASS}.keepB")) {
            b += value;
        }
    }
    (100.0 * a / (a + b), total)
}

one_jdk! {
    fn every_view_answers_the_live_heap(jdk) {
        let fixture = Fixture::new("live-views");
        let jvm = Jvm::new(jdk, &fixture, CLASS).flag("-Xmx2g").arg("200").arg("--until-eof");
        let mut served = start_served(jvm, &fixture, "alloc=64k,alloc_rate=off");
        served.jvm.wait_for_stdout_line("done", Duration::from_secs(120));
        let client = served.client.clone();
        let status = client.get_json("/api/status");
        let live = &status["live_heap"];
        assert!(status["metrics"].as_array().unwrap().iter().any(|name| name == "live_bytes"), "{status}");
        let collapsed = client.get("/api/collapsed?resource=live_bytes").expect("collapsed").text();
        let (share_a, total) = collapsed_share(&collapsed);
        let context = format!("keepA {share_a:.2} % of the kept live bytes ({KEPT_A:.2} expected); live heap {live}");
        eprintln!("{context}");
        assert!((share_a - KEPT_A).abs() <= TOLERANCE_POINTS, "{context}");
        // The collapsed stacks hold every tracked object, as the status
        // counts them (the JVM still allocates a little after "done", and a
        // collection may come between two answers: 0.5 % leeway).
        let expected = live["live_bytes"].as_f64().unwrap();
        let agree = |total: f64| (total - expected).abs() <= expected * 0.005;
        assert!(agree(total), "collapsed total {total}, status {expected}: {context}");

        let sites = client.get_json("/api/sites?resource=live_bytes&limit=5");
        assert_eq!(sites["resource"], "live_bytes");
        let first = &sites["sites"][0];
        assert_eq!((&first["type"], &first["method"]["display"]), (&"byte[]".into(), &"LiveSplit.keepA".into()), "{sites}");
        let methods = client.get_json("/api/hot-methods?resource=live_bytes&by=total&limit=50");
        let total_of = |name: &str| {
            let found = methods["methods"].as_array().unwrap().iter().find(|m| m["method"]["display"] == name);
            found.and_then(|m| m["total"]["live_bytes"].as_f64()).unwrap_or_else(|| panic!("no {name} in {methods}"))
        };
        let (a, b) = (total_of("LiveSplit.keepA"), total_of("LiveSplit.keepB"));
        assert!((100.0 * a / (a + b) - share_a).abs() < 0.01, "hot methods and collapsed agree: {methods}");
        let hot_nodes = client.get_json("/api/hot-nodes?resource=live_bytes&limit=3");
        assert_eq!(hot_nodes["nodes"].as_array().map(Vec::len), Some(3), "{hot_nodes}");

        let pprof = client.get("/api/pprof?metric=live_bytes").expect("pprof");
        assert_eq!(pprof.status, 200);
        let profile = pcct::export::pprof::decode(&pprof.body).expect("a pprof profile");
        let live_index = profile.sample_type.iter().position(|t| profile.string_table[t.r#type as usize] == "live");
        let live_index = live_index.expect("a live sample type");
        let pprof_total: i64 = profile.sample.iter().map(|sample| sample.value[live_index]).sum();
        assert!(agree(pprof_total as f64), "pprof's live total {pprof_total}, status {expected}");
        // Go's own reader agrees.
        let path = fixture.path("live.pb.gz");
        std::fs::write(&path, &pprof.body).expect("write the profile");
        let totals = pcct_tests::pprof::go_pprof_raw_totals(&path);
        assert_eq!(totals.get(live_index), Some(&pprof_total), "go tool pprof -raw: {totals:?}");
        let finished = served.jvm.wait_with_deadline(Duration::from_secs(60));
        finished.assert_success();
    }
}
