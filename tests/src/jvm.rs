//! Starting a JVM (with or without the agent), reading its output while it
//! runs, and waiting for it with a deadline.

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::agent_so::agent_path;
use crate::fixture::Fixture;
use crate::jdk::Jdk;
use crate::poll::poll_until;
use crate::summary::Summary;

/// What to run: `java [flags] [-agentpath:<so>=<options>] -cp <classes> <main> <args>`,
/// in the fixture's directory, with hs_err files going there too.
pub struct Jvm {
    jdk: Jdk,
    dir: PathBuf,
    classpath: PathBuf,
    main_class: String,
    args: Vec<String>,
    agent_options: Option<String>,
    flags: Vec<OsString>,
    launcher: Option<PathBuf>,
}

impl Jvm {
    pub fn new(jdk: &Jdk, fixture: &Fixture, main_class: &str) -> Jvm {
        Jvm {
            jdk: jdk.clone(),
            dir: fixture.dir().to_path_buf(),
            classpath: fixture.classes().to_path_buf(),
            main_class: main_class.to_string(),
            args: Vec::new(),
            agent_options: None,
            flags: Vec::new(),
            launcher: None,
        }
    }

    /// A program argument.
    pub fn arg(mut self, arg: impl Into<String>) -> Jvm {
        self.args.push(arg.into());
        self
    }

    /// Loads the agent at startup with `options` (`-agentpath:<so>=<options>`).
    pub fn agent(mut self, options: impl Into<String>) -> Jvm {
        self.agent_options = Some(options.into());
        self
    }

    /// An extra JVM flag, before the main class.
    pub fn flag(mut self, flag: impl Into<OsString>) -> Jvm {
        self.flags.push(flag.into());
        self
    }

    /// Runs `java` through `launcher` (`launcher java ...`), a program that
    /// changes what the JVM's process may do, then runs it.
    pub fn launcher(mut self, launcher: &Path) -> Jvm {
        self.launcher = Some(launcher.to_path_buf());
        self
    }

    /// The `java` command, ready to spawn (also shown in failure messages).
    pub fn command(&self) -> Command {
        let mut command = match &self.launcher {
            Some(launcher) => {
                let mut command = Command::new(launcher);
                command.arg(self.jdk.java());
                command
            }
            None => Command::new(self.jdk.java()),
        };
        command.current_dir(&self.dir);
        let mut error_file = OsString::from("-XX:ErrorFile=");
        error_file.push(self.dir.join("hs_err_pid%p.log"));
        command.arg(error_file);
        command.args(&self.flags);
        if let Some(options) = &self.agent_options {
            let mut agent = OsString::from("-agentpath:");
            agent.push(agent_path());
            let options = with_extra_options(options);
            if !options.is_empty() {
                agent.push("=");
                agent.push(options);
            }
            command.arg(agent);
        }
        command.arg("-cp").arg(&self.classpath).arg(&self.main_class).args(&self.args);
        command
    }

    /// Starts the JVM with stdin, stdout and stderr piped.
    pub fn spawn(self) -> RunningJvm {
        let command = self.command();
        let description = format!("JDK {} {:?}", self.jdk.major, command);
        RunningJvm::spawn(command, description, &self.dir)
    }

    /// Starts the JVM and waits for it to exit within `deadline`.
    pub fn run(self, deadline: Duration) -> Finished {
        self.spawn().wait_with_deadline(deadline)
    }
}

/// Reads a pipe line by line into `sink` until end of file, so the pipe never fills.
fn read_in_background(pipe: impl Read + Send + 'static, sink: Arc<Mutex<String>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => sink.lock().expect("output lock").push_str(&String::from_utf8_lossy(&line)),
            }
        }
    })
}

/// A JVM (or a JDK tool such as jcmd) that was started; killed if dropped
/// while still running.
pub struct RunningJvm {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
    started: Instant,
    description: String,
    dir: PathBuf,
}

