//! Finding the JDKs the tests run on.

use std::path::{Path, PathBuf};

/// An installed JDK.
#[derive(Clone, Debug)]
pub struct Jdk {
    /// Feature release: 17 or 25.
    pub major: u32,
    pub home: PathBuf,
}

/// Where each JDK is looked for; `PCCT_JDK<major>` (a JDK home) overrides.
const KNOWN: &[(u32, &str)] = &[(17, "/usr/lib/jvm/java-17-openjdk-amd64"), (25, "/usr/lib/jvm/temurin-25-jdk-amd64")];

impl Jdk {
    pub fn tool(&self, name: &str) -> PathBuf {
        self.home.join("bin").join(name)
    }

    pub fn java(&self) -> PathBuf {
        self.tool("java")
    }

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

fn installed(home: &Path) -> bool {
    home.join("bin/java").is_file() && home.join("bin/javac").is_file()
}

/// The JDK of feature release `major`, if installed.
pub fn jdk(major: u32) -> Option<Jdk> {
    let home = match std::env::var_os(format!("PCCT_JDK{major}")) {
        Some(home) => PathBuf::from(home),
        None => PathBuf::from(KNOWN.iter().find(|(known, _)| *known == major)?.1),
    };
    installed(&home).then_some(Jdk { major, home })
}

/// JDK 17 (required: panics with a clear message when missing).
pub fn jdk17() -> Jdk {
    jdk(17).unwrap_or_else(|| {
        panic!("JDK 17 is required at /usr/lib/jvm/java-17-openjdk-amd64 (or set PCCT_JDK17 to a JDK 17 home)")
    })
}

/// Every installed JDK the tests run on: JDK 17 (required), then JDK 25 if present.
pub fn jdks() -> Vec<Jdk> {
    let mut all = vec![jdk17()];
    all.extend(jdk(25));
    all
}

/// Runs `body` on JDK `major`: JDK 17 must exist; another missing JDK is
/// skipped with a note on stderr.
pub fn run_on(major: u32, body: impl FnOnce(&Jdk)) {
    if major == 17 {
        body(&jdk17());
        return;
    }
    match jdk(major) {
        Some(jdk) => body(&jdk),
        None => eprintln!("JDK {major} is not installed: skipped (set PCCT_JDK{major} to a JDK home to run it)"),
    }
}
