//! `pcct diff` on two real profiles with a known change: DiffTarget run
//! with a at 25 % of its CPU, then at 50 % (b from 75 % to 50 %). The
//! diff names a as the method that grew most, its share doubled, b as the
//! one that shrank; `--flamegraph` writes inferno's differential flame
//! graph, which headless Chromium renders: its script runs, and its search
//! (asked for in the address, as a user's link would) finds DiffTarget.a in
//! about half of the samples after.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use pcct_tests::browser::Chromium;
use pcct_tests::{assert_no_hs_err, one_jdk, pcct_tool, Fixture, Jvm};

/// Profiles DiffTarget with a at `percent` of its CPU into `<name>.json`.
fn profile(jdk: &pcct_tests::Jdk, fixture: &Fixture, name: &str, percent: u32) -> PathBuf {
    let path = fixture.path(&format!("{name}.json"));
    let finished = Jvm::new(jdk, fixture, "DiffTarget")
        .arg("2")
        .arg(percent.to_string())
        .agent(format!("interval=1ms,http=off,file={}", path.display()))
        .run(Duration::from_secs(120));
    finished.assert_success();
    assert!(finished.stdout.contains("done"), "{}", finished.report());
    path
}

/// (before, after) shares of `method` in the diff's `section`.
fn shares(text: &str, section: &str, method: &str) -> (f64, f64) {
    let lines = text.split(section).nth(1).unwrap_or_else(|| panic!("no section {section}:\n{text}"));
    let line = lines
        .lines()
        .take_while(|line| !line.is_empty())
        .find(|line| line.ends_with(&format!("  {method}")))
        .unwrap_or_else(|| panic!("{method} not in {section}:\n{text}"));
    let numbers: Vec<f64> = line
        .split_whitespace()
        .take(3)
        .map(|n| n.trim_start_matches('+').trim_end_matches('%').parse().unwrap())
        .collect();
    (numbers[1] / 100.0, numbers[2] / 100.0)
}

/// Renders the flame graph `svg` in headless Chromium with a search for
/// `term` (inferno's `?s=` parameter); returns the share the page says it
/// matched, in percent: the page's own script computed it from the frames.
fn rendered_search(fixture: &Fixture, svg: &Path, term: &str) -> f64 {
    let chromium = Chromium::new(fixture.dir());
    let url = format!("file://{}?s={term}", svg.display());
    let (dom, ready) = chromium.dump_dom_until(
        &url,
        Duration::from_secs(2),
        std::time::Instant::now() + Duration::from_secs(60),
        |dom| matched_text(dom).is_some_and(|text| text.starts_with("Matched: ")),
    );
    let text = matched_text(&dom).unwrap_or_default();
    assert!(ready, "Chromium rendered no search result for {term} ({text:?}):\n{}", &dom[..dom.len().min(3000)]);
    let number = text.trim_start_matches("Matched: ").trim_end_matches('%');
    number.parse().unwrap_or_else(|_| panic!("the page's search result: {text:?}"))
}

/// The text of the flame graph's `matched` element (where its search
/// writes its result) in a dumped DOM.
fn matched_text(dom: &str) -> Option<String> {
    let element = dom.split("id=\"matched\"").nth(1)?;
    let text = element.split_once('>')?.1.split('<').next()?;
    Some(text.trim().to_string())
}

fn diff(dir: &Path, args: &[&str]) -> String {
    let output = Command::new(pcct_tool()).arg("diff").args(args).current_dir(dir).output().expect("pcct diff runs");
    assert!(output.status.success(), "pcct diff failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("text")
}

one_jdk! {
    fn diff_names_the_method_whose_share_doubled(jdk) {
        let fixture = Fixture::new("diff");
        let before = profile(jdk, &fixture, "before", 25);
        let after = profile(jdk, &fixture, "after", 50);
        let svg = fixture.path("diff.svg");
        let text = diff(fixture.dir(), &[
            before.to_str().unwrap(), after.to_str().unwrap(), "--flamegraph", svg.to_str().unwrap(),
        ]);
        let (a_before, a_after) = shares(&text, "Methods by total share", "DiffTarget.a");
        assert!((0.18..=0.30).contains(&a_before) && (0.40..=0.56).contains(&a_after), "a: {a_before} -> {a_after}\n{text}");
        let ratio = a_after / a_before;
        assert!((1.6..=2.4).contains(&ratio), "a's share grew {ratio} times, not about twice:\n{text}");
        let (b_before, b_after) = shares(&text, "Methods by total share", "DiffTarget.b");
        assert!(b_after < b_before - 0.15, "b: {b_before} -> {b_after}\n{text}");
        // The largest change by total share is a's or b's (opposite and
        // about equal), and a grew.
        let first = text.split("Methods by total share").nth(1).unwrap().lines().nth(2).unwrap();
        assert!(first.ends_with("DiffTarget.a") || first.ends_with("DiffTarget.b"), "{text}");
        let context = text.split("Contexts by self share").nth(1).unwrap();
        assert!(context.contains("DiffTarget.main;DiffTarget.a"), "{text}");
        let picture = std::fs::read_to_string(&svg).expect("the flame graph");
        assert!(picture.starts_with("<?xml") && picture.contains("<svg"), "not an SVG");
        assert!(picture.contains("DiffTarget.a") && picture.contains("pcct diff"), "{}", &picture[..picture.len().min(2000)]);
        let matched = rendered_search(&fixture, &svg, "DiffTarget.a");
        assert!((40.0..=56.0).contains(&matched), "the rendered search matched DiffTarget.a in {matched} % of the samples");
        // The reverse diff says the opposite.
        let reverse = diff(fixture.dir(), &[after.to_str().unwrap(), before.to_str().unwrap(), "--metric", "samples"]);
        let (back_before, back_after) = shares(&reverse, "Methods by total share", "DiffTarget.a");
        assert!(back_after < back_before, "{reverse}");
        assert_no_hs_err(fixture.dir());
    }
}
