//! What the JIT did, as it happened (`/api/jit/events`): a deoptimization
//! the program provokes is seen within a second, and the hot edge it
//! affects stops saying `inlined: true`.
//!
//! Program: JitDeopt.java. Its hot call `JitDeopt.total -> Square.area` is
//! inlined by class-hierarchy analysis (Square is Shape's only subclass);
//! loading a second subclass makes total's code not entrant.

use std::time::{Duration, Instant};

use pcct_tests::http::{start_served, Client};
use pcct_tests::{assert_no_hs_err, per_jdk, poll_until, Fixture, Jvm};
use serde_json::Value;

/// Deadline for C2 to compile and inline the hot call: seconds of the
/// worker's CPU, on a machine that may be loaded.
const COMPILED: Duration = Duration::from_secs(90);

/// The acceptance: a deoptimization in `/api/jit/events` within a second.
const SEEN_WITHIN: Duration = Duration::from_secs(1);

const CALLER: &str = "JitDeopt.total";
const CALLEE: &str = "JitDeopt$Square.area";

fn edge(client: &Client) -> Option<Value> {
    let answer = client.get_json("/api/hot-edges?limit=100");
    answer["edges"]
        .as_array()?
        .iter()
        .find(|e| e["caller"]["display"] == CALLER && e["callee"]["display"] == CALLEE)
        .cloned()
}

/// The `not_entrant` events of `total`'s code from event `since` on, and
/// the number to ask from next.
fn not_entrant(client: &Client, since: u64) -> (Vec<Value>, u64) {
    let page = client.get_json(&format!("/api/jit/events?since={since}"));
    let next = page["next"].as_u64().expect("next");
    let events = page["events"].as_array().expect("events").iter();
    let total =
        |e: &&Value| e["kind"] == "not_entrant" && e["method"]["class"] == "JitDeopt" && e["method"]["name"] == "total";
    (events.filter(total).cloned().collect(), next)
}

per_jdk! {
    fn a_deoptimization_is_an_event_within_a_second_and_the_edge_is_no_longer_inlined(jdk) {
        let fixture = Fixture::new("jit-events");
        // total gets code of its own, and no on-stack-replacement code:
        // pcct sees OSR code made not entrant only when it is unloaded
        // (`pcct_jit::events`), and an OSR code of total would keep the
        // edge inlined after the deoptimization.
        let jvm = Jvm::new(jdk, &fixture, "JitDeopt")
            .arg("300")
            .flag("-XX:CompileCommand=quiet")
            .flag("-XX:CompileCommand=dontinline,JitDeopt::total")
            .flag("-XX:-UseOnStackReplacement");
        let mut served = start_served(jvm, &fixture, "interval=1ms");
        served.jvm.wait_for_stdout_line("ready", COMPILED);
        let client = served.client.clone();
        // C2 code of total with the call inlined, and its compile event.
        let inlined = poll_until(Instant::now() + COMPILED, || {
            let hit = edge(&client).filter(|e| e["inlined"] == true && e["caller_level"] == 4);
            if hit.is_none() {
                std::thread::sleep(Duration::from_millis(100));
            }
            hit
        });
        inlined.unwrap_or_else(|| panic!("{CALLER} -> {CALLEE} not inlined in C2 code within {COMPILED:?}: {:?}\njit: {:#}", edge(&client), client.get_json("/api/status")["jit"]));
        let page = client.get_json("/api/jit/events?limit=4096");
        let compiled = page["events"].as_array().expect("events").iter().any(|e| e["kind"] == "compiled" && e["method"]["name"] == "total" && e["level"] == 4);
        assert!(compiled, "no C2 compile event of total: {page:#}");
        let (before, since) = not_entrant(&client, 0);
        assert!(before.is_empty(), "total not entrant before the class is loaded: {before:?}");
        // The second subclass: total's code is made not entrant.
        served.jvm.send_line("load");
        served.jvm.wait_for_stdout_line("loaded", Duration::from_secs(30));
        let loaded = Instant::now();
        let mut next = since;
        let seen = poll_until(loaded + Duration::from_secs(30), || {
            let (found, after) = not_entrant(&client, next);
            next = after;
            if found.is_empty() {
                std::thread::sleep(Duration::from_millis(20));
            }
            found.into_iter().next()
        });
        let event = seen.unwrap_or_else(|| panic!("no not_entrant event of total within 30 s: {:#}", client.get_json("/api/jit/events")));
        let took = loaded.elapsed();
        eprintln!("JDK {}: not_entrant seen {took:?} after the class was loaded: {event}", jdk.major);
        assert!(took < SEEN_WITHIN, "JDK {}: the deoptimization took {took:?} to show: {event}", jdk.major);
        assert_eq!(event["level"], 4, "{event}");
        // The edge is still hot in the profile, and no longer inlined: no
        // current code runs total (the program stopped calling it).
        let after = edge(&client).expect("the edge stays in the profile");
        assert_ne!(after["inlined"], true, "{after}");
        let finished = served.jvm.wait_with_deadline(Duration::from_secs(60));
        finished.assert_success();
        assert!(finished.stdout.lines().any(|l| l.trim() == "done"), "{}", finished.report());
        assert_no_hs_err(fixture.dir());
    }
}
