//! Test support for the integration tests in `tests/tests/`: real JDKs, the
//! real agent (`libpcct_agent.so`, built beforehand with `cargo build -p
//! pcct-agent`), real Java programs from `tests/java/`.
//!
//! Nothing here is a stand-in: a test compiles the Java programs with JDK
//! 17's `javac` into its own temporary directory ([`Fixture`]), starts a JVM
//! with the agent ([`Jvm`]), waits for it with a deadline, and reads what
//! the agent wrote: the summary line it prints at VM death ([`Summary`]) and
//! the profile file ([`Profile`]).
//!
//! Rules every JVM test keeps:
//! - it runs once per installed JDK ([`per_jdk!`]: JDK 17 is required, JDK
//!   25 is used where installed);
//! - it asserts the JVM's exit status and [`assert_no_hs_err`];
//! - it waits by polling with a deadline ([`poll_until`]), never by a fixed
//!   sleep;
//! - it keeps everything in its own temporary directory (parallel-safe).

#![forbid(unsafe_code)]

pub mod agent_so;
pub mod attach;
pub mod browser;
pub mod control;
pub mod devtools;
pub mod fixture;
pub mod http;
pub mod jdk;
pub mod jvm;
pub mod poll;
pub mod pprof;
pub mod profile;
pub mod prometheus;
pub mod receiver;
pub mod stress;
pub mod summary;
pub mod temp;

pub use agent_so::{agent_path, pcct_tool, run_pcct};
pub use fixture::Fixture;
pub use jdk::{jdk, jdk17, jdks, Jdk};
pub use jvm::{assert_no_hs_err, jcmd, Finished, Jvm, RunningJvm};
pub use poll::poll_until;
pub use profile::{read_collapsed, Profile};
pub use summary::Summary;
pub use temp::TempDir;

/// Options every test adds to the agent's: the HTTP server is not what
/// these tests are about (and must not need a port).
pub const QUIET_HTTP: &str = "http=off";

/// Defines one test per JDK: `per_jdk! { fn name(jdk) { ... } }` makes the
/// module `name` with tests `jdk17` and `jdk25`, each calling the body with
/// that JDK. JDK 17 must be installed; without JDK 25 its test passes after
/// saying it was skipped.
#[macro_export]
macro_rules! per_jdk {
    ($(#[$meta:meta])* fn $name:ident($jdk:ident) $body:block) => {
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            fn body($jdk: &$crate::Jdk) $body

            #[test]
            fn jdk17() {
                $crate::jdk::run_on(17, body);
            }

            #[test]
            fn jdk25() {
                $crate::jdk::run_on(25, body);
            }
        }
    };
}
