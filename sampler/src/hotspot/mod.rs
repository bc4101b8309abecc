//! HotSpot, read from the inside: its self-description (VMStructs), its
//! flags, and pcct's own Java stack walker over its frames.
//!
//! - [`vmstructs`]: the exported tables of field offsets, type sizes and constants;
//! - [`flags`]: the flag table, and `DebugNonSafepoints` turned on;
//! - [`marks`]: what a thread's previous walk saw, to reuse its unchanged frames;
//! - [`layout`]: what the walker needs, from the tables and the running VM;
//! - [`safe_read`]: reads that survive a bad pointer (a fault handler);
//! - [`memory`]: the walker's memory, real or synthetic;
//! - [`cache`]: what the walks decoded, kept for later walks of any thread;
//! - [`classes`]: an event's class named again from HotSpot's structures;
//! - [`history`]: what a thread's handler keeps between samples;
//! - [`code`]: code heaps, code blobs, nmethods, debug information, jmethodIDs;
//! - [`walker`]: the frame walk the signal handler runs.
//!
//! [`init`] prepares it all on the sampler thread, after VMInit; the
//! handler reads the result through [`vm`] (one atomic load) and shares
//! decoded code with every thread through [`FrameCache::process`].

pub mod cache;
pub mod classes;
pub mod code;
pub mod flags;
pub mod history;
pub mod layout;
pub mod marks;
pub mod memory;
pub mod safe_read;
pub mod vmstructs;
pub mod walker;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use crate::agct::CallFrame;
use cache::FrameCache;
use history::History;

use layout::Layout;
use memory::VmMemory;
use vmstructs::VmStructs;

/// What the handler needs to walk this VM's stacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vm {
    pub layout: Layout,
    /// `JNIEnv*` minus `JavaThread*`: a thread's `JavaThread` from its JNIEnv.
    pub env_offset: usize,
    /// Where a class's `Klass` and name are, if this VM says (not under ZGC).
    pub classes: Option<classes::ClassLayout>,
}

impl Vm {
    /// The `JavaThread*` whose JNIEnv is `env`.
    pub fn java_thread_of(&self, env: usize) -> Option<usize> {
        env.checked_sub(self.env_offset).filter(|&thread| thread != 0)
    }

    /// The `JavaThread*` whose JNIEnv is `env`, if it is the OS thread
    /// `tid`'s (a stale or foreign JNIEnv names another thread, or none).
    /// Async-signal-safe.
    pub fn java_thread_on(&self, env: usize, tid: i32) -> Option<usize> {
        self.java_thread_of(env).filter(|&thread| walker::os_thread_id(&VmMemory, &self.layout, thread) == Some(tid))
    }

    /// The JNIEnv of the thread whose `JavaThread*` is `java_thread`.
    pub fn env_of(&self, java_thread: usize) -> usize {
        java_thread.wrapping_add(self.env_offset)
    }

    /// The kernel's id of the thread whose `JavaThread*` is `java_thread`
    /// (`None` if it has no OS thread yet or the read faults).
    pub fn os_thread_id(&self, java_thread: usize) -> Option<i32> {
        walker::os_thread_id(&VmMemory, &self.layout, java_thread).filter(|&tid| tid > 0)
    }
}

static VM: OnceLock<Vm> = OnceLock::new();

/// The walker's view of the VM, once [`init`] succeeded. Async-signal-safe.
#[inline]
pub fn vm() -> Option<&'static Vm> {
    VM.get()
}

/// Whether the kernel accepted [`advise_huge_page`].
static HUGE_PAGE_ADVISED: AtomicBool = AtomicBool::new(false);

/// Where the kernel says whether transparent huge pages are used at all.
const THP_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/enabled";

/// Asks the kernel to back the frame cache's tables with one huge page (one
/// TLB entry for all of them; `madvise(MADV_HUGEPAGE)`, which transparent
/// huge pages honour in their default `madvise` mode), then touches them so
/// that the page is taken now, on the calling thread, not in the first
/// walk's signal handler. Called by [`init`], before the first walk. Not
/// asked where the loader did not align the tables (a C library older than
/// 2.35 ignores a shared library's segment alignment), where transparent
/// huge pages are off (`never` in [`THP_ENABLED`]) or where the kernel
/// refuses: the tables then stay on small pages.
fn advise_huge_page() {
    let (address, length) = cache::tables();
    let off = std::fs::read_to_string(THP_ENABLED).map_or(true, |modes| modes.contains("[never]"));
    // SAFETY: madvise on the static's own range (aligned, `length` long)
    // changes only how the kernel backs its memory, never its contents.
    let advised = !off
        && address.is_multiple_of(cache::HUGE_PAGE)
        && unsafe { libc::madvise(address as *mut libc::c_void, length, libc::MADV_HUGEPAGE) } == 0;
    if advised {
        cache::touch_tables();
    }
    HUGE_PAGE_ADVISED.store(advised, Ordering::Relaxed);
}

/// Whether the frame cache's tables were advised onto a huge page (the
/// kernel may still back them with small pages if no huge page was free
/// when they were touched).
pub fn frame_cache_huge_page() -> bool {
    HUGE_PAGE_ADVISED.load(Ordering::Relaxed)
}

