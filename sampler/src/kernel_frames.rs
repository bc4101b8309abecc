//! Kernel frames in samples (`kernel=on`): where a thread was in the
//! kernel when its CPU timer ran out (a system call, a page fault), the
//! kernel's call chain at that moment, above the thread's user frames.
//!
//! # Where they come from
//!
//! A thread's timer is a perf event (`cpu_timer`); with `kernel=on` it also
//! records, at each overflow, the kernel's part of the call chain
//! (`PERF_SAMPLE_CALLCHAIN` with `exclude_callchain_user`), written
//! backward into a one-page ring after its perf page, which the sampler
//! maps read-only (the kernel then overwrites old records, and the newest
//! one starts at the ring's head). The kernel allows it to a process with
//! `perf_event_paranoid` 1 or less, or CAP_PERFMON; where it refuses, the
//! timers open without call chains and the status says why
//! (`cpu_timer::kernel_frames_refused`). The sampler's own signals
//! (`timer=sampler`, wall mode) carry no kernel frames.
//!
//! # In the handler
//!
//! [`read`] takes the newest record when the ring's head moved since the
//! previous handler of the same timer: a sample record's addresses, the
//! context markers left out, written as frames whose method id is the
//! address (a return address less one) and whose line is
//! `native_frames::NATIVE_BCI`, as native frames are. Every read of the
//! ring is a fault-safe read (the sampler may unmap it when it closes the
//! timer), every offset is masked into the ring, and the record's count is
//! bounded by its size and [`MAX_KERNEL_FRAMES`]: no allocation, no lock,
//! no system call.
//!
//! # On the sampler thread
//!
//! [`KernelSymbols`] names kernel addresses from `/proc/kallsyms` (read once,
//! at the first kernel frame), as async-profiler names them: the function
//! with `_[k]` after it, a method of `[kernel]`.

use std::sync::atomic::{fence, AtomicU64, Ordering};

use crate::agct::CallFrame;
use crate::cpu_timer::{self, MAX_TIMER_FD};
use crate::hotspot::safe_read;
use crate::native_frames::native_frame;

/// The most kernel frames a sample keeps (the event's `sample_max_stack`).
pub const MAX_KERNEL_FRAMES: usize = 64;

/// Kernel addresses start here on x86-64 (the upper half).
pub const KERNEL_START: usize = 0xffff_8000_0000_0000;

/// The library kernel functions are methods of.
pub const KERNEL_LIBRARY: &str = "[kernel]";

/// `PERF_RECORD_SAMPLE`.
const RECORD_SAMPLE: u32 = 9;

/// Call-chain entries at or above this are context markers
/// (`PERF_CONTEXT_KERNEL`, ...), not addresses.
const CONTEXT_MAX: u64 = -4095i64 as u64;

/// Where `data_head` lies in the perf page.
const DATA_HEAD: usize = std::mem::offset_of!(perf_event_open_sys::bindings::perf_event_mmap_page, data_head);

/// Descriptor -> the ring's head its previous handler read.
static HEADS: [AtomicU64; MAX_TIMER_FD] = [const { AtomicU64::new(0) }; MAX_TIMER_FD];

/// Forgets the head of the timer on descriptor `fd` (a timer opened there:
/// its ring starts again). Sampler thread.
pub(crate) fn forget(fd: i32) {
    if let Some(head) = usize::try_from(fd).ok().and_then(|fd| HEADS.get(fd)) {
        head.store(0, Ordering::Relaxed);
    }
}

