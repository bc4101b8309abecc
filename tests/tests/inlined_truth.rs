//! Inlined code against the truth: InliningTruth.java's leaves are small
//! methods the JIT inlines into their caller. The truth is the same program
//! run with them not inlined (`-XX:CompileCommand=dontinline`), profiled the
//! same way; with inlining, pcct (which turns `DebugNonSafepoints` on) must
//! still give each leaf its share of the samples with a Java frame, within
//! 3 points, and find a Java frame in nearly every sample.
//!
//! `loops` (counted loops, 60/30/10) and `callout` (a looping leaf, then one
//! that calls out) are the programs whose debug information is exact at
//! every instruction; `straight` (straight-line code that C2 schedules across
//! the leaves' boundaries) is not judged: no profiler reading HotSpot's debug
//! information can split it (benches/jvm/inlining.py measures all three).

use std::time::Duration;

use pcct_tests::{per_jdk, Fixture, Jdk, Jvm, Profile, QUIET_HTTP};

const CLASS: &str = "InliningTruth";
const SECONDS: &str = "6";
const TOLERANCE_POINTS: f64 = 3.0;
/// Samples without a Java frame allowed, in percent of all samples.
const MAX_NO_JAVA_PERCENT: f64 = 2.0;

/// Shares (percent of the samples with a Java frame) of `leaves` in one run
/// of `program`, and the share of samples without a Java frame.
struct Shares {
    leaves: Vec<(&'static str, f64)>,
    no_java_percent: f64,
    java_samples: u64,
    top: String,
}

fn profile_run(jdk: &Jdk, program: &str, leaves: &[&'static str], inlined: bool) -> Shares {
    let label = format!("inlined-{program}-{}", if inlined { "on" } else { "truth" });
    let fixture = Fixture::new(&label);
    let profile_path = fixture.path("p.json");
    let mut jvm = Jvm::new(jdk, &fixture, CLASS).arg(program).arg(SECONDS);
    if !inlined {
        jvm = jvm.flag("-XX:CompileCommand=quiet").flag(format!("-XX:CompileCommand=dontinline,{CLASS}::{program}*"));
    }
    let finished =
        jvm.agent(format!("interval=1ms,file={},{QUIET_HTTP}", profile_path.display())).run(Duration::from_secs(120));
    finished.assert_success();
    let profile = Profile::read(&profile_path);
    let all = profile.sum_of_self().samples;
    let java = profile.sum_of_java_self().samples;
    Shares {
        leaves: leaves
            .iter()
            .map(|leaf| (*leaf, profile.method_self(CLASS, leaf).samples as f64 * 100.0 / java.max(1) as f64))
            .collect(),
        no_java_percent: (all - java) as f64 * 100.0 / all.max(1) as f64,
        java_samples: java,
        top: profile.top_methods(8),
    }
}

fn agrees_with_the_truth(jdk: &Jdk, program: &str, leaves: &[&'static str]) {
    let truth = profile_run(jdk, program, leaves, false);
    let inlined = profile_run(jdk, program, leaves, true);
    let context = format!(
        "JDK {} {program}: truth {:?} ({} Java samples, {:.2} % without a Java frame)\n{}\ninlined {:?} ({} Java samples, {:.2} % without)\n{}",
        jdk.major,
        truth.leaves,
        truth.java_samples,
        truth.no_java_percent,
        truth.top,
        inlined.leaves,
        inlined.java_samples,
        inlined.no_java_percent,
        inlined.top
    );
    eprintln!("JDK {} {program}: truth {:?}, inlined {:?}", jdk.major, truth.leaves, inlined.leaves);
    for run in [&truth, &inlined] {
        assert!(run.java_samples >= 2000, "too few samples to judge shares\n{context}");
        assert!(run.no_java_percent <= MAX_NO_JAVA_PERCENT, "samples without a Java frame\n{context}");
    }
    for ((leaf, expected), (_, share)) in truth.leaves.iter().zip(&inlined.leaves) {
        assert!(
            (share - expected).abs() <= TOLERANCE_POINTS,
            "{leaf}: {share:.1} % inlined, {expected:.1} % in the truth (±{TOLERANCE_POINTS})\n{context}"
        );
    }
}

per_jdk! {
    fn inlined_loops_keep_their_shares(jdk) {
        agrees_with_the_truth(jdk, "loops", &["loopsA", "loopsB", "loopsC"]);
    }
}

per_jdk! {
    fn inlined_leaf_that_calls_out_keeps_its_share(jdk) {
        agrees_with_the_truth(jdk, "callout", &["calloutA", "calloutB"]);
    }
}
