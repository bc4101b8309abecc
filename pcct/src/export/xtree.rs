//! arcflow's xtree report: the tree itself, indented, with calls, base and
//! cum per context in one resource. `calls` is the PCCT edge weight in the
//! resource's count ([`crate::Metric::count`]): for time, the number of
//! samples in which the call into this context was new; for allocations
//! and monitors, the objects or enters through it.

use std::io::{self, Write};

use super::{call_site_text, children_by_cum, edge_weight, human, percent, text_name, unit, ReportOptions};
use crate::method::MethodTable;
use crate::slot::NodeId;
use crate::tree::Pcct;

/// Indentation stops growing here so very deep trees stay readable.
const MAX_INDENT: usize = 64;

/// The report as text (see [`write_to`]).
pub fn write(tree: &Pcct, methods: &MethodTable, options: &ReportOptions) -> String {
    super::to_text(|out| write_to(out, tree, methods, options))
}

pub fn write_to(out: &mut dyn Write, tree: &Pcct, methods: &MethodTable, options: &ReportOptions) -> io::Result<()> {
    let metric = options.metric;
    let cum = tree.cumulative();
    let total = cum[0].get(metric);
    let threshold = options.threshold(&cum[0]);
    writeln!(
        out,
        "xtree  metric: {} ({})  total: {}  samples: {}  nodes: {}  pruned below {:.2}% cum",
        metric.name(),
        unit(metric),
        human(metric, total),
        cum[0].samples,
        tree.node_count(),
        options.min_cum_share * 100.0
    )?;
    writeln!(out, "{:>5} {:>10} {:>12} {:>12} {:>7}  name", "lvl", "calls", "base", "cum", "cum%")?;
    let mut stack = vec![NodeId::ROOT];
    while let Some(node) = stack.pop() {
        let node_cum = cum[node.index()].get(metric);
        if node != NodeId::ROOT && (node_cum < threshold || node_cum == 0) {
            continue;
        }
        let depth = tree.depth(node);
        writeln!(
            out,
            "{:>5} {:>10} {:>12} {:>12} {:>6.2}%  {}{}{}",
            depth,
            edge_weight(tree, &cum, node).get(metric.count()),
            human(metric, tree.node_weight(node).get(metric)),
            human(metric, node_cum),
            percent(node_cum, total),
            " ".repeat(depth.min(MAX_INDENT)),
            text_name(methods, tree.method(node), &[]),
            call_site_text(tree, methods, node)
        )?;
        let children = children_by_cum(tree, &cum, node, metric);
        stack.extend(children.into_iter().rev());
    }
    Ok(())
}
