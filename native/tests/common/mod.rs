//! What the native crate's tests share: small C and C++ libraries compiled
//! for the test and loaded with dlopen, the registers of the current point
//! of a function, and a reader of the current thread's own stack.
//!
//! Each test binary uses some of these helpers.
#![allow(dead_code)]

use std::ffi::{c_void, CString};
use std::path::{Path, PathBuf};
use std::process::Command;

use pcct_native::{NativeWalk, StackBounds, UnwindCache, Unwinder};

/// A library compiled for the test, loaded until dropped.
pub struct Library {
    pub path: PathBuf,
    handle: *mut c_void,
    _dir: tempfile::TempDir,
}

impl Library {
    /// Compiles `source` (C, or C++ if `cpp`) into `lib<name>.so` with
    /// `flags`, and loads it.
    pub fn build(name: &str, source: &str, cpp: bool, flags: &[&str]) -> Library {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = compile(dir.path(), name, source, cpp, flags);
        let handle = dlopen(&path);
        Library { path, handle, _dir: dir }
    }

    /// Compiles `source` (C) into `lib<name>.so` with `flags` and debug
    /// information, moves its symbols and debug information into
    /// `lib<name>.so.debug` beside it (`objcopy --only-keep-debug`), strips
    /// the library and links the two (`--add-gnu-debuglink`), as
    /// distributions ship libraries; then loads it.
    pub fn build_split(name: &str, source: &str, flags: &[&str]) -> Library {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut all = vec!["-g"];
        all.extend_from_slice(flags);
        let path = compile(dir.path(), name, source, false, &all);
        let debug = path.with_extension("so.debug");
        run("objcopy", &["--only-keep-debug".as_ref(), path.as_os_str(), debug.as_os_str()]);
        run("strip", &["--strip-all".as_ref(), path.as_os_str()]);
        let link = format!("--add-gnu-debuglink={}", debug.display());
        run("objcopy", &[link.as_ref(), path.as_os_str()]);
        let handle = dlopen(&path);
        Library { path, handle, _dir: dir }
    }

    /// The address of the exported `symbol`.
    pub fn address(&self, symbol: &str) -> u64 {
        let name = CString::new(symbol).unwrap();
        // SAFETY: the handle is open (closed only in Drop); the name is a C string.
        let address = unsafe { libc::dlsym(self.handle, name.as_ptr()) };
        assert!(!address.is_null(), "{symbol} not found in {}", self.path.display());
        address as u64
    }

    /// Unloads the library now.
    pub fn close(mut self) {
        self.unload();
    }

    fn unload(&mut self) {
        if !self.handle.is_null() {
            // SAFETY: opened by dlopen, closed once.
            unsafe { libc::dlclose(self.handle) };
            self.handle = std::ptr::null_mut();
        }
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        self.unload();
    }
}

fn compile(dir: &Path, name: &str, source: &str, cpp: bool, flags: &[&str]) -> PathBuf {
    let source_path = dir.join(if cpp { format!("{name}.cpp") } else { format!("{name}.c") });
    std::fs::write(&source_path, source).unwrap();
    let output = dir.join(format!("lib{name}.so"));
    let compiler = if cpp { "c++" } else { "cc" };
    let result = Command::new(compiler)
        .args(["-shared", "-fPIC", "-O2"])
        .args(flags)
        .arg("-o")
        .arg(&output)
        .arg(&source_path)
        .output()
        .unwrap_or_else(|error| panic!("{compiler} is needed for this test: {error}"));
    assert!(result.status.success(), "{compiler} failed: {}", String::from_utf8_lossy(&result.stderr));
    output
}

fn run(tool: &str, args: &[&std::ffi::OsStr]) {
    let result = Command::new(tool).args(args).output().unwrap_or_else(|error| panic!("{tool} is needed: {error}"));
    assert!(result.status.success(), "{tool} failed: {}", String::from_utf8_lossy(&result.stderr));
}

fn dlopen(path: &Path) -> *mut c_void {
    let name = CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a C string naming a library this test built.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!handle.is_null(), "dlopen {} failed", path.display());
    handle
}

/// A call chain `chain_a -> chain_b -> chain_c -> callback(context)`, none
/// of them inlined or tail-called.
pub const CHAIN_C: &str = r#"
typedef long (*callback)(void *);
#define KEEP __attribute__((noinline, visibility("default")))
KEEP long chain_c(callback cb, void *context) { long r = cb(context); __asm__ volatile("" ::: "memory"); return r + 1; }
KEEP long chain_b(callback cb, void *context) { long r = chain_c(cb, context); __asm__ volatile("" ::: "memory"); return r + 1; }
KEEP long chain_a(callback cb, void *context) { long r = chain_b(cb, context); __asm__ volatile("" ::: "memory"); return r + 1; }
"#;

