//! Errors of the sampler crate.

#[derive(Debug, thiserror::Error)]
pub enum SamplerError {
    #[error("{signal} already has a handler installed by someone else; pcct will not take it over (choose another with signal=...)")]
    SignalTaken { signal: String },
    #[error("could not set up {signal}: {reason}")]
    Signal { signal: String, reason: String },
    #[error("more than {limit} threads are registered; further threads are not sampled")]
    TooManyThreads { limit: usize },
    #[error("AsyncGetCallTrace is not exported by this JVM")]
    NoAsyncGetCallTrace,
    #[error("the profile could not be created: {0}")]
    Profile(#[from] pcct::PcctError),
}

pub type Result<T, E = SamplerError> = std::result::Result<T, E>;
