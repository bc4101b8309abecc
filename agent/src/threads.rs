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

/// Registers every running thread the registry does not know yet, except
/// the agent's own and HotSpot's internal ones. Their JNIEnv is unknown:
/// AsyncGetCallTrace finds the thread it runs on by itself and only checks
/// that `env_id` is not null, so the sampler thread's JNIEnv stands in.
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
    fn hotspot_threads_are_recognised() {
        assert!(is_vm_internal("C2 CompilerThre"));
        assert!(is_vm_internal("G1 Conc#0"));
        assert!(is_vm_internal("pcct-sampler"));
        assert!(!is_vm_internal("main"));
        assert!(!is_vm_internal("worker-1"));
    }
}
