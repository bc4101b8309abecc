//! The agent's global state and its life: set up at Agent_OnLoad or
//! Agent_OnAttach, started at VMInit (or at once on attach), the sampler
//! thread's preparation and loop, stopped at VMDeath. The JVMTI callbacks
//! (`callbacks.rs`) call the methods here; everything else takes only the
//! parts it needs (`Shared`, `Options`, a [`Registrar`]).

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pcct_sampler::counters::Counters;
use pcct_sampler::events::Throttle;
use pcct_sampler::slots::{current_tid, Registry, ThreadOrigin};
use pcct_sampler::Shared;

use crate::console::{complain, say};
use crate::events::Reported;
use crate::jvmti::{Jni, Jvmti};
use crate::jvmti_sys::*;
use crate::options::Options;
use crate::threads::Registrar;

/// How the agent came into the VM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// `-agentpath` at startup: VMInit starts sampling.
    Startup,
    /// `jcmd <pid> JVMTI.agent_load`: sampling starts at once.
    Attach,
}

impl Arrival {
    /// As /api/status shows it.
    pub fn name(self) -> &'static str {
        match self {
            Arrival::Startup => "startup",
            Arrival::Attach => "attach",
        }
    }
}

pub struct Agent {
    options: Options,
    jvmti: Jvmti,
    arrival: Arrival,
    /// The events reported (what the options asked, less what this JVM cannot).
    reported: Reported,
    /// Thins sampled allocations to `alloc_rate=` (on the allocating threads).
    throttle: Throttle,
    shared: Arc<Shared>,
    registry: Arc<Registry>,
    /// Global references to the sampler's and the JIT thread's
    /// java.lang.Thread (to recognise their ThreadStart).
    sampler_thread: AtomicPtr<c_void>,
    jit_thread: AtomicPtr<c_void>,
    heap_thread: AtomicPtr<c_void>,
    /// What the JIT feedback can do here (the options, less what this JVM cannot).
    jit: crate::jit::JitSupport,
    /// Thread ids of the agent's own threads (never sampled).
    own_tids: Mutex<Vec<i32>>,
    /// Set once VMDeath began: callbacks do nothing after it.
    dying: AtomicBool,
    server: Mutex<Option<pcct_server::ServerHandle>>,
    push: Mutex<Option<pcct_server::push::PushHandle>>,
}

static AGENT: OnceLock<Agent> = OnceLock::new();

/// The agent, once Agent_OnLoad / Agent_OnAttach set it up.
pub fn get() -> Option<&'static Agent> {
    AGENT.get()
}

/// The agent, unless VMDeath began (callbacks then do nothing).
pub fn live() -> Option<&'static Agent> {
    get().filter(|agent| !agent.dying.load(Ordering::Acquire))
}

