//! The thread registry: a fixed table of thread slots, shared by the thread
//! itself (registration, its signal handler), the sampler thread and
//! nobody else.
//!
//! A slot is a mailbox of up to [`PLACES`] places between a thread's signal
//! handler and the sampler thread. Its state machine lives here, one method
//! per transition; `(k)` is the number of samples waiting, part of the state:
//!
//! ```text
//!          occupy              request                enter_handler
//!   FREE ----------> IDLE -----------------> REQUESTED -------------> IN_HANDLER(0)
//!    ^               |^  ^    withdraw           |                      ^  |
//!    |               ||  +-----------------------+                      |  | publish
//!    |               |+-------------------------------------------------+  |
//!    |               |                 claim (a thread's own timer)        |
//!    | release       |                                                     v
//!    |               +------------------- DRAINING <------------------ READY(k)
//!    |                       (drain: one call,                          |   ^
//!    |                        READY(k) -> DRAINING -> IDLE)       claim |   | publish
//!    |                                                  (its timer again,|   | (k + 1)
//!    |                                                 k < its places)   v   |
//!    |                                                                IN_HANDLER(k)
//!  RETIRED <--retire-- any state but FREE (waits out IN_HANDLER and DRAINING)
//! ```
//!
//! | transition | who | from -> to |
//! |---|---|---|
//! | [`Slot::occupy`] | registration (under the registry's lock) | FREE -> IDLE |
//! | [`Slot::request`] | sampler (before its signal) | IDLE -> REQUESTED |
//! | [`Slot::withdraw`] | sampler (request lost, or its signal not sent) | REQUESTED -> IDLE |
//! | [`Slot::enter_handler`] | the thread's signal handler (the sampler's signal) | REQUESTED -> IN_HANDLER(0) |
//! | [`Slot::claim`] | the thread's signal handler (its own CPU timer's signal, `cpu_timer`) | IDLE -> IN_HANDLER(0), READY(k) -> IN_HANDLER(k) |
//! | [`Slot::publish`] | the thread's signal handler | IN_HANDLER(k) -> READY(k + 1) |
//! | [`Slot::drain`] | sampler | READY(k) -> DRAINING -> IDLE |
//! | [`Slot::retire`] | ThreadEnd, a reused tid, the sampler for a vanished discovered thread | IDLE, REQUESTED -> RETIRED(0), READY(k) -> RETIRED(k) |
//! | [`Slot::release`] | sampler (gives back the k samples' borrowed regions) | RETIRED(k) -> FREE |
//!
//! The places after the first are a thread's own timer's: its signals come
//! after every interval of the thread's CPU, whether or not the sampler
//! thread has drained the previous sample (it waits for a CPU like any
//! other thread). Each waiting sample has its frames in a region of its
//! own: the slot has two, allocated at registration, and a handler that
//! finds both holding waiting samples' frames borrows one from a pool all
//! slots share ([`Pool`], [`POOL_REGIONS`] regions, allocated the first
//! time the sampler drains two samples or more from one slot), which the
//! sampler gives back when it drains the sample. A signal is refused
//! (`timer_signals_busy`) when it finds [`PLACES`] samples waiting, no
//! region to borrow (the pool not made yet, all of it borrowed, or
//! [`POOL_TRIES`] compare-and-swaps lost to other threads' handlers), the
//! sampler draining the slot, or a request of the sampler's own pending;
//! its CPU goes to the thread's next sample, elsewhere in the code if the
//! thread moved on meanwhile. With two places, two SyscallTruth JVMs on two
//! vCPUs (each sampler thread waiting about a millisecond for a CPU at each
//! tick, up to the end of another thread's read of many milliseconds) had
//! 12-37 % of their signals refused, and the CPU of the short calls before
//! a long read went to the read's sample (BENCHMARKS.md, "Long system
//! calls"). The sampler drains the waiting samples at once, the older
//! first, and splits the wall time since the thread's previous sample
//! between them by the intervals each stands for.
//!
//! The state and the registration's generation share one atomic word, and
//! every move is a compare-and-swap of that word, so a transition checks
//! the generation and the state at once (a slot retired, freed and taken by
//! a new thread between a handler's check and its move cannot be entered
//! with the old registration's signal). A late signal or a reused thread id
//! can at worst lose one sample, and a thread that ends the samples waiting
//! in its slot (all counted: `samples_retired`); none of them can make two
//! parties use one region at once. A slot's own region belongs to the
//! handler while the slot is IN_HANDLER and the region is the one it
//! writes (it also reads the one holding its previous walk, which nobody
//! writes; the others hold waiting samples, which nobody writes, or
//! nothing), to the sampler while the slot is DRAINING, to registration
//! while it is FREE, and to nobody otherwise. A pool region belongs to
//! whoever has its bit in the pool's bitmap: a handler takes it with one
//! compare-and-swap before the slot's move to IN_HANDLER (and gives it
//! back if the move fails), its sample keeps it while it waits, and the
//! sampler gives it back after copying the sample out, or when it releases
//! a retired slot whose samples were never drained.
//!
//! Frame buffers are allocated at registration and by the sampler (never
//! in the handler) and kept with their slot for the next thread, so memory
//! is bounded by the peak number of live threads times the stack depth,
//! times two, plus the pool's [`POOL_REGIONS`] regions. The table of
//! slots is zero at start (`.bss`: pages are touched only as threads take
//! slots), which is why a slot reaches the pool through [`Slot::pool`], not
//! a reference of its own (a test's slot has one).

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// A slot's state and generation as one word: generation in the high 32
/// bits, the samples waiting in bits 8-15, the state in the low 8.
fn pack(generation: u32, state: SlotState, waiting: usize) -> u64 {
    ((generation as u64) << 32) | ((waiting as u64 & 0xFF) << 8) | state as u64
}

fn unpack(word: u64) -> (u32, SlotState, usize) {
    ((word >> 32) as u32, SlotState::from_u32(word as u32 & 0xFF), (word >> 8) as usize & 0xFF)
}

/// Most samples a slot holds for the sampler (its thread's own timer's
/// signals; the sampler's signal asks for one at a time). Each has a
/// region of `depth + 1` frames: one of the slot's own two, or one
/// borrowed from the [`Pool`].
pub const PLACES: usize = 32;
/// Samples waiting in one slot at which its handler rings the sampler's
/// doorbell (`doorbell`): half its places, so that the thread's timer has
/// as many intervals again before a signal finds the places full.
pub const RING_AT_WAITING: usize = PLACES / 2;

/// Regions a slot has of its own, from its registration; region numbers
/// from this one on are the pool's, borrowed.
pub const OWN_REGIONS: usize = 2;

/// Regions in the pool the slots borrow from (one bit each of its bitmap):
/// 512 KiB at the default depth of 512 frames.
pub const POOL_REGIONS: usize = 64;

/// Tries at the pool's bitmap before a handler gives up (each failure is
/// another handler's success).
const POOL_TRIES: usize = 8;

/// The pool's bitmap has a bit per region.
const _: () = assert!(POOL_REGIONS <= 64);
/// The regions' bits in the bitmap.
const POOL_BITS: u64 = if POOL_REGIONS == 64 { u64::MAX } else { (1 << POOL_REGIONS) - 1 };

use parking_lot::Mutex;

use crate::agct::CallFrame;
use crate::error::{Result, SamplerError};
use crate::hotspot::history::History;

/// Most threads tracked at once. More are not sampled (and counted).
pub const MAX_THREADS: usize = 8192;

/// Where a slot is in its life (see the module documentation).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotState {
    /// No thread: registration may take it.
    Free = 0,
    /// A registered thread, not asked for a sample.
    Idle = 1,
    /// The sampler signalled the thread and waits for its handler.
    Requested = 2,
    /// The thread's handler is writing a sample (behind the samples
    /// waiting, if its timer's).
    InHandler = 3,
    /// Samples wait for the sampler.
    Ready = 4,
    /// The sampler is copying the sample out.
    Draining = 5,
    /// The thread ended; the sampler frees the slot (and gives back the
    /// pool regions of the samples that waited in it).
    Retired = 6,
}

