//! Bounded memory: BranchyContexts makes about 4^14 distinct calling
//! contexts on two threads while a third generates classes with fresh
//! method names (and unloads old ones), sampled at 1 ms with a small arena
//! (`arena=1m`) and the smallest method-name budget (`methods=256k`).
//!
//! - The agent's own heap (counted by its allocator, `agent_heap_peak_bytes`
//!   in the dump) never exceeds `arena + methods + AGENT_HEAP_FIXED_BYTES`.
//! - The JVM's peak anonymous resident memory (heaps, stacks, mappings of
//!   no file) with the agent exceeds the same run's without it by at most
//!   `arena + methods + AGENT_ANON_FIXED_BYTES` (README, "Memory"): what the
//!   agent's heap does not show (threads' stacks, the frame cache, the
//!   allocator's slack), plus `JVM_BYTES_PER_CLASS_GIVEN_IDS` for each
//!   class whose methods the agent had HotSpot give jmethodIDs (each
//!   generated class has a class loader of its own, and HotSpot keeps a
//!   block of ids per loader until the JVM exits). Its file-backed resident
//!   memory (the agent's library's pages) by at most `AGENT_FILE_BYTES`.
//!   Both runs use a fixed, pre-touched heap, define at least the same
//!   number of classes and unload them every 200, and compile with C1
//!   only: C2's own memory for compiling (HotSpot's "Compiler" and "Arena
//!   Chunk" categories) peaked anywhere from 0.2 to 26 MB between identical
//!   runs, which made the peaks of two single runs differ by up to 40 MB
//!   with no agent at all.
//! - The arena fills: samples needing new nodes are dropped and counted,
//!   and the tree never holds more nodes than the arena has room for.
//! - The method table outgrows its budget and starts over (counted).
//! - With `on_full=purge` the full arena is purged instead (counted).
//!
//! In soak mode (`PCCT_SOAK=<seconds>`) the load runs that long.

use pcct_tests::stress::{
    arg_seconds, assert_exit_code, deadline_for, describe_counters, load_seconds, profile_json, sampler_counter,
    soak_seconds, tree_stat, Rss, RssWatch,
};
use pcct_tests::{per_jdk, Fixture, Jdk, Jvm, Profile, QUIET_HTTP};
use std::time::Duration;

/// The anonymous resident memory the agent may add beyond its arena and
/// method-name budgets: its heap's fixed part (below), the allocator's
/// slack, the frame cache (a 2 MiB huge page), threads' stacks. Measured
/// 7-15 MiB in 11 runs (debug build, JDK 17 and 25, the machine's load at 10;
/// in one, 2.9 MiB of mappings and 6.6 MiB more in malloc's arenas, the peak at
/// the dump at VM death).
const AGENT_ANON_FIXED_BYTES: u64 = 20 << 20;
/// The file-backed resident memory the agent may add: its library's pages.
/// Measured 8.2 MiB (debug build: 6.5 of its 6.6 MiB of code, 1.7 MiB of
/// read-only data); the release build's library is smaller.
const AGENT_FILE_BYTES: u64 = 12 << 20;
/// What the agent's own heap may hold beyond its arena and method-name
/// budgets (buffers, caches, rings, hot lists, the HTTP runtime, the JIT
/// inline table of the code HotSpot holds): measured 6.5-6.7 MiB (debug
/// build, 2026-11-29; peaks of 7.8-8.0 MiB less arena and methods).
const AGENT_HEAP_FIXED_BYTES: u64 = 8 << 20;
/// What HotSpot keeps, until the JVM exits, of each class loader whose
/// classes got jmethodIDs: JDK 17-25 never free a jmethodID, and keep a
/// block of at least 8 of them (`JNIMethodBlock`, 2 mallocs) per loader
/// after it is unloaded (freed from JDK 26, JDK-8268406). Measured on this
/// test's load over 100 s, the agent built with and without the ids made at
/// ClassPrepare (no NMT): 170 B per generated class on JDK 17 (+3.3 MiB for
/// 19,452), 115 B on JDK 25 (+1.8 MiB for 16,114). The 10-minute soak
/// (`PCCT_SOAK=600`) defined 153,991 classes on JDK 17 (+29 MiB anonymous
/// in all, 59 MiB allowed) and 131,559 on JDK 25 (+32 MiB, 54 allowed).
const JVM_BYTES_PER_CLASS_GIVEN_IDS: u64 = 256;
const ARENA_BYTES: u64 = 1 << 20;
const METHODS_BYTES: u64 = 256 << 10;
const BYTES_PER_NODE_AND_EDGE: u64 = pcct::BYTES_PER_NODE_AND_EDGE as u64;

