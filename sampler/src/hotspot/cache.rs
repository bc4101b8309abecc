//! What a thread's walks learned about code, kept for its next walks.
//!
//! Most frames of a sample are the same as in the thread's previous sample
//! (Whaley's marked frames): their return addresses repeat. Decoding a
//! compiled frame (find its code blob in the segment map, search its
//! PcDescs, decode its inlined scopes, look each method's jmethodID up) costs
//! about fifty reads of scattered VM memory; a [`FrameCache`] hit costs
//! four: the cached nmethod's compilation id and method (to check the code
//! at that address is still the same compilation) and the next frame's
//! return address and frame pointer. Interpreted frames keep their
//! `Method*` -> jmethodID lookups likewise (checked by one read: a jmethodID
//! points back to its method).
//!
//! Entries describe code, not a thread, so they stay valid for whatever
//! thread next owns the slot. An nmethod freed and replaced at the same
//! address has another compilation id; a jmethodID whose class is unloaded
//! no longer points to the method. Each cache belongs to one slot and is
//! touched only by that slot's signal handler (while it is IN_HANDLER).

/// Compiled frames kept (a power of two).
pub const FRAMES: usize = 128;
/// Most inlined scopes a cached frame holds (deeper ones are not cached).
pub const SCOPES: usize = 6;
/// `Method*` -> jmethodID pairs kept (a power of two).
pub const METHODS: usize = 64;

/// One compiled frame's decoding, keyed by its return address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CachedFrame {
    /// The return address (0: empty).
    pub pc: usize,
    /// The nmethod, its compilation id and its `Method*` when decoded.
    pub blob: usize,
    pub compile_id: u32,
    pub method: usize,
    /// Frame size in words.
    pub frame_size: u32,
    /// Scopes, innermost first: jmethodIDs and bytecode indices.
    pub count: u8,
    pub method_ids: [usize; SCOPES],
    pub bcis: [i32; SCOPES],
}

/// A thread slot's cache (about 14 KiB), allocated by the sampler the first
/// time it samples the slot's thread.
#[derive(Clone, Debug)]
pub struct FrameCache {
    frames: [CachedFrame; FRAMES],
    methods: [(usize, usize); METHODS],
    /// Hits and misses, for the walker's statistics.
    pub hits: u64,
    pub misses: u64,
}

impl Default for FrameCache {
    fn default() -> FrameCache {
        FrameCache { frames: [CachedFrame::default(); FRAMES], methods: [(0, 0); METHODS], hits: 0, misses: 0 }
    }
}

#[inline]
fn index(key: usize, size: usize) -> usize {
    // Fibonacci hashing of the address's bits above its alignment.
    ((key >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) & (size - 1)
}

impl FrameCache {
    /// The entry for return address `pc`, if cached (to be checked by the caller).
    #[inline]
    pub fn frame(&self, pc: usize) -> Option<&CachedFrame> {
        let entry = &self.frames[index(pc, FRAMES)];
        (entry.pc == pc && pc != 0).then_some(entry)
    }

    /// Keeps `entry` (replacing whatever shared its slot).
    #[inline]
    pub fn keep_frame(&mut self, entry: CachedFrame) {
        self.frames[index(entry.pc, FRAMES)] = entry;
    }

    /// The jmethodID last found for `method`, if any (to be checked).
    #[inline]
    pub fn method_id(&self, method: usize) -> Option<usize> {
        let (cached, id) = self.methods[index(method, METHODS)];
        (cached == method && method != 0).then_some(id)
    }

    #[inline]
    pub fn keep_method_id(&mut self, method: usize, id: usize) {
        self.methods[index(method, METHODS)] = (method, id);
    }
}
