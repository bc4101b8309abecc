//! Native frames in samples (`native=on`): the frames below a thread's last
//! Java frame (libjvm, libc, JNI libraries) and the whole stacks of the
//! threads that run no Java code, unwound by `pcct-native` in the signal
//! handler and named on the sampler thread.
//!
//! # In the handler
//!
//! [`unwind`] is what the handler calls: it takes a cache from the fixed
//! pool, unwinds from the interrupted pc, sp and fp into a buffer on its own
//! stack ([`MAX_NATIVE_FRAMES`] words), reading through the fault-safe
//! reads and only inside the bounds it is given, and writes each frame into
//! the sample as a [`CallFrame`] whose method id is a code address and whose
//! line is [`NATIVE_BCI`]: the pc for the top frame, a return address less
//! one (the call instruction) for the others. It allocates nothing, takes no
//! lock and makes no system call: `Unwinder::unwind` and `CachePool::take`
//! are the native crate's signal-safe entry points, and the rest is atomics
//! and plain loops. The unwinder and its pool are published once, before
//! any signal could use them, behind an atomic pointer, and never freed
//! (a handler may run until the process exits).
//!
//! A Java thread's native walk starts at the interrupted registers when
//! they are outside the code HotSpot generated, bounded by its
//! `JavaThread`'s stack, and stops where its last Java frame begins (its
//! anchor's sp) or at a return into generated code: the Java walker then
//! walks the rest from the anchor or the registers, as without native
//! frames. A thread without a `JavaThread` (HotSpot's own, `threads=all`)
//! is walked from its registers to the root of its stack, bounded by
//! [`NATIVE_THREAD_STACK`] above its sp.
//!
//! # On the sampler thread
//!
//! [`NativeFrames`] (also for `kernel=on` alone, to name kernel frames
//! through `kernel_frames::KernelSymbols`) owns the process's modules,
//! refreshes them every
//! [`REFRESH_EVERY`] (a library loaded later gets its unwind tables then)
//! and publishes a new unwinder snapshot when they changed; it names the
//! addresses of new frames ([`NativeFrames::name`]), a native function as a
//! method of its library.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pcct_native::{CachePool, Ending, FunctionKey, Modules, Registers, StackBounds, Symbolizer, Unwinder};

use crate::agct::CallFrame;
use crate::hotspot::memory::{Memory, VmMemory};
use crate::kernel_frames::{KernelSymbols, KERNEL_LIBRARY, KERNEL_START};

/// The line of a native frame in a sample: its method id is a code address
/// ([`unwind`]). No Java frame has it (a Java frame's line is a bytecode
/// index, or -3 for a native method, `walker::NATIVE_BCI`, at least).
pub const NATIVE_BCI: i32 = i32::MIN;

/// The method id of the frame a native walk that did not reach the Java
/// frames (or, in a thread without any, its stack's root) leaves below its
/// frames (no code lies in the first page): `[native_truncated]`.
pub const TRUNCATED: usize = 1;

/// The most native frames one sample keeps (its buffer is on the
/// handler's stack: 8 bytes a frame).
pub const MAX_NATIVE_FRAMES: usize = 128;

/// How far above its sp a thread without a `JavaThread` is walked: its
/// stack's bounds are not known in the handler; HotSpot's own threads have
/// stacks of 1-8 MiB, and every read is fault-safe anyway.
pub const NATIVE_THREAD_STACK: u64 = 8 << 20;

// A Java frame's line is at least -3; no code lies in the first page.
const _: () = assert!(NATIVE_BCI < crate::hotspot::walker::NATIVE_BCI && TRUNCATED < 4096);

/// How often the sampler thread looks for libraries loaded or unloaded.
pub const REFRESH_EVERY: Duration = Duration::from_secs(1);

/// The soonest the sampler thread reads the modules again when a handler
/// asks (a walk reached code in no known module); doubled after each such
/// read that found nothing new, up to [`REFRESH_EVERY`], so that code no
/// module will ever hold (garbage, trampolines) costs at most a read a
/// second (reading `/proc/self/maps` of a JVM takes about a millisecond).
pub const REFRESH_ASKED_AFTER: Duration = Duration::from_millis(20);

/// What the handler unwinds with.
struct HandlerNative {
    unwinder: Unwinder,
    pool: CachePool,
}

