//! The sites report (HPROF's `SITES`): calling contexts ranked by their
//! self weight in one resource, with each one's share and the shares of
//! it and every heavier one together (`accum`). For allocations and
//! monitors a site is a (class, context) pair: the allocated type or the
//! monitor's class, which the tree keeps as a leaf of kind `type`, and the
//! code that allocated or waited, with the bytecode index and line of the
//! allocation or enter. For a time resource a site is a context alone.
//!
//! ```text
//! sites  metric: alloc_bytes (bytes)  total: 1048576000  sites: 3  pruned below 0.00% self
//!  rank    self   accum            value        count  class  at  context
//!     1  60.00%  60.00%        629145600       614400  byte[]  @12 (line 40)  Main.main;Alloc.big
//! ```
//!
//! `count` is the resource's count ([`crate::Metric::count`]: objects for
//! allocations, enters for monitors, samples for time); `context` is the
//! path from the outermost frame to the code, written as collapsed stacks
//! write it (names escaped, `;` between frames).

use std::io::{self, Write};

use super::{human, percent, text_name, unit, ReportOptions};
use crate::method::{MethodKind, MethodTable};
use crate::slot::NodeId;
use crate::tree::Pcct;

/// The report as text (see [`write_to`]).
pub fn write(tree: &Pcct, methods: &MethodTable, options: &ReportOptions) -> String {
    super::to_text(|out| write_to(out, tree, methods, options))
}

/// Writes every site whose self share in `options.metric` is at least
/// `options.min_cum_share`, heaviest first.
pub fn write_to(out: &mut dyn Write, tree: &Pcct, methods: &MethodTable, options: &ReportOptions) -> io::Result<()> {
    let metric = options.metric;
    let total = tree.total().get(metric);
    let threshold = options.threshold(&tree.total()).max(1);
    let mut sites: Vec<NodeId> = tree.nodes().filter(|&node| tree.node_value(node, metric) >= threshold).collect();
    sites.sort_by(|&a, &b| tree.node_value(b, metric).cmp(&tree.node_value(a, metric)).then(a.cmp(&b)));
    writeln!(
        out,
        "sites  metric: {} ({})  total: {}  sites: {}  pruned below {:.2}% self",
        metric.name(),
        unit(metric),
        human(metric, total),
        sites.len(),
        options.min_cum_share * 100.0
    )?;
    writeln!(
        out,
        "{:>5} {:>7} {:>7} {:>16} {:>12}  class  at  context",
        "rank",
        "self",
        "accum",
        "value",
        metric.count().name()
    )?;
    let mut accumulated = 0;
    for (rank, node) in sites.into_iter().enumerate() {
        let weight = tree.node_weight(node);
        accumulated += weight.get(metric);
        let (class, code) = match tree.parent(node) {
            Some(parent) if methods.get(tree.method(node)).kind == MethodKind::Type => {
                (text_name(methods, tree.method(node), &[]), parent)
            }
            _ => ("-".to_string(), node),
        };
        writeln!(
            out,
            "{:>5} {:>6.2}% {:>6.2}% {:>16} {:>12}  {class}  {}  {}",
            rank + 1,
            percent(weight.get(metric), total),
            percent(accumulated, total),
            human(metric, weight.get(metric)),
            weight.get(metric.count()),
            at_text(tree, methods, node, code),
            context_text(tree, methods, code),
        )?;
    }
    Ok(())
}

/// `@bci (line N)` of the allocation or enter (the call site of the class
/// frame), `-` for a context without a class.
fn at_text(tree: &Pcct, methods: &MethodTable, node: NodeId, code: NodeId) -> String {
    if node == code {
        return "-".to_string();
    }
    let text = super::call_site_text(tree, methods, node);
    if text.is_empty() {
        "-".to_string()
    } else {
        text.trim_start().to_string()
    }
}

/// The path from the outermost frame to `node`, collapsed-stack style.
fn context_text(tree: &Pcct, methods: &MethodTable, node: NodeId) -> String {
    if node == NodeId::ROOT {
        return text_name(methods, tree.method(node), &[';']);
    }
    let steps: Vec<String> =
        tree.path(node).into_iter().map(|step| text_name(methods, tree.method(step), &[';'])).collect();
    steps.join(";")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Frame, Marks, Metric, TreeConfig, Weight};

    #[test]
    fn sites_rank_classes_under_their_code_with_shares_and_accum() {
        let mut methods = MethodTable::new();
        let main = methods.intern("app.Main", "main", "()V");
        let big = methods.intern("app.Main", "big", "()V");
        methods.set_lines(big, vec![crate::LineEntry { start_bci: 0, line: 40 }]);
        let bytes = methods.intern_type("byte[]");
        let object = methods.intern_type("java.lang.Object");
        let mut tree = Pcct::new(TreeConfig::default()).unwrap();
        let f = Frame::new;
        for _ in 0..3 {
            tree.record_event(&[f(main, 4), f(big, 12), f(bytes, -1)], Weight::allocation(200, 2)).unwrap();
        }
        tree.record_event(&[f(main, 7), f(object, -1)], Weight::allocation(400, 25)).unwrap();
        tree.record(&mut Marks::new(), &[f(main, 1)], Weight::sample(1_000, 1_000)).unwrap();

        let options = ReportOptions { metric: Metric::AllocBytes, min_cum_share: 0.0, annotate: false };
        let text = write(&tree, &methods, &options);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("total: 1000") && lines[0].contains("sites: 2"), "{text}");
        assert!(lines[2].contains("60.00%  60.00%") && lines[2].contains("byte[]"), "{text}");
        assert!(lines[2].contains("@12 (line 40)") && lines[2].ends_with("app.Main.main;app.Main.big"), "{text}");
        assert!(lines[3].contains("40.00% 100.00%") && lines[3].contains("java.lang.Object"), "{text}");
        assert_eq!(lines.len(), 4, "the CPU sample is no allocation site: {text}");

        let cpu = write(&tree, &methods, &ReportOptions { metric: Metric::CpuNs, min_cum_share: 0.0, annotate: false });
        assert!(cpu.lines().nth(2).is_some_and(|line| line.contains(" -  -  app.Main.main")), "{cpu}");
    }
}
