//! The thread registry: a fixed table of thread slots, shared by the thread
//! itself (registration, its signal handler), the sampler thread and
//! nobody else.
//!
//! A slot is a one-element mailbox between a thread's signal handler and the
//! sampler thread. Its `state` moves:
//!
//! ```text
//! FREE --register--> IDLE --sampler: request--> REQUESTED --handler--> IN_HANDLER
//!                     ^                            |                       |
//!                     |   (request never answered) |                       v
//!                     +----------------------------+      IDLE <--sampler-- READY
//!                                                          (DRAINING while read)
//! any registered state --ThreadEnd--> RETIRED --sampler--> FREE
//! ```
//!
//! Only the handler moves REQUESTED -> IN_HANDLER -> READY; only the sampler
//! moves IDLE -> REQUESTED, READY -> DRAINING -> IDLE and RETIRED -> FREE;
//! only registration moves FREE -> IDLE and anything -> RETIRED. Every move
//! is a compare-and-swap, so a late signal, a thread that ends while it is
//! being sampled, or a reused thread id can at worst lose one sample (which
//! is counted); it can never make two parties use one buffer at once.
//!
//! Frame buffers are allocated at registration (never in the handler) and
//! kept with their slot for the next thread, so memory is bounded by the
//! peak number of live threads times the stack depth.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::agct::CallFrame;
use crate::error::{Result, SamplerError};

/// Most threads tracked at once. More are not sampled (and counted).
pub const MAX_THREADS: usize = 8192;

pub(crate) const FREE: u32 = 0;
pub(crate) const IDLE: u32 = 1;
pub(crate) const REQUESTED: u32 = 2;
pub(crate) const IN_HANDLER: u32 = 3;
pub(crate) const READY: u32 = 4;
pub(crate) const DRAINING: u32 = 5;
pub(crate) const RETIRED: u32 = 6;

/// `result` of a sample the register checksum filtered (the thread had not run).
pub const RESULT_FILTERED: i32 = i32::MIN;
/// `result` when AsyncGetCallTrace was not found.
pub const RESULT_NO_AGCT: i32 = i32::MIN + 1;

/// One thread's slot. All fields are atomics: the signal handler reads and
/// writes them without locks.
pub struct Slot {
    pub(crate) state: AtomicU32,
    /// Bumped at every registration; signals carry it, stale ones are refused.
    pub(crate) generation: AtomicU32,
    pub(crate) tid: AtomicI32,
    /// The thread's JNIEnv (AsyncGetCallTrace's `env_id`); may be a stand-in
    /// for threads discovered without one (see `register`).
    pub(crate) env: AtomicPtr<c_void>,
    /// How the thread was registered ([`ThreadOrigin`] as a byte).
    pub(crate) origin: AtomicU8,
    pub(crate) frames: AtomicPtr<CallFrame>,
    pub(crate) capacity: AtomicU32,
    /// Checksum of the registers at the thread's previous signal (0: none).
    /// Written only by the handler, on the thread itself.
    pub(crate) last_checksum: AtomicU64,
    /// The thread's CPU clock at its previous signal (0: none); handler only.
    pub(crate) last_cpu_ns: AtomicU64,
    /// The thread's CPU clock as the sampler read it just before requesting
    /// this sample (0: not read). Written by the sampler while the slot is
    /// IDLE, published by its move to REQUESTED.
    pub(crate) requested_cpu_ns: AtomicU64,
    // Results of the last handler run, published by the store of READY.
    pub(crate) result: AtomicI32,
    pub(crate) checksum: AtomicU64,
    pub(crate) handler_ns: AtomicU64,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            state: AtomicU32::new(FREE),
            generation: AtomicU32::new(0),
            tid: AtomicI32::new(0),
            env: AtomicPtr::new(std::ptr::null_mut()),
            origin: AtomicU8::new(0),
            frames: AtomicPtr::new(std::ptr::null_mut()),
            capacity: AtomicU32::new(0),
            last_checksum: AtomicU64::new(0),
            last_cpu_ns: AtomicU64::new(0),
            requested_cpu_ns: AtomicU64::new(0),
            result: AtomicI32::new(0),
            checksum: AtomicU64::new(0),
            handler_ns: AtomicU64::new(0),
        }
    }

    pub(crate) fn cas_state(&self, from: u32, to: u32) -> bool {
        self.state.compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire).is_ok()
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
}

