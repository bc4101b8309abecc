//! What the walks learned about code, kept for later walks of any thread.
//!
//! Decoding a compiled frame (find its code blob in the segment map, search
//! its PcDescs, decode its inlined scopes, look each method's jmethodID up)
//! costs about fifty reads of scattered VM memory; a [`FrameCache`] hit
//! costs one (the cached nmethod's compilation id, unique for the VM's
//! life, to check the code at that address is still the same
//! compilation). Interpreted frames keep their `Method*` -> jmethodID
//! lookups likewise (checked by one read: a jmethodID points back to its
//! method).
//!
//! Entries describe code, not a thread, so one cache serves every thread:
//! threads running the same code (a server's workers) share its entries,
//! and a thread with a large working set (javac's compiler walking a tree)
//! has room. Measured on javac at 1 ms (BENCHMARKS.md, "The frame cache,
//! shared by all threads"): 128 entries per thread hit 63 % of compiled
//! frames, 1,024 per thread 84 %, this one 93 %; a miss costs about ten
//! times a hit. An nmethod freed and replaced at the same address has
//! another compilation id; a jmethodID whose class is unloaded no longer
//! points to the method.
//!
//! Concurrency: signal handlers on many threads (and event callbacks) read
//! and write entries at once, so every entry is a sequence lock of atomic
//! words. A writer takes an entry by moving its sequence from even to odd
//! with one compare-and-swap, or gives up (the frame is simply not cached);
//! a reader that sees an odd sequence, or another sequence after its reads,
//! takes it as a miss. Nobody waits, nothing allocates (the process's
//! tables are zero-initialised statics, [`FrameCache::process`]):
//! async-signal-safe. A method entry needs no lock:
//! a torn pair (one writer's method, another's id) fails the check that the
//! id points back to the method.

use std::sync::atomic::{fence, AtomicU64, Ordering};

use pcct::FrameKind;

/// Compiled frames kept by the process's cache (a power of two; 128 bytes each).
pub const FRAMES: usize = 8192;
/// Most inlined scopes a cached frame holds (deeper ones are not cached).
pub const SCOPES: usize = 6;
/// `Method*` -> jmethodID pairs kept by the process's cache (a power of two).
pub const METHODS: usize = 4096;

/// One compiled frame's decoding, keyed by its return address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CachedFrame {
    /// The return address (0: empty).
    pub pc: usize,
    /// The nmethod and its compilation id when decoded.
    pub blob: usize,
    pub compile_id: u32,
    /// Frame size in words.
    pub frame_size: u32,
    /// Scopes, innermost first: jmethodIDs and bytecode indices.
    pub count: u8,
    /// The kind of the outermost scope's code (the others are inlined).
    pub kind: FrameKind,
    pub method_ids: [usize; SCOPES],
    pub bcis: [i32; SCOPES],
}

/// Words of a frame entry: pc, blob, compile id and frame size, count
/// and kind, the method ids, the bcis two to a word.
const WORDS: usize = 4 + SCOPES + SCOPES / 2;
const PC: usize = 0;
const BLOB: usize = 1;
const SIZES: usize = 2;
const COUNT: usize = 3;
const IDS: usize = 4;
const BCIS: usize = IDS + SCOPES;

/// One entry: a sequence (odd while written) and the frame's words.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct FrameSlot {
    sequence: AtomicU64,
    words: [AtomicU64; WORDS],
}

/// One `Method*` -> jmethodID pair.
pub type MethodSlot = [AtomicU64; 2];

impl FrameSlot {
    pub const fn empty() -> FrameSlot {
        FrameSlot { sequence: AtomicU64::new(0), words: [const { AtomicU64::new(0) }; WORDS] }
    }

    fn load(&self) -> CachedFrame {
        let word = |index: usize| self.words[index].load(Ordering::Relaxed);
        let sizes = word(SIZES);
        let mut frame = CachedFrame {
            pc: word(PC) as usize,
            blob: word(BLOB) as usize,
            compile_id: sizes as u32,
            frame_size: (sizes >> 32) as u32,
            count: (word(COUNT) & 0xFF).min(SCOPES as u64) as u8,
            kind: FrameKind::from_u8((word(COUNT) >> 8) as u8),
            ..CachedFrame::default()
        };
        for index in 0..SCOPES {
            frame.method_ids[index] = word(IDS + index) as usize;
            frame.bcis[index] = (word(BCIS + index / 2) >> (32 * (index % 2))) as u32 as i32;
        }
        frame
    }

