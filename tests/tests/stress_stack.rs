//! Stacks at their worst while sampling at 1 ms:
//! - deep recursion: DeepStack recurses to a StackOverflowError (caught)
//!   and to 200 frames, with `depth=64`: samples of deeper stacks are
//!   counted (`samples_truncated`) and recorded under `[truncated]`, and no
//!   context is deeper than 64 frames plus that marker;
//! - exceptions thrown through 100 frames by two threads, and a
//!   deoptimisation storm (ExceptionStorm: class hierarchy changes that
//!   invalidate C2 code devirtualised by class hierarchy analysis, while it
//!   runs; HotSpot's `-XX:+PrintCompilation`, logged to a file of its own,
//!   shows the code made not entrant).
//!
//! No crash, exit 0, and the profile parses and adds up.

use pcct_tests::stress::{
    arg_seconds, assert_exit_code, deadline_for, describe_counters, load_seconds, profile_json, sampler_counter,
};
use pcct_tests::{per_jdk, Fixture, Jvm, Profile, QUIET_HTTP};

const DEPTH: usize = 64;

per_jdk! {
    fn stack_overflow_and_stacks_deeper_than_depth(jdk) {
        let seconds = load_seconds(3.0);
        let fixture = Fixture::new("stress-deep");
        let profile_path = fixture.path("p.json");
        let finished = Jvm::new(jdk, &fixture, "DeepStack")
            .arg(arg_seconds(seconds))
            .arg("200")
            .agent(format!("interval=1ms,depth={DEPTH},file={},{QUIET_HTTP}", profile_path.display()))
            .run(deadline_for(seconds));
        assert_exit_code(&finished, 0);
        assert!(finished.stdout_value("overflows") >= 1, "no StackOverflowError\n{}", finished.report());

        let json = profile_json(&profile_path);
        let truncated = sampler_counter(&json, "samples_truncated");
        let described = describe_counters(&json, &["samples_truncated", "samples_recorded", "samples_failed"]);
        assert!(truncated >= 50, "JDK {}: too few truncated samples: {described}", jdk.major);
        let profile = Profile::read(&profile_path);
        let markers: Vec<_> = profile.nodes().iter().filter(|n| profile.method_of(n).name == "[truncated]").collect();
        assert!(!markers.is_empty(), "JDK {}: no [truncated] in the profile", jdk.major);
        for marker in &markers {
            assert!(
                profile.parent(marker).is_some_and(|parent| parent.parent.is_none()),
                "[truncated] hangs under the root: {}",
                profile.describe(&[marker])
            );
        }
        let under_marker: u64 = markers.iter().map(|marker| marker.cum.samples).sum();
        assert_eq!(under_marker, truncated, "JDK {}: every truncated sample is under [truncated]: {described}", jdk.major);
        // [truncated] and DEPTH frames; an allocation's or a monitor's
        // class one deeper, on top of its stack.
        let is_type = |node: &&pcct::export::json::JsonNode| profile.method_of(node).kind == pcct::MethodKind::Type;
        let deepest = profile.nodes().iter().filter(|node| !is_type(node)).map(|node| node.depth).max().unwrap_or(0);
        assert!(deepest <= DEPTH + 1, "JDK {}: a context {deepest} frames deep with depth={DEPTH}", jdk.major);
        let deepest_type = profile.nodes().iter().filter(is_type).map(|node| node.depth).max().unwrap_or(0);
        assert!(deepest_type <= DEPTH + 2, "JDK {}: a class {deepest_type} frames deep with depth={DEPTH}", jdk.major);
        assert!(
            markers.iter().any(|marker| profile.nodes().iter().any(|n| n.parent == Some(marker.id)
                && (profile.is(n, "DeepStack", "deep") || profile.is(n, "DeepStack", "overflow")))),
            "JDK {}: the recursion is not under [truncated]",
            jdk.major
        );
        assert_eq!(profile.sum_of_self(), profile.json.total);
    }
}

per_jdk! {
    fn exceptions_through_many_frames_and_deoptimisation_storms(jdk) {
        let seconds = load_seconds(3.0);
        let fixture = Fixture::new("stress-exceptions");
        let profile_path = fixture.path("p.json");
        let vm_log = fixture.path("vm.log");
        let finished = Jvm::new(jdk, &fixture, "ExceptionStorm")
            .arg(arg_seconds(seconds))
            .flag("-XX:+UnlockDiagnosticVMOptions")
            .flag("-XX:+PrintCompilation")
            // The compilation log goes to its own file: on stdout it would
            // interleave with the program's result lines.
            .flag("-XX:+LogVMOutput")
            .flag(format!("-XX:LogFile={}", vm_log.display()))
            .flag("-XX:-DisplayVMOutput")
            .agent(format!("interval=1ms,file={},{QUIET_HTTP}", profile_path.display()))
            .run(deadline_for(seconds));
        assert_exit_code(&finished, 0);
        let exceptions = finished.stdout_value("exceptions");
        let rounds = finished.stdout_value("deopt_rounds");
        // PrintCompilation: "... DeoptDriver::run ... made not entrant".
        let compilation_log = std::fs::read_to_string(&vm_log).unwrap_or_else(|e| panic!("no {}: {e}", vm_log.display()));
        let invalidated = compilation_log
            .lines()
            .filter(|line| line.contains("DeoptDriver::run") && line.contains("made not entrant"))
            .count();
        eprintln!("JDK {}: {exceptions} exceptions, {rounds} deopt rounds, {invalidated} compiled DeoptDriver.run made not entrant", jdk.major);
        assert!(exceptions >= 1_000, "too few exceptions\n{}", finished.stderr);
        assert!(rounds >= 3 && invalidated >= 3, "JDK {}: no deoptimisation storm: {rounds} rounds, {invalidated} invalidated", jdk.major);

        let json = profile_json(&profile_path);
        let described = describe_counters(&json, &["samples_recorded", "samples_failed", "methods_unloaded", "agct_failures"]);
        eprintln!("JDK {}: {described}", jdk.major);
        assert!(sampler_counter(&json, "samples_recorded") >= 200, "JDK {}: {described}", jdk.major);
        let profile = Profile::read(&profile_path);
        assert_eq!(profile.sum_of_self(), profile.json.total);
        assert!(
            profile.cum_of("ExceptionStorm", "thrower").samples > 0,
            "JDK {}: ExceptionStorm.thrower never sampled:\n{}",
            jdk.major,
            profile.top_methods(10)
        );
    }
}
