//! What the walks learned about code, kept for later walks of any thread.
//!
//! Decoding a compiled frame (find its code blob in the segment map, search
//! its PcDescs, decode its inlined scopes, look each method's jmethodID up)
//! costs about fifty reads of scattered VM memory; a [`FrameCache`] hit
//! costs one (the cached nmethod's compilation id, unique for the VM's
//! life, to check the code at that address is still the same
//! compilation). A frame at a pc not seen before, in compiled code seen
//! before, takes the nmethod's facts (its blob, method, compilation id and
//! where its debug information is) from the cache for the same one read,
//! and searches only its PcDescs. Interpreted frames keep their `Method*` -> jmethodID
//! lookups likewise (checked by one read: a jmethodID points back to its
//! method), with where the method's bytecodes are (a `Method*` keeps its
//! `ConstMethod` for life, so a frame's bytecode index costs no read of
//! either).
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
//! async-signal-safe. A method entry is one such lock too (a torn pair of
//! method and id would fail the check that the id points back to the
//! method, but a torn bytecode range would not).

use std::sync::atomic::{fence, AtomicU64, Ordering};

use super::code::{Blob, BlobKind, Bytecodes, DebugData, Nmethod};

/// Compiled frames kept by the process's cache (a power of two; 128 bytes each).
pub const FRAMES: usize = 8192;
/// Nmethods kept by the process's cache (a power of two; 128 bytes each),
/// by the 256-byte run of code a pc was found in.
pub const NMETHODS: usize = 2048;
/// log2 of the bytes of code that share an nmethod entry.
const CODE_RUN_SHIFT: u32 = 8;
/// Most inlined scopes a cached frame holds (deeper ones are not cached).
pub const SCOPES: usize = 6;
/// `Method*` -> jmethodID entries kept by the process's cache (a power of
/// two; 32 bytes each).
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
    pub method_ids: [usize; SCOPES],
    pub bcis: [i32; SCOPES],
}

/// Words of a frame entry: pc, blob, compile id and frame size, count,
/// the method ids, the bcis two to a word.
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

/// Words of an nmethod entry: the blob's address, its size and compilation
/// id, its code's start, its frame's completion, its method, its frame size
/// and kind, its debug information's four addresses.
const NMETHOD_WORDS: usize = 10;

/// One nmethod's entry: a sequence (odd while written) and its words.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct NmethodSlot {
    sequence: AtomicU64,
    words: [AtomicU64; NMETHOD_WORDS],
}

impl NmethodSlot {
    pub const fn empty() -> NmethodSlot {
        NmethodSlot { sequence: AtomicU64::new(0), words: [const { AtomicU64::new(0) }; NMETHOD_WORDS] }
    }

    /// The entry's nmethod (the blob's address 0: empty).
    fn load(&self) -> Option<Nmethod> {
        let word = |index: usize| self.words[index].load(Ordering::Relaxed);
        let address = word(0) as usize;
        let shape = word(5);
        let kind = match (shape >> 16) & 0xFF {
            1 => BlobKind::Nmethod,
            2 => BlobKind::NativeNmethod,
            _ => return None,
        };
        let mut name = [0u8; 16];
        let text: &[u8] = if kind == BlobKind::Nmethod { b"nmethod" } else { b"native nmethod" };
        name[..text.len()].copy_from_slice(text);
        let blob = Blob {
            address,
            size: word(1) as u32 as usize,
            kind,
            frame_size: (shape & 0xFFFF) as usize,
            code_begin: word(2) as usize,
            frame_complete: word(3) as usize,
            name,
        };
        let debug = (shape >> 24 & 1 == 1).then(|| DebugData {
            pcs_begin: word(6) as usize,
            pcs_end: word(7) as usize,
            scopes: word(8) as usize,
            metadata: word(9) as usize,
        });
        (address != 0).then_some(Nmethod {
            blob,
            method: word(4) as usize,
            compile_id: Some((word(1) >> 32) as u32),
            debug,
        })
    }

