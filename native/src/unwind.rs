//! The unwinder a signal handler calls: native return addresses from the
//! interrupted registers, into a buffer the caller owns.
//!
//! # What the handler may call
//!
//! [`Unwinder::unwind`] and [`CachePool::take`] (and dropping what it
//! returns) are async-signal-safe: they allocate nothing, take no lock, make
//! no system call, never panic (no indexing that can fail, no arithmetic
//! that can overflow), and every loop is bounded (one frame per turn, at most
//! the buffer's length). Every other function here allocates and must run
//! on the sampler's own threads, never in a handler. Memory is read only
//! through the caller's reader (the sampler's fault-safe reads) and only
//! inside the thread's stack bounds.
//!
//! # Snapshots, and when an old one is freed
//!
//! The unwinder (framehop's `UnwinderX86_64` with the
//! `MustNotAllocateDuringUnwind` policy, and the sorted code ranges of the
//! modules) is built ahead of time from [`Modules`] and published as an
//! immutable [`Snapshot`] behind an atomic pointer. [`Unwinder::publish`]
//! builds a new one when the modules' generation moved and swaps it in; a
//! handler that loaded the old pointer keeps using the old snapshot.
//!
//! Old snapshots are retired, and freed only when no handler can hold one:
//! every call of `unwind` counts itself in `in_flight` (one atomic add before
//! it loads the pointer, one subtract after its last use) and `publish`
//! frees the retired snapshots when it reads `in_flight == 0` after its swap.
//! All of these are sequentially consistent, so a handler that loaded the
//! old pointer had counted itself before the swap, and a zero read after the
//! swap means it is done; a handler that comes later loads the new pointer.
//! Under constant sampling a zero may not be seen at once: the retired list
//! then waits for a later `publish`. Its bound: one snapshot per `publish`
//! that changed the modules since `in_flight` was last seen at zero. A
//! snapshot owns only its module list (about 200 bytes a module) and the
//! code ranges; the unwind sections are shared (reference-counted) between
//! snapshots, so a retired snapshot keeps alive only the sections of
//! libraries unloaded since, until it is freed.
//!
//! # Caches
//!
//! framehop needs a mutable cache per walk in progress: its rule cache (509
//! entries of 16 bytes, 8 KiB) and gimli's preallocated CFI evaluation
//! context: 32,992 bytes in all (measured by the crate's allocation test).
//! A [`CachePool`] holds at most 64 of them, taken and returned with one
//! atomic operation; a handler that finds none free unwinds nothing and the
//! caller counts it. One cache per handler in flight is enough: on a
//! machine with N CPUs at most N handlers run at once, plus those preempted
//! in the middle of a walk, so a pool of 2 × CPUs (bounded by 64) suffices;
//! 16 caches cost 0.5 MiB, the full 64 cost 2 MiB.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut, Range};
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{FrameAddress, MustNotAllocateDuringUnwind, Unwinder as _};

pub use framehop::CacheStats;

use crate::modules::{Modules, SectionData};

type Framehop = UnwinderX86_64<SectionData, MustNotAllocateDuringUnwind>;

/// The three registers a native walk starts from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Registers {
    pub pc: u64,
    pub sp: u64,
    pub fp: u64,
}

/// The [`Registers`] at this point of the calling function: a walk's start
/// from here, as a signal's context would give it (for tests and
/// benchmarks; the sampler reads a signal's context instead).
#[macro_export]
macro_rules! here {
    () => {{
        let (pc, sp, fp): (u64, u64, u64);
        // SAFETY: copies rip, rsp and rbp into three outputs; no memory is touched.
        unsafe {
            std::arch::asm!(
                "lea {pc}, [rip]",
                "mov {sp}, rsp",
                "mov {fp}, rbp",
                pc = out(reg) pc,
                sp = out(reg) sp,
                fp = out(reg) fp,
                options(nomem, nostack, preserves_flags)
            )
        };
        $crate::Registers { pc, sp, fp }
    }};
}

/// No stack pointer lies below this (the null page): framehop subtracts 8
/// from recovered stack pointers, which must not wrap.
const MIN_SP: u64 = 0x1000;

/// A thread's stack: every address the walk reads, and every stack pointer
/// it recovers, lies in `low..=high`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackBounds {
    pub low: u64,
    pub high: u64,
}

