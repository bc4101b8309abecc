//! Finding the threads that were running before the agent saw them start
//! (late attach): they are listed in `/proc/self/task`.

use std::ffi::c_void;

use pcct_sampler::slots::ThreadOrigin;

use crate::agent::Agent;
use crate::jvmti::Jni;

/// Names (as the kernel shows them, at most 15 bytes) of HotSpot's own
/// threads, which run no Java code: they are not sampled.
const VM_THREAD_PREFIXES: &[&str] = &[
    "VM Thread",
    "VM Periodic Tas",
    "GC Thread",
    "G1 ",
    "C1 CompilerThre",
    "C2 CompilerThre",
    "Sweeper thread",
    "Service Thread",
    "Monitor Deflati",
    "Signal Dispatch",
    "Attach Listener",
    "Notification Th",
    "VM JFR Buffer",
    "JFR ",
    "ZWorker",
    "ZDirector",
    "ZDriver",
    "ZStat",
    "ZUnmapper",
    "Shenandoah",
    "Parallel GC",
    "ParGC",
    "pcct-",
];

fn thread_name(tid: i32) -> String {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .map(|name| name.trim().to_string())
        .unwrap_or_default()
}

/// Whether a kernel thread name is one of HotSpot's internal threads.
pub fn is_vm_internal(name: &str) -> bool {
    VM_THREAD_PREFIXES.iter().any(|prefix| name.starts_with(prefix))
}

/// Whether this VM's AsyncGetCallTrace finds the thread it runs on by
/// itself and only checks that `env_id` is not null (JDK-8285794: JDK 19,
/// backported to 17.0.6). Older ones take the thread from `env_id`, so a
/// stand-in JNIEnv would make them walk the wrong thread's stack.
/// `version` is `java.vm.version` (`17.0.15+6-Debian-1deb12u1`, `25+36-LTS`).
pub fn agct_finds_its_own_thread(version: &str) -> bool {
    let numbers: Vec<u32> = version
        .split(|c: char| !c.is_ascii_digit() && c != '.')
        .next()
        .unwrap_or("")
        .split('.')
        .map(|part| part.parse().unwrap_or(0))
        .collect();
    match numbers.as_slice() {
        [major, ..] if *major >= 19 => true,
        [17, _, update, ..] => *update >= 6,
        _ => false,
    }
}

/// Registers every running thread the registry does not know yet, except
/// the agent's own and HotSpot's internal ones. Their JNIEnv is unknown:
/// AsyncGetCallTrace finds the thread it runs on by itself and only checks
/// that `env_id` is not null (on the JDKs [`agct_finds_its_own_thread`]
/// accepts; the caller checks), so the sampler thread's JNIEnv stands in.
/// A thread that still cannot be walked is dropped after repeated failures.
/// Returns the number registered.
pub fn discover(agent: &Agent, stand_in: Jni) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc/self/task") else { return 0 };
    let own = agent.own_tids.lock().clone();
    let mut found = 0;
    for entry in entries.flatten() {
        let Some(tid) = entry.file_name().to_str().and_then(|name| name.parse::<i32>().ok()) else { continue };
        if own.contains(&tid) || agent.registry.key_of(tid).is_some() || is_vm_internal(&thread_name(tid)) {
            continue;
        }
        agent.register_thread(tid, stand_in.0 as *mut c_void as *mut _, ThreadOrigin::Discovered);
        found += 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_jdks_whose_agct_finds_its_own_thread_accept_a_stand_in() {
        for (version, ok) in [
            ("17.0.15+6-Debian-1deb12u1", true),
            ("17.0.6+10", true),
            ("17.0.5+8", false),
            ("17+35", false),
            ("18.0.2+9", false),
            ("19+36", true),
            ("25+36-LTS", true),
            ("25.0.1+8-LTS", true),
            ("11.0.20+8", false),
            ("", false),
        ] {
            assert_eq!(agct_finds_its_own_thread(version), ok, "{version}");
        }
    }

    #[test]
    fn hotspot_threads_are_recognised() {
        assert!(is_vm_internal("C2 CompilerThre"));
        assert!(is_vm_internal("G1 Conc#0"));
        assert!(is_vm_internal("pcct-sampler"));
        assert!(!is_vm_internal("main"));
        assert!(!is_vm_internal("worker-1"));
    }
}
