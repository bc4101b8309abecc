//! Thread churn while sampling at 1 ms: ThreadChurn starts tens of
//! thousands of short-lived threads, 16 at a time (signals race thread
//! exit; slots are retired and reused; with pid_max at 32768 the kernel
//! reuses thread ids too). No crash, exit 0, and the counters add up:
//! every thread was registered and all but the handful still alive at VM
//! death ended, none went untracked, and the profile's weights are whole.

use pcct_tests::stress::{
    arg_seconds, assert_counters_conserved, assert_exit_code, deadline_for, describe_counters, load_seconds,
    profile_json, sampler_counter,
};
use pcct_tests::{per_jdk, Fixture, Jvm, Profile, QUIET_HTTP};

/// Java threads alive at VM death besides the churned ones (main,
/// Reference Handler, Finalizer, Signal Dispatcher, Common-Cleaner, ...).
const LIVE_AT_DEATH_AT_MOST: u64 = 32;
/// The least time the program is given to start its threads: 10,000 at
/// 125 a second, three times slower than the slowest run seen.
const MIN_LIMIT_SECONDS: f64 = 120.0;

per_jdk! {
    fn tens_of_thousands_of_threads_come_and_go(jdk) {
        let seconds = load_seconds(4.0);
        let wanted = (5_000.0 * seconds) as u64;
        // The program stops at `wanted` threads (about 4 s on a quiet
        // machine) or after `limit`: generous, because the check below
        // wants 10,000 started however slow the machine (ci55, beside two
        // test loops and a build: 6,000-6,750 in the 16 s it had then).
        let limit = (seconds * 4.0).max(MIN_LIMIT_SECONDS);
        let fixture = Fixture::new("stress-threads");
        let profile_path = fixture.path("p.json");
        let finished = Jvm::new(jdk, &fixture, "ThreadChurn")
            .arg(wanted.to_string())
            .arg("16")
            .arg(arg_seconds(limit))
            .agent(format!("interval=1ms,alloc=8k,alloc_rate=off,file={},{QUIET_HTTP}", profile_path.display()))
            .run(deadline_for(limit));
        assert_exit_code(&finished, 0);
        let started = finished.stdout_value("threads");
        assert!(started >= 10_000.min(wanted), "JDK {}: only {started} threads started\n{}", jdk.major, finished.report());

        let json = profile_json(&profile_path);
        let counter = |name| sampler_counter(&json, name);
        let names = [
            "threads_registered", "threads_ended", "threads_untracked", "threads_excluded", "signals_sent",
            "signal_failures", "signals_stale", "signals_stray", "samples_recorded", "samples_failed", "samples_lost",
            "samples_busy", "allocations_recorded", "allocations_dropped",
        ];
        let described = describe_counters(&json, &names);
        eprintln!("JDK {}: {started} threads: {described}", jdk.major);
        let (registered, ended) = (counter("threads_registered"), counter("threads_ended"));
        assert!(registered >= started, "JDK {}: {started} threads started, {registered} registered: {described}", jdk.major);
        assert!(ended <= registered, "{described}");
        assert!(
            registered - ended <= LIVE_AT_DEATH_AT_MOST,
            "JDK {}: {} threads still registered at VM death: {described}",
            jdk.major,
            registered - ended
        );
        assert_eq!(counter("threads_untracked"), 0, "JDK {}: the slot table overflowed: {described}", jdk.major);
        assert!(counter("samples_recorded") >= 200, "JDK {}: too few samples: {described}", jdk.major);
        // Allocations in threads that start and end around their events.
        assert!(counter("allocations_recorded") >= 100, "JDK {}: too few allocations: {described}", jdk.major);

        let summary = finished.summary();
        assert_eq!(summary.samples, summary.by_kind(), "{}", summary.line);
        let profile = Profile::read(&profile_path);
        assert_eq!(profile.json.total.samples, summary.samples, "{}", summary.line);
        assert_eq!(profile.sum_of_self(), profile.json.total, "the nodes' self weights add up to the total");
        assert_counters_conserved(&json);
        assert!(
            profile.cum_of("ThreadChurn", "shortWork").samples > 0,
            "JDK {}: ThreadChurn.shortWork never sampled:\n{}",
            jdk.major,
            profile.top_methods(10)
        );
    }
}
