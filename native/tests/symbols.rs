//! Addresses of known functions in this process are named: a libc function,
//! a Rust function of this test binary, a C++ function of a library compiled
//! for the test (demangled), and a hidden function of a library without
//! symbols for it (named by the library's file name), and a static function
//! of a stripped library named from its separate debug file.

mod common;

use common::Library;
use pcct_native::{Modules, Symbolizer};

#[inline(never)]
fn marker_function_of_the_test_binary() -> u64 {
    std::hint::black_box(7)
}

fn named(address: u64) -> pcct_native::Symbol {
    let modules = Modules::load().unwrap();
    Symbolizer::new().symbolize(&modules, address).unwrap_or_else(|| panic!("{address:#x} is in no module"))
}

#[test]
fn getpid_is_named_in_libc() {
    let symbol = named(libc::getpid as *const () as u64 + 1);
    assert!(symbol.library.starts_with("libc.so"), "{symbol:?}");
    assert_eq!((symbol.function.as_deref(), symbol.offset), (Some("getpid"), 1));
}

#[test]
fn a_rust_function_of_the_test_binary_is_named_demangled() {
    let symbol = named(marker_function_of_the_test_binary as *const () as u64);
    assert_eq!(symbol.function.as_deref(), Some("symbols::marker_function_of_the_test_binary"), "{symbol:?}");
    assert_eq!(symbol.offset, 0);
}

const WIDGET_CPP: &str = r#"
namespace ns {
struct Widget {
    static int spin(int n);
};
__attribute__((noinline)) int Widget::spin(int n) {
    int total = 0;
    for (int i = 0; i < n; i++) { total += i * n; __asm__ volatile("" ::: "memory"); }
    return total;
}
template <typename T> __attribute__((noinline)) T twice(T value) { return value + value; }
template double twice<double>(double);
}
extern "C" void *spin_address() { return reinterpret_cast<void *>(&ns::Widget::spin); }
extern "C" void *twice_address() { return reinterpret_cast<void *>(&ns::twice<double>); }
"#;

#[test]
fn a_cpp_function_is_named_demangled() {
    let library = Library::build("widget", WIDGET_CPP, true, &[]);
    let address_of = |getter: &str| {
        // SAFETY: both getters take nothing and return a code address (WIDGET_CPP).
        let getter = unsafe { std::mem::transmute::<usize, extern "C" fn() -> u64>(library.address(getter) as usize) };
        getter()
    };
    let spin = named(address_of("spin_address") + 2);
    assert_eq!(spin.library.as_ref(), "libwidget.so");
    assert_eq!((spin.function.as_deref(), spin.offset), (Some("ns::Widget::spin(int)"), 2));
    let twice = named(address_of("twice_address"));
    assert_eq!(twice.function.as_deref(), Some("double ns::twice<double>(double)"), "{twice:?}");
}

const HIDDEN_C: &str = r#"
__attribute__((noinline)) static int hidden_work(int n) {
    int total = 0;
    for (int i = 0; i < n; i++) { total += i; __asm__ volatile("" ::: "memory"); }
    return total;
}
__attribute__((visibility("default"))) void *hidden_address(void) { return (void *)&hidden_work; }
"#;

#[test]
fn a_function_without_a_symbol_is_named_by_its_library() {
    let library = Library::build("hidden", HIDDEN_C, false, &["-fvisibility=hidden", "-s"]);
    // SAFETY: `hidden_address` takes nothing and returns a code address.
    let getter =
        unsafe { std::mem::transmute::<usize, extern "C" fn() -> u64>(library.address("hidden_address") as usize) };
    let symbol = named(getter());
    assert_eq!((symbol.library.as_ref(), symbol.function.as_deref()), ("libhidden.so", None), "{symbol:?}");
    assert_eq!(symbol.name(), "libhidden.so");
    let modules = Modules::load().unwrap();
    let module = modules.find(getter()).unwrap();
    assert_eq!(symbol.offset, getter() - module.bias, "the offset is the file's address");
}

#[test]
fn addresses_outside_every_module_have_no_name() {
    let modules = Modules::load().unwrap();
    let heap = Box::new(1u64);
    assert_eq!(Symbolizer::new().symbolize(&modules, &*heap as *const u64 as u64), None);
    assert_eq!(Symbolizer::new().symbolize(&modules, 0), None);
}

#[test]
fn a_stripped_librarys_static_function_is_named_from_its_debug_file() {
    let library = Library::build_split("split", HIDDEN_C, &[]);
    // SAFETY: `hidden_address` takes nothing and returns a code address.
    let getter =
        unsafe { std::mem::transmute::<usize, extern "C" fn() -> u64>(library.address("hidden_address") as usize) };
    let symbol = named(getter() + 1);
    assert_eq!(symbol.library.as_ref(), "libsplit.so");
    assert_eq!((symbol.function.as_deref(), symbol.offset), (Some("hidden_work"), 1), "{symbol:?}");
    // Without the debug file, the library's own symbols do not name it.
    std::fs::remove_file(library.path.with_extension("so.debug")).unwrap();
    let without = named(getter() + 1);
    assert_eq!(without.function, None, "{without:?}");
}

#[test]
fn a_debug_file_is_found_by_build_id_under_the_debug_root() {
    let library = Library::build_split("byid", HIDDEN_C, &["-Wl,--build-id=sha1"]);
    let root = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(&library.path).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let id: String = object::Object::build_id(&file).unwrap().unwrap().iter().map(|b| format!("{b:02x}")).collect();
    let by_id = root.path().join(".build-id").join(&id[..2]).join(format!("{}.debug", &id[2..]));
    std::fs::create_dir_all(by_id.parent().unwrap()).unwrap();
    std::fs::rename(library.path.with_extension("so.debug"), &by_id).unwrap();
    let found = pcct_native::symbols::debug_file(&file, &library.path, root.path());
    assert_eq!(found.as_deref(), Some(by_id.as_path()));
    let table = pcct_native::SymbolTable::parse_with_debug(&*bytes, &library.path, root.path()).unwrap();
    assert!(table.len() >= 2, "the debug file's symbols are read: {} functions", table.len());
}
