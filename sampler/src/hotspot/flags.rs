//! HotSpot's flags (`-XX:...`), found in its flag table (`JVMFlag::flags`,
//! described by VMStructs), read (the inlining thresholds the JIT advice
//! quotes) and `DebugNonSafepoints` turned on through it.
//!
//! Why: compiled code records where inlined code is (its debug
//! information: which method and bytecode every machine instruction belongs
//! to) only at safepoints, unless `DebugNonSafepoints` is on. Without it a
//! sample inside an inlined callee (`Long.longValue` inlined into a
//! search loop) is charged to whichever frame the nearest safepoint
//! describes, usually the caller. With it, every instruction of code
//! compiled from then on is described. async-profiler turns it on the same
//! way; JFR and HotSpot itself turn it on when a JVMTI agent asks for
//! CompiledMethodLoad events. Code compiled before the flag was set (a late
//! attach) keeps the coarser information until it is compiled again.

use super::vmstructs::VmStructs;

/// The flag's origin bits (`JVMFlag::Flags`): 0 is "default".
const ORIGIN_MASK: u32 = 15;

/// What [`enable_debug_non_safepoints`] found and did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagChange {
    /// The flag was off by default; pcct turned it on.
    Enabled,
    /// The flag was already on (set by the user or by HotSpot).
    AlreadyOn,
    /// The user set the flag off explicitly (`-XX:-DebugNonSafepoints`):
    /// left alone.
    OffByUser,
    /// This VM has no such flag, or its flag table is not described.
    Missing,
}

impl FlagChange {
    /// Whether compiled code is (from now on) described at every instruction.
    pub fn is_on(self) -> bool {
        matches!(self, FlagChange::Enabled | FlagChange::AlreadyOn)
    }

    pub fn describe(self) -> &'static str {
        match self {
            FlagChange::Enabled => "enabled by pcct",
            FlagChange::AlreadyOn => "already on",
            FlagChange::OffByUser => "off (set by -XX:-DebugNonSafepoints)",
            FlagChange::Missing => "not found in this JVM",
        }
    }
}

/// One boolean flag of the table.
#[derive(Clone, Copy, Debug)]
struct BoolFlag {
    /// Where its value lives.
    value: usize,
    /// Where its `_flags` word (origin bits) lives.
    flags: usize,
}

/// Finds the boolean flag `name` in the flag table.
fn find(tables: &VmStructs, name: &str) -> Option<BoolFlag> {
    let array_pointer = tables.address("JVMFlag", "flags")?;
    let count_address = tables.address("JVMFlag", "numFlags")?;
    let size = tables.size("JVMFlag")?;
    let name_offset = tables.offset("JVMFlag", "_name")?;
    let addr_offset = tables.offset("JVMFlag", "_addr")?;
    let flags_offset = tables.offset("JVMFlag", "_flags")?;
    // SAFETY: `JVMFlag::flags` and `JVMFlag::numFlags` are HotSpot's static
    // flag table and its length; each entry is `size` bytes with the
    // described fields; names are NUL-terminated (the last entry's is null).
    unsafe {
        let array = *(array_pointer as *const usize);
        let count = *(count_address as *const usize);
        if array == 0 {
            return None;
        }
        (0..count).map(|index| array + index * size).find_map(|entry| {
            let name_pointer = *((entry + name_offset) as *const *const std::ffi::c_char);
            let value = *((entry + addr_offset) as *const usize);
            if name_pointer.is_null() || value == 0 {
                return None;
            }
            (std::ffi::CStr::from_ptr(name_pointer).to_bytes() == name.as_bytes())
                .then_some(BoolFlag { value, flags: entry + flags_offset })
        })
    }
}

/// The value of the boolean flag `name`, if this VM has it.
pub fn get_bool(tables: &VmStructs, name: &str) -> Option<bool> {
    // SAFETY: `value` is the address of the flag's bool (see `find`).
    find(tables, name).map(|flag| unsafe { *(flag.value as *const u8) } != 0)
}

/// The value of the `intx` flag `name` (`FreqInlineSize`, ...), if this VM has it.
pub fn get_intx(tables: &VmStructs, name: &str) -> Option<i64> {
    // SAFETY: `value` is the address of the flag's value (see `find`); the
    // caller names a flag HotSpot declares as `intx` (64 bits on x86-64).
    find(tables, name).map(|flag| unsafe { *(flag.value as *const i64) })
}

/// The value of the `int` flag `name` (`CompilerDirectivesLimit`, ...), if this VM has it.
pub fn get_int(tables: &VmStructs, name: &str) -> Option<i32> {
    // SAFETY: `value` is the address of the flag's value (see `find`); the
    // caller names a flag HotSpot declares as `int` (32 bits).
    find(tables, name).map(|flag| unsafe { *(flag.value as *const i32) })
}

/// Turns `DebugNonSafepoints` on unless the user set it (see the module
/// documentation). Call it as early as possible: at `Agent_OnLoad` it
/// precedes every compilation.
pub fn enable_debug_non_safepoints(tables: &VmStructs) -> FlagChange {
    let Some(flag) = find(tables, "DebugNonSafepoints") else { return FlagChange::Missing };
    // SAFETY: the flag's value is a bool and its `_flags` a 32-bit word in
    // HotSpot's flag table (see `find`); writing the bool is what
    // `-XX:+DebugNonSafepoints` does before the compilers read it.
    unsafe {
        let value = flag.value as *mut u8;
        if *value != 0 {
            return FlagChange::AlreadyOn;
        }
        let origin = *(flag.flags as *const u32) & ORIGIN_MASK;
        if origin != 0 {
            return FlagChange::OffByUser;
        }
        std::ptr::write_volatile(value, 1);
    }
    FlagChange::Enabled
}