/// Why pcct's walker is not available (AsyncGetCallTrace alone walks).
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error("this JVM exports no VMStructs tables (not HotSpot?)")]
    NoTables,
    #[error(transparent)]
    Missing(#[from] layout::Missing),
    #[error("cannot install the fault handler for safe reads: {0}")]
    FaultHandler(String),
    #[error("the sampler thread's JavaThread was not found (JNIEnv {env:#x}, java.lang.Thread.eetop {thread:#x})")]
    NoThread { env: usize, thread: usize },
}

/// Prepares the walker: reads the tables and the VM's code layout, installs
/// the fault handler. `env` and `java_thread` are the calling thread's
/// `JNIEnv*` and `JavaThread*` (`java.lang.Thread.eetop`): their difference
/// names every other thread's `JavaThread` from its JNIEnv. Call after
/// VMInit, before any signal is sent; later calls return the first result.
pub fn init(env: usize, java_thread: usize) -> Result<&'static Vm, InitError> {
    if let Some(vm) = VM.get() {
        return Ok(vm);
    }
    if java_thread == 0 || env <= java_thread || env - java_thread > 1 << 16 {
        return Err(InitError::NoThread { env, thread: java_thread });
    }
    safe_read::install().map_err(|error| InitError::FaultHandler(error.to_string()))?;
    let tables = VmStructs::of_this_process().ok_or(InitError::NoTables)?;
    let (mut layout, statics) = Layout::from_tables(&tables)?;
    layout.read_runtime(&VmMemory, &statics)?;
    let vm = Vm { layout, env_offset: env - java_thread, classes: classes::ClassLayout::from_tables(&tables) };
    // The thread's own JavaThread must name its own OS thread.
    if walker::os_thread_id(&VmMemory, &layout, java_thread) != Some(crate::slots::current_tid()) {
        return Err(InitError::NoThread { env, thread: java_thread });
    }
    // Only for a walker that will walk: the advice takes the huge page.
    advise_huge_page();
    Ok(VM.get_or_init(|| vm))
}

/// A thread's walks of its own stack in JVMTI event callbacks (a sampled
/// allocation, a contended enter), from its last Java frame, where the
/// thread is in native code or the VM and its anchor says where its Java
/// frames are. Like the signal handler's walks, each keeps a [`History`]:
/// the frames it decoded, and marks of its output, so the next event's
/// walk copies the frames that did not change (Whaley's marked frames)
/// instead of decoding a deep stack again; decoded code goes to (and comes
/// from) the process's [`FrameCache::process`]. Every read is a safe read. About
/// 16 KiB for the history plus 32 bytes a frame of `depth`.
pub struct OwnWalks {
    history: Box<History>,
    /// Two halves of `capacity` frames: the previous walk's output and the next's.
    buffer: Vec<CallFrame>,
    capacity: usize,
    /// The thread's id, read once (a system call each time otherwise).
    tid: i32,
}

impl OwnWalks {
    /// Walks of at most `capacity` frames, of the calling thread's stack
    /// (only that thread may use them).
    pub fn new(capacity: usize) -> OwnWalks {
        let capacity = capacity.max(1);
        let buffer = vec![CallFrame::EMPTY; 2 * capacity];
        OwnWalks { history: Box::default(), buffer, capacity, tid: crate::slots::current_tid() }
    }

    /// The id of the thread these walks are of.
    pub fn tid(&self) -> i32 {
        self.tid
    }

    /// Walks the calling thread's Java frames; `env` is its JNIEnv. The
    /// frames (leaf first), whether the buffer filled (the stack may go
    /// on), and how many frames at the bottom are the previous walk's
    /// (verified unchanged on the stack, copied, not decoded); `None` when
    /// the walker is not ready, `env` is not this thread's, the thread
    /// runs Java code, or the walk stopped early: the caller then asks
    /// JVMTI (`GetStackTrace`). Whatever the answer, the next walk reuses
    /// only what this one saw.
    pub fn walk(&mut self, env: usize) -> Option<OwnWalk<'_>> {
        let vm = vm()?;
        let thread = vm.java_thread_on(env, self.tid)?;
        if walker::runs_java(&VmMemory, &vm.layout, thread)? {
            return None; // no anchor: the registers would be needed
        }
        let (half, previous, out) = history::halves(&mut self.history, &mut self.buffer);
        let memo = self.history.memo(previous, Some(FrameCache::process()));
        let walk = walker::walk(&VmMemory, &vm.layout, thread, walker::Registers::default(), out, memo);
        self.history.finish(&walk, half, 0);
        let frames = &self.buffer[half * self.capacity..][..walk.frames];
        match walk.ending {
            walker::Ending::Complete => Some(OwnWalk { frames, full: false, reused: walk.reused }),
            walker::Ending::Full => Some(OwnWalk { frames, full: true, reused: walk.reused }),
            walker::Ending::Broken(_) => None,
        }
    }

    /// Forgets the previous walk: the next one decodes every frame (its
    /// frames' `reused` is 0).
    pub fn forget(&mut self) {
        self.history.forget();
    }
}

/// One walk of [`OwnWalks`].
pub struct OwnWalk<'a> {
    /// Leaf first.
    pub frames: &'a [CallFrame],
    /// The buffer filled: the stack may go on.
    pub full: bool,
    /// Frames at the bottom copied from the previous walk.
    pub reused: usize,
}

#[cfg(test)]
mod tests;
