//! A thread's walk history: what its signal handler keeps between samples
//! (the frames of its previous walk and which region of the slot's frame
//! buffer holds that walk's output). Decoded code is kept for all threads
//! in the process's [`FrameCache`].
//!
//! The slot has two regions of its own (`slots`): a walk writes into one
//! while the other still holds the previous walk's output, whose unchanged
//! frames it copies (see [`super::marks`]); the sampler drains the region
//! the handler names. (A walk into a region borrowed from the slots' pool
//! reads the history but leaves it as it is: [`History::memo_to_read`].) The sampler allocates a history at a
//! slot's first request; afterwards only the slot's handler touches it.

use super::cache::FrameCache;
use super::marks::MarkSet;
use super::walker::{Ending, Memo, Previous, Walk};
use crate::agct::CallFrame;

/// One thread slot's walk history (about 16 KiB).
#[derive(Debug, Default)]
pub struct History {
    /// The marks of the previous walk, and the set the next walk records
    /// into.
    marks: [MarkSet; 2],
    /// The previous walk, if it is kept to be reused.
    kept: Option<Kept>,
}

/// A complete walk kept for the next one to reuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Kept {
    /// The region of the frame buffer its frames are in.
    region: usize,
    /// Where its Java frames start in the region (after the sample's
    /// native frames).
    first: usize,
    /// Its frames.
    frames: usize,
    /// The mark set describing it.
    set: usize,
}

impl History {
    /// The region of `regions` the next walk writes: not one in `busy`
    /// (bit `r` for region `r`: frames of samples waiting for the
    /// sampler), nor the previous walk's, whose frames it reuses; the
    /// previous walk's only if no other is free (then it reuses nothing);
    /// `usize::MAX`, which names no region, if none is free.
    #[inline]
    pub fn next_region(&mut self, busy: u32, regions: usize) -> usize {
        let kept = self.kept.map(|kept| kept.region);
        let mut free = (0..regions.min(32)).filter(|region| busy & (1 << region) == 0);
        match free.clone().find(|&region| Some(region) != kept) {
            Some(region) => region,
            None => {
                self.forget();
                free.next().unwrap_or(usize::MAX)
            }
        }
    }

    /// The previous walk's region, where its frames start in it, and how
    /// many there are, if it is kept.
    #[inline]
    pub fn kept(&self) -> Option<(usize, usize, usize)> {
        self.kept.map(|kept| (kept.region, kept.first, kept.frames))
    }

    /// What the next walk gets: `cache`, the previous walk (its marks and
    /// `previous_out`, its frames in region [`History::kept`]; empty if
    /// none) and the mark set to record into.
    #[inline]
    pub fn memo<'a>(&'a mut self, previous_out: &'a [CallFrame], cache: Option<&'a FrameCache>) -> Memo<'a> {
        let previous = self.kept.map_or(0, |kept| kept.set);
        let (left, right) = self.marks.split_at_mut(1);
        let (previous_marks, marks) = if previous == 0 { (&left[0], &mut right[0]) } else { (&right[0], &mut left[0]) };
        let previous_out = if self.kept.is_some() { previous_out } else { &[] };
        Memo { cache, previous: Some(Previous { marks: previous_marks, out: previous_out }), marks: Some(marks) }
    }

    /// What a walk that is not kept gets (one into a region borrowed from
    /// the slots' pool, which goes back at the drain): `cache` and the
    /// previous walk to reuse, as [`History::memo`] gives, but no mark set
    /// to record into; the history stays as it is.
    #[inline]
    pub fn memo_to_read<'a>(&'a self, previous_out: &'a [CallFrame], cache: Option<&'a FrameCache>) -> Memo<'a> {
        let Some(kept) = self.kept else { return Memo { cache, previous: None, marks: None } };
        Memo { cache, previous: Some(Previous { marks: &self.marks[kept.set], out: previous_out }), marks: None }
    }

    /// After a walk into region `written`, from its frame `first` on: a
    /// complete walk becomes the previous one; anything else leaves nothing
    /// to reuse.
    #[inline]
    pub fn finish(&mut self, walk: &Walk, written: usize, first: usize) {
        if walk.ending == Ending::Complete {
            let set = 1 - self.kept.map_or(0, |kept| kept.set);
            self.kept = Some(Kept { region: written, first, frames: walk.frames, set });
        } else {
            self.forget();
        }
    }

    /// Nothing to reuse (AsyncGetCallTrace wrote the frames, or the walk
    /// failed).
    #[inline]
    pub fn forget(&mut self) {
        self.marks[0].clear();
        self.marks[1].clear();
        self.kept = None;
    }
}

/// A walk into one of two halves of `buffer` with `history`, as the JVMTI
/// callbacks' own walks and the tests make: the half to write, the previous
/// walk's frames and the output.
pub fn halves<'b>(history: &mut History, buffer: &'b mut [CallFrame]) -> (usize, &'b [CallFrame], &'b mut [CallFrame]) {
    let capacity = buffer.len() / 2;
    let half = history.next_region(0, 2);
    let (first, second) = buffer.split_at_mut(capacity);
    let (previous, out) = if half == 0 { (second, first) } else { (first, second) };
    let frames = history.kept().map_or(0, |(_, _, frames)| frames).min(previous.len());
    (half, &previous[..frames], out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(frames: usize) -> Walk {
        Walk { frames, ending: Ending::Complete, reused: 0, cache_hits: 0, cache_stale: 0 }
    }

    #[test]
    fn a_walk_writes_a_region_free_of_waiting_samples_and_of_the_previous_walk() {
        let mut history = History::default();
        assert_eq!(history.next_region(0, 4), 0, "nothing kept, nothing waiting");
        history.finish(&walk(7), 0, 0);
        assert_eq!(history.kept(), Some((0, 0, 7)));
        // The previous walk waits in region 0, another sample in region 1.
        assert_eq!(history.next_region(0b11, 4), 2);
        history.finish(&walk(5), 2, 3);
        assert_eq!(history.next_region(0b101, 4), 1);
        // Its region is free (drained) but kept to be reused: the next walk
        // writes another.
        history.finish(&walk(4), 0, 2);
        assert_eq!(history.next_region(0, 2), 1);
        assert_eq!(history.kept(), Some((0, 2, 4)));
    }

    #[test]
    fn the_previous_walks_region_is_written_only_when_nothing_else_is_free() {
        let mut history = History::default();
        history.finish(&walk(7), 1, 0);
        // Two regions, the other one holding a waiting sample.
        assert_eq!(history.next_region(0b01, 2), 1);
        assert_eq!(history.kept(), None, "nothing to reuse");
    }

    #[test]
    fn an_incomplete_walk_leaves_nothing_to_reuse() {
        let mut history = History::default();
        history.finish(&walk(7), 1, 0);
        history.finish(&Walk { ending: Ending::Full, ..walk(3) }, 0, 0);
        assert_eq!(history.kept(), None);
        assert_eq!(history.next_region(0, 2), 0);
    }

    /// README, "Memory": about 16 KiB per sampled thread.
    #[test]
    fn a_history_takes_about_sixteen_kibibytes() {
        let size = std::mem::size_of::<History>();
        assert!((14 << 10..=18 << 10).contains(&size), "{size} bytes");
    }
}
