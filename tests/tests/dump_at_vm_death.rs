//! Dump at VM death: with `file=`, the profile is written when the JVM
//! exits, parses, and holds every sample the agent counted: its total
//! equals the samples in the VM-death summary line (recorded with a Java
//! stack plus failed walks), and the nodes' self weights add up to it.

use std::time::Duration;

use pcct_tests::stress::{assert_counters_conserved, profile_json};
use pcct_tests::{per_jdk, per_jdk_and_11, read_collapsed, Fixture, Jvm, Profile, QUIET_HTTP};

per_jdk_and_11! {
    fn json_file_holds_every_sample(jdk) {
        let fixture = Fixture::new("dump-json");
        let profile_path = fixture.path("p.json");
        let finished = Jvm::new(jdk, &fixture, "LoopShort")
            .arg("2")
            .agent(format!("interval=1ms,file={},{QUIET_HTTP}", profile_path.display()))
            .run(Duration::from_secs(90));
        finished.assert_success();
        let summary = finished.summary();
        assert_eq!(summary.wrote, Some(format!("{} (json)", profile_path.display())), "{}", summary.line);
        assert!(profile_path.is_file(), "no file\n{}", finished.report());
        assert!(summary.samples >= 500, "JDK {}: too few samples: {}", jdk.major, summary.line);

        let profile = Profile::read(&profile_path);
        let total = profile.json.total;
        assert_eq!(profile.json.format, "pcct-json");
        assert_eq!(total.samples, summary.samples, "JDK {}: file total vs summary: {}", jdk.major, summary.line);
        assert_eq!(total.samples, summary.profile_samples, "{}", summary.line);
        assert_eq!(summary.samples, summary.by_kind(), "{}", summary.line);
        assert!(
            (total.cpu_ns as f64 / 1e9 - summary.profile_cpu_s).abs() <= 0.0006,
            "file CPU {} ns vs summary: {}",
            total.cpu_ns,
            summary.line
        );
        assert_eq!(profile.sum_of_self(), total, "the nodes' self weights add up to the total");
        let counters = profile.json.methods_self.iter().fold(0, |sum, entry| sum + entry.self_weight.samples);
        assert_eq!(counters, total.samples, "the hot-method counters add up to the total");
        let root = profile.nodes().iter().find(|node| node.parent.is_none()).expect("a root node");
        assert_eq!(root.cum, total, "the root's cum is the total");
        assert_counters_conserved(&profile_json(&profile_path));
    }
}

per_jdk! {
    /// Wall mode: threads that had not run (checksum-filtered) are credited
    /// their wall time at their previous context without a walk; the file
    /// holds those credits too, and the summary counts them.
    fn wall_mode_file_holds_every_sample_and_credit(jdk) {
        let fixture = Fixture::new("dump-wall");
        let profile_path = fixture.path("p.json");
        let finished = Jvm::new(jdk, &fixture, "Sleepers")
            .arg("2")
            .agent(format!("mode=wall,interval=5ms,file={},{QUIET_HTTP}", profile_path.display()))
            .run(Duration::from_secs(90));
        finished.assert_success();
        let summary = finished.summary();
        assert!(summary.line.contains("wall-time credits"), "JDK {}: {}", jdk.major, summary.line);
        let profile = Profile::read(&profile_path);
        assert_eq!(profile.json.total.samples, summary.samples, "JDK {}: file total vs summary: {}", jdk.major, summary.line);
        assert_eq!(profile.sum_of_self(), profile.json.total);
        assert_counters_conserved(&profile_json(&profile_path));
    }
}

per_jdk! {
    fn collapsed_file_holds_the_cpu_of_every_sample(jdk) {
        let fixture = Fixture::new("dump-collapsed");
        let profile_path = fixture.path("p.collapsed");
        let finished = Jvm::new(jdk, &fixture, "LoopShort")
            .arg("2")
            .agent(format!("interval=1ms,file={},{QUIET_HTTP}", profile_path.display()))
            .run(Duration::from_secs(90));
        finished.assert_success();
        let summary = finished.summary();
        assert_eq!(summary.wrote, Some(format!("{} (collapsed)", profile_path.display())), "{}", summary.line);
        let stacks = read_collapsed(&profile_path);
        // cpu mode: the collapsed values are CPU nanoseconds.
        let cpu_ns: u64 = stacks.iter().map(|(_, value)| value).sum();
        assert!(
            (cpu_ns as f64 / 1e9 - summary.profile_cpu_s).abs() <= 0.0006,
            "JDK {}: collapsed total {cpu_ns} ns vs summary: {}",
            jdk.major,
            summary.line
        );
        assert!(stacks.iter().any(|(frames, _)| frames.iter().any(|f| f == "LoopShort.shortCall")), "{stacks:?}");
    }
}
