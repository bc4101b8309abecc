//! Native frames (`native=on`) against the truth, on every JDK.
//!
//! - A JNI library of our own (`tests/c/native_split.c`, loaded by
//!   NativeSplit.java) splits its CPU about 70/30 between two C functions
//!   by loop count, and times each call by the thread's CPU clock: pcct
//!   must keep that split within 3 points, with each function under
//!   `NativeSplit.work` and the library's JNI function. (The measured split
//!   is the truth: on a loaded machine it moved to 73/27 in a run beside
//!   the suite.)
//! - The same library built with neither unwind tables nor frame pointers:
//!   its walks cannot go past its frames. The JVM must not crash, and the
//!   samples end truncated (`[native_truncated]` between the native frames
//!   and the Java ones, which the Java walker still finds from the
//!   thread's last Java frame).
//! - Deflating.java compresses in a loop: nearly all the CPU of
//!   `Deflater.deflateBytesBytes` must stand on native frames below it
//!   (zlib's, loaded after the agent started: a walk that reaches a
//!   library unknown yet makes the sampler read the modules again, and the
//!   program pauses after its first deflation so that this happens before
//!   the measured ones; without the pause, 8 % of the CPU of a JDK 21 run
//!   stood under `[native_truncated]` alone, in 11 samples of 17 ms each,
//!   once in 53 runs).
//! - With `threads=all`, the JVM's own threads carry libjvm's frames.
//! - `go tool pprof` reads the native functions, each in its library's
//!   mapping; the flame graph and collapsed stacks name them.
//! - With `kernel=on`, SyscallTruth's 32 MiB reads stand on the kernel's
//!   frames (`vfs_read_[k]`, ...), above the JNI and libc frames of the
//!   read. Where the kernel refuses call chains, the test fails unless
//!   `PCCT_ALLOW_NO_KERNEL_FRAMES` is set (then it checks that the status
//!   says so).

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use pcct_tests::pprof::go_pprof;
use pcct_tests::stress::{compile_c_with, profile_json, sampler_counter};
use pcct_tests::{jdk17, one_jdk, per_jdk, run_pcct, Finished, Fixture, Jdk, Jvm, Profile, QUIET_HTTP};

/// The JNI library's source.
const NATIVE_SPLIT_C: &str = include_str!("../c/native_split.c");
/// NativeSplit's rounds: about 2.5 s of CPU, 2,500 samples at 1 ms.
const ROUNDS: &str = "500";
/// Deflating's buffers: about 2.5 s of CPU.
const DEFLATIONS: &str = "1500";
/// How far the native split may be off, in points.
const TOLERANCE_POINTS: f64 = 3.0;
/// This binary's tests one at a time, from their fixture's compilation to
/// their JVM's exit: the machine is then the JVM's, as the issue's
/// measures ask ("on a quiet machine"). The JNI split with other tests at
/// once on two CPUs moved both ways: seventy() 73.2 % of a measured 70.0 %
/// beside another suite, and 61.9 % with only another test's `javac`
/// beside it, with 14 % of the thread's timer signals refused (its slot
/// busy while the sampler thread, preempted, drained it: their CPU goes
/// to its next sample, wherever that is; `tests/tests/syscall_truth.rs`
/// found the same of reads and runs one JVM at a time too).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Takes this binary's turn ([`ONE_AT_A_TIME`]).
fn alone() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The JNI library compiled into the fixture (`extra`: more compiler flags).
fn library(fixture: &Fixture, name: &str, extra: &[&str]) -> PathBuf {
    let include = jdk17().home.join("include");
    let mut flags = vec![format!("-I{}", include.display()), format!("-I{}", include.join("linux").display())];
    flags.extend(extra.iter().map(|flag| flag.to_string()));
    compile_c_with(fixture.dir(), name, NATIVE_SPLIT_C, true, &flags)
}

/// Runs `main` with `args` and the agent (`native=on` and `options`),
/// writing a JSON profile; the run, the profile and its raw JSON.
fn run(
    jdk: &Jdk,
    fixture: &Fixture,
    main: &str,
    args: &[&str],
    options: &str,
) -> (Finished, Profile, serde_json::Value) {
    let path = fixture.path(&format!("{main}.json"));
    let mut jvm = Jvm::new(jdk, fixture, main);
    for arg in args {
        jvm = jvm.arg(*arg);
    }
    let finished = jvm
        .agent(format!("native=on,interval=1ms,{options}file={},{QUIET_HTTP}", path.display()))
        .run(Duration::from_secs(90));
    finished.assert_success();
    let json = profile_json(&path);
    (finished, Profile::read(&path), json)
}

