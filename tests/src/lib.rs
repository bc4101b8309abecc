//! Test support for the integration tests (real JVMs arrive with the agent issue).
