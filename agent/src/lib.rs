//! The JVMTI agent (filled by the agent and sampler issue).
