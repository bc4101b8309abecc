//! The periodic push against a loopback stand-in for Pyroscope's
//! `/ingest` (`pcct_tests::receiver`), which decodes what it gets:
//! - a receiver that refuses the first windows (503) gets them all later,
//!   and the windows it received add up, stack by stack, to the whole
//!   profile: nothing is lost while it refused;
//! - a dead receiver costs no samples, whether it refuses connections or
//!   takes them and never answers: sampling goes on, the failures are
//!   counted, the profile written at VM death holds every sample recorded,
//!   and the JVM exits on time.

use std::time::{Duration, Instant};

use pcct::export::pprof;
use pcct_tests::control::{pause, u64_at};
use pcct_tests::http::start_served;
use pcct_tests::pprof::{add_stacks, go_pprof_raw_totals, stacks, totals, Stacks};
use pcct_tests::receiver::Receiver;
use pcct_tests::stress::{assert_counters_conserved, profile_json, sampler_counter};
use pcct_tests::{assert_no_hs_err, one_jdk, poll_until, Fixture, Jdk, Jvm};

const SOON: Duration = Duration::from_secs(60);

/// The sum of the accepted windows, stack by stack.
fn sum_of(receiver: &Receiver) -> Stacks {
    let mut sum = Stacks::new();
    for window in receiver.received().iter().filter(|window| window.accepted) {
        let profile = pprof::decode(&window.profile).expect("a pushed window is a gzipped profile.proto");
        add_stacks(&mut sum, &stacks(&profile));
    }
    sum
}

one_jdk! {
    fn windows_refused_at_first_arrive_later_and_add_up_to_the_profile(jdk) {
        let fixture = Fixture::new("push-refused");
        let receiver = Receiver::start(3);
        let options = format!("interval=1ms,push={},push_every=1s,app=shop,instance=node-1", receiver.url());
        let mut served = start_served(Jvm::new(jdk, &fixture, "LiveTarget"), &fixture, &options);
        served.jvm.wait_for_stdout_line("ready", SOON);
        let client = served.client.clone();
        // Three refusals (503, 429, 503: both mean "later"), then the queue drains: at least four windows accepted.
        poll_until(Instant::now() + SOON, || (receiver.received().iter().filter(|w| w.accepted).count() >= 4).then_some(()))
            .unwrap_or_else(|| panic!("fewer than 4 windows accepted: {}", client.get_json("/api/status")["push"]));
        pause(&client);
        let whole = pprof::decode(&client.get("/api/pprof").expect("pprof").body).expect("pprof");
        let expected = stacks(&whole);
        // Windows keep coming (empty now); the one holding the last samples arrives.
        let arrived = poll_until(Instant::now() + SOON, || (sum_of(&receiver) == expected).then_some(()));
        assert!(arrived.is_some(), "the pushed windows do not add up to the profile: {} samples pushed, {} in the profile",
            sum_of(&receiver).values().map(|v| v[0]).sum::<i64>(), totals(&whole)[0]);
        let received = receiver.received();
        assert!(received.iter().take(3).all(|window| !window.accepted));
        for window in &received {
            let query = &window.query;
            assert!(query.contains("name=shop%7Binstance%3Dnode-1%7D") && query.contains("format=pprof") && query.contains("spyName=pcct"), "{query}");
        }
        let status = client.get_json("/api/status");
        assert!(u64_at(&status, "/push/failures") >= 3 && u64_at(&status, "/push/dropped") == 0, "{}", status["push"]);
        let metrics = client.get("/metrics").expect("metrics").text();
        assert!(metrics.contains("\npcct_push_failures_total ") && metrics.contains("\npcct_push_sent_total "), "{metrics}");
        // A third-party decoder reads what was pushed.
        let busiest = received.iter().filter(|w| w.accepted).max_by_key(|w| w.profile.len()).expect("a window");
        let path = fixture.path("pushed.pb.gz");
        std::fs::write(&path, &busiest.profile).expect("written");
        assert_eq!(go_pprof_raw_totals(&path), totals(&pprof::decode(&busiest.profile).unwrap()));
        let finished = served.jvm.wait_with_deadline(Duration::from_secs(60));
        finished.assert_success();
        assert_no_hs_err(fixture.dir());
    }
}

/// Pushes to a receiver that never takes a window, and checks that it
/// cost no samples: sampling goes on while the sends fail, the failures
/// are counted (as `error` says), and the profile written at VM death holds
/// every sample the sampler recorded (its conservation laws, nothing
/// dropped for a full queue); the JVM exits on time with a send in flight.
fn a_dead_receiver_costs_no_samples(jdk: &Jdk, name: &str, url: &str, error: &str) {
    let fixture = Fixture::new(name);
    let dump = fixture.path("profile.json");
    let options = format!("interval=1ms,push={url},push_every=1s,file={}", dump.display());
    let mut served = start_served(Jvm::new(jdk, &fixture, "LiveTarget"), &fixture, &options);
    served.jvm.wait_for_stdout_line("ready", SOON);
    let client = served.client.clone();
    let status = poll_until(Instant::now() + SOON, || {
        let status = client.get_json("/api/status");
        (u64_at(&status, "/push/failures") >= 2 && u64_at(&status, "/profile/samples") >= 500).then_some(status)
    })
    .unwrap_or_else(|| panic!("no failed pushes and 500 samples within {SOON:?}: {}", client.get_json("/api/status")));
    assert_eq!(u64_at(&status, "/push/sent"), 0);
    assert!(status["push"]["last_error"].as_str().is_some_and(|e| e.contains(error)), "{}", status["push"]);
    // Sampling goes on while the push fails: the busy thread keeps being recorded.
    let before = u64_at(&status, "/counters/samples_recorded");
    poll_until(Instant::now() + SOON, || {
        (u64_at(&client.get_json("/api/status"), "/counters/samples_recorded") >= before + 300).then_some(())
    })
    .expect("sampling goes on");
    let finished = served.jvm.wait_with_deadline(Duration::from_secs(60));
    finished.assert_success();
    assert!(finished.elapsed < Duration::from_secs(120));
    assert_no_hs_err(fixture.dir());
    let profile = profile_json(&dump);
    assert_counters_conserved(&profile);
    assert_eq!(sampler_counter(&profile, "samples_dropped_full"), 0, "{}", profile["sampler"]);
    assert!(sampler_counter(&profile, "samples_recorded") >= before + 300, "{}", profile["sampler"]);
}

one_jdk! {
    fn a_refusing_receiver_costs_no_samples(jdk) {
        // A port nothing listens on: every connection is refused at once.
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a port").local_addr().expect("address");
        a_dead_receiver_costs_no_samples(jdk, "push-refusing", &format!("http://{port}/ingest"), "cannot connect");
    }
}

one_jdk! {
    fn a_silent_receiver_costs_no_samples(jdk) {
        // A listener that never accepts: the kernel completes the connection,
        // takes the request, and no answer ever comes (each send times out).
        let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let port = silent.local_addr().expect("address");
        a_dead_receiver_costs_no_samples(jdk, "push-silent", &format!("http://{port}/ingest"), "no answer in time");
        drop(silent);
    }
}
