//! Per-thread CPU timers: a Linux perf event (the software `cpu-clock`) on
//! one thread, which interrupts that thread on its own CPU after every
//! interval of CPU time it used and sends it the sampling signal.
//!
//! # Why
//!
//! A signal the sampler thread sends reaches a running thread on another
//! CPU at its next return to user mode: 10-50 µs later on the virtual
//! machines of BENCHMARKS.md. A page fault or a system call in that window
//! takes the signal first, so such instructions draw more samples than the
//! CPU they use (H2: first touches of new heap memory in an array copy).
//! A thread's own timer interrupt comes from its own CPU's timer (an
//! hrtimer, precise at 1 ms; POSIX CPU-time timers fire only at the
//! scheduler tick, every 4 ms on a kernel with `CONFIG_HZ=250`), and the
//! signal is taken on the way back from that interrupt: the sample is where
//! the thread was when its interval of CPU ran out.
//!
//! # How a timer finds its slot
//!
//! The signal comes with `si_code` `POLL_IN` and the timer's file
//! descriptor in `si_fd`; [`TIMER_VALUES`] maps the descriptor to the
//! signal value the sampler would have sent (`handler::encode(slot,
//! generation)`), so the handler checks a timer's signal exactly as it
//! checks the sampler's (generation, state and thread id in one
//! compare-and-swap). The table is a `static` of atomics: the handler reads
//! it with no lock and no initialisation. A descriptor at or above
//! [`descriptor_limit`] gets no timer (the thread falls back to the
//! sampler's signals).
//!
//! # The timer's page: was the thread switched out?
//!
//! A timer may also map the perf event's first page (`perf_event_mmap_page`,
//! read-only, no ring buffer: [`ThreadTimer::map_page`]): the kernel
//! updates it, under its sequence word `lock`, whenever the event is
//! scheduled in or out, that is whenever the thread goes off or onto a CPU
//! (measured: two updates per context switch). A handler that reads the
//! same `lock` at its start and its end ran without being switched out, so
//! its time by the processor's counter is its CPU time (`tsc`, `handler`).
//! [`TIMER_PAGES`] maps a descriptor to its page as [`TIMER_VALUES`] maps it
//! to its value; the handler reads the word with a fault-safe read
//! ([`switches`]), so a page unmapped under it reads as "switched", never
//! as a crash.
//!
//! The page is locked memory the kernel charges to the user (beyond
//! `perf_event_mlock_kb` per CPU, to `RLIMIT_MEMLOCK`) and a mapping of its
//! own, so the sampler maps one only for a thread whose timer has fired
//! (a thread that runs), and at most [`MAX_PAGES`] in the process; a timer
//! without one has its handler read the CPU clock.
//!
//! # Ownership
//!
//! Only the sampler thread opens and closes timers (a [`ThreadTimer`] lives
//! in the sampler's state of its thread), so the table entry is written
//! before the timer is enabled and cleared after it is disabled. A signal
//! still on its way when a timer closes finds its entry cleared, or the
//! descriptor reused by another thread's timer whose slot's thread id is
//! not the receiver's: it is refused either way.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use perf_event_open_sys as perf;

/// Descriptors below this can carry a timer (the table's size: 512 KiB of
/// address space, of which only the pages of descriptors used are touched).
pub const MAX_TIMER_FD: usize = 1 << 16;

/// `si_code` of a signal sent for an event on a file descriptor (`POLL_IN`).
pub(crate) const POLL_IN: i32 = 1;

/// Descriptor -> the signal value of the registration it samples (0: none).
static TIMER_VALUES: [AtomicUsize; MAX_TIMER_FD] = [const { AtomicUsize::new(0) }; MAX_TIMER_FD];

/// Descriptor -> the address of its timer's perf page (0: none), with
/// [`RING`] set where a ring of call chains follows the page: one word, so
/// a handler never sees a page with another timer's ring flag.
static TIMER_PAGES: [AtomicUsize; MAX_TIMER_FD] = [const { AtomicUsize::new(0) }; MAX_TIMER_FD];

