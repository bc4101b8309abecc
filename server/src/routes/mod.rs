//! The routes, one file per group. Every handler validates its parameters
//! first ([`crate::params`]) and answers errors as JSON ([`crate::error`]).

pub mod control;
pub mod docs;
pub mod flamegraph;
pub mod health;
pub mod hot;
pub mod jit;
pub mod login;
pub mod metrics;
pub mod page;
pub mod pprof;
pub mod reports;
pub mod samples;
pub mod status;
pub mod tree;

/// Most entries a list answer may hold.
pub const MAX_LIMIT: u64 = 1000;