impl SlotState {
    const ALL: [SlotState; 7] = [
        SlotState::Free,
        SlotState::Idle,
        SlotState::Requested,
        SlotState::InHandler,
        SlotState::Ready,
        SlotState::Draining,
        SlotState::Retired,
    ];

    fn from_u32(value: u32) -> SlotState {
        // Only this module stores states, always from a SlotState.
        SlotState::ALL.get(value as usize).copied().unwrap_or(SlotState::Free)
    }
}

/// `result` of a sample the register checksum filtered (the thread had not run).
pub const RESULT_FILTERED: i32 = i32::MIN;
/// [`Slot::last_switches`] when the previous handler did not read them.
pub const NO_SWITCHES: u64 = u64::MAX;
/// `result` when AsyncGetCallTrace was not found.
pub const RESULT_NO_AGCT: i32 = i32::MIN + 1;
/// `result` of a sample deferred because its signal reached the thread
/// after a long wait off the CPU (see `handler`): not walked.
pub const RESULT_DEFERRED: i32 = i32::MIN + 2;

/// `result` when the region a handler chose was not there (not expected:
/// a slot's regions only grow while it is registered).
pub const RESULT_NO_REGION: i32 = i32::MIN + 3;

/// `result` of a thread that runs no Java code ([`ThreadOrigin::Native`]):
/// nothing walked; the sample stands under the thread's kind.
pub const RESULT_NATIVE_THREAD: i32 = i32::MIN + 4;

/// What a handler leaves in its slot besides the frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HandlerResult {
    /// Frames written (> 0), AsyncGetCallTrace's failure code (<= 0),
    /// [`RESULT_FILTERED`], [`RESULT_NO_AGCT`], [`RESULT_DEFERRED`] or
    /// [`RESULT_NO_REGION`].
    pub result: i32,
    /// Which walker wrote the frames (a [`crate::handler::Walker`] as a byte).
    pub walker: u8,
    /// Why pcct's walker stopped early ([`crate::hotspot::walker::Broken`]
    /// as a byte), 0 if it did not (or did not run).
    pub broken: u8,
    /// The region holding the frames: the slot's own (below
    /// [`OWN_REGIONS`]), else the pool's `region - OWN_REGIONS`, borrowed
    /// until the sample is drained.
    pub region: u8,
    /// Of the frames, those pcct's walker took unchanged from the thread's
    /// previous walk instead of decoding them.
    pub reused: u16,
    /// The register checksum.
    pub checksum: u64,
    /// Time the handler took ([`HANDLER_UNMEASURED`]: the thread was
    /// switched out during it, see `handler`).
    pub handler_ns: u64,
    /// The sample was asked for by the thread's own CPU timer (`cpu_timer`),
    /// not by the sampler's signal.
    pub timed: bool,
    /// The thread's CPU clock when the handler started, if the handler read
    /// it (always for the sampler's signal, where the sample's CPU ends;
    /// for a timer's see `handler`'s module doc); else 0: a timer's sample
    /// then weighs the timer's intervals ([`Slot::timer_signals`]).
    pub cpu_ns: u64,
    /// For a timed sample, its signal's number among the slot's
    /// ([`Slot::timer_signals`] before the signal was counted).
    pub timer_signal: u64,
}

/// [`HandlerResult::handler_ns`] of a handler during which the thread was
/// switched out: its wall time is not its CPU time, so it is not timed.
pub const HANDLER_UNMEASURED: u64 = u64::MAX;

/// A sample copied out of a slot by [`Slot::drain`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Drained {
    /// The registration the sample belongs to.
    pub generation: u32,
    pub handler: HandlerResult,
    /// Its frames (jmethodID, bci; leaf first).
    pub frames: Vec<(usize, i32)>,
}

/// The place a handler's sample takes in its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    /// Samples waiting before it (0: the first place).
    pub waiting: usize,
    /// The slot's own regions holding their frames (bit `r` for region
    /// `r`; a failed, filtered or deferred sample holds none).
    pub busy: u32,
    /// The pool's region borrowed for it, when both of the slot's own were
    /// busy (a region number, [`OWN_REGIONS`] or more).
    pub borrowed: Option<usize>,
}

impl Place {
    /// The first place: nothing waits, both of the slot's regions are free.
    pub const FIRST: Place = Place { waiting: 0, busy: 0, borrowed: None };

    /// The first of the slot's own regions not in `busy`, if any.
    #[inline]
    pub fn free_own_region(&self) -> Option<usize> {
        (0..OWN_REGIONS).find(|region| self.busy & (1 << region) == 0)
    }
}

/// Regions all slots borrow from when both of their own hold waiting
/// samples: [`POOL_REGIONS`] regions of the slots' capacity, allocated once
/// by the sampler ([`Pool::prepare`]) and never freed; a bitmap says which
/// are borrowed. Handlers take with a compare-and-swap, the sampler gives
/// back; nobody waits.
pub(crate) struct Pool {
    frames: AtomicPtr<CallFrame>,
    /// Frames a region holds (set before `frames` is published).
    capacity: AtomicUsize,
    /// Bit `p`: region `p` is borrowed.
    taken: AtomicU64,
}

/// The pool.
pub(crate) static POOL: Pool = Pool::new();

impl Pool {
    const fn new() -> Pool {
        Pool { frames: AtomicPtr::new(std::ptr::null_mut()), capacity: AtomicUsize::new(0), taken: AtomicU64::new(0) }
    }

    /// Allocates the regions, of `capacity` frames each, if not done
    /// (the sampler thread only: one caller, so the check and the stores
    /// need no compare-and-swap).
    pub(crate) fn prepare(&self, capacity: usize) {
        if capacity == 0 || !self.frames.load(Ordering::Acquire).is_null() {
            return;
        }
        let buffer: Box<[CallFrame]> = vec![CallFrame::EMPTY; POOL_REGIONS * capacity].into_boxed_slice();
        self.capacity.store(capacity, Ordering::Relaxed);
        // Published to handlers by the release store; never freed.
        self.frames.store(Box::into_raw(buffer) as *mut CallFrame, Ordering::Release);
    }

    /// Borrows a free region (its region number, [`OWN_REGIONS`] or more),
    /// if the pool is there and one is free. Async-signal-safe: atomics,
    /// at most [`POOL_TRIES`] compare-and-swaps.
    #[inline]
    fn take(&self) -> Option<usize> {
        if self.frames.load(Ordering::Acquire).is_null() {
            return None;
        }
        let mut taken = self.taken.load(Ordering::Relaxed);
        for _ in 0..POOL_TRIES {
            let free = !taken & POOL_BITS;
            if free == 0 {
                return None;
            }
            let bit = free.trailing_zeros() as usize;
            match self.taken.compare_exchange_weak(taken, taken | 1 << bit, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return Some(OWN_REGIONS + bit),
                Err(now) => taken = now,
            }
        }
        None
    }

    /// Gives back region `region` if it is the pool's (after its frames
    /// were copied out, or never written).
    #[inline]
    fn give_back(&self, region: usize) {
        if let Some(bit) = Pool::index(region) {
            self.taken.fetch_and(!(1 << bit), Ordering::Release);
        }
    }

    /// The pool's index (its bit) of region number `region`, if it is one
    /// of the pool's.
    #[inline]
    fn index(region: usize) -> Option<usize> {
        region.checked_sub(OWN_REGIONS).filter(|&index| index < POOL_REGIONS)
    }

    /// Whether half of the pool's regions or more are borrowed: a handler
    /// that borrowed one then rings the sampler's doorbell.
    #[inline]
    fn running_low(&self) -> bool {
        self.taken.load(Ordering::Relaxed).count_ones() as usize >= POOL_REGIONS / 2
    }

    /// Regions borrowed now.
    #[cfg(test)]
    fn borrowed(&self) -> u32 {
        self.taken.load(Ordering::Relaxed).count_ones()
    }

