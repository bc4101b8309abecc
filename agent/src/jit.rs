//! The JIT feedback loop inside the VM: compiled code into the inline
//! table (`pcct_jit`), and the agent's JIT thread.
//!
//! - **CompiledMethodLoad** (on HotSpot's service thread, which posts it
//!   after the code is installed, or on the JIT thread while it generates
//!   events): the callback has read the inline records into a tree of the
//!   VM's method ids (`cmlr.rs`); here the code's compile level, entry and
//!   compile id are read from the nmethod (pcct's VMStructs layout, fault-
//!   safe reads), the methods the table cannot name yet are named through
//!   JVMTI (while the code, and so their classes, are alive: an id is never
//!   named after its class could be unloaded), and the code enters the
//!   table. The table's lock is held only to look names up and to insert;
//!   JVMTI calls run outside it. A kept code is a `compiled` event
//!   (`pcct_jit::events`).
//! - **CompiledMethodUnload**: the code leaves the table (`unloaded`).
//! - **The JIT thread** (`pcct-jit`, a JVMTI agent thread): enables the
//!   events, asks HotSpot to generate those of code compiled before
//!   (`GenerateEvents`), then waits for work: a look, four times a second,
//!   at what each method enters ([`EntryLooks`]: code made not entrant or
//!   replaced leaves the table), starting a full table over (at most once
//!   a minute), and recompile requests (`POST
//!   /api/jit/recompile`), served by retransforming the named classes, which
//!   makes HotSpot deoptimise their code and the code that inlined their
//!   methods; hot methods are then compiled again, under the compiler
//!   directives in force. The capability to retransform classes is added
//!   at the first request ([`JitSupport`] says why), not at start-up.
//!
//! Nothing here runs on the sampler thread or takes a lock it needs.

#![forbid(unsafe_code)]

use std::collections::HashSet;
use std::time::{Duration, Instant};

use pcct_jit::events::JitEventKind;
use pcct_jit::live::{RecompileReport, Work};
use pcct_jit::table::{CodeFacts, Loaded, MethodFacts, MethodKey};
use pcct_jit::tree::TreeBuilder;
use pcct_jit::InlineFlags;
use pcct_sampler::counters::Counters;
use pcct_sampler::hotspot::{self, code, memory::VmMemory};
use pcct_sampler::timer::now_ns;
use pcct_sampler::Shared;

use crate::cmlr::Malformed;
use crate::console::complain;
use crate::jvmti::{Jni, Jvmti, JvmtiResult};
use crate::jvmti_sys::{jclass, jmethodID, jvmtiCapabilities, jvmtiEvent};
use crate::resolver::{class_name_from_signature, names_of};

/// What the JIT feedback can do on this JVM: the `compiled` and
/// `recompile` options, less what its potential capabilities lack (each
/// lack said once, at start-up).
///
/// Only the events' capability is asked for at start-up. The capability to
/// retransform classes is added by the JIT thread at the first recompile
/// request (JVMTI allows it in the live phase on HotSpot 17 and 25): held
/// from start-up, it would make HotSpot record the evolution dependencies
/// of every compiled method for the whole run, for requests most runs never
/// make. Added late, the first retransform deoptimises all compiled code
/// once (HotSpot then has no dependencies to choose by).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JitSupport {
    /// CompiledMethodLoad/Unload feed the inline table.
    pub events: bool,
    /// Recompile requests are served.
    pub recompile: bool,
    /// Why not, when an option asked for it and this JVM cannot.
    lacking: Option<&'static str>,
}

impl JitSupport {
    /// Decides from the options and `potential`, and adds the events'
    /// capability to `wanted`.
    pub fn ask(compiled: bool, recompile: bool, potential: &jvmtiCapabilities, wanted: &mut jvmtiCapabilities) -> Self {
        let mut support = JitSupport { events: compiled, recompile: compiled && recompile, lacking: None };
        if compiled && potential.can_generate_compiled_method_load_events() == 0 {
            support = JitSupport { events: false, recompile: false, lacking: Some(NO_EVENTS) };
        } else if support.recompile && potential.can_retransform_classes() == 0 {
            support = JitSupport { recompile: false, lacking: Some(NO_RETRANSFORM), ..support };
        }
        if support.events {
            wanted.set_can_generate_compiled_method_load_events(1);
        }
        if let Some(lacking) = support.lacking {
            complain(lacking);
        }
        support
    }