impl StackBounds {
    /// Whether the eight bytes at `address` lie inside the stack.
    #[inline]
    pub fn holds_word(&self, address: u64) -> bool {
        address >= self.low && address.checked_add(8).is_some_and(|end| end <= self.high)
    }

    /// Whether `sp` can be a stack pointer of this stack.
    #[inline]
    pub fn holds_sp(&self, sp: u64) -> bool {
        sp >= self.low.max(MIN_SP) && sp <= self.high
    }

    /// The calling thread's stack, from its pthread attributes. Not
    /// async-signal-safe (the sampler records each thread's bounds when it
    /// registers it).
    pub fn current_thread() -> Option<StackBounds> {
        let mut attributes = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
        // SAFETY: pthread_getattr_np initialises `attributes` on success.
        if unsafe { libc::pthread_getattr_np(libc::pthread_self(), attributes.as_mut_ptr()) } != 0 {
            return None;
        }
        let (mut base, mut size) = (std::ptr::null_mut(), 0usize);
        // SAFETY: `attributes` was initialised above; the out-pointers are ours.
        let got = unsafe { libc::pthread_attr_getstack(attributes.as_ptr(), &mut base, &mut size) };
        // SAFETY: initialised above and destroyed once.
        unsafe { libc::pthread_attr_destroy(attributes.as_mut_ptr()) };
        (got == 0).then(|| StackBounds { low: base as u64, high: base as u64 + size as u64 })
    }
}

/// Why a walk ended. The variants after `BufferFull` mean the stack was
/// truncated: the sampler shows them as pseudo-frames and counts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Ending {
    /// The stack's root: the unwind tables say there is no caller (a
    /// thread's start), or the return address is zero.
    Root,
    /// The recovered stack pointer reached the stop sp: the caller is the
    /// last Java frame, where the Java walker takes over ([`NativeWalk::resume`]).
    JavaFrame,
    /// A return address (or the pc) in no module: JIT or interpreter code,
    /// where the Java walker takes over ([`NativeWalk::resume`]), or garbage.
    UnknownCode,
    /// The buffer is full.
    BufferFull,
    /// A read was refused (outside the stack, or by the reader).
    ReadRefused,
    /// The stack pointer did not grow from one frame to the next.
    SpNotIncreasing,
    /// A stack pointer outside the thread's stack.
    SpOutsideStack,
    /// The unwind data led nowhere (arithmetic overflow, no progress).
    BadUnwindData,
    /// No cache was free in the pool (the sampler's own ending; `unwind`
    /// never returns it).
    NoCache,
}

impl Ending {
    /// Every ending, in declaration order (for counters).
    pub const ALL: [Ending; 9] = [
        Ending::Root,
        Ending::JavaFrame,
        Ending::UnknownCode,
        Ending::BufferFull,
        Ending::ReadRefused,
        Ending::SpNotIncreasing,
        Ending::SpOutsideStack,
        Ending::BadUnwindData,
        Ending::NoCache,
    ];

    /// Whether frames may be missing above the last one written.
    pub fn is_truncated(self) -> bool {
        !matches!(self, Ending::Root | Ending::JavaFrame | Ending::UnknownCode)
    }

    /// A short name for counters and pseudo-frames.
    pub fn name(self) -> &'static str {
        match self {
            Ending::Root => "root",
            Ending::JavaFrame => "java_frame",
            Ending::UnknownCode => "unknown_code",
            Ending::BufferFull => "buffer_full",
            Ending::ReadRefused => "read_refused",
            Ending::SpNotIncreasing => "sp_not_increasing",
            Ending::SpOutsideStack => "sp_outside_stack",
            Ending::BadUnwindData => "bad_unwind_data",
            Ending::NoCache => "no_cache",
        }
    }
}

/// What a walk wrote and why it stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NativeWalk {
    /// Frames written to the buffer: `out[0]` is the pc, each later one a
    /// return address (symbolize `address - 1` for those: the call, not the
    /// instruction after it).
    pub frames: usize,
    pub ending: Ending,
    /// The registers of the frame the walk stopped at (the pc not written):
    /// for [`Ending::JavaFrame`] and [`Ending::UnknownCode`], where the
    /// Java walker may start.
    pub resume: Registers,
}

