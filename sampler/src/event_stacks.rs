//! The stacks of each thread's previous event, on the sampler's side:
//! Whaley's marked frames for events.
//!
//! Consecutive events of a thread share most of their stack. The callback
//! walks only the frames that changed since the thread's previous event
//! (its walk history verifies the rest on the stack) and sends those
//! alone, with how many frames at the bottom of the stack it shares with
//! that previous event ([`crate::events::Chain`]). Here each thread's
//! event stream keeps the previous event's whole stack, raw and named, and
//! the event's marks in the tree: a chained event's stack is that stack's
//! shared bottom with the new frames on top, and only the new frames are
//! named and searched for in the tree.
//!
//! Correctness first: a chained event is only applied to the event just
//! before it in its stream (the numbers must follow each other), else it
//! is dropped and counted, and its stream is asked for a whole event next
//! ([`EventStream::ask_whole`]). A stream forgotten here (too many
//! streams; its thread ended) is asked the same, so a callback never goes
//! on sending frames against a stack the sampler no longer has. The tree
//! holds every event with its whole stack, as before: only the work
//! changes.

use std::sync::Arc;

use pcct::{Frame, Marks};
use rustc_hash::FxHashMap as HashMap;

use crate::events::{Chain, EventStream};

/// Most streams remembered (threads with recent events); beyond it the
/// least recently used quarter is forgotten (asked for whole events).
/// A stream holds about 44 bytes a frame of its previous event (raw,
/// named and marked): 5.5 MiB for all at `depth=512` at worst.
pub const MAX_STREAMS: usize = 256;

/// Ticks after which a stream whose thread ended (no one else holds it)
/// is forgotten.
const ENDED_AFTER_TICKS: u64 = 64;

/// One thread's previous event.
struct Stream {
    handle: Arc<EventStream>,
    /// The previous event's number.
    seq: u32,
    /// Its frames, root first, without its class: (jmethodID, bci).
    raw: Vec<(usize, i32)>,
    /// The same frames named, valid for the method table `named_epoch`
    /// (`named.len() <= raw.len()`: the rest is named on demand).
    named: Vec<Frame>,
    named_epoch: u64,
    /// Whether a chained event may follow it (it was whole, not truncated).
    chainable: bool,
    /// The previous event's marks in the tree (its stack with its class).
    marks: Marks,
    last_tick: u64,
}

/// Why a chained event could not be applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unchained {
    /// Its stream is not known here (forgotten, or never sent whole).
    UnknownStream,
    /// An event of the stream is missing in between.
    OutOfSequence,
}

/// The previous event of every stream with recent events.
#[derive(Default)]
pub struct EventStacks {
    streams: HashMap<u64, Stream>,
}

/// An event's whole stack, as [`EventStacks::apply`] rebuilt it.
pub struct Applied<'a> {
    /// Root first.
    pub raw: &'a [(usize, i32)],
    /// Root first, named as far as `named.len()`.
    pub named: &'a mut Vec<Frame>,
    /// The stream's event marks, to record the event through.
    pub marks: &'a mut Marks,
}

