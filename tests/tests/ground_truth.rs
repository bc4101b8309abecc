//! Ground truth: GroundTruth.java spends known shares of its busy thread's
//! CPU in known methods (by construction, see the program): self CPU of
//! heavy 40 %, medium 20 %, light 10 %, shared 30 %, and shared is reached
//! from viaA and viaB with a 2:1 split. pcct's hot-method counters must
//! find these shares within 5 points, and shared must be two calling
//! contexts (two nodes) with the right split. The busy thread's samples
//! must number its CPU time over the interval within 15 % (25 % when the
//! sampler thread's signals take them, on its wall-clock ticks), and the run must
//! say which timer took them.

use std::time::Duration;

use pcct_tests::profile::{assert_sample_rate, SAMPLER_RATE_TOLERANCE, TIMER_RATE_TOLERANCE};
use pcct_tests::stress::{profile_json, sampler_counter};
use pcct_tests::timers::{assert_default_timer_path, timer_path, NoPerfEvents, TimerPath};
use pcct_tests::{per_jdk, per_jdk_and_11, Fixture, Jvm, Profile, QUIET_HTTP};

const CLASS: &str = "GroundTruth";
/// (method, expected share of self CPU over the four, in percent).
const TRUTH: [(&str, f64); 4] = [("heavy", 40.0), ("medium", 20.0), ("light", 10.0), ("shared", 30.0)];
const TOLERANCE_POINTS: f64 = 5.0;
/// Every run's interval.
const INTERVAL: Duration = Duration::from_millis(1);

per_jdk_and_11! {
    fn hot_method_shares_and_two_contexts_of_shared(jdk) {
        check_shares(jdk, "interval=1ms", Timer::Default);
    }
}

per_jdk_and_11! {
    // The same, sampled by the sampler thread's signals when asked.
    fn hot_method_shares_and_two_contexts_of_shared_by_the_samplers_signals(jdk) {
        check_shares(jdk, "interval=1ms,timer=sampler", Timer::Sampler);
    }
}

per_jdk_and_11! {
    // The default options where the kernel refuses perf events (a seccomp
    // filter answers perf_event_open with EACCES, as perf_event_paranoid 3
    // does): every thread is refused its timer, and the sampler's signals
    // take the samples, as true.
    fn hot_method_shares_where_the_kernel_refuses_perf_events(jdk) {
        check_shares(jdk, "interval=1ms", Timer::Refused);
    }
}

per_jdk! {
    // With a safepoint every millisecond, the busy thread is often sampled
    // in the handler of a loop's safepoint poll (HotSpot's fault handler
    // sends it there, and the sampling signal held meanwhile arrives at the
    // handler's first instruction): those samples are the method's at the
    // poll, walked to the bottom like any other.
    fn hot_method_shares_with_a_safepoint_every_millisecond(jdk) {
        let flags = ["-XX:+UnlockDiagnosticVMOptions", "-XX:+SafepointALot", "-XX:GuaranteedSafepointInterval=1"];
        let profile = check_shares_with(jdk, "interval=1ms", Timer::Default, &flags);
        let partial: u64 = profile
            .nodes()
            .iter()
            .filter(|node| profile.is_partial(node))
            .map(|node| node.self_weight.samples)
            .sum();
        let total = profile.json.total.samples;
        assert!(
            partial * 200 <= total,
            "JDK {}: {partial} of {total} samples in partial stacks or without a Java frame (at most 0.5 %)\ntop methods:\n{}",
            jdk.major,
            profile.top_methods(12)
        );
    }
}

/// Which timer must take a run's samples.
#[derive(Clone, Copy, PartialEq)]
enum Timer {
    /// The default: each thread's own (a refusing kernel fails the test
    /// unless `PCCT_ALLOW_NO_PERF_EVENTS=1`).
    Default,
    /// `timer=sampler`: the sampler's signals, no timer opened.
    Sampler,
    /// The default under a kernel that refuses perf events: every thread
    /// refused, the sampler's signals.
    Refused,
}

fn check_shares(jdk: &pcct_tests::jdk::Jdk, options: &str, timer: Timer) {
    check_shares_with(jdk, options, timer, &[]);
}

