//! A thread parked with LockSupport.park (Parked.java) receives a signal at
//! every tick when the sampler signals it with the CPU-clock prefilter off
//! (`timer=sampler,prefilter=off`, cpu mode): the register checksum must see
//! that it has not run, count the sample as checksum-filtered and record
//! nothing for it.
//! Frames looked at: everything within Parked.parkForever (LockSupport.park,
//! Unsafe.park); other JVM threads that park are not this test's subject.

use std::time::Duration;

use pcct_tests::{per_jdk, Fixture, Jvm, Profile, QUIET_HTTP};

per_jdk! {
    fn parked_thread_is_checksum_filtered_not_recorded(jdk) {
        let fixture = Fixture::new("parked");
        let profile_path = fixture.path("p.json");
        let finished = Jvm::new(jdk, &fixture, "Parked")
            .arg("2")
            .agent(format!("mode=cpu,timer=sampler,prefilter=off,interval=1ms,file={},{QUIET_HTTP}", profile_path.display()))
            .run(Duration::from_secs(90));
        finished.assert_success();
        let summary = finished.summary();
        // The parked thread alone is signalled at every one of ~2000 ticks.
        assert!(summary.checksum_filtered >= 500, "JDK {}: too few checksum-filtered samples: {}", jdk.major, summary.line);
        assert_eq!(summary.idle_skips, 0, "the prefilter is off: {}", summary.line);

        // The parked thread's frames (everything within parkForever): it
        // runs briefly before it parks, and may be sampled then, but
        // - every sample recorded for it carries CPU time (cpu mode: a
        //   sample of a thread that had not run is filtered, not recorded);
        // - it is recorded in park at most a few times, while it is still on
        //   its way in (the first signals there find a thread that used
        //   CPU since the previous one), never once it sleeps;
        // - so its samples do not grow with the ~2000 signals it receives.
        let profile = Profile::read(&profile_path);
        let nodes: Vec<_> = profile.nodes().iter().filter(|n| profile.within(n, "Parked", "parkForever")).collect();
        let context = format!("JDK {}:\n{}{}", jdk.major, profile.describe(&nodes), summary.line);
        let zero_cpu: Vec<_> = nodes.iter().filter(|n| n.self_weight.samples > 0 && n.self_weight.cpu_ns == 0).collect();
        assert!(zero_cpu.is_empty(), "samples standing for no CPU were recorded for the parked thread:\n{context}");
        let in_park: u64 = nodes
            .iter()
            .filter(|n| profile.is(n, "jdk.internal.misc.Unsafe", "park"))
            .map(|n| n.self_weight.samples)
            .sum();
        assert!(in_park <= 3, "the parked thread was recorded {in_park} times in park:\n{context}");
        let recorded = profile.cum_of("Parked", "parkForever");
        assert!(recorded.samples <= 3, "the parked thread has {} samples:\n{context}", recorded.samples);
        // The busy thread was recorded normally.
        assert!(profile.cum_of("Parked", "spin").samples >= 200, "busy thread not sampled:\n{}", profile.top_methods(8));
    }
}