impl EventStacks {
    pub fn len(&self) -> usize {
        self.streams.len()
    }

    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// Rebuilds the whole stack of an event of `chain` whose new frames are
    /// `frames` (leaf first), and makes it the stream's previous event.
    /// `epoch` is the method table's (names of another epoch are dropped).
    /// `None` for an event of no stream (recorded whole, remembered nowhere).
    pub fn apply(
        &mut self,
        chain: &Chain,
        frames: &[(usize, i32)],
        truncated: bool,
        epoch: u64,
        tick: u64,
    ) -> Option<Result<Applied<'_>, Unchained>> {
        if chain.stream == 0 {
            return None;
        }
        if chain.shared == 0 {
            let Some(handle) = chain.handle.clone() else { return Some(Err(Unchained::UnknownStream)) };
            self.make_room(chain.stream);
            let stream = self.streams.entry(chain.stream).or_insert_with(|| Stream::new(handle.clone()));
            stream.handle = handle;
            stream.raw.clear();
            stream.named.clear();
        } else {
            let Some(stream) = self.streams.get_mut(&chain.stream) else {
                return Some(Err(Unchained::UnknownStream));
            };
            let shared = chain.shared as usize;
            if !stream.chainable || stream.seq.wrapping_add(1) != chain.seq || shared > stream.raw.len() {
                stream.handle.ask_whole();
                stream.chainable = false;
                return Some(Err(Unchained::OutOfSequence));
            }
            stream.raw.truncate(shared);
            stream.named.truncate(shared);
        }
        let stream = self.streams.get_mut(&chain.stream).expect("present");
        if stream.named_epoch != epoch {
            stream.named.clear();
            stream.named_epoch = epoch;
        }
        stream.raw.extend(frames.iter().rev());
        stream.seq = chain.seq;
        stream.chainable = !truncated;
        stream.last_tick = tick;
        Some(Ok(Applied { raw: &stream.raw, named: &mut stream.named, marks: &mut stream.marks }))
    }

    /// Every stream's frames (to name them again after the method table
    /// started over).
    pub fn raw_frames(&self) -> impl Iterator<Item = &(usize, i32)> {
        self.streams.values().flat_map(|stream| stream.raw.iter())
    }

    /// Forgets the streams whose threads ended a while ago (no one else
    /// holds them and they sent nothing for a while).
    pub fn forget_ended(&mut self, tick: u64) {
        self.streams.retain(|_, stream| {
            Arc::strong_count(&stream.handle) > 1 || tick.saturating_sub(stream.last_tick) < ENDED_AFTER_TICKS
        });
    }

    /// Forgets the least recently used quarter when a new stream would go
    /// beyond [`MAX_STREAMS`]; each is asked for a whole event next.
    fn make_room(&mut self, new: u64) {
        if self.streams.len() < MAX_STREAMS || self.streams.contains_key(&new) {
            return;
        }
        let mut by_age: Vec<(u64, u64)> = self.streams.iter().map(|(&id, stream)| (stream.last_tick, id)).collect();
        let quarter = (by_age.len() / 4).max(1);
        by_age.select_nth_unstable(quarter - 1);
        for (_, id) in &by_age[..quarter] {
            if let Some(stream) = self.streams.remove(id) {
                stream.handle.ask_whole();
            }
        }
    }
}

