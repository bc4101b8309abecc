//! The signal handler allocates nothing and takes no lock (rules 1 and 2 of
//! `sampler/src/handler.rs`), proven on a real sampler thread signalling a
//! real registered thread, with a fake AsyncGetCallTrace.
//!
//! A counting `#[global_allocator]` counts every allocation, reallocation
//! and deallocation made *on the watched thread* (recognised by `gettid`,
//! no thread-locals) while a window is open. Inside the window the watched
//! thread itself only spins or blocks in `read(2)`, which allocate nothing;
//! so whatever is counted was done by the handler. Every path is driven
//! through the window and checked to have run:
//! - walked: the thread runs, the handler calls AsyncGetCallTrace;
//! - filtered: the thread is blocked, its register checksum is unchanged;
//! - stale: a pcct signal with the wrong generation, or for another slot;
//! - stray: a foreign `si_value`, and a plain `tgkill` (SI_TKILL).
//!
//! The lock test holds every lock there is — the profile's and the recent
//! samples' mutexes on the test thread, the registry's mutex on a thread
//! stopped *inside* it (in the allocator, called under the lock) — and
//! checks that handlers keep completing on the sampled thread, and that the
//! sampler retires and frees the slot of a thread that vanished meanwhile
//! (the sampler thread never takes the registry's lock).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{serial, spin_until, test_signal, tgkill, wait_for, Harness, Pipe, AGCT_CALLS};
use pcct_sampler::cpu_timer::ThreadTimer;
use pcct_sampler::handler::encode;
use pcct_sampler::signal::send;
use pcct_sampler::slots::{current_tid, ThreadOrigin};

/// The thread whose allocations are counted (0: none).
static WATCHED_TID: AtomicI32 = AtomicI32::new(0);
static WATCHING: AtomicBool = AtomicBool::new(false);
static ALLOCATOR_CALLS: AtomicU64 = AtomicU64::new(0);
/// A thread that is stopped inside its next allocation while HOLD is set.
static HOLD_TID: AtomicI32 = AtomicI32::new(0);
static HOLD: AtomicBool = AtomicBool::new(false);
static HELD_INSIDE: AtomicBool = AtomicBool::new(false);

struct Counting;

fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

impl Counting {
    #[inline]
    fn observe() {
        let watched = WATCHED_TID.load(Ordering::Relaxed);
        let held = HOLD_TID.load(Ordering::Relaxed);
        if watched == 0 && held == 0 {
            return;
        }
        let tid = gettid();
        if tid == watched && WATCHING.load(Ordering::SeqCst) {
            ALLOCATOR_CALLS.fetch_add(1, Ordering::SeqCst);
        }
        if tid == held && HOLD.load(Ordering::SeqCst) {
            HELD_INSIDE.store(true, Ordering::SeqCst);
            while HOLD.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
        }
    }
}

// SAFETY: forwards every call to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Counting::observe();
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Counting::observe();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        Counting::observe();
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        Counting::observe();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const SPIN: u32 = 1;
const BLOCK: u32 = 2;
const DONE: u32 = 3;

