//! What the JIT did to the code the table follows, as it happened: a
//! bounded ring of events for `/api/jit/events`.
//!
//! The agent feeds it:
//!
//! - `compiled`: a JVMTI CompiledMethodLoad the table kept (HotSpot posts
//!   it from its service thread, shortly after the code is installed);
//! - `not_entrant`: the method enters no code any more (`Method::_code` is
//!   null): HotSpot made the code not entrant (a deoptimization: an
//!   uncommon trap, a class-hierarchy change, a redefinition) and nothing
//!   compiled runs in its place yet;
//! - `replaced`: the method enters other code now (a newer compilation was
//!   installed; its own `compiled` event may come after this one);
//! - `unloaded`: a JVMTI CompiledMethodUnload of code the table still held.
//!
//! The two in the middle come from the agent's JIT thread, which compares
//! each current normal-entry code with what its method enters, a few times
//! a second. HotSpot's reason for a deoptimization is not visible to an
//! agent (JVMTI has no event for it; JFR's `jdk.Deoptimization` has it), so
//! the events say what changed, not why. On-stack-replacement code is not
//! entered through the method, so only its `compiled` and `unloaded` are
//! seen.
//!
//! Memory is bounded: at most the ring's capacity of events; the oldest
//! go first, and the number that went is counted.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::table::{CodeFacts, MethodKey};

/// Events kept (about 200 bytes each).
pub const CAPACITY: usize = 4096;

/// What happened to a piece of code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JitEventKind {
    Compiled,
    NotEntrant,
    Replaced,
    Unloaded,
}

/// One event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JitEvent {
    /// Its number: every event gets the next one, dropped or not.
    pub seq: u64,
    /// When the agent saw it (CLOCK_MONOTONIC nanoseconds).
    pub time_ns: u64,
    pub kind: JitEventKind,
    /// The compiled method (its class in source form).
    pub method: MethodKey,
    /// Where the code is (what CompiledMethodUnload names).
    pub address: u64,
    /// 1-3 C1, 4 C2, when readable.
    pub level: Option<u8>,
    pub compile_id: Option<u32>,
    /// The loop bci of on-stack-replacement code.
    pub osr_bci: Option<i32>,
    /// Bytes of instructions (CompiledMethodLoad's `code_size`).
    pub code_size: Option<u32>,
}

/// The ring.
#[derive(Debug)]
pub struct JitEvents {
    ring: VecDeque<JitEvent>,
    capacity: usize,
    next_seq: u64,
    dropped: u64,
}

impl Default for JitEvents {
    fn default() -> JitEvents {
        JitEvents::new(CAPACITY)
    }
}

/// What [`JitEvents::since`] gives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventPage {
    /// Events from the asked number on, oldest first.
    pub events: Vec<JitEvent>,
    /// The number to ask from next time.
    pub next: u64,
    /// Events dropped from the ring since it started (the oldest first).
    pub dropped: u64,
    /// Of those, the ones at or after the asked number: events missed.
    pub missed: u64,
    pub capacity: usize,
}

impl JitEvents {
    pub fn new(capacity: usize) -> JitEvents {
        JitEvents {
            ring: VecDeque::with_capacity(capacity.min(256)),
            capacity: capacity.max(1),
            next_seq: 0,
            dropped: 0,
        }
    }

    /// Adds an event about `facts`' code of `method`, seen at `time_ns`.
    pub fn push(&mut self, time_ns: u64, kind: JitEventKind, method: &MethodKey, facts: &CodeFacts) {
        if self.ring.len() == self.capacity {
            self.ring.pop_front();
            self.dropped += 1;
        }
        self.ring.push_back(JitEvent {
            seq: self.next_seq,
            time_ns,
            kind,
            method: method.clone(),
            address: facts.address,
            level: facts.level,
            compile_id: facts.compile_id,
            osr_bci: facts.osr_bci,
            code_size: facts.code_size,
        });
        self.next_seq += 1;
    }

    /// At most `limit` events numbered `from` and after.
    pub fn since(&self, from: u64, limit: usize) -> EventPage {
        let oldest = self.ring.front().map_or(self.next_seq, |event| event.seq);
        let events: Vec<JitEvent> = self.ring.iter().filter(|event| event.seq >= from).take(limit).cloned().collect();
        let next = events.last().map_or(from.max(oldest), |event| event.seq + 1);
        EventPage { events, next, dropped: self.dropped, missed: oldest.saturating_sub(from), capacity: self.capacity }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(address: u64) -> CodeFacts {
        CodeFacts {
            address,
            method: 1,
            level: Some(4),
            osr_bci: None,
            compile_id: Some(address as u32),
            ..CodeFacts::default()
        }
    }

    #[test]
    fn pages_follow_the_numbers_and_a_full_ring_drops_the_oldest_and_says_so() {
        let key = MethodKey::new("p.A", "m", "()V");
        let mut events = JitEvents::new(3);
        for address in 0..5 {
            events.push(address * 10, JitEventKind::Compiled, &key, &facts(address));
        }
        let page = events.since(0, 100);
        assert_eq!(page.events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![2, 3, 4]);
        assert_eq!((page.next, page.dropped, page.missed), (5, 2, 2));
        let page = events.since(3, 1);
        assert_eq!(page.events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![3]);
        assert_eq!((page.next, page.missed), (4, 0));
        let page = events.since(5, 10);
        assert!(page.events.is_empty());
        assert_eq!(page.next, 5);
        events.push(99, JitEventKind::NotEntrant, &key, &facts(9));
        let page = events.since(5, 10);
        assert_eq!(page.events[0].kind, JitEventKind::NotEntrant);
        assert_eq!(page.events[0].compile_id, Some(9));
        assert_eq!(page.next, 6);
    }
}