    /// What /api/status says before the JIT thread runs: the inline
    /// records' state and recompile requests'.
    pub fn describe(self) -> (String, String) {
        let state = match (self.events, self.lacking) {
            (true, _) => "starting".to_string(),
            (false, Some(NO_EVENTS)) => format!("off: {NO_EVENTS}"),
            (false, _) => "off (compiled=off)".to_string(),
        };
        let recompile = match (self.recompile, self.lacking) {
            (true, _) => "on (the capability to retransform classes is added at the first request)".to_string(),
            (false, Some(lacking)) => format!("off: {lacking}"),
            (false, None) if !self.events => "off (compiled=off)".to_string(),
            (false, None) => "off (recompile=off)".to_string(),
        };
        (state, recompile)
    }
}

const NO_EVENTS: &str = "this JVM cannot post CompiledMethodLoad events (no can_generate_compiled_method_load_events): \
                         which hot edges are inlined is unknown (\"inlined\": \"unknown\"), recompile requests are refused";
const NO_RETRANSFORM: &str =
    "this JVM cannot retransform classes (no can_retransform_classes): recompile requests are refused";

/// Adds the capability to retransform classes (at the first recompile
/// request). Says once why, when the VM refuses.
fn add_retransform(jvmti: Jvmti, jit: &pcct_jit::Jit) -> Result<(), String> {
    let mut capability = jvmtiCapabilities::default();
    capability.set_can_retransform_classes(1);
    match jvmti.add_capabilities(&capability) {
        Ok(()) => {
            jit.set_setup(|setup| setup.recompile = "on (can retransform classes)".to_string());
            Ok(())
        }
        Err(error) => {
            let why = format!("the VM would not add the capability to retransform classes ({error})");
            complain(&format!("recompile requests are refused: {why}"));
            jit.set_setup(|setup| setup.recompile = format!("off: {why}"));
            Err(why)
        }
    }
}

/// Least time between two restarts of a full table (a refill generates
/// an event for every piece of code: not more often under churn).
const RESTART_EVERY: Duration = Duration::from_secs(60);

/// CompiledMethodLoad of `method`'s code of `size` bytes at `address`, its
/// inline records read into `read` (or why they could not be).
pub fn code_loaded(
    shared: &Shared,
    jvmti: Jvmti,
    method: usize,
    address: usize,
    size: Option<u32>,
    read: Result<TreeBuilder, Malformed>,
) {
    let counters = &shared.counters;
    Counters::add(&counters.methods_compiled, 1);
    let Ok(tree) = read else {
        Counters::add(&counters.inline_records_malformed, 1);
        return;
    };
    // None before the walker is ready (the JIT thread's first events can
    // come before the sampler thread prepared it) and on a VM it cannot read.
    let read = hotspot::vm().and_then(|vm| code::nmethod_facts(&VmMemory, &vm.layout, address));
    if read.is_none() {
        Counters::add(&counters.code_facts_unread, 1);
    }
    let nmethod = read.unwrap_or_default();
    let facts = CodeFacts {
        address: address as u64,
        method: method as u64,
        level: nmethod.level,
        osr_bci: nmethod.osr_bci,
        compile_id: nmethod.compile_id,
        nmethod: (nmethod.nmethod != 0).then_some(nmethod.nmethod as u64),
        code_size: size,
    };
    let ids = tree.methods();
    let mut names = Vec::new();
    // A name may go with code unloaded between the look-up and the load
    // (the table keeps a VM id only while code names it): ask again. After
    // that, a method still without a name gets one no profile has.
    for _ in 0..3 {
        let unnamed = shared.jit.table.lock().unnamed(&ids);
        names = unnamed.into_iter().map(|id| (id, method_facts(jvmti, id))).collect();
        if !shared.jit.table.lock().lacks_names(&ids, &names) {
            break;
        }
    }
    let now = now_ns();
    let (loaded, kept) = {
        let mut table = shared.jit.table.lock();
        let loaded = table.load(facts, tree, names, now);
        let kept = table.code_at(address as u64).map(|(facts, key)| (facts, key.clone()));
        (loaded, kept)
    };
    match loaded {
        Loaded::New | Loaded::Replaced => {
            Counters::add(&counters.inline_records_kept, 1);
            if let Some((facts, key)) = kept {
                shared.jit.events.lock().push(now, JitEventKind::Compiled, &key, &facts);
            }
        }
        Loaded::Older | Loaded::Duplicate => Counters::add(&counters.inline_records_repeated, 1),
        Loaded::Full => {
            Counters::add(&counters.inline_records_refused, 1);
            shared.jit.request_restart();
        }
    }
}

