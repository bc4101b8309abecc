//! The control plane is safe to leave on, on a real JVM with the real
//! agent, over real HTTP on loopback only (JDK 17):
//! - a token shorter than 16 bytes stops the JVM at start-up, with one
//!   line naming the option;
//! - without a token, recompiling is refused at the defaults;
//! - the read-only token reads (scrapes, pprof) but cannot pause, purge or
//!   recompile;
//! - a profile window ends when its client hangs up; clients that ask for
//!   the advice, the directives and profile windows and hang up at once, a
//!   few hundred times, leave no job or window behind and the JVM's
//!   resident memory within 10 MiB of where it was;
//! - `pcct advise --apply` on a JVM started from a directory holding a
//!   fake `jcmd` runs the JDK's own (`$JAVA_HOME`), never that one.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use pcct_tests::http::{start_served, Client, Served};
use pcct_tests::stress::rss;
use pcct_tests::{assert_no_hs_err, jdk17, pcct_tool, poll_until, Fixture, Jdk, Jvm};
use serde_json::Value;

const SOON: Duration = Duration::from_secs(60);
const CONTROL: &str = "control-token-0123456789";
const READ: &str = "read-only-token-0123456789";

/// LiveTarget with `options`, ready.
fn live_target(fixture: &Fixture, jvm: Jvm, options: &str) -> Served {
    let mut served = start_served(jvm, fixture, options);
    served.jvm.wait_for_stdout_line("ready", SOON);
    served
}

/// Closes the program's stdin; a clean exit and no hs_err file.
fn finish(served: Served, fixture: &Fixture) {
    let finished = served.jvm.wait_with_deadline(SOON);
    finished.assert_success();
    assert_no_hs_err(fixture.dir());
}

#[test]
fn a_token_shorter_than_16_bytes_stops_the_jvm_with_one_line_naming_the_option() {
    let jdk = jdk17();
    let fixture = Fixture::new("security-short-token");
    for (options, key) in [("token=fifteen-bytes!!", "token"), ("read_token=short", "read_token")] {
        let finished = Jvm::new(&jdk, &fixture, "LoopShort").arg("1").agent(options).run(SOON);
        assert_no_hs_err(fixture.dir());
        assert!(!finished.status.success(), "the JVM ran with {options}\n{}", finished.report());
        let lines = finished.agent_lines();
        assert_eq!(lines.len(), 1, "exactly one pcct line for {options}\n{}", finished.report());
        assert!(lines[0].contains(&format!("`{key}=(not shown)`")) && lines[0].contains("16 to 256"), "{}", lines[0]);
        assert!(!lines[0].contains("fifteen") && !lines[0].contains("short`"), "the token is echoed: {}", lines[0]);
    }
}

