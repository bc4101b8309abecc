//! Ground truth for monitor contention: LockTruth.java makes one thread
//! wait for a monitor another holds, in two contexts on two monitors
//! (waitOnA on LockTruth$MonitorA, held 7 ms; waitOnB on
//! LockTruth$MonitorB, held 3 ms), and measures every wait itself. pcct's
//! profile must split the lock wait time between the two (monitor class,
//! context) sites as the program measured it, within 5 points, give each
//! site the wait time the program measured within 10 % (a share alone would
//! pass a total off by any factor), and count one contended enter per wait.

use std::time::Duration;

use pcct::export::json::JsonNode;
use pcct::MethodKind;
use pcct_tests::{per_jdk_and_11, Fixture, Jvm, Profile, QUIET_HTTP};

const CLASS: &str = "LockTruth";
const CYCLES: u64 = 120;
const TOLERANCE_POINTS: f64 = 5.0;
/// How far a site's wait time may be from the program's measure, relative.
const TOTAL_TOLERANCE: f64 = 0.10;

/// The site of monitor class `class` entered by `LockTruth.<method>` from main.
fn site<'p>(profile: &'p Profile, class: &str, method: &str) -> Option<&'p JsonNode> {
    let expected = [format!("{CLASS}.main"), format!("{CLASS}.{method}"), class.to_string()];
    profile.nodes().iter().find(|node| {
        let kind = profile.method_of(node).kind;
        kind == MethodKind::Type && profile.path(node) == expected
    })
}

per_jdk_and_11! {
    fn lock_wait_by_monitor_and_context(jdk) {
        let fixture = Fixture::new("lock-truth");
        let profile_path = fixture.path("p.json");
        let finished = Jvm::new(jdk, &fixture, CLASS)
            .arg(CYCLES.to_string())
            .agent(format!("interval=10ms,alloc=off,file={},{QUIET_HTTP}", profile_path.display()))
            .run(Duration::from_secs(120));
        finished.assert_success();
        let (wait_a, wait_b) = (finished.stdout_value("wait_a_ns") as f64, finished.stdout_value("wait_b_ns") as f64);
        let profile = Profile::read(&profile_path);
        let sites: Vec<String> = profile
            .nodes()
            .iter()
            .filter(|node| node.self_weight.lock_enters > 0)
            .map(|node| format!("  {} {:?}\n", profile.path(node).join(";"), node.self_weight))
            .collect();
        let context = format!(
            "JDK {}: measured by the program: A {wait_a} ns, B {wait_b} ns; monitor sites:\n{}",
            jdk.major,
            sites.concat()
        );
        let a = site(&profile, "LockTruth$MonitorA", "waitOnA").unwrap_or_else(|| panic!("no site of A\n{context}"));
        let b = site(&profile, "LockTruth$MonitorB", "waitOnB").unwrap_or_else(|| panic!("no site of B\n{context}"));
        let (pcct_a, pcct_b) = (a.self_weight.lock_wait_ns as f64, b.self_weight.lock_wait_ns as f64);
        let share = pcct_a * 100.0 / (pcct_a + pcct_b);
        let truth = wait_a * 100.0 / (wait_a + wait_b);
        eprintln!("JDK {}: A's share of the wait {share:.2} % (measured {truth:.2} %), enters {} and {}", jdk.major, a.self_weight.lock_enters, b.self_weight.lock_enters);
        assert!(
            (share - truth).abs() <= TOLERANCE_POINTS,
            "A's share of the wait: {share:.1} %, measured {truth:.1} % (±{TOLERANCE_POINTS})\n{context}"
        );
        for (name, recorded, measured) in [("A", pcct_a, wait_a), ("B", pcct_b, wait_b)] {
            let ratio = recorded / measured;
            assert!(
                (ratio - 1.0).abs() <= TOTAL_TOLERANCE,
                "{name}: {:.1} ms of lock wait recorded, {:.1} ms measured by the program ({:.1} %, 100 ± {:.0} %)\n{context}",
                recorded / 1e6,
                measured / 1e6,
                ratio * 100.0,
                TOTAL_TOLERANCE * 100.0
            );
        }
        // Every wait is one contended enter (a waiter that came late, on a
        // loaded machine, may find a monitor already free: no enter, no wait).
        for (name, node) in [("A", a), ("B", b)] {
            let enters = node.self_weight.lock_enters;
            assert!(enters <= CYCLES && enters * 2 >= CYCLES, "{name}: {enters} enters for {CYCLES} waits\n{context}");
        }
        assert!(profile.json.total.lock_enters >= a.self_weight.lock_enters + b.self_weight.lock_enters);
    }
}
