//! The human summary of a profile in one resource: hot methods, hot call
//! edges (for time) or hot sites (for allocations and locks: HPROF's
//! sites, the class and the code that allocated or waited), and the top of
//! the calling context tree, written as it goes. Names are escaped as in
//! the text reports (`pcct::names`).

use std::io::{self, Write};

use pcct::export::{xtree, ReportOptions};
use pcct::{names, view};
use pcct::{MethodOrder, MethodTable, Metric, Pcct, Weight};

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

/// The event resources of `total` that are not zero, for the header.
fn events_line(total: &Weight) -> String {
    let parts: Vec<String> = Metric::EVENTS
        .iter()
        .filter(|&&event| total.get(event) > 0)
        .map(|&event| format!("{} {}", event.human(total.get(event)), event.human_unit()))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("\nEvents: {}", parts.join(", "))
    }
}

pub fn write_to(out: &mut dyn Write, tree: &Pcct, methods: &MethodTable, top: usize, metric: Metric) -> io::Result<()> {
    let total = tree.total();
    writeln!(
        out,
        "Profile: {} samples, {:.3} s CPU, {:.3} s wall, {} calling contexts ({} mode, hot lists by {}){}",
        total.samples,
        total.cpu_ns as f64 / 1e9,
        total.wall_ns as f64 / 1e9,
        tree.node_count() - 1,
        tree.config().mode.name(),
        tree.config().metric.name(),
        events_line(&total),
    )?;
    writeln!(out, "Resource: {} ({})", metric.name(), metric.unit())?;
    let order = if metric.is_event() { MethodOrder::Total } else { MethodOrder::SelfWeight };
    writeln!(out, "\n  {:<58}{:>7}{:>9}{:>10}", "Hot methods", "self", "total", "contexts")?;
    for entry in view::hot_methods(tree, methods, top, order, metric) {
        writeln!(
            out,
            "  {:<58}{:>6.1}%{:>8.1}%{:>10}",
            truncate(&entry.method.display, 58),
            entry.self_share * 100.0,
            entry.total_share * 100.0,
            entry.contexts
        )?;
    }
    if metric.is_event() {
        write_sites(out, tree, methods, top, metric)?;
    } else {
        write_edges(out, tree, methods, top, metric)?;
    }
    writeln!(out, "\nCalling context tree (contexts with at least 2% of the total)")?;
    xtree::write_to(out, tree, methods, &ReportOptions { metric, min_cum_share: 0.02, annotate: false })
}

fn site_text(site: Option<view::CallSiteView>) -> String {
    match site {
        Some(site) => match site.line {
            Some(line) => format!(" @{} (line {line})", site.bci),
            None => format!(" @{}", site.bci),
        },
        None => String::new(),
    }
}

fn write_edges(out: &mut dyn Write, tree: &Pcct, methods: &MethodTable, top: usize, metric: Metric) -> io::Result<()> {
    writeln!(out, "\n  {:<72}{:>8}{:>8}", "Hot call edges (caller -> callee @ call site)", "calls*", "share")?;
    for edge in view::hot_edges(tree, methods, top, metric) {
        let text = format!("{} -> {}{}", edge.caller.display, edge.callee.display, site_text(edge.call_site));
        writeln!(out, "  {:<72}{:>8}{:>7.1}%", truncate(&text, 72), edge.weight.samples, edge.share * 100.0)?;
    }
    writeln!(out, "  * samples in which the call was new since the thread's previous sample (the PCCT edge weight)")
}

/// HPROF's sites: the class, the code that allocated or waited (with the
/// line), the share and the accumulated share.
fn write_sites(out: &mut dyn Write, tree: &Pcct, methods: &MethodTable, top: usize, metric: Metric) -> io::Result<()> {
    writeln!(out, "\n  {:<72}{:>8}{:>8}", "Hot sites (class <- code @ allocation or enter)", "self", "accum")?;
    for site in view::sites(tree, methods, top, metric) {
        let class = site.class.as_deref().unwrap_or("-");
        let text = format!("{class} <- {}{}", site.method.display, site_text(site.at));
        writeln!(out, "  {:<72}{:>7.1}%{:>7.1}%", truncate(&text, 72), site.share * 100.0, site.accumulated * 100.0)?;
    }
    Ok(())
}