/// The bit of a [`TIMER_PAGES`] entry that says a ring of call chains
/// follows the page (a page's address has its low bits clear).
const RING: usize = 1;

/// The page and ring bit of the timer on descriptor `fd` (0: none).
#[inline]
fn entry_of(fd: i32) -> usize {
    usize::try_from(fd).ok().and_then(|fd| TIMER_PAGES.get(fd)).map_or(0, |entry| entry.load(Ordering::Acquire))
}

/// The ring of call chains after the perf page of the timer on descriptor
/// `fd`, if it has one: (page, ring's length in bytes). Async-signal-safe.
#[inline]
pub(crate) fn ring_of(fd: i32) -> Option<(usize, usize)> {
    let entry = entry_of(fd);
    (entry & RING != 0).then(|| (entry & !RING, PAGE_SIZE.load(Ordering::Relaxed)))
}

/// Whether the timer on descriptor `fd` has a ring of call chains mapped.
/// Async-signal-safe.
#[inline]
pub(crate) fn has_ring(fd: i32) -> bool {
    ring_of(fd).is_some()
}

/// The system's page size, read when a timer's page is mapped (the handler
/// reads no sysconf).
static PAGE_SIZE: AtomicUsize = AtomicUsize::new(4096);

/// Most timer pages mapped at once (1 MiB of locked memory, 2 MiB with
/// `kernel=on`'s rings, a few hundred of the process's `vm.max_map_count`
/// mappings).
pub const MAX_PAGES: usize = 256;

/// Timer pages mapped now.
static PAGES_MAPPED: AtomicUsize = AtomicUsize::new(0);

/// Offset of `lock` in `perf_event_mmap_page` (after `version` and
/// `compat_version`, two u32s; the layout is the kernel's ABI).
const PAGE_LOCK: usize = 8;

/// The perf page of the timer on descriptor `fd` (0: none). Async-signal-safe.
#[inline]
pub(crate) fn page_of(fd: i32) -> usize {
    entry_of(fd) & !RING
}

/// The sequence word of perf page `page` (see the module doc), read so
/// that a page unmapped meanwhile cannot crash: `None` then, or when no
/// fault-safe read is installed (or `page` is 0). Async-signal-safe.
#[inline]
pub(crate) fn switches(page: usize) -> Option<u32> {
    crate::hotspot::safe_read::read_u32(page.checked_add(PAGE_LOCK).filter(|_| page != 0)?)
}

/// The signal value of the timer on descriptor `fd` (0: no timer).
/// Async-signal-safe: one atomic load.
#[inline]
pub(crate) fn value_of(fd: i32) -> usize {
    usize::try_from(fd).ok().and_then(|fd| TIMER_VALUES.get(fd)).map_or(0, |value| value.load(Ordering::Acquire))
}

/// Whether timers may send `signal`: not a real-time one ([`TimerError::QueuedSignal`]).
pub fn signal_allowed(signal: i32) -> bool {
    signal > 0 && signal < libc::SIGRTMIN()
}

/// Descriptors at or above this get no timer: the table's size, or half the
/// process's soft limit of open files, whichever is lower, so that timers
/// (one per sampled thread) never take the last descriptors the program
/// needs; past it, threads get the sampler's signals.
pub fn descriptor_limit() -> usize {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit we own.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 { limit.rlim_cur } else { 0 };
    usize::try_from(soft / 2).unwrap_or(usize::MAX).min(MAX_TIMER_FD)
}

// fcntl commands and the owner type of F_SETOWN_EX (linux/fcntl.h); the
// libc crate has them for musl only.
const F_SETSIG: libc::c_int = 10;
const F_SETOWN_EX: libc::c_int = 15;
const F_OWNER_TID: libc::c_int = 0;

#[repr(C)]
struct FOwnerEx {
    kind: libc::c_int,
    pid: libc::pid_t,
}

