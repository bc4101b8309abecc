//! Support for the stress and fault tests (`tests/tests/stress_*.rs`,
//! `tests/tests/signal_*.rs`): durations that a soak run stretches, a
//! load generator on the HTTP client of [`crate::http`], the
//! agent's counters as the JSON profile records them, the resident memory
//! of a process, signals sent from outside, and small C helpers compiled
//! with the C compiler every Rust toolchain needs (`cc`).
//!
//! # Soak mode
//!
//! Every stress test is short by default (a few seconds of load). With
//! `PCCT_SOAK=<seconds>` each load phase lasts that long instead (never
//! shorter than its default) and deadlines grow with it:
//!
//! ```text
//! PCCT_SOAK=60 cargo test -p pcct-tests --test stress_memory --test stress_threads
//! ```

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::http::{self, Client};
use crate::jvm::{assert_no_hs_err, Finished};
use crate::poll::poll_until;

/// `PCCT_SOAK` in seconds, if set (and a positive number).
pub fn soak_seconds() -> Option<f64> {
    let text = std::env::var("PCCT_SOAK").ok()?;
    let seconds: f64 = text.trim().parse().unwrap_or_else(|_| panic!("PCCT_SOAK={text:?} is not a number of seconds"));
    (seconds > 0.0).then_some(seconds)
}

/// How long a load phase lasts: `short` seconds, or `PCCT_SOAK` when longer.
pub fn load_seconds(short: f64) -> f64 {
    soak_seconds().map_or(short, |soak| soak.max(short))
}

/// A deadline for a JVM that works `seconds`: generous (start-up, a loaded
/// 2-core machine, the agent's dump) but bounded, so a hang fails the test.
pub fn deadline_for(seconds: f64) -> Duration {
    Duration::from_secs_f64(60.0 + seconds * 3.0)
}

/// `seconds` formatted for a Java program's argument.
pub fn arg_seconds(seconds: f64) -> String {
    format!("{seconds:.1}")
}

/// Asserts that the JVM exited with exactly `code` (the program's own
/// status) and left no hs_err file.
pub fn assert_exit_code(finished: &Finished, code: i32) {
    assert_no_hs_err(&finished.dir);
    assert_eq!(finished.status.code(), Some(code), "the JVM's exit status is not the program's\n{}", finished.report());
}

// ---------------------------------------------------------------------------
// HTTP (through the one client of [`crate::http`])

/// Waits for the agent's `addr_file` and reads the address from it.
pub fn wait_for_addr_file(path: &Path, deadline: Duration) -> SocketAddr {
    poll_until(Instant::now() + deadline, || http::read_addr_file(path).map(|(_, address)| address))
        .unwrap_or_else(|| panic!("no address in {} within {deadline:?}", path.display()))
}

/// `/api/status` as JSON, if the server answers.
pub fn status(address: SocketAddr) -> Option<serde_json::Value> {
    let response = Client::new(address).get("/api/status").ok()?;
    (response.status == 200).then(|| response.json())
}

/// A counter of `/api/status` (`counters.<name>`).
pub fn status_counter(status: &serde_json::Value, name: &str) -> u64 {
    status["counters"][name].as_u64().unwrap_or_else(|| panic!("no counters.{name} in /api/status: {status}"))
}

/// The routes a [`Hammer`] queries: names, trees, reports, samples, metrics.
pub const BUSY_ROUTES: &[&str] = &[
    "/api/hot-methods?limit=50",
    "/api/hot-methods?limit=20&by=total",
    "/api/hot-edges?limit=20",
    "/api/hot-nodes?limit=20",
    "/api/hot-methods?limit=20&resource=alloc_bytes",
    "/api/hot-edges?limit=20&resource=alloc_bytes",
    "/api/sites?limit=20&resource=alloc_bytes",
    "/api/sites?limit=20&resource=lock_wait_ns",
    "/api/tree?max_depth=8&max_nodes=500",
    "/api/tree?max_depth=8&max_nodes=500&resource=alloc_objects",
    "/api/samples?limit=50&filtered=include",
    "/api/reports/xtree",
    "/api/reports/xarc",
    "/api/reports/xprof",
    "/api/collapsed",
    "/api/collapsed?resource=alloc_bytes",
    "/flamegraph.svg",
    "/flamegraph.svg?resource=alloc_bytes",
    "/api/status",
    "/metrics",
];

