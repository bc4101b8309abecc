//! Frame kinds against the truth: FrameKinds.java's methods run as known
//! kinds of code (two excluded from compilation, one that C2 may not
//! compile, one compiled by C2 with a leaf inlined into it). Run with
//! `annotate=on`, the collapsed file must give each method the suffix of
//! the kind it runs as in nearly all of its frames: `_[0]` interpreted,
//! `_[1]` C1, `_[j]` C2, `_[i]` inlined, as async-profiler's `ann` writes
//! them (benches/jvm/frame_kinds.py runs both side by side).

use std::collections::BTreeMap;
use std::time::Duration;

use pcct_tests::control::samples_beyond;
use pcct_tests::http::start_served;
use pcct_tests::pprof::go_pprof;
use pcct_tests::{one_jdk, per_jdk_and_11, read_collapsed, Fixture, Jvm, QUIET_HTTP};

const CLASS: &str = "FrameKinds";
const SECONDS: &str = "4";
/// A method's frames of its expected kind, percent of its frames: the
/// rest are its first calls, before it is compiled.
const MIN_EXPECTED_PERCENT: f64 = 90.0;
/// Fewest frames a method must have to be judged.
const MIN_FRAMES: u64 = 200;

/// Each method and the suffix of the kind it runs as once warm.
const EXPECTED: [(&str, &str); 5] =
    [("drive", "_[0]"), ("interpreted", "_[0]"), ("c1Only", "_[1]"), ("optimized", "_[j]"), ("inlinedLeaf", "_[i]")];

/// The flags that make FrameKinds' methods the kinds it says.
fn kinds_flags(jvm: Jvm, fixture: &Fixture) -> Jvm {
    let directives = fixture.path("c1-only.json");
    std::fs::write(&directives, "[{ match: \"FrameKinds::c1Only\", c2: { Exclude: true } }]\n").expect("directives");
    jvm.flag("-XX:CompileCommand=quiet")
        .flag(format!("-XX:CompileCommand=exclude,{CLASS}::drive"))
        .flag(format!("-XX:CompileCommand=exclude,{CLASS}::interpreted"))
        .flag("-XX:+UnlockDiagnosticVMOptions")
        .flag(format!("-XX:CompilerDirectivesFile={}", directives.display()))
}

/// For each FrameKinds method, its frames' weights by suffix ("" for none).
fn suffixes(stacks: &[(Vec<String>, u64)]) -> BTreeMap<String, BTreeMap<String, u64>> {
    let mut methods: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for (frames, value) in stacks {
        for frame in frames {
            let Some(name) = frame.strip_prefix(&format!("{CLASS}.")) else { continue };
            let (method, suffix) = match name.find("_[") {
                Some(at) => (&name[..at], &name[at..]),
                None => (name, ""),
            };
            *methods.entry(method.to_string()).or_default().entry(suffix.to_string()).or_default() += value;
        }
    }
    methods
}

per_jdk_and_11! {
    fn every_method_is_annotated_with_the_kind_it_runs_as(jdk) {
        let fixture = Fixture::new("frame-kinds");
        let path = fixture.path("p.collapsed");
        let jvm = kinds_flags(Jvm::new(jdk, &fixture, CLASS).arg(SECONDS), &fixture);
        let options = format!("interval=1ms,metric=samples,annotate=on,file={},{QUIET_HTTP}", path.display());
        jvm.agent(options).run(Duration::from_secs(120)).assert_success();
        let stacks = read_collapsed(&path);
        let total: u64 = stacks.iter().map(|(_, value)| value).sum();
        let methods = suffixes(&stacks);
        let context = format!("JDK {}: {total} samples, frames by suffix: {methods:?}", jdk.major);
        eprintln!("{context}");
        for (method, expected) in EXPECTED {
            let by_suffix = methods.get(method).unwrap_or_else(|| panic!("{method} was never sampled\n{context}"));
            let frames: u64 = by_suffix.values().sum();
            let of_kind = by_suffix.get(expected).copied().unwrap_or(0);
            assert!(frames >= MIN_FRAMES, "{method}: {frames} frames, too few to judge\n{context}");
            let percent = of_kind as f64 * 100.0 / frames as f64;
            assert!(
                percent >= MIN_EXPECTED_PERCENT,
                "{method}: {percent:.1} % of its frames are {expected} (at least {MIN_EXPECTED_PERCENT})\n{context}"
            );
        }
    }
}

one_jdk! {
    /// Recorded with `kinds=on` and served: the live collapsed stacks are
    /// plain unless `annotate=on`, and pprof's samples carry a
    /// `frame_kinds` label that `go tool pprof` reads; a run's file is
    /// plain too unless `annotate=on`.
    fn kinds_reach_the_live_answers_and_only_when_recorded(jdk) {
        let fixture = Fixture::new("frame-kinds-served");
        let jvm = kinds_flags(Jvm::new(jdk, &fixture, CLASS).arg("6"), &fixture);
        let served = start_served(jvm, &fixture, "interval=1ms,kinds=on");
        let client = served.client.clone();
        samples_beyond(&client, 0, 2500);
        let get = |path: &str| {
            let response = client.get(path).unwrap_or_else(|e| panic!("GET {path}: {e}"));
            assert_eq!(response.status, 200, "GET {path}: {}", response.text());
            response
        };
        let plain = suffixes(&pcct::export::collapsed::parse(&get("/api/collapsed?resource=samples").text()).unwrap());
        assert!(plain.values().all(|by_suffix| by_suffix.keys().all(|suffix| suffix.is_empty())), "{plain:?}");
        let annotated = get("/api/collapsed?resource=samples&annotate=on").text();
        let annotated = suffixes(&pcct::export::collapsed::parse(&annotated).unwrap());
        for (method, expected) in EXPECTED {
            assert!(annotated.get(method).is_some_and(|by| by.contains_key(expected)), "{method} {expected}: {annotated:?}");
        }
        // The hot edge into the inlined leaf: inlined as the samples saw it
        // and as the inline records say.
        let edges = client.get_json("/api/hot-edges?limit=50&resource=samples");
        let leaf_edges: Vec<&serde_json::Value> = edges["edges"]
            .as_array()
            .expect("edges")
            .iter()
            .filter(|edge| edge["callee"]["name"] == "inlinedLeaf" && edge["caller"]["name"] == "optimized")
            .collect();
        assert!(
            leaf_edges.iter().any(|edge| edge["sampled_inlined"] == true && edge["inlined"] == true),
            "optimized -> inlinedLeaf: {leaf_edges:#?}"
        );
        let pprof = fixture.path("kinds.pb.gz");
        std::fs::write(&pprof, &get("/api/pprof").body).expect("written");
        let tags = go_pprof(&["-tags"], &pprof);
        assert!(tags.contains("frame_kinds"), "go tool pprof -tags:\n{tags}");
        served.jvm.wait_with_deadline(Duration::from_secs(60)).assert_success();

        let fixture = Fixture::new("frame-kinds-off");
        let path = fixture.path("p.collapsed");
        let jvm = kinds_flags(Jvm::new(jdk, &fixture, CLASS).arg("1"), &fixture);
        jvm.agent(format!("interval=5ms,metric=samples,kinds=on,file={},{QUIET_HTTP}", path.display()))
            .run(Duration::from_secs(60))
            .assert_success();
        let methods = suffixes(&read_collapsed(&path));
        assert!(methods.contains_key("optimized"), "{methods:?}");
        assert!(methods.values().all(|by_suffix| by_suffix.keys().all(|suffix| suffix.is_empty())), "{methods:?}");
    }
}
