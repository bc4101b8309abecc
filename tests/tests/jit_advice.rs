//! The JIT feedback loop on real JVMs: the inline records of
//! CompiledMethodLoad (on by default) say which hot edges HotSpot
//! inlined; `pcct advise --apply` makes it inline the one it did not, and
//! `--remove` takes that back; the JSON profile carries the advice for
//! `pcct advise` offline; the directives it writes are HotSpot's.
//!
//! Program: JitAdvice.java. Its hot edge escape -> Complex.times is a call
//! (Complex.times has 407 bytes of bytecode, over C2's FreqInlineSize of
//! 325: "hot method too big"); escape -> Complex.plus is inlined. Every
//! round checks its result against the first (recompiled code must compute
//! what the interpreter did).

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use pcct_tests::http::{start_served, Client, Served};
use pcct_tests::{assert_no_hs_err, jcmd, per_jdk, poll_until, run_pcct, Fixture, Jdk, Jvm};
use serde_json::Value;

/// Deadline for the JIT to compile the hot loop, or compile it again:
/// seconds of the worker's CPU, on a machine that may be loaded.
const COMPILED: Duration = Duration::from_secs(90);

/// Recompile requests without a token (these tests are about the loop,
/// not its guard: `security.rs` runs it with the control token), at most
/// one a second.
const OPEN_RECOMPILE: &str = "recompile=unsafe-without-token,recompile_every=1s";

const CALLER: &str = "JitAdvice.escape";
const TOO_BIG: &str = "JitAdvice$Complex.times";
const SMALL: &str = "JitAdvice$Complex.plus";

fn report(output: &Output) -> String {
    format!(
        "{}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// JitAdvice running until its stdin closes, served on an ephemeral port.
fn start(jdk: &Jdk, fixture: &Fixture, options: &str) -> Served {
    let jvm = Jvm::new(jdk, fixture, "JitAdvice").arg("600").arg("--until-eof");
    let mut served = start_served(jvm, fixture, options);
    served.jvm.wait_for_stdout_line("ready", COMPILED);
    served
}

/// The hot edge `caller -> callee` in a hot-edges answer.
fn edge<'a>(answer: &'a Value, caller: &str, callee: &str) -> Option<&'a Value> {
    answer["edges"].as_array()?.iter().find(|e| e["caller"]["display"] == caller && e["callee"]["display"] == callee)
}

/// Polls `/api/hot-edges` until `caller -> callee` is reported with
/// `inlined` equal to `inlined` in C2 code, and returns that edge.
fn wait_for_edge(client: &Client, callee: &str, inlined: bool, within: Duration) -> Value {
    let mut last = Value::Null;
    let found = poll_until(Instant::now() + within, || {
        last = client.get_json("/api/hot-edges?limit=100");
        let hit = edge(&last, CALLER, callee).filter(|e| e["inlined"] == inlined && e["caller_level"] == 4).cloned();
        if hit.is_none() {
            std::thread::sleep(Duration::from_millis(100));
        }
        hit
    });
    found.unwrap_or_else(|| {
        let status = client.get_json("/api/status");
        panic!(
            "{CALLER} -> {callee} not reported inlined={inlined} in C2 code within {within:?}:\n{last:#}\njit: {:#}",
            status["jit"]
        )
    })
}

/// Lines `rate ...` the worker printed so far.
fn rounds(served: &Served) -> usize {
    served.jvm.stdout().lines().filter(|line| line.starts_with("rate ")).count()
}

/// Closes stdin; the program must have computed the same result every round.
fn finish(served: Served, fixture: &Fixture) {
    let finished = served.jvm.wait_with_deadline(Duration::from_secs(60));
    finished.assert_success();
    assert!(!finished.stdout.contains("WRONG"), "{}", finished.report());
    assert!(finished.stdout.lines().any(|line| line.starts_with("done ")), "{}", finished.report());
    assert_no_hs_err(fixture.dir());
}

