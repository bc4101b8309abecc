//! The line the agent prints on stderr at VM death (`Agent::shut_down` in
//! `agent/src/agent.rs`):
//!
//! ```text
//! pcct: 2527 samples recorded (2522 with a Java stack, 5 failed walks), 1495 checksum-filtered,
//!       12068 idle skips, 0 dropped; profile total 2527 samples, 2.528 s CPU of 2.531 s used by the
//!       sampled threads; wrote /tmp/p.json (json)
//! ```
//! (one line; "of ... used by the sampled threads" and "wrote ..." are optional).

/// The numbers of the VM-death summary line.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Samples recorded into the tree, failed walks included.
    pub samples: u64,
    pub with_java_stack: u64,
    /// Samples of threads that run no Java code (`threads=all`; else 0).
    pub native_threads: u64,
    pub failed_walks: u64,
    pub checksum_filtered: u64,
    pub idle_skips: u64,
    pub dropped: u64,
    /// The tree's total sample count.
    pub profile_samples: u64,
    /// The tree's total CPU time, seconds (printed with 3 decimals).
    pub profile_cpu_s: f64,
    /// CPU time the sampled threads used while sampled, seconds, if printed.
    pub cpu_used_s: Option<f64>,
    /// `wrote <path> (<format>)`, if the line says so.
    pub wrote: Option<String>,
    /// The whole line.
    pub line: String,
}

/// The number written just before `marker` in `text`.
fn number_before<T: std::str::FromStr>(text: &str, marker: &str) -> Option<T> {
    let end = text.find(marker)?;
    let head = &text[..end];
    let start = head.rfind(|c: char| !(c.is_ascii_digit() || c == '.')).map_or(0, |i| i + 1);
    head[start..].parse().ok()
}

impl Summary {
    /// Parses one summary line; `None` if `line` is not one.
    pub fn parse(line: &str) -> Option<Summary> {
        let line = line.trim();
        if !line.starts_with("pcct: ") || !line.contains(" samples recorded (") {
            return None;
        }
        let (counts, rest) = line.split_once("; profile total ")?;
        let profile = rest.split(';').next()?;
        Some(Summary {
            samples: number_before(counts, " samples recorded")?,
            with_java_stack: number_before(counts, " with a Java stack")?,
            native_threads: number_before(counts, " of threads that run no Java code").unwrap_or(0),
            failed_walks: number_before(counts, " failed walks")?,
            checksum_filtered: number_before(counts, " checksum-filtered")?,
            idle_skips: number_before(counts, " idle skips")?,
            dropped: number_before(counts, " dropped")?,
            profile_samples: number_before(profile, " samples")?,
            profile_cpu_s: number_before(profile, " s CPU")?,
            cpu_used_s: number_before(profile, " s used by the sampled threads"),
            wrote: rest.split("; wrote ").nth(1).map(|text| text.trim().to_string()),
            line: line.to_string(),
        })
    }

    /// The samples the line counts by kind (with a Java stack, of threads
    /// that run no Java code, failed walks): all of `samples` when the
    /// counts are conserved.
    pub fn by_kind(&self) -> u64 {
        self.with_java_stack + self.native_threads + self.failed_walks
    }

    /// The last summary line in `stderr`.
    pub fn find(stderr: &str) -> Option<Summary> {
        stderr.lines().rev().find_map(Summary::parse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_agents_line() {
        let stderr = "something else\npcct: 2527 samples recorded (2522 with a Java stack, 5 failed walks), \
                      1495 checksum-filtered, 12068 idle skips, 0 dropped; profile total 2527 samples, 2.528 s CPU \
                      of 2.531 s used by the sampled threads; wrote /tmp/x/p.json (json)\n";
        let summary = Summary::find(stderr).unwrap();
        assert_eq!((summary.samples, summary.with_java_stack, summary.failed_walks), (2527, 2522, 5));
        assert_eq!(summary.native_threads, 0);
        assert_eq!((summary.checksum_filtered, summary.idle_skips, summary.dropped), (1495, 12068, 0));
        assert_eq!(summary.profile_samples, 2527);
        assert!((summary.profile_cpu_s - 2.528).abs() < 1e-9);
        assert_eq!(summary.cpu_used_s, Some(2.531));
        assert_eq!(summary.wrote.as_deref(), Some("/tmp/x/p.json (json)"));
    }

    #[test]
    fn threads_that_run_no_java_code_are_counted() {
        let line = "pcct: 120500 samples recorded (98203 with a Java stack, 22275 of threads that run no Java code, \
                    22 failed walks), 1 checksum-filtered, 96 idle skips, 0 dropped; profile total 120500 samples, \
                    125.598 s CPU of 103.742 s used by the sampled threads";
        let summary = Summary::parse(line).unwrap();
        assert_eq!((summary.with_java_stack, summary.native_threads, summary.failed_walks), (98203, 22275, 22));
        assert_eq!(summary.samples, summary.by_kind());
    }

    #[test]
    fn a_line_without_a_file_and_other_lines() {
        let line = "pcct: 3 samples recorded (3 with a Java stack, 0 failed walks), 0 checksum-filtered, \
                    7 idle skips, 0 dropped; profile total 3 samples, 0.003 s CPU";
        let summary = Summary::parse(line).unwrap();
        assert_eq!((summary.samples, summary.idle_skips, summary.wrote, summary.cpu_used_s), (3, 7, None, None));
        assert_eq!(Summary::parse("pcct: serving http://127.0.0.1:1234"), None);
        assert_eq!(Summary::find("no agent here\n"), None);
    }
}