    /// The pool's region `region` ([`OWN_REGIONS`] or more) and its capacity.
    #[inline]
    fn region(&self, region: usize) -> Option<(*mut CallFrame, usize)> {
        let index = Pool::index(region)?;
        let base = self.frames.load(Ordering::Acquire);
        let capacity = self.capacity.load(Ordering::Relaxed);
        // SAFETY: a non-null `frames` is a buffer of POOL_REGIONS regions of
        // `capacity` frames (stored before it), never freed.
        (!base.is_null()).then(|| (unsafe { base.add(index * capacity) }, capacity))
    }
}

/// One place's results, published by the handler's move to READY(k + 1).
struct Published {
    result: AtomicI32,
    walker: AtomicU8,
    broken: AtomicU8,
    region: AtomicU8,
    reused: AtomicU32,
    checksum: AtomicU64,
    handler_ns: AtomicU64,
    timed: AtomicBool,
    cpu_ns: AtomicU64,
    timer_signal: AtomicU64,
}

impl Published {
    const fn new() -> Published {
        Published {
            result: AtomicI32::new(0),
            walker: AtomicU8::new(0),
            broken: AtomicU8::new(0),
            region: AtomicU8::new(0),
            reused: AtomicU32::new(0),
            checksum: AtomicU64::new(0),
            handler_ns: AtomicU64::new(0),
            timed: AtomicBool::new(false),
            cpu_ns: AtomicU64::new(0),
            timer_signal: AtomicU64::new(0),
        }
    }

    /// Async-signal-safe: relaxed stores (the state's move publishes them).
    #[inline]
    fn store(&self, handler: &HandlerResult) {
        self.result.store(handler.result, Ordering::Relaxed);
        self.walker.store(handler.walker, Ordering::Relaxed);
        self.broken.store(handler.broken, Ordering::Relaxed);
        self.region.store(handler.region, Ordering::Relaxed);
        self.reused.store(handler.reused as u32, Ordering::Relaxed);
        self.checksum.store(handler.checksum, Ordering::Relaxed);
        self.handler_ns.store(handler.handler_ns, Ordering::Relaxed);
        self.timed.store(handler.timed, Ordering::Relaxed);
        self.cpu_ns.store(handler.cpu_ns, Ordering::Relaxed);
        self.timer_signal.store(handler.timer_signal, Ordering::Relaxed);
    }

    fn load(&self) -> HandlerResult {
        HandlerResult {
            result: self.result.load(Ordering::Relaxed),
            walker: self.walker.load(Ordering::Relaxed),
            broken: self.broken.load(Ordering::Relaxed),
            region: self.region.load(Ordering::Relaxed),
            reused: self.reused.load(Ordering::Relaxed) as u16,
            checksum: self.checksum.load(Ordering::Relaxed),
            handler_ns: self.handler_ns.load(Ordering::Relaxed),
            timed: self.timed.load(Ordering::Relaxed),
            cpu_ns: self.cpu_ns.load(Ordering::Relaxed),
            timer_signal: self.timer_signal.load(Ordering::Relaxed),
        }
    }
}

/// One thread's slot. All fields are atomics: the signal handler reads and
/// writes them without locks. The state changes only through the
/// transition methods below.
pub struct Slot {
    /// The state and the registration's generation ([`pack`]). The
    /// generation is bumped at every registration; signals carry it, stale
    /// ones are refused.
    word: AtomicU64,
    pub(crate) tid: AtomicI32,
    /// The thread's JNIEnv (AsyncGetCallTrace's `env_id`); may be a stand-in
    /// for threads discovered without one (see `register`).
    pub(crate) env: AtomicPtr<c_void>,
    /// How the thread was registered ([`ThreadOrigin`] as a byte).
    origin: AtomicU8,
    /// The slot's own regions of the frame buffer, `capacity` frames each.
    frames: AtomicPtr<CallFrame>,
    capacity: AtomicU32,
    /// What the thread's walks decoded and saw (allocated by the sampler at
    /// the slot's first request or before its thread's timer starts, kept
    /// with the slot; see `hotspot::history`).
    history: AtomicPtr<History>,
    /// Checksum of the registers at the thread's previous signal (0: none).
    /// Written only by the handler, on the thread itself.
    pub(crate) last_checksum: AtomicU64,
    /// The thread's CPU clock at its previous signal (0: none); handler only.
    pub(crate) last_cpu_ns: AtomicU64,
    /// The thread's voluntary context switches at the end of its previous
    /// handler if that handler filtered the sample ([`NO_SWITCHES`]:
    /// otherwise); handler only (`handler::blocked_once`).
    pub(crate) last_switches: AtomicU64,
    /// The thread's CPU clock as the sampler read it just before requesting
    /// this sample (0: not read). Written by [`Slot::request`] while the
    /// slot is IDLE, published by its move to REQUESTED.
    pub(crate) requested_cpu_ns: AtomicU64,
    /// The monotonic clock when the sampler requested this sample, if the
    /// sample may be deferred (0: it may not); written and published as
    /// `requested_cpu_ns` is.
    pub(crate) requested_wall_ns: AtomicU64,
    /// Signals the thread's CPU timers sent for this slot, taken or refused
    /// (slot busy), since the slot was made: each stands for one interval
    /// of the thread's CPU. Added to by the handler (one relaxed add, on
    /// the thread itself), which publishes its signal's number with the
    /// sample; read by the sampler when it opens a timer.
    pub(crate) timer_signals: AtomicU64,
    /// The processor's counter (`tsc`) when the handler of the thread's
    /// previous timer signal ended (0: not known); handler only
    /// ([`Slot::timer_handler_ended`]).
    last_timer_exit: AtomicU64,
    /// The waiting samples' results, the older first (READY(k): the first
    /// k).
    published: [Published; PLACES],
    /// The pool its handlers borrow regions from, in tests (a test's own);
    /// elsewhere [`POOL`] (see [`Slot::pool`]).
    #[cfg(test)]
    pool: &'static Pool,
}

impl Slot {
    pub(crate) const fn new() -> Slot {
        Slot {
            word: AtomicU64::new(0),
            tid: AtomicI32::new(0),
            env: AtomicPtr::new(std::ptr::null_mut()),
            origin: AtomicU8::new(0),
            frames: AtomicPtr::new(std::ptr::null_mut()),
            capacity: AtomicU32::new(0),
            history: AtomicPtr::new(std::ptr::null_mut()),
            last_checksum: AtomicU64::new(0),
            last_cpu_ns: AtomicU64::new(0),
            last_switches: AtomicU64::new(NO_SWITCHES),
            requested_cpu_ns: AtomicU64::new(0),
            requested_wall_ns: AtomicU64::new(0),
            timer_signals: AtomicU64::new(0),
            last_timer_exit: AtomicU64::new(0),
            published: [const { Published::new() }; PLACES],
            #[cfg(test)]
            pool: &POOL,
        }
    }

