//! `Modules::refresh` finds a library loaded since (dlopen) and drops one
//! unloaded since (dlclose); the unwinder publishes a snapshot of each
//! change and can then walk through the new library's frames.

mod common;

use std::ffi::c_void;

use common::{frame_names, unwind_here, Capture, Chain, Library, CHAIN_C};
use pcct_native::{Modules, UnwindCache, Unwinder};

fn is_mapped(library: &std::path::Path) -> bool {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    maps.lines().any(|line| line.ends_with(library.to_str().unwrap()))
}

#[test]
fn a_library_loaded_later_is_found_and_one_unloaded_is_dropped() {
    let mut modules = Modules::load().unwrap();
    let unwinder = Unwinder::new(&modules);
    let generation = modules.generation();

    let library = Library::build("later", CHAIN_C, false, &[]);
    let chain_a = library.address("chain_a");
    assert!(modules.find(chain_a).is_none(), "not yet seen");
    let refresh = modules.refresh().unwrap();
    assert_eq!(refresh.added, std::slice::from_ref(&library.path), "{refresh:?}");
    assert!(refresh.removed.is_empty());
    assert_eq!(modules.generation(), generation + 1);
    let module = modules.find(chain_a).expect("found after the refresh");
    assert_eq!(module.path, library.path);
    assert!(module.problem.is_none(), "{module:?}");

    assert!(unwinder.publish(&modules));
    assert!(!unwinder.publish(&modules), "nothing changed since");
    assert_eq!(unwinder.generation(), modules.generation());
    assert_eq!(unwinder.retired(), 0, "no walk was in flight: the old snapshot is freed");
    let mut cache = UnwindCache::new();
    let mut capture = Capture::new(&unwinder, &mut cache);
    // SAFETY: `chain_a` has the `Chain` signature (CHAIN_C).
    let chain = unsafe { std::mem::transmute::<usize, Chain>(chain_a as usize) };
    // SAFETY: the chain calls `unwind_here` with a live Capture.
    unsafe { chain(unwind_here, &mut capture as *mut Capture as *mut c_void) };
    let names = frame_names(&modules, capture.frames());
    assert_eq!(names[1..4], ["chain_c", "chain_b", "chain_a"], "{names:#?}");

    let path = library.path.clone();
    library.close();
    assert!(!is_mapped(&path), "dlclose unmaps a library nothing else holds");
    let refresh = modules.refresh().unwrap();
    assert_eq!(refresh.removed, [path], "{refresh:?}");
    assert!(modules.find(chain_a).is_none());
    assert!(unwinder.publish(&modules));
}