    /// Stores `nmethod`, whose compilation id is `compile_id`.
    fn store(&self, nmethod: &Nmethod, compile_id: u32) {
        let put = |index: usize, value: u64| self.words[index].store(value, Ordering::Relaxed);
        let blob = &nmethod.blob;
        let kind: u64 = if blob.kind == BlobKind::Nmethod { 1 } else { 2 };
        let debug = nmethod.debug.unwrap_or(DebugData { pcs_begin: 0, pcs_end: 0, scopes: 0, metadata: 0 });
        put(0, blob.address as u64);
        put(1, blob.size as u64 | u64::from(compile_id) << 32);
        put(2, blob.code_begin as u64);
        put(3, blob.frame_complete as u64);
        put(4, nmethod.method as u64);
        put(5, blob.frame_size as u64 | kind << 16 | u64::from(nmethod.debug.is_some()) << 24);
        put(6, debug.pcs_begin as u64);
        put(7, debug.pcs_end as u64);
        put(8, debug.scopes as u64);
        put(9, debug.metadata as u64);
    }
}

/// A method's cached facts: its jmethodID and, once an interpreted frame
/// needed them, where its bytecodes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CachedMethod {
    pub id: usize,
    pub bytecodes: Option<Bytecodes>,
}

/// One method's entry: a sequence (odd while written), the `Method*`, its
/// jmethodID, its bytecodes' start and count packed in one word (0: not
/// known; user-space addresses fit in 48 bits, counts in 16).
#[repr(C, align(32))]
#[derive(Debug)]
pub struct MethodSlot {
    sequence: AtomicU64,
    method: AtomicU64,
    id: AtomicU64,
    bytecodes: AtomicU64,
}

impl MethodSlot {
    pub const fn empty() -> MethodSlot {
        MethodSlot {
            sequence: AtomicU64::new(0),
            method: AtomicU64::new(0),
            id: AtomicU64::new(0),
            bytecodes: AtomicU64::new(0),
        }
    }
}

/// `bytecodes` in one word, 0 when they do not fit (never, for user-space
/// addresses and a `u16` count).
fn pack(bytecodes: Option<Bytecodes>) -> u64 {
    match bytecodes {
        Some(Bytecodes { start, size }) if start != 0 && start < 1 << 48 && size < 1 << 16 => {
            ((start as u64) << 16) | size as u64
        }
        _ => 0,
    }
}

fn unpack(word: u64) -> Option<Bytecodes> {
    (word != 0).then_some(Bytecodes { start: (word >> 16) as usize, size: (word & 0xFFFF) as usize })
}

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
            count: word(COUNT).min(SCOPES as u64) as u8,
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
        put(COUNT, u64::from(frame.count));
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
    nmethods: &'static [NmethodSlot],
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
    nmethods: [NmethodSlot; NMETHODS],
    _rest: [u8; HUGE_PAGE - FRAMES * 128 - METHODS * 32 - NMETHODS * 128],
}

