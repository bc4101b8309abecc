//! Java thread names by kernel thread id, for answers that show threads
//! (`/api/samples`, the page). The agent writes a name when a thread
//! registers (ThreadStart, VMInit, discovery at attach), read through
//! JVMTI there and then, off the signal path; the HTTP server reads them.
//! The sampler thread never touches this table, so its lock is a leaf
//! that JVMTI callbacks may take (`Shared` documents the lock order).
//!
//! Bounded: names of live threads (at most `slots::MAX_THREADS`), and the
//! last [`ENDED_KEPT`] names of threads that ended, so the recent samples
//! of a thread that just ended still name it. A kernel id reused by a new
//! thread takes the new name. Names are cut at [`MAX_NAME_CHARS`].

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Names of ended threads kept.
pub const ENDED_KEPT: usize = 1024;
/// Longest name kept, in characters (Java allows any length).
pub const MAX_NAME_CHARS: usize = 200;

#[derive(Debug, Default)]
pub struct ThreadNames {
    live: HashMap<i32, Arc<str>>,
    ended: VecDeque<(i32, Arc<str>)>,
}

impl ThreadNames {
    pub fn new() -> ThreadNames {
        ThreadNames::default()
    }

    /// Thread `tid` is named `name` (from now on).
    pub fn started(&mut self, tid: i32, name: &str) {
        let name: Arc<str> = match name.char_indices().nth(MAX_NAME_CHARS) {
            Some((end, _)) => Arc::from(&name[..end]),
            None => Arc::from(name),
        };
        if self.live.len() >= crate::slots::MAX_THREADS && !self.live.contains_key(&tid) {
            return;
        }
        self.live.insert(tid, name);
    }

    /// Thread `tid` ended: its name is kept among the last ended ones.
    pub fn ended(&mut self, tid: i32) {
        if let Some(name) = self.live.remove(&tid) {
            if self.ended.len() == ENDED_KEPT {
                self.ended.pop_front();
            }
            self.ended.push_back((tid, name));
        }
    }

    /// The name of thread `tid`: the live thread's, else the latest ended one's.
    pub fn name(&self, tid: i32) -> Option<Arc<str>> {
        self.live
            .get(&tid)
            .or_else(|| self.ended.iter().rev().find(|(ended, _)| *ended == tid).map(|(_, name)| name))
            .cloned()
    }

    /// Live threads with a name.
    pub fn live(&self) -> usize {
        self.live.len()
    }
}

/// The kernel's name of thread `tid` of this process (at most 15 bytes:
/// `/proc/self/task/<tid>/comm`), if it is still there.
pub fn kernel_name(tid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).ok().map(|name| name.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_outlive_their_thread_for_a_while_and_reused_ids_take_the_new_name() {
        let mut names = ThreadNames::new();
        names.started(7, "worker-1");
        assert_eq!(names.name(7).as_deref(), Some("worker-1"));
        names.ended(7);
        assert_eq!(names.name(7).as_deref(), Some("worker-1"));
        assert_eq!(names.live(), 0);
        names.started(7, "worker-2");
        assert_eq!(names.name(7).as_deref(), Some("worker-2"));
        for tid in 100..100 + ENDED_KEPT as i32 + 1 {
            names.started(tid, "short");
            names.ended(tid);
        }
        assert_eq!(names.name(100), None, "the oldest ended name is forgotten");
        assert_eq!(names.name(101).as_deref(), Some("short"));
        names.started(1, &"x".repeat(1000));
        assert_eq!(names.name(1).unwrap().chars().count(), MAX_NAME_CHARS);
        assert_eq!(names.name(12345), None);
    }
}