impl Stream {
    fn new(handle: Arc<EventStream>) -> Stream {
        Stream {
            handle,
            seq: 0,
            raw: Vec::new(),
            named: Vec::new(),
            named_epoch: 0,
            chainable: false,
            marks: Marks::new(),
            last_tick: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(stream: &Arc<EventStream>, seq: u32) -> Chain {
        Chain { stream: stream.id(), handle: Some(Arc::clone(stream)), seq, shared: 0 }
    }

    fn chained(stream: &Arc<EventStream>, seq: u32, shared: u32) -> Chain {
        Chain { stream: stream.id(), handle: None, seq, shared }
    }

    fn raw(stacks: &mut EventStacks, chain: &Chain, frames: &[(usize, i32)]) -> Result<Vec<(usize, i32)>, Unchained> {
        stacks.apply(chain, frames, false, 0, 1).expect("a stream").map(|applied| applied.raw.to_vec())
    }

    #[test]
    fn a_chained_event_is_the_shared_bottom_of_the_previous_one_with_its_new_frames_on_top() {
        let stream = EventStream::new();
        let mut stacks = EventStacks::default();
        // main -> a -> b (leaf first as the callback sends them).
        assert_eq!(
            raw(&mut stacks, &whole(&stream, 0), &[(3, 30), (2, 20), (1, 10)]),
            Ok(vec![(1, 10), (2, 20), (3, 30)])
        );
        // main -> a -> c -> d: two frames shared.
        assert_eq!(
            raw(&mut stacks, &chained(&stream, 1, 2), &[(5, 50), (4, 40)]),
            Ok(vec![(1, 10), (2, 20), (4, 40), (5, 50)])
        );
        // Nothing new but the leaf's bci.
        assert_eq!(raw(&mut stacks, &chained(&stream, 2, 3), &[(5, 51)]), Ok(vec![(1, 10), (2, 20), (4, 40), (5, 51)]));
        assert!(!stream.take_whole(), "nothing went wrong");
    }

    #[test]
    fn a_gap_or_an_unknown_stream_is_refused_and_asks_for_a_whole_event() {
        let stream = EventStream::new();
        let mut stacks = EventStacks::default();
        assert_eq!(raw(&mut stacks, &chained(&stream, 1, 1), &[(2, 0)]), Err(Unchained::UnknownStream));
        raw(&mut stacks, &whole(&stream, 4), &[(2, 20), (1, 10)]).expect("whole");
        // Event 5 went missing.
        assert_eq!(raw(&mut stacks, &chained(&stream, 6, 1), &[(3, 0)]), Err(Unchained::OutOfSequence));
        assert!(stream.take_whole());
        // The stream stays refused until a whole event.
        assert_eq!(raw(&mut stacks, &chained(&stream, 7, 1), &[(3, 0)]), Err(Unchained::OutOfSequence));
        assert_eq!(raw(&mut stacks, &whole(&stream, 8), &[(9, 0)]), Ok(vec![(9, 0)]));
        assert_eq!(raw(&mut stacks, &chained(&stream, 9, 1), &[(8, 0)]), Ok(vec![(9, 0), (8, 0)]));
        // More shared frames than the previous stack had.
        assert_eq!(raw(&mut stacks, &chained(&stream, 10, 3), &[(8, 0)]), Err(Unchained::OutOfSequence));
        // A truncated event cannot be chained to.
        stacks.apply(&whole(&stream, 11), &[(1, 0)], true, 0, 1).expect("stream").expect("whole");
        assert_eq!(raw(&mut stacks, &chained(&stream, 12, 1), &[(2, 0)]), Err(Unchained::OutOfSequence));
    }

    #[test]
    fn names_of_an_older_method_table_are_dropped() {
        let stream = EventStream::new();
        let mut stacks = EventStacks::default();
        let applied = stacks.apply(&whole(&stream, 0), &[(2, 0), (1, 0)], false, 0, 1).expect("s").expect("whole");
        applied.named.extend([Frame::new(pcct::MethodId(7), 0), Frame::new(pcct::MethodId(8), 0)]);
        let applied = stacks.apply(&chained(&stream, 1, 2), &[(3, 0)], false, 0, 1).expect("s").expect("chained");
        assert_eq!(applied.named.len(), 2, "the shared frames keep their names");
        let applied = stacks.apply(&chained(&stream, 2, 2), &[(3, 1)], false, 1, 1).expect("s").expect("chained");
        assert!(applied.named.is_empty(), "a new method table: named again");
    }

    #[test]
    fn streams_are_bounded_and_those_of_ended_threads_forgotten() {
        let mut stacks = EventStacks::default();
        let streams: Vec<Arc<EventStream>> = (0..MAX_STREAMS + 1).map(|_| EventStream::new()).collect();
        for (tick, stream) in streams.iter().enumerate() {
            stacks.apply(&whole(stream, 0), &[(1, 0)], false, 0, tick as u64).expect("s").expect("whole");
        }
        assert!(stacks.len() <= MAX_STREAMS, "{}", stacks.len());
        assert!(streams[0].take_whole(), "the oldest was forgotten and asked for a whole event");
        assert!(!streams[MAX_STREAMS].take_whole());
        // Threads that ended: only the sampler holds their streams.
        drop(streams);
        stacks.forget_ended(MAX_STREAMS as u64 + ENDED_AFTER_TICKS + 1);
        assert!(stacks.is_empty());
    }
}
