//! The documentation holds together: every relative link in every tracked
//! Markdown file resolves, README.md and BENCHMARKS.md keep their sizes,
//! and no document speaks of the work process.
//!
//! - Links: `[text](path)`, `[text](path#anchor)`, `[text](#anchor)` and
//!   reference definitions `[name]: path`, outside code blocks and code
//!   spans. `path` is relative to the file (or, starting with `/`, to the
//!   repository) and must name a file or directory that exists. An anchor
//!   into a Markdown file must name one of its headings, slugged as GitHub
//!   does: lower case, spaces to `-`, punctuation other than `-` and `_`
//!   dropped, `-1`, `-2`, ... after a repeated heading. Links with a scheme
//!   (`https:`, `mailto:`) are not followed.
//! - Sizes: README.md at most 300 lines (a guide read in ten minutes),
//!   BENCHMARKS.md at most 600 (current results only).
//! - Words: no `stop N` (a unit of work, not of the product) and no
//!   `/work/` path (a machine's, not the repository's), in the Markdown
//!   and in every other tracked text file (code, comments, scripts) but
//!   this one, whose own examples name them.
//!
//! The Markdown files are those `git ls-files '*.md'` lists; without git,
//! those found walking the tree (`target/` and hidden directories left out).
//! A failure lists every offender, file and line.

#![forbid(unsafe_code)]

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

const README_MAX_LINES: usize = 300;
const BENCHMARKS_MAX_LINES: usize = 600;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ is inside the repository").to_path_buf()
}

/// Tracked Markdown files, relative to the repository.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let listed = Command::new("git").args(["ls-files", "-z", "--", "*.md"]).current_dir(root).output();
    if let Ok(output) = listed {
        if output.status.success() {
            let text = String::from_utf8_lossy(&output.stdout);
            let files: Vec<PathBuf> = text.split('\0').filter(|name| !name.is_empty()).map(PathBuf::from).collect();
            if !files.is_empty() {
                return files;
            }
        }
    }
    let mut files = Vec::new();
    walk(root, Path::new(""), &mut files);
    files.sort();
    files
}

fn walk(root: &Path, relative: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(root.join(relative)) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let path = relative.join(&*name);
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            let hidden = name.starts_with('.');
            let build_output = relative.as_os_str().is_empty() && name == "target";
            if !hidden && !build_output {
                walk(root, &path, files);
            }
        } else if name.ends_with(".md") {
            files.push(path);
        }
    }
}

/// The lines of a Markdown file outside fenced code blocks, numbered from 1.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<(char, usize)> = None;
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        if let (Some(c), true) = (marker, indent <= 3) {
            let run = trimmed.chars().take_while(|x| *x == c).count();
            if run >= 3 {
                match fence {
                    None => {
                        fence = Some((c, run));
                        continue;
                    }
                    Some((open, length)) if open == c && run >= length && trimmed[run..].trim().is_empty() => {
                        fence = None;
                        continue;
                    }
                    Some(_) => {}
                }
            }
        }
        if fence.is_none() {
            lines.push((index + 1, line));
        }
    }
    lines
}

/// `line` with its code spans (`` `...` ``, ``` `` ... `` ```) blanked out.
fn without_code_spans(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|c| **c == '`').count();
        // The closing run of exactly the same length.
        let mut j = i + run;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let other = chars[j..].iter().take_while(|c| **c == '`').count();
                if other == run {
                    close = Some(j);
                    break;
                }
                j += other;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                out.extend(std::iter::repeat_n(' ', end + run - i));
                i = end + run;
            }
            None => {
                out.extend(&chars[i..i + run]);
                i += run;
            }
        }
    }
    out
}

