//! The agent's voice on the VM's standard error, and the guard that keeps
//! a panic from unwinding into the VM. A leaf: it knows nothing of the rest
//! of the agent, so every module may use it.
//!
//! Nothing here can panic on a standard error that is gone: HotSpot
//! ignores SIGPIPE, so a closed pipe (`java ... 2>&1 | head`, a restarted
//! log collector) makes every write fail with EPIPE, and `eprintln!` would
//! panic on it inside a JVMTI callback. A line that cannot be written is
//! dropped.

#![forbid(unsafe_code)]

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static QUIET: AtomicBool = AtomicBool::new(false);

/// `quiet=on`: [`say`] prints nothing from now on.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Prints one line (`pcct: <message>`) unless `quiet=on`.
pub fn say(message: &str) {
    if !QUIET.load(Ordering::Relaxed) {
        complain(message);
    }
}

/// Prints an error line, always (if standard error can take it).
pub fn complain(message: &str) {
    write_line(&mut std::io::stderr().lock(), message);
}

/// Writes `pcct: <message>` to `out`, ignoring a failed write.
fn write_line(out: &mut impl Write, message: &str) {
    let _ = writeln!(out, "pcct: {message}");
}

/// Runs `body`, turning a panic into one line and `fallback`: every entry
/// point and callback the VM calls runs inside it.
pub fn guard<T>(what: &str, fallback: T, body: impl FnOnce() -> T) -> T {
    catch(body).unwrap_or_else(|panic| {
        complain(&format!("internal error in {what}: {panic} (the JVM continues)"));
        fallback
    })
}

/// Runs `body`, turning a panic into its message.
pub fn catch<T>(body: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).map_err(|panic| panic_message(panic.as_ref()))
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_the_fallback() {
        assert_eq!(guard("test", 7, || panic!("boom")), 7);
        assert_eq!(guard("test", 7, || panic!("{}", String::from("formatted"))), 7);
        assert_eq!(guard("test", 7, || 3), 3);
    }

    /// A writer whose every write fails, as stderr on a closed pipe.
    struct ClosedPipe;

    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
        }
    }

    #[test]
    fn a_line_to_a_closed_pipe_is_dropped_without_a_panic() {
        write_line(&mut ClosedPipe, "serving http://127.0.0.1:1");
        let mut open = Vec::new();
        write_line(&mut open, "serving");
        assert_eq!(open, b"pcct: serving\n");
    }

    #[test]
    fn catch_returns_the_value_or_the_panic_message() {
        assert_eq!(catch(|| 5), Ok(5));
        assert_eq!(catch(|| -> i32 { panic!("sampler broke") }), Err("sampler broke".to_string()));
    }

    #[test]
    fn panic_messages_are_read_from_both_payloads() {
        let payload: Box<dyn std::any::Any + Send> = Box::new("static");
        assert_eq!(panic_message(payload.as_ref()), "static");
        let payload: Box<dyn std::any::Any + Send> = Box::new(String::from("owned"));
        assert_eq!(panic_message(payload.as_ref()), "owned");
        let payload: Box<dyn std::any::Any + Send> = Box::new(42);
        assert_eq!(panic_message(payload.as_ref()), "unknown panic");
    }
}
