//! A bad option at startup (`-agentpath:...=interval=abc`, or a `file=`
//! in a directory that cannot take it) stops the JVM with a non-zero
//! status, after exactly one pcct line on stderr naming the option.

use std::time::Duration;

use pcct_tests::{one_jdk, Fixture, Jvm};

one_jdk! {
    fn bad_option_at_startup_stops_the_jvm_with_one_line(jdk) {
        let fixture = Fixture::new("bad-options");
        let options_and_keys = [
            ("interval=abc", "interval"),
            ("mode=fast", "mode"),
            ("colour=red", "colour"),
            // Found at start-up, not at VM death when the run would be lost.
            ("file=/nonexistent-pcct-directory/p.json", "file"),
        ];
        for (options, key) in options_and_keys {
            let finished = Jvm::new(jdk, &fixture, "LoopShort").arg("1").agent(options).run(Duration::from_secs(60));
            pcct_tests::assert_no_hs_err(fixture.dir());
            assert!(!finished.status.success(), "JDK {}: the JVM ran with {options}\n{}", jdk.major, finished.report());
            assert!(!finished.stdout.contains("done"), "the program ran with {options}\n{}", finished.report());
            let lines = finished.agent_lines();
            assert_eq!(lines.len(), 1, "exactly one pcct line for {options}\n{}", finished.report());
            assert!(lines[0].contains(&format!("`{key}")), "the line names `{key}`: {}", lines[0]);
        }
    }
}