#[test]
fn the_handler_allocates_nothing_on_any_path() {
    let _serial = serial();
    let harness = Harness::get();
    let counters = &harness.shared.counters;
    let phase = Arc::new(AtomicU32::new(SPIN));
    let stop_spin = Arc::new(AtomicBool::new(false));
    let pipe = Arc::new(Pipe::new());
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();

    let target = {
        let (registry, phase, stop_spin, pipe) =
            (Arc::clone(&harness.registry), Arc::clone(&phase), Arc::clone(&stop_spin), Arc::clone(&pipe));
        std::thread::spawn(move || {
            let tid = current_tid();
            let key = registry.register(tid, std::ptr::dangling_mut(), ThreadOrigin::Started).expect("register");
            tid_tx.send((tid, key)).expect("send the key");
            // The window: from here to the end of the loop this thread
            // only spins or blocks in read(2).
            WATCHED_TID.store(tid, Ordering::SeqCst);
            WATCHING.store(true, Ordering::SeqCst);
            loop {
                match phase.load(Ordering::SeqCst) {
                    SPIN => {
                        spin_until(&stop_spin);
                    }
                    BLOCK => pipe.block(),
                    _ => break,
                }
            }
            WATCHING.store(false, Ordering::SeqCst);
            registry.retire(tid);
            ALLOCATOR_CALLS.load(Ordering::SeqCst)
        })
    };
    let (tid, key) = tid_rx.recv().expect("the target's key");

    // Walked: the thread runs, the sampler signals it at every tick.
    let (agct_before, recorded_before) =
        (AGCT_CALLS.load(Ordering::SeqCst), counters.samples_recorded.load(Ordering::SeqCst));
    wait_for("walked samples", Duration::from_secs(20), || {
        AGCT_CALLS.load(Ordering::SeqCst) >= agct_before + 100
            && counters.samples_recorded.load(Ordering::SeqCst) >= recorded_before + 50
    });

    // Walked at its own CPU timer's signals (the timer's path through the
    // handler: the descriptor's table entry, no checksum filter). The
    // sampler is paused, so that it asks for nothing: the slot is idle for
    // the timer's signals to claim, and the sampler only drains.
    harness.shared.control.set_running(false);
    let timer_before = counters.timer_samples.load(Ordering::SeqCst);
    // Timers send only signals below SIGRTMIN: the handler takes SIGPROF
    // too in this test binary.
    pcct_sampler::signal::install(libc::SIGPROF).expect("install the handler for SIGPROF");
    let value = encode(key.slot, key.generation);
    match ThreadTimer::open(tid, Duration::from_millis(1), libc::SIGPROF, value) {
        Ok(timer) => {
            wait_for("timer samples", Duration::from_secs(20), || {
                counters.timer_samples.load(Ordering::SeqCst) >= timer_before + 20
            });
            drop(timer);
        }
        Err(error) => eprintln!("no perf events on this machine ({error:?}): the timer's path is not checked"),
    }
    harness.shared.control.set_running(true);

    // Filtered: the thread blocks in read(2); its registers stop changing.
    let filtered_before = counters.samples_filtered.load(Ordering::SeqCst);
    phase.store(BLOCK, Ordering::SeqCst);
    stop_spin.store(true, Ordering::SeqCst);
    wait_for("checksum-filtered samples", Duration::from_secs(20), || {
        counters.samples_filtered.load(Ordering::SeqCst) >= filtered_before + 50
    });

    // Stale and stray signals, to the blocked thread.
    let (stray_before, stale_before) =
        (counters.signals_stray.load(Ordering::SeqCst), counters.signals_stale.load(Ordering::SeqCst));
    let signal = test_signal();
    for _ in 0..5 {
        // Stale: this slot, a generation that is not the thread's.
        send(signal, tid, encode(key.slot, key.generation.wrapping_add(1))).expect("stale signal");
        // Stale: a slot that is not this thread's.
        send(signal, tid, encode(key.slot + 1, 0)).expect("stale signal for another slot");
        // Stray: a value that is not pcct's.
        send(signal, tid, 12345).expect("foreign value");
        // Stray: a plain tgkill (no value at all).
        tgkill(tid, signal);
        std::thread::sleep(Duration::from_millis(2));
    }
    wait_for("stray and stale signals counted", Duration::from_secs(20), || {
        counters.signals_stray.load(Ordering::SeqCst) >= stray_before + 10
            && counters.signals_stale.load(Ordering::SeqCst) >= stale_before + 10
    });
    // The filtered path keeps running after the stale and stray ones.
    let filtered_before = counters.samples_filtered.load(Ordering::SeqCst);
    wait_for("more checksum-filtered samples", Duration::from_secs(20), || {
        counters.samples_filtered.load(Ordering::SeqCst) >= filtered_before + 10
    });

    phase.store(DONE, Ordering::SeqCst);
    pipe.wake();
    let allocations = target.join().expect("the target thread");
    assert_eq!(
        allocations, 0,
        "the signal handler called the allocator {allocations} times (walked, filtered, stale and stray paths)"
    );
}

