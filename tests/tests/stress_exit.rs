//! VM exit races while sampling at 1 ms and while HTTP requests are in
//! flight (ExitRace: busy workers and a thread that keeps starting threads):
//! - `System.exit(7)` called by 16 threads at once, right at start-up, a
//!   little later, and after a while;
//! - SIGTERM to the JVM (`kill -TERM`).
//!
//! Each time: the exit status is the program's own (7; 143 for SIGTERM),
//! no crash, no hang (a deadline), and the dump file is complete: it
//! parses, carries the sampler's counters and holds every sample the
//! summary line counts.

use std::time::{Duration, Instant};

use pcct_tests::stress::{
    arg_seconds, assert_exit_code, deadline_for, kill, load_seconds, profile_json, status, status_counter,
    wait_for_addr_file, Hammer, BUSY_ROUTES,
};
use pcct_tests::{per_jdk, poll_until, Finished, Fixture, Jdk, Jvm, Profile};

/// The dump is whole: it parses, its total is the summary's, its nodes add up.
fn assert_complete_dump(jdk: &Jdk, finished: &Finished, path: &std::path::Path) {
    let summary = finished.summary();
    assert_eq!(summary.wrote, Some(format!("{} (json)", path.display())), "JDK {}: {}", jdk.major, summary.line);
    let profile = Profile::read(path);
    assert_eq!(profile.json.total.samples, summary.samples, "JDK {}: {}", jdk.major, summary.line);
    assert_eq!(profile.sum_of_self(), profile.json.total, "JDK {}: the nodes add up to the total", jdk.major);
    let json = profile_json(path);
    assert!(json["sampler"]["ticks"].as_u64().is_some(), "no sampler section");
    assert!(json["vm"]["pid"].as_u64().is_some(), "no vm section");
}

fn agent_options(fixture: &Fixture) -> String {
    format!(
        "interval=1ms,port=0,addr_file={},file={}",
        fixture.path("addr").display(),
        fixture.path("p.json").display()
    )
}

/// ExitRace's own time limit for a run whose load lasts `load` seconds:
/// beyond every deadline the test sets, so only a hang reaches it.
fn safety_net_seconds(load: f64) -> String {
    arg_seconds(deadline_for(load).as_secs_f64() + 60.0)
}

per_jdk! {
    fn system_exit_from_many_threads_with_http_in_flight(jdk) {
        let later = (load_seconds(0.5) * 1000.0) as u64;
        for delay_ms in [0, 30, later] {
            let fixture = Fixture::new(&format!("stress-exit-{delay_ms}"));
            let mut jvm = Jvm::new(jdk, &fixture, "ExitRace")
                .arg("exit")
                .arg(delay_ms.to_string())
                .arg("7")
                .arg(safety_net_seconds(load_seconds(0.5)))
                .agent(agent_options(&fixture))
                .spawn();
            // The server may come up after the exit began: then nobody queries it.
            let address = poll_until(Instant::now() + Duration::from_secs(30), || {
                let text = std::fs::read_to_string(fixture.path("addr")).ok();
                match text.and_then(|t| t.trim().parse().ok()) {
                    Some(address) => Some(Some(address)),
                    None => (!jvm.is_running()).then_some(None),
                }
            })
            .flatten();
            let hammer = address.map(|address| Hammer::start(address, BUSY_ROUTES, 3, None));
            let finished = jvm.wait_with_deadline(deadline_for(load_seconds(0.5)));
            let stats = hammer.map(Hammer::stop);
            eprintln!("JDK {} exit after {delay_ms} ms: {:?} after {:?}; HTTP {stats:?}", jdk.major, finished.status, finished.elapsed);
            assert_exit_code(&finished, 7);
            if let Some(stats) = &stats {
                assert_eq!(stats.server_errors(), 0, "server errors: {:?}", stats.first_server_error);
                assert_eq!(stats.failed_while_serving, 0, "failed connections: {stats:?}");
            }
            assert_complete_dump(jdk, &finished, &fixture.path("p.json"));
        }
    }
}

per_jdk! {
    fn sigterm_with_http_in_flight(jdk) {
        let fixture = Fixture::new("stress-sigterm");
        let mut jvm = Jvm::new(jdk, &fixture, "ExitRace")
            .arg("term")
            .arg(safety_net_seconds(load_seconds(1.0)))
            .agent(agent_options(&fixture))
            .spawn();
        jvm.wait_for_stdout_line("ready", deadline_for(0.0));
        let address = wait_for_addr_file(&fixture.path("addr"), deadline_for(0.0));
        let hammer = Hammer::start(address, BUSY_ROUTES, 3, None);
        // Let it sample a while (long in soak mode), then terminate it.
        let wanted_ms = (load_seconds(1.0) * 1000.0) as u64;
        let sampled = poll_until(Instant::now() + deadline_for(load_seconds(1.0)), || {
            let status = status(address)?;
            let uptime_ms = (status["uptime_s"].as_f64()? * 1000.0) as u64;
            (status_counter(&status, "samples_recorded") >= 200 && uptime_ms >= wanted_ms).then_some(())
        });
        assert!(sampled.is_some(), "JDK {}: no samples before SIGTERM:\n{}", jdk.major, jvm.stderr());
        let pid = jvm.pid();
        kill(pid, "TERM");
        let started = Instant::now();
        let finished = jvm.wait_with_deadline(Duration::from_secs(30));
        let stats = hammer.stop();
        eprintln!("JDK {}: SIGTERM: {:?} in {:?}; HTTP {stats:?}", jdk.major, finished.status, started.elapsed());
        // HotSpot runs the shutdown hooks and exits 128 + 15 on SIGTERM.
        assert_exit_code(&finished, 143);
        assert_eq!(stats.server_errors(), 0, "server errors: {:?}", stats.first_server_error);
        assert_eq!(stats.failed_while_serving, 0, "failed connections: {stats:?}");
        assert!(stats.ok() > 0, "no HTTP answer: {stats:?}");
        assert_complete_dump(jdk, &finished, &fixture.path("p.json"));
    }
}
