//! Late attach: `jcmd <pid> JVMTI.agent_load <so> "key:value;..."` to a
//! running Attachee.java (started without the agent). The agent profiles
//! from then on and writes its file at VM death; a second load is refused
//! and a bad option is refused, and in both cases the target keeps running
//! and exits 0. The threads already running are walked by pcct's own walker
//! (their `JavaThread` found through JVMTI), not by AsyncGetCallTrace.

use std::path::Path;
use std::time::Duration;

use pcct_tests::attach::{self, refused};
use pcct_tests::stress::{profile_json, sampler_counter};
use pcct_tests::{per_jdk_and_11, read_collapsed, Finished, Fixture, Jdk, Jvm, RunningJvm};

const DEADLINE: Duration = Duration::from_secs(60);

/// Starts Attachee (at most 60 s) and waits for its "ready".
fn start_attachee(jdk: &Jdk, fixture: &Fixture) -> RunningJvm {
    let mut jvm = Jvm::new(jdk, fixture, "Attachee").arg("60");
    if jdk.needs_dynamic_agent_flag() {
        jvm = jvm.flag("-XX:+EnableDynamicAgentLoading");
    }
    let mut target = jvm.spawn();
    target.wait_for_stdout_line("ready", DEADLINE);
    target
}

/// `jcmd <pid> JVMTI.agent_load <agent> <options>`; jcmd itself must succeed.
fn agent_load(jdk: &Jdk, target: &RunningJvm, options: &str, dir: &Path) -> Finished {
    let finished = attach::agent_load(jdk, target.pid(), options, dir, DEADLINE);
    assert!(finished.status.success(), "jcmd failed\n{}", finished.report());
    finished
}

/// Lets the target work `ms` more milliseconds, then waits for its exit 0.
fn finish(mut target: RunningJvm, ms: u32) -> Finished {
    assert!(target.is_running(), "the target stopped:\n{}", target.stderr());
    target.send_line(&format!("finish {ms}"));
    let finished = target.wait_with_deadline(DEADLINE);
    finished.assert_success();
    assert!(finished.stdout.contains("finished"), "Attachee did not finish normally\n{}", finished.report());
    finished
}

/// Attaches to a running Attachee at 1 ms with its profile written to
/// `profile_path`, lets its worker use one more second of CPU (however long
/// that takes on a busy machine) and waits for its exit.
fn attach_for_a_second(jdk: &Jdk, fixture: &Fixture, profile_path: &Path) -> Finished {
    let mut target = start_attachee(jdk, fixture);
    let options = format!("interval:1ms;file:{};http:off", profile_path.display());
    let loaded = agent_load(jdk, &target, &options, fixture.dir());
    assert!(loaded.stdout.contains("return code: 0"), "agent_load failed\n{}", loaded.report());
    // The sampler thread announces itself once it found the running threads.
    target.wait_for_stderr("pcct: attached:", DEADLINE);
    finish(target, 1000)
}

per_jdk_and_11! {
    fn attach_profiles_the_running_program(jdk) {
        let fixture = Fixture::new("attach");
        let profile_path = fixture.path("attach.collapsed");
        let finished = attach_for_a_second(jdk, &fixture, &profile_path);

        let summary = finished.summary();
        assert!(summary.samples >= 100, "JDK {}: too few samples after attach: {}", jdk.major, summary.line);
        assert!(profile_path.is_file(), "no profile written\n{}", finished.report());
        let stacks = read_collapsed(&profile_path);
        let busy: u64 = stacks
            .iter()
            .filter(|(frames, _)| frames.last().is_some_and(|leaf| leaf == "Attachee.busyWork"))
            .map(|(_, value)| value)
            .sum();
        assert!(busy > 0, "JDK {}: Attachee.busyWork is not in the profile:\n{stacks:?}", jdk.major);
        // busyWork is most of the CPU recorded after attach.
        let total: u64 = stacks.iter().map(|(_, value)| value).sum();
        assert!(busy * 2 > total, "busyWork {busy} of {total} ns\n{stacks:?}");
    }
}

per_jdk_and_11! {
    fn threads_running_before_the_attach_get_pccts_walker(jdk) {
        let fixture = Fixture::new("attach-walker");
        let profile_path = fixture.path("p.json");
        let finished = attach_for_a_second(jdk, &fixture, &profile_path);
        let json = profile_json(&profile_path);
        let [by_pcct, by_agct, partial] = ["walks_vm", "walks_agct", "walks_partial"].map(|name| sampler_counter(&json, name));
        let context = format!("JDK {}: {}\n{}", jdk.major, json["sampler"], finished.report());
        assert!(by_pcct >= 100, "too few walks by pcct's walker\n{context}");
        // The worker (discovered) is nearly all of the samples; AsyncGetCallTrace
        // walks only what pcct's walker gives up on.
        assert!(by_agct + partial <= by_pcct / 10, "AsyncGetCallTrace walked too much\n{context}");
    }
}

per_jdk_and_11! {
    fn second_attach_is_refused(jdk) {
        let fixture = Fixture::new("attach-twice");
        let mut target = start_attachee(jdk, &fixture);
        let first = agent_load(jdk, &target, "interval:10ms;http:off", fixture.dir());
        assert!(first.stdout.contains("return code: 0"), "first agent_load failed\n{}", first.report());
        target.wait_for_stderr("pcct: attached:", DEADLINE);

        let second = agent_load(jdk, &target, "interval:1ms;http:off", fixture.dir());
        assert!(refused(&second), "JDK {}: the second agent_load was not refused\n{}", jdk.major, second.report());
        target.wait_for_stderr("already loaded", DEADLINE);
        let finished = finish(target, 200);
        let refusals: Vec<_> = finished.agent_lines().into_iter().filter(|l| l.contains("already loaded")).collect();
        assert_eq!(refusals.len(), 1, "one line refuses the second load\n{}", finished.report());
        // The first agent kept running and shut down normally.
        finished.summary();
    }
}

per_jdk_and_11! {
    fn bad_option_on_attach_is_refused_and_the_target_keeps_running(jdk) {
        let fixture = Fixture::new("attach-bad-option");
        let mut target = start_attachee(jdk, &fixture);
        let loaded = agent_load(jdk, &target, "interval:abc;http:off", fixture.dir());
        assert!(refused(&loaded), "JDK {}: bad options were not refused\n{}", jdk.major, loaded.report());
        target.wait_for_stderr("pcct: bad option", DEADLINE);
        let finished = finish(target, 100);
        let lines = finished.agent_lines();
        assert_eq!(lines.len(), 1, "exactly one pcct line\n{}", finished.report());
        assert!(lines[0].contains("`interval"), "the line names the option: {}", lines[0]);
    }
}