#[test]
fn handlers_complete_while_every_lock_is_held() {
    let _serial = serial();
    let harness = Harness::get();
    let stop = Arc::new(AtomicBool::new(false));
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let target = {
        let (registry, stop) = (Arc::clone(&harness.registry), Arc::clone(&stop));
        std::thread::spawn(move || {
            let tid = current_tid();
            registry.register(tid, std::ptr::dangling_mut(), ThreadOrigin::Started).expect("register");
            tid_tx.send(tid).expect("send the tid");
            spin_until(&stop);
            registry.retire(tid);
        })
    };
    let _tid = tid_rx.recv().expect("the target's tid");
    let sampled_before = AGCT_CALLS.load(Ordering::SeqCst);
    wait_for("the target is sampled", Duration::from_secs(20), || {
        AGCT_CALLS.load(Ordering::SeqCst) > sampled_before + 10
    });

    // A thread registered as found in /proc/self/task (it gets no
    // ThreadEnd) that will end while the registry's lock is held: the
    // sampler must retire and free its slot without that lock.
    let vanishing_pipe = Arc::new(Pipe::new());
    let (key_tx, key_rx) = std::sync::mpsc::channel();
    let vanishing = {
        let (registry, pipe) = (Arc::clone(&harness.registry), Arc::clone(&vanishing_pipe));
        std::thread::spawn(move || {
            let key = registry.register(current_tid(), std::ptr::dangling_mut(), ThreadOrigin::Discovered);
            key_tx.send(key.expect("register")).expect("send the key");
            pipe.block();
        })
    };
    let vanishing_key = key_rx.recv().expect("the vanishing thread's key");

    // The registry's mutex: a thread stops inside `Registry::tids`, in the
    // allocation it makes while holding the lock.
    let holder = {
        let registry = Arc::clone(&harness.registry);
        std::thread::spawn(move || {
            HOLD_TID.store(gettid(), Ordering::SeqCst);
            HOLD.store(true, Ordering::SeqCst);
            let tids = registry.tids();
            HOLD_TID.store(0, Ordering::SeqCst);
            tids.len()
        })
    };
    wait_for("a thread inside the registry's lock", Duration::from_secs(10), || HELD_INSIDE.load(Ordering::SeqCst));
    // Proof that the registry's lock is held: another user waits for it.
    let probe_done = Arc::new(AtomicBool::new(false));
    let probe = {
        let (registry, done) = (Arc::clone(&harness.registry), Arc::clone(&probe_done));
        std::thread::spawn(move || {
            let count = registry.key_of(gettid()).is_none();
            done.store(true, Ordering::SeqCst);
            count
        })
    };
    std::thread::sleep(Duration::from_millis(100));
    assert!(!probe_done.load(Ordering::SeqCst), "the registry's lock was not held");

    // The discovered thread ends: the sampler finds it gone at a tick and
    // retires it, then frees its slot at the next, all under the held lock.
    let ended_before = harness.registry.ended_total();
    vanishing_pipe.wake();
    vanishing.join().expect("the vanishing thread");
    wait_for("the vanished thread retired while the registry's lock is held", Duration::from_secs(20), || {
        harness.registry.ended_total() > ended_before && harness.registry.origin(vanishing_key.slot).is_none()
    });

    // The profile's and the recent samples' mutexes, on this thread.
    let profile = harness.shared.profile.lock();
    let recent = harness.shared.recent.lock();
    let deferred_before = harness.shared.counters.drains_deferred.load(Ordering::SeqCst);
    let calls = AGCT_CALLS.load(Ordering::SeqCst);
    let handled = || harness.shared.counters.handler_time.snapshot().count;
    let handled_before = handled();
    // Each further handler needs the previous one to have completed (its
    // slot READY, collected, requested again): 50 handlers, of which at
    // least 10 walked. Not 50 walks: on a loaded machine the spinning
    // target gets little CPU and most of its samples are deferred (it was
    // waiting for a CPU) or filtered, which complete without a walk (a run
    // beside a soak at load 35 walked fewer than 50 times in 20 s).
    wait_for("handlers completing while every lock is held", Duration::from_secs(30), || {
        handled() >= handled_before + 50 && AGCT_CALLS.load(Ordering::SeqCst) >= calls + 10
    });
    assert!(
        harness.shared.counters.drains_deferred.load(Ordering::SeqCst) > deferred_before,
        "the sampler should have deferred its drains while the profile was locked"
    );
    assert!(!probe_done.load(Ordering::SeqCst), "the registry's lock was released too early");
    drop(recent);
    drop(profile);
    HOLD.store(false, Ordering::SeqCst);
    assert!(holder.join().expect("holder") >= 1);
    assert!(probe.join().expect("probe"));
    stop.store(true, Ordering::SeqCst);
    target.join().expect("target");
}

/// Rules 1-3 by reading: the handler's module, and the modules of pcct's
/// stack walker it runs, name no lock, allocation or formatting outside
/// their tests and comments.
#[test]
fn the_handler_source_names_no_lock_allocation_or_formatting() {
    let sources = [
        ("handler.rs", include_str!("../src/handler.rs")),
        ("hotspot/walker.rs", include_str!("../src/hotspot/walker.rs")),
        ("hotspot/code.rs", include_str!("../src/hotspot/code.rs")),
        ("hotspot/memory.rs", include_str!("../src/hotspot/memory.rs")),
        ("hotspot/marks.rs", include_str!("../src/hotspot/marks.rs")),
        ("hotspot/cache.rs", include_str!("../src/hotspot/cache.rs")),
        ("hotspot/history.rs", include_str!("../src/hotspot/history.rs")),
    ];
    for (file, source) in sources {
        let code: String = source
            .split("#[cfg(test)]")
            .next()
            .expect("module text")
            .lines()
            .map(|line| line.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        for forbidden in [
            "Mutex",
            ".lock(",
            "RwLock",
            "Box",
            "Vec",
            "String",
            "format!",
            "println!",
            "eprintln!",
            "thread_local!",
            "Registry",
            "to_string",
            "to_owned",
            "collect(",
            "panic!",
            "unwrap(",
            "expect(",
        ] {
            assert!(!code.contains(forbidden), "{file} uses `{forbidden}` outside its tests");
        }
    }
}
