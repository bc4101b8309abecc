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

/// The TCP addresses process `pid` listens on (from its socket descriptors
/// and the kernel's socket tables), as `host:port` to connect to: an
/// address bound to every interface is reached on loopback.
pub fn listening_addresses(pid: u32) -> Result<Vec<String>, String> {
    let descriptors = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map_err(|e| format!("cannot list the sockets of process {pid} (is it running, and yours?): {e}"))?;
    let inodes: std::collections::HashSet<String> = descriptors
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .filter_map(|target| Some(target.to_str()?.strip_prefix("socket:[")?.strip_suffix(']')?.to_string()))
        .collect();
    let mut addresses = Vec::new();
    for (table, v6) in [("tcp", false), ("tcp6", true)] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")) else { continue };
        addresses.extend(text.lines().skip(1).filter_map(|line| listening(line, v6, &inodes)));
    }
    Ok(addresses)
}

/// One line of `/proc/net/tcp[6]`: its address if it is a listening
/// socket among `inodes`.
fn listening(line: &str, v6: bool, inodes: &std::collections::HashSet<String>) -> Option<String> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (local, state, inode) = (fields.get(1)?, fields.get(3)?, fields.get(9)?);
    if *state != "0A" || !inodes.contains(*inode) {
        return None;
    }
    let (host, port) = local.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let host = if v6 {
        let bytes: Vec<u8> = (0..16).filter_map(|i| u8::from_str_radix(host.get(i * 2..i * 2 + 2)?, 16).ok()).collect();
        // The kernel prints each 32-bit word in host (little-endian) order.
        let mut octets = [0u8; 16];
        for (word, chunk) in bytes.chunks(4).enumerate() {
            for (i, byte) in chunk.iter().rev().enumerate() {
                octets[word * 4 + i] = *byte;
            }
        }
        let address = std::net::Ipv6Addr::from(octets);
        if address.is_unspecified() {
            "[::1]".to_string()
        } else {
            format!("[{address}]")
        }
    } else {
        let address = std::net::Ipv4Addr::from(u32::from_str_radix(host, 16).ok()?.swap_bytes());
        if address.is_unspecified() {
            "127.0.0.1".to_string()
        } else {
            address.to_string()
        }
    };
    Some(format!("{host}:{port}"))
}

/// When process `pid` started (clock ticks after boot, `/proc/<pid>/stat`'s
/// 22nd field): with the pid, it names one process, as a pid alone does
/// not once the kernel reuses it.
pub fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces.
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_start_is_read_and_stays_the_same() {
        let me = std::process::id();
        let started = process_start(me).expect("our own start");
        assert_eq!(process_start(me), Some(started));
        assert!(started > 0);
    }

    #[test]
    fn listening_sockets_of_the_process_are_read_from_the_kernel_tables() {
        let inodes = ["4242".to_string()].into_iter().collect();
        let v4 = "   0: 0100007F:9CE5 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0";
        assert_eq!(listening(v4, false, &inodes).as_deref(), Some("127.0.0.1:40165"));
        let any = v4.replace("0100007F", "00000000");
        assert_eq!(listening(&any, false, &inodes).as_deref(), Some("127.0.0.1:40165"));
        let established = v4.replace(" 0A ", " 01 ");
        assert_eq!(listening(&established, false, &inodes), None);
        assert_eq!(listening(&v4.replace("4242", "77"), false, &inodes), None);
        let v6 = "   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1";
        assert_eq!(listening(v6, true, &inodes).as_deref(), Some("[::1]:8080"));
        let mine = listening_addresses(std::process::id()).expect("this process's sockets");
        assert!(mine.is_empty() || mine.iter().all(|address| address.contains(':')));
    }
}
