//! Installing the handler and sending the sampling signal to one thread.

use std::mem::MaybeUninit;

use crate::error::{Result, SamplerError};
use crate::handler::{self, SI_QUEUE};

/// The name of a signal number, for messages.
pub fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGPROF => "SIGPROF".to_string(),
        libc::SIGVTALRM => "SIGVTALRM".to_string(),
        libc::SIGUSR1 => "SIGUSR1".to_string(),
        libc::SIGUSR2 => "SIGUSR2".to_string(),
        s if s >= libc::SIGRTMIN() && s <= libc::SIGRTMAX() => format!("SIGRTMIN+{}", s - libc::SIGRTMIN()),
        s => format!("signal {s}"),
    }
}

/// Parses `SIGPROF`, `PROF`, `SIGRTMIN+3`, `SIGUSR2` or a number.
pub fn parse_signal(text: &str) -> Option<i32> {
    let upper = text.trim().to_ascii_uppercase();
    let name = upper.strip_prefix("SIG").unwrap_or(&upper);
    match name {
        "PROF" => Some(libc::SIGPROF),
        "VTALRM" => Some(libc::SIGVTALRM),
        "USR1" => Some(libc::SIGUSR1),
        "USR2" => Some(libc::SIGUSR2),
        _ => {
            if let Some(offset) = name.strip_prefix("RTMIN+") {
                let offset: i32 = offset.parse().ok()?;
                let signal = libc::SIGRTMIN() + offset;
                (signal <= libc::SIGRTMAX()).then_some(signal)
            } else {
                let number: i32 = name.parse().ok()?;
                (1..=libc::SIGRTMAX()).contains(&number).then_some(number)
            }
        }
    }
}

/// Checks that `signal` is free for pcct: its disposition is the default,
/// ignored, or pcct's own handler.
pub fn check_available(signal: i32) -> Result<()> {
    let mut current = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: querying the disposition (null new action) only writes `current`.
    if unsafe { libc::sigaction(signal, std::ptr::null(), current.as_mut_ptr()) } != 0 {
        return Err(SamplerError::Signal {
            signal: signal_name(signal),
            reason: std::io::Error::last_os_error().to_string(),
        });
    }
    // SAFETY: sigaction succeeded and initialised `current`.
    let current = unsafe { current.assume_init() };
    let ours = handler::on_signal as *const () as usize;
    if current.sa_sigaction != libc::SIG_DFL && current.sa_sigaction != libc::SIG_IGN && current.sa_sigaction != ours {
        return Err(SamplerError::SignalTaken { signal: signal_name(signal) });
    }
    Ok(())
}

/// Installs the sampling handler for `signal`, if nobody else handles it.
///
/// Refuses (and changes nothing) when the signal already has a handler:
/// taking it over would break whoever installed it.
pub fn install(signal: i32) -> Result<()> {
    check_available(signal)?;
    handler::remember_process_id();
    let ours = handler::on_signal as *const () as usize;
    let mut action = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: a zeroed sigaction is a valid starting point; we set the fields we need.
    let action = unsafe {
        let raw = action.as_mut_ptr();
        (*raw).sa_sigaction = ours;
        (*raw).sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut (*raw).sa_mask);
        action.assume_init()
    };
    // SAFETY: installs a handler that follows the rules in `handler`.
    if unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) } != 0 {
        return Err(SamplerError::Signal {
            signal: signal_name(signal),
            reason: std::io::Error::last_os_error().to_string(),
        });
    }
    Ok(())
}

/// Whether pcct's handler is (still) the one installed for `signal`:
/// another library may install its own after pcct did.
pub fn is_installed(signal: i32) -> bool {
    let mut current = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: querying the disposition (null new action) only writes `current`.
    if unsafe { libc::sigaction(signal, std::ptr::null(), current.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: sigaction succeeded and initialised `current`.
    let current = unsafe { current.assume_init() };
    current.sa_sigaction == handler::on_signal as *const () as usize
}

/// Blocks `signal` in the calling thread (the sampler's and server's own threads).
pub fn block_in_current_thread(signal: i32) {
    // SAFETY: builds a signal set on the stack and changes this thread's mask.
    unsafe {
        let mut set = MaybeUninit::<libc::sigset_t>::zeroed();
        libc::sigemptyset(set.as_mut_ptr());
        libc::sigaddset(set.as_mut_ptr(), signal);
        libc::pthread_sigmask(libc::SIG_BLOCK, set.as_ptr(), std::ptr::null_mut());
    }
}

/// `siginfo_t` as `rt_tgsigqueueinfo` reads it for SI_QUEUE (x86-64 Linux).
#[repr(C)]
struct QueuedSigInfo {
    signo: i32,
    errno: i32,
    code: i32,
    _pad: i32,
    pid: i32,
    uid: u32,
    value: usize,
    _rest: [u8; 128 - 32],
}

/// Why a signal could not be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendError {
    /// The thread is gone.
    NoSuchThread,
    /// Any other errno.
    Other(i32),
}

/// Sends `signal` to thread `tid` of this process, carrying `value`
/// (`rt_tgsigqueueinfo` with `si_code` SI_QUEUE, which the handler checks).
///
/// Public for tests and embedders that signal threads the way the sampler
/// does (value from [`crate::handler::encode`]); the sampler is its only
/// user in the agent.
pub fn send(signal: i32, tid: i32, value: usize) -> std::result::Result<(), SendError> {
    // SAFETY: getpid/getuid cannot fail.
    let (pid, uid) = unsafe { (libc::getpid(), libc::getuid()) };
    let mut info = QueuedSigInfo { signo: signal, errno: 0, code: SI_QUEUE, _pad: 0, pid, uid, value, _rest: [0; 96] };
    // SAFETY: rt_tgsigqueueinfo reads a 128-byte siginfo_t, which `info` is.
    let rc = unsafe { libc::syscall(libc::SYS_rt_tgsigqueueinfo, pid, tid, signal, &mut info as *mut QueuedSigInfo) };
    if rc == 0 {
        return Ok(());
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::ESRCH) => Err(SendError::NoSuchThread),
        Some(code) => Err(SendError::Other(code)),
        None => Err(SendError::Other(0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_names_parse_and_print() {
        assert_eq!(parse_signal("SIGPROF"), Some(libc::SIGPROF));
        assert_eq!(parse_signal("prof"), Some(libc::SIGPROF));
        assert_eq!(parse_signal("SIGRTMIN+2"), Some(libc::SIGRTMIN() + 2));
        assert_eq!(parse_signal("SIGRTMIN+999"), None);
        assert_eq!(parse_signal("nonsense"), None);
        assert_eq!(signal_name(libc::SIGRTMIN() + 2), "SIGRTMIN+2");
        assert_eq!(std::mem::size_of::<QueuedSigInfo>(), 128);
    }
}
