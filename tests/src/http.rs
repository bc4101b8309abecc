//! A plain HTTP/1.1 client over loopback for the tests of the agent's
//! server (filled by the HTTP integration tests).
