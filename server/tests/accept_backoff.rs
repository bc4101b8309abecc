//! A server out of file descriptors waits between failed accepts instead
//! of spinning a core, and serves again once descriptors are free.
//!
//! The test runs itself again in a child process under
//! `prlimit --nofile=256` (util-linux), so that filling the descriptor
//! table harms no other test. In the child, a client connects with the
//! last free descriptor, so the server's accept fails with EMFILE while the
//! connection waits in the listener's backlog; the `pcct-http` thread's CPU
//! time over the next second says whether it spun (about a second) or
//! waited (a few milliseconds). Then descriptors are freed and the waiting
//! client must be answered.

mod support;

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use pcct_server::ServerConfig;
use support::socket::*;

/// Set in the child process.
const CHILD: &str = "PCCT_ACCEPT_BACKOFF_CHILD";
/// The length of the measurement.
const WINDOW: Duration = Duration::from_secs(1);
/// Most CPU time the server thread may use in the window while every
/// accept fails: a spinning loop uses about all of it.
const MOST_CPU: Duration = Duration::from_millis(200);
/// Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux).
const USER_HZ: u64 = 100;

/// The `/proc` stat file of this process's thread named `name`, open.
fn thread_stat(name: &str) -> File {
    for task in std::fs::read_dir("/proc/self/task").expect("/proc/self/task") {
        let path = task.expect("a task").path();
        if std::fs::read_to_string(path.join("comm")).is_ok_and(|comm| comm.trim() == name) {
            return File::open(path.join("stat")).expect("the thread's stat");
        }
    }
    panic!("no thread named {name}");
}

/// User plus system CPU time in a thread's stat file, read again from its start.
fn cpu_time(stat: &mut File) -> Duration {
    let mut text = String::new();
    stat.seek(SeekFrom::Start(0)).expect("seek");
    stat.read_to_string(&mut text).expect("read the stat");
    // Fields after the command name, which is in parentheses: utime and stime are the 12th and 13th.
    let fields: Vec<&str> = text[text.rfind(')').expect("a command name") + 2..].split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    Duration::from_millis(ticks * 1000 / USER_HZ)
}

/// Opens descriptors until there are none left.
fn exhaust_descriptors() -> Vec<File> {
    let mut files = Vec::new();
    loop {
        match File::open("/dev/null") {
            Ok(file) => files.push(file),
            Err(error) if error.raw_os_error() == Some(24) => return files, // EMFILE
            Err(error) => panic!("opening /dev/null: {error}"),
        }
        assert!(files.len() < 100_000, "no descriptor limit: the child must run under prlimit");
    }
}

fn child() {
    let server = Server::start(ServerConfig::default());
    // Answered: the server's runtime holds every descriptor it needs.
    assert_eq!(get(&mut connect(server.address()), "/healthz").0, "HTTP/1.1 200 OK");
    let mut stat = thread_stat("pcct-http");
    let mut files = exhaust_descriptors();
    files.pop();
    // The last descriptor: connected, in the backlog, not accepted.
    let mut waiting = TcpStream::connect(server.address()).expect("connect with the last descriptor");
    let before = cpu_time(&mut stat);
    // A measurement over a length of time, not a wait for an event.
    std::thread::sleep(WINDOW);
    let used = cpu_time(&mut stat) - before;
    drop(files);
    assert!(used < MOST_CPU, "the server thread used {used:?} of CPU in {WINDOW:?} while accept failed");
    waiting.set_read_timeout(Some(Duration::from_millis(50))).expect("read timeout");
    // Once a descriptor is free, the next attempt (at most a second later) accepts it.
    let (status, body) = exchange(&mut waiting, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!((status.as_str(), body.as_str()), ("HTTP/1.1 200 OK", "ok\n"));
}

#[test]
fn out_of_descriptors_the_accept_loop_waits_and_recovers() {
    if std::env::var_os(CHILD).is_some() {
        return child();
    }
    let me = std::env::current_exe().expect("the test binary");
    let output = Command::new("prlimit")
        .arg("--nofile=256:256")
        .arg(me)
        .args(["--exact", "out_of_descriptors_the_accept_loop_waits_and_recovers", "--nocapture"])
        .env(CHILD, "1")
        .output()
        .expect("prlimit (util-linux) runs the child");
    let report = format!("{}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "the child failed:\n{report}");
    assert!(report.contains("1 passed"), "the child ran no test:\n{report}");
}