/// What a [`Hammer`] saw.
#[derive(Clone, Debug, Default)]
pub struct HammerStats {
    /// Complete answers, by status code.
    pub by_status: BTreeMap<u16, u64>,
    /// Requests without a complete answer (refused, reset, timed out).
    pub io_errors: u64,
    /// Of those, the ones a later request of the same client got an answer
    /// after: failed connections while the server was up (the others may
    /// have met a JVM that had exited).
    pub failed_while_serving: u64,
    /// Answers that should have been JSON and were not (route, first bytes).
    pub bad_json: Vec<(String, String)>,
    /// The first answer with a 5xx status other than 503 (route, body).
    pub first_server_error: Option<(String, String)>,
    /// Complete answers whose body contained the `watch` text.
    pub watched: u64,
}

impl HammerStats {
    pub fn ok(&self) -> u64 {
        self.by_status.get(&200).copied().unwrap_or(0)
    }

    /// Answers with a 5xx status other than 503: a 503 is the server's
    /// documented back-pressure (two heavy computations at once, a third
    /// waits two seconds for one of them, then is told to retry), which a
    /// hammer of three clients on a loaded machine meets by design.
    pub fn server_errors(&self) -> u64 {
        self.by_status.range(500..).filter(|(&status, _)| status != 503).map(|(_, n)| n).sum()
    }

    fn merge(&mut self, other: HammerStats) {
        for (status, count) in other.by_status {
            *self.by_status.entry(status).or_default() += count;
        }
        self.io_errors += other.io_errors;
        self.failed_while_serving += other.failed_while_serving;
        self.bad_json.extend(other.bad_json);
        self.watched += other.watched;
        if self.first_server_error.is_none() {
            self.first_server_error = other.first_server_error;
        }
    }
}

/// Threads that query the agent's HTTP API in a loop until stopped: each
/// request on a new connection, every route of `routes` in turn.
pub struct Hammer {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<HammerStats>>,
}

impl Hammer {
    /// Starts `threads` querying `routes` at `address`; answers containing
    /// `watch` (if given) are counted in [`HammerStats::watched`].
    pub fn start(address: SocketAddr, routes: &[&str], threads: usize, watch: Option<&str>) -> Hammer {
        let stop = Arc::new(AtomicBool::new(false));
        let routes: Arc<Vec<String>> = Arc::new(routes.iter().map(|r| r.to_string()).collect());
        let watch: Option<Arc<str>> = watch.map(Arc::from);
        let threads = (0..threads)
            .map(|index| {
                let (stop, routes, watch) = (Arc::clone(&stop), Arc::clone(&routes), watch.clone());
                std::thread::spawn(move || {
                    let client = Client::new(address).with_timeout(Duration::from_secs(20));
                    let mut stats = HammerStats::default();
                    let mut next = index;
                    let mut failed_since_answer = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let route = &routes[next % routes.len()];
                        next += 1;
                        match client.get(route) {
                            Ok(response) => {
                                stats.failed_while_serving += std::mem::take(&mut failed_since_answer);
                                *stats.by_status.entry(response.status).or_default() += 1;
                                let json_route = route.starts_with("/api/")
                                    && !route.starts_with("/api/reports")
                                    && !route.starts_with("/api/collapsed");
                                if response.status == 200
                                    && json_route
                                    && serde_json::from_slice::<serde_json::Value>(&response.body).is_err()
                                {
                                    let head: String = response.text().chars().take(200).collect();
                                    stats.bad_json.push((route.clone(), head));
                                }
                                let server_error = response.status >= 500 && response.status != 503;
                                if server_error && stats.first_server_error.is_none() {
                                    stats.first_server_error = Some((route.clone(), response.text()));
                                }
                                if watch.as_ref().is_some_and(|w| response.text().contains(&**w)) {
                                    stats.watched += 1;
                                }
                            }
                            Err(_) => {
                                stats.io_errors += 1;
                                failed_since_answer += 1;
                                // The JVM may be gone: do not spin.
                                std::thread::sleep(Duration::from_millis(20));
                            }
                        }
                    }
                    stats
                })
            })
            .collect();
        Hammer { stop, threads }
    }

    /// Stops the threads and adds up what they saw.
    pub fn stop(self) -> HammerStats {
        self.stop.store(true, Ordering::Relaxed);
        let mut total = HammerStats::default();
        for thread in self.threads {
            total.merge(thread.join().expect("a hammer thread panicked"));
        }
        total
    }
}

// ---------------------------------------------------------------------------
// The JSON profile's extra sections

/// The whole JSON profile as a JSON value (for the sections the `pcct`
/// crate's parser does not model: `sampler` counters, tree `stats`, `vm`).
pub fn profile_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// A sampler counter from the JSON profile's `sampler` section.
pub fn sampler_counter(profile: &serde_json::Value, name: &str) -> u64 {
    profile["sampler"][name].as_u64().unwrap_or_else(|| panic!("no sampler.{name} in the profile"))
}