/// What the table keeps of VM method `id` (none when JVMTI cannot name it).
fn method_facts(jvmti: Jvmti, id: u64) -> Option<MethodFacts> {
    let method = id as usize as jmethodID;
    let (class, name, signature) = names_of(jvmti, method).ok()?;
    Some(MethodFacts { key: MethodKey { class, name, signature }, bytecodes: jvmti.bytecode_size(method) })
}

/// CompiledMethodUnload of `method`'s code at `address`.
pub fn code_unloaded(shared: &Shared, method: usize, address: usize) {
    Counters::add(&shared.counters.code_unloaded, 1);
    let now = now_ns();
    let left = shared.jit.table.lock().unload(address as u64, method as u64, now);
    if let Some((facts, key)) = left {
        shared.jit.events.lock().push(now, JitEventKind::Unloaded, &key, &facts);
    }
}

/// Codes whose nmethod one look reads again, at most.
const READ_LATER: usize = 64;

/// Reads again the nmethods of codes whose load could not read them: the
/// JIT thread's first events (GenerateEvents, early compilations) can come
/// before the sampler thread has prepared the walker. Such a code's level
/// stayed unknown for its whole life (a test failed so, once in about 150
/// runs on a loaded machine); yet its compile level says where a hot edge
/// runs, and only code whose nmethod is known is checked for
/// deoptimization.
fn read_later(shared: &Shared, vm: &hotspot::Vm) {
    let unread = shared.jit.table.lock().unread(READ_LATER);
    for address in unread {
        let Some(found) = code::nmethod_facts(&VmMemory, &vm.layout, address as usize) else { continue };
        let (level, osr, id, nmethod) = (found.level, found.osr_bci, found.compile_id, found.nmethod as u64);
        if shared.jit.table.lock().read_later(address, level, osr, id, nmethod) {
            Counters::add(&shared.counters.code_facts_read_later, 1);
        }
    }
}

/// How often the JIT thread compares the table's code with what each
/// method enters (`pcct_jit::events`): an event within a second of the
/// change, since a code must differ at two looks in a row.
const ENTRY_LOOK_EVERY: Duration = Duration::from_millis(250);

/// Codes a look found no longer entered; gone from the table, with their
/// events, when the next look finds the same. Only the JIT thread uses it.
#[derive(Default)]
struct EntryLooks {
    last: Option<Instant>,
    suspects: HashSet<u64>,
}

impl EntryLooks {
    /// Compares every current normal-entry code of the table with what its
    /// method enters (`Method::_code`, read fault-safe), once per
    /// [`ENTRY_LOOK_EVERY`]. A code that differs at two looks in a row
    /// leaves the table, with a `not_entrant` event (the method enters no
    /// code) or a `replaced` one (it enters other code). Two looks, since a
    /// load event is posted after its code is installed and a method's
    /// code can change between the two; a change HotSpot made stays.
    fn look(&mut self, shared: &Shared, now: Instant) {
        if self.last.is_some_and(|at| now.duration_since(at) < ENTRY_LOOK_EVERY) {
            return;
        }
        self.last = Some(now);
        let Some(vm) = hotspot::vm().filter(|vm| vm.layout.method.code.is_some()) else { return };
        read_later(shared, vm);
        let entries = shared.jit.table.lock().entries();
        let mut changed = Vec::new();
        let mut suspects = HashSet::new();
        for facts in entries {
            let Some(entered) = code::entered_code(&VmMemory, &vm.layout, facts.method as usize) else { continue };
            if Some(entered as u64) == facts.nmethod {
                continue;
            }
            if self.suspects.contains(&facts.address) {
                let kind = if entered == 0 { JitEventKind::NotEntrant } else { JitEventKind::Replaced };
                changed.push((facts, kind));
            } else {
                suspects.insert(facts.address);
            }
        }
        self.suspects = suspects;
        if changed.is_empty() {
            return;
        }
        let at = now_ns();
        let left: Vec<_> = {
            let mut table = shared.jit.table.lock();
            let mut leave =
                |(facts, kind): (CodeFacts, JitEventKind)| Some((table.leave(facts.address, facts.method, at)?, kind));
            changed.into_iter().filter_map(&mut leave).collect()
        };
        let mut events = shared.jit.events.lock();
        for ((facts, key), kind) in left {
            events.push(at, kind, &key, &facts);
        }
    }
}

