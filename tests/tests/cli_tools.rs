//! The `pcct` tool's offline commands, run as a user runs them (the debug
//! build beside the agent library), on profiles made from stacks whose
//! split is known: `import-stacks` builds them, `report` prints them,
//! `correlate` compares them, over all frames and over real methods only.
//! Bad input: exit code 2 with the usage for a bad command line, 1 with one
//! line naming the problem for a bad file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pcct_tests::temp::TempDir;
use pcct_tests::{pcct_tool, run_pcct};

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
    let run = run_pcct(&["import-stacks", input.to_str().unwrap(), output.to_str().unwrap()], dir);
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

    let report = run_pcct(&["report", a.to_str().unwrap(), "--metric", "samples"], dir.path());
    let (stdout, stderr) = text(&report);
    assert!(report.status.success(), "report failed: {stderr}");
    let hot = stdout.lines().skip_while(|line| !line.contains("Hot methods")).nth(1).unwrap_or("");
    assert!(hot.contains("App.hash"), "the hottest method is hash:\n{stdout}");
    let collapsed =
        run_pcct(&["report", a.to_str().unwrap(), "--format", "collapsed", "--metric", "samples"], dir.path());
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
    let run = run_pcct(&["correlate", a.to_str().unwrap(), b.to_str().unwrap()], dir);
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

    let one = run_pcct(&["correlate", a], dir.path());
    assert_eq!(one.status.code(), Some(2), "{:?}", text(&one));
    assert!(text(&one).1.starts_with("pcct: correlate needs exactly two profiles\n"), "{:?}", text(&one));

    for option in ["--metric", "--resource"] {
        let metric = run_pcct(&["report", a, option, "bytes"], dir.path());
        assert_eq!(metric.status.code(), Some(2));
        let expected = format!("pcct: --resource must be one of {}, not `bytes`", pcct::Metric::accepted());
        assert!(text(&metric).1.starts_with(&expected), "{:?}", text(&metric));
    }

    let format = run_pcct(&["report", a, "--format", "svg"], dir.path());
    assert_eq!(format.status.code(), Some(2));
    let expected = "--format must be summary or one of collapsed, json, xtree, xarc, xprof, sites, pprof";
    assert!(text(&format).1.contains(expected), "{:?}", text(&format));

    let bad_stacks = dir.path().join("bad.stacks");
    std::fs::write(&bad_stacks, format!("1000\tmain\t{MAIN}\n2000\tmain\tApp|work|()V|x\n")).unwrap();
    let import = run_pcct(&["import-stacks", bad_stacks.to_str().unwrap(), "out.json"], dir.path());
    assert_eq!(import.status.code(), Some(1));
    let (_, stderr) = text(&import);
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("bad.stacks: profile text line 2: frame `App|work|()V|x`"), "{stderr}");
    assert!(!dir.path().join("out.json").exists(), "nothing written for a bad input");

    let not_a_profile = dir.path().join("not.json");
    std::fs::write(&not_a_profile, "{\"nodes\": 3}").unwrap();
    let report = run_pcct(&["report", not_a_profile.to_str().unwrap()], dir.path());
    assert_eq!(report.status.code(), Some(1), "{:?}", text(&report));
    assert!(text(&report).1.starts_with("pcct: "), "{:?}", text(&report));
}

