//! Collapsed stacks: one line per context with self weight,
//! `root-most;...;leaf value`, the input of flame graph tools. Names are
//! escaped ([`crate::names::escape`]): a `;` in a name is written `\x3B`, a
//! newline `\x0A`, so a name never splits a stack or a line; [`parse`]
//! reverses it.

use std::io::{self, Write};

use super::ReportOptions;
use crate::error::{PcctError, Result};
use crate::method::MethodTable;
use crate::names;
use crate::slot::NodeId;
use crate::tree::Pcct;
use crate::weight::Metric;

/// The separator between frames, escaped inside names.
const SEPARATOR: char = ';';

fn frame_name(methods: &MethodTable, tree: &Pcct, node: NodeId, annotate: bool) -> String {
    let mut name = method_name(methods, tree.method(node));
    if annotate {
        name.push_str(tree.kind(node).suffix());
    }
    name
}

/// How `method` is written in collapsed stacks (escaped): what a flame
/// graph tool sees as the frame's function.
pub fn method_name(methods: &MethodTable, method: crate::MethodId) -> String {
    super::text_name(methods, method, &[SEPARATOR])
}

/// Every context whose self weight in `metric` is positive, as text (see [`write_to`]).
pub fn write(tree: &Pcct, methods: &MethodTable, metric: Metric) -> String {
    super::to_text(|out| write_to(out, tree, methods, &ReportOptions { metric, min_cum_share: 0.0, annotate: false }))
}

/// Writes every context whose self weight in `options.metric` is positive,
/// leaving out whole subtrees whose cum is below `options.min_cum_share`
/// of the total (a flame graph could not draw them anyway), each frame
/// with its kind's suffix when `options.annotate`. Call sites (and kinds,
/// unless annotated) are not part of the text, so two contexts that
/// differ only in them produce two lines with the same frames.
pub fn write_to(out: &mut dyn Write, tree: &Pcct, methods: &MethodTable, options: &ReportOptions) -> io::Result<()> {
    let metric = options.metric;
    // The cum pass is only needed to prune.
    let cum = (options.min_cum_share > 0.0).then(|| tree.cumulative());
    let threshold = options.threshold(&tree.total());
    let kept = |node: NodeId| cum.as_ref().is_none_or(|cum| cum[node.index()].get(metric) >= threshold);
    let root_self = tree.node_weight(NodeId::ROOT).get(metric);
    if root_self > 0 && kept(NodeId::ROOT) {
        writeln!(out, "{} {root_self}", frame_name(methods, tree, NodeId::ROOT, false))?;
    }
    let mut path = String::new();
    // (node, length of `path` before the node was appended; None = entering)
    let mut stack: Vec<(NodeId, Option<usize>)> =
        tree.children(NodeId::ROOT).filter(|&child| kept(child)).map(|child| (child, None)).collect();
    while let Some((node, restore)) = stack.pop() {
        if let Some(length) = restore {
            path.truncate(length);
            continue;
        }
        let before = path.len();
        if before > 0 {
            path.push(SEPARATOR);
        }
        path.push_str(&frame_name(methods, tree, node, options.annotate));
        let value = tree.node_weight(node).get(metric);
        if value > 0 {
            writeln!(out, "{path} {value}")?;
        }
        stack.push((node, Some(before)));
        stack.extend(tree.children(node).filter(|&child| kept(child)).map(|child| (child, None)));
    }
    Ok(())
}

/// Parses collapsed stacks back into `(frames, value)` pairs, names unescaped.
pub fn parse(text: &str) -> Result<Vec<(Vec<String>, u64)>> {
    let mut stacks = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        let bad = |reason: &str| PcctError::BadProfileLine { line: index + 1, reason: reason.to_string() };
        let (frames, value) = line.rsplit_once(' ').ok_or_else(|| bad("no value after the frames"))?;
        let value: u64 = value.parse().map_err(|_| bad("the value is not a whole number"))?;
        let frames = frames
            .split(SEPARATOR)
            .map(|frame| names::unescape(frame).map(|name| name.into_owned()))
            .collect::<Option<_>>()
            .ok_or_else(|| bad("a frame has a backslash that starts no escape (\\\\ or \\xNN)"))?;
        stacks.push((frames, value));
    }
    Ok(stacks)
}
