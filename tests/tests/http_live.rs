//! The HTTP API of a live, profiled JVM, over real HTTP on loopback: each
//! test starts a JVM with the agent serving on an ephemeral port (the
//! address comes from `addr_file`) and queries it while the program runs.
//!
//! Programs: GroundTruth.java (known shares: heavy is the hottest method by
//! self CPU, 40 %), LiveTarget.java (runs until stdin closes; a busy thread
//! in alpha, or in beta after "switch"; a thread parked forever).

use std::time::{Duration, Instant};

use pcct_tests::http::{start_served, Client, Served};
use pcct_tests::stress::{Hammer, BUSY_ROUTES};
use pcct_tests::{assert_no_hs_err, one_jdk, poll_until, Fixture, Jdk, Jvm};
use serde_json::{json, Value};

/// Deadline for anything a live JVM should show "soon" (samples arriving,
/// a changed setting taking effect).
const SOON: Duration = Duration::from_secs(30);

fn u64_at(value: &Value, pointer: &str) -> u64 {
    value.pointer(pointer).and_then(Value::as_u64).unwrap_or_else(|| panic!("no number at {pointer} in {value}"))
}

fn status(client: &Client) -> Value {
    client.get_json("/api/status")
}

/// Starts LiveTarget with `options` and waits for its "ready".
fn live_target(jdk: &Jdk, fixture: &Fixture, options: &str) -> Served {
    let mut served = start_served(Jvm::new(jdk, fixture, "LiveTarget"), fixture, options);
    served.jvm.wait_for_stdout_line("ready", SOON);
    served
}

/// Closes LiveTarget's stdin, and asserts a clean exit and no hs_err file.
fn finish(served: Served, fixture: &Fixture) {
    let finished = served.jvm.wait_with_deadline(Duration::from_secs(60));
    finished.assert_success();
    assert!(finished.stdout.lines().any(|l| l.trim() == "done"), "{}", finished.report());
    assert_no_hs_err(fixture.dir());
}

/// Polls `/api/hot-methods` until the profile holds `samples` samples.
fn hot_methods_with(client: &Client, query: &str, samples: u64) -> Value {
    poll_until(Instant::now() + SOON, || {
        let answer = client.get_json(&format!("/api/hot-methods?{query}"));
        (u64_at(&answer, "/profile/samples") >= samples).then_some(answer)
    })
    .unwrap_or_else(|| panic!("fewer than {samples} samples within {SOON:?}: {}", status(client)))
}

/// The CPU time thread `tid` of process `pid` used so far, to the
/// nanosecond (`/proc/<pid>/task/<tid>/schedstat`, its first field).
fn thread_cpu(pid: u32, tid: u64) -> Duration {
    let schedstat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat")).expect("schedstat");
    Duration::from_nanos(schedstat.split_whitespace().next().and_then(|ns| ns.parse().ok()).expect("a runtime"))
}

fn displays(list: &Value, field: &str) -> Vec<String> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|entry| entry.pointer(field).and_then(Value::as_str).expect("a name").to_string())
        .collect()
}

one_jdk! {
    /// GroundTruth spends 40 % of its busy thread's CPU in heavy, the most
    /// of any method: while it runs, hot methods by self weight name heavy
    /// first, with a share near 40 %. (It runs 10 s of its thread's CPU: on
    /// a loaded machine longer, with as many samples, some of them deferred.)
    fn hot_methods_name_the_hottest_method_while_the_program_runs(jdk) {
        let fixture = Fixture::new("http-hot-methods");
        let mut served = start_served(Jvm::new(jdk, &fixture, "GroundTruth").arg("10"), &fixture, "interval=1ms");
        let client = served.client.clone();
        // Warm-up (start-up, class loading, the JIT compiling the phases) is
        // not what the ground truth describes: once the busy thread has 300
        // samples, purge (as a JIT-feedback client would), then measure.
        poll_until(Instant::now() + SOON, || {
            let total = client.get_json("/api/hot-methods?limit=20&by=total");
            total["methods"].as_array().expect("methods").iter().any(|m| {
                m["method"]["display"] == "GroundTruth.run" && m["total"]["samples"].as_u64().unwrap_or(0) >= 300
            }).then_some(())
        })
        .unwrap_or_else(|| panic!("the busy thread has not 300 samples within {SOON:?}: {}", status(&client)));
        client.post_json("/api/purge", "");
        // 1000 samples at 1 ms: about 20 rounds of GroundTruth's phases.
        let answer = hot_methods_with(&client, "limit=10&by=self", 1000);
        assert!(served.jvm.is_running(), "the program ended before the answer: it must come while it runs");
        let methods = &answer["methods"];
        let names = displays(methods, "/method/display");
        assert_eq!(names[0], "GroundTruth.heavy", "JDK {}: hottest by self: {names:?}\n{answer:#}", jdk.major);
        assert_eq!(methods[0]["method"]["class"], "GroundTruth");
        assert_eq!(methods[0]["method"]["name"], "heavy");
        assert_eq!(methods[0]["method"]["signature"], "(J)J");
        // heavy is 40 % of the busy thread's CPU, and the busy thread is
        // nearly all the profile's.
        let share = methods[0]["self_share"].as_f64().expect("self_share");
        assert!((0.25..=0.5).contains(&share), "heavy's self share {share}: {answer:#}");
        assert!(u64_at(&methods[0], "/self/samples") > 0 && u64_at(&methods[0], "/self/cpu_ns") > 0);
        // By total, the busy thread's run (near the root of its stack, under
        // the JDK's Thread.run) is among the first, with nearly everything.
        let total = client.get_json("/api/hot-methods?limit=5&by=total");
        assert_eq!(total["by"], "total");
        let run = total["methods"]
            .as_array()
            .expect("methods")
            .iter()
            .find(|m| m["method"]["display"] == "GroundTruth.run")
            .unwrap_or_else(|| panic!("GroundTruth.run not among the first 5 by total: {total:#}"));
        assert!(run["total_share"].as_f64().expect("total_share") > 0.9, "{total:#}");
        // The rest of its 10 s of CPU: about 8 s on a quiet machine, but a
        // test beside a soak of the stress suite (load average 26 on two
        // cores) gave its thread 7 % of a core: 60 s were not enough there,
        // on both JDKs, with every assertion above passed.
        let finished = served.jvm.wait_with_deadline(Duration::from_secs(300));
        finished.assert_success();
    }
}

