//! Late attach through jcmd: `jcmd <pid> JVMTI.agent_load <agent> <options>`
//! and how to read what jcmd reports (`return code: N` is Agent_OnAttach's
//! return value).

use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

use crate::agent_so::agent_path;
use crate::jdk::Jdk;
use crate::jvm::{jcmd, Finished};

/// Runs `jcmd <pid> JVMTI.agent_load <abs path of the agent> <options>`
/// within `deadline` (jcmd itself may fail: the target may be exiting).
pub fn agent_load(jdk: &Jdk, pid: u32, options: &str, dir: &Path, deadline: Duration) -> Finished {
    let agent = agent_path();
    let arguments = [OsStr::new("JVMTI.agent_load"), agent.as_os_str(), OsStr::new(options)];
    jcmd(jdk, pid, &arguments, dir, deadline)
}

/// Whether Agent_OnAttach ran and returned 0.
pub fn accepted(jcmd: &Finished) -> bool {
    jcmd.status.success() && jcmd.stdout.contains("return code: 0")
}

/// Whether Agent_OnAttach ran and refused (a non-zero return code).
pub fn refused(jcmd: &Finished) -> bool {
    jcmd.stdout.contains("return code: ") && !jcmd.stdout.contains("return code: 0")
}
