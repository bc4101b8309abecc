//! Sampled stacks written by another profiler, made into a PCCT.
//!
//! One sample per line, `time_ns<TAB>thread<TAB>frame<TAB>frame...`, frames
//! root first, each `class|method|descriptor|bci` or a bracketed
//! pseudo-frame (`[gc_active]`). Empty lines and lines starting with `#` are
//! skipped. The samples are replayed in time order through each thread's
//! marks, as pcct's sampler records its own, each weighing `interval_ns` of
//! CPU and wall time: the tree a profiler of the same samples would build.

use std::collections::HashMap;

use crate::error::{PcctError, Result};
use crate::{Frame, Marks, MethodTable, Pcct, TreeConfig, Weight};

/// One frame of an imported sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportedFrame<'a> {
    Java { class: &'a str, name: &'a str, descriptor: &'a str, bci: i32 },
    Pseudo(&'a str),
}

/// One imported sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackSample<'a> {
    pub time_ns: u64,
    pub thread: &'a str,
    /// Root first.
    pub frames: Vec<ImportedFrame<'a>>,
}

fn bad_line(line: usize, reason: impl Into<String>) -> PcctError {
    PcctError::BadProfileLine { line, reason: reason.into() }
}

/// `text` for an error message: at most 80 characters.
fn shown(text: &str) -> String {
    match text.char_indices().nth(80) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_string(),
    }
}

fn parse_frame(text: &str) -> std::result::Result<ImportedFrame<'_>, String> {
    if text.starts_with('[') && text.ends_with(']') {
        return Ok(ImportedFrame::Pseudo(text));
    }
    let parts: Vec<&str> = text.split('|').collect();
    let [class, name, descriptor, bci] = parts.as_slice() else {
        return Err(format!("frame `{}`: expected class|method|descriptor|bci or a [pseudo-frame]", shown(text)));
    };
    if class.is_empty() || name.is_empty() {
        return Err(format!("frame `{}`: the class and the method must not be empty", shown(text)));
    }
    let bci = bci
        .parse()
        .map_err(|_| format!("frame `{}`: the bytecode index `{}` is not an integer", shown(text), shown(bci)))?;
    Ok(ImportedFrame::Java { class, name, descriptor, bci })
}

/// Parses one line (`number` is 1-based, for errors).
pub fn parse_line(number: usize, line: &str) -> Result<StackSample<'_>> {
    let mut fields = line.split('\t');
    let (Some(time), Some(thread)) = (fields.next(), fields.next()) else {
        return Err(bad_line(number, "expected time_ns<TAB>thread<TAB>frames"));
    };
    let time_ns =
        time.parse().map_err(|_| bad_line(number, format!("time `{}` is not a number of nanoseconds", shown(time))))?;
    let frames = fields
        .filter(|frame| !frame.is_empty())
        .map(|frame| parse_frame(frame).map_err(|reason| bad_line(number, reason)))
        .collect::<Result<_>>()?;
    Ok(StackSample { time_ns, thread, frames })
}

/// Parses every sample of `text`; the first bad line is the error.
pub fn parse(text: &str) -> Result<Vec<StackSample<'_>>> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|(index, line)| parse_line(index + 1, line))
        .collect()
}

/// Replays `samples` (in time order; equal times keep their order) into a
/// new tree of `config`, each weighing `interval_ns`. Samples the tree
/// drops (a full arena) are counted in its stats.
pub fn build(samples: &[StackSample<'_>], interval_ns: u64, config: TreeConfig) -> Result<(Pcct, MethodTable)> {
    let mut order: Vec<&StackSample> = samples.iter().collect();
    order.sort_by_key(|sample| sample.time_ns);
    let mut methods = MethodTable::new();
    let mut tree = Pcct::new(config)?;
    let mut marks: HashMap<&str, Marks> = HashMap::new();
    let mut stack = Vec::new();
    for sample in order {
        stack.clear();
        stack.extend(sample.frames.iter().map(|frame| match *frame {
            ImportedFrame::Java { class, name, descriptor, bci } => {
                Frame::new(methods.intern(class, name, descriptor), bci)
            }
            ImportedFrame::Pseudo(name) => Frame::new(methods.intern_pseudo(name), crate::NO_BCI),
        }));
        let _ = tree.record(marks.entry(sample.thread).or_default(), &stack, Weight::sample(interval_ns, interval_ns));
    }
    Ok((tree, methods))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Metric;

    #[test]
    fn frames_java_and_pseudo_are_parsed() {
        let sample = parse_line(1, "5\tmain\tApp|main|([Ljava/lang/String;)V|7\t[gc_active]").unwrap();
        assert_eq!(sample.time_ns, 5);
        assert_eq!(sample.thread, "main");
        assert_eq!(
            sample.frames,
            vec![
                ImportedFrame::Java { class: "App", name: "main", descriptor: "([Ljava/lang/String;)V", bci: 7 },
                ImportedFrame::Pseudo("[gc_active]"),
            ]
        );
    }

    #[test]
    fn bad_lines_are_named_with_their_reason() {
        let error = |text| parse(text).unwrap_err().to_string();
        assert_eq!(error("1\tt\tA|m|()V|0\nx\tt\n"), "profile text line 2: time `x` is not a number of nanoseconds");
        assert!(error("only-a-time").contains("line 1: expected time_ns<TAB>thread"));
        assert!(error("1\tt\tA|m|()V").contains("expected class|method|descriptor|bci"));
        assert!(error("1\tt\tA|m|()V|x").contains("`x` is not an integer"));
        assert!(error("1\tt\t|m|()V|0").contains("must not be empty"));
    }

    #[test]
    fn long_input_is_shortened_in_errors() {
        let error = parse(&format!("1\tt\t{}", "x".repeat(10_000))).unwrap_err().to_string();
        assert!(error.len() < 200, "{error}");
        assert!(error.contains(&format!("`{}...`", "x".repeat(80))), "{error}");
    }

    #[test]
    fn comments_and_empty_lines_are_skipped() {
        assert_eq!(parse("# a comment\n\n1\tt\tA|m|()V|0\n").unwrap().len(), 1);
    }

    #[test]
    fn samples_replay_in_time_order_through_each_threads_marks() {
        // Out of order on purpose: t1's samples at times 1, 2, 3.
        let text = "3\tt1\tA|main|()V|1\tA|work|()V|4\n\
                    1\tt1\tA|main|()V|1\tA|work|()V|2\n\
                    2\tt2\tA|main|()V|1\t[gc_active]\n\
                    2\tt1\tA|main|()V|1\tA|work|()V|3\n";
        let samples = parse(text).unwrap();
        let (tree, methods) = build(&samples, 1000, TreeConfig::default()).unwrap();
        assert_eq!(tree.total().samples, 4);
        assert_eq!(tree.total().cpu_ns, 4000);
        let work = methods.iter().find(|(_, info)| &*info.name == "work").map(|(id, _)| id).unwrap();
        assert_eq!(tree.method_self_weight(work).get(Metric::Samples), 3);
        // main -> work is one edge, new only in t1's first sample.
        let edge_weights: Vec<u64> =
            tree.nodes().filter(|&node| tree.method(node) == work).map(|node| tree.edge_weight(node).samples).collect();
        assert_eq!(edge_weights, vec![1]);
    }
}
