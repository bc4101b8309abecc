//! 100 sleeping threads beside one busy thread (Sleepers.java). Each
//! sleeper is in one long Thread.sleep inside Sleepers.sleepLong and uses
//! no CPU: in cpu mode it is never sampled while asleep (its own CPU timer
//! never fires; with `timer=sampler` the CPU-clock prefilter skips it: idle
//! skips); in wall mode every sleeper is sampled. Sleeper i sleeps under
//! i frames of Sleepers.descend, so each sleeper is a context of its own
//! and each is checked: in cpu mode, no sample worth less than 100 µs of
//! CPU; in wall mode, its samples, and wall time between half of the busy
//! thread's seconds and the JVM's whole life.

use std::time::Duration;

use pcct_tests::{per_jdk, per_jdk_and_11, Finished, Fixture, Jdk, Jvm, Profile, QUIET_HTTP};

const SLEEPERS: u64 = 100;
const SECONDS: f64 = 2.0;

fn run(jdk: &Jdk, options: &str) -> (Finished, Profile) {
    let fixture = Fixture::new("sleepers");
    let profile_path = fixture.path("p.json");
    let finished = Jvm::new(jdk, &fixture, "Sleepers")
        .arg(SECONDS.to_string())
        .agent(format!("{options},file={},{QUIET_HTTP}", profile_path.display()))
        .run(Duration::from_secs(90));
    finished.assert_success();
    let profile = Profile::read(&profile_path);
    (finished, profile)
}

/// Cpu mode with `options`: no sleeper sampled while asleep, the busy
/// thread sampled all along; returns the run's summary.
fn check_cpu_mode(jdk: &Jdk, options: &str) -> pcct_tests::summary::Summary {
    let (finished, profile) = run(jdk, options);
    let summary = finished.summary();
    let sleeper_nodes = profile.outermost_nodes_of("Sleepers", "sleepLong");
    let recorded = profile.cum_of("Sleepers", "sleepLong");
    // Once asleep, a sleeper uses no CPU and is never sampled again: the
    // sampler's prefilter skips it, and its own CPU timer never fires.
    // Before that, between the sampler's first sight of the new thread
    // and its sleep, it may use enough CPU (10 % of an interval, 100 µs,
    // for the sampler's signal; an interval for its timer) to be sampled
    // once, and that sample must carry that CPU. A sleeper that uses more
    // (JDK 25 in CI: 306 µs, a lambda's first call and the descent) may
    // rightly be signalled again while it runs, each sample again worth
    // 100 µs. So: each sleeper's samples worth at least 100 µs each, and at
    // most two per sleeper in all over ~2000 ticks; a sampler that
    // signalled sleeping threads would record thousands, worth nothing.
    let context = format!("JDK {} ({options}):\n{}{}", jdk.major, profile.describe(&sleeper_nodes), summary.line);
    assert!(recorded.samples <= 2 * SLEEPERS, "sleepers were sampled while asleep in cpu mode:\n{context}");
    for node in &sleeper_nodes {
        let (samples, cpu_ns) = (node.cum.samples, node.cum.cpu_ns);
        assert!(
            samples <= 1 || cpu_ns >= samples * 100_000,
            "a sleeper sampled while asleep in cpu mode: {samples} samples, {cpu_ns} ns of CPU:\n{context}"
        );
    }
    assert!(
        recorded.cpu_ns >= recorded.samples * 100_000,
        "sleeper samples carry less than 100 µs of CPU each:\n{context}"
    );
    // The busy thread was sampled all along: it holds most of the
    // profile's CPU. (Not a number of samples: on a loaded machine it
    // gets less CPU, and its samples deferred while it waited for a
    // CPU leave their time to the next: 184 samples carried its 460 ms
    // in a CI run beside a test loop.)
    let spin = profile.cum_of("Sleepers", "spin");
    assert!(
        spin.samples >= 50 && spin.cpu_ns * 2 >= profile.json.total.cpu_ns,
        "busy thread not sampled ({options}): {spin:?} of {:?}\n{}",
        profile.json.total,
        profile.top_methods(8)
    );
    summary
}

per_jdk_and_11! {
    fn cpu_mode_never_samples_a_sleeper_while_asleep(jdk) {
        check_cpu_mode(jdk, "mode=cpu,interval=1ms");
    }
}

per_jdk! {
    fn the_samplers_prefilter_skips_sleepers_at_every_tick(jdk) {
        let summary = check_cpu_mode(jdk, "mode=cpu,timer=sampler,interval=1ms");
        // 100 sleepers skipped at (nearly) every one of ~2000 ticks; at
        // least 100 skips each leaves a wide margin for a loaded machine.
        assert!(summary.idle_skips >= SLEEPERS * 100, "too few idle skips: {}", summary.line);
    }
}

per_jdk! {
    fn wall_mode_samples_every_sleeper(jdk) {
        let (finished, profile) = run(jdk, "mode=wall,interval=10ms");
        let summary = finished.summary();
        let recorded = profile.cum_of("Sleepers", "sleepLong");
        let sleeper_nodes = profile.outermost_nodes_of("Sleepers", "sleepLong");
        let context = format!("{}{}", profile.describe(&sleeper_nodes), summary.line);
        // Each sleeper lives through the busy thread's 2 s: ~200 samples
        // each at 10 ms; ask for a tenth of that.
        assert!(recorded.samples >= SLEEPERS * 20, "JDK {}: {} sleeper samples in wall mode\n{context}", jdk.major, recorded.samples);
        // ... standing for at least half of their 100 x 2 s of wall time.
        let wall_s = recorded.wall_ns as f64 / 1e9;
        assert!(wall_s >= SLEEPERS as f64 * SECONDS / 2.0, "JDK {}: sleepers' wall time {wall_s:.1} s\n{context}", jdk.major);
        // Each sleeper, on its own: one context (its depth of descend
        // frames), sampled all along, and never more wall time than the
        // JVM lived.
        let mut depths: Vec<usize> = sleeper_nodes.iter().map(|node| profile.path(node).len()).collect();
        depths.sort_unstable();
        depths.dedup();
        assert_eq!(depths.len() as u64, SLEEPERS, "JDK {}: not one context per sleeper\n{context}", jdk.major);
        let lived_s = finished.elapsed.as_secs_f64();
        for node in &sleeper_nodes {
            let (samples, wall_s) = (node.cum.samples, node.cum.wall_ns as f64 / 1e9);
            let path = profile.path(node).len();
            assert!(samples >= 20, "JDK {}: the sleeper at depth {path}: {samples} samples\n{context}", jdk.major);
            assert!(
                wall_s >= SECONDS / 2.0 && wall_s <= lived_s,
                "JDK {}: the sleeper at depth {path}: {wall_s:.2} s of wall time, the JVM lived {lived_s:.2} s\n{context}",
                jdk.major
            );
        }
        // The sleepers' frames: Thread.sleep under sleepLong.
        let sleep_frames = sleeper_nodes
            .iter()
            .flat_map(|node| profile.nodes().iter().filter(move |n| n.parent == Some(node.id)))
            .any(|child| profile.method_of(child).class == "java.lang.Thread");
        assert!(sleep_frames, "no java.lang.Thread frame under Sleepers.sleepLong:\n{context}");
    }
}
