//! The `pcct` tool's offline commands, run as a user runs them (the debug
//! build beside the agent library), on profiles made from stacks whose
//! split is known: `import-stacks` builds them, `report` prints them,
//! `correlate` compares them, over all frames and over real methods only.
//! Bad input: exit code 2 with the usage for a bad command line, 1 with one
//! line naming the problem for a bad file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pcct_tests::agent_path;
use pcct_tests::temp::TempDir;

fn tool() -> PathBuf {
    let tool = agent_path().with_file_name("pcct");
    assert!(tool.is_file(), "{} is missing: run `cargo build -p pcct-cli`", tool.display());
    tool
}

fn pcct(args: &[&str], dir: &Path) -> Output {
    Command::new(tool()).args(args).current_dir(dir).output().expect("pcct runs")
}

fn text(output: &Output) -> (String, String) {
    (String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
}

/// `count` samples of each `(stack, n)`, frames `class|method|()V|bci` or
/// bracketed, one thread, 1 ms apart.
fn stacks(parts: &[(&[&str], usize)]) -> String {
    let mut out = String::new();
    let mut time = 0u64;
    for (stack, count) in parts {
        for _ in 0..*count {
            time += 1_000_000;
            out.push_str(&format!("{time}\tmain\t{}\n", stack.join("\t")));
        }
    }
    out
}

const MAIN: &str = "App|main|()V|3";
const WORK: &str = "App|work|()V|5";
const HASH: &str = "App|hash|()V|1";
const COPY: &str = "App|copy|()V|7";

/// Imports `stacks` into `<name>.json` in `dir`.
fn import(dir: &Path, name: &str, stacks: &str) -> PathBuf {
    let input = dir.join(format!("{name}.stacks"));
    let output = dir.join(format!("{name}.json"));
    std::fs::write(&input, stacks).expect("write stacks");
    let run = pcct(&["import-stacks", input.to_str().unwrap(), output.to_str().unwrap()], dir);
    assert!(run.status.success(), "import-stacks failed: {:?}", text(&run));
    output
}

#[test]
fn import_report_and_correlate_agree_with_the_known_split() {
    let dir = TempDir::new("cli-tools");
    // 50 % hash under work, 20 % work, 20 % copy, 10 % with no Java frame.
    let a = import(
        dir.path(),
        "a",
        &stacks(&[(&[MAIN, WORK, HASH], 50), (&[MAIN, WORK], 20), (&[MAIN, COPY], 20), (&["[no_Java_frame]"], 10)]),
    );
    // The same program, but 20 of hash's samples lost their leaf to a
    // pseudo-frame under work (a broken walk).
    let b = import(
        dir.path(),
        "b",
        &stacks(&[
            (&[MAIN, WORK, HASH], 30),
            (&[MAIN, WORK, "[break_stack_range]"], 20),
            (&[MAIN, WORK], 20),
            (&[MAIN, COPY], 20),
            (&["[no_Java_frame]"], 10),
        ]),
    );

    let report = pcct(&["report", a.to_str().unwrap(), "--metric", "samples"], dir.path());
    let (stdout, stderr) = text(&report);
    assert!(report.status.success(), "report failed: {stderr}");
    let hot = stdout.lines().skip_while(|line| !line.contains("Hot methods")).nth(1).unwrap_or("");
    assert!(hot.contains("App.hash"), "the hottest method is hash:\n{stdout}");
    let collapsed = pcct(&["report", a.to_str().unwrap(), "--format", "collapsed", "--metric", "samples"], dir.path());
    let (stdout, _) = text(&collapsed);
    assert!(stdout.lines().any(|line| line == "App.main;App.work;App.hash 50"), "collapsed:\n{stdout}");

    let same = correlate(dir.path(), &a, &a);
    for key in ["per_method", "per_real_method"] {
        let r = same[key].as_f64().expect("a number");
        assert!((r - 1.0).abs() < 1e-9, "{key} of a profile with itself: {same}");
    }
    assert_eq!(same["no_java_share"], serde_json::json!([0.1, 0.1]));

    // Over real methods the broken walk's samples go to work, the Java frame
    // above them: b says hash 30 against 50 and work 40 against 20.
    let other = correlate(dir.path(), &a, &b);
    let real = other["per_real_method"].as_f64().expect("a number");
    let expected = pcct::correlation::pearson(&[(50.0, 30.0), (20.0, 40.0), (20.0, 20.0)]).unwrap();
    assert!((real - expected).abs() < 1e-9, "per_real_method {real}, expected {expected}: {other}");
    // Over all frames, the pseudo-frames count as methods.
    assert!(other["per_method"].as_f64().unwrap() > real, "{other}");
}

fn correlate(dir: &Path, a: &Path, b: &Path) -> serde_json::Value {
    let run = pcct(&["correlate", a.to_str().unwrap(), b.to_str().unwrap()], dir);
    let (stdout, stderr) = text(&run);
    assert!(run.status.success(), "correlate failed: {stderr}");
    assert!(
        stderr.contains("over real methods") && stderr.contains("without a Java frame: 10.00% and 10.00%"),
        "{stderr}"
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("correlate's stdout is not JSON ({e}): {stdout}"))
}

#[test]
fn bad_command_lines_and_bad_files_are_named() {
    let dir = TempDir::new("cli-tools-bad");
    let a = import(dir.path(), "a", &stacks(&[(&[MAIN, WORK], 3)]));
    let a = a.to_str().unwrap();

    let one = pcct(&["correlate", a], dir.path());
    assert_eq!(one.status.code(), Some(2), "{:?}", text(&one));
    assert!(text(&one).1.starts_with("pcct: correlate needs exactly two profiles\n"), "{:?}", text(&one));

    let metric = pcct(&["report", a, "--metric", "bytes"], dir.path());
    assert_eq!(metric.status.code(), Some(2));
    assert!(
        text(&metric).1.starts_with("pcct: --metric must be cpu, wall or samples, not `bytes`"),
        "{:?}",
        text(&metric)
    );

    let format = pcct(&["report", a, "--format", "svg"], dir.path());
    assert_eq!(format.status.code(), Some(2));
    assert!(text(&format).1.contains("--format must be summary, xtree, xarc, xprof, collapsed or json"));

    let bad_stacks = dir.path().join("bad.stacks");
    std::fs::write(&bad_stacks, format!("1000\tmain\t{MAIN}\n2000\tmain\tApp|work|()V|x\n")).unwrap();
    let import = pcct(&["import-stacks", bad_stacks.to_str().unwrap(), "out.json"], dir.path());
    assert_eq!(import.status.code(), Some(1));
    let (_, stderr) = text(&import);
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("bad.stacks: profile text line 2: frame `App|work|()V|x`"), "{stderr}");
    assert!(!dir.path().join("out.json").exists(), "nothing written for a bad input");

    let not_a_profile = dir.path().join("not.json");
    std::fs::write(&not_a_profile, "{\"nodes\": 3}").unwrap();
    let report = pcct(&["report", not_a_profile.to_str().unwrap()], dir.path());
    assert_eq!(report.status.code(), Some(1), "{:?}", text(&report));
    assert!(text(&report).1.starts_with("pcct: "), "{:?}", text(&report));
}