/// Published once by [`NativeFrames::start`]; never freed.
static HANDLER_NATIVE: AtomicPtr<HandlerNative> = AtomicPtr::new(std::ptr::null_mut());

/// Set by a handler whose walk reached code in no known module; taken by
/// the sampler thread ([`NativeFrames::refresh_if_due`]).
static REFRESH_ASKED: AtomicBool = AtomicBool::new(false);

/// How native walks ended, by [`Ending`] (in its declaration order).
static ENDINGS: [AtomicU64; Ending::ALL.len()] = [const { AtomicU64::new(0) }; Ending::ALL.len()];

/// How many native walks ended each way, with the ending's name.
pub fn endings() -> impl Iterator<Item = (&'static str, u64)> {
    Ending::ALL.iter().zip(&ENDINGS).map(|(ending, count)| (ending.name(), count.load(Ordering::Relaxed)))
}

/// Whether native frames are being unwound (`native=on` and the modules
/// were read). Async-signal-safe.
#[inline]
pub fn enabled() -> bool {
    !HANDLER_NATIVE.load(Ordering::Acquire).is_null()
}

/// Unwinds the native frames from `start` into `out` (leaf first), within
/// `stack`, stopping at `stop_sp` (a Java thread's last Java frame) or at
/// code in no module. The frames written (0 when native frames are off);
/// the walk's ending is counted. A walk that stopped at code in no module
/// that `generated` does not claim (the VM's generated code) asks the
/// sampler to read the modules again ([`NativeFrames::refresh_if_due`]):
/// most often a library loaded since (the JDK loads `libzip.so` at the
/// first `Deflater`). Async-signal-safe (module doc).
#[inline]
pub fn unwind(
    start: Registers,
    stack: StackBounds,
    stop_sp: Option<u64>,
    generated: impl Fn(u64) -> bool,
    out: &mut [CallFrame],
) -> usize {
    let native = HANDLER_NATIVE.load(Ordering::Acquire);
    // SAFETY: null or a leaked Box published once and never freed.
    let Some(native) = (unsafe { native.as_ref() }) else { return 0 };
    let Some(mut cache) = native.pool.take() else {
        // Every cache in use: the frames are missing, and the sample says so.
        count(Ending::NoCache);
        return out.first_mut().map_or(0, |slot| {
            *slot = native_frame(TRUNCATED as u64, true);
            1
        });
    };
    let mut addresses = [0u64; MAX_NATIVE_FRAMES];
    let limit = out.len().min(MAX_NATIVE_FRAMES);
    let Some(buffer) = addresses.get_mut(..limit) else { return 0 };
    let read = |address: u64| VmMemory.u64(address as usize);
    let walk = native.unwinder.unwind(start, stack, stop_sp, read, &mut cache, buffer);
    count(walk.ending);
    let unknown = walk.ending == Ending::UnknownCode && !generated(walk.resume.pc);
    if unknown {
        REFRESH_ASKED.store(true, Ordering::Relaxed);
    }
    // Whole: it reached the Java frames (the last one's sp, or a return
    // into generated code), or, in a thread with no Java frames, the root.
    let whole = match walk.ending {
        Ending::JavaFrame => true,
        Ending::UnknownCode => !unknown,
        Ending::Root => stop_sp.is_none(),
        _ => false,
    };
    let mut written = 0;
    for (slot, &address) in out.iter_mut().zip(buffer.iter().take(walk.frames)) {
        *slot = native_frame(address, written == 0);
        written += 1;
    }
    // Frames may be missing below: say so, where the caller's frames follow.
    if !whole {
        if let Some(slot) = out.get_mut(written) {
            *slot = native_frame(TRUNCATED as u64, true);
            written += 1;
        }
    }
    written
}

/// A native (or kernel) frame of a sample for the code at `address`: the
/// top frame's pc is where the thread is, a caller's return address is the
/// instruction after its call, so it is looked up one byte before.
/// Async-signal-safe.
#[inline]
pub(crate) fn native_frame(address: u64, top: bool) -> CallFrame {
    let lookup = if top { address } else { address.wrapping_sub(1) };
    CallFrame::new(NATIVE_BCI, lookup as usize as *mut std::ffi::c_void)
}

