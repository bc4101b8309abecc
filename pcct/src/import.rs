//! Sampled stacks written by another profiler, made into a PCCT.
//!
//! One sample per line, `time_ns<TAB>thread<TAB>frame<TAB>frame...`, frames
//! root first, each `class|method|descriptor|bci` or a bracketed
//! pseudo-frame (`[gc_active]`). Empty lines and lines starting with `#` are
//! skipped. The samples are replayed in time order through each thread's
//! marks, as pcct's sampler records its own, each weighing `interval_ns` of
//! CPU and wall time: the tree a profiler of the same samples would build.
//! Lines are given one at a time ([`Samples::add_line`]) and only their
//! interned frames are kept, so the text is never held whole.

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

/// Samples read so far, their frames interned as they come, so the text is
/// never kept (a frame costs 8 bytes, its text 30 or more): what
/// [`Samples::build`] replays. Lines are given one at a time.
#[derive(Debug, Default)]
pub struct Samples {
    methods: MethodTable,
    threads: HashMap<String, u32>,
    frames: Vec<Frame>,
    samples: Vec<Pending>,
}

/// One sample: its time, thread and frames (`frames[start..end]`).
#[derive(Clone, Copy, Debug)]
struct Pending {
    time_ns: u64,
    thread: u32,
    start: usize,
    end: usize,
}

impl Samples {
    pub fn new() -> Samples {
        Samples::default()
    }

    /// Samples kept so far.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Parses line `number` (1-based, for errors) and keeps its sample;
    /// empty lines and `#` comments are skipped.
    pub fn add_line(&mut self, number: usize, line: &str) -> Result<()> {
        if line.trim().is_empty() || line.starts_with('#') {
            return Ok(());
        }
        let sample = parse_line(number, line)?;
        let thread = match self.threads.get(sample.thread) {
            Some(&thread) => thread,
            None => {
                let thread = self.threads.len() as u32;
                self.threads.insert(sample.thread.to_string(), thread);
                thread
            }
        };
        let start = self.frames.len();
        for frame in &sample.frames {
            let frame = match *frame {
                ImportedFrame::Java { class, name, descriptor, bci } => {
                    Frame::new(self.methods.intern(class, name, descriptor), bci)
                }
                ImportedFrame::Pseudo(name) => Frame::new(self.methods.intern_pseudo(name), crate::NO_BCI),
            };
            self.frames.push(frame);
        }
        self.samples.push(Pending { time_ns: sample.time_ns, thread, start, end: self.frames.len() });
        Ok(())
    }

    /// Replays the samples (in time order; equal times keep their order)
    /// into a new tree of `config`, each weighing `interval_ns`. Samples
    /// the tree drops (a full arena) are counted in its stats.
    pub fn build(self, interval_ns: u64, config: TreeConfig) -> Result<(Pcct, MethodTable)> {
        let mut order = self.samples;
        order.sort_by_key(|sample| sample.time_ns);
        let mut tree = Pcct::new(config)?;
        let mut marks: Vec<Marks> = (0..self.threads.len()).map(|_| Marks::new()).collect();
        for sample in order {
            let stack = &self.frames[sample.start..sample.end];
            let weight = Weight::sample(interval_ns, interval_ns);
            let _ = tree.record(&mut marks[sample.thread as usize], stack, weight);
        }
        Ok((tree, self.methods))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Metric;

    /// Every line of `text`, as the `pcct import-stacks` command gives them.
    fn parse(text: &str) -> Result<Samples> {
        let mut samples = Samples::new();
        for (index, line) in text.lines().enumerate() {
            samples.add_line(index + 1, line)?;
        }
        Ok(samples)
    }

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
        let (tree, methods) = parse(text).unwrap().build(1000, TreeConfig::default()).unwrap();
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
