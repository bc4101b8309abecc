//! The recent samples: a bounded ring of raw sample records (recorded,
//! checksum-filtered, failed), numbered so a client can page without loss.

use std::collections::VecDeque;

use pcct::MethodId;
use serde::Serialize;

pub use crate::handler::Walker;
pub use crate::hotspot::walker::Broken;

/// Frames kept per record (leaf first).
pub const TOP_FRAMES: usize = 8;

/// What became of a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Outcome {
    /// Walked and recorded into the tree.
    Recorded,
    /// The register checksum matched: the thread had not run (no walk).
    Filtered,
    /// AsyncGetCallTrace failed with this code (recorded under a pseudo-frame).
    Failed { code: i32 },
    /// Walked, but the tree's arena was full.
    DroppedFull,
    /// The thread ended between the signal and the drain.
    Retired,
    /// Cpu mode: the signal reached the thread only after it had waited
    /// off the CPU (its registers are where it was preempted): not
    /// recorded; its CPU time goes to the thread's next sample.
    Deferred,
}

impl Outcome {
    pub fn is_filtered(self) -> bool {
        matches!(self, Outcome::Filtered)
    }
}

/// One sample as it happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleRecord {
    pub seq: u64,
    /// Nanoseconds since the sampler started.
    pub time_ns: u64,
    pub tid: i32,
    pub cpu_delta_ns: u64,
    pub wall_delta_ns: u64,
    pub checksum: u64,
    pub outcome: Outcome,
    /// Frames of the whole stack (0 for filtered and failed samples).
    pub depth: u32,
    /// Leaf-first top frames, `top_len` of them valid.
    pub top: [MethodId; TOP_FRAMES],
    pub top_len: u8,
    /// Which walker gave the frames ([`Walker::None`]: not walked).
    pub walker: Walker,
    /// Where pcct's own walker stopped short of the stack's bottom, when it
    /// did (the frames then came from AsyncGetCallTrace, or are the top of
    /// the stack under a `[break_<reason>]` pseudo-frame).
    pub walk_stopped: Option<Broken>,
}

impl SampleRecord {
    pub fn top_frames(&self) -> &[MethodId] {
        &self.top[..self.top_len as usize]
    }
}

/// Which records a page holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterSelection {
    /// Everything but checksum-filtered samples.
    Exclude,
    Include,
    /// Only checksum-filtered samples.
    Only,
}

impl FilterSelection {
    pub fn parse(text: &str) -> Option<FilterSelection> {
        match text {
            "exclude" => Some(FilterSelection::Exclude),
            "include" => Some(FilterSelection::Include),
            "only" => Some(FilterSelection::Only),
            _ => None,
        }
    }

    fn admits(self, record: &SampleRecord) -> bool {
        match self {
            FilterSelection::Exclude => !record.outcome.is_filtered(),
            FilterSelection::Include => true,
            FilterSelection::Only => record.outcome.is_filtered(),
        }
    }
}

/// A page of records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    pub records: Vec<SampleRecord>,
    /// Pass as `since` to get the records after this page.
    pub next_since: u64,
    /// Records at or after the requested `since` that the ring already overwrote.
    pub overwritten: u64,
    /// Sequence number of the oldest record still in the ring.
    pub oldest: u64,
}

pub struct RecentSamples {
    ring: VecDeque<SampleRecord>,
    capacity: usize,
    next_seq: u64,
}

impl RecentSamples {
    pub fn new(capacity: usize) -> RecentSamples {
        RecentSamples { ring: VecDeque::with_capacity(capacity.max(1)), capacity: capacity.max(1), next_seq: 0 }
    }

    /// Appends a record, numbering it; overwrites the oldest when full.
    pub fn push(&mut self, mut record: SampleRecord) -> u64 {
        record.seq = self.next_seq;
        self.next_seq += 1;
        if self.ring.len() == self.capacity {
            self.ring.pop_front();
        }
        self.ring.push_back(record);
        record.seq
    }

    /// Forgets every record; numbering continues (clients see them as overwritten).
    pub fn clear(&mut self) {
        self.ring.clear();
    }

    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Up to `limit` records with `seq >= since` admitted by `filter`, oldest first.
    pub fn page(&self, since: u64, limit: usize, filter: FilterSelection) -> Page {
        let oldest = self.ring.front().map_or(self.next_seq, |record| record.seq);
        let overwritten = oldest.saturating_sub(since);
        let start = since.max(oldest);
        let skip = (start - oldest) as usize;
        let mut records = Vec::with_capacity(limit.min(self.ring.len()));
        let mut next_since = start;
        let mut full = false;
        for record in self.ring.iter().skip(skip) {
            if records.len() == limit {
                full = true;
                break;
            }
            next_since = record.seq + 1;
            if filter.admits(record) {
                records.push(*record);
            }
        }
        if !full {
            next_since = self.next_seq.max(start);
        }
        Page { records, next_since, overwritten, oldest }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(outcome: Outcome) -> SampleRecord {
        SampleRecord {
            seq: 0,
            time_ns: 0,
            tid: 1,
            cpu_delta_ns: 0,
            wall_delta_ns: 0,
            checksum: 0,
            outcome,
            depth: 0,
            top: [MethodId(0); TOP_FRAMES],
            top_len: 0,
            walker: Walker::None,
            walk_stopped: None,
        }
    }

    #[test]
    fn pages_continue_without_loss_and_report_overwrites() {
        let mut ring = RecentSamples::new(4);
        for i in 0..6 {
            ring.push(record(if i % 2 == 0 { Outcome::Recorded } else { Outcome::Filtered }));
        }
        // Seqs 2..=5 remain; asking from 0 reports two overwritten.
        let page = ring.page(0, 10, FilterSelection::Include);
        assert_eq!(page.overwritten, 2);
        assert_eq!(page.records.iter().map(|r| r.seq).collect::<Vec<_>>(), vec![2, 3, 4, 5]);
        assert_eq!(page.next_since, 6);
        let first = ring.page(2, 2, FilterSelection::Include);
        assert_eq!(first.records.len(), 2);
        let second = ring.page(first.next_since, 2, FilterSelection::Include);
        assert_eq!(second.records[0].seq, 4);
        let only = ring.page(0, 10, FilterSelection::Only);
        assert!(only.records.iter().all(|r| r.outcome == Outcome::Filtered));
        assert_eq!(only.records.len(), 2);
        assert_eq!(ring.page(6, 10, FilterSelection::Include).records.len(), 0);
    }
}
