//! CPU accounted: the CPU weight pcct records for a busy thread equals the
//! CPU time the JVM reports for it (ThreadMXBean, printed by the program
//! when the thread ends) within 5 %: CPU time carries over ticks at which
//! the thread was skipped, and nothing is counted twice.
//!
//! The busy thread's weight is the cum CPU of its own outermost method
//! (everything it ran below its entry point).

use std::time::Duration;

use pcct_tests::profile::{assert_sample_rate, TIMER_RATE_TOLERANCE};
use pcct_tests::{per_jdk, per_jdk_and_11, Fixture, Jvm, Profile, QUIET_HTTP};

const TOLERANCE: f64 = 0.05;

/// Runs `class` for 3 s at 1 ms and compares the cum CPU of `class.method`
/// with the program's `busy_cpu_ns`.
fn check(jdk: &pcct_tests::Jdk, class: &str, method: &str, extra_args: &[&str]) {
    let fixture = Fixture::new("cpu-accounted");
    let profile_path = fixture.path("p.json");
    let mut jvm = Jvm::new(jdk, &fixture, class)
        .arg("3")
        .agent(format!("interval=1ms,file={},{QUIET_HTTP}", profile_path.display()));
    for arg in extra_args {
        jvm = jvm.arg(*arg);
    }
    let finished = jvm.run(Duration::from_secs(90));
    finished.assert_success();
    let busy_cpu_ns = finished.stdout_value("busy_cpu_ns");
    let profile = Profile::read(&profile_path);
    let recorded = profile.cum_of(class, method);
    let ratio = recorded.cpu_ns as f64 / busy_cpu_ns as f64;
    assert!(
        (ratio - 1.0).abs() <= TOLERANCE,
        "JDK {}: CPU recorded under {class}.{method}: {:.3} s ({} samples) = {:.1} % of the busy thread's CPU time \
         {:.3} s (expected 100 ± {:.0} %)\nagent: {}\ncontexts:\n{}top methods:\n{}",
        jdk.major,
        recorded.cpu_ns as f64 / 1e9,
        recorded.samples,
        ratio * 100.0,
        busy_cpu_ns as f64 / 1e9,
        TOLERANCE * 100.0,
        finished.summary().line,
        profile.describe(&profile.outermost_nodes_of(class, method)),
        profile.top_methods(8),
    );
    let context = format!("JDK {}: {class}.{method}\nagent: {}", jdk.major, finished.summary().line);
    assert_sample_rate(recorded.samples, busy_cpu_ns, Duration::from_millis(1), TIMER_RATE_TOLERANCE, &context);
}

per_jdk_and_11! {
    /// GroundTruth's busy thread reads its CPU clock about every 150 µs.
    fn busy_thread_cpu_time_is_accounted(jdk) {
        check(jdk, "GroundTruth", "run", &[]);
    }
}

per_jdk! {
    /// ClockReader's busy thread does nothing but read its CPU clock (a
    /// system call every few hundred ns): it runs all the time, so its CPU
    /// time must be accounted like any other busy thread's.
    fn thread_in_and_out_of_system_calls_is_accounted(jdk) {
        check(jdk, "ClockReader", "busy", &[]);
    }
}
