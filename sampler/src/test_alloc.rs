//! A counting allocator for this crate's unit tests: it forwards every call
//! to the system allocator and counts those made on a thread while that
//! thread has a window open ([`allocations_during`]), so a test can prove
//! that code the signal handler runs (pcct's own stack walker, over the
//! synthetic VM of `hotspot/tests.rs`) never calls the allocator.
//!
//! The window is a `const` thread-local flag: reading it allocates nothing
//! and takes no lock, so the allocator itself stays usable everywhere.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    /// Allocator calls this thread made in its open window, or `None`.
    static WINDOW: Cell<Option<u64>> = const { Cell::new(None) };
}

struct Counting;

fn observe() {
    // `try_with`: a thread being torn down has no window.
    let _ = WINDOW.try_with(|window| {
        if let Some(calls) = window.get() {
            window.set(Some(calls + 1));
        }
    });
}

// SAFETY: forwards every call to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        observe();
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        observe();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        observe();
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        observe();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `body` and returns what it returned and how many allocator calls
/// this thread made meanwhile.
pub fn allocations_during<T>(body: impl FnOnce() -> T) -> (T, u64) {
    WINDOW.with(|window| window.set(Some(0)));
    let result = body();
    let calls = WINDOW.with(|window| window.replace(None)).unwrap_or(0);
    (result, calls)
}

#[test]
fn the_window_counts_this_threads_allocations_only() {
    let (_, none) = allocations_during(|| std::hint::black_box(3 + 4));
    assert_eq!(none, 0);
    let (boxed, some) = allocations_during(|| Box::new(std::hint::black_box(7u64)));
    assert_eq!((*boxed, some), (7, 1));
    let (_, elsewhere) = allocations_during(|| std::thread::spawn(|| vec![1u8; 64].len()).join().unwrap());
    // Spawning allocates on this thread; the vector on the other does not count.
    assert!(elsewhere >= 1);
    let (_, vector) = allocations_during(|| drop(std::hint::black_box(vec![1u8; 64])));
    assert_eq!(vector, 2, "one allocation and one free");
}
