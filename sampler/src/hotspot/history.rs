//! A thread's walk history: what its signal handler keeps between samples
//! (the frames of its previous walk and which half of the slot's frame
//! buffer holds that walk's output). Decoded code is kept for all threads
//! in the process's [`FrameCache`].
//!
//! The slot's frame buffer has two halves: a walk writes into one while
//! the other still holds the previous walk's output, whose unchanged frames
//! it copies (see [`super::marks`]); the sampler drains the half the
//! handler names. The sampler allocates a history at a slot's first
//! request; afterwards only the slot's handler touches it.

use super::cache::FrameCache;
use super::marks::MarkSet;
use super::walker::{Ending, Memo, Previous, Walk};
use crate::agct::CallFrame;

/// One thread slot's walk history (about 16 KiB).
#[derive(Debug, Default)]
pub struct History {
    marks: [MarkSet; 2],
    /// The half (and mark set) of the previous walk, and its frames.
    previous: usize,
    previous_frames: usize,
}

impl History {
    /// The half of the frame buffer the next walk writes.
    #[inline]
    pub fn next_half(&self) -> usize {
        1 - self.previous
    }

    /// What the walk into half [`History::next_half`] of `halves` gets:
    /// `cache`, the previous walk (its marks and its output half) and the
    /// mark set to record into; and the half to write.
    #[inline]
    pub fn memo<'a>(
        &'a mut self,
        halves: [&'a mut [CallFrame]; 2],
        cache: Option<&'a FrameCache>,
    ) -> (Memo<'a>, &'a mut [CallFrame]) {
        let previous = self.previous;
        let [first, second] = halves;
        let (previous_out, out) = if previous == 0 { (first, second) } else { (second, first) };
        let (left, right) = self.marks.split_at_mut(1);
        let (previous_marks, marks) = if previous == 0 { (&left[0], &mut right[0]) } else { (&right[0], &mut left[0]) };
        let previous_out = &previous_out[..self.previous_frames.min(previous_out.len())];
        let memo =
            Memo { cache, previous: Some(Previous { marks: previous_marks, out: previous_out }), marks: Some(marks) };
        (memo, out)
    }

    /// After a walk into the next half: a complete walk becomes the
    /// previous one; anything else leaves nothing to reuse.
    #[inline]
    pub fn finish(&mut self, walk: &Walk) {
        let written = self.next_half();
        if walk.ending == Ending::Complete {
            self.previous = written;
            self.previous_frames = walk.frames;
        } else {
            self.forget();
        }
    }

    /// Makes the next walk write the half other than `half`, where a
    /// sample still waits for the sampler (the slot's second place,
    /// `slots`). The next walk would write `half` only if the walk that
    /// wrote it was not kept (incomplete, or AsyncGetCallTrace's), so
    /// there is nothing to reuse either way.
    #[inline]
    pub fn avoid(&mut self, half: usize) {
        if self.next_half() == half {
            self.previous = half;
            self.forget();
        }
    }

    /// Nothing to reuse (AsyncGetCallTrace wrote the frames, or the walk
    /// failed).
    #[inline]
    pub fn forget(&mut self) {
        self.marks[0].clear();
        self.marks[1].clear();
        self.previous_frames = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_behind_a_waiting_sample_writes_the_other_half() {
        let mut history = History::default();
        // The waiting sample is in the half the next walk would write (the
        // walk that wrote it was not kept): the next walk moves over.
        let waiting = history.next_half();
        history.avoid(waiting);
        assert_eq!(history.next_half(), 1 - waiting);
        assert_eq!(history.previous_frames, 0, "nothing to reuse");
        // The waiting sample is the previous walk, kept: it stays to be reused.
        history.previous_frames = 7;
        let waiting = history.previous;
        history.avoid(waiting);
        assert_eq!((history.next_half(), history.previous_frames), (1 - waiting, 7));
    }

    /// README, "Memory": about 16 KiB per sampled thread.
    #[test]
    fn a_history_takes_about_sixteen_kibibytes() {
        let size = std::mem::size_of::<History>();
        assert!((14 << 10..=18 << 10).contains(&size), "{size} bytes");
    }
}