#[test]
fn empty_deep_and_huge_inputs_get_an_answer_or_a_clear_error() {
    let dir = TempDir::new("cli-tools-edges");
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();

    // Empty: a profile with no samples, reported and compared without a panic.
    let empty = import(dir.path(), "empty", "");
    let report = run_pcct(&["report", empty.to_str().unwrap()], dir.path());
    assert!(report.status.success(), "{:?}", text(&report));
    let compared = run_pcct(&["correlate", empty.to_str().unwrap(), empty.to_str().unwrap()], dir.path());
    assert!(compared.status.success(), "{:?}", text(&compared));
    let json: serde_json::Value = serde_json::from_str(text(&compared).0.trim()).unwrap();
    assert!(json["per_method"].is_null() && json["no_java_share"] == serde_json::json!([null, null]), "{json}");

    // Deep: one stack of 20,000 frames (recursion) goes through every
    // command and every report format.
    let deep_frames: Vec<String> = (0..20_000).map(|i| format!("App|recurse|()V|{}", i % 7)).collect();
    let deep_refs: Vec<&str> = deep_frames.iter().map(String::as_str).collect();
    let deep = import(dir.path(), "deep", &stacks(&[(&deep_refs, 3)]));
    for format in ["summary", "xtree", "xarc", "xprof", "sites", "collapsed", "json"] {
        let run = run_pcct(&["report", deep.to_str().unwrap(), "--format", format], dir.path());
        assert!(run.status.success(), "report --format {format} of a deep profile: {:?}", text(&run).1);
    }
    let run = run_pcct(&["correlate", deep.to_str().unwrap(), deep.to_str().unwrap()], dir.path());
    assert!(run.status.success(), "correlate of a deep profile: {:?}", text(&run).1);

    // Deeply nested JSON is refused by the parser, not by a stack overflow.
    std::fs::write(path("nested.json"), format!("{}{}", "[".repeat(100_000), "]".repeat(100_000))).unwrap();
    let run = run_pcct(&["report", &path("nested.json")], dir.path());
    assert_eq!(run.status.code(), Some(1), "{:?}", text(&run));
    assert!(text(&run).1.contains("is not a pcct JSON profile"), "{:?}", text(&run).1);

    // Huge: 200,000 samples over 1,000 contexts import and report.
    let mut many = String::with_capacity(200_000 * 60);
    for i in 0..200_000u64 {
        many.push_str(&format!("{}\tt{}\t{MAIN}\tApp|leaf{}|()V|0\n", i * 1000, i % 8, i % 1000));
    }
    let huge = import(dir.path(), "huge", &many);
    let run = run_pcct(&["report", huge.to_str().unwrap(), "--top", "3"], dir.path());
    assert!(run.status.success(), "{:?}", text(&run).1);
    assert!(text(&run).0.contains("App.leaf"), "{}", text(&run).0);

    // A line of 10 MB that is not a stack: one line naming it.
    std::fs::write(path("long.stacks"), format!("1\tmain\t{}\n", "x".repeat(10 << 20))).unwrap();
    let run = run_pcct(&["import-stacks", &path("long.stacks"), &path("long.json")], dir.path());
    assert_eq!(run.status.code(), Some(1));
    let stderr = text(&run).1;
    assert!(stderr.lines().count() == 1 && stderr.len() < 500, "one short line: {} bytes", stderr.len());
}

