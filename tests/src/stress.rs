//! Support for the stress and fault tests (filled by the stress suite).
