//! A thread's *marked frames*: the stack it had at its previous sample,
//! with the node each frame mapped to (see the crate docs for the exact
//! meaning of "still marked").
//!
//! Whaley sets a bit in each visited frame's return address; HotSpot gives
//! no way to write into Java frames, so the sampler keeps the marks beside
//! the stack instead: one `Marks` per sampled thread, compared with the next
//! stack of the same thread.

use crate::frame::Frame;
use crate::method::MethodId;
use crate::slot::NIL;

/// Identifies the tree (and its purge generation) that marks point into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TreeToken {
    pub(crate) tree: u64,
    pub(crate) epoch: u64,
}

impl TreeToken {
    pub(crate) const NONE: TreeToken = TreeToken { tree: 0, epoch: 0 };
}

/// The marked frames of one thread.
///
/// Marks hold node indices of one tree and one purge generation of it; the
/// tree checks the token on every update and treats marks from another tree
/// or from before a purge as absent, so a stale mark can never be followed.
#[derive(Clone, Debug)]
pub struct Marks {
    pub(crate) token: TreeToken,
    /// The previous stack, root first.
    pub(crate) frames: Vec<Frame>,
    /// The node of each frame of `frames`; `NIL` where the frame was never
    /// visited (beyond a bounded walk).
    pub(crate) nodes: Vec<u32>,
    /// Whether `nodes` is the tree path of `frames` from the root (no
    /// unattached root on it), so that the frames above a node are its
    /// tree ancestors.
    pub(crate) rooted: bool,
    /// The outermost activations on the marked path (nodes with no ancestor
    /// of the same method): (index in `frames`, method), in frame order. A
    /// sample adds its weight to the total of each of these methods, once.
    /// Kept while `rooted`.
    pub(crate) outermost: Vec<(u32, MethodId)>,
}

impl Default for Marks {
    fn default() -> Self {
        Marks::new()
    }
}

impl Marks {
    pub fn new() -> Marks {
        Marks { token: TreeToken::NONE, frames: Vec::new(), nodes: Vec::new(), rooted: true, outermost: Vec::new() }
    }

    /// Marks whose vectors hold `depth` frames without reallocating, so the
    /// update path does not allocate once a thread is warm.
    pub fn with_capacity(depth: usize) -> Marks {
        Marks {
            token: TreeToken::NONE,
            frames: Vec::with_capacity(depth),
            nodes: Vec::with_capacity(depth),
            rooted: true,
            outermost: Vec::with_capacity(depth),
        }
    }

    /// Forgets the marks: the next sample of the thread starts at the root.
    pub fn clear(&mut self) {
        self.token = TreeToken::NONE;
        self.frames.clear();
        self.nodes.clear();
        self.rooted = true;
        self.outermost.clear();
    }

    /// Forgets the marks at and below frame `keep` (the path's first `keep`
    /// frames stay marked).
    pub(crate) fn truncate(&mut self, keep: usize) {
        self.frames.truncate(keep);
        self.nodes.truncate(keep);
        let outermost_kept = self.outermost.partition_point(|&(index, _)| (index as usize) < keep);
        self.outermost.truncate(outermost_kept);
    }

    /// Number of marked frames.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// The stack the marks were taken from, root first.
    pub fn frames(&self) -> &[Frame] {
        &self.frames
    }

    pub(crate) fn leaf_node(&self) -> Option<u32> {
        self.nodes.last().copied().filter(|&node| node != NIL)
    }

    /// Length of the still-marked prefix of `stack`: frame `i` is still
    /// marked when frames `0..=i` have the same methods and kinds as the
    /// marks and frames `0..i` the same bytecode indices (call sites).
    pub(crate) fn still_marked(&self, stack: &[Frame]) -> usize {
        let common = self.frames.len().min(stack.len());
        let (old, new) = (&self.frames[..common], &stack[..common]);
        match old.iter().zip(new).position(|(a, b)| a != b) {
            None => common,
            Some(first_difference) => {
                let (old, new) = (&old[first_difference], &new[first_difference]);
                if old.method == new.method && old.kind == new.kind {
                    first_difference + 1
                } else {
                    first_difference
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::method::MethodId;

    fn frames(spec: &[(u32, i32)]) -> Vec<Frame> {
        spec.iter().map(|&(m, bci)| Frame::new(MethodId(m), bci)).collect()
    }

    #[test]
    fn still_marked_follows_methods_and_call_sites() {
        let mut marks = Marks::new();
        marks.frames = frames(&[(1, 4), (2, 8), (3, 0)]);
        marks.nodes = vec![1, 2, 3];
        // Same stack, leaf moved on: everything still marked.
        assert_eq!(marks.still_marked(&frames(&[(1, 4), (2, 8), (3, 5)])), 3);
        // Frame 1 now at another bci: frame 1 still marked, frame 2 new.
        assert_eq!(marks.still_marked(&frames(&[(1, 4), (2, 9), (3, 0)])), 2);
        // Frame 1 is another method: only frame 0 marked.
        assert_eq!(marks.still_marked(&frames(&[(1, 4), (7, 8), (3, 0)])), 1);
        // Returned to a caller: the shorter stack is marked through.
        assert_eq!(marks.still_marked(&frames(&[(1, 4), (2, 8)])), 2);
        // Deeper stack below an unchanged prefix.
        assert_eq!(marks.still_marked(&frames(&[(1, 4), (2, 8), (3, 0), (4, 1)])), 3);
        assert_eq!(marks.still_marked(&frames(&[(9, 4)])), 0);
    }
}