/// framehop's cache for one walk in progress, allocated ahead of time.
pub struct UnwindCache(CacheX86_64<MustNotAllocateDuringUnwind>);

impl UnwindCache {
    /// Allocates a cache (32 KiB). Not for a handler.
    #[allow(clippy::new_without_default)]
    pub fn new() -> UnwindCache {
        UnwindCache(CacheX86_64::new_in())
    }

    /// The rule cache's hits and misses so far.
    pub fn stats(&self) -> CacheStats {
        self.0.stats()
    }
}

/// A fixed set of caches for handlers, each taken by one atomic operation.
pub struct CachePool {
    caches: Box<[UnsafeCell<UnwindCache>]>,
    /// Bit `i` set: cache `i` is free.
    free: AtomicU64,
}

// SAFETY: a cache is reached only through a `PooledCache`, and only one
// exists per cache at a time: its bit is cleared by one compare-and-swap
// before it is made and set again when it is dropped.
unsafe impl Sync for CachePool {}

impl CachePool {
    /// The most caches a pool holds.
    pub const MAX: usize = 64;

    /// Allocates `count` caches (clamped to `1..=MAX`). Not for a handler.
    pub fn new(count: usize) -> CachePool {
        let count = count.clamp(1, Self::MAX);
        let caches = (0..count).map(|_| UnsafeCell::new(UnwindCache::new())).collect();
        let free = if count == 64 { u64::MAX } else { (1u64 << count) - 1 };
        CachePool { caches, free: AtomicU64::new(free) }
    }

    /// How many caches the pool holds.
    pub fn len(&self) -> usize {
        self.caches.len()
    }

    /// Always false: a pool holds at least one cache.
    pub fn is_empty(&self) -> bool {
        self.caches.is_empty()
    }

    /// How many caches are free now.
    pub fn available(&self) -> usize {
        self.free.load(Ordering::Relaxed).count_ones() as usize
    }

    /// Takes a free cache, or `None` if all are in use (the caller skips the
    /// native walk and counts it). Async-signal-safe; gives up after a
    /// bounded number of lost races.
    pub fn take(&self) -> Option<PooledCache<'_>> {
        let mut free = self.free.load(Ordering::Acquire);
        for _ in 0..Self::MAX {
            if free == 0 {
                return None;
            }
            let index = free.trailing_zeros() as usize;
            let taken = free & !(1u64 << index);
            match self.free.compare_exchange_weak(free, taken, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(PooledCache { pool: self, index }),
                Err(now) => free = now,
            }
        }
        None
    }
}

/// A cache taken from a [`CachePool`]; dropping it returns it.
pub struct PooledCache<'a> {
    pool: &'a CachePool,
    index: usize,
}

impl Deref for PooledCache<'_> {
    type Target = UnwindCache;

    fn deref(&self) -> &UnwindCache {
        // SAFETY: this guard's bit is clear, so no other guard reaches the
        // cache (see `CachePool`'s Sync); `index` was a set bit, below len.
        unsafe { &*self.pool.caches.get_unchecked(self.index).get() }
    }
}

impl DerefMut for PooledCache<'_> {
    fn deref_mut(&mut self) -> &mut UnwindCache {
        // SAFETY: as in `deref`; `&mut self` makes this reference unique.
        unsafe { &mut *self.pool.caches.get_unchecked(self.index).get() }
    }
}

impl Drop for PooledCache<'_> {
    fn drop(&mut self) {
        self.pool.free.fetch_or(1u64 << self.index, Ordering::Release);
    }
}

/// One published state of the unwinder: never changed, freed only when no
/// handler can hold it (module doc).
struct Snapshot {
    framehop: Framehop,
    /// The modules' executable ranges, sorted by start.
    code: Box<[Range<u64>]>,
    generation: u64,
}

impl Snapshot {
    fn build(modules: &Modules) -> Box<Snapshot> {
        let mut framehop = Framehop::new();
        for module in modules.list() {
            framehop.add_module(module.framehop());
        }
        let code = modules.list().iter().map(|module| module.avma.clone()).collect();
        Box::new(Snapshot { framehop, code, generation: modules.generation() })
    }

