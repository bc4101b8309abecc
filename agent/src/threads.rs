//! Finding threads in `/proc/self/task`: those that were running before
//! the agent saw them start (late attach), and, with `threads=all`, the
//! threads that run no Java code ([`watch`]).

#![forbid(unsafe_code)]

use crate::jvmti::{Jni, Jvmti};
use crate::jvmti_sys::JNIEnv;

/// What discovery needs of the agent's thread bookkeeping.
pub trait Registrar {
    /// Whether `tid` is one of the agent's own threads or already registered.
    fn is_known(&self, tid: i32) -> bool;
    /// Registers `tid`, whose JNIEnv is `env`, as discovered.
    fn register(&self, tid: i32, env: *mut JNIEnv);
    /// Retires `tid` (it ended).
    fn retire(&self, tid: i32);
    /// Thread `tid` is named `name` (for answers that show threads).
    fn named(&self, _tid: i32, _name: &str) {}
}

fn thread_name(tid: i32) -> String {
    pcct_sampler::thread_names::kernel_name(tid).unwrap_or_default()
}

/// Whether a kernel thread name is one of HotSpot's internal threads (or
/// pcct's), which run no Java code: they are not sampled as Java threads
/// (`pcct_sampler::thread_kinds` knows their names).
pub fn is_vm_internal(name: &str) -> bool {
    pcct_sampler::thread_kinds::is_vm_or_agent(name)
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

/// Registers every running thread `registrar` does not know yet, except
/// HotSpot's internal ones. With pcct's walker (its `Vm` prepared), JVMTI
/// lists the Java threads and each one's `JavaThread` names its kernel id
/// and its own JNIEnv, so the walker serves them as it serves threads seen
/// starting. Without it, `/proc/self/task` lists them and their JNIEnv is
/// unknown: AsyncGetCallTrace finds the thread it runs on by itself and only
/// checks that `env_id` is not null (on the JDKs [`agct_finds_its_own_thread`]
/// accepts; the caller checks), so `jni`, the calling thread's, stands in. A
/// thread that still cannot be walked is dropped after repeated failures.
/// Returns the number registered.
pub fn discover(registrar: &impl Registrar, jvmti: Jvmti, jni: Jni) -> usize {
    let Some(vm) = pcct_sampler::hotspot::vm() else { return discover_tasks(registrar, jni.raw()) };
    let Ok(threads) = jvmti.all_threads() else { return discover_tasks(registrar, jni.raw()) };
    let mut found = 0;
    for thread in threads {
        let identity = jni
            .java_thread_of(thread)
            .and_then(|java_thread| Some((vm.os_thread_id(java_thread)?, vm.env_of(java_thread))));
        if let Some((tid, env)) = identity.filter(|&(tid, _)| is_new(registrar, tid)) {
            if let Some(name) = jvmti.thread_name(jni, thread) {
                registrar.named(tid, &name);
            }
            registrar.register(tid, env as *mut JNIEnv);
            // It may have ended (its ThreadEnd finding nothing to retire)
            // between the listing and the registration.
            if jvmti.is_alive(thread) {
                found += 1;
            } else {
                registrar.retire(tid);
            }
        }
        jni.delete_local_ref(thread);
    }
    found
}

/// Whether `tid` is neither known nor one of HotSpot's own threads.
fn is_new(registrar: &impl Registrar, tid: i32) -> bool {
    !registrar.is_known(tid) && !is_vm_internal(&thread_name(tid))
}

/// [`discover`] without pcct's walker: the kernel's thread list, with
/// `stand_in` as every thread's JNIEnv.
fn discover_tasks(registrar: &impl Registrar, stand_in: *mut JNIEnv) -> usize {
    let mut found = 0;
    for tid in task_ids() {
        if is_new(registrar, tid) {
            // The kernel's name: HotSpot gives it the Java name's first 15 bytes.
            registrar.named(tid, &thread_name(tid));
            registrar.register(tid, stand_in);
            found += 1;
        }
    }
    found
}

/// How often [`watch`] looks for new threads that run no Java code.
pub const WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// What [`watch`] needs of the agent.
pub trait NativeRegistrar {
    /// Whether `tid` is registered (as a Java or a native thread).
    fn is_registered(&self, tid: i32) -> bool;
    /// Registers `tid` as a thread that runs no Java code.
    fn register_native(&self, tid: i32);
}

/// Which of `tids` (with their kernel names) to register as threads that run
/// no Java code now: HotSpot's own threads at once, other threads unknown
/// at two looks in a row (`unknown_before`: a Java thread is registered by
/// its ThreadStart in the meantime, which a native registration would only
/// precede). pcct's own threads are never signalled (they block the
/// sampling signal): the sampler thread records its own CPU.
fn to_register(tids: &[(i32, String)], unknown_before: &[i32]) -> Vec<i32> {
    tids.iter()
        .filter(|(tid, name)| {
            !name.starts_with("pcct-")
                && (pcct_sampler::thread_kinds::is_vm_or_agent(name) || unknown_before.contains(tid))
        })
        .map(|(tid, _)| *tid)
        .collect()
}

/// `threads=all`: every [`WATCH_EVERY`] until `stop`, registers the
/// process's threads that run no Java code (`/proc/self/task`); the
/// sampler gives each its own CPU timer. Threads that end are retired by
/// the sampler, which finds their CPU clock gone.
pub fn watch(registrar: &impl NativeRegistrar, stop: impl Fn() -> bool) {
    let mut unknown_before: Vec<i32> = Vec::new();
    while !stop() {
        let unknown: Vec<(i32, String)> = task_ids()
            .into_iter()
            .filter(|&tid| !registrar.is_registered(tid))
            .map(|tid| (tid, thread_name(tid)))
            .collect();
        let now = to_register(&unknown, &unknown_before);
        for &tid in &now {
            registrar.register_native(tid);
        }
        unknown_before = unknown.iter().map(|(tid, _)| *tid).filter(|tid| !now.contains(tid)).collect();
        std::thread::sleep(WATCH_EVERY);
    }
}

/// The process's thread ids (`/proc/self/task`).
fn task_ids() -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    entries.flatten().filter_map(|entry| entry.file_name().to_str().and_then(|name| name.parse().ok())).collect()
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

    /// Records registrations; knows `known` and what it registered.
    struct Recorder {
        known: Vec<i32>,
        registered: std::cell::RefCell<Vec<(i32, usize)>>,
    }

    impl Registrar for Recorder {
        fn is_known(&self, tid: i32) -> bool {
            self.known.contains(&tid) || self.registered.borrow().iter().any(|&(known, _)| known == tid)
        }
        fn register(&self, tid: i32, env: *mut JNIEnv) {
            self.registered.borrow_mut().push((tid, env as usize));
        }
        fn retire(&self, tid: i32) {
            self.registered.borrow_mut().retain(|&(known, _)| known != tid);
        }
    }

    /// Starts a thread named `name` that waits to be unparked; returns it and its tid.
    fn parked_thread(name: &str) -> (std::thread::JoinHandle<()>, i32) {
        let (ready, tid) = std::sync::mpsc::channel();
        let handle = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                ready.send(pcct_sampler::slots::current_tid()).unwrap();
                std::thread::park();
            })
            .unwrap();
        (handle, tid.recv().unwrap())
    }

    #[test]
    fn vm_threads_are_registered_at_once_others_at_the_second_look_and_pcct_never() {
        let tids = [
            (1, "GC Thread#0".to_string()),
            (2, "C2 CompilerThre".to_string()),
            (3, "worker-7".to_string()),
            (4, "pcct-http".to_string()),
            (5, "native-io".to_string()),
        ];
        assert_eq!(to_register(&tids, &[]), vec![1, 2]);
        assert_eq!(to_register(&tids, &[3, 4]), vec![1, 2, 3]);
    }

    #[test]
    fn the_kernels_list_gives_every_thread_but_known_and_vm_ones() {
        let (worker, worker_tid) = parked_thread("worker-1");
        let (compiler, compiler_tid) = parked_thread("C2 CompilerThre");
        let me = pcct_sampler::slots::current_tid();
        let recorder = Recorder { known: vec![me], registered: Default::default() };
        let found = discover_tasks(&recorder, 0x1000 as *mut JNIEnv);
        let registered: Vec<i32> = recorder.registered.borrow().iter().map(|&(tid, _)| tid).collect();
        assert_eq!(found, registered.len());
        assert!(registered.contains(&worker_tid), "{registered:?}");
        assert!(!registered.contains(&compiler_tid), "a VM thread's name is skipped: {registered:?}");
        assert!(!registered.contains(&me), "a known thread is skipped");
        assert!(recorder.registered.borrow().iter().all(|&(_, env)| env == 0x1000), "the stand-in JNIEnv");
        discover_tasks(&recorder, 0x1000 as *mut JNIEnv);
        let worker_entries = recorder.registered.borrow().iter().filter(|&&(tid, _)| tid == worker_tid).count();
        assert_eq!(worker_entries, 1, "a registered thread is not registered again");
        for handle in [worker, compiler] {
            handle.thread().unpark();
            handle.join().unwrap();
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