per_jdk! {
    /// The edge to the too-big callee is reported not inlined in C2 code
    /// and the small one inlined; `pcct advise --apply` adds a directive
    /// and recompiles, after which the edge is reported inlined and the
    /// program goes on computing the same results; `--remove` takes it back.
    fn advise_apply_gets_a_hot_call_inlined_and_remove_takes_it_back(jdk) {
        let fixture = Fixture::new("jit-advise-apply");
        let profile = fixture.path("profile.json");
        let served = start(jdk, &fixture, &format!("interval=1ms,{OPEN_RECOMPILE},file={}", profile.display()));
        let client = served.client.clone();
        let big = wait_for_edge(&client, TOO_BIG, false, COMPILED);
        assert!(big["compiled_in"].is_string(), "{big:#}");
        assert_eq!(big["context"], "whole", "{big:#}");
        wait_for_edge(&client, SMALL, true, COMPILED);
        // Start-up's hot calls (class loading, lambdas) are history: purge,
        // as a JIT-feedback client would, and advise on what runs now.
        client.post_json("/api/purge", "");
        wait_for_edge(&client, TOO_BIG, false, COMPILED);

        // The capability to retransform classes is added at the first
        // recompile request, not held from start-up.
        let recompile = |client: &Client| client.get_json("/api/status")["jit"]["recompile"].as_str().unwrap_or_default().to_string();
        assert!(recompile(&client).contains("added at the first request"), "{}", recompile(&client));
        let pid = served.jvm.pid().to_string();
        let applied = run_pcct(&["advise", "--apply", &pid, "--wait", "90"], fixture.dir());
        assert!(applied.status.success(), "advise --apply failed: {}", report(&applied));
        assert_eq!(recompile(&client), "on (can retransform classes)");
        let text = String::from_utf8_lossy(&applied.stdout);
        assert!(text.contains("compiler directives to JVM") && text.contains("inlined after"), "{}", report(&applied));
        // The tool waited for it: the agent says so now, within seconds.
        wait_for_edge(&client, TOO_BIG, true, Duration::from_secs(10));
        // The recompiled code keeps computing the first round's result.
        let before = rounds(&served);
        poll_until(Instant::now() + COMPILED, || (rounds(&served) >= before + 4).then_some(()))
            .unwrap_or_else(|| panic!("no more rounds after --apply:\n{}", served.jvm.stdout()));
        assert!(!served.jvm.stdout().contains("WRONG"), "{}", served.jvm.stdout());

        let removed = run_pcct(&["advise", "--remove", &pid], fixture.dir());
        assert!(removed.status.success(), "advise --remove failed: {}", report(&removed));
        wait_for_edge(&client, TOO_BIG, false, COMPILED);
        let again = run_pcct(&["advise", "--remove", &pid], fixture.dir());
        assert_eq!(again.status.code(), Some(1), "nothing left to remove: {}", report(&again));
        finish(served, &fixture);

        // The profile written at exit carries the advice: offline, the call
        // is a call again, and -o writes its directive.
        let offline = fixture.path("offline.json");
        let advised = run_pcct(&["advise", profile.to_str().unwrap(), "-o", offline.to_str().unwrap()], fixture.dir());
        assert!(advised.status.success(), "advise <profile> failed: {}", report(&advised));
        let text = String::from_utf8_lossy(&advised.stdout);
        assert!(text.contains(&format!("{CALLER}:")) && text.contains(&format!("-> {TOO_BIG} [407 bytes]")), "{}", report(&advised));
        let written = std::fs::read_to_string(&offline).expect("-o wrote the directives");
        assert!(written.contains("+JitAdvice$Complex.times(LJitAdvice$Complex;)LJitAdvice$Complex;"), "{written}");
    }
}

