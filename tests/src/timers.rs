//! Which timer took a run's samples, and a kernel that refuses perf events.
//!
//! In cpu mode each thread's own CPU timer (a perf event) signals it; where
//! the kernel refuses perf events (`perf_event_paranoid` 3, Debian's and
//! Ubuntu's default, or a seccomp filter), every thread falls back to the
//! sampler thread's signals. A test that checks a profile's truth must also
//! check which of the two took its samples, or it may be testing the other.
//!
//! The kernel's answer decides ([`timer_path`]): a run whose threads were
//! refused their timers fails [`assert_default_timer_path`] unless
//! `PCCT_ALLOW_NO_PERF_EVENTS=1` says that this machine cannot do better.
//! The fallback is tested on every machine by refusing perf events for real:
//! [`NoPerfEvents`] runs the JVM under a seccomp filter that answers
//! `perf_event_open` with `EACCES`, as such a kernel does.

use std::path::{Path, PathBuf};

use crate::stress::{compile_c, describe_counters, sampler_counter};

/// What took a run's samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerPath {
    /// Each thread's own CPU timer.
    ThreadTimers,
    /// The sampler thread's signals (every thread was refused its timer, or
    /// none was asked for).
    SamplerSignals,
}

/// The counters that tell the path, for failure messages.
const PATH_COUNTERS: [&str; 5] =
    ["timers_opened", "timers_refused", "timer_samples", "signals_sent", "samples_recorded"];

/// The path a JSON profile's sampler counters show: the threads' timers
/// where any opened (then nearly every sample must be theirs), else the
/// sampler's signals. A thread refused a timer beside others that got one
/// is one that ended as its timer was opened (or ran out of descriptors):
/// its samples are the sampler's, few, and within the 10 % allowed.
pub fn timer_path(profile: &serde_json::Value, context: &str) -> TimerPath {
    let described = format!("{}\n{context}", describe_counters(profile, &PATH_COUNTERS));
    let opened = sampler_counter(profile, "timers_opened");
    let (timed, recorded) = (sampler_counter(profile, "timer_samples"), sampler_counter(profile, "samples_recorded"));
    if opened == 0 {
        assert_eq!(timed, 0, "samples from timers that never opened: {described}");
        return TimerPath::SamplerSignals;
    }
    // Threads the sampler saw before their timer opened may have one
    // sampler signal each: nearly all samples are the timers'.
    assert!(timed * 10 >= recorded * 9, "timers opened, but their samples are few: {described}");
    TimerPath::ThreadTimers
}

/// Whether `PCCT_ALLOW_NO_PERF_EVENTS` accepts the sampler's signals for a
/// default run on this machine.
pub fn no_perf_events_allowed() -> bool {
    std::env::var("PCCT_ALLOW_NO_PERF_EVENTS").is_ok_and(|value| value == "1")
}

/// A default run (`timer=thread`) must have used the threads' timers: a
/// kernel that refused them fails the test, naming the cause, unless
/// `PCCT_ALLOW_NO_PERF_EVENTS=1`.
pub fn assert_default_timer_path(profile: &serde_json::Value, context: &str) {
    match timer_path(profile, context) {
        TimerPath::ThreadTimers => {}
        TimerPath::SamplerSignals if no_perf_events_allowed() => {
            eprintln!("perf events refused: the sampler's signals took this run's samples (PCCT_ALLOW_NO_PERF_EVENTS)")
        }
        TimerPath::SamplerSignals => panic!(
            "the kernel refused every thread its CPU timer (perf_event_paranoid {}): this run tested the fallback, \
             not the default; set PCCT_ALLOW_NO_PERF_EVENTS=1 to accept that on this machine\n{}\n{context}",
            std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap_or_default().trim(),
            describe_counters(profile, &PATH_COUNTERS)
        ),
    }
}

/// A launcher that makes the kernel refuse `perf_event_open` to the program
/// it runs (and its threads): `no_perf_events <program> [args]`.
pub struct NoPerfEvents {
    path: PathBuf,
}

impl NoPerfEvents {
    /// Compiles the launcher into `dir`.
    pub fn build(dir: &Path) -> NoPerfEvents {
        NoPerfEvents { path: compile_c(dir, "no_perf_events", NO_PERF_EVENTS_C, false) }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The launcher: no new privileges, then a seccomp filter that answers
/// `perf_event_open` with `EACCES` and allows every other call, then exec.
const NO_PERF_EVENTS_C: &str = r#"
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: no_perf_events <program> [args]\n");
        return 2;
    }
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = { (unsigned short) (sizeof filter / sizeof filter[0]), filter };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
        perror("no_perf_events: seccomp");
        return 2;
    }
    execvp(argv[1], argv + 1);
    perror("no_perf_events: exec");
    return 127;
}
"#;