/// Writes the kernel frames of the newest record in the ring of the timer
/// on descriptor `fd` into `out` (leaf first); the frames written (0: no
/// ring, no new record, or the thread was not in the kernel).
/// Async-signal-safe (module doc).
#[inline]
pub(crate) fn read(fd: i32, out: &mut [CallFrame]) -> usize {
    let Some((page, ring)) = cpu_timer::ring_of(fd) else { return 0 };
    let Some(last) = usize::try_from(fd).ok().and_then(|fd| HEADS.get(fd)) else { return 0 };
    let Some(head) = page.checked_add(DATA_HEAD).and_then(safe_read::read_u64) else { return 0 };
    // The kernel writes the record, then the head (a release store).
    fence(Ordering::Acquire);
    if last.swap(head, Ordering::Relaxed) == head || !ring.is_power_of_two() {
        return 0;
    }
    let data = page.wrapping_add(ring);
    let word =
        |offset: usize| safe_read::read_u64(data.wrapping_add((head as usize).wrapping_add(offset) & (ring - 1)));
    let Some(header) = word(0) else { return 0 };
    let (kind, size) = (header as u32, (header >> 48) as usize);
    if kind != RECORD_SAMPLE || size < 16 || size > ring {
        return 0;
    }
    let entries = word(8).map_or(0, |count| (count as usize).min((size - 16) / 8)).min(MAX_KERNEL_FRAMES + 1);
    let mut written = 0;
    for index in 0..entries {
        let Some(address) = word(16 + 8 * index) else { break };
        if address >= CONTEXT_MAX || (address as usize) < KERNEL_START {
            continue;
        }
        let Some(slot) = out.get_mut(written) else { break };
        // The first is where the thread was; the others return addresses.
        *slot = native_frame(address, written == 0);
        written += 1;
    }
    written
}

/// The kernel's function symbols (`/proc/kallsyms`), sorted by address.
#[derive(Debug, Default)]
pub struct KernelSymbols {
    symbols: Vec<(usize, String)>,
}

impl KernelSymbols {
    /// Reads `/proc/kallsyms` (its text symbols). Empty where the kernel
    /// hides addresses (`kptr_restrict`: every address 0). Sampler thread.
    pub fn read() -> KernelSymbols {
        std::fs::read_to_string("/proc/kallsyms")
            .map_or_else(|_| KernelSymbols::default(), |text| KernelSymbols::parse(&text))
    }

    /// The text symbols of a `/proc/kallsyms` listing.
    pub fn parse(text: &str) -> KernelSymbols {
        let mut symbols: Vec<(usize, String)> = text
            .lines()
            .filter_map(|line| {
                let mut fields = line.split_whitespace();
                let address = usize::from_str_radix(fields.next()?, 16).ok().filter(|&address| address != 0)?;
                let kind = fields.next()?;
                let name = fields.next()?;
                matches!(kind, "t" | "T" | "w" | "W").then(|| (address, name.to_string()))
            })
            .collect();
        symbols.sort_unstable_by_key(|&(address, _)| address);
        KernelSymbols { symbols }
    }

    /// The start of the kernel function holding `address` (`None`: no
    /// symbol known), the key its name is kept by.
    pub fn start_of(&self, address: usize) -> Option<usize> {
        self.symbol_at(address).map(|&(start, _)| start)
    }

    /// The name of the kernel function at `address`, as async-profiler
    /// writes it (`do_syscall_64_[k]`); `[kernel]_[k]` where no symbol is
    /// known.
    pub fn name(&self, address: usize) -> String {
        match self.symbol_at(address) {
            Some((_, name)) => format!("{name}_[k]"),
            None => format!("{KERNEL_LIBRARY}_[k]"),
        }
    }

    /// The symbol of the function holding `address`: the last one that
    /// starts at or before it.
    fn symbol_at(&self, address: usize) -> Option<&(usize, String)> {
        let after = self.symbols.partition_point(|&(start, _)| start <= address);
        after.checked_sub(1).and_then(|index| self.symbols.get(index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_addresses_are_named_by_the_function_that_holds_them() {
        let listing = "ffffffff81000000 T _text\nffffffff81001000 t do_syscall_64\n\
                       ffffffff81002000 D some_data\nffffffff81003000 T vfs_read [ext4]\n0000000000000000 T hidden\n";
        let symbols = KernelSymbols::parse(listing);
        assert_eq!(symbols.name(0xffff_ffff_8100_1234), "do_syscall_64_[k]");
        assert_eq!(symbols.name(0xffff_ffff_8100_2345), "do_syscall_64_[k]", "data is not a function");
        assert_eq!(symbols.name(0xffff_ffff_8100_3001), "vfs_read_[k]");
        assert_eq!(symbols.name(0xffff_ffff_8000_0000), "[kernel]_[k]");
        assert_eq!(KernelSymbols::parse("0000000000000000 T hidden\n").name(1), "[kernel]_[k]");
    }

    #[test]
    fn a_timer_without_a_ring_gives_no_frames() {
        let mut out = [CallFrame::EMPTY; 4];
        assert_eq!(read(-1, &mut out), 0);
        assert_eq!(read(MAX_TIMER_FD as i32 - 1, &mut out), 0);
    }
}
