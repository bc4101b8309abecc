//! The sampler (filled by the agent and sampler issue).