    /// The pool its handlers borrow regions from: [`POOL`] (a field would
    /// move the table of slots from `.bss` to `.data`, 13 MiB written at
    /// load), a test's own in tests.
    #[inline]
    fn pool(&self) -> &'static Pool {
        #[cfg(test)]
        return self.pool;
        #[cfg(not(test))]
        &POOL
    }

    /// Whether the slots' pool runs low ([`Pool::running_low`]).
    #[inline]
    pub(crate) fn pool_running_low(&self) -> bool {
        self.pool().running_low()
    }

    /// Whether the registered thread runs no Java code
    /// ([`ThreadOrigin::Native`]). Async-signal-safe: one atomic load.
    #[inline]
    pub(crate) fn is_native(&self) -> bool {
        self.origin.load(Ordering::Relaxed) == ThreadOrigin::Native as u8
    }

    /// The slot's state now.
    pub fn state(&self) -> SlotState {
        unpack(self.word.load(Ordering::Acquire)).1
    }

    /// Samples waiting for the sampler (READY; RETIRED: never drained), or
    /// waiting behind the one a handler writes (IN_HANDLER).
    #[cfg(test)]
    fn waiting(&self) -> usize {
        unpack(self.word.load(Ordering::Acquire)).2
    }

    /// The current registration's generation.
    pub(crate) fn generation(&self) -> u32 {
        unpack(self.word.load(Ordering::Acquire)).0
    }

    /// `from` -> `to` (neither with samples waiting) for whatever
    /// registration holds the slot now.
    fn transition(&self, from: SlotState, to: SlotState) -> bool {
        let (generation, state, waiting) = unpack(self.word.load(Ordering::Acquire));
        state == from && waiting == 0 && self.transition_of(generation, (from, 0), (to, 0))
    }

    /// `from` -> `to`, each a state and the samples waiting in it, for
    /// registration `generation` only: one compare-and-swap of the
    /// generation, the state and the count together.
    fn transition_of(&self, generation: u32, from: (SlotState, usize), to: (SlotState, usize)) -> bool {
        let (from, to) = (pack(generation, from.0, from.1), pack(generation, to.0, to.1));
        self.word.compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }

    /// FREE -> IDLE: a new registration of thread `tid`, with a frame
    /// buffer of two regions of at least `depth + 1` frames each (allocated
    /// here if the slot's is smaller, when the other regions are freed).
    /// Returns the registration's generation, or `None` if the slot is not
    /// FREE. Registration only (it holds the registry's lock, so nobody
    /// else moves a FREE slot).
    fn occupy(&self, tid: i32, env: *mut c_void, origin: ThreadOrigin, depth: usize) -> Option<u32> {
        if self.state() != SlotState::Free {
            return None;
        }
        let needed = depth + 1;
        if (self.capacity.load(Ordering::Relaxed) as usize) < needed {
            let buffer: Box<[CallFrame]> = vec![CallFrame::EMPTY; OWN_REGIONS * needed].into_boxed_slice();
            let old = self.frames.swap(Box::into_raw(buffer) as *mut CallFrame, Ordering::AcqRel);
            let old_capacity = self.capacity.swap(needed as u32, Ordering::AcqRel) as usize;
            if !old.is_null() {
                // SAFETY: the slot is FREE: no handler or sampler uses its
                // buffer, which was made by Box::into_raw of a boxed slice of
                // OWN_REGIONS regions of `old_capacity` frames.
                drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(old, OWN_REGIONS * old_capacity)) });
            }
        }
        self.tid.store(tid, Ordering::Relaxed);
        self.env.store(env, Ordering::Relaxed);
        self.origin.store(origin as u8, Ordering::Relaxed);
        self.last_checksum.store(0, Ordering::Relaxed);
        self.last_cpu_ns.store(0, Ordering::Relaxed);
        self.last_switches.store(NO_SWITCHES, Ordering::Relaxed);
        self.requested_cpu_ns.store(0, Ordering::Relaxed);
        self.requested_wall_ns.store(0, Ordering::Relaxed);
        self.last_timer_exit.store(0, Ordering::Relaxed);
        for place in &self.published {
            place.result.store(0, Ordering::Relaxed);
        }
        let generation = self.generation().wrapping_add(1);
        self.word.store(pack(generation, SlotState::Idle, 0), Ordering::Release);
        Some(generation)
    }

    /// A handler of the thread's timer ended at counter value `exit`
    /// (`None`: the handler was not timed by the counter, not yet
    /// calibrated or without the timer's perf page: nothing known).
    /// Handler only, on the thread. Async-signal-safe.
    #[inline]
    pub(crate) fn timer_handler_ended(&self, exit: Option<u64>) {
        self.last_timer_exit.store(exit.unwrap_or(0), Ordering::Relaxed);
    }

    /// What [`Slot::timer_handler_ended`] left: the counter (0: not known).
    #[inline]
    pub(crate) fn last_timer_handler(&self) -> u64 {
        self.last_timer_exit.load(Ordering::Relaxed)
    }

    /// Makes the pool its handlers borrow from, with regions as large as
    /// its own, if it is not made (sampler; [`Pool::prepare`]).
    pub(crate) fn prepare_pool(&self) {
        self.pool().prepare(self.capacity.load(Ordering::Relaxed) as usize);
    }

    /// IDLE -> REQUESTED (sampler), leaving the thread's CPU clock as the
    /// sampler read it (`cpu_now`) for the handler's has-it-run check, and
    /// the monotonic clock (`wall_now`, 0: the sample may not be deferred)
    /// for its off-CPU wait.
    pub(crate) fn request(&self, cpu_now: u64, wall_now: u64) -> bool {
        if self.state() != SlotState::Idle {
            return false;
        }
        // Published to the handler by the move to REQUESTED.
        self.prepare_history();
        // Published by the move to REQUESTED (only the sampler writes it,
        // and only while the slot is IDLE).
        self.requested_cpu_ns.store(cpu_now, Ordering::Relaxed);
        self.requested_wall_ns.store(wall_now, Ordering::Relaxed);
        self.transition(SlotState::Idle, SlotState::Requested)
    }

    /// Allocates the slot's walk history if it has none (sampler, while the
    /// slot is IDLE). The handler may use it once it is published to it: by
    /// the slot's move to REQUESTED, or by the timer's entry in
    /// `cpu_timer`'s table (stored with release ordering after this call,
    /// loaded with acquire ordering by the handler).
    pub(crate) fn prepare_history(&self) {
        if self.history.load(Ordering::Relaxed).is_null() {
            self.history.store(Box::into_raw(Box::default()), Ordering::Relaxed);
        }
    }

    /// REQUESTED -> IDLE (sampler): a request no handler answered in time,
    /// or whose signal could not be sent.
    pub(crate) fn withdraw(&self) -> bool {
        self.transition(SlotState::Requested, SlotState::Idle)
    }

    /// REQUESTED -> IN_HANDLER (the signal handler, on thread `tid`), if the
    /// signal was sent for this registration (`generation`) of this thread.
    /// The generation and the state move in one compare-and-swap: the tid
    /// read between the check and the move belongs to this registration,
    /// or the move fails. Async-signal-safe: atomics only.
    #[inline]
    pub(crate) fn enter_handler(&self, generation: u32, tid: i32) -> bool {
        self.word.load(Ordering::Acquire) == pack(generation, SlotState::Requested, 0)
            && self.tid.load(Ordering::Relaxed) == tid
            && self.transition_of(generation, (SlotState::Requested, 0), (SlotState::InHandler, 0))
    }

    /// IDLE -> IN_HANDLER(0) or READY(k) -> IN_HANDLER(k) (the signal
    /// handler, on thread `tid`, at a signal of its own CPU timer for
    /// registration `generation`): the timer asks for a sample whenever the
    /// thread's interval of CPU runs out; the slot takes it in its first
    /// place if no sample waits, else behind them, in a region of its own
    /// or one borrowed from the pool (see the module documentation).
    /// Checked as [`Slot::enter_handler`] checks. Async-signal-safe:
    /// atomics only.
    #[inline]
    pub(crate) fn claim(&self, generation: u32, tid: i32) -> Option<Place> {
        if self.tid.load(Ordering::Relaxed) != tid {
            return None;
        }
        // Twice at most: the sampler may drain the waiting samples between
        // the load and the move (READY -> IDLE); a slot the second look
        // finds DRAINING is refused as busy.
        for _ in 0..2 {
            let (current, state, waiting) = unpack(self.word.load(Ordering::Acquire));
            let free = match state {
                SlotState::Idle => true,
                SlotState::Ready => waiting < PLACES,
                _ => false,
            };
            if current != generation || !free {
                return None;
            }
            // Written by this thread's earlier handlers; nobody else
            // writes them while they wait.
            let busy = self.own_regions_busy(waiting);
            let borrowed = if busy.count_ones() as usize >= OWN_REGIONS { Some(self.pool().take()?) } else { None };
            if self.transition_of(generation, (state, waiting), (SlotState::InHandler, waiting)) {
                return Some(Place { waiting, busy, borrowed });
            }
            if let Some(region) = borrowed {
                self.pool().give_back(region);
            }
        }
        None
    }

    /// The slot's own regions holding the frames of the first `waiting`
    /// samples (bit `r` for region `r`).
    #[inline]
    fn own_regions_busy(&self, waiting: usize) -> u32 {
        self.published.iter().take(waiting).fold(0, |busy, sample| {
            let region = sample.region.load(Ordering::Relaxed) as usize;
            if sample.result.load(Ordering::Relaxed) > 0 && region < OWN_REGIONS {
                busy | 1 << region
            } else {
                busy
            }
        })
    }

    /// Region `region` of the frame buffer (the slot's own, or the pool's)
    /// and its capacity in frames, for the handler that entered the slot
    /// ([`Slot::enter_handler`], [`Slot::claim`]): it alone writes the
    /// region its place gives it until [`Slot::publish`]. `None` for a
    /// region that is not there.
    #[inline]
    pub(crate) fn region(&self, region: usize) -> Option<(*mut CallFrame, usize)> {
        if region >= OWN_REGIONS {
            return self.pool().region(region);
        }
        let base = self.frames.load(Ordering::Relaxed);
        let capacity = self.capacity.load(Ordering::Relaxed) as usize;
        // SAFETY: `base` is null or a buffer of OWN_REGIONS regions of
        // `capacity` frames, kept while the slot is registered.
        (!base.is_null()).then(|| (unsafe { base.add(region * capacity) }, capacity))
    }

    /// The walk history, for the handler that entered the slot (null before
    /// the slot's first request or timer): a `Box` made by
    /// [`Slot::prepare_history`], never
    /// freed while the slot exists, used only by the slot's handler while it
    /// is IN_HANDLER.
    #[inline]
    pub(crate) fn handler_history(&self) -> *mut History {
        self.history.load(Ordering::Relaxed)
    }

    /// IN_HANDLER(k) -> READY(k + 1) (the signal handler): publishes the
    /// result and the frames written into its region ([`Slot::region`]).
    /// Async-signal-safe.
    #[inline]
    pub(crate) fn publish(&self, handler: HandlerResult) -> bool {
        let (generation, state, waiting) = unpack(self.word.load(Ordering::Acquire));
        let Some(place) = self.published.get(waiting).filter(|_| state == SlotState::InHandler) else {
            self.pool().give_back(handler.region as usize);
            return false;
        };
        place.store(&handler);
        self.transition_of(generation, (state, waiting), (SlotState::Ready, waiting + 1))
    }

    /// READY(k) -> DRAINING -> IDLE (sampler): copies the k waiting
    /// samples out, the older first. Empty if the slot holds none.
    pub(crate) fn drain(&self, kinds: bool) -> Vec<Drained> {
        let (generation, state, waiting) = unpack(self.word.load(Ordering::Acquire));
        if state != SlotState::Ready || !self.transition_of(generation, (state, waiting), (SlotState::Draining, 0)) {
            return Vec::new();
        }
        let drained = self.published[..waiting.min(PLACES)]
            .iter()
            .map(|place| {
                let handler = place.load();
                let frames = self.frames_of(&handler, kinds);
                self.pool().give_back(handler.region as usize);
                Drained { generation, frames, handler }
            })
            .collect();
        // Only the sampler moves a DRAINING slot (retiring waits it out).
        self.word.store(pack(generation, SlotState::Idle, 0), Ordering::Release);
        drained
    }

    /// The frames a drained sample's handler wrote (sampler, DRAINING),
    /// raw: with their kinds packed into their bcis when `kinds`.
    fn frames_of(&self, handler: &HandlerResult, kinds: bool) -> Vec<(usize, i32)> {
        let Some((region, capacity)) = self.region(handler.region as usize).filter(|_| handler.result > 0) else {
            return Vec::new();
        };
        let count = (handler.result as usize).min(capacity);
        // SAFETY: the slot is DRAINING, so its handlers are done and no one
        // else touches the buffer, whose region holds `capacity` frames of
        // which the handler wrote `result`.
        let written: &[CallFrame] = unsafe { std::slice::from_raw_parts(region, count) };
        written.iter().map(|frame| frame.raw(kinds)).collect()
    }

    /// Any registered state -> RETIRED, for registration `generation`:
    /// waits out a handler or a drain in progress (microseconds). Returns
    /// whether this call retired it (false: already retired, freed or
    /// reused), so every registration's end is counted once. Never called
    /// by the handler; the sampler calls it only for threads that are gone
    /// (no handler can be running) and never while it drains.
    fn retire(&self, generation: u32) -> bool {
        loop {
            let (current, state, waiting) = unpack(self.word.load(Ordering::Acquire));
            if current != generation {
                return false;
            }
            match state {
                SlotState::Free | SlotState::Retired => return false,
                SlotState::Draining | SlotState::InHandler => std::thread::yield_now(),
                _ => {
                    // The samples of a READY slot stay counted: releasing
                    // gives back their borrowed regions.
                    let left = if state == SlotState::Ready { waiting } else { 0 };
                    if self.transition_of(generation, (state, waiting), (SlotState::Retired, left)) {
                        return true;
                    }
                }
            }
        }
    }

    /// RETIRED -> FREE (sampler): the sampler has forgotten the thread;
    /// registration may reuse the slot. The regions its undrained samples
    /// borrowed go back to the pool. Returns how many of those samples
    /// its thread's own timer took (`None`: the slot was not RETIRED);
    /// a sample the sampler's signal asked for is accounted by its request.
    pub(crate) fn release(&self) -> Option<usize> {
        let (generation, state, waiting) = unpack(self.word.load(Ordering::Acquire));
        if state != SlotState::Retired {
            return None;
        }
        let mut timed = 0;
        for sample in self.published.iter().take(waiting) {
            self.pool().give_back(sample.region.load(Ordering::Relaxed) as usize);
            timed += usize::from(sample.timed.load(Ordering::Relaxed));
        }
        self.transition_of(generation, (state, waiting), (SlotState::Free, 0)).then_some(timed)
    }
}

