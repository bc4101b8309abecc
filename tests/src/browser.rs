//! Headless Chromium for the page tests (filled by the HTTP integration tests).
