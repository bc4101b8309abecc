//! Which signal takes the samples in a real JVM (README, "Which signal
//! takes a sample"): in cpu mode each thread's own CPU timer, one sample per
//! interval of its CPU; the sampler thread's signals in wall mode, with a
//! real-time `signal=` and with `timer=sampler`.
//!
//! The default run must use timers: a kernel that refuses perf events fails
//! it unless `PCCT_ALLOW_NO_PERF_EVENTS=1` (`pcct_tests::timers`); the
//! fallback itself is tested under a seccomp filter that refuses them
//! (ground_truth.rs).

use std::time::Duration;

use pcct_tests::stress::{describe_counters, profile_json, sampler_counter};
use pcct_tests::timers::{assert_default_timer_path, timer_path, TimerPath};
use pcct_tests::{per_jdk, Fixture, Jvm, QUIET_HTTP};

/// GroundTruth's busy thread runs this long.
const SECONDS: &str = "2";

fn run(jdk: &pcct_tests::jdk::Jdk, name: &str, options: &str) -> serde_json::Value {
    let fixture = Fixture::new(name);
    let profile_path = fixture.path("p.json");
    Jvm::new(jdk, &fixture, "GroundTruth")
        .arg(SECONDS)
        .agent(format!("{options},file={},{QUIET_HTTP}", profile_path.display()))
        .run(Duration::from_secs(90))
        .assert_success();
    profile_json(&profile_path)
}

const COUNTERS: [&str; 9] = [
    "timers_opened",
    "timers_refused",
    "timer_samples",
    "timer_samples_counter_timed",
    "handler_switched",
    "timer_signals_busy",
    "signals_sent",
    "samples_recorded",
    "ticks",
];

per_jdk! {
    fn in_cpu_mode_each_threads_own_timer_takes_its_samples(jdk) {
        let json = run(jdk, "timers-cpu", "mode=cpu,interval=1ms");
        let described = format!("JDK {}: {}", jdk.major, describe_counters(&json, &COUNTERS));
        let (opened, refused) = (sampler_counter(&json, "timers_opened"), sampler_counter(&json, "timers_refused"));
        let (timed, recorded) = (sampler_counter(&json, "timer_samples"), sampler_counter(&json, "samples_recorded"));
        assert_default_timer_path(&json, &described);
        if timer_path(&json, &described) == TimerPath::SamplerSignals {
            // Refused, and allowed to be: every thread falls back to the
            // sampler's signals.
            assert!(opened == 0 && refused > 0 && recorded > 0, "{described}");
            return;
        }
        // GroundTruth's busy thread, main and the JVM's Java threads.
        assert!(opened >= 2 && refused == 0, "{described}");
        // About one sample per ms of the busy thread's 2 s of CPU; a few of
        // the timer's signals find the previous sample not yet drained (the
        // sampler thread late on a loaded machine), and threads the sampler
        // saw before their timer opened may have one sampler signal each.
        assert!(timed >= 500 && timed * 10 >= recorded * 9, "{described}");
        // A signal finds the slot busy when the sampler thread has not yet
        // drained the previous two samples (before the slot had a second
        // place, the previous one: 3-7 % on a quiet machine, 26 % in one
        // run of a loop beside CI, another loop and a thread-churn test on
        // the same two cores; the sampler thread waits for a CPU like any
        // other). A sampler that stopped draining would leave all but the
        // first two busy.
        let busy = sampler_counter(&json, "timer_signals_busy");
        assert!(busy * 2 <= timed, "half the timer's signals found the slot busy: {described}");
        // With an invariant time-stamp counter the timer's handlers read no
        // clock once the sampler calibrated it (its first 20 ms), but on
        // every sixteenth signal and after a signal that comes over one and
        // a half intervals after the previous one (sampler/src/handler.rs,
        // "Timing itself"): 92-94 % of javac's samples read none on a quiet
        // machine, but on a busy one a thread waiting for a CPU between two
        // signals is common (17-31 % read none in three runs beside CI),
        // so only the path's use is checked, not how often.
        let counter_timed = sampler_counter(&json, "timer_samples_counter_timed");
        if invariant_tsc() {
            assert!(counter_timed > 0, "no handler timed by the counter: {described}");
            // Switched out during a handler of tens of microseconds: 0.1-0.9 %
            // of handlers on a quiet machine, 11 % with CI and a loop of
            // another JVM test on the same two cores (other threads' wakeups
            // preempt it). A switch seen at every read would be all of them.
            let switched = sampler_counter(&json, "handler_switched");
            assert!(switched * 3 <= counter_timed, "{described}");
        } else {
            assert_eq!(counter_timed, 0, "{described}");
        }
    }
}

/// Whether the processor's time-stamp counter is invariant (the kernel's
/// `nonstop_tsc` flag is CPUID's bit).
fn invariant_tsc() -> bool {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags = cpuinfo.lines().find(|line| line.starts_with("flags")).unwrap_or_default();
    flags.split_whitespace().any(|word| word == "nonstop_tsc")
}

per_jdk! {
    fn the_samplers_signals_take_them_in_wall_mode_with_a_real_time_signal_and_when_asked(jdk) {
        for (name, options) in [
            ("timers-wall", "mode=wall,interval=1ms"),
            ("timers-rt", "mode=cpu,interval=1ms,signal=SIGRTMIN+3"),
            ("timers-sampler", "mode=cpu,interval=1ms,timer=sampler"),
        ] {
            let json = run(jdk, name, options);
            let described = format!("JDK {} ({options}): {}", jdk.major, describe_counters(&json, &COUNTERS));
            assert_eq!(sampler_counter(&json, "timers_opened"), 0, "{described}");
            assert_eq!(sampler_counter(&json, "timer_samples"), 0, "{described}");
            assert!(sampler_counter(&json, "samples_recorded") >= 500, "{described}");
        }
    }
}