    #[inline]
    fn is_code(&self, address: u64) -> bool {
        let after = self.code.partition_point(|range| range.start <= address);
        after.checked_sub(1).and_then(|index| self.code.get(index)).is_some_and(|range| address < range.end)
    }
}

/// The native unwinder: the published snapshot and what retires old ones.
pub struct Unwinder {
    current: AtomicPtr<Snapshot>,
    in_flight: AtomicUsize,
    /// Replaced snapshots not yet freed; also serialises `publish`. Boxed:
    /// a walk in flight may still hold a pointer to one, which must not move.
    #[allow(clippy::vec_box)]
    retired: Mutex<Vec<Box<Snapshot>>>,
}

impl Unwinder {
    /// Builds the first snapshot from `modules`. Not for a handler.
    pub fn new(modules: &Modules) -> Unwinder {
        let first = Box::into_raw(Snapshot::build(modules));
        Unwinder { current: AtomicPtr::new(first), in_flight: AtomicUsize::new(0), retired: Mutex::new(Vec::new()) }
    }

    /// Publishes a snapshot of `modules` if their generation moved since the
    /// current one (true then), and frees the retired snapshots no handler
    /// can hold. Not for a handler.
    pub fn publish(&self, modules: &Modules) -> bool {
        let mut retired = self.retired.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if self.generation() == modules.generation() {
            return false;
        }
        let new = Box::into_raw(Snapshot::build(modules));
        let old = self.current.swap(new, Ordering::SeqCst);
        // SAFETY: `old` came from Box::into_raw (in `new` or here) and was
        // just unpublished; it is freed only below, when no handler holds it.
        retired.push(unsafe { Box::from_raw(old) });
        if self.in_flight.load(Ordering::SeqCst) == 0 {
            retired.clear();
        }
        true
    }

    /// The generation of the modules the current snapshot was built from.
    pub fn generation(&self) -> u64 {
        self.with_snapshot(|snapshot| snapshot.generation)
    }

    /// How many replaced snapshots are still kept.
    pub fn retired(&self) -> usize {
        self.retired.lock().map_or(0, |retired| retired.len())
    }

    /// Walks the native stack from `start`: writes the pc and the return
    /// addresses into `out`, reading the stack only through `read` and only
    /// within `stack`. It stops at the stack's root, at the first frame
    /// whose stack pointer reaches `stop_sp` (the last Java frame's sp), at
    /// code in no module, at the buffer's end, or where the stack cannot be
    /// trusted (the [`Ending`]s after `BufferFull`).
    ///
    /// Async-signal-safe: allocates nothing, takes no lock, never panics.
    pub fn unwind<R>(
        &self,
        start: Registers,
        stack: StackBounds,
        stop_sp: Option<u64>,
        read: R,
        cache: &mut UnwindCache,
        out: &mut [u64],
    ) -> NativeWalk
    where
        R: FnMut(u64) -> Option<u64>,
    {
        let walk = Walk { stack, stop_sp: stop_sp.unwrap_or(u64::MAX), read };
        self.with_snapshot(|snapshot| walk.run(start, snapshot, cache, out))
    }

    /// Runs `body` on the current snapshot, counted in `in_flight` so that
    /// `publish` does not free it meanwhile.
    #[inline]
    fn with_snapshot<T>(&self, body: impl FnOnce(&Snapshot) -> T) -> T {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let current = self.current.load(Ordering::SeqCst);
        // SAFETY: `current` is never null (set in `new`, replaced by
        // `publish` with another Box), and it is freed only by a `publish`
        // that swapped it out and then saw `in_flight == 0`, which cannot
        // happen before the subtraction below (module doc), or by Drop,
        // which has `&mut self`.
        let value = body(unsafe { &*current });
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        value
    }
}

impl Drop for Unwinder {
    fn drop(&mut self) {
        let current = *self.current.get_mut();
        // SAFETY: from Box::into_raw, freed only here; `&mut self` means no
        // handler holds it (the sampler stops its handlers before dropping).
        drop(unsafe { Box::from_raw(current) });
    }
}

/// One walk's limits and reader.
struct Walk<R> {
    stack: StackBounds,
    stop_sp: u64,
    read: R,
}

