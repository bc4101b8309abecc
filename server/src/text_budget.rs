//! Text answers (reports, collapsed stacks, the flame graph's input) are
//! written into a buffer with a byte budget: a profile of many deep
//! contexts can make collapsed stacks of hundreds of megabytes, which the
//! server must not build. Past the budget the writer fails and the route
//! answers 413, naming `min_share` (which prunes the answer).

use std::io;

/// Most bytes of one text answer.
pub const MAX_TEXT_BYTES: usize = 64 << 20;

/// An in-memory writer that refuses to grow past its budget.
pub struct BudgetedText {
    bytes: Vec<u8>,
    budget: usize,
    exceeded: bool,
}

impl BudgetedText {
    pub fn new(budget: usize) -> BudgetedText {
        BudgetedText { bytes: Vec::new(), budget, exceeded: false }
    }

    /// The text, or `None` if the budget was exceeded.
    pub fn finish(self) -> Option<String> {
        self.finish_bytes().and_then(|bytes| String::from_utf8(bytes).ok())
    }

    /// The bytes, or `None` if the budget was exceeded.
    pub fn finish_bytes(self) -> Option<Vec<u8>> {
        (!self.exceeded).then_some(self.bytes)
    }
}

impl io::Write for BudgetedText {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.bytes.len() + data.len() > self.budget {
            self.exceeded = true;
            return Err(io::Error::other("over the text budget"));
        }
        self.bytes.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Runs an exporter into a budgeted buffer: the text, or `None` if it
/// would exceed `budget` bytes.
pub fn within_budget(budget: usize, write: impl FnOnce(&mut dyn io::Write) -> io::Result<()>) -> Option<String> {
    let mut text = BudgetedText::new(budget);
    let written = write(&mut text);
    match written {
        Ok(()) => text.finish(),
        Err(_) => None,
    }
}

/// [`within_budget`] for a binary answer (pprof).
pub fn within_budget_bytes(budget: usize, write: impl FnOnce(&mut dyn io::Write) -> io::Result<()>) -> Option<Vec<u8>> {
    let mut bytes = BudgetedText::new(budget);
    match write(&mut bytes) {
        Ok(()) => bytes.finish_bytes(),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_within_the_budget_is_kept_and_beyond_it_refused() {
        assert_eq!(within_budget(5, |out| out.write_all(b"hello")), Some("hello".to_string()));
        assert_eq!(within_budget(4, |out| out.write_all(b"hello")), None);
        assert_eq!(within_budget(100, |out| writeln!(out, "{}", "x".repeat(50))).map(|t| t.len()), Some(51));
        assert_eq!(within_budget_bytes(2, |out| out.write_all(&[0xff, 0])), Some(vec![0xff, 0]));
        assert_eq!(within_budget_bytes(1, |out| out.write_all(&[0xff, 0])), None);
    }
}
