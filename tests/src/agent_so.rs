//! Locating the agent library the tests load, and the `pcct` tool built
//! beside it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `libpcct_agent.so`: `$PCCT_AGENT_SO` if set, else
/// `$CARGO_TARGET_DIR/debug/libpcct_agent.so`, else the workspace's
/// `target/debug/libpcct_agent.so`. Panics, saying how to build it, when it
/// does not exist.
pub fn agent_path() -> PathBuf {
    let path = if let Some(path) = std::env::var_os("PCCT_AGENT_SO") {
        PathBuf::from(path)
    } else if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        PathBuf::from(target).join("debug/libpcct_agent.so")
    } else {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/debug/libpcct_agent.so")
    };
    let path = std::path::absolute(&path).unwrap_or(path);
    assert!(
        path.is_file(),
        "the agent library {} does not exist: run `cargo build -p pcct-agent` first \
         (with the same CARGO_TARGET_DIR), or point PCCT_AGENT_SO at it",
        path.display()
    );
    path
}

/// The `pcct` tool beside the agent library (panics, saying how to build
/// it, when it does not exist).
pub fn pcct_tool() -> PathBuf {
    let tool = agent_path().with_file_name("pcct");
    assert!(tool.is_file(), "{} is missing: run `cargo build -p pcct-cli`", tool.display());
    tool
}

/// Runs `pcct args...` in `dir` to its end.
pub fn run_pcct(args: &[&str], dir: &Path) -> Output {
    Command::new(pcct_tool()).args(args).current_dir(dir).output().expect("pcct runs")
}