per_jdk! {
    /// `/api/jit/directives` names the too-big callee, and HotSpot takes
    /// the file at start-up (`-XX:CompilerDirectivesFile`) and live (`jcmd
    /// Compiler.directives_add`).
    fn the_directives_are_hotspots(jdk) {
        let fixture = Fixture::new("jit-directives");
        let served = start(jdk, &fixture, "interval=1ms");
        let client = served.client.clone();
        wait_for_edge(&client, TOO_BIG, false, COMPILED);
        // While the JIT compiles (tiered: C1 code first, then C2; OSR and
        // normal entries), the advice may say "wait"; it settles on inline.
        let callee = "+JitAdvice$Complex.times(LJitAdvice$Complex;)LJitAdvice$Complex;";
        let mut last = String::new();
        let names_times = |text: &str| {
            let directives: Value = serde_json::from_str(text).expect("directives are JSON");
            directives.as_array().is_some_and(|all| all.iter().any(|d| d["c2"]["inline"].as_array().is_some_and(|i| i.iter().any(|c| c == callee))))
        };
        // Both answers, the default and with JDK methods matched too, in
        // one look (the advice changes as the JIT compiles anew).
        let mut with_jdk = String::new();
        poll_until(Instant::now() + COMPILED, || {
            let answer = client.get("/api/jit/directives").expect("directives");
            assert_eq!(answer.status, 200, "{}", answer.text());
            last = answer.text();
            let jdk_answer = client.get("/api/jit/directives?match_jdk=on").expect("directives");
            assert_eq!(jdk_answer.status, 200, "{}", jdk_answer.text());
            with_jdk = jdk_answer.text();
            let found = (names_times(&last) && names_times(&with_jdk)).then_some(());
            if found.is_none() {
                std::thread::sleep(Duration::from_millis(100));
            }
            found
        })
        .unwrap_or_else(|| panic!("no directive inlines {callee} within {COMPILED:?}: {last}\n{with_jdk}\n{:#}", client.get_json("/api/jit/advice")));
        // No directive matches the JDK's own methods unless asked to.
        let matched = |text: &str| -> Vec<String> {
            let directives: Value = serde_json::from_str(text).expect("JSON");
            let all = directives.as_array().into_iter().flatten().flat_map(|d| d["match"].as_array().cloned().unwrap_or_default());
            all.filter_map(|m| m.as_str().map(str::to_string)).collect()
        };
        let is_jdk = |m: &String| ["java/", "javax/", "jdk/", "sun/", "com/sun/"].iter().any(|p| m.starts_with(p));
        let jdk_matched: Vec<String> = matched(&last).into_iter().filter(is_jdk).collect();
        assert!(jdk_matched.is_empty(), "JDK methods matched: {jdk_matched:?}\n{last}");
        let application: Vec<String> = matched(&with_jdk).into_iter().filter(|m| !is_jdk(m)).collect();
        assert!(!application.is_empty(), "{with_jdk}");
        let bad = client.get("/api/jit/directives?match_jdk=maybe").expect("an answer");
        assert_eq!(bad.status, 400, "{}", bad.text());
        assert!(bad.text().contains("match_jdk"), "{}", bad.text());
        // Before the directives are loaded: under them HotSpot may inline times.
        assert_inline_tree(&client);
        assert_hotspot_loads(jdk, &served, &fixture, &last);
        finish(served, &fixture);
    }
}

/// The nodes of `escape` in an inline-tree answer's trees.
fn escape_nodes(node: &Value, found: &mut Vec<Value>) {
    if node["method"]["class"] == "JitAdvice" && node["method"]["name"] == "escape" {
        found.push(node.clone());
    }
    for inner in node["inlined"].as_array().into_iter().flatten() {
        escape_nodes(inner, found);
    }
}

/// `/api/jit/inline-tree` of the code that runs `escape` shows `plus`
/// inlined into it and `times` not; a bad `method` is refused.
fn assert_inline_tree(client: &Client) {
    let small = wait_for_edge(client, SMALL, true, COMPILED);
    let mut last = Value::Null;
    let shown = poll_until(Instant::now() + COMPILED, || {
        let root = wait_for_edge(client, SMALL, true, COMPILED)["compiled_in"].as_str().unwrap_or_default().to_string();
        last = client.get_json(&format!("/api/jit/inline-tree?method={root}"));
        let mut nodes = Vec::new();
        for code in last["codes"].as_array().into_iter().flatten().filter(|code| code["level"] == 4) {
            escape_nodes(&code["tree"], &mut nodes);
        }
        let inlined = |node: &Value, name: &str| {
            node["inlined"]
                .as_array()
                .is_some_and(|calls| calls.iter().any(|call| call["method"]["name"] == name && call["bci"].is_i64()))
        };
        let found = nodes.iter().any(|node| inlined(node, "plus") && !inlined(node, "times")).then_some(());
        if found.is_none() {
            std::thread::sleep(Duration::from_millis(200));
        }
        found
    });
    shown.unwrap_or_else(|| panic!("no C2 code shows plus inlined into escape and times not:\n{small:#}\n{last:#}"));
    let bad = client.get("/api/jit/inline-tree?method=escape").expect("an answer");
    assert_eq!(bad.status, 400, "{}", bad.text());
    assert!(bad.text().contains("\"parameter\":\"method\""), "{}", bad.text());
    let missing = client.get("/api/jit/inline-tree").expect("an answer");
    assert_eq!(missing.status, 400, "{}", missing.text());
}

