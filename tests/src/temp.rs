//! A unique temporary directory per test, removed when dropped.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh directory under the system's temporary directory. Dropping it
/// removes it, unless `PCCT_KEEP_TEMP` is set or the test is failing (then
/// its path is printed, so hs_err files and profiles can be read).
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// `<tmp>/pcct-tests-<label>-<pid>-<counter>-<nanos>`.
    pub fn new(label: &str) -> TempDir {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let label: String = label.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        let name =
            format!("pcct-tests-{label}-{}-{}-{nanos}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
        let path = std::env::temp_dir().join(name);
        std::fs::create_dir(&path).unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
        TempDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("PCCT_KEEP_TEMP").is_some() || std::thread::panicking() {
            eprintln!("kept {}", self.path.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
