//! A library built with neither unwind tables nor frame pointers: the walk
//! reaches its frame through the caller's CFI, then finds no rule for it,
//! falls back to the frame pointer, which such code uses as a general
//! register, and ends truncated, without a crash.

mod common;

use std::ffi::c_void;

use common::{frame_names, unwind_here, Capture, Library, BARE_C, NO_UNWIND_FLAGS};
use pcct_native::{Ending, Modules, UnwindCache, Unwinder};

type Bare = unsafe extern "C" fn(extern "C" fn(*mut c_void) -> i64, *mut c_void, u64) -> i64;
type Plain = unsafe extern "C" fn(extern "C" fn(*mut c_void) -> i64, *mut c_void) -> i64;

#[test]
fn a_frame_without_unwind_information_ends_the_walk_truncated() {
    let library = Library::build("bare", BARE_C, false, &NO_UNWIND_FLAGS);
    // SAFETY: `bare` has the `Bare` signature (BARE_C).
    let bare = unsafe { std::mem::transmute::<usize, Bare>(library.address("bare") as usize) };
    let modules = Modules::load().unwrap();
    let unwinder = Unwinder::new(&modules);
    let mut cache = UnwindCache::new();
    let mut capture = Capture::new(&unwinder, &mut cache);
    let stack = capture.stack;
    let below_sp = pcct_native::here!().sp - 0x1000;
    // rbp: above the stack (the read is refused), below the walk's sp (the
    // stack pointer would go backwards), unaligned junk.
    for (junk, expected) in [
        (stack.high + 0x10000, Ending::ReadRefused),
        (below_sp, Ending::SpNotIncreasing),
        (0xdead_beef_dead_beef, Ending::ReadRefused),
    ] {
        capture.walk = None;
        let context = &mut capture as *mut Capture as *mut c_void;
        // SAFETY: `bare` calls `unwind_here` with `context`, a live Capture.
        unsafe { bare(unwind_here, context, junk) };
        let walk = capture.walk.unwrap();
        let names = frame_names(&modules, capture.frames());
        assert_eq!(names.len(), 2, "{names:#?}");
        assert!(names[0].ends_with("unwind_here") && names[1] == "bare", "{names:#?}");
        assert_eq!(walk.ending, expected, "rbp {junk:#x}: {walk:?}");
        assert!(walk.ending.is_truncated());
    }
}

#[test]
fn plain_c_without_unwind_information_is_walked_without_a_crash() {
    let library = Library::build("plain", BARE_C, false, &NO_UNWIND_FLAGS);
    // SAFETY: `plain_a` has the `Plain` signature (BARE_C).
    let plain = unsafe { std::mem::transmute::<usize, Plain>(library.address("plain_a") as usize) };
    let modules = Modules::load().unwrap();
    let unwinder = Unwinder::new(&modules);
    let mut cache = UnwindCache::new();
    let mut capture = Capture::new(&unwinder, &mut cache);
    let context = &mut capture as *mut Capture as *mut c_void;
    // SAFETY: `plain_a` calls `unwind_here` with `context`, a live Capture.
    unsafe { plain(unwind_here, context) };
    let walk = capture.walk.unwrap();
    let names = frame_names(&modules, capture.frames());
    // The callback's own CFI leads to plain_b; beyond it only the frame
    // pointer can help, and rbp is whatever the Rust callers left in it.
    assert!(names.len() >= 2 && names[1] == "plain_b", "{names:#?}");
    assert!(walk.frames <= capture.limit);
    eprintln!("{:?} after {names:?}", walk.ending);
}
