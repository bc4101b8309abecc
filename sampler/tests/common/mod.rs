//! Support for the sampler's signal tests: a real sampler thread (the one
//! the agent runs) with a fake AsyncGetCallTrace and a fake method
//! resolver, on a spare real-time signal, and threads to signal.
//!
//! Every test binary has one process-wide slot table, one handler and one
//! AsyncGetCallTrace: [`Harness::get`] starts one sampler for the whole
//! binary, and [`serial`] keeps its tests from running at the same time.

#![allow(dead_code)]

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use pcct_sampler::agct::{CallFrame, CallTrace};
use pcct_sampler::resolve::{MethodDesc, MethodResolver, ResolveError};
use pcct_sampler::slots::Registry;
use pcct_sampler::{Mode, Sampler, SamplerConfig, Shared, TimerSource};

/// Frames the fake AsyncGetCallTrace reports (fewer than the depth).
pub const FAKE_FRAMES: usize = 12;
/// The registry's and the sampler's depth.
pub const DEPTH: usize = 64;

/// Calls of the fake AsyncGetCallTrace (made in the handler).
pub static AGCT_CALLS: AtomicU64 = AtomicU64::new(0);

/// A stand-in for HotSpot's AsyncGetCallTrace: writes [`FAKE_FRAMES`]
/// frames with made-up method ids, as plain stores (async-signal-safe).
///
/// # Safety
/// Called by the handler with a valid trace whose buffer holds `depth` frames.
pub unsafe extern "C" fn fake_agct(trace: *mut CallTrace, depth: i32, _ucontext: *mut c_void) {
    AGCT_CALLS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: the handler passes its own CallTrace.
    let trace = unsafe { &mut *trace };
    let count = FAKE_FRAMES.min(depth.max(0) as usize);
    for index in 0..count {
        // SAFETY: index < depth, the buffer's capacity.
        unsafe { *trace.frames.add(index) = CallFrame::new(index as i32, (0x1000 + index * 8) as *mut c_void) };
    }
    trace.num_frames = count as i32;
}

/// Names every id `Fake.m<id>`.
pub struct FakeNames;

impl MethodResolver for FakeNames {
    fn resolve(&mut self, method_id: *mut c_void) -> Result<MethodDesc, ResolveError> {
        Ok(MethodDesc {
            class: "Fake".to_string(),
            name: format!("m{:x}", method_id as usize),
            signature: "()V".to_string(),
            lines: Vec::new(),
            file: None,
        })
    }
}

/// The sampling signal of these tests: a real-time signal nobody else uses.
pub fn test_signal() -> i32 {
    libc::SIGRTMIN() + 5
}

/// One sampler for the whole test binary: 1 ms ticks, cpu mode with the
/// CPU-clock prefilter off (every registered thread is signalled at every
/// tick, so the register checksum decides, as in the handler's own path).
pub struct Harness {
    pub shared: Arc<Shared>,
    pub registry: Arc<Registry>,
}

impl Harness {
    pub fn get() -> &'static Harness {
        static HARNESS: OnceLock<Harness> = OnceLock::new();
        HARNESS.get_or_init(|| {
            let config = SamplerConfig {
                interval: Duration::from_millis(1),
                mode: Mode::Cpu,
                depth: DEPTH,
                prefilter: false,
                signal: test_signal(),
                // The sampler's signals; tests open a thread's own CPU
                // timer by hand where they need its signals.
                timer: TimerSource::Sampler,
                ..SamplerConfig::default()
            };
            let shared = Arc::new(Shared::new(config).expect("shared state"));
            let registry = Arc::new(Registry::new(DEPTH));
            pcct_sampler::agct::use_function(fake_agct);
            pcct_sampler::signal::install(test_signal()).expect("install the handler");
            let (for_thread, registry_for_thread) = (Arc::clone(&shared), Arc::clone(&registry));
            std::thread::Builder::new()
                .name("test-sampler".to_string())
                .spawn(move || {
                    let mut names = FakeNames;
                    Sampler::new(for_thread, registry_for_thread, &mut names).run();
                })
                .expect("sampler thread");
            Harness { shared, registry }
        })
    }

    /// A counter's current value.
    pub fn counter(&self, pick: impl Fn(&pcct_sampler::counters::Counters) -> &AtomicU64) -> u64 {
        pick(&self.shared.counters).load(Ordering::Relaxed)
    }
}

/// Serialises the tests of one binary (they share the slot table).
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Polls `check` every millisecond until it holds or `deadline` passes.
pub fn wait_for(what: &str, deadline: Duration, mut check: impl FnMut() -> bool) {
    let until = Instant::now() + deadline;
    while !check() {
        assert!(Instant::now() < until, "timed out after {deadline:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// `tgkill(getpid(), tid, signal)`: a plain signal, `si_code` SI_TKILL, no value.
pub fn tgkill(tid: i32, signal: i32) {
    // SAFETY: tgkill only sends a signal to a thread of this process.
    let rc = unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, signal) };
    assert_eq!(rc, 0, "tgkill {tid}: {}", std::io::Error::last_os_error());
}

/// A pipe whose read end a thread blocks on (a blocked thread: its
/// registers do not change between signals) until a byte is written.
pub struct Pipe {
    read: i32,
    write: i32,
}

impl Pipe {
    pub fn new() -> Pipe {
        let mut fds = [0; 2];
        // SAFETY: pipe writes two descriptors into the array we own.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        Pipe { read: fds[0], write: fds[1] }
    }

    /// Blocks until one byte arrives (restarted after every handled signal:
    /// the handler is installed with SA_RESTART). Allocates nothing.
    pub fn block(&self) {
        let mut byte = 0u8;
        loop {
            // SAFETY: reads one byte into a local.
            let n = unsafe { libc::read(self.read, &mut byte as *mut u8 as *mut c_void, 1) };
            if n == 1 {
                return;
            }
        }
    }

    pub fn wake(&self) {
        let byte = 1u8;
        // SAFETY: writes one byte from a local.
        assert_eq!(unsafe { libc::write(self.write, &byte as *const u8 as *const c_void, 1) }, 1);
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        // SAFETY: closes descriptors this value owns.
        unsafe {
            libc::close(self.read);
            libc::close(self.write);
        }
    }
}

/// A busy loop that allocates nothing; returns when `stop` is set.
pub fn spin_until(stop: &AtomicBool) -> u64 {
    let mut x = 1u64;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..1000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        x = std::hint::black_box(x);
    }
    x
}