one_jdk! {
    /// With the CPU-clock prefilter off, the parked thread is signalled at
    /// every tick and its register checksum filters it. Read with
    /// filtered=include (every sample, in order): each filtered sample of
    /// the parked thread carries the same 64-bit checksum as that thread's
    /// previous sample (that is what "filtered" means: its registers did not
    /// change), is not walked (depth 0, no top frames), and nearly all of
    /// its samples are filtered. filtered=only returns filtered samples only.
    fn filtered_samples_include_the_parked_thread(jdk) {
        let fixture = Fixture::new("http-filtered");
        let served = live_target(jdk, &fixture, "mode=cpu,timer=sampler,prefilter=off,interval=1ms");
        let client = served.client.clone();
        let parked = thread_id(served.jvm.pid(), "parked");
        let busy = thread_id(served.jvm.pid(), "busy");
        let mut since = 0;
        let mut parked_samples: Vec<Value> = Vec::new();
        // Pairs (previous sample, filtered sample) of the parked thread with
        // nothing lost between them.
        let mut consecutive: Vec<(Value, Value)> = Vec::new();
        let mut previous_parked: Option<Value> = None;
        let mut busy_filtered: Vec<Value> = Vec::new();
        // From the busy thread's first recorded sample in alpha or gamma on,
        // it runs without pause: none of its samples may be filtered then,
        // and its recorded samples (kept here, in order) are in its loops.
        // (Before, it may be anywhere under Thread.run: in the VM resolving
        // the lambda's call of busy, in busy's first call of alpha.)
        let mut busy_spinning = false;
        let mut busy_frames: Vec<Value> = Vec::new();
        poll_until(Instant::now() + SOON, || {
            let page = client.get_json(&format!("/api/samples?filtered=include&limit=1000&since={since}"));
            since = u64_at(&page, "/next_since");
            if u64_at(&page, "/overwritten") > 0 {
                previous_parked = None;
            }
            for sample in page["samples"].as_array().expect("samples") {
                let tid = u64_at(sample, "/tid");
                let filtered = sample["outcome"] == json!({"kind": "filtered"});
                if tid == busy {
                    let leaf = sample["top_frames"][0].as_str().unwrap_or("");
                    busy_spinning |= ["LiveTarget.alpha", "LiveTarget.gamma"].contains(&leaf);
                    if filtered && busy_spinning {
                        busy_filtered.push(sample.clone());
                    }
                    if busy_spinning && sample["outcome"]["kind"] == "recorded" {
                        busy_frames.push(sample.clone());
                    }
                }
                if tid != parked {
                    continue;
                }
                if filtered {
                    if let Some(previous) = previous_parked.take() {
                        consecutive.push((previous, sample.clone()));
                    }
                }
                parked_samples.push(sample.clone());
                // A deferred sample leaves the handler's has-it-run state
                // as it was: the next filtered sample compares with the one
                // before it, not shown here.
                let deferred = sample["outcome"]["kind"] == "deferred";
                previous_parked = (!deferred).then(|| sample.clone());
            }
            // Until the busy thread too has its recorded samples in its
            // loops (on a loaded machine many of its samples are deferred).
            (consecutive.len() >= 20 && busy_frames.len() >= 20).then_some(())
        })
        .unwrap_or_else(|| {
            panic!(
                "JDK {}: within {SOON:?}, {} consecutive filtered samples of the parked thread {parked}, {} recorded of the busy thread {busy} spinning",
                jdk.major,
                consecutive.len(),
                busy_frames.len()
            )
        });
        // Once spinning, the busy thread is never checksum-filtered while it
        // runs. It may still be stopped for a while (a safepoint for JIT
        // compilation or GC, or descheduled on a loaded machine: 9-16 µs of
        // CPU in a 1 ms interval was seen in CI); a sample filtered then
        // used less CPU than the handler's has-it-run threshold (the idle
        // share of the interval, 100 µs here) plus one stack walk, far less
        // than the ~1 ms a running thread uses per interval.
        assert!(busy_spinning, "JDK {}: the busy thread {busy} was never seen spinning", jdk.major);
        let filtered_while_running: Vec<&Value> =
            busy_filtered.iter().filter(|s| u64_at(s, "/cpu_delta_ns") >= 500_000).collect();
        assert!(
            filtered_while_running.is_empty(),
            "the busy thread {busy} was filtered although it ran: {filtered_while_running:#?}"
        );
        for (previous, sample) in &consecutive {
            assert_eq!(sample["depth"], 0, "a filtered sample is not walked: {sample}");
            assert_eq!(sample["top_frames"], json!([]), "a filtered sample is not walked: {sample}");
            let checksum = sample["checksum"].as_str().expect("checksum");
            assert!(checksum.len() == 16 && checksum.chars().all(|c| c.is_ascii_hexdigit()), "{sample}");
            assert_eq!(
                sample["checksum"], previous["checksum"],
                "a filtered sample's registers are those of the thread's previous sample:\n{previous}\n{sample}"
            );
        }
        // Walked: neither filtered nor deferred (a signal that woke the
        // thread on its way into park, on a loaded machine, can find it off
        // the CPU long enough to be deferred: then not walked either).
        // A few may be walked on a loaded machine (a CI run beside two test
        // loops: 3 of 96, where 2 + 1 % was allowed), most likely because
        // the kernel's share of taking each signal (the wake-up, the return
        // to the futex) is the thread's CPU too and went past the has-run
        // threshold (100 µs here); the message prints each one's CPU. A
        // filter that does not work walks nearly all of them.
        let walked: Vec<&Value> = parked_samples
            .iter()
            .filter(|s| !["filtered", "deferred"].contains(&s["outcome"]["kind"].as_str().unwrap_or("")))
            .collect();
        assert!(
            walked.len() <= 2 + parked_samples.len() / 20,
            "JDK {}: {} of {} samples of the parked thread were walked, not filtered (CPU each: {:?})",
            jdk.major,
            walked.len(),
            parked_samples.len(),
            walked.iter().map(|s| u64_at(s, "/cpu_delta_ns")).collect::<Vec<_>>()
        );
        // From the parked thread's last filtered sample seen above: the
        // ring's oldest records can all be from before the thread started
        // (if the ring overwrote that sample since, the page begins at its
        // oldest record, later still, and the parked thread is in every tick).
        let (_, last_filtered) = consecutive.last().expect("filtered samples of the parked thread");
        let from = u64_at(last_filtered, "/seq");
        let only = client.get_json(&format!("/api/samples?filtered=only&limit=1000&since={from}"));
        let only = only["samples"].as_array().expect("samples");
        assert!(only.iter().all(|s| s["outcome"] == json!({"kind": "filtered"})), "filtered=only: {only:?}");
        assert!(only.iter().any(|s| u64_at(s, "/tid") == parked), "filtered=only has no sample of the parked thread {parked}");
        // exclude has no filtered sample.
        let page = client.get_json("/api/samples?filtered=exclude&limit=1000");
        let records = page["samples"].as_array().expect("samples");
        assert!(records.iter().all(|s| s["outcome"] != json!({"kind": "filtered"})), "{page}");
        // The busy thread's recorded samples carry their top frames, leaf
        // first: nearly every one in alpha or gamma called from busy; a few
        // in busy itself (between the calls, or while a call is resolved or
        // compiled). A walk pcct's walker could not finish and
        // AsyncGetCallTrace could not either (`partial`, recorded under a
        // `[break_<reason>]` pseudo-frame) has only the stack's top: rare.
        assert!(!busy_frames.is_empty(), "no recorded sample of the busy thread");
        let mut in_spin_loops = 0;
        let mut partial = 0;
        for sample in &busy_frames {
            let frames = displays(&sample["top_frames"], "");
            let leaf = frames.first().map(String::as_str).unwrap_or("");
            let in_loop = ["LiveTarget.alpha", "LiveTarget.gamma"].contains(&leaf);
            assert!(in_loop || leaf == "LiveTarget.busy", "busy thread's top frames: {sample}");
            assert!(u64_at(sample, "/depth") >= frames.len() as u64);
            if sample["walker"] == "partial" {
                assert!(sample["walk_stopped"].is_string(), "a partial walk says where it stopped: {sample}");
                partial += 1;
                continue;
            }
            assert!(["pcct", "agct"].contains(&sample["walker"].as_str().unwrap_or("")), "{sample}");
            // A whole walk: busy below a loop, Thread.run at the bottom
            // (the stack is 4 or 5 frames deep, all of them top frames).
            assert!(!in_loop || frames.get(1).map(String::as_str) == Some("LiveTarget.busy"), "{sample}");
            assert_eq!(frames.last().map(String::as_str), Some("java.lang.Thread.run"), "a whole walk: {sample}");
            assert_eq!(u64_at(sample, "/depth"), frames.len() as u64, "{sample}");
            in_spin_loops += usize::from(in_loop);
        }
        assert!(
            partial * 20 <= busy_frames.len(),
            "{partial} of {} recorded samples of the busy thread were partial walks",
            busy_frames.len()
        );
        assert!(
            in_spin_loops * 10 >= (busy_frames.len() - partial) * 9,
            "only {in_spin_loops} of {} whole samples of the busy thread are in alpha or gamma",
            busy_frames.len() - partial
        );
        finish(served, &fixture);
    }
}