static TABLES: Tables = Tables {
    frames: [const { FrameSlot::empty() }; FRAMES],
    methods: [const { MethodSlot::empty() }; METHODS],
    nmethods: [const { NmethodSlot::empty() }; NMETHODS],
    _rest: [0; HUGE_PAGE - FRAMES * 128 - METHODS * 32 - NMETHODS * 128],
};
static PROCESS: FrameCache =
    FrameCache { frames: &TABLES.frames, methods: &TABLES.methods, nmethods: &TABLES.nmethods };

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
    TABLES.frames[0].sequence.fetch_add(0, Ordering::Relaxed);
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
    /// The process's cache: [`FRAMES`] frames, [`METHODS`] methods and
    /// [`NMETHODS`] nmethods (about 1.4 MiB of zero-initialised statics in a 2 MiB huge page's place:
    /// [`super::advise_huge_page`]; on small pages, touched as entries fill).
    pub fn process() -> &'static FrameCache {
        &PROCESS
    }

    /// Bytes the cache holds.
    pub fn bytes(&self) -> usize {
        std::mem::size_of_val(self.frames) + std::mem::size_of_val(self.methods) + std::mem::size_of_val(self.nmethods)
    }

    /// The entry for return address `pc`, if cached and not being written
    /// (to be checked against the code by the caller).
    #[inline]
    pub fn frame(&self, pc: usize) -> Option<CachedFrame> {
        if pc == 0 {
            return None;
        }
        let slot = self.frames.get(index(pc, self.frames.len()))?;
        read_locked(&slot.sequence, || (slot.words[PC].load(Ordering::Relaxed) as usize == pc).then(|| slot.load()))
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
        if let Some(slot) = self.frames.get(index(entry.pc, self.frames.len())) {
            write_locked(&slot.sequence, || slot.store(entry));
        }
    }

    /// The nmethod last found in the run of code that holds `pc`, if it
    /// holds `pc` and is not being written (to be checked against the code
    /// by the caller: its compilation id).
    #[inline]
    pub fn nmethod(&self, pc: usize) -> Option<Nmethod> {
        let slot = self.nmethods.get(index(pc >> CODE_RUN_SHIFT, self.nmethods.len()))?;
        read_locked(&slot.sequence, || slot.load()).filter(|nmethod| nmethod.blob.contains(pc))
    }

    /// Keeps `nmethod`, found holding `pc`, unless its compilation id is
    /// unknown or another thread is writing its slot at this moment.
    #[inline]
    pub fn keep_nmethod(&self, pc: usize, nmethod: &Nmethod) {
        let Some(compile_id) = nmethod.compile_id else { return };
        if nmethod.blob.kind == BlobKind::Other || nmethod.blob.address == 0 {
            return;
        }
        if let Some(slot) = self.nmethods.get(index(pc >> CODE_RUN_SHIFT, self.nmethods.len())) {
            write_locked(&slot.sequence, || slot.store(nmethod, compile_id));
        }
    }

    /// What was last found for `method`, if anything and not being written
    /// (to be checked: its id must point back to `method`).
    #[inline]
    pub fn method(&self, method: usize) -> Option<CachedMethod> {
        if method == 0 {
            return None;
        }
        let slot = self.methods.get(index(method, self.methods.len()))?;
        read_locked(&slot.sequence, || {
            (slot.method.load(Ordering::Relaxed) as usize == method).then(|| CachedMethod {
                id: slot.id.load(Ordering::Relaxed) as usize,
                bytecodes: unpack(slot.bytecodes.load(Ordering::Relaxed)),
            })
        })
        .filter(|entry| entry.id != 0)
    }

    /// Keeps `entry` for `method` (replacing whatever shared its slot),
    /// unless another thread is writing that slot at this moment.
    #[inline]
    pub fn keep_method(&self, method: usize, entry: CachedMethod) {
        if method == 0 {
            return;
        }
        if let Some(slot) = self.methods.get(index(method, self.methods.len())) {
            write_locked(&slot.sequence, || {
                slot.method.store(method as u64, Ordering::Relaxed);
                slot.id.store(entry.id as u64, Ordering::Relaxed);
                slot.bytecodes.store(pack(entry.bytecodes), Ordering::Relaxed);
            });
        }
    }
}

/// Reads an entry under its sequence lock: what `read` read, if no writer
/// held the entry when it started or took it before it ended.
#[inline]
fn read_locked<T>(sequence: &AtomicU64, read: impl FnOnce() -> Option<T>) -> Option<T> {
    let before = sequence.load(Ordering::Acquire);
    if before & 1 == 1 {
        return None;
    }
    let value = read()?;
    fence(Ordering::Acquire);
    (sequence.load(Ordering::Relaxed) == before).then_some(value)
}