/// Why a timer could not be opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerError {
    /// The kernel refused (`errno`): no perf events (`perf_event_paranoid`
    /// 3 or more, a seccomp filter, no `CONFIG_PERF_EVENTS`), the thread
    /// gone, or out of descriptors.
    Os(i32),
    /// The descriptor was at or above [`descriptor_limit`]: timers must
    /// not take the descriptors the program may need.
    DescriptorTooHigh,
    /// A real-time signal: the kernel queues those, and when a thread's
    /// queue is full it sends `SIGIO` in place of a file's signal, whose
    /// default action ends the process. Timers use only signals below
    /// `SIGRTMIN` (a second one while one is pending merges with it).
    QueuedSignal,
}

/// A thread's CPU timer, closed when dropped.
#[derive(Debug)]
pub struct ThreadTimer {
    fd: i32,
    period: Duration,
    /// The event's perf page, mapped read-only (0: none, [`ThreadTimer::map_page`]).
    page: usize,
    /// A page was asked for (mapped or refused): not asked again.
    page_asked: bool,
    /// The timer also counts time the thread spends in the kernel (system
    /// calls, page faults); false where the kernel only allows user time
    /// (`perf_event_paranoid` 2 for an unprivileged process).
    pub counts_kernel: bool,
    /// The event records the kernel's call chain at each overflow, into
    /// the ring after its page ([`ThreadTimer::map_page`] maps both).
    chain: bool,
}

/// The errno with which the kernel refused a timer's call chains (0: not
/// refused, or not asked); then no later timer asks.
static KERNEL_REFUSED: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Why the kernel refused timers' call chains (`kernel=on`), if it did: an
/// errno (`perf_event_paranoid` above 1 without CAP_PERFMON gives EACCES).
pub fn kernel_frames_refused() -> Option<i32> {
    Some(KERNEL_REFUSED.load(Ordering::Relaxed)).filter(|&errno| errno != 0)
}

/// Pages a timer maps: its perf page, and with call chains one page of
/// ring after it (a record of at most `kernel_frames::MAX_KERNEL_FRAMES`
/// addresses fits).
fn mapped_pages(chain: bool) -> usize {
    if chain {
        2
    } else {
        1
    }
}

impl ThreadTimer {
    /// Opens a timer on thread `tid` (of this process) that sends it
    /// `signal` after every `period` of its CPU time, for the sample of
    /// signal value `value`.
    ///
    /// With `kernel_frames`, the event also records the kernel's call
    /// chain at each overflow (`kernel_frames`), where the kernel allows
    /// it; where it refuses, the timer opens without ([`kernel_frames_refused`]
    /// says why, once for the process).
    pub fn open(
        tid: i32,
        period: Duration,
        signal: i32,
        value: usize,
        kernel_frames: bool,
    ) -> Result<ThreadTimer, TimerError> {
        if !signal_allowed(signal) {
            return Err(TimerError::QueuedSignal);
        }
        let chain = kernel_frames && KERNEL_REFUSED.load(Ordering::Relaxed) == 0;
        let opened = match open_event(tid, period, false, chain) {
            // EOVERFLOW: `kernel.perf_event_max_stack` is below the
            // chain's depth; EINVAL: a kernel without backward rings.
            Err(errno @ (libc::EACCES | libc::EPERM | libc::EINVAL | libc::EOVERFLOW)) if chain => {
                KERNEL_REFUSED.store(errno, Ordering::Relaxed);
                open_event(tid, period, false, false).map(|fd| (fd, false))
            }
            other => other.map(|fd| (fd, chain)),
        };
        let (fd, counts_kernel, chain) = match opened {
            Ok((fd, chain)) => (fd, true, chain),
            Err(libc::EACCES | libc::EPERM) => {
                (open_event(tid, period, true, false).map_err(TimerError::Os)?, false, false)
            }
            Err(errno) => return Err(TimerError::Os(errno)),
        };
        // From here on `timer` closes the descriptor on every early return.
        let timer = ThreadTimer { fd, period, page: 0, page_asked: false, counts_kernel, chain };
        crate::kernel_frames::forget(fd);
        if fd as usize >= descriptor_limit() {
            return Err(TimerError::DescriptorTooHigh);
        }
        let owner = FOwnerEx { kind: F_OWNER_TID, pid: tid };
        // SAFETY: fcntl on a descriptor we own; F_SETOWN_EX reads one
        // f_owner_ex we own.
        let configured = unsafe {
            libc::fcntl(fd, libc::F_SETFL, libc::O_ASYNC) == 0
                && libc::fcntl(fd, F_SETSIG, signal) == 0
                && libc::fcntl(fd, F_SETOWN_EX, &owner as *const FOwnerEx) == 0
        };
        if !configured {
            return Err(TimerError::Os(last_errno()));
        }
        TIMER_VALUES[fd as usize].store(value, Ordering::Release);
        // SAFETY: an ioctl without argument on a perf event we own.
        if unsafe { perf::ioctls::ENABLE(fd, 0) } != 0 {
            return Err(TimerError::Os(last_errno()));
        }
        Ok(timer)
    }