/// Link destinations on one line of prose: inline links and images, and a
/// reference definition.
fn destinations(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut found = Vec::new();
    let trimmed = line.trim_start();
    if let Some(rest) = trimmed.strip_prefix('[') {
        if let Some(close) = rest.find("]:") {
            if !rest[..close].contains('[') {
                if let Some(target) = rest[close + 2..].split_whitespace().next() {
                    found.push(target.trim_matches(|c| c == '<' || c == '>').to_string());
                }
            }
        }
    }
    let bytes = line.as_bytes();
    let mut from = 0;
    while let Some(offset) = line[from..].find("](") {
        let start = from + offset + 2;
        from = start;
        if !line[..start].contains('[') {
            continue;
        }
        // The destination ends at the parenthesis that balances the opening one.
        let mut depth = 1;
        let mut end = None;
        for (k, byte) in bytes.iter().enumerate().skip(start) {
            match byte {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(k);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else { continue };
        let inner = line[start..end].trim();
        let target = if let Some(rest) = inner.strip_prefix('<') {
            rest.split('>').next().unwrap_or("")
        } else {
            inner.split_whitespace().next().unwrap_or("")
        };
        found.push(target.to_string());
        from = end;
    }
    found
}

fn has_scheme(target: &str) -> bool {
    let scheme: String = target.chars().take_while(|c| c.is_ascii_alphanumeric() || "+-.".contains(*c)).collect();
    !scheme.is_empty() && target[scheme.len()..].starts_with(':')
}

/// `%20` and the like, as a browser reads a path.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(byte) = hex.and_then(|hex| u8::from_str_radix(hex, 16).ok()) {
                out.push(byte);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A heading's anchor as GitHub makes it (before the `-N` of repeats).
fn slug(heading: &str) -> String {
    // Rendered text: code spans keep their content, links their text.
    let mut text = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find('[') {
        match rest[open..].find("](").map(|k| open + k) {
            Some(close) if !rest[open + 1..close].contains('[') => {
                let after = &rest[close + 2..];
                let Some(end) = after.find(')') else { break };
                text.push_str(&rest[..open]);
                text.push_str(&rest[open + 1..close]);
                rest = &after[end + 1..];
            }
            _ => break,
        }
    }
    text.push_str(rest);
    text.to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors a Markdown file offers: its headings' slugs, and `id`/`name`
/// attributes of HTML in it.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut all = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let trimmed = line.trim_start();
        let level = trimmed.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&level) && (trimmed.len() == level || trimmed[level..].starts_with(' ')) {
            let heading = trimmed[level..].trim().trim_end_matches('#').trim();
            let base = slug(heading);
            let count = seen.entry(base.clone()).or_insert(0);
            all.insert(if *count == 0 { base.clone() } else { format!("{base}-{count}") });
            *count += 1;
        }
        for attribute in ["id=\"", "name=\""] {
            let mut rest = line;
            while let Some(at) = rest.find(attribute) {
                rest = &rest[at + attribute.len()..];
                if let Some(end) = rest.find('"') {
                    all.insert(rest[..end].to_string());
                }
            }
        }
    }
    all
}

/// `path` without `.` and `..` steps; `None` when it climbs out of the repository.
fn normalised(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(part) => out.push(part),
            Component::RootDir | Component::Prefix(_) => {}
        }
    }
    Some(out)
}

/// Every broken link of `file`, as "file:line: why".
fn broken_links(root: &Path, file: &Path, text: &str, cache: &mut HashMap<PathBuf, BTreeSet<String>>) -> Vec<String> {
    let mut broken = Vec::new();
    for (number, line) in prose_lines(text) {
        for target in destinations(line) {
            if target.is_empty() || has_scheme(&target) || target.starts_with("//") {
                continue;
            }
            let (path_part, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let path_part = path_part.split('?').next().unwrap_or("");
            let place = format!("{}:{number}: ({target})", file.display());
            let relative = if path_part.is_empty() {
                Some(file.to_path_buf())
            } else if let Some(from_root) = path_part.strip_prefix('/') {
                normalised(Path::new(&percent_decoded(from_root)))
            } else {
                normalised(&file.parent().unwrap_or(Path::new("")).join(percent_decoded(path_part)))
            };
            let Some(relative) = relative else {
                broken.push(format!("{place} leaves the repository"));
                continue;
            };
            let resolved = root.join(&relative);
            if !resolved.exists() {
                broken.push(format!("{place} {} does not exist", relative.display()));
                continue;
            }
            let Some(anchor) = anchor.filter(|anchor| !anchor.is_empty()) else { continue };
            if resolved.is_dir() || resolved.extension().is_none_or(|ext| ext != "md") {
                continue;
            }
            let known = cache
                .entry(relative.clone())
                .or_insert_with(|| anchors(&fs::read_to_string(&resolved).unwrap_or_default()));
            let anchor = percent_decoded(anchor).to_lowercase();
            if !known.contains(&anchor) {
                broken.push(format!("{place} {} has no heading #{anchor}", relative.display()));
            }
        }
    }
    broken
}

/// Where `text` names `stop N` (any case, whole words) or a `/work/` path.
fn process_words(file: &Path, text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let lower = line.to_lowercase();
        let mut from = 0;
        while let Some(at) = lower[from..].find("stop ").map(|k| from + k) {
            from = at + 1;
            let before_ok = lower[..at].chars().next_back().is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            let digits: String = lower[at + 5..].chars().take_while(char::is_ascii_digit).collect();
            let after = lower[at + 5 + digits.len()..].chars().next();
            let after_ok = after.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            if before_ok && !digits.is_empty() && after_ok {
                let words = line.get(at..at + 5 + digits.len()).unwrap_or("stop N");
                found.push(format!("{}:{}: \"{words}\"", file.display(), index + 1));
            }
        }
        let machine_path = line.match_indices("/work/").any(|(at, _)| {
            // A path that starts there, not a repository path ending in
            // `work/` (such as `/benches/work/`).
            line[..at].chars().next_back().is_none_or(|c| !(c.is_alphanumeric() || "_-./".contains(c)))
        });
        if machine_path {
            found.push(format!("{}:{}: a /work/ path", file.display(), index + 1));
        }
    }
    found
}

