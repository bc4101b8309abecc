//! Inlined code against the truth: InliningTruth.java's leaves are small
//! methods the JIT inlines into their caller, with a nominal split of the
//! work by construction (loop iterations: 60/30/10, 80/20). Two truths:
//! - the nominal split: each leaf's share of the leaves' samples, with and
//!   without inlining, within 3 points of it (a bias that pcct's two runs
//!   share, such as a leaf given to its caller, fails here);
//! - the same program run with the leaves not inlined
//!   (`-XX:CompileCommand=dontinline`): with inlining, pcct (which turns
//!   `DebugNonSafepoints` on) must give the leaves together at least the
//!   share of the samples with a Java frame they had there, less 3 points
//!   (a leaf's samples handed to its caller would lower it).
//!
//! Both runs must find a Java frame in nearly every sample.
//!
//! `loops` (counted loops, 60/30/10) and `callout` (a looping leaf, then one
//! that calls out) are the programs whose debug information is exact at
//! every instruction; `straight` (straight-line code that C2 schedules across
//! the leaves' boundaries) is not judged: no profiler reading HotSpot's debug
//! information can split it (benches/jvm/inlining.py measures all three).

use std::time::Duration;

use pcct_tests::{per_jdk, per_jdk_and_11, Fixture, Jdk, Jvm, Profile, QUIET_HTTP};

const CLASS: &str = "InliningTruth";
const SECONDS: &str = "6";
const TOLERANCE_POINTS: f64 = 3.0;
/// Samples without a Java frame allowed, in percent of all samples.
const MAX_NO_JAVA_PERCENT: f64 = 2.0;

/// Shares (percent of the samples with a Java frame) of `leaves` in one run
/// of `program`, and the share of samples without a Java frame.
struct Shares {
    leaves: Vec<(&'static str, f64)>,
    /// Each leaf's share of the leaves' samples, percent.
    of_leaves: Vec<f64>,
    no_java_percent: f64,
    java_samples: u64,
    top: String,
}

fn profile_run(jdk: &Jdk, program: &str, leaves: &[(&'static str, f64)], inlined: bool) -> Shares {
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
    let samples: Vec<u64> = leaves.iter().map(|(leaf, _)| profile.method_self(CLASS, leaf).samples).collect();
    let in_leaves: u64 = samples.iter().sum();
    Shares {
        leaves: leaves
            .iter()
            .zip(&samples)
            .map(|((leaf, _), samples)| (*leaf, *samples as f64 * 100.0 / java.max(1) as f64))
            .collect(),
        of_leaves: samples.iter().map(|samples| *samples as f64 * 100.0 / in_leaves.max(1) as f64).collect(),
        no_java_percent: (all - java) as f64 * 100.0 / all.max(1) as f64,
        java_samples: java,
        top: profile.top_methods(8),
    }
}

/// `leaves`: each leaf with its nominal share of the leaves' work, percent.
fn agrees_with_the_truth(jdk: &Jdk, program: &str, leaves: &[(&'static str, f64)]) {
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
    eprintln!(
        "JDK {} {program}: truth {:?} {:?}, inlined {:?} {:?}",
        jdk.major, truth.leaves, truth.of_leaves, inlined.leaves, inlined.of_leaves
    );
    for (run, name) in [(&truth, "not inlined"), (&inlined, "inlined")] {
        assert!(run.java_samples >= 2000, "too few samples to judge shares\n{context}");
        assert!(run.no_java_percent <= MAX_NO_JAVA_PERCENT, "samples without a Java frame\n{context}");
        for ((leaf, nominal), share) in leaves.iter().zip(&run.of_leaves) {
            assert!(
                (share - nominal).abs() <= TOLERANCE_POINTS,
                "{leaf} ({name}): {share:.1} % of the leaves' samples, {nominal} % nominal (±{TOLERANCE_POINTS})\n{context}"
            );
        }
    }
    // Each leaf's own share already meets the nominal split in both runs; a
    // second per-leaf comparison between the runs would add both runs' noise
    // (±3 points each on `loopsA`). What inlining may not do is hand the
    // leaves' samples to their caller: the leaves together keep at least the
    // share of the Java samples they had when not inlined (inlining removes
    // call overhead, so they gain rather than lose).
    let together = |run: &Shares| run.leaves.iter().map(|(_, share)| share).sum::<f64>();
    assert!(
        together(&inlined) >= together(&truth) - TOLERANCE_POINTS,
        "the leaves hold {:.1} % of the Java samples inlined, {:.1} % not inlined (at most {TOLERANCE_POINTS} points less)\n{context}",
        together(&inlined),
        together(&truth)
    );
}

per_jdk_and_11! {
    fn inlined_loops_keep_their_shares(jdk) {
        agrees_with_the_truth(jdk, "loops", &[("loopsA", 60.0), ("loopsB", 30.0), ("loopsC", 10.0)]);
    }
}

per_jdk! {
    fn inlined_leaf_that_calls_out_keeps_its_share(jdk) {
        agrees_with_the_truth(jdk, "callout", &[("calloutA", 80.0), ("calloutB", 20.0)]);
    }
}
