//! Headless Chromium for the page tests: load a URL, dump the rendered DOM
//! (after the page's scripts ran) or take a screenshot.
//!
//! Every run gets a fresh `--user-data-dir` inside the test's directory
//! and the flags that keep Chromium off the network and quiet; it runs in
//! its own process group, and a run that outlives its deadline is killed
//! with its whole group (renderer and GPU helpers included).
//!
//! `--virtual-time-budget` lets the page's timers run in virtual time;
//! Chromium pauses virtual time while network fetches are pending, so the
//! page's `fetch` calls complete within the budget. A page whose data is
//! not there yet (the profile had no samples when it loaded) is handled by
//! [`Chromium::dump_dom_until`], which re-runs with a doubled budget until
//! the DOM satisfies a predicate or a deadline passes.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::poll::poll_until;

/// Flags of every run (see the module documentation).
pub const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--hide-scrollbars",
    "--mute-audio",
];

/// `$PCCT_CHROMIUM`, else `/usr/bin/chromium` (Debian package `chromium`,
/// installed by `scripts/install-test-deps`).
pub fn chromium_binary() -> PathBuf {
    let path = std::env::var_os("PCCT_CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    assert!(
        path.is_file(),
        "{} is missing: install the Debian package chromium (scripts/install-test-deps does), or set PCCT_CHROMIUM",
        path.display()
    );
    path
}

static RUNS: AtomicU64 = AtomicU64::new(0);

/// What one Chromium run printed.
#[derive(Debug)]
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

/// Headless Chromium working in `dir` (each run in a fresh profile there).
pub struct Chromium {
    binary: PathBuf,
    dir: PathBuf,
    /// Longest a single run may take before it is killed.
    pub run_deadline: Duration,
    /// Window size for screenshots and layout.
    pub window: (u32, u32),
}

impl Chromium {
    pub fn new(dir: &Path) -> Chromium {
        Chromium {
            binary: chromium_binary(),
            dir: dir.to_path_buf(),
            run_deadline: Duration::from_secs(90),
            window: (1280, 1024),
        }
    }

    /// Runs Chromium with the common flags, `extra` and `url`; panics with
    /// its output if it fails or outlives [`Self::run_deadline`].
    pub fn run(&self, extra: &[OsString], url: &str) -> Run {
        let profile = self.dir.join(format!("chromium-profile-{}", RUNS.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir_all(&profile).unwrap_or_else(|e| panic!("cannot create {}: {e}", profile.display()));
        let mut user_data = OsString::from("--user-data-dir=");
        user_data.push(&profile);
        let mut command = Command::new(&self.binary);
        command
            .args(FLAGS)
            .arg(user_data)
            .arg(format!("--window-size={},{}", self.window.0, self.window.1))
            .args(extra)
            .arg(url)
            .current_dir(&self.dir)
            .env("HOME", &profile)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let description = format!("{command:?}");
        let started = Instant::now();
        let mut child = command.spawn().unwrap_or_else(|e| panic!("cannot start {description}: {e}"));
        let stdout = read_all_in_background(child.stdout.take().expect("piped stdout"));
        let stderr = read_all_in_background(child.stderr.take().expect("piped stderr"));
        let status = poll_until(started + self.run_deadline, || child.try_wait().ok().flatten());
        let Some(status) = status else {
            kill_group(&mut child);
            let stderr = stderr.join().unwrap_or_default();
            panic!("Chromium did not finish within {:?}: killed\ncommand: {description}\n{stderr}", self.run_deadline);
        };
        let run = Run {
            stdout: stdout.join().unwrap_or_default(),
            stderr: stderr.join().unwrap_or_default(),
            elapsed: started.elapsed(),
        };
        assert!(status.success(), "Chromium failed ({status})\ncommand: {description}\n--- stderr ---\n{}", run.stderr);
        let _ = std::fs::remove_dir_all(&profile);
        run
    }

    /// The DOM of `url` after `budget` of virtual time (`--dump-dom`).
    pub fn dump_dom(&self, url: &str, budget: Duration) -> String {
        let extra = [OsString::from(format!("--virtual-time-budget={}", budget.as_millis())), "--dump-dom".into()];
        self.run(&extra, url).stdout
    }

    /// Dumps the DOM of `url`, first with `budget`, then with a doubled
    /// budget each time, until `ready` holds for it or `deadline` passes;
    /// returns the last DOM and whether it was ready.
    pub fn dump_dom_until(
        &self,
        url: &str,
        mut budget: Duration,
        deadline: Instant,
        ready: impl Fn(&str) -> bool,
    ) -> (String, bool) {
        loop {
            let dom = self.dump_dom(url, budget);
            if ready(&dom) {
                return (dom, true);
            }
            if Instant::now() >= deadline {
                return (dom, false);
            }
            budget = (budget * 2).min(Duration::from_secs(60));
        }
    }

    /// A PNG screenshot of `url` after `budget` of virtual time, written to
    /// `file` and returned.
    pub fn screenshot(&self, url: &str, file: &Path, budget: Duration) -> Vec<u8> {
        let mut shot = OsString::from("--screenshot=");
        shot.push(file);
        let extra = [OsString::from(format!("--virtual-time-budget={}", budget.as_millis())), shot];
        let run = self.run(&extra, url);
        std::fs::read(file)
            .unwrap_or_else(|e| panic!("no screenshot at {} ({e})\n--- stderr ---\n{}", file.display(), run.stderr))
    }
}

fn read_all_in_background(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Kills the process group this test started Chromium in (its id is the
/// still-running leader's pid, so it is ours), then the leader.
fn kill_group(child: &mut Child) {
    let group = format!("-{}", child.id());
    let _ = Command::new("kill").args(["-KILL", "--", &group]).stderr(Stdio::null()).status();
    let _ = child.kill();
    let _ = child.wait();
}

/// Width and height of a PNG (from its IHDR chunk), if `bytes` is one.
pub fn png_dimensions(bytes: &[u8]) -> Option<(u32, u32)> {
    const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
    if bytes.len() < 24 || &bytes[..8] != SIGNATURE || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let width = u32::from_be_bytes(bytes[16..20].try_into().ok()?);
    let height = u32::from_be_bytes(bytes[20..24].try_into().ok()?);
    Some((width, height))
}
