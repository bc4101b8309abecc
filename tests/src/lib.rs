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
//! - it runs on the JDKs the matrix gives it ([`per_jdk!`]: 17, 21 and 25;
//!   [`per_jdk_and_11!`]; [`one_jdk!`]: 17), and a missing JDK fails it
//!   ([`jdk`]);
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
pub mod timers;

pub use agent_so::{agent_path, pcct_tool, run_pcct};
pub use fixture::Fixture;
pub use jdk::{jdk, jdk17, Jdk};
pub use jvm::{assert_no_hs_err, jcmd, Finished, Jvm, RunningJvm};
pub use poll::poll_until;
pub use profile::{read_collapsed, Profile};
pub use summary::Summary;
pub use temp::TempDir;

/// Options every test adds to the agent's: the HTTP server is not what
/// these tests are about (and must not need a port).
pub const QUIET_HTTP: &str = "http=off";

/// Defines one test per JDK of the matrix: `per_jdk! { fn name(jdk) { ... } }`
/// makes the module `name` with tests `jdk17`, `jdk21` and `jdk25`, each
/// calling the body with that JDK ([`jdk::run_on`]: a missing JDK fails,
/// naming it, unless `PCCT_SKIP_JDKS` allows it). For what a JDK's internals
/// decide: the truth, walker, attach and stress tests.
#[macro_export]
macro_rules! per_jdk {
    ($(#[$meta:meta])* fn $name:ident($jdk:ident) $body:block) => {
        $crate::jdk_tests! { [jdk17 17, jdk21 21, jdk25 25] $(#[$meta])* fn $name($jdk) $body }
    };
}

/// [`per_jdk!`] and JDK 11 too (`jdk11`): the truth tests, the walker's
/// and the attach tests on the oldest JDK pcct supports.
#[macro_export]
macro_rules! per_jdk_and_11 {
    ($(#[$meta:meta])* fn $name:ident($jdk:ident) $body:block) => {
        $crate::jdk_tests! { [jdk11 11, jdk17 17, jdk21 21, jdk25 25] $(#[$meta])* fn $name($jdk) $body }
    };
}

/// One test, on JDK 17 (`jdk17`): for what no JDK decides (HTTP shapes,
/// formats, the CLI, the page), so the suite's time goes to the tests that
/// differ between JDKs.
#[macro_export]
macro_rules! one_jdk {
    ($(#[$meta:meta])* fn $name:ident($jdk:ident) $body:block) => {
        $crate::jdk_tests! { [jdk17 17] $(#[$meta])* fn $name($jdk) $body }
    };
}

/// The module of tests behind [`per_jdk!`], [`per_jdk_and_11!`] and
/// [`one_jdk!`]: a test named `$test` on JDK `$major` for each pair.
#[doc(hidden)]
#[macro_export]
macro_rules! jdk_tests {
    ([$($test:ident $major:literal),*] $(#[$meta:meta])* fn $name:ident($jdk:ident) $body:block) => {
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            fn body($jdk: &$crate::Jdk) $body

            $(
                #[test]
                fn $test() {
                    $crate::jdk::run_on($major, body);
                }
            )*
        }
    };
}
