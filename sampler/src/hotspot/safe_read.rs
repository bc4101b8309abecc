//! Reads of memory that may not be there, which cannot crash the process.
//!
//! The frame walker follows pointers it finds on a thread's stack and in
//! HotSpot's structures. On a consistent stack they are valid; but a sample
//! can land in the middle of a frame being built, and a pointer read at the
//! wrong moment can be garbage. Every read the walker makes therefore goes
//! through one of four tiny assembly functions ([`read_u8`] .. [`read_u64`]):
//! each performs exactly one load at a known instruction. If that load
//! faults (SIGSEGV or SIGBUS), pcct's fault handler ([`install`]) sees the
//! faulting instruction is one of these four, moves the instruction pointer
//! to the function's exit with the "failed" result in place, and returns:
//! the read reports failure instead of killing the JVM. Any other fault is
//! passed, unchanged, to the handler that was installed before pcct's
//! (HotSpot's, which uses SIGSEGV for implicit null checks and safepoint
//! polls) exactly as the kernel would have called it.
//!
//! The same scheme is async-profiler's `SafeAccess` and HotSpot's own
//! `SafeFetch`; it is the only way to read arbitrary memory from a signal
//! handler that costs no system call.
//!
//! Async-signal safety: the reads are plain loads; the fault handler reads
//! its saved previous action (written once, before it is installed) and
//! changes the interrupted context. Nothing allocates or locks.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use crate::error::{Result, SamplerError};

// Each function: rdi = address, rsi = where to store the value. It returns
// 0 in eax unless the load completed. The load sits at the `_load` label;
// the fault handler resumes a faulting load at the `_done` label, where eax
// still holds 0.
std::arch::global_asm!(
    ".text",
    ".p2align 4",
    ".globl pcct_safe_read_u64",
    ".hidden pcct_safe_read_u64",
    "pcct_safe_read_u64:",
    "    xor eax, eax",
    ".globl pcct_safe_read_u64_load",
    ".hidden pcct_safe_read_u64_load",
    "pcct_safe_read_u64_load:",
    "    mov rdx, qword ptr [rdi]",
    "    mov qword ptr [rsi], rdx",
    "    mov eax, 1",
    ".globl pcct_safe_read_u64_done",
    ".hidden pcct_safe_read_u64_done",
    "pcct_safe_read_u64_done:",
    "    ret",
    ".p2align 4",
    ".globl pcct_safe_read_u32",
    ".hidden pcct_safe_read_u32",
    "pcct_safe_read_u32:",
    "    xor eax, eax",
    ".globl pcct_safe_read_u32_load",
    ".hidden pcct_safe_read_u32_load",
    "pcct_safe_read_u32_load:",
    "    mov edx, dword ptr [rdi]",
    "    mov dword ptr [rsi], edx",
    "    mov eax, 1",
    ".globl pcct_safe_read_u32_done",
    ".hidden pcct_safe_read_u32_done",
    "pcct_safe_read_u32_done:",
    "    ret",
    ".p2align 4",
    ".globl pcct_safe_read_u16",
    ".hidden pcct_safe_read_u16",
    "pcct_safe_read_u16:",
    "    xor eax, eax",
    ".globl pcct_safe_read_u16_load",
    ".hidden pcct_safe_read_u16_load",
    "pcct_safe_read_u16_load:",
    "    movzx edx, word ptr [rdi]",
    "    mov word ptr [rsi], dx",
    "    mov eax, 1",
    ".globl pcct_safe_read_u16_done",
    ".hidden pcct_safe_read_u16_done",
    "pcct_safe_read_u16_done:",
    "    ret",
    ".p2align 4",
    ".globl pcct_safe_read_u8",
    ".hidden pcct_safe_read_u8",
    "pcct_safe_read_u8:",
    "    xor eax, eax",
    ".globl pcct_safe_read_u8_load",
    ".hidden pcct_safe_read_u8_load",
    "pcct_safe_read_u8_load:",
    "    movzx edx, byte ptr [rdi]",
    "    mov byte ptr [rsi], dl",
    "    mov eax, 1",
    ".globl pcct_safe_read_u8_done",
    ".hidden pcct_safe_read_u8_done",
    "pcct_safe_read_u8_done:",
    "    ret",
);

extern "C" {
    fn pcct_safe_read_u64(address: usize, out: *mut u64) -> u32;
    fn pcct_safe_read_u32(address: usize, out: *mut u32) -> u32;
    fn pcct_safe_read_u16(address: usize, out: *mut u16) -> u32;
    fn pcct_safe_read_u8(address: usize, out: *mut u8) -> u32;
    static pcct_safe_read_u64_load: u8;
    static pcct_safe_read_u64_done: u8;
    static pcct_safe_read_u32_load: u8;
    static pcct_safe_read_u32_done: u8;
    static pcct_safe_read_u16_load: u8;
    static pcct_safe_read_u16_done: u8;
    static pcct_safe_read_u8_load: u8;
    static pcct_safe_read_u8_done: u8;
}

