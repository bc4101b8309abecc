//! A JVM whose standard error is a closed pipe (`java ... 2>&1 | head`
//! after `head` exited, a restarted log collector): HotSpot ignores SIGPIPE,
//! so every line the agent prints fails with EPIPE. The agent must drop
//! those lines, not panic inside a JVMTI callback (which would abort the
//! JVM), and the program must run to its own exit with the profile written.

use std::process::Stdio;
use std::time::{Duration, Instant};

use pcct_tests::jvm::assert_no_hs_err;
use pcct_tests::poll::poll_until;
use pcct_tests::stress::{assert_counters_conserved, profile_json};
use pcct_tests::{one_jdk, Fixture, Jvm, Profile};

one_jdk! {
    fn a_closed_stderr_loses_the_lines_not_the_jvm_or_the_profile(jdk) {
        let fixture = Fixture::new("closed-stderr");
        let profile_path = fixture.path("p.json");
        // HTTP on: the agent prints "serving ..." at VMInit, a line at the
        // sampler's start, and the summary at VMDeath, all into the closed pipe.
        let mut command = Jvm::new(jdk, &fixture, "LoopShort")
            .arg("1")
            .agent(format!("interval=1ms,file={}", profile_path.display()))
            .command();
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = command.spawn().expect("start the JVM");
        drop(child.stderr.take()); // the reader is gone before the JVM writes a line
        let status = poll_until(Instant::now() + Duration::from_secs(90), || child.try_wait().ok().flatten());
        let Some(status) = status else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("JDK {}: the JVM did not exit within 90 s: {command:?}", jdk.major);
        };
        assert_no_hs_err(fixture.dir());
        assert_eq!(status.code(), Some(0), "JDK {}: the JVM's exit status is not the program's: {status}", jdk.major);
        // The profile is whole: it parses, holds samples, and every signal
        // sent ended in one counted outcome. (How many samples a 1 s run
        // gets depends on the CPU the machine gives it: not asserted.)
        let profile = Profile::read(&profile_path);
        assert!(profile.json.total.samples > 0, "JDK {}: an empty profile", jdk.major);
        assert_counters_conserved(&profile_json(&profile_path));
    }
}