impl ThreadOrigin {
    fn from_u8(value: u8) -> ThreadOrigin {
        if value == ThreadOrigin::Discovered as u8 {
            ThreadOrigin::Discovered
        } else {
            ThreadOrigin::Started
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
            self.count_end(retire_slot(old));
        }
        let index = inner.claim_free_slot()?;
        let slot = &SLOTS[index];
        let needed = inner.depth + 1;
        if (slot.capacity.load(Ordering::Relaxed) as usize) < needed {
            let buffer: Box<[CallFrame]> = vec![CallFrame::EMPTY; needed].into_boxed_slice();
            let old = slot.frames.swap(Box::into_raw(buffer) as *mut CallFrame, Ordering::AcqRel);
            let old_capacity = slot.capacity.swap(needed as u32, Ordering::AcqRel) as usize;
            if !old.is_null() {
                // SAFETY: the slot is FREE (or never used): no handler or
                // sampler uses its buffer, which was made by Box::into_raw
                // of a boxed slice of `old_capacity` frames.
                drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(old, old_capacity)) });
            }
        }
        slot.tid.store(tid, Ordering::Relaxed);
        slot.env.store(env, Ordering::Relaxed);
        slot.origin.store(origin as u8, Ordering::Relaxed);
        slot.last_checksum.store(0, Ordering::Relaxed);
        slot.last_cpu_ns.store(0, Ordering::Relaxed);
        slot.requested_cpu_ns.store(0, Ordering::Relaxed);
        slot.result.store(0, Ordering::Relaxed);
        let generation = slot.generation.load(Ordering::Relaxed).wrapping_add(1);
        slot.generation.store(generation, Ordering::Release);
        slot.state.store(IDLE, Ordering::Release);
        if index >= HIGH_WATER.load(Ordering::Acquire) {
            HIGH_WATER.store(index + 1, Ordering::Release);
        }
        let key = ThreadKey { slot: index, generation };
        inner.by_tid.insert(tid, key);
        self.registered_total.fetch_add(1, Ordering::Relaxed);
        Ok(key)
    }

    /// Retires thread `tid` (its ThreadEnd). The sampler frees the slot.
    pub fn retire(&self, tid: i32) -> bool {
        let mut inner = self.inner.lock();
        match inner.by_tid.remove(&tid) {
            Some(key) => self.count_end(retire_slot(key)),
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
        self.count_end(retire_slot(key))
    }

    /// Returns a retired slot to the free list (sampler only; lock-free: a
    /// registration finds FREE slots by looking).
    pub(crate) fn release(&self, slot: usize) -> bool {
        SLOTS[slot].cas_state(RETIRED, FREE)
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
        match slot.state.load(Ordering::Acquire) {
            FREE | RETIRED => None,
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
    /// stays FREE until the caller takes it.
    fn claim_free_slot(&mut self) -> Result<usize> {
        let high = HIGH_WATER.load(Ordering::Acquire);
        let found = (0..high)
            .map(|offset| (self.next_free + offset) % high)
            .find(|&index| SLOTS[index].state.load(Ordering::Acquire) == FREE);
        let index = match found {
            Some(index) => index,
            None if high < MAX_THREADS => high,
            None => return Err(SamplerError::TooManyThreads { limit: MAX_THREADS }),
        };
        self.next_free = index + 1;
        Ok(index)
    }
}

/// Whether `key` is still its slot's registration (not retired, not reused).
fn is_current(key: &ThreadKey) -> bool {
    let slot = &SLOTS[key.slot];
    slot.generation.load(Ordering::Acquire) == key.generation
        && !matches!(slot.state.load(Ordering::Acquire), FREE | RETIRED)
}

/// Moves a slot of `key` to RETIRED, waiting out a drain in progress.
/// Returns whether this call retired it (false: already retired, freed or
/// reused), so every registration's end is counted once.
fn retire_slot(key: ThreadKey) -> bool {
    let slot = &SLOTS[key.slot];
    if slot.generation.load(Ordering::Acquire) != key.generation {
        return false;
    }
    loop {
        let state = slot.state.load(Ordering::Acquire);
        match state {
            FREE | RETIRED => return false,
            // The sampler is copying this slot's frames: it finishes in microseconds.
            DRAINING | IN_HANDLER => std::thread::yield_now(),
            _ => {
                if slot.cas_state(state, RETIRED) {
                    return true;
                }
            }
        }
    }
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
}
