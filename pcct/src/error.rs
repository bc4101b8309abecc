//! Errors of the `pcct` crate.

/// What can go wrong building or querying a tree.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PcctError {
    #[error("arena of {bytes} bytes is too small: at least {minimum} bytes are needed")]
    ArenaTooSmall { bytes: usize, minimum: usize },
    #[error("could not reserve an arena of {bytes} bytes")]
    ArenaAllocation { bytes: usize },
    #[error("walk limit must be at least 1 frame")]
    WalkLimitZero,
    #[error("the hot lists are sorted by a time resource (samples, cpu_ns or wall_ns), not {metric}: event resources have hot lists of their own")]
    EventMetric { metric: &'static str },
    #[error("context path step {index} is empty")]
    EmptyPathStep { index: usize },
    #[error("profile text line {line}: {reason}")]
    BadProfileLine { line: usize, reason: String },
}

pub type Result<T, E = PcctError> = std::result::Result<T, E>;