/// A tree statistic from the JSON profile's `stats` section (purges, ...).
pub fn tree_stat(profile: &serde_json::Value, name: &str) -> u64 {
    profile["stats"][name].as_u64().unwrap_or_else(|| panic!("no stats.{name} in the profile"))
}

/// The counters of the outcomes a sent signal ends in, exactly one each.
pub const SIGNAL_OUTCOMES: [&str; 7] = [
    "samples_recorded",
    "samples_failed",
    "samples_filtered",
    "samples_deferred",
    "samples_dropped_full",
    "samples_lost",
    "samples_retired",
];

/// The sampler's conservation laws, checked on a JSON profile written at
/// VM death (sampling has stopped, nothing is outstanding): every signal
/// sent ended in exactly one outcome, and the profile holds exactly the
/// samples and CPU time the counters say were recorded (when it was never
/// purged).
pub fn assert_counters_conserved(profile: &serde_json::Value) {
    let counter = |name| sampler_counter(profile, name);
    let outcomes = SIGNAL_OUTCOMES;
    let described = describe_counters(profile, &[&["signals_sent"][..], &outcomes[..]].concat());
    let ended: u64 = outcomes.iter().map(|name| counter(name)).sum();
    assert_eq!(counter("signals_sent"), ended, "every signal sent ends in one outcome: {described}");
    if tree_stat(profile, "purges") == 0 {
        let total = &profile["total"];
        let in_profile = counter("samples_recorded")
            + counter("samples_failed")
            + counter("samples_wall_credited")
            + counter("sampler_samples");
        assert_eq!(total["samples"].as_u64(), Some(in_profile), "the profile holds the recorded samples: {described}");
        let cpu = counter("cpu_ns_recorded") + counter("sampler_cpu_ns_recorded");
        assert_eq!(total["cpu_ns"].as_u64(), Some(cpu), "the profile holds the recorded CPU");
    }
}

/// `name=value` pairs of the sampler counters, for messages.
pub fn describe_counters(profile: &serde_json::Value, names: &[&str]) -> String {
    names.iter().map(|name| format!("{name}={} ", profile["sampler"][name])).collect()
}

// ---------------------------------------------------------------------------
// Processes, memory, signals

/// A process's resident memory in KiB: anonymous (heaps, stacks, mappings
/// of no file) and file-backed (libraries' and other files' pages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rss {
    pub anon_kib: u64,
    pub file_kib: u64,
}

/// `RssAnon` and `RssFile` of process `pid`, if it is still there.
pub fn rss(pid: u32) -> Option<Rss> {
    status_kib(pid, &["RssAnon:", "RssFile:"]).map(|values| Rss { anon_kib: values[0], file_kib: values[1] })
}

/// The values of `keys` (in kB) in `/proc/<pid>/status`, if all are there.
fn status_kib(pid: u32, keys: &[&str]) -> Option<Vec<u64>> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let value = |key: &str| -> Option<u64> {
        status.lines().find_map(|line| line.strip_prefix(key)?.trim().strip_suffix("kB")?.trim().parse().ok())
    };
    keys.iter().map(|key| value(key)).collect()
}

/// Samples a process's resident memory every `period` until stopped or
/// the process is gone.
pub struct RssWatch {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<(Duration, Rss)>>,
}

impl RssWatch {
    pub fn start(pid: u32, period: Duration) -> RssWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let mut series = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                match rss(pid) {
                    Some(rss) => series.push((started.elapsed(), rss)),
                    None => break,
                }
                std::thread::sleep(period);
            }
            series
        });
        RssWatch { stop, thread }
    }

    /// (time since start, resident memory) samples.
    pub fn stop(self) -> Vec<(Duration, Rss)> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the RSS watch thread")
    }
}

/// The threads of process `pid`: (tid, kernel name).
pub fn threads_of(pid: u32) -> Vec<(i32, String)> {
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|entry| {
            let tid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let name = std::fs::read_to_string(entry.path().join("comm")).ok()?;
            Some((tid, name.trim().to_string()))
        })
        .collect()
}

/// Sends `signal` (a name such as `TERM` or `PROF`) to process `pid` with `kill(1)`.
pub fn kill(pid: u32, signal: &str) {
    let status = Command::new("kill").arg(format!("-{signal}")).arg(pid.to_string()).status().expect("run kill");
    assert!(status.success(), "kill -{signal} {pid} failed: {status}");
}