/// Built without unwind tables or frame pointers. `bare` holds a value of
/// its caller's choosing in rbp while it calls back, as code compiled
/// without frame pointers may (written in assembly so that it surely does);
/// `plain_a -> plain_b` are ordinary C built the same way.
pub const BARE_C: &str = r#"
typedef long (*callback)(void *);
__asm__(
    ".text\n"
    ".globl bare\n"
    ".type bare, @function\n"
    "bare:\n"
    "    push %rbp\n"
    "    mov %rdx, %rbp\n"
    "    mov %rdi, %rax\n"
    "    mov %rsi, %rdi\n"
    "    call *%rax\n"
    "    pop %rbp\n"
    "    ret\n"
    ".size bare, .-bare\n");
#define KEEP __attribute__((noinline, visibility("default")))
KEEP long plain_b(callback cb, void *context) { long r = cb(context); __asm__ volatile("" ::: "memory"); return r + 1; }
KEEP long plain_a(callback cb, void *context) { long r = plain_b(cb, context); __asm__ volatile("" ::: "memory"); return r + 1; }
"#;

/// The flags that leave a library without unwind tables or frame pointers.
pub const NO_UNWIND_FLAGS: [&str; 3] =
    ["-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-fomit-frame-pointer"];

/// `chain_a(callback, context)` of the library built from [`CHAIN_C`].
pub type Chain = unsafe extern "C" fn(extern "C" fn(*mut c_void) -> i64, *mut c_void) -> i64;

/// The chain library, loaded.
pub fn chain_library() -> (Library, Chain) {
    let library = Library::build("chain", CHAIN_C, false, &[]);
    let address = library.address("chain_a");
    // SAFETY: `chain_a` has the `Chain` signature (CHAIN_C).
    let chain = unsafe { std::mem::transmute::<usize, Chain>(address as usize) };
    (library, chain)
}

/// Reads a word of this thread's own stack. The unwinder asks only for
/// words inside the stack bounds it was given (the thread's stack), above
/// the walk's start, which stay mapped while the walk runs below them.
pub fn read_own_stack(address: u64) -> Option<u64> {
    // SAFETY: see above: a mapped, aligned-or-not word of this thread's stack.
    Some(unsafe { std::ptr::read_unaligned(address as *const u64) })
}

/// One walk from a callback, and what it needs.
pub struct Capture<'a> {
    pub unwinder: &'a Unwinder,
    pub cache: &'a mut UnwindCache,
    pub stack: StackBounds,
    pub stop_sp: Option<u64>,
    /// How much of `frames` the walk may fill.
    pub limit: usize,
    pub frames: [u64; 128],
    pub walk: Option<NativeWalk>,
}

impl<'a> Capture<'a> {
    pub fn new(unwinder: &'a Unwinder, cache: &'a mut UnwindCache) -> Capture<'a> {
        let stack = StackBounds::current_thread().expect("this thread's stack bounds");
        Capture { unwinder, cache, stack, stop_sp: None, limit: 128, frames: [0; 128], walk: None }
    }

    /// The frames written.
    pub fn frames(&self) -> &[u64] {
        &self.frames[..self.walk.expect("a walk ran").frames]
    }
}

/// A callback for the chain: walks the native stack from its own registers
/// into the `Capture` its context points to.
pub extern "C" fn unwind_here(context: *mut c_void) -> i64 {
    // SAFETY: the test passes a `Capture` that outlives the call.
    let capture = unsafe { &mut *(context as *mut Capture) };
    let start = pcct_native::here!();
    let walk = capture.unwinder.unwind(
        start,
        capture.stack,
        capture.stop_sp,
        read_own_stack,
        capture.cache,
        &mut capture.frames[..capture.limit],
    );
    capture.walk = Some(walk);
    walk.frames as i64
}

/// The names of a walk's frames (return addresses looked up at the call).
pub fn frame_names(modules: &pcct_native::Modules, frames: &[u64]) -> Vec<String> {
    let mut symbolizer = pcct_native::Symbolizer::new();
    let lookup = |(index, &address): (usize, &u64)| if index == 0 { address } else { address - 1 };
    frames
        .iter()
        .enumerate()
        .map(lookup)
        .map(|address| symbolizer.symbolize(modules, address).map_or("?".into(), |symbol| symbol.name().to_owned()))
        .collect()
}
