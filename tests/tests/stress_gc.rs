//! GC pressure while sampling at 1 ms: GcStorm's three threads allocate on
//! a 64 MB heap (hundreds of collections in a few seconds, live objects
//! moved), with G1 and with the Parallel collector. No crash, exit 0,
//! collections happened, samples were taken (walks during a collection
//! fail and are counted under `[gc_active]` and friends), and the profile
//! parses and adds up. Allocations are sampled meanwhile, every 32 KiB (16
//! times as often as by default): their stacks are read in the allocating
//! threads while the collector runs, and they are found in the profile.

use pcct_tests::stress::{
    arg_seconds, assert_exit_code, deadline_for, describe_counters, load_seconds, profile_json, sampler_counter,
};
use pcct_tests::{per_jdk, Fixture, Jdk, Jvm, Profile, QUIET_HTTP};

fn allocation_storm(jdk: &Jdk, collector: &str) {
    let seconds = load_seconds(3.0);
    let fixture = Fixture::new(&format!("stress-gc-{collector}"));
    let profile_path = fixture.path("p.json");
    let finished = Jvm::new(jdk, &fixture, "GcStorm")
        .arg(arg_seconds(seconds))
        .arg("3")
        .flag("-Xmx64m")
        .flag(format!("-XX:+Use{collector}"))
        .agent(format!("interval=1ms,alloc=32k,alloc_rate=off,file={},{QUIET_HTTP}", profile_path.display()))
        .run(deadline_for(seconds));
    assert_exit_code(&finished, 0);
    let collections = finished.stdout_value("collections");
    let allocated = finished.stdout_value("allocated_mb");
    assert!(collections >= 20, "JDK {} {collector}: only {collections} collections\n{}", jdk.major, finished.report());

    let json = profile_json(&profile_path);
    let names = ["samples_recorded", "samples_failed", "agct_failures", "allocations_recorded", "allocations_dropped"];
    let described = describe_counters(&json, &names);
    eprintln!("JDK {} {collector}: {allocated} MB allocated, {collections} collections; {described}", jdk.major);
    assert!(sampler_counter(&json, "samples_recorded") >= 50, "JDK {} {collector}: {described}", jdk.major);
    let summary = finished.summary();
    let profile = Profile::read(&profile_path);
    assert_eq!(profile.json.total.samples, summary.samples, "{}", summary.line);
    assert_eq!(profile.sum_of_self(), profile.json.total);
    assert!(profile.cum_of("GcStorm", "storm").samples > 0, "{}", profile.top_methods(10));
    assert!(sampler_counter(&json, "allocations_recorded") >= 100, "JDK {} {collector}: {described}", jdk.major);
    assert!(
        profile.cum_of("GcStorm", "storm").alloc_bytes > 0,
        "JDK {} {collector}: no allocation in storm",
        jdk.major
    );
}

per_jdk! {
    fn allocation_storm_with_g1(jdk) {
        allocation_storm(jdk, "G1GC");
    }
}

per_jdk! {
    fn allocation_storm_with_parallel_gc(jdk) {
        allocation_storm(jdk, "ParallelGC");
    }
}