per_jdk! {
    /// With nothing to advise (no edge reaches `min_share=1`), the
    /// directives answer is still a file HotSpot loads, at start-up and
    /// live: a file without directives stops a JVM from starting.
    fn an_answer_with_nothing_to_advise_loads_into_hotspot(jdk) {
        let fixture = Fixture::new("jit-directives-none");
        let served = start(jdk, &fixture, "interval=1ms");
        let answer = served.client.get("/api/jit/directives?min_share=1").expect("directives");
        assert_eq!(answer.status, 200, "{}", answer.text());
        let text = answer.text();
        let directives: Value = serde_json::from_str(&text).expect("directives are JSON");
        let asks = directives.as_array().expect("an array").iter().any(|d| d["c2"]["inline"].as_array().is_some_and(|i| !i.is_empty()));
        assert!(!asks, "directives that ask for something with nothing advised: {text}");
        assert_eq!(directives.as_array().map(Vec::len), Some(1), "{text}");
        assert_hotspot_loads(jdk, &served, &fixture, &text);
        finish(served, &fixture);
    }
}

/// The advice for `caller -> callee` in an advice answer.
fn advised<'a>(answer: &'a Value, caller: &str, callee: &str) -> Option<&'a Value> {
    ["not_inlined", "inlined", "unknown"].iter().find_map(|list| {
        answer[*list].as_array()?.iter().find(|e| e["caller"]["name"] == caller && e["callee"]["class"] == callee)
    })
}

per_jdk! {
    /// Receivers decide what can be inlined (JitReceivers.java): at the
    /// site that calls three `apply` methods a third each (all too big for
    /// C2), no edge gets "inline"; at the site that calls one of them 95 %
    /// of the time, that one does, and the directive names it.
    fn a_megamorphic_site_gets_no_inline_advice_unless_one_receiver_has_the_major_share(jdk) {
        let fixture = Fixture::new("jit-receivers");
        let jvm = Jvm::new(jdk, &fixture, "JitReceivers").arg("600").arg("--until-eof");
        let mut served = start_served(jvm, &fixture, "interval=1ms");
        served.jvm.wait_for_stdout_line("ready", COMPILED);
        let client = served.client.clone();
        let receivers = ["JitReceivers$A", "JitReceivers$B", "JitReceivers$C"];
        let mut last = Value::Null;
        // Both sites in C2 code, with at least `samples` in the profile.
        let mut assessed = |samples: u64| {
            poll_until(Instant::now() + COMPILED, || {
                last = client.get_json("/api/jit/advice?limit=50&min_share=0.001");
                let in_c2 = |e: &&Value| e["caller_level"] == 4;
                let major = advised(&last, "major", receivers[0]).filter(in_c2).filter(|e| e["callees_at_site"] == 3);
                let even: Vec<&Value> = receivers.iter().filter_map(|r| advised(&last, "even", r).filter(in_c2)).collect();
                let enough = last["profile"]["samples"].as_u64().unwrap_or(0) >= samples;
                let found = major.filter(|_| even.len() == 3 && enough).map(|major| (major.clone(), even.into_iter().cloned().collect::<Vec<_>>()));
                if found.is_none() {
                    std::thread::sleep(Duration::from_millis(100));
                }
                found
            })
            .unwrap_or_else(|| panic!("both sites not assessed in C2 code with {samples} samples within {COMPILED:?}:\n{last:#}"))
        };
        assessed(0);
        // Compiled: what runs from now on is judged on 4 s of samples
        // (2,000 at each site; a receiver's share then has a standard
        // error of 0.5 points at the major site, 1 point at the other).
        client.post_json("/api/purge", "");
        let (major, even) = assessed(4000);
        assert_eq!(major["action"], "inline", "{major:#}");
        let share = major["site_share"].as_f64().unwrap();
        assert!((0.9..=1.0).contains(&share), "the major receiver's share {share}: {major:#}");
        for edge in &even {
            assert_eq!(edge["action"], "cannot", "{edge:#}");
            assert!(edge["why"].as_str().unwrap().contains("megamorphic"), "{edge:#}");
            let share = edge["site_share"].as_f64().unwrap();
            assert!((0.2..0.5).contains(&share), "a third each: {share}: {edge:#}");
        }
        // The directive inlines A.apply in major's compilations, and none
        // matches even.
        let text = client.get("/api/jit/directives?min_share=0.001").expect("directives").text();
        let directives: Value = serde_json::from_str(&text).expect("directives are JSON");
        let all = directives.as_array().expect("an array");
        assert!(all.iter().any(|d| d["c2"]["inline"].as_array().is_some_and(|i| i.iter().any(|c| c == "+JitReceivers$A.apply(D)D"))), "{text}");
        assert!(!all.iter().any(|d| d["match"].as_array().is_some_and(|m| m.iter().any(|m| m == "JitReceivers.even(DI)D"))), "{text}");
        assert_hotspot_loads(jdk, &served, &fixture, &text);
        finish(served, &fixture);
    }
}