#[inline]
fn count(ending: Ending) {
    if let Some(counter) = ENDINGS.get(ending as usize) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// The stack a thread without a `JavaThread` is walked within, from its sp.
#[inline]
pub fn native_thread_stack(sp: u64) -> StackBounds {
    StackBounds { low: sp, high: sp.saturating_add(NATIVE_THREAD_STACK) }
}

/// A native frame's name: a function of a library (the function is the
/// library's file name where it has no symbol for the address), or the
/// mark of a walk that ended truncated ([`TRUNCATED`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NativeName {
    Function { library: Arc<str>, function: Arc<str> },
    Truncated,
}

/// What a native frame's name is kept by: the function its address lies
/// in (many addresses, one name), found without making the name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameKey {
    Function(FunctionKey),
    /// A kernel function by its start (`None`: no symbol known).
    Kernel(Option<usize>),
    Truncated,
}

impl NativeName {
    /// The name of a walk's truncation, a pseudo-frame.
    pub const TRUNCATED: &'static str = "[native_truncated]";
}

/// The sampler thread's side: the modules, kept current, and the names of
/// their addresses.
pub struct NativeFrames {
    modules: Modules,
    symbolizer: Symbolizer,
    /// The kernel's symbols, read at the first kernel frame (`kernel=on`).
    kernel: Option<KernelSymbols>,
    /// Names made so far, by function: demangling a name costs far more
    /// than finding its function, and a function's addresses are many.
    names: HashMap<FrameKey, NativeName>,
    /// The handler's unwinder was published (`native=on`; with
    /// `kernel=on` alone, only names are needed).
    unwinds: bool,
    refreshed: Instant,
    /// The wait before an asked refresh ([`REFRESH_ASKED_AFTER`], doubled
    /// while asked refreshes find nothing).
    asked_wait: Duration,
}

impl NativeFrames {
    /// Reads the process's modules and their symbols (and the kernel's,
    /// with `kernel`), and, with `unwind`, publishes the handler's unwinder
    /// (once per process: a later call fails). Returns the status line.
    ///
    /// The symbols are read here, before any thread's timer is opened:
    /// read at the first frame that needs them, they held the sampler
    /// thread for hundreds of milliseconds (libjvm.so's and the kernel's
    /// tables, a debug build), during which a busy thread's slot filled and
    /// its timer's signals were refused, and their CPU went to its next
    /// sample: a JNI program's 70/30 split read 61.9/38.1.
    pub fn start(unwind: bool, kernel: bool) -> Result<(NativeFrames, String), String> {
        let modules = Modules::load().map_err(|error| format!("cannot read the process's modules: {error}"))?;
        let mut symbolizer = Symbolizer::new();
        if unwind {
            symbolizer.read_tables(&modules);
        }
        let kernel = kernel.then(KernelSymbols::read);
        let refreshed = Instant::now();
        let native = |modules| NativeFrames {
            modules,
            symbolizer,
            kernel,
            names: HashMap::new(),
            unwinds: unwind,
            refreshed,
            asked_wait: REFRESH_ASKED_AFTER,
        };
        if !unwind {
            return Ok((native(modules), "off (native=off)".to_string()));
        }
        let cpus = std::thread::available_parallelism().map_or(8, |cpus| cpus.get());
        let handler = Box::new(HandlerNative { unwinder: Unwinder::new(&modules), pool: CachePool::new(2 * cpus) });
        let pool = handler.pool.len();
        let published = Box::into_raw(handler);
        if HANDLER_NATIVE
            .compare_exchange(std::ptr::null_mut(), published, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // SAFETY: not published: still ours alone.
            drop(unsafe { Box::from_raw(published) });
            return Err("native frames were started already in this process".to_string());
        }
        let with_tables = modules.list().iter().filter(|module| module.problem.is_none()).count();
        let status = format!(
            "on: {} modules ({with_tables} with unwind tables read), {pool} unwind caches",
            modules.list().len()
        );
        Ok((native(modules), status))
    }