/// A flat JSON profile of one chain `depth` deep, a method of its own on
/// every level, one sample at the leaf, or one on every level with
/// `self_everywhere` (then collapsed stacks hold depth²/2 frames).
fn chain_profile(depth: usize, self_everywhere: bool) -> String {
    let weight = |samples: u64| format!(r#"{{"samples":{samples},"cpu_ns":{0},"wall_ns":{0}}}"#, samples * 1000);
    let samples = if self_everywhere { depth as u64 } else { 1 };
    let mut out = String::with_capacity(depth * 320);
    out.push_str(&format!(
        r#"{{"format":"pcct-json","version":1,"mode":"pcct","metric":"cpu_ns","total":{},"methods":[{{"id":0,"class":"","name":"[root]","signature":"","kind":"pseudo"}}"#,
        weight(samples)
    ));
    for level in 1..=depth {
        out.push_str(&format!(
            r#",{{"id":{level},"class":"deep.Chain","name":"m{level}","signature":"()V","kind":"java"}}"#
        ));
    }
    out.push_str(r#"],"methods_self":["#);
    let own = |level: usize| u64::from(self_everywhere || level == depth);
    let counters: Vec<String> = (1..=depth)
        .filter(|&level| own(level) > 0)
        .map(|level| format!(r#"{{"method":{level},"self":{}}}"#, weight(1)))
        .collect();
    out.push_str(&counters.join(","));
    out.push_str(&format!(
        r#"],"nodes":[{{"id":0,"parent":null,"method":0,"call_site":-1,"line":null,"depth":0,"self":{0},"edge":{0},"cum":{1}}}"#,
        weight(0),
        weight(samples)
    ));
    for level in 1..=depth {
        out.push_str(&format!(
            r#",{{"id":{level},"parent":{},"method":{level},"call_site":0,"line":null,"depth":{level},"self":{},"edge":{},"cum":{}}}"#,
            level - 1,
            weight(own(level)),
            weight(1),
            weight(samples)
        ));
    }
    out.push_str("]}");
    out
}

/// What a capped run gave: its exit status, what `on_stdout` made of its
/// standard output (read as it came), and its standard error.
struct Capped<T> {
    status: std::process::ExitStatus,
    stdout: T,
    stderr: String,
}

/// Runs `pcct args` with its address space capped at `cap_mib` MiB (the
/// shell's `ulimit -v`: an allocation past it fails, and Rust aborts) and
/// kills it if it runs longer than `seconds`. `on_stdout` reads the output
/// as it comes, so the test holds none of it.
fn pcct_capped<T: Send + 'static>(
    args: &[&str],
    dir: &Path,
    (cap_mib, seconds): (u64, u64),
    on_stdout: impl FnOnce(std::process::ChildStdout) -> T + Send + 'static,
) -> Capped<T> {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {} && exec \"$0\" \"$@\"", cap_mib * 1024))
        .arg(pcct_tool())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh runs");
    let stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || on_stdout(stdout));
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    let status = pcct_tests::poll_until(deadline, || child.try_wait().expect("wait for pcct"));
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("pcct {args:?} still ran after {seconds} s (killed)");
    };
    Capped { status, stdout: reader.join().expect("stdout reader"), stderr: errors.join().expect("stderr reader") }
}

/// Counts the bytes and lines of a stream without keeping it, and keeps its last line.
fn count_lines(stdout: std::process::ChildStdout) -> (u64, u64, String) {
    use std::io::BufRead;
    let mut reader = std::io::BufReader::with_capacity(1 << 20, stdout);
    let (mut bytes, mut lines, mut line, mut last) = (0u64, 0u64, Vec::new(), Vec::new());
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line).expect("read pcct's output");
        if read == 0 {
            return (bytes, lines, String::from_utf8_lossy(&last).into_owned());
        }
        bytes += read as u64;
        lines += 1;
        std::mem::swap(&mut line, &mut last);
    }
}

const DEEP: usize = 100_000;

/// Issue 16: the import walked to the root for every node (a 100,000-deep
/// chain took 25 s in a release build); now one pass.
#[test]
fn a_chain_100k_deep_imports_and_reports_in_linear_time() {
    let dir = TempDir::new("cli-deep-import");
    std::fs::write(dir.path().join("chain.json"), chain_profile(DEEP, false)).unwrap();
    // About 6 s alone in a debug build, more beside the other tests on two
    // cores; the old import had not finished after 60 s (25 s in release).
    let run = pcct_capped(&["report", "chain.json", "--format", "xprof"], dir.path(), (1024, 90), count_lines);
    assert!(run.status.success(), "{}: {}", run.status, run.stderr);
    let (_, lines, last) = run.stdout;
    assert_eq!(lines, 2 + DEEP as u64, "a line per method");
    assert!(last.contains("deep.Chain.m"), "{last}");
}

