//! The human summary of a profile: hot methods, hot call edges, and the
//! top of the calling context tree.

use std::fmt::Write as _;

use pcct::export::{xtree, ReportOptions};
use pcct::view;
use pcct::{MethodOrder, MethodTable, Metric, Pcct};

fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_string()
    } else {
        let tail: String = text.chars().rev().take(width - 1).collect::<Vec<_>>().into_iter().rev().collect();
        format!("…{tail}")
    }
}

pub fn write(tree: &Pcct, methods: &MethodTable, top: usize, metric: Metric) -> String {
    let mut out = String::new();
    let total = tree.total();
    let _ = writeln!(
        out,
        "Profile: {} samples, {:.3} s CPU, {:.3} s wall, {} calling contexts ({} mode, hot lists by {})",
        total.samples,
        total.cpu_ns as f64 / 1e9,
        total.wall_ns as f64 / 1e9,
        tree.node_count() - 1,
        tree.config().mode.name(),
        tree.config().metric.name(),
    );
    let _ = writeln!(out, "\n  {:<58}{:>7}{:>9}{:>10}", "Hot methods", "self", "total", "contexts");
    for entry in view::hot_methods(tree, methods, top, MethodOrder::SelfWeight) {
        let _ = writeln!(
            out,
            "  {:<58}{:>6.1}%{:>8.1}%{:>10}",
            truncate(&entry.method.display, 58),
            entry.self_share * 100.0,
            entry.total_share * 100.0,
            entry.contexts
        );
    }
    let _ = writeln!(out, "\n  {:<72}{:>8}{:>8}", "Hot call edges (caller -> callee @ call site)", "calls*", "share");
    for edge in view::hot_edges(tree, methods, top) {
        let site = match edge.call_site {
            Some(site) => match site.line {
                Some(line) => format!(" @{} (line {line})", site.bci),
                None => format!(" @{}", site.bci),
            },
            None => String::new(),
        };
        let text = format!("{} -> {}{}", edge.caller.display, edge.callee.display, site);
        let _ = writeln!(out, "  {:<72}{:>8}{:>7.1}%", truncate(&text, 72), edge.weight.samples, edge.share * 100.0);
    }
    let _ = writeln!(
        out,
        "  * samples in which the call was new since the thread's previous sample (the PCCT edge weight)"
    );
    let _ = writeln!(out, "\nCalling context tree (contexts with at least 2% of the total)");
    out.push_str(&xtree::write(tree, methods, &ReportOptions { metric, min_cum_share: 0.02 }));
    out
}