/// The directives file `text` loads into HotSpot at start-up
/// (`-XX:CompilerDirectivesFile`) and live into the served JVM (`jcmd
/// Compiler.directives_add`, each directive counted), which then drops
/// them again.
fn assert_hotspot_loads(jdk: &Jdk, served: &Served, fixture: &Fixture, text: &str) {
    let file = fixture.path("directives.json");
    std::fs::write(&file, text).expect("write the directives");
    let at_start_up = Command::new(jdk.java())
        .arg("-XX:+UnlockDiagnosticVMOptions")
        .arg(format!("-XX:CompilerDirectivesFile={}", file.display()))
        .arg("-version")
        .output()
        .expect("java runs");
    assert!(at_start_up.status.success(), "java refused the directives: {}\n{text}", report(&at_start_up));
    let count = serde_json::from_str::<Value>(text).expect("JSON").as_array().map_or(0, Vec::len);
    let added = jcmd(
        jdk,
        served.jvm.pid(),
        &[OsStr::new("Compiler.directives_add"), file.as_os_str()],
        fixture.dir(),
        COMPILED,
    );
    assert!(added.stdout.contains(&format!("{count} compiler directives added")), "{}", added.report());
    for _ in 0..count {
        jcmd(jdk, served.jvm.pid(), &[OsStr::new("Compiler.directives_remove")], fixture.dir(), COMPILED);
    }
}

/// `jcmd <pid> Compiler.<command> [file]`, which must succeed.
fn directives_jcmd(jdk: &Jdk, served: &Served, fixture: &Fixture, command: &str, file: Option<&Path>) -> String {
    let mut arguments = vec![OsStr::new(command)];
    arguments.extend(file.map(Path::as_os_str));
    let output = jcmd(jdk, served.jvm.pid(), &arguments, fixture.dir(), COMPILED);
    output.assert_success();
    output.stdout
}

/// Directives on the JVM's stack, the default one included.
fn depth(jdk: &Jdk, served: &Served, fixture: &Fixture) -> usize {
    directives_jcmd(jdk, served, fixture, "Compiler.directives_print", None).matches("Directive:").count()
}