/// Compiles the C `source` into `dir/name` with `cc` (a shared library
/// when `shared`), the C compiler the Rust toolchain links with.
pub fn compile_c(dir: &Path, name: &str, source: &str, shared: bool) -> PathBuf {
    compile_c_with(dir, name, source, shared, &[])
}

/// [`compile_c`] with more compiler `flags` (include directories, code
/// generation).
pub fn compile_c_with(dir: &Path, name: &str, source: &str, shared: bool, flags: &[String]) -> PathBuf {
    let source_path = dir.join(format!("{name}.c"));
    std::fs::write(&source_path, source).expect("write the C source");
    let output_path = dir.join(name);
    let mut command = Command::new(std::env::var_os("CC").unwrap_or_else(|| "cc".into()));
    command.args(["-O2", "-Wall"]).args(flags).arg("-o").arg(&output_path).arg(&source_path);
    if shared {
        command.args(["-shared", "-fPIC"]);
    }
    let output = command.output().unwrap_or_else(|e| panic!("cannot run the C compiler (cc): {e}"));
    assert!(
        output.status.success(),
        "cc failed for {name}:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output_path
}

/// A JVMTI agent in C that installs its own SIGPROF handler in
/// `Agent_OnLoad` (as another profiler would), counts the SIGPROFs it
/// receives and prints `takeprof: <n> signals` when the VM unloads it.
/// Listed before pcct on the command line, it holds SIGPROF first.
pub const TAKEPROF_AGENT_C: &str = r#"
#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile sig_atomic_t received;

static void on_prof(int signo, siginfo_t *info, void *context) {
    (void) signo; (void) info; (void) context;
    received++;
}

int Agent_OnLoad(void *vm, char *options, void *reserved) {
    (void) vm; (void) options; (void) reserved;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_prof;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGPROF, &action, NULL) != 0) {
        perror("takeprof: sigaction");
        return 1;
    }
    fprintf(stderr, "takeprof: SIGPROF handler installed\n");
    return 0;
}

void Agent_OnUnload(void *vm) {
    (void) vm;
    fprintf(stderr, "takeprof: %d signals\n", (int) received);
}
"#;

/// `sigstorm <pid> <signal number> <milliseconds>`: for that long, sends
/// the signal with `tgkill` to every thread of `pid` (listed again from
/// `/proc/<pid>/task` at every round, so threads being born and torn down
/// are hit too). Prints `sent=<n> gone=<n> rounds=<n>` and one
/// `hit <count> <kernel thread name>` line per thread name.
pub const SIGSTORM_C: &str = r#"
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_NAMES 512
static char names[MAX_NAMES][32];
static long hits[MAX_NAMES];
static int name_count;

static void count_hit(const char *name) {
    for (int i = 0; i < name_count; i++) {
        if (strcmp(names[i], name) == 0) { hits[i]++; return; }
    }
    if (name_count < MAX_NAMES) {
        snprintf(names[name_count], sizeof names[0], "%s", name);
        hits[name_count++] = 1;
    }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: sigstorm <pid> <signal> <ms>\n"); return 2; }
    int pid = atoi(argv[1]), signo = atoi(argv[2]);
    double end = now() + atoi(argv[3]) / 1000.0;
    long sent = 0, gone = 0, rounds = 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    while (now() < end) {
        DIR *dir = opendir(path);
        if (!dir) break;
        struct dirent *entry;
        while ((entry = readdir(dir)) != NULL) {
            int tid = atoi(entry->d_name);
            if (tid <= 0) continue;
            char comm_path[96], name[32] = "?";
            snprintf(comm_path, sizeof comm_path, "%s/%d/comm", path, tid);
            FILE *comm = fopen(comm_path, "r");
            if (comm) {
                if (fgets(name, sizeof name, comm)) name[strcspn(name, "\n")] = 0;
                fclose(comm);
            }
            if (syscall(SYS_tgkill, pid, tid, signo) == 0) { sent++; count_hit(name); }
            else gone++;
        }
        closedir(dir);
        rounds++;
        usleep(2000);
    }
    printf("sent=%ld gone=%ld rounds=%ld\n", sent, gone, rounds);
    for (int i = 0; i < name_count; i++) printf("hit %ld %s\n", hits[i], names[i]);
    return 0;
}
"#;

/// Collects lines a background activity wants to report (thread-safe).
#[derive(Clone, Default)]
pub struct Notes(Arc<Mutex<Vec<String>>>);

impl Notes {
    pub fn push(&self, line: impl Into<String>) {
        self.0.lock().expect("notes").push(line.into());
    }

    pub fn lines(&self) -> Vec<String> {
        self.0.lock().expect("notes").clone()
    }
}
