//! Attach races against AttachTarget.java (busy workers and a thread that
//! keeps starting short-lived threads), none of it started with the agent:
//! - late attach under load, sampling at 1 ms with the HTTP server on: the
//!   busy workers hold most of the profile's CPU;
//! - two `agent_load`s at the same moment: exactly one is accepted, the
//!   other refused, and one agent profiles;
//! - attach to a JVM that is exiting (System.exit with a shutdown hook
//!   still running, at several points of its way out): jcmd may succeed or
//!   fail, but the JVM exits with the program's own status, within a
//!   deadline, without a crash; an agent that did attach writes its
//!   profile whole.

use std::time::{Duration, Instant};

use pcct_tests::attach::{accepted, agent_load, refused};
use pcct_tests::stress::{
    arg_seconds, assert_exit_code, deadline_for, load_seconds, profile_json, status, wait_for_addr_file,
};
use pcct_tests::{per_jdk, poll_until, Fixture, Jdk, Jvm, Profile, RunningJvm};

const JCMD_DEADLINE: Duration = Duration::from_secs(60);

/// Starts AttachTarget with two busy workers and waits for its "ready".
/// Starts the target, which gives up after `work_seconds` of load plus the
/// deadline's margin (a soak's load is longer than the default two minutes).
fn start_target(jdk: &Jdk, fixture: &Fixture, work_seconds: f64) -> RunningJvm {
    let lifetime = deadline_for(work_seconds).as_secs_f64().max(120.0);
    let mut jvm = Jvm::new(jdk, fixture, "AttachTarget").arg(arg_seconds(lifetime)).arg("2");
    if jdk.needs_dynamic_agent_flag() {
        jvm = jvm.flag("-XX:+EnableDynamicAgentLoading");
    }
    let mut target = jvm.spawn();
    target.wait_for_stdout_line("ready", deadline_for(0.0));
    target
}

per_jdk! {
    fn late_attach_under_load_profiles_and_serves(jdk) {
        let seconds = load_seconds(1.5);
        let fixture = Fixture::new("attach-load");
        let profile_path = fixture.path("p.json");
        let mut target = start_target(jdk, &fixture, seconds);
        let options = format!("interval:1ms;file:{};port:0;addr_file:{}", profile_path.display(), fixture.path("addr").display());
        let loaded = agent_load(jdk, target.pid(), &options, fixture.dir(), JCMD_DEADLINE);
        assert!(accepted(&loaded), "JDK {}: agent_load failed\n{}", jdk.major, loaded.report());
        target.wait_for_stderr("pcct: attached:", deadline_for(0.0));
        let address = wait_for_addr_file(&fixture.path("addr"), deadline_for(0.0));
        let wanted = (seconds * 500.0) as u64;
        let sampled = poll_until(Instant::now() + deadline_for(seconds), || {
            let status = status(address)?;
            (status["counters"]["samples_recorded"].as_u64()? >= wanted).then_some(status)
        });
        assert!(sampled.is_some(), "JDK {}: fewer than {wanted} samples after attach:\n{}", jdk.major, target.stderr());
        target.send_line("finish 100");
        let finished = target.wait_with_deadline(deadline_for(seconds));
        assert_exit_code(&finished, 0);
        let profile = Profile::read(&profile_path);
        // By CPU, not by samples: on a loaded machine a busy worker's samples
        // are deferred while it waits for a CPU (its CPU carried to its next
        // sample), where the churner, which runs briefly and often, is
        // sampled each time (one CI run: busyWork 296 of 820 samples but 85 %
        // of the CPU).
        let busy = profile.method_self("AttachTarget", "busyWork").cpu_ns as f64;
        let total = profile.sum_of_self().cpu_ns as f64;
        assert!(
            busy > 0.5 * total,
            "JDK {}: busyWork is not most of the profile's CPU ({busy} of {total} ns):\n{}",
            jdk.major,
            profile.top_methods(8)
        );
        let json = profile_json(&profile_path);
        assert!(json["sampler"]["threads_registered"].as_u64().unwrap_or(0) >= 3, "{}", json["sampler"]);
    }
}

per_jdk! {
    fn two_attaches_at_once_one_wins(jdk) {
        let fixture = Fixture::new("attach-twice-at-once");
        let mut target = start_target(jdk, &fixture, 0.0);
        let pid = target.pid();
        let (first, second) = std::thread::scope(|scope| {
            let one = scope.spawn(|| agent_load(jdk, pid, "interval:1ms;http:off", fixture.dir(), JCMD_DEADLINE));
            let two = scope.spawn(|| agent_load(jdk, pid, "interval:2ms;http:off", fixture.dir(), JCMD_DEADLINE));
            (one.join().expect("jcmd thread"), two.join().expect("jcmd thread"))
        });
        let outcomes = [(accepted(&first), refused(&first)), (accepted(&second), refused(&second))];
        assert!(
            outcomes == [(true, false), (false, true)] || outcomes == [(false, true), (true, false)],
            "JDK {}: exactly one load must win:\n{}\n{}",
            jdk.major,
            first.report(),
            second.report()
        );
        target.wait_for_stderr("already loaded", deadline_for(0.0));
        target.send_line("finish 300");
        let finished = target.wait_with_deadline(deadline_for(1.0));
        assert_exit_code(&finished, 0);
        let attached = finished.agent_lines().iter().filter(|line| line.starts_with("pcct: attached:")).count();
        assert_eq!(attached, 1, "one agent runs:\n{}", finished.report());
        finished.summary();
    }
}

per_jdk! {
    fn attach_to_a_jvm_that_is_exiting(jdk) {
        for hook_ms in [0, 300, 1500] {
            let fixture = Fixture::new(&format!("attach-exiting-{hook_ms}"));
            let profile_path = fixture.path("p.json");
            let mut target = start_target(jdk, &fixture, 0.0);
            target.send_line(&format!("exit 5 {hook_ms}"));
            target.wait_for_stdout_line("exiting", deadline_for(0.0));
            let options = format!("interval:1ms;http:off;file:{}", profile_path.display());
            let loaded = agent_load(jdk, target.pid(), &options, fixture.dir(), JCMD_DEADLINE);
            let finished = target.wait_with_deadline(deadline_for(hook_ms as f64 / 1000.0));
            eprintln!(
                "JDK {} hook {hook_ms} ms: jcmd {:?} accepted={}; JVM {:?} in {:?}",
                jdk.major,
                loaded.status,
                accepted(&loaded),
                finished.status,
                finished.elapsed
            );
            assert_exit_code(&finished, 5);
            if finished.stderr.contains("pcct: attached:") {
                // The agent came in on the way out: it shuts down with the VM
                // and its file is whole.
                let summary = finished.summary();
                let profile = Profile::read(&profile_path);
                assert_eq!(profile.json.total.samples, summary.samples, "{}", summary.line);
            }
        }
    }
}
