//! The handler's entry points allocate nothing: `Unwinder::unwind` on a real
//! stack (cache warm, cache cold, first walk after a new snapshot), on
//! garbage, and `CachePool::take` and its return. A counting
//! `#[global_allocator]` counts the calls this thread makes while a window
//! is open (a `const` thread-local flag: reading it allocates nothing).
//! It also measures what one cache costs.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ffi::c_void;

use common::{chain_library, unwind_here, Capture, Library, CHAIN_C};
use pcct_native::{CachePool, Modules, Registers, StackBounds, UnwindCache, Unwinder};

thread_local! {
    /// (allocator calls, bytes allocated) in this thread's open window.
    static WINDOW: Cell<Option<(u64, u64)>> = const { Cell::new(None) };
}

struct Counting;

fn observe(bytes: usize) {
    let _ = WINDOW.try_with(|window| {
        if let Some((calls, total)) = window.get() {
            window.set(Some((calls + 1, total + bytes as u64)));
        }
    });
}

// SAFETY: forwards every call to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        observe(layout.size());
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        observe(layout.size());
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        observe(0);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        observe(new_size);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `body`; returns its value and the allocator calls and bytes of this
/// thread meanwhile.
fn counted<T>(body: impl FnOnce() -> T) -> (T, (u64, u64)) {
    WINDOW.with(|window| window.set(Some((0, 0))));
    let value = body();
    let counts = WINDOW.with(|window| window.replace(None)).unwrap_or_default();
    (value, counts)
}

fn walk_the_chain(chain: common::Chain, capture: &mut Capture) -> (u64, u64) {
    let context = capture as *mut Capture as *mut c_void;
    // SAFETY: the chain calls `unwind_here` with `context`, a live Capture.
    let ((), counts) = counted(|| {
        unsafe { chain(unwind_here, context) };
    });
    counts
}

#[test]
fn walks_of_a_real_stack_allocate_nothing() {
    let (_library, chain) = chain_library();
    let mut modules = Modules::load().unwrap();
    let unwinder = Unwinder::new(&modules);
    let mut cache = UnwindCache::new();
    let mut capture = Capture::new(&unwinder, &mut cache);
    assert_eq!(walk_the_chain(chain, &mut capture), (0, 0), "cold cache");
    assert!(capture.walk.unwrap().frames > 6);
    assert_eq!(walk_the_chain(chain, &mut capture), (0, 0), "warm cache");
    assert!(capture.cache.stats().hits() > 0);

    // A library loaded, a new snapshot: its first walk allocates nothing.
    let _other = Library::build("other", CHAIN_C, false, &[]);
    assert!(!modules.refresh().unwrap().is_empty());
    assert!(unwinder.publish(&modules));
    assert_eq!(walk_the_chain(chain, &mut capture), (0, 0), "new snapshot");
}

#[test]
fn walks_of_garbage_allocate_nothing() {
    let modules = Modules::load().unwrap();
    let unwinder = Unwinder::new(&modules);
    let mut cache = UnwindCache::new();
    let words: Vec<u64> = (0..512u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
    let base = 0x5555_0000_0000u64;
    let stack = StackBounds { low: base, high: base + 8 * words.len() as u64 };
    let read = |at: u64| words.get(((at - base) / 8) as usize).copied();
    let code = libc::getpid as *const () as u64;
    let mut out = [0u64; 32];
    let (_, counts) = counted(|| {
        for i in 0..512 {
            let start = Registers { pc: code + i % 64, sp: base + 8 * i, fp: words[i as usize] };
            std::hint::black_box(unwinder.unwind(start, stack, None, read, &mut cache, &mut out));
        }
    });
    assert_eq!(counts, (0, 0));
}

#[test]
fn the_cache_pool_allocates_nothing_and_refuses_when_empty() {
    let pool = CachePool::new(2);
    let ((), counts) = counted(|| {
        let first = pool.take().expect("a free cache");
        let second = pool.take().expect("a second free cache");
        assert!(pool.take().is_none(), "both are taken");
        drop(first);
        let again = pool.take().expect("the first came back");
        drop((second, again));
    });
    assert_eq!(counts, (0, 0));
    assert_eq!(pool.available(), 2);
}

#[test]
fn one_cache_costs_under_64_kib() {
    let (cache, (calls, bytes)) = counted(UnwindCache::new);
    drop(cache);
    eprintln!("UnwindCache::new: {calls} allocations, {bytes} bytes");
    assert!((16 * 1024..64 * 1024).contains(&bytes), "{bytes} bytes");
}