/// Runs BranchyContexts (with class generation) and returns its peak
/// anonymous and file-backed resident memory (each its own peak) and the
/// finished JVM.
fn run_branchy(jdk: &Jdk, fixture: &Fixture, seconds: f64, agent: Option<String>) -> (Rss, pcct_tests::Finished) {
    let mut jvm = Jvm::new(jdk, fixture, "BranchyContexts")
        .flag("-Xms96m")
        .flag("-Xmx96m")
        .flag("-XX:+AlwaysPreTouch")
        .flag("-XX:TieredStopAtLevel=1")
        .arg(arg_seconds(seconds))
        .arg("2")
        .arg("14")
        .arg("yes");
    if let Some(options) = agent {
        jvm = jvm.agent(options);
    }
    let mut running = jvm.spawn();
    let watch = RssWatch::start(running.pid(), Duration::from_millis(50));
    running.wait_for_stdout_line("ready", deadline_for(0.0));
    let finished = running.wait_with_deadline(deadline_for(seconds));
    let series = watch.stop();
    let peak = |part: fn(&Rss) -> u64| series.iter().map(|(_, rss)| part(rss)).max().unwrap_or(0);
    (Rss { anon_kib: peak(|rss| rss.anon_kib), file_kib: peak(|rss| rss.file_kib) }, finished)
}

per_jdk! {
    fn memory_stays_within_the_arena_and_name_budget_plus_a_constant(jdk) {
        let seconds = load_seconds(8.0);
        let fixture = Fixture::new("stress-memory");
        let profile_path = fixture.path("p.json");
        let (baseline, finished) = run_branchy(jdk, &fixture, seconds, None);
        assert_exit_code(&finished, 0);
        let options = format!("interval=1ms,arena=1m,methods=256k,file={}", profile_path.display());
        let (profiled, finished) = run_branchy(jdk, &fixture, seconds, Some(options));
        assert_exit_code(&finished, 0);

        let json = profile_json(&profile_path);
        let described = describe_counters(
            &json,
            &[
                "samples_recorded",
                "samples_dropped_full",
                "method_table_resets",
                "methods_resolved",
                "methods_unloaded",
                "agent_heap_peak_bytes",
                "classes_given_method_ids",
            ],
        );
        let heap_peak = sampler_counter(&json, "agent_heap_peak_bytes");
        assert!(heap_peak > ARENA_BYTES, "JDK {}: the agent's heap is not counted: {described}", jdk.major);
        assert!(
            heap_peak <= ARENA_BYTES + METHODS_BYTES + AGENT_HEAP_FIXED_BYTES,
            "JDK {}: the agent's heap peaked at {} KiB, more than arena + methods + {} MiB",
            jdk.major,
            heap_peak >> 10,
            AGENT_HEAP_FIXED_BYTES >> 20
        );
        let classes = sampler_counter(&json, "classes_given_method_ids");
        let generated = finished.stdout_value("generated");
        assert!(classes >= generated, "JDK {}: {generated} classes generated, {classes} given ids", jdk.major);
        let jvm_kept = classes * JVM_BYTES_PER_CLASS_GIVEN_IDS;
        let anon_added = profiled.anon_kib.saturating_sub(baseline.anon_kib) << 10;
        let file_added = profiled.file_kib.saturating_sub(baseline.file_kib) << 10;
        eprintln!(
            "JDK {}: peak resident memory {} + {} MiB (anonymous + file) without the agent, {} + {} MiB with it \
             (+{} MiB anonymous, +{} MiB file); generated={generated}; {described}",
            jdk.major,
            baseline.anon_kib >> 10,
            baseline.file_kib >> 10,
            profiled.anon_kib >> 10,
            profiled.file_kib >> 10,
            anon_added >> 20,
            file_added >> 20,
        );
        assert!(
            anon_added <= ARENA_BYTES + METHODS_BYTES + AGENT_ANON_FIXED_BYTES + jvm_kept,
            "JDK {}: the agent added {} MiB of anonymous memory, more than arena + methods + {} MiB + {} KiB for \
             {classes} classes given ids",
            jdk.major,
            anon_added >> 20,
            AGENT_ANON_FIXED_BYTES >> 20,
            jvm_kept >> 10
        );
        assert!(
            file_added <= AGENT_FILE_BYTES,
            "JDK {}: the agent added {} MiB of file-backed memory, more than {} MiB",
            jdk.major,
            file_added >> 20,
            AGENT_FILE_BYTES >> 20
        );
        assert!(sampler_counter(&json, "samples_dropped_full") > 0, "JDK {}: the arena never filled: {described}", jdk.major);
        // The tree's count holds the samples it dropped and the allocation
        // and monitor events it had no room for (counted with the events the
        // queue dropped).
        let samples_dropped = sampler_counter(&json, "samples_dropped_full");
        let events_dropped =
            sampler_counter(&json, "allocations_dropped") + sampler_counter(&json, "monitor_waits_dropped");
        let tree_dropped = tree_stat(&json, "dropped_full");
        assert!(
            (samples_dropped..=samples_dropped + events_dropped).contains(&tree_dropped),
            "JDK {}: the tree dropped {tree_dropped}: {samples_dropped} samples and at most {events_dropped} events",
            jdk.major
        );
        assert!(sampler_counter(&json, "method_table_resets") >= 1, "JDK {}: the name budget was never reached: {described}", jdk.major);
        let profile = Profile::read(&profile_path);
        assert!(profile.nodes().len() as u64 <= ARENA_BYTES / BYTES_PER_NODE_AND_EDGE, "more nodes than the arena holds");
        assert_eq!(profile.sum_of_self(), profile.json.total);
    }
}