/// HotSpot's inlining thresholds and compilers, from its flag table.
pub fn inline_flags() -> InlineFlags {
    use hotspot::{flags, vmstructs::VmStructs};
    let Some(tables) = VmStructs::of_this_process() else { return InlineFlags::default() };
    let read = |name| flags::get_intx(&tables, name).and_then(|value| u32::try_from(value).ok());
    InlineFlags {
        freq_inline_size: read("FreqInlineSize"),
        max_inline_size: read("MaxInlineSize"),
        max_inline_level: read("MaxInlineLevel"),
        directives_limit: flags::get_int(&tables, "CompilerDirectivesLimit")
            .and_then(|value| u32::try_from(value).ok()),
        inline_small_code: read("InlineSmallCode"),
        type_profile_width: read("TypeProfileWidth"),
        type_profile_major_receiver_percent: read("TypeProfileMajorReceiverPercent"),
        tiered_compilation: flags::get_bool(&tables, "TieredCompilation"),
        tiered_stop_at_level: read("TieredStopAtLevel"),
        use_compiler: flags::get_bool(&tables, "UseCompiler"),
        use_jvmci_compiler: flags::get_bool(&tables, "UseJVMCICompiler"),
    }
}

const EVENTS: [jvmtiEvent; 2] =
    [jvmtiEvent::JVMTI_EVENT_COMPILED_METHOD_LOAD, jvmtiEvent::JVMTI_EVENT_COMPILED_METHOD_UNLOAD];

/// The JIT thread's life: events on, the table filled, then work until
/// `stopping` says so. `recompile` says whether the agent holds the
/// capability to retransform classes.
pub fn serve(shared: &Shared, jvmti: Jvmti, jni: Jni, recompile: bool, stopping: impl Fn() -> bool) {
    let jit = &shared.jit;
    if let Err(error) = EVENTS.iter().try_for_each(|&event| jvmti.enable(event)) {
        jit.set_setup(|setup| setup.state = format!("off: {error}"));
        return;
    }
    let state = fill(shared, jvmti);
    jit.set_setup(|setup| {
        setup.enabled = true;
        setup.state = state;
    });
    jit.set_serving(recompile);
    let mut restarts = Restarts::default();
    let mut looks = EntryLooks::default();
    let mut capability: Option<Result<(), String>> = None;
    while !stopping() {
        match jit.next_work(Duration::from_millis(100)) {
            Work::Restart => restarts.asked(),
            Work::Recompile(job) => {
                let held = capability.get_or_insert_with(|| add_retransform(jvmti, jit)).clone();
                let report = held.and_then(|()| retransform(shared, jvmti, jni, &job.classes));
                job.answer(report);
            }
            Work::Idle => {}
        }
        let now = Instant::now();
        looks.look(shared, now);
        if restarts.due(now) {
            jit.table.lock().restart();
            let state = fill(shared, jvmti);
            jit.set_setup(|setup| setup.state = state);
        }
    }
    jit.set_serving(false);
}

/// When the table starts over: at most once per [`RESTART_EVERY`], and a
/// restart asked for sooner is done when that time is up (not dropped: the
/// table stays incomplete until it starts over).
#[derive(Default)]
struct Restarts {
    last: Option<Instant>,
    pending: bool,
}

impl Restarts {
    fn asked(&mut self) {
        self.pending = true;
    }

    /// Whether to start over now (then it counts as done).
    fn due(&mut self, now: Instant) -> bool {
        if !self.pending || self.last.is_some_and(|at| now.duration_since(at) < RESTART_EVERY) {
            return false;
        }
        self.pending = false;
        self.last = Some(now);
        true
    }
}

/// Asks HotSpot for the load events of all its code (the table then holds
/// everything, unless it refused some). Returns the state /api/status shows.
fn fill(shared: &Shared, jvmti: Jvmti) -> String {
    match jvmti.generate_events(jvmtiEvent::JVMTI_EVENT_COMPILED_METHOD_LOAD) {
        Ok(()) => {
            let mut table = shared.jit.table.lock();
            table.mark_complete();
            match table.complete() {
                true => "on".to_string(),
                false => "on, but the inline table is full: edges in code it could not keep are unknown".to_string(),
            }
        }
        Err(error) => format!("on, but code compiled before is unknown ({error})"),
    }
}

/// Retransforms the loaded classes named `classes` (source form), all in
/// one VM operation.
fn retransform(shared: &Shared, jvmti: Jvmti, jni: Jni, classes: &[String]) -> Result<RecompileReport, String> {
    let started = Instant::now();
    if !jni.push_local_frame(64) {
        jni.clear_exception();
        return Err("no JNI local frame for the class list".to_string());
    }
    let report = retransform_in_frame(jvmti, classes);
    jni.pop_local_frame();
    let mut report = report.map_err(|error| error.to_string())?;
    report.elapsed_ns = started.elapsed().as_nanos() as u64;
    Counters::add(&shared.counters.classes_retransformed, report.retransformed.len() as u64);
    Counters::add(&shared.counters.retransform_failures, (report.not_found.len() + report.failed.len()) as u64);
    Ok(report)
}