/// Writes an entry under its sequence lock: takes it (even to odd) with one
/// compare-and-swap, runs `write`, gives it back (odd to the next even); if
/// another writer holds it, writes nothing.
#[inline]
fn write_locked(sequence: &AtomicU64, write: impl FnOnce()) {
    let before = sequence.load(Ordering::Relaxed);
    if before & 1 == 1
        || sequence.compare_exchange(before, before.wrapping_add(1), Ordering::Acquire, Ordering::Relaxed).is_err()
    {
        return;
    }
    fence(Ordering::Release);
    write();
    sequence.store(before.wrapping_add(2), Ordering::Release);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A cache of its own for a test, of `frames` and `methods` entries
    /// (powers of two; its tables leak: a few KiB a test).
    pub(crate) fn new_cache(frames: usize, methods: usize) -> FrameCache {
        assert!(frames.is_power_of_two() && methods.is_power_of_two());
        let frames = (0..frames).map(|_| FrameSlot::empty()).collect::<Vec<_>>().leak();
        let methods = (0..methods).map(|_| MethodSlot::empty()).collect::<Vec<_>>().leak();
        let nmethods = (0..16).map(|_| NmethodSlot::empty()).collect::<Vec<_>>().leak();
        FrameCache { frames, methods, nmethods }
    }

    fn frame(pc: usize, tag: usize) -> CachedFrame {
        CachedFrame {
            pc,
            blob: tag,
            compile_id: tag as u32,
            frame_size: 7,
            count: 3,
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
        let bytecodes = Some(Bytecodes { start: 0x7f12_3456_7890, size: 65_535 });
        cache.keep_method(0x40, CachedMethod { id: 0x80, bytecodes });
        assert_eq!(cache.method(0x40), Some(CachedMethod { id: 0x80, bytecodes }));
        assert_eq!(cache.method(0x48), None);
        cache.keep_method(0x48, CachedMethod { id: 0x88, bytecodes: None });
        assert_eq!(cache.method(0x40), None, "replaced");
        assert_eq!(cache.method(0x48), Some(CachedMethod { id: 0x88, bytecodes: None }));
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

    fn nmethod(address: usize, size: usize, compile_id: u32) -> Nmethod {
        let mut name = [0u8; 16];
        name[..7].copy_from_slice(b"nmethod");
        Nmethod {
            blob: Blob {
                address,
                size,
                kind: BlobKind::Nmethod,
                frame_size: 6,
                code_begin: address + 0x100,
                frame_complete: address + 0x120,
                name,
            },
            method: 0x7f00_0000_1000,
            compile_id: Some(compile_id),
            debug: Some(DebugData { pcs_begin: 1, pcs_end: 17, scopes: 3, metadata: 4 }),
        }
    }

    #[test]
    fn a_kept_nmethod_reads_back_whole_for_pcs_it_holds_in_the_same_run_of_code() {
        let cache = new_cache(1, 1);
        let kept = nmethod(0x7f00_0001_0000, 0x2000, 77);
        cache.keep_nmethod(0x7f00_0001_0180, &kept);
        assert_eq!(cache.nmethod(0x7f00_0001_0180), Some(kept));
        assert_eq!(cache.nmethod(0x7f00_0001_01ff), Some(kept), "the same 256 bytes");
        assert_eq!(cache.nmethod(0x7f00_0003_0000), None, "another nmethod's pc");
        let native = Nmethod { debug: None, blob: Blob { kind: BlobKind::NativeNmethod, ..kept.blob }, ..kept };
        let mut name = [0u8; 16];
        name[..14].copy_from_slice(b"native nmethod");
        cache.keep_nmethod(0x7f00_0001_0180, &native);
        assert_eq!(cache.nmethod(0x7f00_0001_0180), Some(Nmethod { blob: Blob { name, ..native.blob }, ..native }));
        // Not kept: no compilation id, or not compiled Java code.
        let cache = new_cache(1, 1);
        cache.keep_nmethod(0x7f00_0001_0180, &Nmethod { compile_id: None, ..kept });
        cache.keep_nmethod(0x7f00_0001_0180, &Nmethod { blob: Blob { kind: BlobKind::Other, ..kept.blob }, ..kept });
        assert_eq!(cache.nmethod(0x7f00_0001_0180), None);
    }

    /// The same for method entries: a read is a miss or one writer's whole
    /// entry (method, id and bytecodes), never a mix.
    #[test]
    fn concurrent_writers_never_give_a_reader_a_torn_method() {
        use std::sync::atomic::AtomicUsize;
        use std::sync::Barrier;
        let cache = new_cache(1, 1);
        let entry = |writer: usize| CachedMethod {
            id: writer * 16,
            bytecodes: Some(Bytecodes { start: writer * 4096, size: writer }),
        };
        let start = Barrier::new(4);
        let writing = AtomicUsize::new(3);
        std::thread::scope(|scope| {
            for writer in 1..=3usize {
                let (cache, start, writing) = (&cache, &start, &writing);
                scope.spawn(move || {
                    start.wait();
                    for _ in 0..50_000 {
                        cache.keep_method(0x40, entry(writer));
                    }
                    writing.fetch_sub(1, Ordering::Release);
                });
            }
            start.wait();
            while writing.load(Ordering::Acquire) > 0 {
                if let Some(found) = cache.method(0x40) {
                    assert_eq!(found, entry(found.id / 16), "a torn method entry");
                }
            }
        });
        let last = cache.method(0x40).expect("the last write stays");
        assert_eq!(last, entry(last.id / 16));
    }

    #[test]
    fn the_process_cache_takes_about_one_and_a_half_mebibytes() {
        let bytes = FrameCache::process().bytes();
        assert_eq!(std::mem::size_of::<FrameSlot>(), 128);
        assert_eq!(std::mem::size_of::<MethodSlot>(), 32);
        assert_eq!(std::mem::size_of::<NmethodSlot>(), 128);
        assert!((1 << 20..=(3 << 20) / 2).contains(&bytes), "{bytes} bytes");
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
