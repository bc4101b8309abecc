//! The unwinder walks a real stack of this thread: Rust frames (DWARF CFI of
//! the test binary), a C library's call chain compiled for the test, and on
//! to the thread's start; and it stops at a given stack pointer, as it will
//! at the last Java frame.

mod common;

use std::ffi::c_void;

use common::{chain_library, frame_names, unwind_here, Capture};
use pcct_native::{Ending, Modules, UnwindCache, Unwinder};

/// Calls the chain from a known Rust frame; with `stop_here`, the walk must
/// stop at this frame's stack pointer.
#[inline(never)]
fn call_chain(chain: common::Chain, capture: &mut Capture, stop_here: bool) {
    if stop_here {
        capture.stop_sp = Some(pcct_native::here!().sp);
    }
    let context = capture as *mut Capture as *mut c_void;
    // SAFETY: the chain calls `unwind_here` with `context`, a live Capture.
    let result = unsafe { chain(unwind_here, context) };
    std::hint::black_box(result);
}

#[test]
fn a_c_call_chain_is_walked_in_order_to_the_thread_start() {
    let (_library, chain) = chain_library();
    let modules = Modules::load().unwrap();
    let unwinder = Unwinder::new(&modules);
    let mut cache = UnwindCache::new();
    let mut capture = Capture::new(&unwinder, &mut cache);
    call_chain(chain, &mut capture, false);

    let walk = capture.walk.unwrap();
    let names = frame_names(&modules, capture.frames());
    assert!(names[0].ends_with("unwind_here"), "{names:#?}");
    assert_eq!(names[1..4], ["chain_c", "chain_b", "chain_a"], "{names:#?}");
    assert!(names[4].ends_with("call_chain"), "{names:#?}");
    assert!(names[5].ends_with("a_c_call_chain_is_walked_in_order_to_the_thread_start"), "{names:#?}");
    assert_eq!(walk.ending, Ending::Root, "{walk:?} {names:#?}");
    // The thread's start: clone3 (or clone), which Debian's stripped libc
    // names only by its file, unless its debug file is installed
    // (libc6-dbg: `symbols::debug_file`).
    let last = names.last().unwrap();
    assert!(last.starts_with("libc.so") || last.starts_with("clone"), "{names:#?}");
}

#[test]
fn the_walk_stops_at_the_stop_sp_and_says_where_to_resume() {
    let (_library, chain) = chain_library();
    let modules = Modules::load().unwrap();
    let unwinder = Unwinder::new(&modules);
    let mut cache = UnwindCache::new();
    let mut capture = Capture::new(&unwinder, &mut cache);
    call_chain(chain, &mut capture, true);

    let walk = capture.walk.unwrap();
    let names = frame_names(&modules, capture.frames());
    assert_eq!(walk.ending, Ending::JavaFrame, "{walk:?} {names:#?}");
    assert_eq!(names.len(), 4, "{names:#?}");
    assert_eq!(names[1..], ["chain_c", "chain_b", "chain_a"]);
    assert_eq!(walk.resume.sp, capture.stop_sp.unwrap());
    let resume = frame_names(&modules, &[walk.resume.pc]);
    assert!(resume[0].ends_with("call_chain"), "{resume:?}");
}

#[test]
fn a_short_buffer_ends_the_walk_full_where_it_stopped() {
    let (_library, chain) = chain_library();
    let modules = Modules::load().unwrap();
    let unwinder = Unwinder::new(&modules);
    let mut cache = UnwindCache::new();
    let mut capture = Capture::new(&unwinder, &mut cache);
    capture.limit = 3;
    call_chain(chain, &mut capture, false);

    let walk = capture.walk.unwrap();
    assert_eq!((walk.frames, walk.ending), (3, Ending::BufferFull));
    assert!(walk.ending.is_truncated());
    let names = frame_names(&modules, &[capture.frames[0], capture.frames[1], capture.frames[2], walk.resume.pc]);
    assert_eq!(names[1..], ["chain_c", "chain_b", "chain_a"], "{names:#?}");
}