    fn store(&self, frame: &CachedFrame) {
        let put = |index: usize, value: u64| self.words[index].store(value, Ordering::Relaxed);
        put(PC, frame.pc as u64);
        put(BLOB, frame.blob as u64);
        put(SIZES, u64::from(frame.compile_id) | (u64::from(frame.frame_size) << 32));
        put(COUNT, u64::from(frame.count) | (u64::from(frame.kind as u8) << 8));
        for index in 0..SCOPES {
            put(IDS + index, frame.method_ids[index] as u64);
        }
        for pair in 0..SCOPES / 2 {
            let low = frame.bcis[2 * pair] as u32 as u64;
            let high = frame.bcis[2 * pair + 1] as u32 as u64;
            put(BCIS + pair, low | (high << 32));
        }
    }
}

/// The frame cache: decoded compiled frames and jmethodIDs, shared by all
/// threads (see the module doc for its locking). Its tables' lengths are
/// powers of two.
#[derive(Clone, Copy, Debug)]
pub struct FrameCache {
    frames: &'static [FrameSlot],
    methods: &'static [MethodSlot],
}

/// Asks the processor to load the cache line holding `address`, whatever
/// the address (a prefetch never faults; a bad address is ignored).
#[inline]
pub fn prefetch(address: usize) {
    // SAFETY: PREFETCHT0 only hints the cache; it reads no value, and on an
    // unmapped or invalid address it does nothing (it cannot fault).
    unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(address as *const i8) };
}

/// Size of an x86-64 huge page, which the process's tables fill, aligned to it.
pub const HUGE_PAGE: usize = 2 << 20;

/// The process's tables, in one huge page: a walk reads entries scattered
/// over the whole table, and on 4 KiB pages each read of a new page was
/// likely to miss the TLB too (the JVM's heap holds most of its entries; in
/// a virtual machine a miss walks two page tables). Measured on javac at
/// 1 ms (BENCHMARKS.md, "The frame cache in one huge page"): 59 % of the
/// walker's own time was the first read of a cache entry.
#[repr(C, align(2097152))]
struct Tables {
    frames: [FrameSlot; FRAMES],
    methods: [MethodSlot; METHODS],
    _rest: [u8; HUGE_PAGE - FRAMES * 128 - METHODS * 16],
}

static TABLES: Tables = Tables {
    frames: [const { FrameSlot::empty() }; FRAMES],
    methods: [const { [AtomicU64::new(0), AtomicU64::new(0)] }; METHODS],
    _rest: [0; HUGE_PAGE - FRAMES * 128 - METHODS * 16],
};
static PROCESS: FrameCache = FrameCache { frames: &TABLES.frames, methods: &TABLES.methods };

/// The tables' address and length, as the loader placed them (for
/// [`super::advise_huge_page`]). The compiler assumes the static is as
/// aligned as its type says, so the address goes through `black_box`
/// before anyone checks its alignment (else the check is folded to true,
/// and a C library that ignored the alignment would go unseen).
pub(super) fn tables() -> (usize, usize) {
    (std::hint::black_box(&TABLES as *const Tables) as usize, HUGE_PAGE)
}

/// Writes to the tables without changing them: the first write to a range
/// advised onto a huge page is where the kernel allocates (and zeroes) it,
/// which should happen on the caller's thread, not in a signal handler.
pub(super) fn touch_tables() {
    touch(&TABLES.frames[0].sequence);
}

/// Writes `word` without changing it: an atomic add of a zero the compiler
/// cannot see. A plain `fetch_add(0)` whose result is unused was removed
/// by the optimizer, so the tables' huge page was allocated and zeroed in
/// the first walk that wrote to them (6 ms in an allocation callback on
/// H2, perf, 2026-11-29), or in a signal handler.
fn touch(word: &AtomicU64) {
    word.fetch_add(std::hint::black_box(0), Ordering::Relaxed);
}

/// The slot of `key` in a table of `size` (a power of two) entries: a
/// bit mask, so no index is ever out of range; the caller still reads with
/// `get` (no path that can panic in the handler).
#[inline]
fn index(key: usize, size: usize) -> usize {
    // Fibonacci hashing of all the key's bits: return addresses are not
    // aligned, and two calls five bytes apart must not share a slot.
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) & size.wrapping_sub(1)
}