/// Runs GroundTruth with the agent's `options` and the JVM's `flags`,
/// checks the timer that sampled, the busy thread's sample count, the
/// shares and shared's contexts; returns the profile.
fn check_shares_with(jdk: &pcct_tests::jdk::Jdk, options: &str, timer: Timer, flags: &[&str]) -> Profile {
    let fixture = Fixture::new("ground-truth");
    let profile_path = fixture.path("p.json");
    let mut jvm = flags.iter().fold(Jvm::new(jdk, &fixture, CLASS), |jvm, flag| jvm.flag(*flag));
    if timer == Timer::Refused {
        jvm = jvm.launcher(NoPerfEvents::build(fixture.dir()).path());
    }
    let finished = jvm
        .arg("4")
        .agent(format!("{options},file={},{QUIET_HTTP}", profile_path.display()))
        .run(Duration::from_secs(90));
    finished.assert_success();
    let profile = Profile::read(&profile_path);
    let summary = finished.summary().line;
    let counters = profile_json(&profile_path);
    let path_context = format!("JDK {} ({options}): {summary}", jdk.major);
    match timer {
        Timer::Default => assert_default_timer_path(&counters, &path_context),
        Timer::Sampler | Timer::Refused => {
            assert_eq!(timer_path(&counters, &path_context), TimerPath::SamplerSignals, "{path_context}");
            let refused = sampler_counter(&counters, "timers_refused");
            assert_eq!(refused > 0, timer == Timer::Refused, "{refused} threads refused a timer\n{path_context}");
        }
    }
    let busy = profile.cum_of(CLASS, "run");
    let rate_context = format!("{path_context}\n{}", profile.top_methods(8));
    let sampled_by_timers = timer_path(&counters, &path_context) == TimerPath::ThreadTimers;
    let tolerance = if sampled_by_timers { TIMER_RATE_TOLERANCE } else { SAMPLER_RATE_TOLERANCE };
    assert_sample_rate(busy.samples, finished.stdout_value("busy_cpu_ns"), INTERVAL, tolerance, &rate_context);

    let selfs: Vec<(&str, f64, u64)> = TRUTH
        .iter()
        .map(|(name, _)| {
            let weight = profile.method_self(CLASS, name);
            (*name, weight.cpu_ns as f64, weight.samples)
        })
        .collect();
    let total_cpu: f64 = selfs.iter().map(|(_, cpu, _)| cpu).sum();
    let total_samples: u64 = selfs.iter().map(|(_, _, samples)| samples).sum();
    let context = format!(
        "JDK {} ({options}): self (cpu ns, samples): {selfs:?}\ntop methods:\n{}",
        jdk.major,
        profile.top_methods(12)
    );
    assert!(total_samples >= 400, "too few samples in the four methods to judge shares\n{context}");
    for ((name, cpu, _), (_, expected)) in selfs.iter().zip(TRUTH) {
        let share = cpu * 100.0 / total_cpu;
        assert!(
            (share - expected).abs() <= TOLERANCE_POINTS,
            "{name}: {share:.1} % of self CPU, expected {expected} % (±{TOLERANCE_POINTS})\n{context}"
        );
    }

    // shared: exactly two contexts, one under viaA and one under viaB, split 2:1.
    let shared = profile.nodes_of(CLASS, "shared");
    let contexts = profile.describe(&shared);
    assert_eq!(shared.len(), 2, "shared must have two calling contexts:\n{contexts}");
    let under = |caller: &str| {
        let nodes: Vec<_> =
            shared.iter().filter(|node| profile.parent(node).is_some_and(|p| profile.is(p, CLASS, caller))).collect();
        assert_eq!(nodes.len(), 1, "one context of shared under {caller}:\n{contexts}");
        nodes[0].self_weight.cpu_ns as f64
    };
    let (via_a, via_b) = (under("viaA"), under("viaB"));
    let share_a = via_a * 100.0 / (via_a + via_b);
    let expected_a = 200.0 / 3.0;
    assert!(
        (share_a - expected_a).abs() <= TOLERANCE_POINTS,
        "shared via viaA: {share_a:.1} % of shared's CPU, expected {expected_a:.1} % (±{TOLERANCE_POINTS})\n{contexts}"
    );
    profile
}