#[test]
fn empty_deep_and_huge_inputs_get_an_answer_or_a_clear_error() {
    let dir = TempDir::new("cli-tools-edges");
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();

    // Empty: a profile with no samples, reported and compared without a panic.
    let empty = import(dir.path(), "empty", "");
    let report = pcct(&["report", empty.to_str().unwrap()], dir.path());
    assert!(report.status.success(), "{:?}", text(&report));
    let compared = pcct(&["correlate", empty.to_str().unwrap(), empty.to_str().unwrap()], dir.path());
    assert!(compared.status.success(), "{:?}", text(&compared));
    let json: serde_json::Value = serde_json::from_str(text(&compared).0.trim()).unwrap();
    assert!(json["per_method"].is_null() && json["no_java_share"] == serde_json::json!([null, null]), "{json}");

    // Deep: one stack of 20,000 frames (recursion) goes through every
    // command and every report format.
    let deep_frames: Vec<String> = (0..20_000).map(|i| format!("App|recurse|()V|{}", i % 7)).collect();
    let deep_refs: Vec<&str> = deep_frames.iter().map(String::as_str).collect();
    let deep = import(dir.path(), "deep", &stacks(&[(&deep_refs, 3)]));
    for format in ["summary", "xtree", "xarc", "xprof", "collapsed", "json"] {
        let run = pcct(&["report", deep.to_str().unwrap(), "--format", format], dir.path());
        assert!(run.status.success(), "report --format {format} of a deep profile: {:?}", text(&run).1);
    }
    let run = pcct(&["correlate", deep.to_str().unwrap(), deep.to_str().unwrap()], dir.path());
    assert!(run.status.success(), "correlate of a deep profile: {:?}", text(&run).1);

    // Deeply nested JSON is refused by the parser, not by a stack overflow.
    std::fs::write(path("nested.json"), format!("{}{}", "[".repeat(100_000), "]".repeat(100_000))).unwrap();
    let run = pcct(&["report", &path("nested.json")], dir.path());
    assert_eq!(run.status.code(), Some(1), "{:?}", text(&run));
    assert!(text(&run).1.contains("is not a pcct JSON profile"), "{:?}", text(&run).1);

    // Huge: 200,000 samples over 1,000 contexts import and report.
    let mut many = String::with_capacity(200_000 * 60);
    for i in 0..200_000u64 {
        many.push_str(&format!("{}\tt{}\t{MAIN}\tApp|leaf{}|()V|0\n", i * 1000, i % 8, i % 1000));
    }
    let huge = import(dir.path(), "huge", &many);
    let run = pcct(&["report", huge.to_str().unwrap(), "--top", "3"], dir.path());
    assert!(run.status.success(), "{:?}", text(&run).1);
    assert!(text(&run).0.contains("App.leaf"), "{}", text(&run).0);

    // A line of 10 MB that is not a stack: one line naming it.
    std::fs::write(path("long.stacks"), format!("1\tmain\t{}\n", "x".repeat(10 << 20))).unwrap();
    let run = pcct(&["import-stacks", &path("long.stacks"), &path("long.json")], dir.path());
    assert_eq!(run.status.code(), Some(1));
    let stderr = text(&run).1;
    assert!(stderr.lines().count() == 1 && stderr.len() < 500, "one short line: {} bytes", stderr.len());
}