/// Whether the fault handler is installed: without it, a read of unmapped
/// memory would crash, so every read refuses to run.
static INSTALLED: AtomicBool = AtomicBool::new(false);

macro_rules! safe_read {
    ($name:ident, $raw:ident, $ty:ty) => {
        /// Reads a value at `address`; `None` if the memory is not readable
        /// (or the fault handler is not installed). Async-signal-safe.
        #[inline]
        pub fn $name(address: usize) -> Option<$ty> {
            if address < MIN_ADDRESS || !INSTALLED.load(Ordering::Relaxed) {
                return None;
            }
            let mut value: $ty = 0;
            // SAFETY: the assembly function performs one load from `address`
            // and one store into `value`, which we own; if the load faults,
            // the handler installed by `install` resumes it at its exit with
            // 0 in eax and `value` untouched.
            let done = unsafe { $raw(address, &mut value) };
            (done != 0).then_some(value)
        }
    };
}

/// Addresses below this are never read (the null page and its neighbours:
/// a null pointer plus a field offset).
pub const MIN_ADDRESS: usize = 0x1000;

safe_read!(read_u64, pcct_safe_read_u64, u64);
safe_read!(read_u32, pcct_safe_read_u32, u32);
safe_read!(read_u16, pcct_safe_read_u16, u16);
safe_read!(read_u8, pcct_safe_read_u8, u8);

/// Where a fault at `pc` resumes, if `pc` is one of the four loads.
#[inline]
fn resume_address(pc: usize) -> Option<usize> {
    // SAFETY: taking the addresses of the assembly labels (never reading them).
    let pairs = {
        [
            (&raw const pcct_safe_read_u64_load as usize, &raw const pcct_safe_read_u64_done as usize),
            (&raw const pcct_safe_read_u32_load as usize, &raw const pcct_safe_read_u32_done as usize),
            (&raw const pcct_safe_read_u16_load as usize, &raw const pcct_safe_read_u16_done as usize),
            (&raw const pcct_safe_read_u8_load as usize, &raw const pcct_safe_read_u8_done as usize),
        ]
    };
    pairs.iter().find(|(load, _)| *load == pc).map(|(_, done)| *done)
}

/// The actions that were installed for SIGSEGV and SIGBUS before pcct's.
struct Previous {
    segv: libc::sigaction,
    bus: libc::sigaction,
}

// SAFETY: sigaction structs are plain data (function addresses, flags, masks).
unsafe impl Sync for Previous {}
// SAFETY: as above.
unsafe impl Send for Previous {}

static PREVIOUS: OnceLock<Previous> = OnceLock::new();

/// The SIGSEGV/SIGBUS handler: resumes faulting safe reads, passes every
/// other fault to the previous handler.
///
/// # Safety
/// Called by the kernel only, with a valid `siginfo_t` and `ucontext_t`.
unsafe extern "C" fn on_fault(signal: i32, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    if !context.is_null() {
        // SAFETY: the kernel passes this signal's ucontext_t.
        let registers = unsafe { &mut (*(context as *mut libc::ucontext_t)).uc_mcontext.gregs };
        let pc = registers[libc::REG_RIP as usize] as usize;
        if let Some(resume) = resume_address(pc) {
            registers[libc::REG_RIP as usize] = resume as i64;
            return;
        }
    }
    // SAFETY: `PREVIOUS` is set before this handler is installed.
    unsafe { pass_on(signal, info, context) };
}

/// Calls the action that was installed before pcct's, as the kernel would.
///
/// # Safety
/// Only from [`on_fault`], with its arguments.
unsafe fn pass_on(signal: i32, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let Some(previous) = PREVIOUS.get() else { return };
    let action = if signal == libc::SIGBUS { &previous.bus } else { &previous.segv };
    let handler = action.sa_sigaction;
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        // Nobody handled it before: restore the default action and return;
        // the faulting instruction runs again and the kernel acts as it
        // would have without pcct.
        let mut default = MaybeUninit::<libc::sigaction>::zeroed();
        // SAFETY: a zeroed sigaction with SIG_DFL is the default action.
        unsafe {
            (*default.as_mut_ptr()).sa_sigaction = libc::SIG_DFL;
            libc::sigaction(signal, default.as_ptr(), std::ptr::null_mut());
        }
        return;
    }
    if action.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: an SA_SIGINFO handler takes these three arguments.
        let function: extern "C" fn(i32, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(handler) };
        function(signal, info, context);
    } else {
        // SAFETY: a plain handler takes the signal number.
        let function: extern "C" fn(i32) = unsafe { std::mem::transmute(handler) };
        function(signal);
    }
}