/// The table. A `static` so the signal handler reaches it with no
/// initialisation, allocation or lock.
pub(crate) static SLOTS: [Slot; MAX_THREADS] = [const { Slot::new() }; MAX_THREADS];

/// One past the highest slot index ever used (the sampler scans below it).
pub(crate) static HIGH_WATER: AtomicUsize = AtomicUsize::new(0);

/// How a thread came to be registered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ThreadOrigin {
    /// A JVMTI ThreadStart event (or VMInit for the main thread): the
    /// thread's own JNIEnv is known.
    Started,
    /// Found in `/proc/self/task` (late attach, or started before VMInit).
    Discovered,
    /// A thread that runs no Java code (HotSpot's own, pcct's, a native
    /// library's; `threads=all`), found in `/proc/self/task`: its handler
    /// walks nothing, and its samples stand under its kind
    /// (`thread_kinds`).
    Native,
}

impl ThreadOrigin {
    fn from_u8(value: u8) -> ThreadOrigin {
        match value {
            v if v == ThreadOrigin::Discovered as u8 => ThreadOrigin::Discovered,
            v if v == ThreadOrigin::Native as u8 => ThreadOrigin::Native,
            _ => ThreadOrigin::Started,
        }
    }
}

/// Identifies a registered thread: its slot and the registration generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ThreadKey {
    pub slot: usize,
    pub generation: u32,
}

struct RegistryInner {
    /// The registration of each tid. An entry may be stale (its slot was
    /// retired by the sampler, which never takes this lock): readers check
    /// it with [`is_current`], and the next registration of the tid replaces it.
    by_tid: HashMap<i32, ThreadKey>,
    /// Where the next search for a FREE slot starts.
    next_free: usize,
    depth: usize,
}

/// Registration and retirement of threads (never called from a handler).
///
/// Its mutex is taken only by registering and retiring threads (JVMTI
/// ThreadStart/ThreadEnd, discovery) and by readers of the tid map; the
/// sampler thread never takes it: it frees retired slots (RETIRED -> FREE)
/// and retires vanished discovered threads with atomics alone, so a thread
/// holding the lock (a ThreadStart storm, a registrant descheduled while it
/// allocates a frame buffer) can never stall a tick.
pub struct Registry {
    inner: Mutex<RegistryInner>,
    /// Registrations so far, and registrations ended (retired); their
    /// difference is the number of registered threads. Counted here, not by
    /// the sampler: most short-lived threads start and end between two ticks.
    registered_total: AtomicU64,
    ended_total: AtomicU64,
}

