//! How the accept loop waits after a failed `accept`: a connection that
//! failed on its own (aborted or reset before it was accepted) is skipped at
//! once, but any other error, above all running out of file descriptors
//! (EMFILE, ENFILE) or kernel memory (ENOMEM, ENOBUFS), would fail again at
//! once while the listener stays readable, and the loop would spin a core.
//! So it waits 10 ms, doubling up to 1 s while the errors go on, and starts
//! again from 10 ms after an accept succeeds.

use std::io;
use std::time::Duration;

/// The first wait after an error.
pub const FIRST: Duration = Duration::from_millis(10);
/// The longest wait.
pub const MOST: Duration = Duration::from_secs(1);

/// The accept loop's state between errors.
#[derive(Debug)]
pub struct AcceptBackoff {
    next: Duration,
}

impl Default for AcceptBackoff {
    fn default() -> Self {
        AcceptBackoff { next: FIRST }
    }
}

/// Errors of one incoming connection, not of the listener: the next
/// accept may well succeed.
fn of_one_connection(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
    )
}

impl AcceptBackoff {
    /// After `accept` failed with `error`: how long to wait before the
    /// next attempt (`None`: try again at once).
    pub fn failed(&mut self, error: &io::Error) -> Option<Duration> {
        if of_one_connection(error) {
            return None;
        }
        let wait = self.next;
        self.next = (self.next * 2).min(MOST);
        Some(wait)
    }

    /// After `accept` succeeded: the next error waits [`FIRST`] again.
    pub fn succeeded(&mut self) {
        self.next = FIRST;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMFILE: i32 = 24;
    const ENFILE: i32 = 23;
    const ENOMEM: i32 = 12;
    const ENOBUFS: i32 = 105;
    const ECONNABORTED: i32 = 103;

    fn waits(backoff: &mut AcceptBackoff, code: i32, times: usize) -> Vec<Option<u64>> {
        (0..times)
            .map(|_| backoff.failed(&io::Error::from_raw_os_error(code)).map(|wait| wait.as_millis() as u64))
            .collect()
    }

    #[test]
    fn running_out_of_descriptors_or_memory_waits_doubling_up_to_a_second() {
        let doubling = [10, 20, 40, 80, 160, 320, 640, 1000, 1000].map(Some).to_vec();
        for code in [EMFILE, ENFILE, ENOMEM, ENOBUFS] {
            let mut backoff = AcceptBackoff::default();
            assert_eq!(waits(&mut backoff, code, doubling.len()), doubling, "os error {code}");
        }
    }

    #[test]
    fn a_success_starts_the_waits_over() {
        let mut backoff = AcceptBackoff::default();
        assert_eq!(waits(&mut backoff, EMFILE, 3), [Some(10), Some(20), Some(40)]);
        backoff.succeeded();
        assert_eq!(waits(&mut backoff, ENFILE, 2), [Some(10), Some(20)]);
    }

    #[test]
    fn a_connection_aborted_before_accept_is_skipped_at_once() {
        let mut backoff = AcceptBackoff::default();
        assert_eq!(waits(&mut backoff, ECONNABORTED, 3), [None, None, None]);
        // ...and does not make the next resource error wait longer.
        assert_eq!(waits(&mut backoff, EMFILE, 1), [Some(10)]);
    }
}
