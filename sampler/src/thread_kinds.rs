//! The kinds of threads that run no Java code, by their kernel names: the
//! root each one's samples stand under (`threads=all`).
//!
//! HotSpot names its own threads (the kernel keeps the first 15 bytes):
//! `GC Thread#0`, `G1 Refine#0`, `C2 CompilerThre`, `VM Thread`, ... A
//! sample of such a thread is recorded as two pseudo-frames: the kind
//! (`[GC]`, `[C2 CompilerThread]`, `[VM Thread]`, `[pcct]` for the agent's
//! own threads, `[JVM]` for HotSpot's other threads, `[native]` for threads
//! of native code), then the thread's family, its name without its number
//! (`[G1 Refine]`), where that says more than the kind.

#![forbid(unsafe_code)]

/// Name prefixes of the garbage collectors' threads (G1, Parallel, ZGC,
/// Shenandoah, Serial).
const GC: &[&str] = &[
    "GC Thread",
    "G1 ",
    "GC ",
    "ZWorker",
    "ZDirector",
    "ZDriver",
    "ZStat",
    "ZUnmapper",
    "ZUncommit",
    "Shenandoah",
    "Parallel GC",
    "ParGC",
];

/// Name prefixes of HotSpot's other threads that run no Java code.
const JVM: &[&str] = &[
    "Sweeper thread",
    "Service Thread",
    "Monitor Deflati",
    "Signal Dispatch",
    "Attach Listener",
    "Notification Th",
    "VM JFR Buffer",
    "JFR ",
    "VM Periodic Tas",
];

/// The root pseudo-frame of thread `name`'s samples.
pub fn kind_of(name: &str) -> &'static str {
    if name.starts_with("pcct-") {
        "[pcct]"
    } else if name.starts_with("C2 CompilerThre") {
        "[C2 CompilerThread]"
    } else if name.starts_with("C1 CompilerThre") {
        "[C1 CompilerThread]"
    } else if name.starts_with("VM Thread") {
        "[VM Thread]"
    } else if GC.iter().any(|prefix| name.starts_with(prefix)) {
        "[GC]"
    } else if JVM.iter().any(|prefix| name.starts_with(prefix)) {
        "[JVM]"
    } else {
        "[native]"
    }
}

/// Whether thread `name` is one of HotSpot's or pcct's own (not a thread of
/// the program's native code).
pub fn is_vm_or_agent(name: &str) -> bool {
    !matches!(kind_of(name), "[native]")
}

/// The second pseudo-frame of thread `name`'s samples: its family, the
/// name without its trailing number (`[G1 Refine]`), or `None` where the
/// kind says it all (compiler threads, the VM thread).
pub fn family_of(name: &str) -> Option<String> {
    let kind = kind_of(name);
    if matches!(kind, "[C2 CompilerThread]" | "[C1 CompilerThread]" | "[VM Thread]") {
        return None;
    }
    let family = name.trim_end_matches(|c: char| c.is_ascii_digit()).trim_end_matches(['#', '-', ' ']);
    let family = if family.is_empty() { name } else { family };
    Some(format!("[{family}]"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hotspots_threads_stand_under_their_kind_and_family() {
        for (name, kind, family) in [
            ("GC Thread#0", "[GC]", Some("[GC Thread]")),
            ("G1 Refine#1", "[GC]", Some("[G1 Refine]")),
            ("G1 Main Marker", "[GC]", Some("[G1 Main Marker]")),
            ("ZWorker#3", "[GC]", Some("[ZWorker]")),
            ("C2 CompilerThre", "[C2 CompilerThread]", None),
            ("C1 CompilerThre", "[C1 CompilerThread]", None),
            ("VM Thread", "[VM Thread]", None),
            ("VM Periodic Tas", "[JVM]", Some("[VM Periodic Tas]")),
            ("Service Thread", "[JVM]", Some("[Service Thread]")),
            ("pcct-http-1", "[pcct]", Some("[pcct-http]")),
            ("pcct-sampler", "[pcct]", Some("[pcct-sampler]")),
            ("zlib-worker-2", "[native]", Some("[zlib-worker]")),
            ("42", "[native]", Some("[42]")),
        ] {
            assert_eq!(kind_of(name), kind, "{name}");
            assert_eq!(family_of(name).as_deref(), family, "{name}");
        }
        assert!(is_vm_or_agent("GC Thread#0") && is_vm_or_agent("pcct-heap") && !is_vm_or_agent("worker-1"));
    }
}