impl Registry {
    /// A registry whose threads get frame buffers of `depth` frames.
    pub fn new(depth: usize) -> Registry {
        Registry {
            inner: Mutex::new(RegistryInner { by_tid: HashMap::new(), next_free: 0, depth }),
            registered_total: AtomicU64::new(0),
            ended_total: AtomicU64::new(0),
        }
    }

    /// Registers thread `tid`. Called on the thread itself at ThreadStart /
    /// VMInit, or by the sampler for discovered threads. A thread already
    /// registered under the same tid (a reused tid whose end we missed) is
    /// retired first.
    pub fn register(&self, tid: i32, env: *mut c_void, origin: ThreadOrigin) -> Result<ThreadKey> {
        let mut inner = self.inner.lock();
        if let Some(old) = inner.by_tid.remove(&tid) {
            self.count_end(retire(old));
        }
        let index = inner.find_free_slot()?;
        let generation =
            SLOTS[index].occupy(tid, env, origin, inner.depth).expect("a FREE slot stays FREE under the lock");
        if index >= HIGH_WATER.load(Ordering::Acquire) {
            HIGH_WATER.store(index + 1, Ordering::Release);
        }
        inner.next_free = index + 1;
        let key = ThreadKey { slot: index, generation };
        inner.by_tid.insert(tid, key);
        self.registered_total.fetch_add(1, Ordering::Relaxed);
        // Its timer opens at the sampler's next drain: now.
        crate::doorbell::DOORBELL.ring();
        Ok(key)
    }

    /// Retires thread `tid` (its ThreadEnd). The sampler frees the slot.
    pub fn retire(&self, tid: i32) -> bool {
        let mut inner = self.inner.lock();
        match inner.by_tid.remove(&tid) {
            Some(key) => self.count_end(retire(key)),
            None => false,
        }
    }

    /// Retires the registration `key` if it is still the current one, for
    /// threads that end without a ThreadEnd (threads found in
    /// `/proc/self/task`): the sampler calls it when it finds the thread
    /// gone. Lock-free (the tid's map entry goes stale, see
    /// [`RegistryInner::by_tid`]); it cannot retire a newer thread that
    /// reused the slot, whose generation differs.
    pub(crate) fn retire_key(&self, key: ThreadKey) -> bool {
        self.count_end(retire(key))
    }

    /// Returns a retired slot to the free list (sampler only; lock-free: a
    /// registration finds FREE slots by looking): [`Slot::release`].
    pub(crate) fn release(&self, slot: usize) -> Option<usize> {
        SLOTS[slot].release()
    }

    fn count_end(&self, retired: bool) -> bool {
        if retired {
            self.ended_total.fetch_add(1, Ordering::Relaxed);
        }
        retired
    }

    /// The key of a registered tid.
    pub fn key_of(&self, tid: i32) -> Option<ThreadKey> {
        self.inner.lock().by_tid.get(&tid).copied().filter(is_current)
    }

    /// How the thread in `slot` was registered (read without a lock).
    pub fn origin(&self, slot: usize) -> Option<ThreadOrigin> {
        let slot = SLOTS.get(slot)?;
        match slot.state() {
            SlotState::Free | SlotState::Retired => None,
            _ => Some(ThreadOrigin::from_u8(slot.origin.load(Ordering::Relaxed))),
        }
    }

    /// Registered thread ids.
    pub fn tids(&self) -> Vec<i32> {
        self.inner.lock().by_tid.iter().filter(|(_, key)| is_current(key)).map(|(&tid, _)| tid).collect()
    }

    /// Threads registered now.
    pub fn registered(&self) -> usize {
        self.registered_total().saturating_sub(self.ended_total()) as usize
    }

    /// Threads registered so far (every registration, reused tids included).
    pub fn registered_total(&self) -> u64 {
        self.registered_total.load(Ordering::Relaxed)
    }

    /// Registrations that ended (ThreadEnd, a thread found gone, or a tid
    /// registered again).
    pub fn ended_total(&self) -> u64 {
        self.ended_total.load(Ordering::Relaxed)
    }
}

impl RegistryInner {
    /// A FREE slot for a registration: the first one found from where the
    /// last search ended, else a slot never used. Only registrations (which
    /// hold the registry's lock) move a slot out of FREE, so the slot found
    /// stays FREE until the caller occupies it.
    fn find_free_slot(&self) -> Result<usize> {
        let high = HIGH_WATER.load(Ordering::Acquire);
        let found = (0..high)
            .map(|offset| (self.next_free + offset) % high)
            .find(|&index| SLOTS[index].state() == SlotState::Free);
        match found {
            Some(index) => Ok(index),
            None if high < MAX_THREADS => Ok(high),
            None => Err(SamplerError::TooManyThreads { limit: MAX_THREADS }),
        }
    }
}

/// Whether `key` is still its slot's registration (not retired, not reused).
fn is_current(key: &ThreadKey) -> bool {
    let slot = &SLOTS[key.slot];
    slot.generation() == key.generation && !matches!(slot.state(), SlotState::Free | SlotState::Retired)
}

/// Retires the registration `key` (see [`Slot::retire`]).
fn retire(key: ThreadKey) -> bool {
    SLOTS[key.slot].retire(key.generation)
}

/// The CPU-time clock of thread `tid` (what `pthread_getcpuclockid` returns
/// for it: `MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)`).
pub fn cpu_clock_of(tid: i32) -> libc::clockid_t {
    ((!tid) << 3) | 6
}

/// CPU time thread `tid` has used, in nanoseconds; `None` once it is gone.
pub fn thread_cpu_ns(tid: i32) -> Option<u64> {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec we own.
    let rc = unsafe { libc::clock_gettime(cpu_clock_of(tid), &mut now) };
    (rc == 0).then(|| now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64)
}