/// The Linux thread id of the Java thread named `name` (HotSpot names the
/// native thread after the Java thread).
fn thread_id(pid: u32, name: &str) -> u64 {
    let tasks = format!("/proc/{pid}/task");
    let found = poll_until(Instant::now() + SOON, || {
        std::fs::read_dir(&tasks).ok()?.flatten().find_map(|task| {
            let comm = std::fs::read_to_string(task.path().join("comm")).ok()?;
            (comm.trim() == name).then(|| task.file_name().to_str()?.parse().ok()).flatten()
        })
    });
    found.unwrap_or_else(|| panic!("no thread named {name} in {tasks}"))
}

one_jdk! {
    /// POST /api/purge empties the tree and starts a new epoch. Sampling is
    /// paused first (and every sample already signalled drained), so "right
    /// after" is exact: no samples, only the root, no hot methods. Then
    /// sampling resumes and the profile fills again.
    fn purge_empties_the_tree(jdk) {
        let fixture = Fixture::new("http-purge");
        let served = live_target(jdk, &fixture, "interval=1ms");
        let client = served.client.clone();
        hot_methods_with(&client, "limit=5", 200);
        let epoch = u64_at(&status(&client), "/profile/epoch");
        pause_and_drain(&client);
        let before = client.get_json("/api/hot-methods?limit=5");
        assert!(u64_at(&before, "/profile/samples") >= 200);

        let purged = client.post_json("/api/purge", "");
        assert_eq!(purged["purged"], true);
        assert_eq!(u64_at(&purged, "/epoch"), epoch + 1, "{purged}");
        let after = client.get_json("/api/hot-methods?limit=5");
        assert_eq!(u64_at(&after, "/profile/samples"), 0, "{after:#}");
        assert_eq!(u64_at(&after, "/profile/nodes"), 1, "only the root is left: {after:#}");
        assert_eq!(u64_at(&after, "/profile/epoch"), epoch + 1);
        assert_eq!(after["methods"], json!([]), "{after:#}");
        assert_eq!(client.get_json("/api/hot-nodes?limit=5")["nodes"], json!([]));
        assert_eq!(client.get_json("/api/hot-edges?limit=5")["edges"], json!([]));

        client.post_json("/api/sampling", r#"{"running": true}"#);
        let refilled = hot_methods_with(&client, "limit=5", 50);
        assert_eq!(refilled["methods"][0]["method"]["display"], "LiveTarget.alpha", "{refilled:#}");
        assert_eq!(u64_at(&refilled, "/profile/epoch"), epoch + 1);
        finish(served, &fixture);
    }
}

/// Ticks after which the sampler withdraws a request never answered
/// (`LOST_AFTER_TICKS` in sampler/src/sampler.rs), plus a margin.
const REQUEST_LIFETIME_TICKS: u64 = 60;

/// Pauses sampling and waits until the profile is quiet: no new sample for
/// REQUEST_LIFETIME_TICKS ticks, so every request signalled before the
/// pause was answered (or withdrawn). Returns the status then.
fn pause_and_drain(client: &Client) -> Value {
    let answer = client.post_json("/api/sampling", r#"{"running": false}"#);
    assert_eq!(answer["running"], false, "{answer}");
    let activity = |status: &Value| {
        ["/profile/samples", "/counters/samples_recorded", "/counters/samples_filtered", "/counters/samples_failed"]
            .map(|pointer| u64_at(status, pointer))
    };
    let mut quiet_since = status(client);
    poll_until(Instant::now() + SOON, || {
        let now = status(client);
        if activity(&now) != activity(&quiet_since) {
            quiet_since = now;
            return None;
        }
        let quiet = u64_at(&now, "/counters/ticks") - u64_at(&quiet_since, "/counters/ticks");
        (quiet >= REQUEST_LIFETIME_TICKS && now["profile"]["drained_tick"] == now["profile"]["tick"]).then_some(now)
    })
    .unwrap_or_else(|| panic!("the profile did not stop growing after the pause: {}", status(client)))
}

/// Scheduled ticks per second of the sampler's timer (ticks taken plus
/// ticks missed: a sampler thread kept off the CPU by a busy machine misses
/// ticks, counted, but its schedule still follows the interval), measured
/// between two /api/status answers at least `window` of server uptime
/// apart (polled, not slept).
fn tick_rate(client: &Client, window: Duration) -> (f64, Value, Value) {
    let first = status(client);
    let start = first["uptime_s"].as_f64().expect("uptime_s");
    let last = poll_until(Instant::now() + SOON, || {
        let now = status(client);
        (now["uptime_s"].as_f64().expect("uptime_s") - start >= window.as_secs_f64()).then_some(now)
    })
    .expect("uptime advances");
    let seconds = last["uptime_s"].as_f64().unwrap() - start;
    let scheduled = |status: &Value| u64_at(status, "/counters/ticks") + u64_at(status, "/counters/ticks_missed");
    ((scheduled(&last) - scheduled(&first)) as f64 / seconds, first, last)
}

one_jdk! {
    /// POST /api/sampling changes the interval: /api/status shows it, and
    /// the sampler's tick rate (its scheduled ticks, taken and missed, over a window of server
    /// uptime) follows it. Pausing stops new samples and signals; the
    /// timer keeps ticking. Resuming brings samples back.
    ///
    /// The sampler ticks every interval here (`batch=off`): in batches it
    /// wakes when a batch ends or when asked (each status poll asks), so its
    /// ticks follow no interval.
    fn sampling_changes_the_interval_and_pauses(jdk) {
        let fixture = Fixture::new("http-sampling");
        let served = live_target(jdk, &fixture, "interval=2ms,batch=off");
        let client = served.client.clone();
        hot_methods_with(&client, "limit=1", 20);
        let window = Duration::from_millis(1500);
        // The schedule keeps the interval however busy the machine is;
        // the bounds cover the ticks a starved sampler had not yet counted
        // (missed ones are counted when it next wakes) at either end.
        let check = |interval_ms: f64, rate: f64, context: &str| {
            let expected = 1000.0 / interval_ms;
            assert!(
                rate >= 0.6 * expected && rate <= 1.2 * expected,
                "JDK {}: {rate:.0} ticks/s at a {interval_ms} ms interval (expected about {expected:.0}):\n{context}",
                jdk.major
            );
        };
        let (rate, _, last) = tick_rate(&client, window);
        check(2.0, rate, &last.to_string());

        let changed = client.post_json("/api/sampling", r#"{"interval": "20ms"}"#);
        assert_eq!(u64_at(&changed, "/interval_ns"), 20_000_000, "{changed}");
        assert_eq!(changed["running"], true);
        let shown = status(&client);
        assert_eq!(u64_at(&shown, "/sampling/interval_ns"), 20_000_000, "{shown:#}");
        // Which walker walks, and the debug information compiled code has.
        let walker = shown["walker"].as_str().expect("walker");
        assert!(walker.starts_with(&format!("pcct's own (HotSpot {})", jdk.major)), "{walker}");
        assert!(walker.ends_with("frame cache on a huge page (advised)") || walker.ends_with("frame cache on small pages"), "{walker}");
        assert!(shown["debug_info"].as_str().expect("debug_info").starts_with("DebugNonSafepoints"), "{shown:#}");
        assert_eq!(u64_at(&shown, "/profile/interval_ns"), 20_000_000);
        // The tick in progress still runs at the old interval: start after it.
        let tick = u64_at(&shown, "/counters/ticks");
        poll_until(Instant::now() + SOON, || (u64_at(&status(&client), "/counters/ticks") > tick + 1).then_some(()))
            .expect("ticks continue");
        let (slow, _, last) = tick_rate(&client, window);
        check(20.0, slow, &last.to_string());
        assert!(slow * 4.0 < rate, "JDK {}: {slow:.0} ticks/s at 20 ms vs {rate:.0} at 2 ms", jdk.major);

        // Back to 1 ms: faster again.
        client.post_json("/api/sampling", r#"{"interval": "1ms"}"#);
        let tick = u64_at(&status(&client), "/counters/ticks");
        poll_until(Instant::now() + SOON, || (u64_at(&status(&client), "/counters/ticks") > tick + 1).then_some(()))
            .expect("ticks continue");
        let (fast, _, last) = tick_rate(&client, window);
        check(1.0, fast, &last.to_string());

        // Pause: no new samples, no signals, while the timer ticks on.
        let paused = pause_and_drain(&client);
        assert_eq!(paused["sampling"]["running"], false);
        let tick = u64_at(&paused, "/counters/ticks");
        let later = poll_until(Instant::now() + SOON, || {
            let now = status(&client);
            (u64_at(&now, "/counters/ticks") >= tick + 200).then_some(now)
        })
        .expect("the timer ticks while paused");
        for pointer in ["/profile/samples", "/counters/signals_sent", "/counters/samples_recorded", "/counters/samples_filtered"] {
            assert_eq!(u64_at(&later, pointer), u64_at(&paused, pointer), "{pointer} moved while paused");
        }
        assert_eq!(later["sampling"]["running"], false);
        let resumed = client.post_json("/api/sampling", r#"{"running": true}"#);
        assert_eq!(resumed["running"], true);
        let samples = u64_at(&later, "/profile/samples");
        hot_methods_with(&client, "limit=1", samples + 20);
        finish(served, &fixture);
    }
}

/// Every JSON route with a profile header, as the freshness test reads them.
const JSON_ROUTES: &[&str] = &[
    "/api/status",
    "/api/hot-methods?limit=5",
    "/api/hot-methods?limit=5&by=total",
    "/api/hot-edges?limit=5",
    "/api/hot-nodes?limit=5",
    "/api/tree?max_depth=4",
    "/api/samples?limit=5",
];

/// Bound on how long a new hot method may take to show in the answers:
/// the interval, plus 2 s for the JVM's stdout to reach the test, the
/// sample to be taken at the next tick, drained at the one after, and the
/// polling client to ask again.
fn switch_bound(interval: Duration) -> Duration {
    interval + Duration::from_secs(2)
}

one_jdk! {
    /// With the sampler draining in batches (here 100 ms, ten sampling
    /// intervals), an answer still holds the samples taken just before it:
    /// each answer drains first (server/src/fresh.rs). Of two answers at
    /// least 30 ms apart, between which the busy thread used 30 ms of CPU
    /// (three intervals: its timer signalled it twice), the second holds more samples, in
    /// each of ten pairs; an answer that waited for the next batch would
    /// often hold the same (on a quiet machine about 7 pairs in 10 would
    /// then fail). The answers say the sampler batches, and how old their
    /// drain is.
    fn an_answer_holds_the_samples_taken_just_before_it(jdk) {
        let fixture = Fixture::new("http-batch-fresh");
        let served = live_target(jdk, &fixture, "interval=10ms,batch=100ms");
        let client = served.client.clone();
        hot_methods_with(&client, "limit=1", 20);
        let mut ages_ns = Vec::new();
        let pid = served.jvm.pid();
        let busy = thread_id(pid, "busy");
        for pair in 0..10 {
            let first = client.get_json("/api/hot-methods?limit=1");
            // At least 30 ms, and until the busy thread used 30 ms more
            // CPU (three intervals: its timer signalled it at least twice),
            // however loaded the machine is.
            let cpu_before = thread_cpu(pid, busy);
            std::thread::sleep(Duration::from_millis(30));
            poll_until(Instant::now() + SOON, || {
                (thread_cpu(pid, busy) >= cpu_before + Duration::from_millis(30)).then_some(())
            })
            .expect("the busy thread's CPU clock moved");
            let second = client.get_json("/api/hot-methods?limit=1");
            for answer in [&first, &second] {
                assert_eq!(answer.pointer("/profile/batch_ns").and_then(Value::as_u64), Some(100_000_000), "{}", answer["profile"]);
                ages_ns.push(u64_at(answer, "/profile/drained_ago_ns"));
            }
            let (before, after) = (u64_at(&first, "/profile/samples"), u64_at(&second, "/profile/samples"));
            if after <= before {
                let signals = std::fs::read_to_string(format!("/proc/{pid}/task/{busy}/status")).unwrap_or_default();
                let signals: Vec<&str> = signals.lines().filter(|l| l.starts_with("Sig") || l.starts_with("Shd") || l.starts_with("State")).collect();
                let cpu_now = thread_cpu(pid, busy);
                panic!(
                    "JDK {}: pair {pair}: {before} samples, then {after} 30 ms later (busy CPU {cpu_before:?} then {cpu_now:?})\n{signals:?}\n{}\n{}\n{}",
                    jdk.major,
                    first["profile"],
                    second["profile"],
                    status(&client)["counters"]
                );
            }
        }
        ages_ns.sort_unstable();
        let median = Duration::from_nanos(ages_ns[ages_ns.len() / 2]);
        eprintln!("JDK {}: drained_ago median {median:?} with 100 ms batches", jdk.major);
        assert!(median < Duration::from_millis(50), "JDK {}: median answer age {median:?}", jdk.major);
        finish(served, &fixture);
    }
}

one_jdk! {
    /// Freshness, with three more clients asking every route meanwhile.
    /// Every JSON answer carries profile.tick, profile.drained_tick and
    /// profile.drained_ago_ns: the answers' median age is at most one
    /// interval plus 5 ms and none is older than 1 s, at most 2% of drains
    /// wait for readers, and while sampling an answer is at most one
    /// tick behind: tick - drained_tick <= 1 (a sample signalled at tick k
    /// is applied at tick k+1). And when the program switches from alpha to
    /// beta (it says so on stdout), beta shows in /api/hot-nodes and in
    /// /api/samples within switch_bound(interval) = interval + 2 s.
    fn answers_are_fresh(jdk) {
        let fixture = Fixture::new("http-fresh");
        let interval = Duration::from_millis(10);
        let mut served = live_target(jdk, &fixture, "interval=10ms");
        let client = served.client.clone();
        hot_methods_with(&client, "limit=1", 20);
        // Three more clients ask every route, reports and flame graphs
        // included, all the while: answers stay fresh and drains are not
        // held up by readers.
        let deferred_before = u64_at(&status(&client), "/counters/drains_deferred");
        let ticks_before = u64_at(&status(&client), "/counters/ticks");
        let hammer = Hammer::start(served.address(), BUSY_ROUTES, 3, None);
        let mut lag = Vec::new();
        let mut ages_ns = Vec::new();
        for round in 0..20 {
            for route in JSON_ROUTES {
                let answer = client.get_json(route);
                let tick = answer.pointer("/profile/tick").and_then(Value::as_u64);
                let drained = answer.pointer("/profile/drained_tick").and_then(Value::as_u64);
                let (Some(tick), Some(drained)) = (tick, drained) else {
                    panic!("{route}: no profile.tick and profile.drained_tick in {answer}");
                };
                let behind = tick as i64 - drained as i64;
                lag.push(behind);
                assert!(behind <= 1, "JDK {}: {route} (round {round}) is {behind} ticks behind: {}", jdk.major, answer["profile"]);
                assert!(tick > 0 && drained > 0, "{route}: {}", answer["profile"]);
                ages_ns.push(u64_at(&answer, "/profile/drained_ago_ns"));
            }
        }
        let stats = hammer.stop();
        assert_eq!(stats.server_errors(), 0, "{:?}", stats.first_server_error);
        assert_eq!(stats.failed_while_serving, 0, "failed connections: {stats:?}");
        ages_ns.sort_unstable();
        let median = Duration::from_nanos(ages_ns[ages_ns.len() / 2]);
        let max = Duration::from_nanos(*ages_ns.last().expect("ages"));
        let (deferred, ticks) = (
            u64_at(&status(&client), "/counters/drains_deferred") - deferred_before,
            u64_at(&status(&client), "/counters/ticks") - ticks_before,
        );
        eprintln!("JDK {}: drained_ago median {median:?}, max {max:?}; {deferred} of {ticks} drains deferred; HTTP {stats:?}", jdk.major);
        // One interval plus the drain, give or take scheduling on a loaded
        // 2-core machine; never a stall.
        assert!(median <= interval + Duration::from_millis(5), "JDK {}: median answer age {median:?}", jdk.major);
        assert!(max <= Duration::from_secs(1), "JDK {}: an answer {max:?} old", jdk.major);
        assert!(deferred * 50 <= ticks, "JDK {}: {deferred} of {ticks} drains waited for readers", jdk.major);
        // Where beta stands in the answers before the switch: nowhere.
        let seq_before = u64_at(&client.get_json("/api/samples?limit=1"), "/next_since");
        assert!(!hot_node_names(&client).iter().any(|n| n == "LiveTarget.beta"));

        served.jvm.send_line("switch");
        served.jvm.wait_for_stdout_line("switched", SOON);
        let switched = Instant::now();
        let bound = switch_bound(interval);
        let mut in_nodes = None;
        let mut in_samples = None;
        poll_until(switched + bound, || {
            if in_nodes.is_none() && hot_node_names(&client).iter().any(|n| n == "LiveTarget.beta") {
                in_nodes = Some(switched.elapsed());
            }
            if in_samples.is_none() {
                let page = client.get_json(&format!("/api/samples?filtered=exclude&limit=1000&since={seq_before}"));
                let leaf_beta = page["samples"].as_array().expect("samples").iter().any(|s| s["top_frames"][0] == "LiveTarget.beta");
                if leaf_beta {
                    in_samples = Some(switched.elapsed());
                }
            }
            (in_nodes.is_some() && in_samples.is_some()).then_some(())
        });
        eprintln!("JDK {}: ticks behind {:?}; beta in hot nodes after {in_nodes:?}, in samples after {in_samples:?}", jdk.major, lag.iter().max());
        assert!(in_nodes.is_some(), "JDK {}: beta not in /api/hot-nodes within {bound:?} of the switch: {:?}", jdk.major, hot_node_names(&client));
        assert!(in_samples.is_some(), "JDK {}: beta not a leaf in /api/samples within {bound:?} of the switch", jdk.major);
        finish(served, &fixture);
    }
}

fn hot_node_names(client: &Client) -> Vec<String> {
    displays(&client.get_json("/api/hot-nodes?limit=1000")["nodes"], "/method/display")
}

/// Every route with a request that succeeds on a live JVM.
const ROUTES: &[(&str, &str, &str)] = &[
    ("GET", "/", ""),
    ("GET", "/metrics", ""),
    ("GET", "/flamegraph.svg", ""),
    ("GET", "/api/status", ""),
    ("GET", "/api/hot-methods?limit=3", ""),
    ("GET", "/api/hot-edges?limit=3", ""),
    ("GET", "/api/hot-nodes?limit=3", ""),
    ("GET", "/api/tree?max_depth=3", ""),
    ("GET", "/api/samples?limit=3", ""),
    ("GET", "/api/reports/xtree", ""),
    ("GET", "/api/reports/xarc", ""),
    ("GET", "/api/reports/xprof", ""),
    ("GET", "/api/collapsed", ""),
    ("POST", "/api/purge", ""),
    ("POST", "/api/sampling", r#"{"running": true}"#),
    ("GET", "/debug/pprof/profile?seconds=1", ""),
    ("POST", "/logout", ""),
];

one_jdk! {
    /// With token=..., every route but /healthz answers 401 (with a
    /// WWW-Authenticate challenge) without the token or with a wrong one,
    /// and its normal answer with it; /healthz needs none.
    fn token_guards_every_route_but_healthz(jdk) {
        const TOKEN: &str = "s3cret-Token_42-long";
        let fixture = Fixture::new("http-token");
        let served = live_target(jdk, &fixture, &format!("interval=1ms,token={TOKEN}"));
        let anonymous = served.client.clone();
        let wrong = anonymous.clone().with_token("s3cret-Token_43-long");
        let authorised = anonymous.clone().with_token(TOKEN);
        let request = |client: &Client, method: &str, path: &str, body: &str| {
            let body = (method == "POST").then_some(body.as_bytes());
            client.request(method, path, body).unwrap_or_else(|e| panic!("{method} {path}: {e}"))
        };
        for (method, path, body) in ROUTES.iter().copied().chain([("GET", "/no-such-route", "")]) {
            for (who, client) in [("no token", &anonymous), ("a wrong token", &wrong)] {
                let response = request(client, method, path, body);
                assert_eq!(response.status, 401, "{method} {path} with {who}: {}", response.text());
                assert!(response.header("www-authenticate").is_some_and(|v| v.starts_with("Bearer")), "{method} {path}");
                assert!(response.json()["error"].is_string(), "{method} {path}: {}", response.text());
            }
            let response = request(&authorised, method, path, body);
            let expected = match path {
                "/no-such-route" => 404,
                "/logout" => 303,
                _ => 200,
            };
            assert_eq!(response.status, expected, "{method} {path} with the token: {}", response.text());
        }
        for client in [&anonymous, &wrong, &authorised] {
            let response = client.get("/healthz").expect("GET /healthz");
            assert_eq!((response.status, response.text().as_str()), (200, "ok\n"));
        }
        finish(served, &fixture);
    }
}

one_jdk! {
    /// The server listens on 127.0.0.1 by default (the addr file and the
    /// agent's start-up line say so, and 127.0.0.2, another loopback
    /// address, is refused), and on the address `bind` names otherwise.
    fn binds_loopback_unless_told_otherwise(jdk) {
        for (bind, expected_host, other_host) in [("", "127.0.0.1", "127.0.0.2"), ("bind=127.0.0.2,", "127.0.0.2", "127.0.0.1")] {
            let fixture = Fixture::new("http-bind");
            let mut served = live_target(jdk, &fixture, &format!("{bind}interval=10ms"));
            let address = served.address();
            assert_eq!(served.addr_text, format!("{expected_host}:{}", address.port()), "the addr file with {bind:?}");
            assert_eq!(address.ip().to_string(), expected_host);
            assert!(address.port() > 0);
            served.jvm.wait_for_stderr(&format!("pcct: serving http://{}", served.addr_text), SOON);
            assert_eq!(served.client.get("/healthz").expect("GET /healthz").status, 200);
            let settings = status(&served.client)["settings"].clone();
            assert_eq!(settings["bind"], expected_host, "{settings}");
            let elsewhere: std::net::SocketAddr = format!("{other_host}:{}", address.port()).parse().unwrap();
            let refused = Client::new(elsewhere).with_timeout(Duration::from_secs(5)).get("/healthz");
            assert!(refused.is_err(), "{elsewhere} answered though the server binds {}: {refused:?}", served.addr_text);
            finish(served, &fixture);
        }
    }
}