impl<R: FnMut(u64) -> Option<u64>> Walk<R> {
    fn run(mut self, start: Registers, snapshot: &Snapshot, cache: &mut UnwindCache, out: &mut [u64]) -> NativeWalk {
        let end = |frames, ending| NativeWalk { frames, ending, resume: start };
        if !self.stack.holds_sp(start.sp) {
            return end(0, Ending::SpOutsideStack);
        }
        if start.sp >= self.stop_sp {
            return end(0, Ending::JavaFrame);
        }
        if !snapshot.is_code(start.pc) {
            return end(0, Ending::UnknownCode);
        }
        let mut regs = UnwindRegsX86_64::new(start.pc, start.sp, start.fp);
        let mut address = FrameAddress::from_instruction_pointer(start.pc);
        let mut frames = 0;
        loop {
            let Some(slot) = out.get_mut(frames) else { return self.ended(frames, Ending::BufferFull, &regs) };
            *slot = address.address();
            frames += 1;
            match self.step(snapshot, address, &mut regs, cache) {
                Ok(next) => address = next,
                Err(ending) => return self.ended(frames, ending, &regs),
            }
        }
    }

    /// Unwinds one frame: the caller's address, or why the walk ends.
    #[inline]
    fn step(
        &mut self,
        snapshot: &Snapshot,
        address: FrameAddress,
        regs: &mut UnwindRegsX86_64,
        cache: &mut UnwindCache,
    ) -> Result<FrameAddress, Ending> {
        let (stack, read) = (self.stack, &mut self.read);
        let mut read_stack = |at: u64| if stack.holds_word(at) { read(at).ok_or(()) } else { Err(()) };
        let sp = regs.sp();
        let caller = match snapshot.framehop.unwind_frame(address, regs, &mut cache.0, &mut read_stack) {
            Ok(Some(caller)) => caller,
            Ok(None) => return Err(Ending::Root),
            Err(error) => return Err(ending_of(error)),
        };
        if regs.sp() <= sp {
            return Err(Ending::SpNotIncreasing);
        }
        if !self.stack.holds_sp(regs.sp()) {
            return Err(Ending::SpOutsideStack);
        }
        if regs.sp() >= self.stop_sp {
            return Err(Ending::JavaFrame);
        }
        let Some(caller) = FrameAddress::from_return_address(caller) else { return Err(Ending::Root) };
        if !snapshot.is_code(caller.address_for_lookup()) {
            return Err(Ending::UnknownCode);
        }
        Ok(caller)
    }

    fn ended(&self, frames: usize, ending: Ending, regs: &UnwindRegsX86_64) -> NativeWalk {
        let resume = Registers { pc: regs.ip(), sp: regs.sp(), fp: regs.bp() };
        NativeWalk { frames, ending, resume }
    }
}

fn ending_of(error: framehop::Error) -> Ending {
    match error {
        framehop::Error::CouldNotReadStack(_) => Ending::ReadRefused,
        framehop::Error::FramepointerUnwindingMovedBackwards | framehop::Error::DidNotAdvance => {
            Ending::SpNotIncreasing
        }
        framehop::Error::ReturnAddressIsNull => Ending::Root,
        framehop::Error::IntegerOverflow => Ending::BadUnwindData,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_replaced_during_a_walk_is_freed_only_after_it() {
        let loaded = Modules::load().unwrap();
        let unwinder = Unwinder::new(&loaded);
        let empty = Modules::default();
        let words = [0u64; 64];
        let base = 0x5555_0000_0000u64;
        let stack = StackBounds { low: base, high: base + 8 * words.len() as u64 };
        let mut replaced = false;
        let read = |at: u64| {
            // A refresh on another thread, while this walk is in flight.
            replaced |= unwinder.publish(&empty);
            words.get(((at - base) / 8) as usize).copied()
        };
        let start = Registers { pc: libc::getpid as *const () as u64, sp: base + 64, fp: 0 };
        let walk = unwinder.unwind(start, stack, None, read, &mut UnwindCache::new(), &mut [0; 8]);
        assert!(replaced && walk.frames >= 1, "{walk:?}");
        assert_eq!(unwinder.retired(), 1, "kept: a walk was in flight");
        assert_eq!(unwinder.generation(), empty.generation());
        assert!(unwinder.publish(&loaded));
        assert_eq!(unwinder.retired(), 0, "no walk in flight: both freed");
    }
}
