//! The HTTP server (filled by the HTTP issue).