/// Issue 16: correlate wrote out every context's text (a 100,000-deep
/// chain: 75 GB); now contexts are ids, and two such profiles fit in 1 GiB.
#[test]
fn correlate_of_a_chain_100k_deep_fits_in_a_memory_cap() {
    let dir = TempDir::new("cli-deep-correlate");
    std::fs::write(dir.path().join("chain.json"), chain_profile(DEEP, false)).unwrap();
    let run = pcct_capped(&["correlate", "chain.json", "chain.json"], dir.path(), (1024, 120), count_lines);
    assert!(run.status.success(), "{}: {}", run.status, run.stderr);
    assert!(run.stderr.contains("per context 1.0000"), "{}", run.stderr);
}

/// 6,000 levels with a sample on each: 300 MB of collapsed stacks from a
/// 2 MB profile. `report` streams them under a cap of 128 MiB (it used to
/// build the whole text first).
#[test]
fn report_streams_an_output_larger_than_its_memory_cap() {
    let dir = TempDir::new("cli-stream");
    let depth = 6_000usize;
    std::fs::write(dir.path().join("chain.json"), chain_profile(depth, true)).unwrap();
    let args = ["report", "chain.json", "--format", "collapsed", "--metric", "samples"];
    let run = pcct_capped(&args, dir.path(), (128, 120), count_lines);
    assert!(run.status.success(), "{}: {}", run.status, run.stderr);
    let (bytes, lines, last) = run.stdout;
    // Line d: the frames of levels 1..=d, their d - 1 separators, " 1\n".
    let mut expected = 0u64;
    let mut frames = 0u64;
    for level in 1..=depth {
        frames += format!("deep.Chain.m{level}").len() as u64;
        expected += frames + (level as u64 - 1) + 3;
    }
    assert_eq!((bytes, lines), (expected, depth as u64));
    assert!(bytes > 290_000_000, "{bytes} bytes");
    assert_eq!(last.split(';').count(), depth, "the deepest stack whole");
}

/// A reader that stops early (`| head`) ends the output quietly; it used to
/// make `report` panic ("failed printing to stdout").
#[test]
fn report_stops_quietly_when_its_reader_goes_away() {
    let dir = TempDir::new("cli-pipe");
    std::fs::write(dir.path().join("chain.json"), chain_profile(6_000, true)).unwrap();
    let first_line = |stdout: std::process::ChildStdout| {
        use std::io::BufRead;
        let mut line = String::new();
        std::io::BufReader::new(stdout).read_line(&mut line).expect("a first line");
        line
    };
    let args = ["report", "chain.json", "--format", "collapsed", "--metric", "samples"];
    let run = pcct_capped(&args, dir.path(), (1024, 120), first_line);
    assert_eq!(run.stdout, "deep.Chain.m1 1\n");
    assert!(run.status.success() && run.stderr.is_empty(), "{}: {}", run.status, run.stderr);
}

/// Inputs are read against a limit: `/dev/zero` and anything over
/// `--max-input` get one line and exit code 1, within a memory cap (both
/// commands used to read any input whole).
#[test]
fn endless_and_oversized_inputs_get_one_line() {
    let dir = TempDir::new("cli-limits");
    let one_line = |run: &Capped<(u64, u64, String)>, expected: &str| {
        assert_eq!(run.status.code(), Some(1), "{}: {}", run.status, run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "one line: {}", run.stderr);
        assert!(run.stderr.starts_with("pcct: ") && run.stderr.contains(expected), "{}", run.stderr);
    };
    let cap = (256, 60);
    let zero = pcct_capped(&["report", "/dev/zero"], dir.path(), cap, count_lines);
    one_line(&zero, "/dev/zero is not a pcct JSON profile");
    let zero = pcct_capped(&["import-stacks", "/dev/zero", "out.json"], dir.path(), cap, count_lines);
    one_line(&zero, "/dev/zero: line 1 is longer than 64 MiB");

    let a = import(dir.path(), "a", &stacks(&[(&[MAIN, WORK], 3)]));
    let a = a.to_str().unwrap();
    let over = "larger than the input limit of 1 KiB (--max-input raises it)";
    one_line(&pcct_capped(&["report", a, "--max-input", "1k"], dir.path(), cap, count_lines), over);
    one_line(&pcct_capped(&["correlate", a, a, "--max-input", "1k"], dir.path(), cap, count_lines), over);
    std::fs::write(dir.path().join("big.stacks"), stacks(&[(&[MAIN, WORK], 100)])).unwrap();
    let run =
        pcct_capped(&["import-stacks", "big.stacks", "o.json", "--max-input", "1k"], dir.path(), cap, count_lines);
    one_line(&run, over);
    assert!(!dir.path().join("o.json").exists(), "nothing written");
    let bad = run_pcct(&["report", a, "--max-input", "lots"], dir.path());
    assert_eq!(bad.status.code(), Some(2), "{:?}", text(&bad));
    assert!(text(&bad).1.starts_with("pcct: --max-input must be a size"), "{:?}", text(&bad));
}

