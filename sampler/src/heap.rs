//! The agent's own heap, counted: every allocation the agent library's
//! Rust code makes (the arena, the method table, hot lists, buffers, the
//! HTTP server's) goes through [`CountingAllocator`], which the agent
//! installs as its global allocator (`agent/src/lib.rs`), so `/api/status`,
//! `/metrics` and the dump can say how much memory pcct itself holds now
//! and held at most.
//!
//! Not counted: the JVM's memory (HotSpot has Native Memory Tracking for
//! that), memory the JVM hands out through JVMTI `Allocate`, thread stacks
//! and the library's own code. Where the allocator is not installed (unit
//! tests, the server's tests) the figures stay zero.
//!
//! Cost: two relaxed atomic operations per allocation, one per free. The
//! signal handler never allocates (its rules), so it never runs this code.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, with the bytes it holds for pcct counted.
pub struct CountingAllocator;

fn grew(bytes: usize) {
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed).wrapping_add(bytes);
    PEAK.fetch_max(live, Ordering::Relaxed);
}

fn shrank(bytes: usize) {
    LIVE.fetch_sub(bytes, Ordering::Relaxed);
}

// SAFETY: every method forwards its arguments unchanged to `System`, which
// upholds `GlobalAlloc`'s contract; the counting touches only atomics.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            grew(layout.size());
        }
        pointer
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let pointer = unsafe { System.alloc_zeroed(layout) };
        if !pointer.is_null() {
            grew(layout.size());
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: the caller passes a block this allocator (so `System`)
        // gave out, with its layout.
        unsafe { System.dealloc(pointer, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `dealloc`, and `new_size` as `GlobalAlloc::realloc` requires.
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        moved
    }
}

/// The agent's heap: bytes held now, and the most held at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HeapUsage {
    pub live_bytes: u64,
    pub peak_bytes: u64,
}

/// What [`CountingAllocator`] has counted so far (zeros where it is not
/// the global allocator).
pub fn usage() -> HeapUsage {
    HeapUsage { live_bytes: LIVE.load(Ordering::Relaxed) as u64, peak_bytes: PEAK.load(Ordering::Relaxed) as u64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_freed_and_resized_are_counted_and_the_peak_kept() {
        let allocator = CountingAllocator;
        let before = usage();
        let layout = Layout::from_size_align(4096, 8).expect("layout");
        // SAFETY: a non-zero layout; the block is freed below with it.
        let block = unsafe { allocator.alloc(layout) };
        assert!(!block.is_null());
        assert_eq!(usage().live_bytes, before.live_bytes + 4096);
        // SAFETY: the block came from this allocator with `layout`.
        let block = unsafe { allocator.realloc(block, layout, 1024) };
        assert!(!block.is_null());
        assert_eq!(usage().live_bytes, before.live_bytes + 1024);
        assert!(usage().peak_bytes >= before.live_bytes + 4096);
        let smaller = Layout::from_size_align(1024, 8).expect("layout");
        // SAFETY: the resized block, with its current layout.
        unsafe { allocator.dealloc(block, smaller) };
        assert_eq!(usage().live_bytes, before.live_bytes);
    }
}
