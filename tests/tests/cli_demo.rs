//! The README's first command runs `pcct demo`: the tool compiles the
//! bundled demo workload, profiles it with the agent and prints what it
//! found. This runs the same tool (the debug build beside the agent library)
//! for a short demo and checks that it names the demo's known hottest
//! method, edges with call sites, and the tree, on JDK 17.

use std::process::Command;
use std::time::Duration;

use pcct_tests::{agent_path, assert_no_hs_err, jdk17, Fixture};

#[test]
fn pcct_demo_prints_the_hot_methods_edges_and_tree_of_the_demo() {
    let agent = agent_path();
    let tool = agent.with_file_name("pcct");
    assert!(tool.is_file(), "{} is missing: run `cargo build -p pcct-cli`", tool.display());
    let fixture = Fixture::new("cli-demo");
    let jdk = jdk17();
    let mut child = Command::new(&tool)
        .args(["demo", "--seconds", "3", "--interval", "1ms", "--java"])
        .arg(jdk.java())
        .arg("--agent")
        .arg(&agent)
        .current_dir(fixture.dir())
        .env("TMPDIR", fixture.dir())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("pcct runs");
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "pcct demo did not finish");
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = child.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(status.success(), "pcct demo failed: {status}\n{stdout}\n{stderr}");
    // The demo spends about 70% of its CPU in Pricing.discount (demo/Demo.java).
    let hot = stdout.lines().skip_while(|line| !line.contains("Hot methods")).nth(1).unwrap_or("");
    assert!(hot.contains("Demo$Pricing.discount"), "hottest method:\n{stdout}");
    assert!(stdout.contains("Demo$Pricing.price -> Demo$Pricing.discount @"), "hot edge with call site:\n{stdout}");
    assert!(stdout.contains("xtree") && stdout.contains("Demo.handle"), "tree:\n{stdout}");
    assert!(stderr.contains("samples recorded"), "the agent's summary:\n{stderr}");
    // The demo ran in a temporary directory under the fixture.
    for entry in std::fs::read_dir(fixture.dir()).expect("fixture dir").flatten() {
        if entry.path().is_dir() {
            assert_no_hs_err(&entry.path());
        }
    }
    assert_no_hs_err(fixture.dir());
}
