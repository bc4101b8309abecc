//! The whole process's CPU against the kernel's own count (`threads=all`):
//! ProcessSplit.java runs GcStorm's allocation storm on a 64 MB heap (the
//! collector's threads take a large share of the CPU, the JIT compilers a
//! smaller one), then, with every thread still alive (the compilers too:
//! `-XX:-UseDynamicNumberOfCompilerThreads`), prints every thread's CPU from
//! `/proc/self/task/<tid>/stat` with its name, and the process's CPU.
//!
//! - The profile holds at least 95 % of the process's CPU since main
//!   started (the Java threads, HotSpot's own, the sampler thread). What the
//!   JVM used before (its start: the agent cannot sample it) is left out,
//!   and taken from the Java threads' below (the main thread's, mostly).
//! - Each kind's CPU in the profile (`[GC]`, the compilers, `[VM Thread]`)
//!   is what the kernel counted for the threads of that kind, within 3
//!   points of the process's CPU. (Not the Java threads': after the reading
//!   they still run the JVM's shutdown, which the profile holds and the
//!   reading cannot; the first point bounds what they can lack.)
//! - Every signal sent still ends in one outcome, and the profile holds the
//!   samples and CPU the counters say.

use std::collections::HashMap;
use std::time::Duration;

use pcct_sampler::thread_kinds::kind_of;
use pcct_tests::stress::assert_counters_conserved;
use pcct_tests::stress::profile_json;
use pcct_tests::{per_jdk, Fixture, Jvm, Profile, QUIET_HTTP};

const TOLERANCE_POINTS: f64 = 3.0;

/// CPU milliseconds by kind, from the program's `thread_cpu_ms <ms> <name>`
/// lines, and the process's CPU milliseconds since main started (the Java
/// threads' less what the process used before).
fn kernel_split(stdout: &str) -> (HashMap<&'static str, f64>, f64) {
    let mut by_kind: HashMap<&'static str, f64> = HashMap::new();
    let mut process = 0.0;
    let mut startup = 0.0;
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("thread_cpu_ms ") {
            let (ms, name) = rest.split_once(' ').unwrap_or((rest, ""));
            let kind = if kind_of(name) == "[native]" { "java" } else { kind_of(name) };
            *by_kind.entry(kind).or_default() += ms.parse::<f64>().expect("milliseconds");
        } else if let Some(ms) = line.strip_prefix("process_cpu_ms ") {
            process = ms.parse().expect("milliseconds");
        } else if let Some(ms) = line.strip_prefix("startup_cpu_ms ") {
            startup = ms.parse().expect("milliseconds");
        }
    }
    *by_kind.entry("java").or_default() -= startup;
    (by_kind, process - startup)
}

/// CPU milliseconds of the profile by the root of each sample's stack
/// (`java` for a Java stack).
fn profile_split(profile: &Profile) -> HashMap<String, f64> {
    let mut by_root: HashMap<String, f64> = HashMap::new();
    for node in profile.nodes() {
        let path = profile.path(node);
        let Some(root) = path.first() else { continue };
        let kind = if root.starts_with('[') { root.clone() } else { "java".to_string() };
        *by_root.entry(kind).or_default() += node.self_weight.cpu_ns as f64 / 1e6;
    }
    by_root
}

per_jdk! {
    fn the_profile_holds_the_whole_process_split_as_the_kernel_counts_it(jdk) {
        let fixture = Fixture::new("process-split");
        let profile_path = fixture.path("p.json");
        let finished = Jvm::new(jdk, &fixture, "ProcessSplit")
            .arg("6")
            .arg("3")
            .flag("-Xmx64m")
            .flag("-XX:-UseDynamicNumberOfCompilerThreads")
            .agent(format!("interval=1ms,threads=all,file={},{QUIET_HTTP}", profile_path.display()))
            .run(Duration::from_secs(120));
        finished.assert_success();
        let (kernel, process_ms) = kernel_split(&finished.stdout);
        let profile = Profile::read(&profile_path);
        let ours = profile_split(&profile);
        let profile_ms: f64 = ours.values().sum();
        let context = format!(
            "JDK {}: process {process_ms:.0} ms since main, kernel by kind {kernel:?}; profile {profile_ms:.0} ms by root {ours:?}\n{}",
            jdk.major,
            profile.top_methods(12)
        );
        eprintln!("{context}");
        assert!(profile_ms >= 0.95 * process_ms, "the profile holds under 95 % of the process's CPU since main\n{context}");
        let compilers = |split: &dyn Fn(&str) -> f64| split("[C1 CompilerThread]") + split("[C2 CompilerThread]");
        let kernel_share = |kind: &str| kernel.get(kind).copied().unwrap_or(0.0) * 100.0 / process_ms;
        let our_share = |kind: &str| ours.get(kind).copied().unwrap_or(0.0) * 100.0 / process_ms;
        assert!(kernel_share("[GC]") >= 10.0, "the storm kept the collector too idle to judge\n{context}");
        for (kind, theirs, mine) in [
            ("[GC]", kernel_share("[GC]"), our_share("[GC]")),
            ("compilers", compilers(&kernel_share), compilers(&our_share)),
            ("[VM Thread]", kernel_share("[VM Thread]"), our_share("[VM Thread]")),
        ] {
            assert!(
                (mine - theirs).abs() <= TOLERANCE_POINTS,
                "{kind}: {mine:.1} % of the process's CPU in the profile, {theirs:.1} % by the kernel (±{TOLERANCE_POINTS})\n{context}"
            );
        }
        assert_counters_conserved(&profile_json(&profile_path));
    }
}