fn line_count(root: &Path, name: &str) -> usize {
    fs::read_to_string(root.join(name)).unwrap_or_else(|error| panic!("{name}: {error}")).lines().count()
}

#[test]
fn every_relative_link_in_the_markdown_resolves() {
    let root = repository();
    let files = markdown_files(&root);
    assert!(files.iter().any(|file| file == Path::new("README.md")), "README.md is not among {files:?}");
    let mut cache = HashMap::new();
    let mut broken = Vec::new();
    for file in &files {
        let text = fs::read_to_string(root.join(file)).unwrap_or_else(|error| panic!("{}: {error}", file.display()));
        broken.extend(broken_links(&root, file, &text, &mut cache));
    }
    assert!(
        broken.is_empty(),
        "{} broken link(s) in {} Markdown files:\n{}",
        broken.len(),
        files.len(),
        broken.join("\n")
    );
}

#[test]
fn readme_and_benchmarks_keep_their_sizes() {
    let root = repository();
    let readme = line_count(&root, "README.md");
    let benchmarks = line_count(&root, "BENCHMARKS.md");
    let mut over = Vec::new();
    if readme > README_MAX_LINES {
        over.push(format!("README.md has {readme} lines, at most {README_MAX_LINES}: move the depth to docs/"));
    }
    if benchmarks > BENCHMARKS_MAX_LINES {
        over.push(format!(
            "BENCHMARKS.md has {benchmarks} lines, at most {BENCHMARKS_MAX_LINES}: drop superseded results (git keeps them)"
        ));
    }
    assert!(over.is_empty(), "{}", over.join("\n"));
}

#[test]
fn no_markdown_speaks_of_the_work_process() {
    let root = repository();
    let mut found = Vec::new();
    for file in markdown_files(&root) {
        let text = fs::read_to_string(root.join(&file)).unwrap_or_else(|error| panic!("{}: {error}", file.display()));
        found.extend(process_words(&file, &text));
    }
    assert!(found.is_empty(), "work-process words in the documentation:\n{}", found.join("\n"));
}

#[test]
fn no_tracked_file_speaks_of_the_work_process() {
    let root = repository();
    let listed = Command::new("git").args(["ls-files", "-z"]).current_dir(&root).output();
    let Ok(output) = listed.map_err(|error| eprintln!("no git ({error}): only the Markdown is checked")) else {
        return;
    };
    let this_file = Path::new("tests/tests/docs_links.rs");
    let mut found = Vec::new();
    for name in String::from_utf8_lossy(&output.stdout).split('\0').filter(|name| !name.is_empty()) {
        let file = Path::new(name);
        // Binary files and this test's own examples are not read.
        let Ok(text) = fs::read_to_string(root.join(file)) else { continue };
        if file != this_file {
            found.extend(process_words(file, &text));
        }
    }
    assert!(found.is_empty(), "work-process words in tracked files:\n{}", found.join("\n"));
}

#[test]
fn the_checks_read_markdown_as_github_does() {
    assert_eq!(slug("Overhead: agent CPU"), "overhead-agent-cpu");
    assert_eq!(slug("javac's two kinds of rounds"), "javacs-two-kinds-of-rounds");
    assert_eq!(slug("1. Profile your own JVM"), "1-profile-your-own-jvm");
    assert_eq!(slug("The walk (`sampler/src/hotspot/`)"), "the-walk-samplersrchotspot");
    assert_eq!(slug("See [the docs](docs/x.md) now"), "see-the-docs-now");
    let twice = anchors("# A\n\n```\n# not a heading\n```\n## A\n### a_b-c\n");
    assert_eq!(twice, ["a", "a-1", "a_b-c"].into_iter().map(String::from).collect());
    assert_eq!(
        destinations("see [a](x.md#h), ![i](img.png \"t\"), `[no](code.md)` and [b](<y z.md>)"),
        ["x.md#h", "img.png", "y z.md"]
    );
    assert_eq!(destinations("[ref]: docs/a.md"), ["docs/a.md"]);
    assert_eq!(destinations("[f(x)](f.md) and [g](g_(1).md)"), ["f.md", "g_(1).md"]);
    assert!(has_scheme("https://example.com") && has_scheme("mailto:a@b") && !has_scheme("docs/a.md"));
    let lines = prose_lines("a\n```\n[x](gone.md)\n```\nb");
    assert_eq!(lines, [(1, "a"), (5, "b")]);
    let words = process_words(
        Path::new("x.md"),
        "Stop 12 and stop 3.\nnonstop 4, stop it, stop 5x\ncd /work/x\n/benches/work/",
    );
    assert_eq!(words, ["x.md:1: \"Stop 12\"", "x.md:1: \"stop 3\"", "x.md:3: a /work/ path"]);
}
