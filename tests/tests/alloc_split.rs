//! Ground truth for the allocation profile at the default options:
//! AllocSplit.java allocates AllocTruth's known split of bytes (60 %
//! byte[] at the bottom of a 121-frame recursion, 30 % small objects, 10 %
//! long[] from one method, half of it called from viaA and half from viaB). With
//! nothing but `file=` (and the HTTP server off), a run of 10 s must give
//! every context its share within 1 point and the by-caller split of
//! long[] within 0.03.
//!
//! What that takes: a share `p` of `n` recorded samples is off by about
//! `sqrt(p (1 - p) / n)`, so 1 point at four standard errors needs about
//! 40,000 samples, and 0.03 on a split of a tenth of them as many. At the
//! default `alloc=512k` the program reports about 12,000 samples a second
//! on a quiet machine, and the default `alloc_rate=5000` keeps 5,000 of
//! them a second (the kept ones weighed for the rest): 50,000 in 10 s.
//! The program runs until it also allocated 26 GB (about 50,000 samples
//! at 512 KiB), so a loaded machine, which runs it slower, keeps as many.
//! The deep path's events share their 121 frames with the thread's
//! previous event whenever that one was on the same path: they are
//! recorded from it (chained), and the check below holds their stacks to
//! the whole path. The classes (byte[], long[], Small) are named from
//! the callback thread's earlier names, read back from HotSpot's own
//! structures (`hotspot::classes`), for nearly every event: the check
//! below holds those names to the truth too.

use std::time::Duration;

use pcct::export::json::JsonNode;
use pcct::MethodKind;
use pcct_tests::stress::{profile_json, sampler_counter};
use pcct_tests::{per_jdk, Fixture, Jvm, Profile, QUIET_HTTP};

const CLASS: &str = "AllocSplit";
const SECONDS: &str = "10";
/// Megabytes the program allocates at least (about 50,000 samples).
const MEGABYTES: &str = "26000";
/// Frames of `deep` below `main`.
const DEPTH: usize = 121;
const TOLERANCE_POINTS: f64 = 1.0;
const TOLERANCE_SPLIT: f64 = 0.03;

/// The path of AllocSplit's methods from main down to the allocating one,
/// the class, and its share of the bytes in percent.
fn sites() -> Vec<(Vec<String>, &'static str, f64)> {
    let truth = |names: &[&str]| names.iter().map(|name| format!("AllocTruth.{name}")).collect::<Vec<_>>();
    let main = format!("{CLASS}.main");
    let mut deep = vec![main.clone()];
    deep.extend(std::iter::repeat_n(format!("{CLASS}.deep"), DEPTH));
    deep.extend(truth(&["bigArrays"]));
    let under_main = |names: &[&str]| [vec![main.clone()], truth(names)].concat();
    vec![
        (deep, "byte[]", 60.0),
        (under_main(&["smallObjects"]), "AllocTruth$Small", 30.0),
        (under_main(&["viaA", "longArrays"]), "long[]", 5.0),
        (under_main(&["viaB", "longArrays"]), "long[]", 5.0),
    ]
}

/// The bytes of `class` allocated in the context `path` (every site of it
/// there: a loop's allocation may have more than one bytecode index).
fn bytes_at(profile: &Profile, path: &[String], class: &str) -> f64 {
    let expected: Vec<String> = path.iter().cloned().chain([class.to_string()]).collect();
    let at = |node: &&JsonNode| {
        let method = profile.method_of(node);
        method.kind == MethodKind::Type && method.name == class && profile.path(node) == expected
    };
    profile.nodes().iter().filter(at).map(|node| node.self_weight.alloc_bytes as f64).sum()
}

per_jdk! {
    fn allocated_bytes_split_at_the_default_options(jdk) {
        let fixture = Fixture::new("alloc-split");
        let profile_path = fixture.path("p.json");
        let finished = Jvm::new(jdk, &fixture, CLASS)
            .arg(SECONDS)
            .arg(MEGABYTES)
            .agent(format!("file={},{QUIET_HTTP}", profile_path.display()))
            .run(Duration::from_secs(300));
        finished.assert_success();
        let profile = Profile::read(&profile_path);
        let counters = profile_json(&profile_path);
        let counter = |name| sampler_counter(&counters, name);
        let (recorded, dropped, thinned) =
            (counter("allocations_recorded"), counter("allocations_dropped"), counter("allocations_thinned"));
        let allocated: f64 = profile
            .nodes()
            .iter()
            .filter(|node| node.self_weight.alloc_bytes > 0)
            .map(|node| node.self_weight.alloc_bytes as f64)
            .sum();
        let found: Vec<f64> = sites().iter().map(|(path, class, _)| bytes_at(&profile, path, class)).collect();
        let elsewhere = 100.0 * (allocated - found.iter().sum::<f64>()) / allocated;
        let shares: Vec<f64> = found.iter().map(|bytes| 100.0 * bytes / allocated).collect();
        let context = format!(
            "JDK {}: shares {shares:.2?} (60, 30, 5, 5 expected), {elsewhere:.2} % elsewhere; {recorded} recorded, {dropped} dropped, {thinned} thinned, {} chained frames, {} classes named again, {} by JVMTI",
            jdk.major,
            counter("event_frames_shared"),
            counter("event_classes_reused"),
            counter("event_walks_jvmti"),
        );
        eprintln!("{context}");
        for ((path, class, share), measured) in sites().iter().zip(&shares) {
            assert!(
                (measured - share).abs() <= TOLERANCE_POINTS,
                "{class} under {}: {measured:.2} % of the bytes, expected {share} % (±{TOLERANCE_POINTS})\n{context}",
                path.last().expect("a method")
            );
        }
        let via_a = found[2] / (found[2] + found[3]);
        assert!((via_a - 0.5).abs() <= TOLERANCE_SPLIT, "long[] via viaA: {via_a:.3} of long[], expected 0.5\n{context}");
        // The 121 frames of the deep path were shared, not sent again.
        assert!(counter("event_frames_shared") > recorded, "{context}");
        // Three classes: all but each thread's first of each named again.
        assert!(counter("event_classes_reused") >= recorded - 100, "{context}");
    }
}
