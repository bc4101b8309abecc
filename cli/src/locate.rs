//! Finding the agent library and the JDK tools.

use std::path::{Path, PathBuf};

/// The agent: `--agent`, `$PCCT_AGENT_SO`, or `libpcct_agent.so` next to this program.
pub fn agent(explicit: Option<&Path>) -> Result<PathBuf, String> {
    let candidate = match explicit {
        Some(path) => path.to_path_buf(),
        None => match std::env::var_os("PCCT_AGENT_SO") {
            Some(path) => PathBuf::from(path),
            None => {
                let exe = std::env::current_exe().map_err(|e| format!("cannot find this program's path: {e}"))?;
                exe.with_file_name("libpcct_agent.so")
            }
        },
    };
    let absolute = std::fs::canonicalize(&candidate).map_err(|_| {
        format!(
            "the agent library {} does not exist; build it with `cargo build --release -p pcct-agent` or pass --agent",
            candidate.display()
        )
    })?;
    Ok(absolute)
}

/// A JDK tool (`java`, `javac`, `jcmd`): `$JAVA_HOME/bin/<tool>` if set, else from PATH.
pub fn jdk_tool(name: &str) -> PathBuf {
    if let Some(home) = std::env::var_os("JAVA_HOME") {
        let path = Path::new(&home).join("bin").join(name);
        if path.exists() {
            return path;
        }
    }
    PathBuf::from(name)
}

/// A fresh directory under the system temp dir.
pub fn temp_dir(label: &str) -> Result<PathBuf, String> {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("pcct-{label}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}
