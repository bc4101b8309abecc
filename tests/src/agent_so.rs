//! Locating the agent library the tests load.

use std::path::PathBuf;

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
