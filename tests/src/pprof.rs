//! Reading pprof profiles in tests: decoded with prost (through
//! `pcct::export::pprof::decode`, to compare stacks) and by the third-party
//! decoders the house rule asks for, `go tool pprof` (Debian `golang-go`)
//! and `protoc --decode` (Debian `protobuf-compiler`), both installed by
//! `scripts/install-test-deps`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use pcct::export::pprof_proto::Profile;

/// Each stack (frames root first, `name:line`) and the sum of its samples' values.
pub type Stacks = BTreeMap<Vec<String>, Vec<i64>>;

fn text(profile: &Profile, index: i64) -> &str {
    &profile.string_table[index as usize]
}

/// The profile's samples by stack.
pub fn stacks(profile: &Profile) -> Stacks {
    let mut stacks = Stacks::new();
    for sample in &profile.sample {
        let frames = sample
            .location_id
            .iter()
            .rev()
            .map(|&id| {
                let location = profile.location.iter().find(|l| l.id == id).expect("every location id is defined");
                let line = &location.line[0];
                let function =
                    profile.function.iter().find(|f| f.id == line.function_id).expect("every function id is defined");
                format!("{}:{}", text(profile, function.name), line.line)
            })
            .collect();
        let entry = stacks.entry(frames).or_insert_with(|| vec![0; sample.value.len()]);
        for (sum, value) in entry.iter_mut().zip(&sample.value) {
            *sum += value;
        }
    }
    stacks
}

/// Adds `more` to `sum`, stack by stack.
pub fn add_stacks(sum: &mut Stacks, more: &Stacks) {
    for (frames, values) in more {
        let entry = sum.entry(frames.clone()).or_insert_with(|| vec![0; values.len()]);
        for (total, value) in entry.iter_mut().zip(values) {
            *total += value;
        }
    }
}

/// `after - before`, stack by stack, without the stacks that did not change.
pub fn difference(after: &Stacks, before: &Stacks) -> Stacks {
    let mut difference = Stacks::new();
    for (frames, values) in after {
        let old = before.get(frames);
        let change: Vec<i64> = values.iter().enumerate().map(|(i, v)| v - old.map_or(0, |old| old[i])).collect();
        if change.iter().any(|&v| v != 0) {
            difference.insert(frames.clone(), change);
        }
    }
    for (frames, values) in before {
        if !after.contains_key(frames) {
            difference.insert(frames.clone(), values.iter().map(|v| -v).collect());
        }
    }
    difference
}

/// Each sample type's total.
pub fn totals(profile: &Profile) -> Vec<i64> {
    let mut totals = vec![0; profile.sample_type.len()];
    for sample in &profile.sample {
        for (total, value) in totals.iter_mut().zip(&sample.value) {
            *total += value;
        }
    }
    totals
}

/// `(type, unit)` of each sample type.
pub fn sample_types(profile: &Profile) -> Vec<(String, String)> {
    profile
        .sample_type
        .iter()
        .map(|t| (text(profile, t.r#type).to_string(), text(profile, t.unit).to_string()))
        .collect()
}

fn require(tool: &str, check: &mut Command) {
    let ok = check.stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|status| status.success());
    assert!(ok, "{tool} is missing: run scripts/install-test-deps pprof (Debian golang-go and protobuf-compiler)");
}

/// Runs `go tool pprof <args> <path>`; its standard output.
pub fn go_pprof(args: &[&str], path: &Path) -> String {
    require("go tool pprof", Command::new("go").args(["tool", "pprof", "-h"]));
    let output = Command::new("go")
        .args(["tool", "pprof"])
        .args(args)
        .arg(path)
        .env("PPROF_TMPDIR", path.parent().unwrap_or(Path::new(".")))
        .output()
        .expect("go tool pprof runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "go tool pprof {args:?} {} failed: {}\n{stdout}",
        path.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Each sample type's total as `go tool pprof -raw` prints the samples.
pub fn go_pprof_raw_totals(path: &Path) -> Vec<i64> {
    let raw = go_pprof(&["-raw"], path);
    let samples = raw.split("Samples:\n").nth(1).unwrap_or_else(|| panic!("no samples in -raw output:\n{raw}"));
    let mut lines = samples.lines();
    let header = lines.next().expect("a sample-type header");
    let mut totals = vec![0i64; header.split_whitespace().count()];
    for line in lines.take_while(|line| !line.starts_with("Locations")) {
        let Some((values, _stack)) = line.split_once(':') else { continue };
        for (total, value) in totals.iter_mut().zip(values.split_whitespace()) {
            *total += value.parse::<i64>().unwrap_or_else(|_| panic!("not a value `{value}` in: {line}"));
        }
    }
    totals
}

/// The total `go tool pprof -top` reports for sample type `index` (`samples`, ...).
pub fn go_pprof_top_total(path: &Path, index: &str) -> i64 {
    let top = go_pprof(&["-top", &format!("-sample_index={index}")], path);
    // "Showing nodes accounting for 812, 100% of 812 total"
    let total = top
        .lines()
        .find_map(|line| line.split(" of ").nth(1)?.strip_suffix(" total").map(str::to_string))
        .unwrap_or_else(|| panic!("no total in -top output:\n{top}"));
    total.trim().parse().unwrap_or_else(|_| panic!("total `{total}` is not a count:\n{top}"))
}

/// `protoc --decode perftools.profiles.Profile` of the gunzipped `bytes`,
/// with pcct's transcription of profile.proto; its text.
pub fn protoc_decode(bytes: &[u8]) -> String {
    require("protoc", Command::new("protoc").arg("--version"));
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(bytes), &mut plain).expect("gzip");
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pcct/src/export");
    let mut child = Command::new("protoc")
        .arg("--decode=perftools.profiles.Profile")
        .arg(format!("--proto_path={}", schema.display()))
        .arg("pprof.proto")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("protoc runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || stdin.write_all(&plain));
    let output = child.wait_with_output().expect("protoc finishes");
    writer.join().expect("writer").expect("protoc reads its input");
    assert!(output.status.success(), "protoc --decode failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("text")
}