per_jdk! {
    /// `--apply` checks the room under CompilerDirectivesLimit (3 here:
    /// the default directive and two more) and names the limit when there
    /// is none; `--remove` pops only what `--apply` added: not while
    /// another directive sits above it, and nothing when its directives
    /// were cleared meanwhile.
    fn apply_respects_the_directives_limit_and_remove_takes_only_its_own(jdk) {
        let fixture = Fixture::new("jit-advise-stack");
        let jvm = Jvm::new(jdk, &fixture, "JitAdvice")
            .flag("-XX:+UnlockDiagnosticVMOptions")
            .flag("-XX:CompilerDirectivesLimit=3")
            .arg("600")
            .arg("--until-eof");
        let mut served = start_served(jvm, &fixture, &format!("interval=1ms,{OPEN_RECOMPILE}"));
        served.jvm.wait_for_stdout_line("ready", COMPILED);
        let client = served.client.clone();
        wait_for_edge(&client, TOO_BIG, false, COMPILED);
        client.post_json("/api/purge", "");
        wait_for_edge(&client, TOO_BIG, false, COMPILED);
        let pid = served.jvm.pid().to_string();
        let foreign = fixture.path("foreign.json");
        std::fs::write(&foreign, r#"[{ match: "Foreign.method()V", c2: { Exclude: true } }, { match: "Other.method()V", c2: { Exclude: true } }]"#)
            .expect("write the foreign directives");

        // Full: the default and two foreign directives.
        directives_jcmd(jdk, &served, &fixture, "Compiler.directives_add", Some(&foreign));
        assert_eq!(depth(jdk, &served, &fixture), 3);
        let refused = run_pcct(&["advise", "--apply", &pid, "--wait", "90"], fixture.dir());
        let said = report(&refused);
        assert_eq!(refused.status.code(), Some(1), "{said}");
        assert!(said.contains("CompilerDirectivesLimit is 3") && said.contains("room for 0"), "{said}");
        assert_eq!(depth(jdk, &served, &fixture), 3, "nothing added");

        // Room for one: pcct's goes on, then a foreign one above it.
        directives_jcmd(jdk, &served, &fixture, "Compiler.directives_clear", None);
        let applied = run_pcct(&["advise", "--apply", &pid, "--wait", "90"], fixture.dir());
        assert!(applied.status.success(), "advise --apply failed: {}", report(&applied));
        let single = fixture.path("single.json");
        std::fs::write(&single, r#"[{ match: "Foreign.method()V", c2: { Exclude: true } }]"#).expect("write");
        directives_jcmd(jdk, &served, &fixture, "Compiler.directives_add", Some(&single));
        let covered = run_pcct(&["advise", "--remove", &pid], fixture.dir());
        let said = report(&covered);
        assert_eq!(covered.status.code(), Some(1), "{said}");
        assert!(said.contains("1 compiler directives were added") && said.contains("nothing removed"), "{said}");
        assert_eq!(depth(jdk, &served, &fixture), 3, "nothing removed");
        // With the foreign one gone, --remove takes pcct's and leaves the default.
        directives_jcmd(jdk, &served, &fixture, "Compiler.directives_remove", None);
        let removed = run_pcct(&["advise", "--remove", &pid], fixture.dir());
        assert!(removed.status.success(), "advise --remove failed: {}", report(&removed));
        assert!(String::from_utf8_lossy(&removed.stdout).contains("removed the 1 compiler directives pcct advise added"));
        assert_eq!(depth(jdk, &served, &fixture), 1);

        // Applied, then cleared by someone else: nothing of pcct's to remove.
        wait_for_edge(&client, TOO_BIG, false, COMPILED);
        let applied = run_pcct(&["advise", "--apply", &pid, "--wait", "90"], fixture.dir());
        assert!(applied.status.success(), "advise --apply failed: {}", report(&applied));
        directives_jcmd(jdk, &served, &fixture, "Compiler.directives_add", Some(&single));
        directives_jcmd(jdk, &served, &fixture, "Compiler.directives_clear", None);
        directives_jcmd(jdk, &served, &fixture, "Compiler.directives_add", Some(&single));
        let gone = run_pcct(&["advise", "--remove", &pid], fixture.dir());
        let said = report(&gone);
        assert!(gone.status.success(), "{said}");
        assert!(said.contains("nothing of pcct advise's is on JVM"), "{said}");
        assert_eq!(depth(jdk, &served, &fixture), 2, "the foreign directive stays");
        finish(served, &fixture);
    }
}

/// The `<tbody>` of the page's advice table.
fn advice_rows(dom: &str) -> &str {
    let Some(start) = dom.find("<table id=\"jit-table\">") else { return "" };
    let end = dom[start..].find("</table>").map_or(dom.len(), |end| start + end);
    &dom[start..end]
}

per_jdk! {
    /// The live page shows the advice: in headless Chromium, its advice
    /// table lists the call to the too-big callee as one to inline.
    fn the_live_page_shows_the_advice(jdk) {
        let fixture = Fixture::new("jit-page");
        let served = start(jdk, &fixture, "interval=1ms");
        let client = served.client.clone();
        wait_for_edge(&client, TOO_BIG, false, COMPILED);
        let chromium = pcct_tests::browser::Chromium::new(fixture.dir());
        let wanted = format!("{CALLER} → {TOO_BIG}");
        let (dom, ready) = chromium.dump_dom_until(
            &format!("{}/", client.base_url()),
            Duration::from_secs(3),
            Instant::now() + Duration::from_secs(90),
            |dom| advice_rows(dom).split("<tr>").any(|row| row.contains(&wanted) && row.contains("\">inline</td>")),
        );
        assert!(ready, "JDK {}: the page's advice does not list {wanted} to inline:\n{}", jdk.major, advice_rows(&dom));
        finish(served, &fixture);
    }
}
