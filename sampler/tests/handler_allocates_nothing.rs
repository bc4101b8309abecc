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
    match ThreadTimer::open(tid, Duration::from_millis(1), libc::SIGPROF, value, false) {
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

/// Rules 1-3 by reading: every function of every file whose code the
/// handler runs — the handler, pcct's stack walker and what they call
/// (`HANDLER_FILES`) — names no lock, allocation, formatting or panic. The
/// files are parsed (`syn`), so comments and strings neither hide nor fake
/// a use, and the tests (`#[cfg(test)]`) are cut. A function of those files
/// that only the sampler thread or set-up runs is named in the file's list
/// of exceptions, each with its reason; an exception that names no function
/// fails, so the lists cannot go stale.
#[test]
fn the_handler_source_names_no_lock_allocation_or_formatting() {
    let mut offences = Vec::new();
    for (file, source, exceptions) in HANDLER_FILES {
        let tree = syn::parse_file(source).unwrap_or_else(|e| panic!("{file} does not parse: {e}"));
        let mut scan = Scan {
            file,
            exceptions,
            excepted: Vec::new(),
            self_type: None,
            function: String::new(),
            offences: Vec::new(),
        };
        syn::visit::Visit::visit_file(&mut scan, &tree);
        for (name, _) in *exceptions {
            assert!(scan.excepted.contains(name), "{file}: the exception {name} names no function");
        }
        offences.extend(scan.offences);
    }
    assert!(offences.is_empty(), "the handler's code names what rules 1-3 forbid:\n{}", offences.join("\n"));
}

/// (file, source, functions the handler never runs: (name, why)); a
/// method's name is `Type::method`.
type HandlerFile = (&'static str, &'static str, &'static [(&'static str, &'static str)]);

const HANDLER_FILES: &[HandlerFile] = &[
    ("handler.rs", include_str!("../src/handler.rs"), &[]),
    ("agct.rs", include_str!("../src/agct.rs"), &[]),
    ("cpu_timer.rs", include_str!("../src/cpu_timer.rs"), &[]),
    ("cycles.rs", include_str!("../src/cycles.rs"), &[("report", "the benchmark build's report, made at exit")]),
    ("registers.rs", include_str!("../src/registers.rs"), &[]),
    ("doorbell.rs", include_str!("../src/doorbell.rs"), &[]),
    (
        "slots.rs",
        include_str!("../src/slots.rs"),
        &[
            ("Pool::prepare", "allocates the pool's regions before any thread is registered"),
            ("Slot::occupy", "registration (JVMTI's ThreadStart or the sampler's scan), before the slot takes signals"),
            ("Slot::prepare_history", "the sampler thread, before it opens the thread's timer"),
            ("Slot::drain", "the sampler thread's drain"),
            ("Slot::frames_of", "the sampler thread's drain"),
            ("Registry::new", "the agent's start"),
            ("Registry::register", "JVMTI's ThreadStart and the sampler's scan"),
            ("Registry::retire", "JVMTI's ThreadEnd"),
            ("Registry::key_of", "JVMTI callbacks"),
            ("Registry::tids", "the sampler's scan and the HTTP server"),
        ],
    ),
    ("tsc.rs", include_str!("../src/tsc.rs"), &[]),
    (
        "native_frames.rs",
        include_str!("../src/native_frames.rs"),
        &[
            ("NativeFrames::start", "the sampler thread's start, before the unwinder is published"),
            ("NativeFrames::refresh_if_due", "the sampler thread, between its drains"),
            ("NativeFrames::name", "the sampler thread, naming new frames"),
            ("endings", "counters' snapshots, for /metrics and /api/status"),
        ],
    ),
    (
        "kernel_frames.rs",
        include_str!("../src/kernel_frames.rs"),
        &[
            ("forget", "the sampler thread, when it opens a timer"),
            ("KernelSymbols::read", "the sampler thread, naming the first kernel frame"),
            ("KernelSymbols::parse", "the sampler thread, naming the first kernel frame"),
            ("KernelSymbols::name", "the sampler thread, naming new frames"),
            ("KernelSymbols::symbol_at", "the sampler thread, naming new frames"),
        ],
    ),
    (
        "native/src/unwind.rs",
        include_str!("../../native/src/unwind.rs"),
        &[
            ("StackBounds::current_thread", "tests and benchmarks, on their own threads"),
            ("UnwindCache::new", "the pool's set-up"),
            ("CachePool::new", "the sampler thread's start"),
            ("Snapshot::build", "publishing, on the sampler thread"),
            ("Unwinder::new", "the sampler thread's start"),
            ("Unwinder::publish", "the sampler thread, between its drains"),
            ("Unwinder::retired", "tests"),
            ("Unwinder::drop", "never: the handler's unwinder is never freed"),
        ],
    ),
    (
        "hotspot/mod.rs",
        include_str!("../src/hotspot/mod.rs"),
        &[
            ("init", "reads VMStructs at the agent's start"),
            ("OwnWalks::new", "registration, before the slot takes signals"),
        ],
    ),
    ("hotspot/walker.rs", include_str!("../src/hotspot/walker.rs"), &[]),
    ("hotspot/code.rs", include_str!("../src/hotspot/code.rs"), &[]),
    ("hotspot/memory.rs", include_str!("../src/hotspot/memory.rs"), &[]),
    ("hotspot/marks.rs", include_str!("../src/hotspot/marks.rs"), &[]),
    ("hotspot/cache.rs", include_str!("../src/hotspot/cache.rs"), &[]),
    ("hotspot/history.rs", include_str!("../src/hotspot/history.rs"), &[]),
    (
        "hotspot/layout.rs",
        include_str!("../src/hotspot/layout.rs"),
        &[
            ("need", "reading VMStructs at the agent's start"),
            ("Layout::read_runtime", "reading VMStructs at the agent's start"),
            ("blob_layout", "reading VMStructs at the agent's start"),
        ],
    ),
    (
        "hotspot/safe_read.rs",
        include_str!("../src/hotspot/safe_read.rs"),
        &[
            ("install", "installs the fault handler at the agent's start"),
            ("install_once", "installs the fault handler at the agent's start"),
            ("current_action", "installs the fault handler at the agent's start"),
        ],
    ),
];

/// Macros that allocate, format, print or panic.
const FORBIDDEN_MACROS: &[&str] =
    &["format", "println", "eprintln", "print", "eprint", "panic", "vec", "thread_local", "todo", "unimplemented"];
/// Types that allocate or lock.
const FORBIDDEN_TYPES: &[&str] =
    &["Box", "Vec", "String", "Mutex", "RwLock", "Registry", "Arc", "Rc", "HashMap", "BTreeMap"];
/// Methods that lock, allocate or panic.
const FORBIDDEN_METHODS: &[&str] = &[
    "lock",
    "read_lock",
    "write_lock",
    "to_string",
    "to_owned",
    "to_vec",
    "collect",
    "unwrap",
    "expect",
    "into_boxed_slice",
];

/// Walks one file's syntax tree, function by function.
struct Scan<'a> {
    file: &'a str,
    exceptions: &'a [(&'a str, &'a str)],
    excepted: Vec<&'a str>,
    /// The type of the `impl` block being read.
    self_type: Option<String>,
    /// The function being read ("" between functions).
    function: String,
    offences: Vec<String>,
}

impl Scan<'_> {
    fn offence(&mut self, what: &str) {
        let place = if self.function.is_empty() { "(outside a function)".to_string() } else { self.function.clone() };
        self.offences.push(format!("  {}: {place} uses {what}", self.file));
    }

    /// Reads a function unless it is an exception.
    fn function(&mut self, name: &syn::Ident, read: impl FnOnce(&mut Self)) {
        let name = match &self.self_type {
            Some(self_type) => format!("{self_type}::{name}"),
            None => name.to_string(),
        };
        if let Some((excepted, _)) = self.exceptions.iter().find(|(excepted, _)| *excepted == name) {
            self.excepted.push(excepted);
            return;
        }
        let outer = std::mem::replace(&mut self.function, name);
        read(self);
        self.function = outer;
    }
}