/// Installs the fault handler for SIGSEGV and SIGBUS (once; later calls do
/// nothing), keeping the previous handlers' flags and masks so that the
/// faults passed on to them are delivered as before.
pub fn install() -> Result<()> {
    static ONCE: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    ONCE.get_or_init(install_once)
        .clone()
        .map_err(|reason| SamplerError::Signal { signal: "SIGSEGV".to_string(), reason })
}

fn install_once() -> std::result::Result<(), String> {
    let segv = current_action(libc::SIGSEGV)?;
    let bus = current_action(libc::SIGBUS)?;
    if PREVIOUS.set(Previous { segv, bus }).is_err() {
        return Err("the fault handler's previous actions were already recorded".to_string());
    }
    for (signal, previous) in [(libc::SIGSEGV, segv), (libc::SIGBUS, bus)] {
        let mut action = previous;
        action.sa_sigaction = on_fault as *const () as usize;
        // Keep the previous mask and flags (HotSpot's), but always get the
        // context, and never have the resetting or no-defer flags the old
        // handler may not have been written for changed.
        action.sa_flags = (previous.sa_flags | libc::SA_SIGINFO) & !libc::SA_RESETHAND;
        // SAFETY: installs a handler that follows the rules above.
        if unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) } != 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
    }
    INSTALLED.store(true, Ordering::Release);
    Ok(())
}

fn current_action(signal: i32) -> std::result::Result<libc::sigaction, String> {
    let mut current = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: querying the disposition (null new action) only writes `current`.
    if unsafe { libc::sigaction(signal, std::ptr::null(), current.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    // SAFETY: sigaction succeeded and initialised `current`.
    Ok(unsafe { current.assume_init() })
}

/// Whether the fault handler is installed (reads work).
pub fn is_installed() -> bool {
    INSTALLED.load(Ordering::Acquire)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapping(protection: i32) -> usize {
        // SAFETY: an anonymous private mapping of one page, owned by the test.
        let page = unsafe {
            libc::mmap(std::ptr::null_mut(), 4096, protection, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
        };
        assert_ne!(page, libc::MAP_FAILED);
        page as usize
    }

    #[test]
    fn readable_memory_reads_its_value_and_unreadable_memory_reads_nothing() {
        install().expect("fault handler");
        let values: [u64; 2] = [0x1122_3344_5566_7788, 0x99AA_BBCC_DDEE_FF00];
        let address = values.as_ptr() as usize;
        assert_eq!(read_u64(address), Some(values[0]));
        assert_eq!(read_u32(address), Some(0x5566_7788));
        assert_eq!(read_u16(address + 2), Some(0x5566));
        assert_eq!(read_u8(address + 8), Some(0x00));
        assert_eq!(read_u64(address + 3), Some(u64::from_le_bytes([0x55, 0x44, 0x33, 0x22, 0x11, 0x00, 0xFF, 0xEE])));

        // The null page, a page that is mapped but not readable, an address
        // above the user address space, and non-canonical addresses. (A page
        // unmapped here could be mapped again at once by a test running
        // beside this one: not used.)
        let no_access = mapping(libc::PROT_NONE);
        for bad in
            [0, 8, 0xFFF, no_access, no_access + 4095, 0x7FFF_FFFF_F000_0000, 0x8000_0000_0000_0000, usize::MAX - 7]
        {
            assert_eq!(read_u64(bad), None, "{bad:#x}");
            assert_eq!(read_u32(bad), None, "{bad:#x}");
            assert_eq!(read_u16(bad), None, "{bad:#x}");
            assert_eq!(read_u8(bad), None, "{bad:#x}");
        }
        // Reads keep working after faults.
        assert_eq!(read_u64(address + 8), Some(values[1]));
    }

    #[test]
    fn a_read_straddling_the_end_of_a_mapping_fails() {
        install().expect("fault handler");
        // Two pages, the second made unreadable.
        // SAFETY: an anonymous mapping of two pages, owned by the test.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                8192,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        } as usize;
        // SAFETY: changes the protection of the test's own page.
        assert_eq!(unsafe { libc::mprotect((base + 4096) as *mut libc::c_void, 4096, libc::PROT_NONE) }, 0);
        assert_eq!(read_u64(base + 4088), Some(0));
        assert_eq!(read_u64(base + 4092), None);
        assert_eq!(read_u32(base + 4092), Some(0));
        assert_eq!(read_u32(base + 4094), None);
    }
}