    /// The CPU time between two of its signals.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Maps the timer's perf page for its handler (see the module doc),
    /// once: nothing if one was asked for before, if [`MAX_PAGES`] are
    /// mapped, or if the kernel refuses (then the handler reads the CPU
    /// clock). Returns whether the timer has a page. Sampler thread.
    pub fn map_page(&mut self) -> bool {
        if std::mem::replace(&mut self.page_asked, true) {
            return self.page != 0;
        }
        if PAGES_MAPPED.fetch_add(1, Ordering::Relaxed) >= MAX_PAGES {
            PAGES_MAPPED.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        // SAFETY: maps the perf page (and its ring) of a perf event we own,
        // read-only (the kernel then overwrites the ring's oldest records)
        // and shared, at an address the kernel chooses; nothing else is
        // touched.
        let length = mapped_pages(self.chain) * page_size();
        let page = unsafe { libc::mmap(std::ptr::null_mut(), length, libc::PROT_READ, libc::MAP_SHARED, self.fd, 0) };
        if page == libc::MAP_FAILED {
            PAGES_MAPPED.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        self.page = page as usize;
        if let Some(entry) = TIMER_PAGES.get(self.fd as usize) {
            entry.store(self.page | if self.chain { RING } else { 0 }, Ordering::Release);
        }
        true
    }
}

impl Drop for ThreadTimer {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours; disabling first stops new
        // signals before the table entry is cleared.
        unsafe { perf::ioctls::DISABLE(self.fd, 0) };
        if let Some(value) = TIMER_VALUES.get(self.fd as usize) {
            value.store(0, Ordering::Release);
        }
        if let Some(page) = TIMER_PAGES.get(self.fd as usize) {
            page.store(0, Ordering::Release);
        }
        if self.page != 0 {
            // SAFETY: unmaps the one page `map_page` mapped for this timer,
            // once; a handler still reading it reads through a fault-safe
            // read (`switches`).
            unsafe { libc::munmap(self.page as *mut libc::c_void, mapped_pages(self.chain) * page_size()) };
            PAGES_MAPPED.fetch_sub(1, Ordering::Relaxed);
        }
        // SAFETY: closes the descriptor this timer owns, once.
        unsafe { libc::close(self.fd) };
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf only reads a system value.
    let size = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    PAGE_SIZE.store(size, Ordering::Relaxed);
    size
}

/// `perf_event_open` of a disabled `cpu-clock` event on `tid` overflowing
/// every `period`; `user_only` leaves kernel time out; `chain` records the
/// kernel's call chain (not the user's) at each overflow, written
/// backward, so the newest record starts at the ring's head. Returns the
/// descriptor or the errno.
fn open_event(tid: i32, period: Duration, user_only: bool, chain: bool) -> Result<i32, i32> {
    let mut attr = perf::bindings::perf_event_attr {
        type_: perf::bindings::PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<perf::bindings::perf_event_attr>() as u32,
        config: perf::bindings::PERF_COUNT_SW_CPU_CLOCK as u64,
        ..Default::default()
    };
    attr.__bindgen_anon_1.sample_period = (period.as_nanos() as u64).max(1);
    attr.set_disabled(1);
    attr.set_exclude_hv(1);
    attr.set_exclude_kernel(user_only as u64);
    if chain {
        attr.sample_type = perf::bindings::PERF_SAMPLE_CALLCHAIN as u64;
        attr.set_exclude_callchain_user(1);
        attr.set_write_backward(1);
        attr.sample_max_stack = crate::kernel_frames::MAX_KERNEL_FRAMES as u16;
    }
    // SAFETY: perf_event_open reads one perf_event_attr we own.
    let fd =
        unsafe { perf::perf_event_open(&mut attr, tid, -1, -1, perf::bindings::PERF_FLAG_FD_CLOEXEC as libc::c_ulong) };
    if fd < 0 {
        Err(last_errno())
    } else {
        Ok(fd)
    }
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicI32, AtomicU64};
    use std::sync::Mutex;

    // The tests share one signal and its handler's counters.
    static SERIAL: Mutex<()> = Mutex::new(());
    static RECEIVED: AtomicU64 = AtomicU64::new(0);
    static WRONG: AtomicU64 = AtomicU64::new(0);
    static EXPECTED_TID: AtomicI32 = AtomicI32::new(0);

    extern "C" fn count(_signal: i32, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo_t to SA_SIGINFO handlers.
        let code = unsafe { (*info).si_code };
        // SAFETY: gettid is async-signal-safe.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
        if code == POLL_IN && tid == EXPECTED_TID.load(Ordering::Relaxed) {
            RECEIVED.fetch_add(1, Ordering::Relaxed);
        } else {
            WRONG.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn test_signal() -> i32 {
        // Not the agent's SIGPROF, nor the sampler tests' real-time signal.
        let signal = libc::SIGVTALRM;
        // SAFETY: installs a handler that only uses atomics and gettid.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = count as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            assert_eq!(libc::sigaction(signal, &action, std::ptr::null_mut()), 0);
        }
        signal
    }

    fn spin_cpu(duration: Duration) {
        let start = crate::slots::current_thread_cpu_ns();
        let mut x = 0u64;
        while crate::slots::current_thread_cpu_ns() - start < duration.as_nanos() as u64 {
            for i in 0..1000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
        }
    }

    /// Serialises the test, installs the counting handler, zeroes its
    /// counters; returns the lock's guard and the signal.
    fn setup() -> (std::sync::MutexGuard<'static, ()>, i32) {
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let signal = test_signal();
        RECEIVED.store(0, Ordering::Relaxed);
        WRONG.store(0, Ordering::Relaxed);
        (serial, signal)
    }

    /// A 1 ms timer on thread `tid`, whose signals the counting handler
    /// expects; `None` only where the kernel refuses this process perf
    /// events (`perf_event_paranoid` above 2: the sampler then falls back
    /// to its own signals), else a refusal fails the test.
    fn open_on(tid: i32, signal: i32, value: usize) -> Option<ThreadTimer> {
        EXPECTED_TID.store(tid, Ordering::Relaxed);
        match ThreadTimer::open(tid, Duration::from_millis(1), signal, value, false) {
            Ok(timer) => Some(timer),
            Err(error) => {
                let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap_or_default();
                let allowed = paranoid.trim().parse::<i32>().is_ok_and(|level| level <= 2);
                assert!(!allowed, "perf_event_paranoid {} allows perf events, yet: {error:?}", paranoid.trim());
                eprintln!("no perf events on this machine ({error:?}): nothing to test");
                None
            }
        }
    }

    #[test]
    fn a_thread_gets_one_signal_per_interval_of_its_cpu_and_none_after_the_timer_closes() {
        let (_serial, signal) = setup();
        let Some(timer) = open_on(crate::slots::current_tid(), signal, 0xABC) else { return };
        assert_eq!(value_of(timer.fd), 0xABC);
        spin_cpu(Duration::from_millis(100));
        let received = RECEIVED.load(Ordering::Relaxed);
        // 100 intervals of CPU; a signal coalesces with one still pending
        // only if the thread spent over an interval in the kernel. The
        // timer counts a little more than the thread's CPU clock (the time
        // around its switches: 0.5-1.4 % on javac, BENCHMARKS.md "The
        // handler without system calls"; 102 signals here once in 50 runs
        // on a loaded machine).
        assert!((80..=105).contains(&received), "{received} signals for 100 ms of CPU at 1 ms");
        // Sleeping uses no CPU: no signal.
        std::thread::sleep(Duration::from_millis(50));
        let after_sleep = RECEIVED.load(Ordering::Relaxed);
        assert!(after_sleep <= received + 1, "{} signals while asleep", after_sleep - received);
        let fd = timer.fd;
        drop(timer);
        assert_eq!(value_of(fd), 0);
        let closed = RECEIVED.load(Ordering::Relaxed);
        spin_cpu(Duration::from_millis(20));
        assert_eq!(RECEIVED.load(Ordering::Relaxed), closed);
        assert_eq!(WRONG.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_timer_on_another_thread_signals_that_thread_only() {
        let (_serial, signal) = setup();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            tid_tx.send(crate::slots::current_tid()).unwrap();
            go_rx.recv().unwrap();
            spin_cpu(Duration::from_millis(50));
        });
        let Some(timer) = open_on(tid_rx.recv().unwrap(), signal, 1) else {
            go_tx.send(()).unwrap();
            worker.join().unwrap();
            return;
        };
        // This thread spins too: its CPU must not signal anyone.
        go_tx.send(()).unwrap();
        spin_cpu(Duration::from_millis(30));
        worker.join().unwrap();
        drop(timer);
        let received = RECEIVED.load(Ordering::Relaxed);
        // (As above: the timer may count a few percent more than the clock.)
        assert!((35..=53).contains(&received), "{received} signals for 50 ms of the worker's CPU");
        assert_eq!(WRONG.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_timers_page_says_when_its_thread_was_switched_out() {
        let (_serial, signal) = setup();
        crate::hotspot::safe_read::install().expect("the fault-safe reads");
        let Some(mut timer) = open_on(crate::slots::current_tid(), signal, 1) else { return };
        assert_eq!(page_of(timer.fd), 0, "no page before one is asked for");
        assert!(timer.map_page(), "the kernel refused the timer's page");
        assert!(timer.map_page(), "asked once, kept");
        let page = page_of(timer.fd);
        assert_ne!(page, 0);
        let before = switches(page).expect("the sequence word");
        // Going to sleep switches the thread out (and back in).
        std::thread::sleep(Duration::from_millis(2));
        let after = switches(page).expect("the sequence word");
        assert_ne!(before, after, "a sleep did not move the sequence word");
        let fd = timer.fd;
        drop(timer);
        assert_eq!(page_of(fd), 0);
        // Unmapped (or mapped again by another thread since): the read
        // cannot crash, whatever it returns.
        let _ = switches(page);
    }

    #[test]
    fn real_time_signals_are_refused() {
        let tid = crate::slots::current_tid();
        let refused = ThreadTimer::open(tid, Duration::from_millis(1), libc::SIGRTMIN() + 3, 1, false);
        assert_eq!(refused.err(), Some(TimerError::QueuedSignal));
        assert!(signal_allowed(libc::SIGPROF) && !signal_allowed(libc::SIGRTMAX()));
    }

    #[test]
    fn descriptors_without_a_timer_map_to_nothing() {
        assert_eq!(value_of(-1), 0);
        assert_eq!(value_of(MAX_TIMER_FD as i32), 0);
        assert_eq!(value_of(i32::MAX), 0);
    }
}