fn is_test_only(attributes: &[syn::Attribute]) -> bool {
    attributes.iter().any(|attribute| {
        attribute.path().is_ident("cfg")
            && attribute.parse_args::<syn::Meta>().is_ok_and(|meta| meta.path().is_ident("test"))
    }) || attributes.iter().any(|attribute| attribute.path().is_ident("test"))
}

impl<'ast> syn::visit::Visit<'ast> for Scan<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attributes: &[syn::Attribute] = match item {
            syn::Item::Mod(module) => &module.attrs,
            syn::Item::Fn(function) => &function.attrs,
            syn::Item::Impl(block) => &block.attrs,
            _ => &[],
        };
        if !is_test_only(attributes) {
            syn::visit::visit_item(self, item);
        }
    }

    // An impl block's methods, named after its type (the type itself and
    // the trait are names, not code).
    fn visit_item_impl(&mut self, block: &'ast syn::ItemImpl) {
        let self_type = match &*block.self_ty {
            syn::Type::Path(path) => path.path.segments.last().map(|segment| segment.ident.to_string()),
            _ => None,
        };
        let outer = std::mem::replace(&mut self.self_type, self_type);
        for item in &block.items {
            self.visit_impl_item(item);
        }
        self.self_type = outer;
    }

    fn visit_item_fn(&mut self, function: &'ast syn::ItemFn) {
        self.function(&function.sig.ident, |scan| syn::visit::visit_item_fn(scan, function));
    }

    fn visit_impl_item_fn(&mut self, function: &'ast syn::ImplItemFn) {
        if is_test_only(&function.attrs) {
            return;
        }
        self.function(&function.sig.ident, |scan| syn::visit::visit_impl_item_fn(scan, function));
    }

    fn visit_trait_item_fn(&mut self, function: &'ast syn::TraitItemFn) {
        self.function(&function.sig.ident, |scan| syn::visit::visit_trait_item_fn(scan, function));
    }

    // Only functions run: types, statics and constants declared outside
    // them are data (a struct may hold a Vec the sampler thread fills).
    fn visit_item_struct(&mut self, _: &'ast syn::ItemStruct) {}
    fn visit_item_enum(&mut self, _: &'ast syn::ItemEnum) {}
    fn visit_item_type(&mut self, _: &'ast syn::ItemType) {}
    fn visit_item_use(&mut self, _: &'ast syn::ItemUse) {}
    fn visit_item_static(&mut self, _: &'ast syn::ItemStatic) {}
    fn visit_item_const(&mut self, _: &'ast syn::ItemConst) {}

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        if let Some(last) = mac.path.segments.last() {
            let name = last.ident.to_string();
            if FORBIDDEN_MACROS.contains(&name.as_str()) {
                self.offence(&format!("{name}!"));
            }
        }
        syn::visit::visit_macro(self, mac);
    }

    fn visit_path_segment(&mut self, segment: &'ast syn::PathSegment) {
        let name = segment.ident.to_string();
        if FORBIDDEN_TYPES.contains(&name.as_str()) {
            self.offence(&name);
        }
        syn::visit::visit_path_segment(self, segment);
    }

    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        let name = call.method.to_string();
        if FORBIDDEN_METHODS.contains(&name.as_str()) {
            self.offence(&format!(".{name}()"));
        }
        syn::visit::visit_expr_method_call(self, call);
    }
}
