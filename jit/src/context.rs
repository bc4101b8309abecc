//! Whether a hot edge's call is inlined in the code that runs it: the join
//! of a calling context (a path of the PCCT) with the inline table.
//!
//! The same call can be inlined in one compiled method and a real call in
//! another, and which code runs a frame depends on the frames above it:
//! when `main` is compiled with `caller` inlined, the `caller` frame of the
//! context `main -> caller` is part of `main`'s code, and whether
//! `caller -> callee` is inlined there is decided by `main`'s inlining
//! tree, not by `caller`'s own compiled code. So the path is walked from
//! its outermost frame: a frame whose method the code running its caller
//! inlined at that call site belongs to that code; any other frame starts
//! a physical frame of its own, run by its method's current code (or the
//! interpreter, when it has none).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::table::{Code, InlineTable, JitMethod};
use crate::tree::ROOT;

/// One frame of a calling context, outermost first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Its method, if the table knows it.
    pub method: Option<JitMethod>,
    /// Where the frame above called it (negative for the outermost frame).
    pub bci: i32,
}

/// Whether a call is inlined: JSON `true`, `false` or `"unknown"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inlined {
    Yes,
    No,
    /// No compiled code is known for the caller's frame and the table is
    /// incomplete (events off, refused records, attach before they were
    /// generated), or the edge is not a call.
    Unknown,
}

impl Serialize for Inlined {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Inlined::Yes => serializer.serialize_bool(true),
            Inlined::No => serializer.serialize_bool(false),
            Inlined::Unknown => serializer.serialize_str("unknown"),
        }
    }
}

impl<'de> Deserialize<'de> for Inlined {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Inlined, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Known(bool),
            Other(serde::de::IgnoredAny),
        }
        Ok(match Raw::deserialize(deserializer)? {
            Raw::Known(true) => Inlined::Yes,
            Raw::Known(false) => Inlined::No,
            Raw::Other(_) => Inlined::Unknown,
        })
    }
}

/// The code that runs a caller's frame in one context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunningCode {
    /// The compiled method (the caller itself, or a method that inlined it).
    pub root: JitMethod,
    pub osr_bci: Option<i32>,
    pub compile_id: Option<u32>,
    pub level: Option<u8>,
    pub loaded_ns: u64,
}

/// What the table says of one call in one context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EdgeState {
    pub inlined: Inlined,
    /// Compile level of the code running the caller: 0 interpreted, 1-3
    /// C1, 4 C2; none when unknown.
    pub caller_level: Option<u8>,
    /// That code, when the caller's frame is compiled.
    pub code: Option<RunningCode>,
    /// When the current code of the method whose code decides it last
    /// changed (the caller's clock).
    pub changed_ns: Option<u64>,
    /// Inlined, and no instruction of the call remains in that code (an
    /// inlined method optimised away, or a branch C2 pruned).
    pub optimized_away: bool,
}

impl EdgeState {
    pub const UNKNOWN: EdgeState = EdgeState {
        inlined: Inlined::Unknown,
        caller_level: None,
        code: None,
        changed_ns: None,
        optimized_away: false,
    };
}

/// The state of the call at `call_bci` of the last frame of `path` (the
/// caller, outermost frame first) to `callee`.
pub fn edge_state(table: &InlineTable, path: &[Step], call_bci: i32, callee: Option<JitMethod>) -> EdgeState {
    let Some(caller) = path.last() else { return EdgeState::UNKNOWN };
    if call_bci < 0 {
        return EdgeState::UNKNOWN;
    }
    let running = running_codes(table, path);
    let Some(&(code, node)) = running.iter().max_by_key(|(code, _)| (code.facts.compile_id, code.loaded_ns)) else {
        // The caller's frame has no compiled code: interpreted, if the
        // table holds all code.
        return match table.complete() {
            true => EdgeState {
                inlined: Inlined::No,
                caller_level: Some(0),
                code: None,
                changed_ns: caller.method.and_then(|method| table.changed_ns(method)),
                optimized_away: false,
            },
            false => EdgeState::UNKNOWN,
        };
    };
    // An inlined child, or else a position at the call (a real call), or
    // else no instruction of the call at all (see `tree`).
    let child = callee.and_then(|callee| code.tree.child(node, call_bci, callee.0));
    let called = child.is_none() && code.tree.has_position(node, call_bci);
    EdgeState {
        inlined: if called { Inlined::No } else { Inlined::Yes },
        optimized_away: child.is_none() && !called,
        caller_level: code.facts.level,
        code: Some(RunningCode {
            root: code.root,
            osr_bci: code.facts.osr_bci,
            compile_id: code.facts.compile_id,
            level: code.facts.level,
            loaded_ns: code.loaded_ns,
        }),
        changed_ns: table.changed_ns(code.root),
    }
}