impl RunningJvm {
    /// Starts `command` with stdin, stdout and stderr piped; `dir` is where
    /// its hs_err files would go.
    pub fn spawn(mut command: Command, description: String, dir: &Path) -> RunningJvm {
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn().unwrap_or_else(|e| panic!("cannot start {description}: {e}"));
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let readers = vec![
            read_in_background(child.stdout.take().expect("piped stdout"), Arc::clone(&stdout)),
            read_in_background(child.stderr.take().expect("piped stderr"), Arc::clone(&stderr)),
        ];
        RunningJvm {
            stdin: child.stdin.take(),
            child: Some(child),
            stdout,
            stderr,
            readers,
            started: Instant::now(),
            description,
            dir: dir.to_path_buf(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Everything the JVM printed on stdout so far.
    pub fn stdout(&self) -> String {
        self.stdout.lock().expect("output lock").clone()
    }

    /// Everything the JVM printed on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().expect("output lock").clone()
    }

    /// Writes one line to the JVM's stdin.
    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{line}").and_then(|()| stdin.flush()).unwrap_or_else(|e| panic!("cannot write to stdin: {e}"));
    }

    /// Waits until stdout has a line equal to `line` (trimmed); panics with
    /// the output so far when `deadline` passes or the JVM exits first.
    pub fn wait_for_stdout_line(&mut self, line: &str, deadline: Duration) {
        let until = Instant::now() + deadline;
        let found = poll_until(until, || {
            if self.stdout().lines().any(|l| l.trim() == line) {
                return Some(true);
            }
            let exited = self.child.as_mut().expect("running").try_wait().ok().flatten().is_some();
            exited.then_some(false)
        });
        match found {
            Some(true) => {}
            Some(false) => self.fail(&format!("the JVM exited before printing {line:?}")),
            None => self.fail(&format!("no {line:?} on stdout within {deadline:?}")),
        }
    }

    /// Waits until stderr contains `text`; panics like [`Self::wait_for_stdout_line`].
    pub fn wait_for_stderr(&mut self, text: &str, deadline: Duration) {
        let until = Instant::now() + deadline;
        let found = poll_until(until, || {
            if self.stderr().contains(text) {
                return Some(true);
            }
            let exited = self.child.as_mut().expect("running").try_wait().ok().flatten().is_some();
            exited.then_some(false)
        });
        match found {
            Some(true) => {}
            Some(false) => self.fail(&format!("the JVM exited before printing {text:?} on stderr")),
            None => self.fail(&format!("no {text:?} on stderr within {deadline:?}")),
        }
    }

    /// Whether the JVM is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.as_mut().is_some_and(|child| child.try_wait().ok().flatten().is_none())
    }

    /// Closes stdin and waits for the JVM to exit. If it has not exited
    /// within `deadline` (counted from now), kills it and fails the test.
    pub fn wait_with_deadline(mut self, deadline: Duration) -> Finished {
        self.stdin.take();
        let until = Instant::now() + deadline;
        let status = poll_until(until, || self.child.as_mut().expect("running").try_wait().ok().flatten());
        let Some(status) = status else {
            self.kill();
            self.fail(&format!("the JVM did not exit within {deadline:?}: killed"));
        };
        self.child.take();
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        Finished {
            status,
            stdout: self.stdout(),
            stderr: self.stderr(),
            elapsed: self.started.elapsed(),
            description: self.description.clone(),
            dir: self.dir.clone(),
        }
    }

    fn kill(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn fail(&mut self, what: &str) -> ! {
        self.kill();
        panic!(
            "{what}\ncommand: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.description,
            self.stdout(),
            self.stderr()
        )
    }
}

impl Drop for RunningJvm {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A JVM that exited.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    pub description: String,
    pub dir: PathBuf,
}

impl Finished {
    /// The command, status and output, for assertion messages.
    pub fn report(&self) -> String {
        format!(
            "command: {}\nstatus: {} after {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.description, self.status, self.elapsed, self.stdout, self.stderr
        )
    }

    /// Asserts exit status 0 and no hs_err file.
    pub fn assert_success(&self) -> &Finished {
        assert_no_hs_err(&self.dir);
        assert!(self.status.success(), "the JVM failed\n{}", self.report());
        self
    }

    /// The agent's VM-death summary line, parsed (panics if there is none).
    pub fn summary(&self) -> Summary {
        Summary::find(&self.stderr).unwrap_or_else(|| panic!("no pcct summary line on stderr\n{}", self.report()))
    }

    /// The value of `key=<number>` printed on stdout.
    pub fn stdout_value(&self, key: &str) -> u64 {
        let prefix = format!("{key}=");
        self.stdout
            .lines()
            .find_map(|line| line.trim().strip_prefix(&prefix)?.parse().ok())
            .unwrap_or_else(|| panic!("no {key}=<number> on stdout\n{}", self.report()))
    }

    /// The lines of stderr the agent printed (`pcct: ...`).
    pub fn agent_lines(&self) -> Vec<&str> {
        self.stderr.lines().filter(|line| line.starts_with("pcct:")).collect()
    }
}

/// `options` after the options of `PCCT_EXTRA_OPTIONS`, if set: every JVM
/// test then runs with them too (the test's own options win where both
/// name one), as a soak with `native=on,kernel=on` does.
fn with_extra_options(options: &str) -> String {
    match std::env::var("PCCT_EXTRA_OPTIONS") {
        Ok(extra) if !extra.is_empty() && !options.is_empty() => format!("{extra},{options}"),
        Ok(extra) if !extra.is_empty() => extra,
        _ => options.to_string(),
    }
}

/// Asserts that no `hs_err_pid*.log` (a JVM crash report) is in `dir`;
/// every JVM test calls it (through [`Finished::assert_success`] or directly).
pub fn assert_no_hs_err(dir: &Path) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("hs_err_pid") && name.ends_with(".log") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let head: String = text.chars().take(4000).collect();
            panic!("the JVM crashed: {}\n{head}", path.display());
        }
    }
}

/// Runs `jcmd <pid> <arguments>` of `jdk` and waits for it within `deadline`.
pub fn jcmd(jdk: &Jdk, pid: u32, arguments: &[&OsStr], dir: &Path, deadline: Duration) -> Finished {
    let mut command = Command::new(jdk.jcmd());
    command.current_dir(dir).arg(pid.to_string()).args(arguments);
    let description = format!("JDK {} {:?}", jdk.major, command);
    RunningJvm::spawn(command, description, dir).wait_with_deadline(deadline)
}