/// Why the agent could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("{0}")]
    Options(#[from] crate::options::OptionError),
    #[error("pcct is already loaded in this JVM; a second load or attach is refused (send options to the running agent over HTTP instead)")]
    AlreadyLoaded,
    #[error("cannot get a JVMTI environment: {0}")]
    Jvmti(#[from] crate::jvmti::JvmtiError),
    #[error("cannot set up the profile: {0}")]
    Sampler(#[from] pcct_sampler::SamplerError),
    #[error("this JVM does not export AsyncGetCallTrace: pcct cannot sample it")]
    NoAsyncGetCallTrace,
    #[error("{0}")]
    Signal(pcct_sampler::SamplerError),
    #[error("bad option `file={path}`: the profile could not be written there at exit ({reason})")]
    File { path: String, reason: String },
}

/// Agent_OnLoad / Agent_OnAttach: parses options, asks for capabilities
/// and events. Does nothing slow (no class sweep, no thread start).
///
/// # Safety
/// `vm` is the JavaVM the VM passed to the entry point.
pub unsafe fn setup(vm: *mut JavaVM, options: &str, arrival: Arrival) -> Result<&'static Agent, SetupError> {
    if AGENT.get().is_some() {
        return Err(SetupError::AlreadyLoaded);
    }
    let options = Options::parse(options)?;
    if let Some(path) = &options.file {
        // Found now, not at VM death when the run would be lost.
        crate::dump::check_writable(path)
            .map_err(|error| SetupError::File { path: path.display().to_string(), reason: error.to_string() })?;
    }
    if arrival == Arrival::Attach {
        // On attach, what would stop sampling is found now, so jcmd reports
        // the failure (and a later attach may try another signal=). At
        // startup the sampler finds it and the JVM runs on without sampling.
        if pcct_sampler::agct::locate().is_none() {
            return Err(SetupError::NoAsyncGetCallTrace);
        }
        pcct_sampler::signal::check_available(options.signal).map_err(SetupError::Signal)?;
    }
    let debug_info = if options.nonsafepoints {
        enable_debug_non_safepoints(arrival)
    } else {
        "DebugNonSafepoints as the JVM has it (nonsafepoints=off)".to_string()
    };
    // SAFETY: the caller passes the VM's JavaVM.
    let jvmti = unsafe { Jvmti::from_vm(vm) }?;

    let potential = jvmti.potential_capabilities()?;
    let mut capabilities = jvmtiCapabilities::default();
    capabilities.set_can_get_line_numbers(potential.can_get_line_numbers());
    capabilities.set_can_get_source_file_name(potential.can_get_source_file_name());
    let recompile = options.recompile_served();
    let jit = crate::jit::JitSupport::ask(options.compiled, recompile, &potential, &mut capabilities);
    let reported = event_capabilities(&options, &potential, &mut capabilities);
    jvmti.add_capabilities(&capabilities)?;
    if let Some(bytes) = reported.alloc_interval {
        jvmti.set_heap_sampling_interval(bytes.min(i32::MAX as u64) as jint)?;
    }

    let mut config = options.sampler_config();
    if !reported.any() {
        config.event_capacity = 0;
    }
    config.live_capacity = reported.live.unwrap_or(0);
    let shared = Arc::new(Shared::new(config)?);
    let registry = Arc::new(Registry::new(options.depth));
    let agent = Agent {
        options,
        jvmti,
        arrival,
        reported,
        throttle: Throttle::new(reported.alloc_rate),
        shared,
        registry,
        sampler_thread: AtomicPtr::new(std::ptr::null_mut()),
        jit_thread: AtomicPtr::new(std::ptr::null_mut()),
        heap_thread: AtomicPtr::new(std::ptr::null_mut()),
        jit,
        own_tids: Mutex::new(Vec::new()),
        dying: AtomicBool::new(false),
        server: Mutex::new(None),
        push: Mutex::new(None),
    };
    {
        let mut vm = agent.shared.vm.lock();
        vm.debug_info = debug_info;
        vm.events = reported.describe();
        // The sampler says how they started when they are asked for.
        vm.native = if agent.options.native { "starting" } else { "off (native=off)" }.to_string();
    }
    agent.shared.jit.set_setup(|setup| {
        (setup.state, setup.recompile) = jit.describe();
        if refused_for_want_of_a_token(&agent.options) {
            setup.recompile = NO_CONTROL_TOKEN.to_string();
        }
        setup.flags = crate::jit::inline_flags();
    });
    if AGENT.set(agent).is_err() {
        return Err(SetupError::AlreadyLoaded);
    }
    let agent = AGENT.get().expect("just set");
    crate::console::set_quiet(agent.options.quiet);
    crate::callbacks::install(jvmti, reported)?;
    Ok(agent)
}

/// What /api/status says of recompile requests with `recompile=on` and no control token.
const NO_CONTROL_TOKEN: &str = "off: recompiling needs the control token (token= or token_file=), or \
                                recompile=unsafe-without-token to serve anyone who reaches the port";

/// `recompile=on` where the JVM could serve it, but no control token is set.
fn refused_for_want_of_a_token(options: &Options) -> bool {
    options.compiled && options.recompile == crate::options::Recompile::On && !options.recompile_served()
}

/// Asks for the capabilities of the events the options want (none when
/// they are off: an event source switched off costs nothing), and says
/// which this JVM cannot give. Returns what will be reported.
fn event_capabilities(options: &Options, potential: &jvmtiCapabilities, wanted: &mut jvmtiCapabilities) -> Reported {
    let mut reported = Reported {
        alloc_interval: options.alloc_interval,
        alloc_rate: options.alloc_rate,
        locks: options.locks,
        live: options.live,
        gc_events: false,
    };
    if reported.alloc_interval.is_some() {
        if potential.can_generate_sampled_object_alloc_events() != 0 {
            wanted.set_can_generate_sampled_object_alloc_events(1);
        } else {
            complain("this JVM cannot sample allocations (no SampledObjectAlloc before JDK 11): alloc= is off");
            reported.alloc_interval = None;
        }
    }
    if reported.alloc_interval.is_none() {
        reported.live = None;
    }
    if reported.live.is_some() && potential.can_generate_garbage_collection_events() != 0 {
        wanted.set_can_generate_garbage_collection_events(1);
        reported.gc_events = true;
    }
    if reported.locks {
        if potential.can_generate_monitor_events() != 0 {
            wanted.set_can_generate_monitor_events(1);
        } else {
            complain("this JVM cannot report monitor events: locks= is off");
            reported.locks = false;
        }
    }
    reported
}

/// Turns HotSpot's DebugNonSafepoints on (unless the user set it), so that
/// compiled code describes every instruction and samples in inlined methods
/// name them (see `pcct_sampler::hotspot::flags`). At start-up it precedes
/// every compilation; on attach, code compiled before keeps safepoint-only
/// information until it is compiled again. Returns what /api/status says.
fn enable_debug_non_safepoints(arrival: Arrival) -> String {
    use pcct_sampler::hotspot::{flags, vmstructs::VmStructs};
    let change = VmStructs::of_this_process()
        .map(|tables| flags::enable_debug_non_safepoints(&tables))
        .unwrap_or(flags::FlagChange::Missing);
    let mut line = format!("DebugNonSafepoints {}", change.describe());
    if change == flags::FlagChange::Enabled && arrival == Arrival::Attach {
        line.push_str(" at attach: methods compiled before keep safepoint-only debug information until compiled again");
    }
    if !change.is_on() {
        complain(&format!("{line}: samples in inlined code go to the nearest safepoint's method"));
    }
    line
}

impl Agent {
    /// Starts sampling: the sampler agent thread and the HTTP server.
    /// Called at VMInit, or from Agent_OnAttach on the attaching thread.
    pub fn start(&'static self, jni: Jni) {
        self.shared.vm.lock().pid = std::process::id();
        {
            let mut vm = self.shared.vm.lock();
            vm.jvm_name = self.jvmti.system_property("java.vm.name").unwrap_or_default();
            vm.jvm_version = self.jvmti.system_property("java.vm.version").unwrap_or_default();
        }
        let push = self.options.push_config().and_then(|config| {
            let started = pcct_server::push::start(self.shared.clone(), config.clone(), Some(self.options.signal));
            match started {
                Ok(handle) => {
                    let url = pcct_server::push::redacted(&config.url);
                    say(&format!("pushing windows of {:?} to {url}", config.every));
                    let stats = (Arc::clone(&handle.stats), config);
                    *self.push.lock() = Some(handle);
                    Some(stats)
                }
                Err(error) => {
                    complain(&format!("push not started: {error}"));
                    None
                }
            }
        });
        if self.options.http {
            match crate::serve::start(self.shared.clone(), &self.options, self.arrival.name(), push) {
                Ok(handle) => {
                    say(&format!("serving http://{}", handle.address));
                    *self.server.lock() = Some(handle);
                }
                Err(error) => complain(&format!("HTTP server not started: {error}")),
            }
        }
        // The handler goes in now, before the program's main runs: a signal
        // arriving before the sampler thread is ready (its class sweep takes
        // a while on a loaded machine) is counted as stray, not taken by the
        // default action, which ends the process. The sampler thread installs
        // it again (a no-op), and disables sampling if another library took
        // the signal meanwhile.
        let _ = pcct_sampler::signal::install(self.options.signal);
        if self.reported.locks {
            self.watch_lock_parks(jni);
        }
        let sampler = self.start_thread(jni, "pcct-sampler", &self.sampler_thread, crate::callbacks::sampler_main);
        if let Err(reason) = sampler {
            self.disable(format!("could not start the sampler thread: {reason}"));
            return;
        }
        if self.options.all_threads {
            self.start_thread_watch();
        }
        if self.shared.live.is_on() {
            if let Err(reason) = self.start_thread(jni, "pcct-heap", &self.heap_thread, crate::callbacks::heap_main) {
                complain(&format!("the live heap is off: could not start the heap thread: {reason}"));
            }
        }
        if self.jit.events {
            if let Err(reason) = self.start_thread(jni, "pcct-jit", &self.jit_thread, crate::callbacks::jit_main) {
                complain(&format!("inline records are off: could not start the JIT thread: {reason}"));
                self.shared.jit.set_setup(|setup| setup.state = format!("off: no JIT thread ({reason})"));
            }
        }
    }

    /// Starts an agent thread named `name` running `main`, keeping a global
    /// reference to its java.lang.Thread in `slot` (to recognise its ThreadStart).
    fn start_thread(
        &self,
        jni: Jni,
        name: &str,
        slot: &AtomicPtr<c_void>,
        main: unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv, *mut c_void),
    ) -> Result<(), String> {
        let thread = jni.new_thread(name).ok_or_else(|| format!("could not create the {name} java.lang.Thread"))?;
        slot.store(jni.new_global_ref(thread) as *mut c_void, Ordering::Release);
        let started =
            self.jvmti.run_agent_thread(thread, Some(main), std::ptr::null(), JVMTI_THREAD_MAX_PRIORITY as jint);
        jni.delete_local_ref(thread);
        started.map_err(|error| error.to_string())
    }

    /// Turns sampling off for good, saying why once.
    pub fn disable(&self, reason: String) {
        complain(&format!("sampling is off: {reason}"));
        self.shared.disable(reason);
        self.shared.finished.store(true, Ordering::Release);
    }

    /// Registers thread `tid` (ThreadStart, VMInit, discovery).
    pub fn register_thread(&self, tid: i32, env: *mut JNIEnv, origin: ThreadOrigin) {
        if self.own_tids.lock().contains(&tid) {
            return;
        }
        if self.registry.register(tid, env as *mut c_void, origin).is_err() {
            Counters::add(&self.shared.counters.threads_untracked, 1);
        }
    }

    /// ThreadStart of `thread`, on that thread: registered unless it is the
    /// sampler's own.
    pub fn thread_started(&self, jni: Jni, thread: jthread) {
        for own in [&self.sampler_thread, &self.jit_thread, &self.heap_thread] {
            let own = own.load(Ordering::Acquire);
            if !own.is_null() && jni.is_same_object(thread, own as jobject) {
                return;
            }
        }
        let tid = current_tid();
        self.name_thread(jni, thread, tid);
        self.register_thread(tid, jni.raw(), ThreadOrigin::Started);
    }

    /// Keeps the Java name of `thread` (kernel id `tid`) for answers. Runs
    /// on Java threads (ThreadStart, VMInit) and the sampler thread before
    /// it samples (discovery); takes only the names' leaf lock.
    pub fn name_thread(&self, jni: Jni, thread: jthread, tid: i32) {
        if let Some(name) = self.jvmti.thread_name(jni, thread) {
            self.shared.thread_names.lock().started(tid, &name);
        }
    }

    /// ThreadEnd, on the ending thread.
    pub fn thread_ended(&self) {
        let tid = current_tid();
        self.shared.thread_names.lock().ended(tid);
        self.registry.retire(tid);
    }

    /// CompiledMethodLoad (with `compiled=on`): `method`'s code of
    /// `size` bytes at `address`, its inline records read into `read`.
    pub fn code_loaded(
        &self,
        method: usize,
        address: usize,
        size: Option<u32>,
        read: Result<pcct_jit::tree::TreeBuilder, crate::cmlr::Malformed>,
    ) {
        crate::jit::code_loaded(&self.shared, self.jvmti, method, address, size, read);
    }

    /// CompiledMethodUnload (with `compiled=on`).
    pub fn code_unloaded(&self, method: usize, address: usize) {
        crate::jit::code_unloaded(&self.shared, method, address);
    }

    /// The first steps of each of the agent's own threads: the sampling
    /// signal blocked, and the thread known as the agent's, never sampled.
    fn enter_own_thread(&self) {
        pcct_sampler::signal::block_in_current_thread(self.options.signal);
        let own = current_tid();
        self.own_tids.lock().push(own);
        self.registry.retire(own);
    }

    /// `threads=all`: a thread of its own (no JNI) registers the threads
    /// that run no Java code as they appear (`threads::watch`).
    fn start_thread_watch(&self) {
        let spawned = std::thread::Builder::new().name("pcct-threads".into()).spawn(|| {
            let Some(agent) = get() else { return };
            pcct_sampler::signal::block_in_current_thread(agent.options.signal);
            crate::threads::watch(agent, || agent.dying.load(Ordering::Acquire));
        });
        if let Err(error) = spawned {
            complain(&format!(
                "threads=all: no thread watches for new threads ({error}); only Java threads are sampled"
            ));
        }
    }

    /// The JIT agent thread: fills the inline table and serves its work
    /// until VMDeath (`jit.rs`).
    pub fn run_jit(&self, jni: Jni) {
        self.enter_own_thread();
        crate::jit::serve(&self.shared, self.jvmti, jni, self.jit.recompile, || self.dying.load(Ordering::Acquire));
    }

    /// Where the event callbacks hand their events.
    fn sink(&self) -> crate::events::Sink<'_> {
        crate::events::Sink {
            shared: &self.shared,
            throttle: &self.throttle,
            jvmti: self.jvmti,
            depth: self.options.depth,
        }
    }

    /// SampledObjectAlloc of `object`, on the allocating thread.
    pub fn allocation_sampled(&self, jni: Jni, object: jobject, class: jclass, size: jlong) {
        if let Some(interval) = self.reported.alloc_interval {
            self.sink().allocation(jni, object, class, size, interval);
        }
    }

    /// Binds `Unsafe.park` to pcct's hook, so that waits on
    /// java.util.concurrent locks are recorded beside monitor waits
    /// (`parks.rs`); /api/status says whether they are.
    fn watch_lock_parks(&self, jni: Jni) {
        let said = match crate::parks::install(self.jvmti, jni) {
            Ok(()) => "; java.util.concurrent lock parks recorded".to_string(),
            Err(why) => {
                complain(&format!("waits on java.util.concurrent locks are not recorded: {why}"));
                format!("; java.util.concurrent lock parks not recorded ({why})")
            }
        };
        self.shared.vm.lock().events.push_str(&said);
    }

    /// The agent's JVMTI environment.
    pub fn jvmti(&self) -> Jvmti {
        self.jvmti
    }

    /// A park on a java.util.concurrent lock of `class` that waited
    /// `waited` ns, on the parked thread once it woke (`parks.rs`).
    pub fn lock_parked(&self, jni: Jni, class: jclass, waited: u64) {
        self.sink().lock_parked(jni, class, waited);
    }

    /// A park's blocker checked by the park hook (lock or not) in `ns`:
    /// the agent's time on a Java thread outside the event callbacks.
    pub fn park_checked(&self, ns: u64) {
        let counters = &self.shared.counters;
        Counters::add(&counters.parks_checked, 1);
        Counters::add(&counters.park_check_ns, ns);
    }

    /// GarbageCollectionFinish: counted for the heap thread, nothing more.
    pub fn gc_finished(&self) {
        self.shared.live.gc_finished();
    }

    /// The heap agent thread: keeps the live heap's table to the objects
    /// still reachable until VMDeath (`live_heap.rs`).
    pub fn run_heap(&self, jni: Jni) {
        self.enter_own_thread();
        crate::live_heap::serve(&self.shared, jni, self.reported.gc_events, || self.dying.load(Ordering::Acquire));
    }

    /// MonitorContendedEnter, on the thread that starts to wait.
    pub fn monitor_waiting(&self) {
        self.sink().monitor_waiting();
    }

    /// Counts classes whose methods were given jmethodIDs (ClassPrepare,
    /// or the sweep at start).
    pub fn classes_given_method_ids(&self, classes: usize) {
        Counters::add(&self.shared.counters.classes_given_method_ids, classes as u64);
    }

    /// MonitorContendedEntered, on the thread that waited.
    pub fn monitor_entered(&self, jni: Jni, object: jobject) {
        self.sink().monitor_entered(jni, object);
    }

    /// The sampler agent thread: prepares what sampling needs (jmethodIDs
    /// of classes loaded so far, the stack walker, threads already running
    /// when attaching, the signal handler), then runs the sampler loop
    /// until VMDeath.
    pub fn run_sampler(&self, jni: Jni) {
        let signal = self.options.signal;
        self.enter_own_thread();

        let classes = crate::classes::create_all_method_ids(self.jvmti, jni);
        self.classes_given_method_ids(classes);
        if pcct_sampler::agct::locate().is_none() {
            self.disable("this JVM does not export AsyncGetCallTrace".to_string());
            return;
        }
        let (walker, fallback) = crate::walker::prepare(self.options.walker, self.jvmti, jni);
        if fallback {
            complain(&format!("stack walker: {walker}"));
        } else {
            say(&format!("stack walker: {walker}"));
        }
        self.shared.vm.lock().walker = walker;
        if self.arrival == Arrival::Attach {
            self.discover_threads(jni, classes);
        }
        if let Err(error) = pcct_sampler::signal::install(signal) {
            self.disable(error.to_string());
            return;
        }
        let mut resolver = crate::resolver::JvmtiResolver::new(self.jvmti, jni);
        let run = crate::console::catch(|| {
            pcct_sampler::Sampler::new(self.shared.clone(), self.registry.clone(), &mut resolver).run()
        });
        if let Err(panic) = run {
            // Said in /api/status and the exit line, not only on stderr.
            self.disable(format!("the sampler thread failed ({panic}); sampling stopped, the JVM continues"));
        }
    }

    /// On attach: registers the threads already running, where this VM
    /// allows it, and says so.
    fn discover_threads(&self, jni: Jni, classes: usize) {
        let version = self.shared.vm.lock().jvm_version.clone();
        // With pcct's walker each thread found comes with its own JNIEnv
        // (`threads::discover`), which AsyncGetCallTrace needs on older JVMs.
        if pcct_sampler::hotspot::vm().is_some() || crate::threads::agct_finds_its_own_thread(&version) {
            let found = crate::threads::discover(self, self.jvmti, jni);
            say(&format!("attached: {classes} classes prepared, {found} running threads found"));
        } else {
            say(&format!(
                "attached: {classes} classes prepared; threads already running are not sampled on this JVM ({version}: AsyncGetCallTrace needs each thread's own JNIEnv before JDK 17.0.6 and 19), threads started from now on are"
            ));
        }
    }

    /// VMDeath: stop the sampler, write the profile, stop the server. Every
    /// wait is bounded, so a stuck part cannot hang the VM's exit.
    pub fn shut_down(&self) {
        if self.dying.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(sums) = pcct_sampler::cycles::report() {
            eprintln!("pcct cycles {sums}");
        }
        crate::parks::stop();
        // The JIT thread leaves its wait now (the VM waits for threads in
        // native code before it exits).
        self.shared.jit.stop();
        self.shared.control.request_stop();
        let deadline = Instant::now() + Duration::from_secs(3);
        while !self.shared.finished.load(Ordering::Acquire) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        if !self.shared.finished.load(Ordering::Acquire) {
            complain("the sampler did not stop within 3 s; writing what it recorded so far");
        }
        let counters = self.shared.counters.snapshot();
        let format = self.options.dump_format();
        let written = self
            .options
            .file
            .as_ref()
            .map(|path| (path, crate::dump::write(&self.shared, format, self.options.file_report(), path)));
        if let Some(handle) = self.server.lock().take() {
            handle.shut_down(Duration::from_secs(1));
        }
        if let Some(push) = self.push.lock().take() {
            // The last window, sent with what is queued, for at most a second.
            push.stop(Duration::from_secs(1));
        }
        let tree_total = self.shared.profile.lock().tree.total();
        let disabled = self.shared.disabled_reason();
        let written = written.as_ref().map(|(path, result)| (path.as_path(), result));
        say(&crate::summary::exit_line(&counters, tree_total, disabled.as_deref(), written));
    }
}

impl crate::threads::NativeRegistrar for Agent {
    fn is_registered(&self, tid: i32) -> bool {
        self.registry.key_of(tid).is_some()
    }

    fn register_native(&self, tid: i32) {
        self.register_thread(tid, std::ptr::null_mut(), ThreadOrigin::Native);
    }
}

impl Registrar for Agent {
    fn is_known(&self, tid: i32) -> bool {
        self.own_tids.lock().contains(&tid) || self.registry.key_of(tid).is_some()
    }

    fn register(&self, tid: i32, env: *mut JNIEnv) {
        self.register_thread(tid, env, ThreadOrigin::Discovered);
    }

    fn retire(&self, tid: i32) {
        self.shared.thread_names.lock().ended(tid);
        self.registry.retire(tid);
    }

    fn named(&self, tid: i32, name: &str) {
        self.shared.thread_names.lock().started(tid, name);
    }
}
