//! Errors of the native crate: reading the process's mappings and the ELF
//! files behind them. It owns no state; it must never be built in a signal
//! handler (its messages allocate).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum NativeError {
    #[error("could not read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not an ELF file pcct can read: {reason}")]
    Elf { path: PathBuf, reason: object::read::Error },
    #[error("{path}: no loadable segment maps file offset {offset:#x}")]
    NoSegment { path: PathBuf, offset: u64 },
    #[error("/proc/self/maps line not understood: {line}")]
    MapsLine { line: String },
}

pub type Result<T, E = NativeError> = std::result::Result<T, E>;