    /// Every [`REFRESH_EVERY`], and sooner when a handler asked (backing
    /// off while that finds nothing: [`REFRESH_ASKED_AFTER`]): reads the
    /// modules again and publishes a new unwinder if a library was loaded
    /// or unloaded. Returns whether one was.
    pub fn refresh_if_due(&mut self, now: Instant) -> bool {
        if !self.unwinds {
            return false;
        }
        let asked = REFRESH_ASKED.load(Ordering::Relaxed);
        if !refresh_due(now.duration_since(self.refreshed), asked, self.asked_wait) {
            return false;
        }
        REFRESH_ASKED.store(false, Ordering::Relaxed);
        self.refreshed = now;
        let changed = self.modules.refresh().is_ok_and(|refresh| !refresh.is_empty());
        if changed {
            // Here, not at their first frame (see `start`).
            self.symbolizer.read_tables(&self.modules);
        }
        self.asked_wait = next_asked_wait(self.asked_wait, asked, changed);
        // SAFETY: published by `start`, never freed.
        if let Some(native) = unsafe { HANDLER_NATIVE.load(Ordering::Acquire).as_ref() } {
            native.unwinder.publish(&self.modules);
        }
        changed
    }

    /// The function of the code at `address` (a frame's lookup address,
    /// [`unwind`]), found without naming it; `None` in no module, current
    /// or seen before.
    pub fn key(&mut self, address: usize) -> Option<FrameKey> {
        if address == TRUNCATED {
            return Some(FrameKey::Truncated);
        }
        if address >= KERNEL_START {
            return Some(FrameKey::Kernel(self.kernel.get_or_insert_with(KernelSymbols::read).start_of(address)));
        }
        self.symbolizer.function_of(&self.modules, address as u64).map(FrameKey::Function)
    }

    /// The name of the code at `address`, of function `key` ([`NativeFrames::key`]):
    /// made once per function.
    pub fn name(&mut self, address: usize, key: FrameKey) -> Option<NativeName> {
        if let Some(name) = self.names.get(&key) {
            return Some(name.clone());
        }
        let name = match key {
            FrameKey::Truncated => NativeName::Truncated,
            FrameKey::Kernel(_) => {
                let function = self.kernel.get_or_insert_with(KernelSymbols::read).name(address);
                NativeName::Function { library: Arc::from(KERNEL_LIBRARY), function: Arc::from(function) }
            }
            FrameKey::Function(_) => {
                let symbol = self.symbolizer.symbolize(&self.modules, address as u64)?;
                let function = symbol.function.map_or_else(|| Arc::clone(&symbol.library), Arc::from);
                NativeName::Function { library: symbol.library, function }
            }
        };
        self.names.insert(key, name.clone());
        Some(name)
    }
}

/// Whether the modules are read again `since` after the last reading:
/// every [`REFRESH_EVERY`], or after `asked_wait` when a handler `asked`.
fn refresh_due(since: Duration, asked: bool, asked_wait: Duration) -> bool {
    since >= REFRESH_EVERY || asked && since >= asked_wait
}

/// The wait before the next asked reading, after one that was `asked` and
/// found the modules `changed` or not: back to [`REFRESH_ASKED_AFTER`]
/// when something changed, doubled (up to [`REFRESH_EVERY`]) when an asked
/// reading found nothing.
fn next_asked_wait(wait: Duration, asked: bool, changed: bool) -> Duration {
    match (asked, changed) {
        (_, true) => REFRESH_ASKED_AFTER,
        (true, false) => (wait * 2).min(REFRESH_EVERY),
        (false, false) => wait,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_asked_reading_comes_soon_and_backs_off_while_it_finds_nothing() {
        let ms = Duration::from_millis;
        assert!(!refresh_due(ms(10), true, REFRESH_ASKED_AFTER));
        assert!(refresh_due(REFRESH_ASKED_AFTER, true, REFRESH_ASKED_AFTER));
        assert!(!refresh_due(ms(500), false, REFRESH_ASKED_AFTER), "unasked: every second");
        assert!(refresh_due(REFRESH_EVERY, false, REFRESH_ASKED_AFTER));
        let mut wait = REFRESH_ASKED_AFTER;
        for _ in 0..10 {
            wait = next_asked_wait(wait, true, false);
        }
        assert_eq!(wait, REFRESH_EVERY, "garbage costs at most a reading a second");
        assert_eq!(next_asked_wait(wait, false, false), REFRESH_EVERY);
        assert_eq!(next_asked_wait(wait, true, true), REFRESH_ASKED_AFTER, "a library was loaded");
    }
}