/// An input that is not a file, streamed past the limit (whitespace a JSON
/// parser would read on forever).
#[test]
fn a_stream_over_the_limit_is_cut_off() {
    use std::io::Write;
    use std::process::Stdio;
    let dir = TempDir::new("cli-stream-limit");
    let mut child = Command::new(pcct_tool())
        .args(["report", "/dev/stdin", "--max-input", "64k"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .current_dir(dir.path())
        .spawn()
        .expect("pcct runs");
    let mut stdin = child.stdin.take().expect("piped");
    let writer = std::thread::spawn(move || {
        // Until pcct stops reading (a broken pipe), at most 16 MiB.
        for _ in 0..256 {
            if stdin.write_all(&[b' '; 64 << 10]).is_err() {
                break;
            }
        }
    });
    let output = child.wait_with_output().expect("pcct ends");
    writer.join().unwrap();
    assert_eq!(output.status.code(), Some(1), "{:?}", text(&output));
    assert!(text(&output).1.contains("larger than the input limit of 64 KiB"), "{:?}", text(&output));
}

/// Issue 16: control characters and separators in names (legal in class
/// files) split lines and stacks; every report keeps them on one line.
#[test]
fn odd_names_never_split_a_line_of_any_report() {
    let dir = TempDir::new("cli-names");
    let odd = "Odd;Cl\u{1}ss|r\ru\u{1b}n\u{7f}|()V|0";
    let a = import(dir.path(), "a", &stacks(&[(&[MAIN, odd, WORK], 3), (&[odd], 2)]));
    let a = a.to_str().unwrap();
    let raw = "Odd;Cl\u{1}ss.r\ru\u{1b}n\u{7f}";
    for format in ["summary", "xtree", "xarc", "xprof", "collapsed"] {
        let run = run_pcct(&["report", a, "--format", format, "--metric", "samples"], dir.path());
        let (stdout, stderr) = text(&run);
        assert!(run.status.success(), "{format}: {stderr}");
        assert!(!stdout.contains(|c: char| c.is_control() && c != '\n'), "{format}: a control character:\n{stdout}");
        assert!(stdout.contains("Odd;Cl\\x01ss.r\\x0Du\\x1Bn\\x7F") || format == "collapsed", "{format}:\n{stdout}");
    }
    let collapsed = run_pcct(&["report", a, "--format", "collapsed", "--metric", "samples"], dir.path());
    let stacks = pcct::export::collapsed::parse(&text(&collapsed).0).expect("collapsed parses");
    let stack = |frames: &[&str]| frames.iter().map(|frame| frame.to_string()).collect::<Vec<_>>();
    assert!(stacks.contains(&(stack(&["App.main", raw, "App.work"]), 3)), "{stacks:?}");
    assert!(stacks.contains(&(stack(&[raw]), 2)), "{stacks:?}");
    let json = run_pcct(&["report", a, "--format", "json"], dir.path());
    let value: serde_json::Value = serde_json::from_str(&text(&json).0).expect("valid JSON");
    assert!(value["methods"].as_array().unwrap().iter().any(|m| m["name"] == "r\ru\u{1b}n\u{7f}"), "{value}");
}

/// A profile with CPU samples and events: 3/4 of the bytes are byte[]
/// allocated in App.work (bci 12, line 40), 1/4 App$Small in App.copy; a
/// java.lang.Object monitor waited for in App.main (bci 9).
fn events_profile(dir: &Path) -> PathBuf {
    use pcct::{Frame, Marks, MethodTable, Pcct, TreeConfig, Weight};
    let mut methods = MethodTable::new();
    let main = methods.intern("App", "main", "()V");
    let work = methods.intern("App", "work", "()V");
    let copy = methods.intern("App", "copy", "()V");
    methods.set_lines(work, vec![pcct::LineEntry { start_bci: 10, line: 40 }]);
    let (bytes, small, object) =
        (methods.intern_type("byte[]"), methods.intern_type("App$Small"), methods.intern_type("java.lang.Object"));
    let mut tree = Pcct::new(TreeConfig::default()).expect("a tree");
    let f = Frame::new;
    tree.record(&mut Marks::new(), &[f(main, 3), f(work, 1)], Weight::sample(5_000_000, 5_000_000)).unwrap();
    for _ in 0..3 {
        tree.record_event(&[f(main, 3), f(work, 12), f(bytes, -1)], Weight::allocation(1 << 20, 1000)).unwrap();
    }
    tree.record_event(&[f(main, 4), f(copy, 2), f(small, -1)], Weight::allocation(1 << 20, 65536)).unwrap();
    tree.record_event(&[f(main, 9), f(object, -1)], Weight::lock_wait(3_000_000)).unwrap();
    let path = dir.join("events.json");
    std::fs::write(&path, pcct::export::json::write(&tree, &methods)).expect("write the profile");
    path
}

#[test]
fn report_by_resource_and_the_sites_of_allocations_and_monitors() {
    let dir = TempDir::new("cli-tools-resources");
    let profile = events_profile(dir.path());
    let profile = profile.to_str().unwrap();

    let summary = run_pcct(&["report", profile, "--resource", "alloc_bytes"], dir.path());
    let (stdout, stderr) = text(&summary);
    assert!(summary.status.success(), "{stderr}");
    assert!(stdout.contains("Events: 4194304 bytes, 68536 objects, 3.000 lock wait ms, 1 enters"), "{stdout}");
    assert!(stdout.contains("Resource: alloc_bytes (bytes)"), "{stdout}");
    let sites: Vec<&str> = stdout.lines().skip_while(|line| !line.contains("Hot sites")).skip(1).take(2).collect();
    assert!(sites[0].contains("byte[] <- App.work @12 (line 40)") && sites[0].contains("75.0%"), "{stdout}");
    assert!(sites[1].contains("App$Small <- App.copy @2") && sites[1].ends_with("100.0%"), "{stdout}");

    let table = run_pcct(&["report", profile, "--format", "sites", "--metric", "lock_wait_ns"], dir.path());
    let (stdout, stderr) = text(&table);
    assert!(table.status.success(), "{stderr}");
    let row = stdout.lines().nth(2).expect("a site");
    assert!(row.contains("100.00% 100.00%") && row.contains("java.lang.Object  @9  App.main"), "{stdout}");

    let collapsed = run_pcct(&["report", profile, "--format", "collapsed", "--resource", "alloc_objects"], dir.path());
    let mut lines: Vec<String> = text(&collapsed).0.lines().map(String::from).collect();
    lines.sort();
    assert_eq!(lines, ["App.main;App.copy;App$Small 65536", "App.main;App.work;byte[] 3000"]);

    for resource in pcct::Metric::ALL {
        for format in ["summary", "xtree", "xarc", "xprof", "sites", "collapsed", "json"] {
            let run = run_pcct(&["report", profile, "--format", format, "--resource", resource.name()], dir.path());
            assert!(run.status.success(), "--format {format} --resource {}: {:?}", resource.name(), text(&run).1);
        }
    }
}
