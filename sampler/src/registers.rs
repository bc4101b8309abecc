//! The register checksum (HPROF's ThreadHasRun): a thread whose registers
//! are all unchanged between two signals has not run in between.
//!
//! Measured on this kind of machine (see `shared/NOTES.md`): a blocked
//! thread's 18 registers (rip, rsp, rbp, rax..r15, eflags) are identical
//! between signals in essentially every case; running threads never had all
//! 18 equal, while PC/SP/FP alone were equal in 1-2% of running samples, so
//! the general registers are included. The one exception seen on blocked
//! threads is rax alternating between a syscall number and a restart code
//! in timed waits: values of rax that are syscall-restart artifacts are
//! folded to one value before hashing.

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
compile_error!(
    "pcct reads x86-64 Linux registers from the signal's ucontext (and HotSpot's x86-64 frames): other targets are not supported"
);

/// Registers read from a signal's `ucontext`, x86-64 only.
pub const REGISTER_COUNT: usize = 18;

/// Syscall numbers and kernel restart codes that rax holds in a thread
/// interrupted inside a blocking system call (x86-64).
const RESTART_ARTIFACTS: [u64; 8] = [
    202,              // futex
    219,              // restart_syscall
    230,              // clock_nanosleep
    35,               // nanosleep
    (-4i64) as u64,   // -EINTR
    (-512i64) as u64, // -ERESTARTSYS
    (-513i64) as u64, // -ERESTARTNOINTR
    (-516i64) as u64, // -ERESTART_RESTARTBLOCK
];

/// Indices in the array [`read`] returns.
pub const RIP: usize = 0;
pub const RSP: usize = 1;
pub const RBP: usize = 2;
const RAX: usize = 3;
pub const RBX: usize = 4;
pub const R13: usize = 14;

/// The checksum of a register set. Pure arithmetic: no allocation, no
/// memory beyond the argument, safe to call from a signal handler.
#[inline]
pub fn checksum(registers: &[u64; REGISTER_COUNT]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut hash: u64 = 0xCBF2_9CE4_8422_2325;
    let mut index = 0;
    while index < REGISTER_COUNT {
        let mut value = registers[index];
        if index == RAX && is_restart_artifact(value) {
            value = u64::MAX;
        }
        hash = (hash.rotate_left(5) ^ value).wrapping_mul(K);
        index += 1;
    }
    // Never 0: 0 means "no previous checksum" in the thread slots.
    hash | 1
}

#[inline]
fn is_restart_artifact(value: u64) -> bool {
    let mut index = 0;
    while index < RESTART_ARTIFACTS.len() {
        if RESTART_ARTIFACTS[index] == value {
            return true;
        }
        index += 1;
    }
    false
}

/// Reads rip, rsp, rbp, rax, rbx, rcx, rdx, rsi, rdi, r8-r15 and eflags.
///
/// # Safety
/// `ucontext` must be the `ucontext_t` the kernel passed to a signal handler.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[inline]
pub unsafe fn read(ucontext: *const libc::c_void) -> [u64; REGISTER_COUNT] {
    // SAFETY: the caller guarantees `ucontext` points to a live ucontext_t.
    let context = unsafe { &*(ucontext as *const libc::ucontext_t) };
    let g = &context.uc_mcontext.gregs;
    let r = |index: libc::c_int| g[index as usize] as u64;
    [
        r(libc::REG_RIP),
        r(libc::REG_RSP),
        r(libc::REG_RBP),
        r(libc::REG_RAX),
        r(libc::REG_RBX),
        r(libc::REG_RCX),
        r(libc::REG_RDX),
        r(libc::REG_RSI),
        r(libc::REG_RDI),
        r(libc::REG_R8),
        r(libc::REG_R9),
        r(libc::REG_R10),
        r(libc::REG_R11),
        r(libc::REG_R12),
        r(libc::REG_R13),
        r(libc::REG_R14),
        r(libc::REG_R15),
        r(libc::REG_EFL),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_register_change_changes_the_checksum() {
        let base = [7u64; REGISTER_COUNT];
        let reference = checksum(&base);
        for index in 0..REGISTER_COUNT {
            let mut changed = base;
            changed[index] ^= 1;
            assert_ne!(checksum(&changed), reference, "register {index}");
        }
        assert_ne!(reference, 0);
    }

    #[test]
    fn syscall_restart_values_of_rax_are_folded() {
        let mut a = [3u64; REGISTER_COUNT];
        let mut b = a;
        a[RAX] = 202;
        b[RAX] = 219;
        assert_eq!(checksum(&a), checksum(&b));
        b[RAX] = 1;
        assert_ne!(checksum(&a), checksum(&b));
    }
}
