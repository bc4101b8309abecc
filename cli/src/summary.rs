//! The human summary of a profile: hot methods, hot call edges, and the
//! top of the calling context tree, written as it goes. Names are escaped
//! as in the text reports (`pcct::names`).

use std::io::{self, Write};

use pcct::export::{xtree, ReportOptions};
use pcct::{names, view};
use pcct::{MethodOrder, MethodTable, Metric, Pcct};

/// `text` escaped, then its last `width` characters.
fn truncate(text: &str, width: usize) -> String {
    let text = names::escape(text, &[]);
    if text.chars().count() <= width {
        text.to_string()
    } else {
        let tail: String = text.chars().rev().take(width - 1).collect::<Vec<_>>().into_iter().rev().collect();
        format!("…{tail}")
    }
}

pub fn write_to(out: &mut dyn Write, tree: &Pcct, methods: &MethodTable, top: usize, metric: Metric) -> io::Result<()> {
    let total = tree.total();
    writeln!(
        out,
        "Profile: {} samples, {:.3} s CPU, {:.3} s wall, {} calling contexts ({} mode, hot lists by {})",
        total.samples,
        total.cpu_ns as f64 / 1e9,
        total.wall_ns as f64 / 1e9,
        tree.node_count() - 1,
        tree.config().mode.name(),
        tree.config().metric.name(),
    )?;
    writeln!(out, "\n  {:<58}{:>7}{:>9}{:>10}", "Hot methods", "self", "total", "contexts")?;
    for entry in view::hot_methods(tree, methods, top, MethodOrder::SelfWeight) {
        writeln!(
            out,
            "  {:<58}{:>6.1}%{:>8.1}%{:>10}",
            truncate(&entry.method.display, 58),
            entry.self_share * 100.0,
            entry.total_share * 100.0,
            entry.contexts
        )?;
    }
    writeln!(out, "\n  {:<72}{:>8}{:>8}", "Hot call edges (caller -> callee @ call site)", "calls*", "share")?;
    for edge in view::hot_edges(tree, methods, top) {
        let site = match edge.call_site {
            Some(site) => match site.line {
                Some(line) => format!(" @{} (line {line})", site.bci),
                None => format!(" @{}", site.bci),
            },
            None => String::new(),
        };
        let text = format!("{} -> {}{}", edge.caller.display, edge.callee.display, site);
        writeln!(out, "  {:<72}{:>8}{:>7.1}%", truncate(&text, 72), edge.weight.samples, edge.share * 100.0)?;
    }
    writeln!(out, "  * samples in which the call was new since the thread's previous sample (the PCCT edge weight)")?;
    writeln!(out, "\nCalling context tree (contexts with at least 2% of the total)")?;
    xtree::write_to(out, tree, methods, &ReportOptions { metric, min_cum_share: 0.02 })
}