per_jdk! {
    fn a_full_arena_is_purged_with_on_full_purge(jdk) {
        // Each worker runs until it has used 3 s of its own CPU (about 550
        // samples fill the arena, and a loaded machine gave them 500 in 3 s
        // of wall time) and, in a soak, until the soak's wall time is over
        // like every other load phase. Waiting for the soak's seconds of
        // CPU instead made the phase last as long as the machine's share
        // allowed: beside three other soak tests a 600 s soak gave the two
        // workers a quarter of a core.
        const CPU_SECONDS: f64 = 3.0;
        let seconds = soak_seconds().unwrap_or(0.0);
        let fixture = Fixture::new("stress-memory-purge");
        let profile_path = fixture.path("p.json");
        let finished = Jvm::new(jdk, &fixture, "BranchyContexts")
            .arg(format!("{},cpu:{}", arg_seconds(seconds), arg_seconds(CPU_SECONDS)))
            .arg("2")
            .arg("14")
            .agent(format!("interval=1ms,arena=1m,on_full=purge,file={},{QUIET_HTTP}", profile_path.display()))
            // Two workers' CPU on the machine's CPUs, shared with the other
            // JDK's run, then the wall time.
            .run(deadline_for(2.0 * CPU_SECONDS + seconds));
        assert_exit_code(&finished, 0);
        let json = profile_json(&profile_path);
        let described = describe_counters(&json, &["samples_recorded", "samples_dropped_full"]);
        assert!(tree_stat(&json, "purges_full") >= 1, "JDK {}: never purged: {described} {}", jdk.major, json["stats"]);
        assert_eq!(tree_stat(&json, "purges"), tree_stat(&json, "purges_full"));
        assert_eq!(sampler_counter(&json, "samples_dropped_full"), 0, "purge, not drop: {described}");
        let profile = Profile::read(&profile_path);
        assert!(profile.nodes().len() as u64 <= (1 << 20) / BYTES_PER_NODE_AND_EDGE);
        // The profile holds what came after the last purge: fewer samples than recorded.
        assert!(profile.json.total.samples < sampler_counter(&json, "samples_recorded") + sampler_counter(&json, "samples_failed"));
    }
}
