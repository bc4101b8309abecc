//! Ground truth for waits on java.util.concurrent locks: ParkTruth.java
//! makes one thread wait for a ReentrantLock another holds, in two
//! contexts on two locks (waitOnA on A, held 7 ms; waitOnB on B, held
//! 3 ms), and measures every wait itself. pcct records each park on a lock
//! (`parks.rs`) as a lock wait under the blocker's class. The profile must
//! split the wait between the two contexts as the program measured it,
//! within 5 points, give each the wait time the program measured within
//! 15 % (the program's measure also holds the lock's spinning before it
//! parks), and record the parks on the CountDownLatches that hand the
//! cycles over as nothing: a latch is not a lock. The agent must say so in
//! /api/status's events line, and print nothing on the program's output
//! (no "Re-registering of platform native method" from HotSpot).
//!
//! The second test checks that the helper class the agent defines is the
//! one its Java source compiles to.

use std::time::Duration;

use pcct_tests::{per_jdk_and_11, Fixture, Jvm, Profile, QUIET_HTTP};

const CLASS: &str = "ParkTruth";
const CYCLES: u64 = 120;
const TOLERANCE_POINTS: f64 = 5.0;
/// How far a context's wait time may be from the program's measure, relative.
const TOTAL_TOLERANCE: f64 = 0.15;
const LOCK: &str = "java.util.concurrent.locks.ReentrantLock$NonfairSync";

/// The lock wait (ns) and parks recorded under `ParkTruth.<method>` on
/// blockers of class `class`.
fn waited_under(profile: &Profile, method: &str, class: &str) -> (f64, u64) {
    let wanted = format!("{CLASS}.{method}");
    let nodes = profile.nodes();
    let sites = nodes.iter().filter(|node| {
        let path = profile.path(node);
        path.last().is_some_and(|leaf| leaf == class) && path.contains(&wanted)
    });
    sites.fold((0.0, 0), |(wait, enters), node| {
        (wait + node.self_weight.lock_wait_ns as f64, enters + node.self_weight.lock_enters)
    })
}

per_jdk_and_11! {
    fn lock_wait_by_lock_and_context(jdk) {
        let fixture = Fixture::new("park-truth");
        let profile_path = fixture.path("p.json");
        let finished = Jvm::new(jdk, &fixture, CLASS)
            .arg(CYCLES.to_string())
            .agent(format!("interval=10ms,alloc=off,file={},{QUIET_HTTP}", profile_path.display()))
            .run(Duration::from_secs(120));
        finished.assert_success();
        assert!(!finished.stdout.contains("Re-registering"), "HotSpot warned:\n{}", finished.report());
        assert!(!finished.stderr.contains("not recorded"), "{}", finished.report());
        let (wait_a, wait_b) = (finished.stdout_value("wait_a_ns") as f64, finished.stdout_value("wait_b_ns") as f64);
        let profile = Profile::read(&profile_path);
        let ((pcct_a, enters_a), (pcct_b, enters_b)) =
            (waited_under(&profile, "waitOnA", LOCK), waited_under(&profile, "waitOnB", LOCK));
        let latches: u64 = profile
            .nodes()
            .iter()
            .filter(|node| profile.path(node).last().is_some_and(|leaf| leaf.contains("CountDownLatch")))
            .map(|node| node.self_weight.lock_enters)
            .sum();
        let share = pcct_a * 100.0 / (pcct_a + pcct_b);
        let truth = wait_a * 100.0 / (wait_a + wait_b);
        let context = format!(
            "JDK {}: A's share of the wait {share:.2} % (measured {truth:.2} %); A {:.1} ms in {enters_a} parks (measured {:.1}), B {:.1} ms in {enters_b} parks (measured {:.1}); {latches} latch parks recorded",
            jdk.major,
            pcct_a / 1e6,
            wait_a / 1e6,
            pcct_b / 1e6,
            wait_b / 1e6
        );
        eprintln!("{context}");
        assert!((share - truth).abs() <= TOLERANCE_POINTS, "{context}");
        for (recorded, measured) in [(pcct_a, wait_a), (pcct_b, wait_b)] {
            assert!((recorded / measured - 1.0).abs() <= TOTAL_TOLERANCE, "{context}");
        }
        // At least one park a wait (a park may wake early and park again);
        // a waiter that came late on a loaded machine finds the lock free.
        assert!(enters_a * 2 >= CYCLES && enters_b * 2 >= CYCLES, "{context}");
        assert_eq!(latches, 0, "{context}");
    }
}

#[test]
fn the_helper_class_is_what_its_source_compiles_to() {
    let fixture = Fixture::new("park-entry");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent/java/pcct/ParkEntry.java");
    let output = std::process::Command::new(pcct_tests::jdk::jdk17().javac())
        .args(["--release", "8", "-nowarn", "-d"])
        .arg(fixture.dir())
        .arg(&source)
        .output()
        .expect("javac runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let compiled = std::fs::read(fixture.path("pcct/ParkEntry.class")).expect("compiled");
    let shipped = std::fs::read(source.with_extension("class")).expect("the agent's copy");
    assert!(
        compiled == shipped,
        "agent/java/pcct/ParkEntry.class is not what ParkEntry.java compiles to: run javac --release 8 -d agent/java agent/java/pcct/ParkEntry.java"
    );
}
