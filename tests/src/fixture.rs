//! A test's working directory with the Java test programs compiled into it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::jdk::jdk17;
use crate::temp::TempDir;

/// The Java sources, `tests/java/*.java`.
pub fn java_sources() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("java");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "java"))
        .collect();
    sources.sort();
    sources
}

/// A fresh temporary directory (the JVM's working directory, where hs_err
/// files and profiles go) with every program of `tests/java/` compiled by
/// JDK 17's `javac --release 11` into `classes/` (one class directory
/// runs on every JDK of the matrix, 11 included).
pub struct Fixture {
    dir: TempDir,
    classes: PathBuf,
}

impl Fixture {
    pub fn new(label: &str) -> Fixture {
        let dir = TempDir::new(label);
        let classes = dir.path().join("classes");
        std::fs::create_dir(&classes).expect("create classes/");
        let javac = jdk17().javac();
        let output = Command::new(&javac)
            .args(["--release", "11", "-encoding", "UTF-8", "-d"])
            .arg(&classes)
            .args(java_sources())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", javac.display()));
        assert!(
            output.status.success(),
            "javac failed ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        Fixture { dir, classes }
    }

    /// The working directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A path in the working directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The compiled classes (the classpath).
    pub fn classes(&self) -> &Path {
        &self.classes
    }
}