/// CPU time the calling thread has used, in nanoseconds.
pub fn current_thread_cpu_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// The calling thread's id.
pub fn current_tid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_clock_formula_matches_pthread() {
        let mut clock: libc::clockid_t = 0;
        // SAFETY: pthread_self is always valid; the out pointer is ours.
        let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
        assert_eq!(rc, 0);
        assert_eq!(clock, cpu_clock_of(current_tid()));
        assert!(thread_cpu_ns(current_tid()).is_some());
    }

    const TID: i32 = 4242;
    const DEPTH: usize = 4;

    /// A slot occupied by thread [`TID`] (a local slot, not in the table),
    /// with a pool of its own, not made yet.
    fn occupied() -> (Slot, u32) {
        let slot = Slot { pool: Box::leak(Box::new(Pool::new())), ..Slot::new() };
        let generation = slot.occupy(TID, std::ptr::null_mut(), ThreadOrigin::Started, DEPTH).expect("free");
        (slot, generation)
    }

    fn result(frames: i32) -> HandlerResult {
        HandlerResult {
            result: frames,
            walker: 1,
            broken: 0,
            region: 0,
            reused: 0,
            checksum: 0xC0FFEE,
            handler_ns: 1234,
            timed: false,
            cpu_ns: 0,
            timer_signal: 0,
        }
    }

    /// Writes `count` frames into the slot's first region, as a handler would.
    fn write_frames(slot: &Slot, count: usize) {
        write_frames_at(slot, 0, count, 0x100);
    }

    /// Writes `count` frames, methods from `first_method` on, into region `region`.
    fn write_frames_at(slot: &Slot, region: usize, count: usize, first_method: usize) {
        let (buffer, capacity) = slot.region(region).expect("a region the slot has");
        assert!(count <= capacity);
        for index in 0..count {
            // SAFETY: index < capacity; the test owns the slot's region
            // (IN_HANDLER).
            unsafe { *buffer.add(index) = CallFrame::new(index as i32, (first_method + index) as *mut c_void) };
        }
    }

    /// The samples a drain copies out: their results, and their frames.
    fn drained(slot: &Slot) -> Vec<(HandlerResult, Vec<(usize, i32)>)> {
        slot.drain(false).into_iter().map(|sample| (sample.handler, sample.frames)).collect()
    }

    #[test]
    fn a_sample_goes_round_the_machine() {
        let (slot, generation) = occupied();
        assert_eq!(slot.state(), SlotState::Idle);
        assert_eq!(slot.region(1).map(|(_, capacity)| capacity), Some(DEPTH + 1));
        assert_eq!(slot.region(OWN_REGIONS), None, "no pool yet");
        assert!(slot.request(777, 777));
        assert_eq!(slot.state(), SlotState::Requested);
        assert_eq!(slot.requested_cpu_ns.load(Ordering::Relaxed), 777);
        assert!(slot.enter_handler(generation, TID));
        assert_eq!(slot.state(), SlotState::InHandler);
        write_frames(&slot, 3);
        assert!(slot.publish(result(3)));
        assert_eq!(slot.state(), SlotState::Ready);
        let frames = vec![(0x100, 0), (0x101, 1), (0x102, 2)];
        assert_eq!(slot.drain(false), vec![Drained { generation, handler: result(3), frames }]);
        assert_eq!(slot.state(), SlotState::Idle);
    }

    #[test]
    fn a_timer_sample_claims_an_idle_slot_of_its_thread_only() {
        let (slot, generation) = occupied();
        assert_eq!(slot.claim(generation, TID + 1), None, "another thread");
        assert_eq!(slot.claim(generation.wrapping_add(1), TID), None, "another registration");
        assert_eq!(slot.claim(generation, TID), Some(Place::FIRST));
        assert_eq!(slot.state(), SlotState::InHandler);
        write_frames(&slot, 2);
        assert!(slot.publish(HandlerResult { timed: true, cpu_ns: 5_000_000, ..result(2) }));
        let timed = drained(&slot).iter().map(|(handler, _)| (handler.timed, handler.cpu_ns)).collect::<Vec<_>>();
        assert_eq!(timed, vec![(true, 5_000_000)]);
        assert_eq!(slot.claim(generation, TID), Some(Place::FIRST));
        // A requested slot is the sampler's signal's, not the timer's.
        let (slot, generation) = occupied();
        assert!(slot.request(1, 1));
        assert_eq!(slot.claim(generation, TID), None);
    }

    #[test]
    fn a_timer_sample_waits_behind_an_undrained_one_and_a_third_is_refused() {
        let (slot, generation) = occupied();
        let first = HandlerResult { timed: true, region: 1, timer_signal: 7, ..result(2) };
        assert_eq!(slot.claim(generation, TID), Some(Place::FIRST));
        write_frames_at(&slot, 1, 2, 0x100);
        assert!(slot.publish(first));
        // Not drained yet: the next signal takes the second place, told
        // where the waiting sample's frames are.
        assert_eq!(slot.claim(generation, TID + 1), None, "another thread");
        assert_eq!(slot.claim(generation, TID), Some(Place { waiting: 1, busy: 0b10, borrowed: None }));
        assert_eq!((slot.state(), slot.waiting()), (SlotState::InHandler, 1));
        assert!(slot.drain(false).is_empty(), "the first sample waits while the second is written");
        assert!(!slot.enter_handler(generation, TID), "IN_HANDLER(1) -> IN_HANDLER(0)");
        write_frames_at(&slot, 0, 3, 0x200);
        let second = HandlerResult { timed: true, region: 0, timer_signal: 8, ..result(3) };
        assert!(slot.publish(second));
        assert_eq!((slot.state(), slot.waiting()), (SlotState::Ready, 2));
        // Both of the slot's regions taken and no pool: the next signal is
        // refused.
        assert_eq!(slot.claim(generation, TID), None);
        assert!(!slot.request(1, 1), "READY(2) -> REQUESTED");
        // Drained together, the older first, each with its own frames.
        let both = drained(&slot);
        assert_eq!(
            both,
            vec![(first, vec![(0x100, 0), (0x101, 1)]), (second, vec![(0x200, 0), (0x201, 1), (0x202, 2)]),]
        );
        assert_eq!(slot.state(), SlotState::Idle);
        assert_eq!(slot.claim(generation, TID), Some(Place::FIRST));
    }

    /// Takes a place in `slot` as a timer's handler would, writes `count`
    /// frames from `first_method` on into its region, and publishes.
    fn take_place(slot: &Slot, generation: u32, count: usize, first_method: usize) -> Option<(Place, HandlerResult)> {
        let place = slot.claim(generation, TID)?;
        let region = place.borrowed.unwrap_or_else(|| place.free_own_region().expect("free"));
        write_frames_at(slot, region, count, first_method);
        let handler = HandlerResult {
            timed: true,
            region: region as u8,
            timer_signal: first_method as u64,
            ..result(count as i32)
        };
        assert!(slot.publish(handler));
        Some((place, handler))
    }

    #[test]
    fn samples_behind_the_slots_own_two_borrow_from_the_pool_until_drained() {
        let (slot, generation) = occupied();
        slot.prepare_pool();
        let mut published = Vec::new();
        for place in 0..PLACES {
            let (taken, handler) = take_place(&slot, generation, place % 3 + 1, 0x100 * (place + 1)).expect("a place");
            assert_eq!(taken.waiting, place);
            assert_eq!(taken.borrowed.is_some(), place >= OWN_REGIONS, "place {place}");
            published.push(handler);
        }
        assert_eq!((slot.state(), slot.waiting()), (SlotState::Ready, PLACES));
        assert_eq!(slot.pool.borrowed() as usize, PLACES - OWN_REGIONS);
        assert_eq!(slot.claim(generation, TID), None, "every place taken");
        let all = drained(&slot);
        assert_eq!(all.len(), PLACES);
        for (place, (handler, frames)) in all.into_iter().enumerate() {
            let first = 0x100 * (place + 1);
            let expected: Vec<(usize, i32)> = (0..place % 3 + 1).map(|index| (first + index, index as i32)).collect();
            assert_eq!((handler, frames), (published[place], expected), "place {place}");
        }
        assert_eq!(slot.pool.borrowed(), 0, "given back at the drain");
    }

    #[test]
    fn an_empty_pool_refuses_and_a_released_slot_gives_its_borrowed_regions_back() {
        let (slot, generation) = occupied();
        slot.prepare_pool();
        // Another slot of the same pool takes all of it but one region.
        slot.pool.taken.store(u64::MAX >> 1, Ordering::Relaxed);
        for place in 0..OWN_REGIONS + 1 {
            assert!(take_place(&slot, generation, 1, place + 1).is_some(), "place {place}");
        }
        assert_eq!(slot.claim(generation, TID), None, "the pool is empty");
        // The thread ends with its samples undrained.
        assert!(slot.retire(generation));
        assert_eq!((slot.state(), slot.waiting()), (SlotState::Retired, OWN_REGIONS + 1));
        assert!(slot.drain(false).is_empty());
        assert_eq!(slot.release(), Some(OWN_REGIONS + 1), "its timer's samples, to be counted as retired");
        assert_eq!(slot.pool.taken.load(Ordering::Relaxed), u64::MAX >> 1, "its region given back, the others' kept");
    }

    #[test]
    fn a_claim_that_loses_to_a_drain_gives_its_borrowed_region_back() {
        let (slot, generation) = occupied();
        slot.prepare_pool();
        assert!(take_place(&slot, generation, 1, 1).is_some() && take_place(&slot, generation, 1, 2).is_some());
        // A third handler borrows, then finds the slot moved (as if the
        // sampler had drained it between its look and its move).
        let borrowed = slot.pool.take().expect("a region");
        assert!(!slot.transition_of(generation, (SlotState::Ready, 3), (SlotState::InHandler, 3)));
        slot.pool.give_back(borrowed);
        assert_eq!(slot.pool.borrowed(), 0);
        // The handler's own publish of a sample it could not place gives its region back.
        let stray = HandlerResult { region: borrowed as u8, ..result(1) };
        let _ = slot.pool.take();
        assert!(!slot.publish(stray), "READY -> READY");
        assert_eq!(slot.pool.borrowed(), 0);
    }

    #[test]
    fn the_pools_regions_are_as_large_as_the_slots() {
        let (slot, _) = occupied();
        slot.prepare_pool();
        let regions: Vec<_> = (OWN_REGIONS..OWN_REGIONS + POOL_REGIONS).map(|region| slot.region(region)).collect();
        assert!(regions.iter().all(|region| region.is_some_and(|(_, capacity)| capacity == DEPTH + 1)));
        assert_eq!(slot.region(OWN_REGIONS + POOL_REGIONS), None);
        // Made once: a second call keeps the first regions.
        let first = regions[0].map(|(frames, _)| frames);
        slot.prepare_pool();
        assert_eq!(slot.region(OWN_REGIONS).map(|(frames, _)| frames), first);
    }

    #[test]
    fn a_waiting_sample_without_frames_leaves_its_region_free() {
        let (slot, generation) = occupied();
        assert_eq!(slot.claim(generation, TID), Some(Place::FIRST));
        assert!(slot.publish(HandlerResult { region: 1, ..result(-5) }));
        assert_eq!(slot.claim(generation, TID), Some(Place { waiting: 1, busy: 0, borrowed: None }));
    }

    #[test]
    fn two_waiting_samples_are_retired_with_their_thread() {
        let (slot, generation) = occupied();
        assert_eq!(slot.claim(generation, TID), Some(Place::FIRST));
        assert!(slot.publish(result(1)));
        assert!(matches!(slot.claim(generation, TID), Some(Place { waiting: 1, borrowed: None, .. })));
        // Retiring waits out the second handler as it does the first.
        let slot = retired_behind_handler(slot, generation);
        assert!(slot.drain(false).is_empty(), "retired samples are not drained");
        assert_eq!(slot.claim(generation, TID), None);
    }

    #[test]
    fn failed_and_filtered_samples_carry_no_frames() {
        let (slot, generation) = occupied();
        for code in [-5, RESULT_FILTERED] {
            assert!(slot.request(1, 1) && slot.enter_handler(generation, TID));
            write_frames(&slot, 2);
            assert!(slot.publish(result(code)));
            assert_eq!(drained(&slot), vec![(result(code), Vec::new())]);
        }
    }

    #[test]
    fn a_result_claiming_more_frames_than_the_buffer_holds_is_cut_to_the_buffer() {
        let (slot, generation) = occupied();
        assert!(slot.request(1, 1) && slot.enter_handler(generation, TID));
        write_frames(&slot, DEPTH + 1);
        assert!(slot.publish(result(1000)));
        assert_eq!(drained(&slot)[0].1.len(), DEPTH + 1);
    }

    #[test]
    fn an_unanswered_request_is_withdrawn() {
        let (slot, generation) = occupied();
        assert!(slot.request(1, 1));
        assert!(slot.withdraw());
        assert_eq!(slot.state(), SlotState::Idle);
        // A signal arriving after the withdrawal finds nothing to answer.
        assert!(!slot.enter_handler(generation, TID));
    }

    #[test]
    fn a_retired_slot_is_released_and_occupied_again_with_a_new_generation() {
        let (slot, generation) = occupied();
        assert!(slot.retire(generation));
        assert_eq!(slot.state(), SlotState::Retired);
        assert!(!slot.retire(generation), "an end is counted once");
        assert!(slot.release().is_some());
        assert_eq!(slot.state(), SlotState::Free);
        let next = slot.occupy(TID + 1, std::ptr::null_mut(), ThreadOrigin::Discovered, DEPTH).expect("free again");
        assert_ne!(next, generation);
        assert!(!slot.retire(generation), "the old registration cannot retire the new one");
        assert_eq!(slot.state(), SlotState::Idle);
    }

    #[test]
    fn requested_and_ready_slots_can_be_retired() {
        let (slot, generation) = occupied();
        assert!(slot.request(1, 1));
        assert!(slot.retire(generation));
        assert!(!slot.enter_handler(generation, TID), "a late signal finds a retired slot");
        let (slot, generation) = occupied();
        assert!(slot.request(1, 1) && slot.enter_handler(generation, TID));
        assert!(slot.publish(result(1)));
        assert!(slot.retire(generation));
        assert!(slot.drain(false).is_empty(), "a retired sample is not drained");
    }

    #[test]
    fn retiring_waits_out_a_handler_in_progress() {
        let (slot, generation) = occupied();
        assert!(slot.request(1, 1) && slot.enter_handler(generation, TID));
        // However long the handler takes, retiring cannot overtake it: the
        // slot stays IN_HANDLER until the handler publishes.
        retired_behind_handler(slot, generation);
    }

    /// Retires `slot` from another thread while its handler writes a
    /// sample (IN_HANDLER, behind waiting samples or not): the slot stays
    /// there until the handler publishes, then it is retired. Returns the
    /// slot.
    fn retired_behind_handler(slot: Slot, generation: u32) -> std::sync::Arc<Slot> {
        let slot = std::sync::Arc::new(slot);
        let retirer = {
            let slot = std::sync::Arc::clone(&slot);
            std::thread::spawn(move || slot.retire(generation))
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(slot.state(), SlotState::InHandler);
        assert!(slot.publish(result(1)));
        assert!(retirer.join().expect("retirer"));
        assert_eq!(slot.state(), SlotState::Retired);
        slot
    }

    #[test]
    fn illegal_transitions_are_refused() {
        let free = Slot::new();
        assert!(!free.request(1, 1), "FREE -> REQUESTED");
        assert!(!free.withdraw(), "FREE -> IDLE by withdrawal");
        assert!(!free.enter_handler(0, TID), "FREE -> IN_HANDLER");
        assert!(!free.publish(result(1)), "FREE -> READY");
        assert!(free.drain(false).is_empty(), "FREE -> DRAINING");
        assert_eq!(free.claim(0, 0), None, "FREE -> IN_HANDLER by a timer");
        assert!(free.release().is_none(), "FREE -> FREE by release");
        assert!(!free.retire(0), "FREE -> RETIRED");

        let (slot, generation) = occupied();
        assert!(slot.occupy(1, std::ptr::null_mut(), ThreadOrigin::Started, DEPTH).is_none(), "IDLE -> IDLE");
        assert!(!slot.enter_handler(generation, TID), "IDLE -> IN_HANDLER without a request");
        assert!(!slot.publish(result(1)), "IDLE -> READY");
        assert!(!slot.withdraw(), "IDLE -> IDLE by withdrawal");
        assert!(slot.release().is_none(), "IDLE -> FREE without retiring");
        assert!(slot.request(1, 1));
        assert!(!slot.request(1, 1), "REQUESTED -> REQUESTED");
        assert!(!slot.enter_handler(generation.wrapping_add(1), TID), "a stale generation");
        assert!(!slot.enter_handler(generation, TID + 1), "another thread");
        assert!(slot.enter_handler(generation, TID));
        assert!(!slot.enter_handler(generation, TID), "IN_HANDLER -> IN_HANDLER");
        assert!(!slot.withdraw(), "IN_HANDLER -> IDLE");
        assert!(slot.drain(false).is_empty(), "IN_HANDLER -> DRAINING");
        assert_eq!(slot.claim(generation, TID), None, "IN_HANDLER(0) -> IN_HANDLER(1)");
        assert!(slot.publish(result(1)));
        assert!(!slot.publish(result(1)), "READY -> READY");
        assert!(!slot.request(1, 1), "READY -> REQUESTED");
        assert!(!slot.enter_handler(generation, TID), "READY -> IN_HANDLER by the sampler's signal");
        assert_eq!(slot.drain(false).len(), 1);
        assert!(slot.drain(false).is_empty(), "IDLE -> DRAINING");
    }

    /// README, "Memory": a slot of 1.6 KiB per live thread.
    #[test]
    fn a_slot_takes_about_one_and_a_half_kibibytes() {
        let size = std::mem::size_of::<Slot>();
        assert!((1500..=1800).contains(&size), "{size} bytes");
    }

    #[test]
    fn states_round_trip_through_their_numbers() {
        for state in SlotState::ALL {
            assert_eq!(SlotState::from_u32(state as u32), state);
            for waiting in 0..=PLACES {
                assert_eq!(unpack(pack(0xFFFF_FFFF, state, waiting)), (0xFFFF_FFFF, state, waiting));
            }
        }
    }
}