/// What a failure message says of a run: the JDK, the native status and
/// how the native walks ended, and the profile's top methods.
fn context(jdk: &Jdk, profile: &Profile, json: &serde_json::Value) -> String {
    let endings = &json["sampler"]["native_endings"];
    format!(
        "JDK {}: native status: {}; endings: {endings}\n{}",
        jdk.major,
        json["vm"]["native"],
        profile.top_methods(10)
    )
}

per_jdk! {
    fn a_jni_librarys_split_between_two_c_functions_is_kept(jdk) {
        let _alone = alone();
        let fixture = Fixture::new("native-split");
        let library = library(&fixture, "libnativesplit.so", &[]);
        let (finished, profile, json) = run(jdk, &fixture, "NativeSplit", &[library.to_str().unwrap(), ROUNDS], "");
        let (seventy_ns, thirty_ns) = (finished.stdout_value("seventy_ns"), finished.stdout_value("thirty_ns"));
        let truth = 100.0 * seventy_ns as f64 / (seventy_ns + thirty_ns) as f64;
        let context = format!("truth {truth:.1} %; {}", context(jdk, &profile, &json));
        assert!((truth - 70.0).abs() <= 10.0, "the program's own split is off its design\n{context}");
        let seventy = profile.cum_of("libnativesplit.so", "seventy");
        let thirty = profile.cum_of("libnativesplit.so", "thirty");
        assert!(seventy.samples + thirty.samples >= 1000, "too few samples in the library\n{context}");
        let share = 100.0 * seventy.cpu_ns as f64 / (seventy.cpu_ns + thirty.cpu_ns) as f64;
        assert!((share - truth).abs() <= TOLERANCE_POINTS, "seventy() has {share:.1} % of the library's CPU\n{context}");
        // Each stands under the JNI function, under the Java native method.
        for name in ["seventy", "thirty"] {
            for node in profile.nodes_of("libnativesplit.so", name) {
                let path = profile.path(node);
                let expected = ["NativeSplit.work", "Java_NativeSplit_work", name];
                assert!(path.ends_with(&expected.map(String::from)), "{name} at {path:?}\n{context}");
            }
        }
        assert!(sampler_counter(&json, "frames_native") >= 2 * (seventy.samples + thirty.samples), "{context}");
    }
}

per_jdk! {
    fn a_library_without_unwind_information_ends_truncated_without_a_crash(jdk) {
        let _alone = alone();
        let fixture = Fixture::new("native-bare");
        let bare = ["-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-fomit-frame-pointer"];
        let library = library(&fixture, "libbare.so", &bare);
        let (_, profile, json) = run(jdk, &fixture, "NativeSplit", &[library.to_str().unwrap(), ROUNDS], "");
        let context = context(jdk, &profile, &json);
        // The leaf is named (symbols do not need unwind tables), then the
        // walk stops: the Java frames follow a truncation mark.
        let leaves: Vec<_> = ["seventy", "thirty"].iter().flat_map(|name| profile.nodes_of("libbare.so", name)).collect();
        let in_leaves: u64 = leaves.iter().map(|node| node.cum.samples).sum();
        assert!(in_leaves >= 1000, "too few samples in the library\n{context}");
        for node in &leaves {
            let path = profile.path(node);
            assert!(path.contains(&"NativeSplit.work".to_string()), "no Java frames below {path:?}\n{context}");
        }
        let truncated = profile.cum_of("", "[native_truncated]");
        assert!(truncated.samples * 10 >= in_leaves * 9, "{} truncated of {in_leaves}\n{context}", truncated.samples);
    }
}

per_jdk! {
    fn zlib_stands_under_the_deflaters_native_method(jdk) {
        let _alone = alone();
        let fixture = Fixture::new("native-deflate");
        let (_, profile, json) = run(jdk, &fixture, "Deflating", &[DEFLATIONS], "");
        let context = context(jdk, &profile, &json);
        let outer = profile.outermost_nodes_of("java.util.zip.Deflater", "deflateBytesBytes");
        let total: u64 = outer.iter().map(|node| node.cum.cpu_ns).sum();
        let native: u64 = outer
            .iter()
            .flat_map(|node| profile.nodes().iter().filter(move |child| child.parent == Some(node.id)))
            .filter(|child| profile.method_of(child).kind == pcct::MethodKind::Native)
            .map(|child| child.cum.cpu_ns)
            .sum();
        assert!(total >= 500_000_000, "too little CPU in deflateBytesBytes: {total} ns\n{context}");
        let share = native as f64 / total as f64;
        assert!(share >= 0.95, "{:.1} % of deflateBytesBytes on native frames\n{context}", 100.0 * share);
    }
}