impl FrameCache {
    /// The process's cache: [`FRAMES`] frames and [`METHODS`] methods (about
    /// 1.1 MiB of zero-initialised statics in a 2 MiB huge page's place:
    /// [`super::advise_huge_page`]; on small pages, touched as entries fill).
    pub fn process() -> &'static FrameCache {
        &PROCESS
    }

    /// Bytes the cache holds.
    pub fn bytes(&self) -> usize {
        std::mem::size_of_val(self.frames) + std::mem::size_of_val(self.methods)
    }

    /// The entry for return address `pc`, if cached and not being written
    /// (to be checked against the code by the caller).
    #[inline]
    pub fn frame(&self, pc: usize) -> Option<CachedFrame> {
        if pc == 0 {
            return None;
        }
        let slot = self.frames.get(index(pc, self.frames.len()))?;
        let before = slot.sequence.load(Ordering::Acquire);
        if before & 1 == 1 || slot.words[PC].load(Ordering::Relaxed) as usize != pc {
            return None;
        }
        let frame = slot.load();
        fence(Ordering::Acquire);
        (slot.sequence.load(Ordering::Relaxed) == before && frame.pc == pc).then_some(frame)
    }

    /// Asks the processor to bring the entry for `pc` into its cache (both
    /// of its lines), so that a later [`FrameCache::frame`] finds it there:
    /// a walk issues these for the frames it expects, and their misses
    /// overlap instead of following one another. Never faults.
    #[inline]
    pub fn prefetch_frame(&self, pc: usize) {
        if let Some(slot) = self.frames.get(index(pc, self.frames.len())) {
            let address = slot as *const FrameSlot as usize;
            prefetch(address);
            prefetch(address.wrapping_add(64));
        }
    }

    /// Keeps `entry` (replacing whatever shared its slot), unless another
    /// thread is writing that slot at this moment: then it is not kept.
    #[inline]
    pub fn keep_frame(&self, entry: &CachedFrame) {
        if entry.pc == 0 {
            return;
        }
        let Some(slot) = self.frames.get(index(entry.pc, self.frames.len())) else { return };
        let before = slot.sequence.load(Ordering::Relaxed);
        if before & 1 == 1
            || slot
                .sequence
                .compare_exchange(before, before.wrapping_add(1), Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        fence(Ordering::Release);
        slot.store(entry);
        slot.sequence.store(before.wrapping_add(2), Ordering::Release);
    }

    /// The jmethodID last found for `method`, if any (to be checked: it
    /// must point back to `method`).
    #[inline]
    pub fn method_id(&self, method: usize) -> Option<usize> {
        let [cached, id] = self.methods.get(index(method, self.methods.len()))?;
        let id = id.load(Ordering::Relaxed) as usize;
        (method != 0 && cached.load(Ordering::Relaxed) as usize == method && id != 0).then_some(id)
    }

    #[inline]
    pub fn keep_method_id(&self, method: usize, id: usize) {
        let Some([cached, cached_id]) = self.methods.get(index(method, self.methods.len())) else { return };
        cached.store(method as u64, Ordering::Relaxed);
        cached_id.store(id as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A cache of its own for a test, of `frames` and `methods` entries
    /// (powers of two; its tables leak: a few KiB a test).
    pub(crate) fn new_cache(frames: usize, methods: usize) -> FrameCache {
        assert!(frames.is_power_of_two() && methods.is_power_of_two());
        let frames = (0..frames).map(|_| FrameSlot::empty()).collect::<Vec<_>>().leak();
        let methods = (0..methods).map(|_| [AtomicU64::new(0), AtomicU64::new(0)]).collect::<Vec<_>>().leak();
        FrameCache { frames, methods }
    }

    fn frame(pc: usize, tag: usize) -> CachedFrame {
        CachedFrame {
            pc,
            blob: tag,
            compile_id: tag as u32,
            frame_size: 7,
            count: 3,
            kind: if tag.is_multiple_of(20) { FrameKind::Tier4 } else { FrameKind::Tier1 },
            method_ids: [tag, tag + 1, tag + 2, 0, 0, 0],
            bcis: [-3, 1, i32::MAX, 0, -1, 5],
        }
    }

    #[test]
    fn a_kept_frame_reads_back_whole_and_a_colliding_one_replaces_it() {
        let cache = new_cache(1, 1);
        assert_eq!(cache.frame(0x1000), None);
        cache.keep_frame(&frame(0x1000, 10));
        assert_eq!(cache.frame(0x1000), Some(frame(0x1000, 10)));
        cache.keep_frame(&frame(0x2000, 20));
        assert_eq!(cache.frame(0x1000), None);
        assert_eq!(cache.frame(0x2000), Some(frame(0x2000, 20)));
        cache.keep_method_id(0x40, 0x80);
        assert_eq!((cache.method_id(0x40), cache.method_id(0x48)), (Some(0x80), None));
    }

    #[test]
    fn an_entry_being_written_is_a_miss_and_is_not_written_twice() {
        let cache = new_cache(1, 1);
        cache.keep_frame(&frame(0x1000, 10));
        cache.frames[0].sequence.fetch_add(1, Ordering::Relaxed); // a writer on another thread
        assert_eq!(cache.frame(0x1000), None);
        cache.keep_frame(&frame(0x1000, 30));
        cache.frames[0].sequence.fetch_add(1, Ordering::Relaxed);
        assert_eq!(cache.frame(0x1000), Some(frame(0x1000, 10)), "the second writer gave up");
    }

    /// Writers and a reader on one entry, started together, the reader
    /// reading until the writers are done: a read is a miss or one writer's
    /// whole frame (each writer's frames differ in every word), never a mix.
    #[test]
    fn concurrent_writers_never_give_a_reader_a_torn_frame() {
        use std::sync::atomic::AtomicUsize;
        use std::sync::Barrier;
        let cache = new_cache(1, 1);
        let start = Barrier::new(4);
        let writing = AtomicUsize::new(3);
        let whole = std::thread::scope(|scope| {
            for writer in 1..=3usize {
                let (cache, start, writing) = (&cache, &start, &writing);
                scope.spawn(move || {
                    start.wait();
                    for _ in 0..50_000 {
                        cache.keep_frame(&frame(0x1000, writer * 1_000_000));
                    }
                    writing.fetch_sub(1, Ordering::Release);
                });
            }
            let reader = scope.spawn(|| {
                start.wait();
                let mut whole = 0u64;
                while writing.load(Ordering::Acquire) > 0 {
                    if let Some(found) = cache.frame(0x1000) {
                        assert_eq!(found, frame(0x1000, found.blob), "a torn frame");
                        whole += 1;
                    }
                }
                whole
            });
            reader.join().expect("reader")
        });
        let last = cache.frame(0x1000).expect("the last write stays");
        assert_eq!(last, frame(0x1000, last.blob));
        eprintln!("{whole} whole frames read while the writers wrote");
    }

    #[test]
    fn the_process_cache_takes_about_one_mebibyte() {
        let bytes = FrameCache::process().bytes();
        assert_eq!(std::mem::size_of::<FrameSlot>(), 128);
        assert!((1 << 20..=(5 << 20) / 4).contains(&bytes), "{bytes} bytes");
    }

    /// Whether the page holding `address` is mapped to this process alone
    /// (`/proc/self/pagemap` bit 56): a page written, not the shared zero
    /// page a read of untouched anonymous memory maps.
    fn exclusively_mapped(address: usize) -> bool {
        use std::io::{Read, Seek, SeekFrom};
        let mut pagemap = std::fs::File::open("/proc/self/pagemap").expect("pagemap");
        pagemap.seek(SeekFrom::Start((address / 4096 * 8) as u64)).expect("seek");
        let mut entry = [0u8; 8];
        pagemap.read_exact(&mut entry).expect("read");
        u64::from_le_bytes(entry) & (1 << 56) != 0
    }

    #[test]
    fn a_touch_writes_the_page() {
        let length = 2 * 4096;
        // SAFETY: a new private anonymous mapping, unmapped below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                length,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        // SAFETY: both pages are mapped, aligned, and only used as atomics here.
        let (read, written) =
            unsafe { (AtomicU64::from_ptr(base.cast()), AtomicU64::from_ptr(base.cast::<u64>().add(512))) };
        assert_eq!(read.load(Ordering::Relaxed), 0);
        touch(written);
        assert!(!exclusively_mapped(base as usize), "a read maps the zero page");
        assert!(exclusively_mapped(base as usize + 4096), "a touch must write");
        assert_eq!(written.load(Ordering::Relaxed), 0);
        // SAFETY: the mapping made above, no longer used.
        unsafe { libc::munmap(base, length) };
    }

    #[test]
    fn the_process_tables_fill_one_aligned_huge_page() {
        assert_eq!(std::mem::size_of::<Tables>(), HUGE_PAGE);
        assert_eq!(std::mem::align_of::<Tables>(), HUGE_PAGE);
        assert!(tables().0.is_multiple_of(HUGE_PAGE), "the loader aligned the static");
    }

    #[test]
    fn return_addresses_a_call_apart_get_slots_of_their_own() {
        // Calls are five bytes or more apart; the slot is a hash of every
        // bit of the address, not of its bits above the lowest three.
        let size = FRAMES;
        for base in [0x7f12_3456_7000usize, 0x7f00_0000_0001, 0x1_0000_0003] {
            let slots: std::collections::HashSet<usize> = (0..64).map(|step| index(base + 5 * step, size)).collect();
            assert!(slots.len() >= 60, "{} slots for 64 return addresses from {base:#x}", slots.len());
        }
    }

    #[test]
    fn prefetching_any_address_is_harmless() {
        let cache = new_cache(8, 8);
        cache.keep_frame(&frame(0x1000, 10));
        for address in [0, 8, 0xFFF, 0x1000, 0x7FFF_FFFF_F000_0000, 0x8000_0000_0000_0000, usize::MAX] {
            prefetch(address);
            cache.prefetch_frame(address);
        }
        FrameCache::process().prefetch_frame(0x7f12_3456_7895);
        // Hints change nothing: the kept frame reads back whole, others miss.
        assert_eq!(cache.frame(0x1000), Some(frame(0x1000, 10)));
        assert_eq!(cache.frame(0x7FFF_FFFF_F000_0000), None);
    }
}