fn retransform_in_frame(jvmti: Jvmti, classes: &[String]) -> JvmtiResult<RecompileReport> {
    let wanted: HashSet<&str> = classes.iter().map(String::as_str).collect();
    let mut report = RecompileReport::default();
    let mut found: Vec<(String, jclass)> = Vec::new();
    for class in jvmti.loaded_classes()? {
        let Ok(signature) = jvmti.class_signature(class) else { continue };
        let name = class_name_from_signature(&signature);
        if !wanted.contains(name.as_str()) {
            continue;
        }
        if jvmti.is_modifiable_class(class) {
            found.push((name, class));
        } else {
            report.failed.push((name, "not modifiable (a hidden, array or primitive class)".to_string()));
        }
    }
    let named: HashSet<&str> =
        found.iter().map(|(name, _)| name.as_str()).chain(report.failed.iter().map(|(n, _)| n.as_str())).collect();
    report.not_found = classes.iter().filter(|class| !named.contains(class.as_str())).cloned().collect();
    let refs: Vec<jclass> = found.iter().map(|&(_, class)| class).collect();
    if refs.is_empty() || jvmti.retransform_classes(&refs).is_ok() {
        report.retransformed = found.into_iter().map(|(name, _)| name).collect();
        return Ok(report);
    }
    // One failed: retransform one by one to say which.
    for (name, class) in found {
        match jvmti.retransform_classes(&[class]) {
            Ok(()) => report.retransformed.push(name),
            Err(error) => report.failed.push((name, error.to_string())),
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn potential(events: bool, retransform: bool) -> jvmtiCapabilities {
        let mut potential = jvmtiCapabilities::default();
        potential.set_can_generate_compiled_method_load_events(events.into());
        potential.set_can_retransform_classes(retransform.into());
        potential
    }

    fn ask(compiled: bool, recompile: bool, potential: jvmtiCapabilities) -> (JitSupport, jvmtiCapabilities) {
        let mut wanted = jvmtiCapabilities::default();
        (JitSupport::ask(compiled, recompile, &potential, &mut wanted), wanted)
    }

    #[test]
    fn only_the_events_capability_is_asked_for_at_start_up() {
        let (support, wanted) = ask(true, true, potential(true, true));
        assert_eq!((support.events, support.recompile), (true, true));
        assert_eq!(wanted.can_generate_compiled_method_load_events(), 1);
        assert_eq!(wanted.can_retransform_classes(), 0, "added at the first request");
        assert_eq!(support.describe().0, "starting");
    }

    #[test]
    fn without_the_events_inlining_is_unknown_and_said_so() {
        let (support, wanted) = ask(true, true, potential(false, true));
        assert_eq!((support.events, support.recompile), (false, false));
        assert_eq!(wanted.can_generate_compiled_method_load_events(), 0);
        let (state, recompile) = support.describe();
        assert!(
            state.starts_with("off: this JVM cannot post CompiledMethodLoad") && state.contains("unknown"),
            "{state}"
        );
        assert!(recompile.starts_with("off: this JVM cannot post"), "{recompile}");
    }

    #[test]
    fn without_retransformation_the_events_stay_and_recompiling_is_refused() {
        let (support, wanted) = ask(true, true, potential(true, false));
        assert_eq!((support.events, support.recompile), (true, false));
        assert_eq!(wanted.can_generate_compiled_method_load_events(), 1);
        assert!(support.describe().1.starts_with("off: this JVM cannot retransform classes"));
    }

    #[test]
    fn a_restart_asked_for_too_soon_waits_for_its_time_and_is_not_dropped() {
        let start = Instant::now();
        let mut restarts = Restarts::default();
        assert!(!restarts.due(start), "nothing asked");
        restarts.asked();
        assert!(restarts.due(start), "the first at once");
        assert!(!restarts.due(start), "done");
        restarts.asked();
        assert!(!restarts.due(start + RESTART_EVERY / 2), "too soon");
        assert!(restarts.due(start + RESTART_EVERY), "kept, and done when its time is up");
        assert!(!restarts.due(start + RESTART_EVERY * 3), "once");
    }

    #[test]
    fn options_off_ask_for_nothing() {
        let (support, wanted) = ask(false, true, potential(true, true));
        assert_eq!(support.describe(), ("off (compiled=off)".to_string(), "off (compiled=off)".to_string()));
        assert_eq!(wanted.can_generate_compiled_method_load_events(), 0);
        let (support, _) = ask(true, false, potential(true, true));
        assert_eq!(support.describe().1, "off (recompile=off)");
    }
}
