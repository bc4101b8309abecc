//! A thread's previous stack, raw and named, so that the sampler names only
//! the frames a sample does not share with the thread's previous one.
//!
//! Consecutive samples of a thread share most of their frames, root side
//! (the marked frames of the PCCT paper). The sampler turned every frame of
//! every sample into an interned method: a hash lookup to find whether the
//! jmethodID was named before, and another to get its name; on javac these
//! were the sampler thread's largest cost at 1 ms. With the previous stack
//! kept per thread, a sample's frames that equal the previous one's from the
//! root are named as they were then (equal jmethodIDs within one method table
//! have equal names), and only the rest is looked up.
//!
//! Names are valid within one method table (`Sampler::bound_method_table`
//! starts a new one): a stack named in an older epoch is not reused.
//! Only whole stacks are kept (not truncated, not partial): a truncated
//! stack's root-side frames are not its root's.

#![forbid(unsafe_code)]

use pcct::Frame;

/// Frames as the handler wrote them: (jmethodID, bci), leaf first.
pub(crate) type RawFrame = (usize, i32);

/// How many frames `raw` shares with `previous` from the root (both leaf
/// first).
pub(crate) fn shared_from_root(previous: &[RawFrame], raw: &[RawFrame]) -> usize {
    previous.iter().rev().zip(raw.iter().rev()).take_while(|(a, b)| a == b).count()
}

/// A thread's previous whole stack: raw, and named root first.
#[derive(Debug, Default)]
pub(crate) struct NamedStack {
    raw: Vec<RawFrame>,
    named: Vec<Frame>,
    epoch: u64,
}

impl NamedStack {
    /// The names of the frames `raw` shares with the previous stack from
    /// the root, root first (none when that stack is of another `epoch`).
    pub(crate) fn shared_names(&self, raw: &[RawFrame], epoch: u64) -> &[Frame] {
        if self.epoch != epoch {
            return &[];
        }
        &self.named[..shared_from_root(&self.raw, raw)]
    }

    /// Keeps `raw` (leaf first) and its names `named` (root first, one per
    /// raw frame) of method table `epoch`.
    pub(crate) fn keep(&mut self, raw: &[RawFrame], named: &[Frame], epoch: u64) {
        debug_assert_eq!(raw.len(), named.len());
        self.raw.clear();
        self.raw.extend_from_slice(raw);
        self.named.clear();
        self.named.extend_from_slice(named);
        self.epoch = epoch;
    }

    /// Nothing to reuse (the thread's last stack was not whole).
    pub(crate) fn forget(&mut self) {
        self.raw.clear();
        self.named.clear();
    }
}

/// A thread's previous stack, raw only: the frames the sampler asked to be
/// named (all its frames were named then, in method table `epoch`).
#[derive(Debug, Default)]
pub(crate) struct ResolvedStack {
    raw: Vec<RawFrame>,
    epoch: u64,
}

impl ResolvedStack {
    /// The frames of `raw` (leaf first) not shared with the previous stack
    /// from the root: those to be named (all of them after a new `epoch`).
    /// Keeps `raw` for the next.
    pub(crate) fn new_frames<'a>(&mut self, raw: &'a [RawFrame], epoch: u64) -> &'a [RawFrame] {
        let shared = if self.epoch == epoch { shared_from_root(&self.raw, raw) } else { 0 };
        self.raw.clear();
        self.raw.extend_from_slice(raw);
        self.epoch = epoch;
        &raw[..raw.len() - shared]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcct::MethodId;

    fn named(raw: &[RawFrame]) -> Vec<Frame> {
        raw.iter().rev().map(|&(id, bci)| Frame::new(MethodId(id as u32), bci)).collect()
    }

    #[test]
    fn frames_shared_from_the_root_are_named_as_before() {
        let mut stack = NamedStack::default();
        let first = [(3, 7), (2, 5), (1, 0)];
        stack.keep(&first, &named(&first), 1);
        // Same callers, another leaf.
        assert_eq!(stack.shared_names(&[(4, 1), (2, 5), (1, 0)], 1), &named(&first)[..2]);
        // The caller's call site moved: only the root is shared.
        assert_eq!(stack.shared_names(&[(3, 7), (2, 6), (1, 0)], 1), &named(&first)[..1]);
        // Deeper below the same frames, and returned to a caller.
        assert_eq!(stack.shared_names(&[(9, 0), (3, 7), (2, 5), (1, 0)], 1).len(), 3);
        assert_eq!(stack.shared_names(&[(2, 5), (1, 0)], 1).len(), 2);
        // Another root, another method table, or forgotten: nothing.
        assert!(stack.shared_names(&[(3, 7), (2, 5), (8, 0)], 1).is_empty());
        assert!(stack.shared_names(&first, 2).is_empty());
        stack.forget();
        assert!(stack.shared_names(&first, 1).is_empty());
    }

    #[test]
    fn only_frames_not_shared_from_the_root_are_named() {
        let mut stack = ResolvedStack::default();
        assert_eq!(stack.new_frames(&[(3, 7), (2, 5), (1, 0)], 0).len(), 3);
        assert_eq!(stack.new_frames(&[(4, 1), (2, 5), (1, 0)], 0), &[(4, 1)]);
        assert_eq!(stack.new_frames(&[(4, 1), (2, 5), (1, 0)], 0), &[] as &[RawFrame]);
        // A new method table names everything again.
        assert_eq!(stack.new_frames(&[(4, 1), (2, 5), (1, 0)], 1).len(), 3);
    }
}
