//! The one line the agent prints at VM death. Tests and users parse it
//! (`tests/src/summary.rs` reads it back), so its wording is an interface:
//! change it only together with that parser.

#![forbid(unsafe_code)]

use std::path::Path;

use pcct::export::Format;
use pcct::Weight;
use pcct_sampler::counters::CountersSnapshot;

/// What became of the profile file, when one was asked for.
pub type Written<'a> = Option<(&'a Path, &'a std::io::Result<Format>)>;

/// The exit line (without the `pcct: ` prefix): samples by fate, the
/// profile's total against the CPU the sampled threads used, why sampling
/// was off if it was, and what became of the file.
pub fn exit_line(counters: &CountersSnapshot, tree_total: Weight, disabled: Option<&str>, written: Written) -> String {
    let credits = match counters.samples_wall_credited {
        0 => String::new(),
        n => format!(", {n} wall-time credits to threads that had not run"),
    };
    let other_threads = match counters.samples_native_threads + counters.sampler_samples {
        0 => String::new(),
        n => format!(", {n} of threads that run no Java code"),
    };
    let mut line = format!(
        "{} samples recorded ({} with a Java stack{other_threads}, {} failed walks{credits}), {} checksum-filtered, {} idle skips, {} dropped; profile total {} samples, {:.3} s CPU of {:.3} s used by the sampled threads",
        counters.samples_recorded + counters.samples_failed + counters.samples_wall_credited + counters.sampler_samples,
        counters.samples_recorded - counters.samples_native_threads,
        counters.samples_failed,
        counters.samples_filtered,
        counters.samples_idle,
        counters.samples_dropped_full,
        tree_total.samples,
        tree_total.cpu_ns as f64 / 1e9,
        counters.cpu_ns_observed as f64 / 1e9,
    );
    if let Some(reason) = disabled {
        line.push_str(&format!("; sampling was off: {reason}"));
    }
    match written {
        Some((path, Ok(format))) => line.push_str(&format!("; wrote {} ({})", path.display(), format.name())),
        Some((path, Err(error))) => line.push_str(&format!("; could not write {}: {error}", path.display())),
        None => {}
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters() -> CountersSnapshot {
        CountersSnapshot {
            samples_recorded: 2522,
            samples_failed: 5,
            samples_filtered: 1495,
            samples_idle: 12068,
            cpu_ns_observed: 2_531_000_000,
            ..CountersSnapshot::default()
        }
    }

    #[test]
    fn the_line_tests_parse() {
        let total = Weight { samples: 2527, cpu_ns: 2_528_000_000, ..Weight::ZERO };
        let written = Ok(Format::Json);
        assert_eq!(
            exit_line(&counters(), total, None, Some((Path::new("/tmp/p.json"), &written))),
            "2527 samples recorded (2522 with a Java stack, 5 failed walks), 1495 checksum-filtered, 12068 idle skips, \
             0 dropped; profile total 2527 samples, 2.528 s CPU of 2.531 s used by the sampled threads; \
             wrote /tmp/p.json (json)"
        );
    }

    #[test]
    fn wall_credits_a_reason_to_be_off_and_a_failed_write_are_said() {
        let counters = CountersSnapshot { samples_wall_credited: 9, ..counters() };
        let failed = Err(std::io::Error::other("disk full"));
        let line = exit_line(&counters, Weight::default(), Some("no signal"), Some((Path::new("/x"), &failed)));
        assert!(
            line.starts_with("2536 samples recorded (2522 with a Java stack, 5 failed walks, 9 wall-time credits"),
            "{line}"
        );
        assert!(line.ends_with("; sampling was off: no signal; could not write /x: disk full"), "{line}");
        assert!(!exit_line(&counters, Weight::default(), None, None).contains("wrote"));
    }
}