one_jdk! {
    fn the_jvms_own_threads_carry_libjvms_frames(jdk) {
        let _alone = alone();
        let fixture = Fixture::new("native-threads");
        let (_, profile, json) = run(jdk, &fixture, "Deflating", &[DEFLATIONS], "threads=all,");
        let context = context(jdk, &profile, &json);
        assert!(sampler_counter(&json, "walks_native") >= 1, "no native walk of a JVM thread\n{context}");
        // A frame of libjvm.so in a thread that runs no Java code: its path
        // starts at the thread's kind (`[C2 CompilerThread]`, `[GC]`, ...).
        let in_jvm_thread = profile.nodes().iter().any(|node| {
            let method = profile.method_of(node);
            method.class == "libjvm.so" && profile.path(node).first().is_some_and(|root| root.starts_with('['))
        });
        assert!(in_jvm_thread, "no libjvm.so frame under a JVM thread's root\n{context}");
    }
}

one_jdk! {
    fn pprof_puts_each_native_function_in_its_librarys_mapping(jdk) {
        let _alone = alone();
        let fixture = Fixture::new("native-pprof");
        let library = library(&fixture, "libnativesplit.so", &[]);
        let (_, profile, _) = run(jdk, &fixture, "NativeSplit", &[library.to_str().unwrap(), "300"], "");
        let json = fixture.path("NativeSplit.json");
        let output = run_pcct(&["report", json.to_str().unwrap(), "--format", "pprof"], fixture.dir());
        assert!(output.status.success(), "pcct report failed: {}", String::from_utf8_lossy(&output.stderr));
        let path = fixture.path("native.pb.gz");
        std::fs::write(&path, &output.stdout).expect("write the pprof profile");
        let top = go_pprof(&["-top", "-sample_index=cpu"], &path);
        for name in ["seventy", "thirty", "Java_NativeSplit_work"] {
            assert!(top.contains(name), "go tool pprof -top does not show {name}:\n{top}\n{}", profile.top_methods(8));
        }
        let raw = go_pprof(&["-raw"], &path);
        let mappings = raw.split("Mappings").nth(1).unwrap_or_else(|| panic!("no mappings in -raw:\n{raw}"));
        assert!(mappings.contains("libnativesplit.so"), "no mapping of the library:\n{raw}");
    }
}

one_jdk! {
    fn kernel_frames_stand_above_a_reads_native_frames(jdk) {
        let _alone = alone();
        let fixture = Fixture::new("native-kernel");
        let files = fixture.path("files");
        let (_, profile, json) = run(jdk, &fixture, "SyscallTruth", &[files.to_str().unwrap(), "2"], "kernel=on,");
        let context = context(jdk, &profile, &json);
        let kernel = |node: &&pcct::export::json::JsonNode| profile.method_of(node).class == "[kernel]";
        let in_kernel: Vec<_> = profile.nodes().iter().filter(kernel).collect();
        if in_kernel.is_empty() && std::env::var_os("PCCT_ALLOW_NO_KERNEL_FRAMES").is_some() {
            eprintln!("no kernel frames, allowed by PCCT_ALLOW_NO_KERNEL_FRAMES");
            return;
        }
        assert!(sampler_counter(&json, "frames_kernel") > 0, "no kernel frame (set PCCT_ALLOW_NO_KERNEL_FRAMES where the kernel refuses)\n{context}");
        // Every kernel frame is named `<function>_[k]`, stands in a read's
        // or stat's native frames, and has only kernel frames below it.
        for node in &in_kernel {
            let method = profile.method_of(node);
            assert!(method.name.ends_with("_[k]"), "{method:?}\n{context}");
            let path = profile.path(node);
            assert!(path.iter().any(|frame| frame.starts_with("SyscallTruth.")), "{path:?}\n{context}");
            let children = profile.nodes().iter().filter(|child| child.parent == Some(node.id));
            for child in children {
                assert!(kernel(&child), "a user frame under a kernel frame: {:?}\n{context}", profile.path(child));
            }
        }
        // The reads' CPU is mostly the kernel's copy, and kernel frames
        // stand for a good part of it. Not most: a sample stands for all the
        // intervals since the thread's previous one, and its kernel frames
        // are those of the newest, which on a loaded machine is often one
        // that ran out in user code after the read (25 % of readBig's CPU
        // on kernel frames beside the suite and a test loop).
        let read = profile.cum_of("SyscallTruth", "readBig");
        let read_in_kernel: u64 = in_kernel
            .iter()
            .filter(|node| profile.parent(node).is_some_and(|parent| !kernel(&parent)))
            .filter(|node| profile.within(node, "SyscallTruth", "readBig"))
            .map(|node| node.cum.cpu_ns)
            .sum();
        assert!(read_in_kernel * 10 >= read.cpu_ns, "{read_in_kernel} ns of readBig's {read:?} in the kernel\n{context}");
    }
}