/// The current code that runs the last frame of `path`, each with the
/// node of that frame in its inlining tree (empty: the frame is interpreted).
fn running_codes<'t>(table: &'t InlineTable, path: &[Step]) -> Vec<(&'t Code, u32)> {
    let mut running: Vec<(&Code, u32)> = Vec::new();
    for (index, step) in path.iter().enumerate() {
        if index > 0 {
            running.retain_mut(|(code, node)| match step.method.and_then(|m| code.tree.child(*node, step.bci, m.0)) {
                Some(child) => {
                    *node = child;
                    true
                }
                None => false,
            });
        }
        if running.is_empty() {
            // A physical frame of its own.
            running =
                step.method.map(|method| table.current(method).map(|code| (code, ROOT)).collect()).unwrap_or_default();
        }
    }
    running
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::tests::{facts, key, names};
    use crate::table::{CodeFacts, Limits};
    use crate::tree::TreeBuilder;

    /// VM ids: 1 main, 2 caller, 3 big, 4 small, 5 empty. The caller's
    /// own code inlines small (@4) and calls big (@3); main's OSR code
    /// inlines caller (@2) and, in it, small (@4) but not big; empty (@6)
    /// is inlined and optimised away (no position left at all).
    fn table() -> InlineTable {
        let mut table = InlineTable::new(Limits::default());
        let all = names(&[1, 2, 3, 4, 5]);
        let mut caller = TreeBuilder::new(2, 64);
        caller.add_chain(&[(4, 0), (2, 4)]).unwrap();
        caller.add_chain(&[(2, 3)]).unwrap();
        table.load(facts(0x1000, 2, 20), caller, all, 100);
        let mut main = TreeBuilder::new(1, 64);
        main.add_chain(&[(4, 0), (2, 4), (1, 2)]).unwrap();
        main.add_chain(&[(2, 3), (1, 2)]).unwrap();
        table.load(CodeFacts { osr_bci: Some(9), ..facts(0x2000, 1, 30) }, main, Vec::new(), 200);
        table.mark_complete();
        table
    }

    fn method(table: &InlineTable, id: u64) -> Option<JitMethod> {
        table.method(&key(&format!("m{id}")))
    }

    fn path(table: &InlineTable, steps: &[(u64, i32)]) -> Vec<Step> {
        steps.iter().map(|&(id, bci)| Step { method: method(table, id), bci }).collect()
    }

    #[test]
    fn the_code_of_the_outermost_method_that_inlined_the_caller_decides() {
        let table = table();
        let context = path(&table, &[(1, -1), (2, 2)]);
        let big = edge_state(&table, &context, 3, method(&table, 3));
        assert_eq!(big.inlined, Inlined::No);
        let code = big.code.expect("compiled");
        assert_eq!((table.key(code.root).name.as_str(), code.osr_bci, big.caller_level), ("m1", Some(9), Some(4)));
        let small = edge_state(&table, &context, 4, method(&table, 4));
        assert_eq!(small.inlined, Inlined::Yes);
    }

    #[test]
    fn a_call_without_any_instruction_left_is_no_call() {
        let table = table();
        let context = path(&table, &[(1, -1), (2, 2)]);
        let empty = edge_state(&table, &context, 6, method(&table, 5));
        assert_eq!((empty.inlined, empty.optimized_away), (Inlined::Yes, true));
        assert!(!edge_state(&table, &context, 4, method(&table, 4)).optimized_away);
    }

    #[test]
    fn a_caller_not_inlined_above_is_run_by_its_own_code() {
        let table = table();
        // Called from somewhere that did not inline it (another call site).
        let context = path(&table, &[(1, -1), (2, 7)]);
        let state = edge_state(&table, &context, 4, method(&table, 4));
        assert_eq!(state.inlined, Inlined::Yes);
        assert_eq!(table.key(state.code.unwrap().root).name, "m2");
    }

    #[test]
    fn a_caller_without_code_is_interpreted_when_the_table_is_complete() {
        let mut table = table();
        let unknown_caller = [Step { method: None, bci: -1 }];
        assert_eq!(edge_state(&table, &unknown_caller, 3, None).caller_level, Some(0));
        assert_eq!(edge_state(&table, &unknown_caller, 3, None).inlined, Inlined::No);
        table.restart();
        assert_eq!(edge_state(&table, &unknown_caller, 3, None), EdgeState::UNKNOWN);
    }

    #[test]
    fn no_call_no_state() {
        let table = table();
        assert_eq!(edge_state(&table, &path(&table, &[(1, -1)]), -1, None), EdgeState::UNKNOWN);
        assert_eq!(edge_state(&table, &[], 3, None), EdgeState::UNKNOWN);
    }

    #[test]
    fn inlined_is_true_false_or_unknown_in_json() {
        let text = serde_json::to_string(&[Inlined::Yes, Inlined::No, Inlined::Unknown]).unwrap();
        assert_eq!(text, r#"[true,false,"unknown"]"#);
        let back: Vec<Inlined> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, vec![Inlined::Yes, Inlined::No, Inlined::Unknown]);
    }
}