#[test]
fn without_a_token_recompiling_is_refused_at_the_defaults() {
    let jdk = jdk17();
    let fixture = Fixture::new("security-recompile-default");
    let served = live_target(&fixture, Jvm::new(&jdk, &fixture, "LiveTarget"), "interval=1ms");
    let answer = served.client.post("/api/jit/recompile", r#"{"classes": ["LiveTarget"]}"#).expect("an answer");
    assert_eq!(answer.status, 403, "{}", answer.text());
    assert!(answer.text().contains("control token"), "{}", answer.text());
    let said = served.client.get_json("/api/status")["jit"]["recompile"].as_str().unwrap_or("").to_string();
    assert!(said.starts_with("off: recompiling needs the control token"), "{said}");
    finish(served, &fixture);
}

#[test]
fn the_read_only_token_reads_but_cannot_pause_purge_or_recompile() {
    let jdk = jdk17();
    let fixture = Fixture::new("security-read-only");
    let options = format!("interval=1ms,token={CONTROL},read_token={READ}");
    let served = live_target(&fixture, Jvm::new(&jdk, &fixture, "LiveTarget"), &options);
    let reader = served.client.clone().with_token(READ);
    let samples = || reader.get_json("/api/status")["profile"]["samples"].as_u64().unwrap_or(0);
    poll_until(Instant::now() + SOON, || (samples() >= 50).then_some(())).expect("samples");
    for path in ["/metrics", "/api/hot-methods", "/debug/pprof/profile?seconds=1", "/api/jit/advice"] {
        let answer = reader.get(path).expect("an answer");
        assert_eq!(answer.status, 200, "GET {path} with the read-only token: {}", answer.text());
    }
    let changes = [
        ("/api/sampling", r#"{"running": false}"#),
        ("/api/purge", ""),
        ("/api/jit/recompile", r#"{"classes": ["LiveTarget"]}"#),
    ];
    for (path, body) in changes {
        let answer = reader.post(path, body).expect("an answer");
        assert_eq!(answer.status, 403, "POST {path} with the read-only token: {}", answer.text());
    }
    let status = reader.get_json("/api/status");
    assert_eq!(status["sampling"]["running"], true, "paused by the read-only token");
    assert_eq!(status["profile"]["epoch"], 1, "purged by the read-only token: {}", status["profile"]);
    let control = served.client.clone().with_token(CONTROL);
    assert_eq!(control.post_json("/api/sampling", r#"{"running": false}"#)["running"], false);
    finish(served, &fixture);
}

/// Sends `GET path` on a fresh loopback connection and closes it at once.
fn ask_and_hang_up(address: SocketAddr, path: &str) {
    assert!(address.ip().is_loopback(), "loopback only: {address}");
    if let Ok(mut stream) = TcpStream::connect_timeout(&address, Duration::from_secs(5)) {
        let _ = write!(stream, "GET {path} HTTP/1.1\r\nHost: {address}\r\n\r\n");
    }
}

/// The JVM's resident memory in KiB, anonymous and file-backed together.
fn resident_kib(pid: u32) -> u64 {
    rss(pid).map(|rss| rss.anon_kib + rss.file_kib).expect("the JVM is running")
}

/// Waits, at most `within`, until no heavy job is alive and no window is
/// open (a connection refused while the server holds its most is asked again).
fn settled(client: &Client, within: Duration) -> Value {
    let status = || client.get("/api/status").ok().filter(|answer| answer.status == 200).map(|answer| answer.json());
    poll_until(Instant::now() + within, || {
        let status = status()?;
        (status["heavy_jobs"]["live"] == 0 && status["windows"]["open"] == 0).then_some(status)
    })
    .unwrap_or_else(|| panic!("jobs or windows still alive after {within:?}: {:?}", status()))
}

/// `/api/status`'s count of open windows.
fn open_windows(client: &Client) -> u64 {
    client.get_json("/api/status")["windows"]["open"].as_u64().expect("windows.open")
}

#[test]
fn a_window_ends_when_its_client_hangs_up() {
    let jdk = jdk17();
    let fixture = Fixture::new("security-window-hang-up");
    let served = live_target(&fixture, Jvm::new(&jdk, &fixture, "LiveTarget"), "interval=1ms");
    let (client, address) = (served.client.clone(), served.address());
    let mut stream = TcpStream::connect(address).expect("connect");
    write!(stream, "GET /debug/pprof/profile?seconds=300 HTTP/1.1\r\nHost: {address}\r\n\r\n").expect("send");
    poll_until(Instant::now() + SOON, || (open_windows(&client) == 1).then_some(())).expect("the window opens");
    drop(stream);
    let hung_up = Instant::now();
    let ended = poll_until(hung_up + Duration::from_secs(30), || (open_windows(&client) == 0).then_some(()));
    assert!(ended.is_some(), "the window of a client that hung up is still open after 30 s");
    eprintln!("the window ended {:?} after its client hung up", hung_up.elapsed());
    finish(served, &fixture);
}

#[test]
fn clients_that_hang_up_leave_no_job_no_window_and_no_memory_behind() {
    const ROUNDS: usize = 300;
    const ROUTES: [&str; 3] = [
        "/api/jit/advice?limit=1000&min_share=0",
        "/api/jit/directives?min_share=0",
        "/debug/pprof/profile?seconds=30",
    ];
    let jdk = jdk17();
    let fixture = Fixture::new("security-hang-up");
    // A heap of fixed size, touched at start-up: its growth is not what is measured.
    let jvm = Jvm::new(&jdk, &fixture, "LiveTarget").flag("-Xms64m").flag("-Xmx64m").flag("-XX:+AlwaysPreTouch");
    let served = live_target(&fixture, jvm, "interval=1ms");
    let (client, address, pid) = (served.client.clone(), served.address(), served.jvm.pid());
    // Warm-up: each route answered whole, so the allocator's arenas and the
    // server's threads exist before the baseline.
    for path in &ROUTES[..2] {
        assert_eq!(client.get(path).expect("an answer").status, 200, "{path}");
    }
    assert_eq!(client.get("/debug/pprof/profile?seconds=1").expect("a window").status, 200);
    settled(&client, SOON);
    let before = resident_kib(pid);
    let deadline = Instant::now() + Duration::from_secs(120);
    for round in 0..ROUNDS {
        if Instant::now() > deadline {
            eprintln!("stopped after {round} rounds: the time bound");
            break;
        }
        for path in ROUTES {
            ask_and_hang_up(address, path);
        }
    }
    // The windows' clients are gone: each window ends with its request, long
    // before its 30 s.
    let status = settled(&client, Duration::from_secs(20));
    let after = resident_kib(pid);
    eprintln!("resident {before} KiB before, {after} KiB after; heavy jobs {}", status["heavy_jobs"]);
    assert!(
        status["heavy_jobs"]["peak"].as_u64() <= status["heavy_jobs"]["limit"].as_u64(),
        "{}",
        status["heavy_jobs"]
    );
    assert!(after <= before + 10 * 1024, "resident memory grew from {before} KiB to {after} KiB");
    finish(served, &fixture);
}

/// A JDK whose `bin` holds a copy of the real JDK's `java` launcher (the
/// JVM's executable then is in it) beside a fake `jcmd` that leaves
/// `marker` when run; the rest of the JDK linked to the real one.
fn jdk_with_a_fake_jcmd(jdk: &Jdk, dir: &Path, marker: &Path) -> Jdk {
    use std::os::unix::fs::{symlink, PermissionsExt};
    let home = dir.join("planted-jdk");
    std::fs::create_dir_all(home.join("bin")).expect("bin");
    std::fs::copy(jdk.java(), home.join("bin/java")).expect("copy java");
    for entry in ["conf", "lib", "release", "legal"] {
        symlink(jdk.home.join(entry), home.join(entry)).expect("link");
    }
    let executable = |path: &Path, text: String| {
        std::fs::write(path, text).expect("write");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    };
    executable(&home.join("bin/jcmd"), format!("#!/bin/sh\necho planted > '{}'\n", marker.display()));
    Jdk { major: jdk.major, home }
}

/// Runs `pcct advise args...` with `$JAVA_HOME` the real JDK and the
/// control token from a file; (success, output).
fn advise(jdk: &Jdk, dir: &Path, args: &[&str]) -> (bool, String) {
    let token_file = dir.join("control-token");
    std::fs::write(&token_file, format!("{CONTROL}\n")).expect("the token file");
    let output = Command::new(pcct_tool())
        .arg("advise")
        .args(args)
        .arg("--token-file")
        .arg(&token_file)
        .env("JAVA_HOME", &jdk.home)
        .env("PATH", "/usr/bin:/bin")
        .current_dir(dir)
        .output()
        .expect("pcct runs");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.success(), text)
}

#[test]
fn advise_apply_runs_the_jdks_own_jcmd_never_one_beside_the_targets_executable() {
    let jdk = jdk17();
    let fixture = Fixture::new("security-planted-jcmd");
    let marker = fixture.path("planted-jcmd-ran");
    let planted = jdk_with_a_fake_jcmd(&jdk, fixture.dir(), &marker);
    let jvm = Jvm::new(&planted, &fixture, "JitAdvice").arg("600").arg("--until-eof");
    let mut served = start_served(jvm, &fixture, &format!("interval=1ms,token={CONTROL},recompile_every=1s"));
    served.jvm.wait_for_stdout_line("ready", Duration::from_secs(90));
    let pid = served.jvm.pid();
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).expect("the JVM's executable");
    assert!(exe.starts_with(fixture.dir()), "the JVM runs the planted launcher: {}", exe.display());
    // Wait for the advice to name a call to inline (C2 compiled the loop).
    let client = served.client.clone().with_token(CONTROL);
    let advised = poll_until(Instant::now() + Duration::from_secs(90), || {
        let advice = client.get_json("/api/jit/advice?min_share=0.01");
        let inline = advice["not_inlined"].as_array()?.iter().any(|edge| edge["action"] == "inline");
        if !inline {
            std::thread::sleep(Duration::from_millis(200));
        }
        inline.then_some(())
    });
    assert!(advised.is_some(), "no call to inline within 90 s: {}", client.get_json("/api/status")["jit"]);
    let pid_text = pid.to_string();
    let (applied, said) = advise(&jdk, fixture.dir(), &["--apply", &pid_text, "--wait", "90"]);
    assert!(!marker.exists(), "pcct advise ran the jcmd beside the target's java:\n{said}");
    assert!(applied && said.contains("compiler directives to JVM"), "{said}");
    let (removed, said) = advise(&jdk, fixture.dir(), &["--remove", &pid_text]);
    assert!(!marker.exists(), "pcct advise --remove ran the planted jcmd:\n{said}");
    assert!(removed, "{said}");
    let finished = served.jvm.wait_with_deadline(SOON);
    finished.assert_success();
    assert!(!finished.stdout.contains("WRONG"), "{}", finished.report());
    assert_no_hs_err(fixture.dir());
}
