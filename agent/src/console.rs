//! The agent's voice on the VM's standard error, and the guard that keeps
//! a panic from unwinding into the VM. A leaf: it knows nothing of the rest
//! of the agent, so every module may use it.

#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicBool, Ordering};

static QUIET: AtomicBool = AtomicBool::new(false);

/// `quiet=on`: [`say`] prints nothing from now on.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Prints one line (`pcct: <message>`) unless `quiet=on`.
pub fn say(message: &str) {
    if !QUIET.load(Ordering::Relaxed) {
        eprintln!("pcct: {message}");
    }
}

/// Prints an error line, always.
pub fn complain(message: &str) {
    eprintln!("pcct: {message}");
}

/// Runs `body`, turning a panic into one line and `fallback`: every entry
/// point and callback the VM calls runs inside it.
pub fn guard<T>(what: &str, fallback: T, body: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(panic) => {
            complain(&format!("internal error in {what}: {} (the JVM continues)", panic_message(panic.as_ref())));
            fallback
        }
    }
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
