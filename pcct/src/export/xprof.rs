//! arcflow's xprof report: a flat profile, one line per method with base
//! (self) and cum (total, recursion counted once), heaviest cum first.

use std::io::{self, Write};

use super::{human, percent, text_name, unit, ReportOptions};
use crate::method::MethodTable;
use crate::tree::Pcct;

/// The report as text (see [`write_to`]).
pub fn write(tree: &Pcct, methods: &MethodTable, options: &ReportOptions) -> String {
    super::to_text(|out| write_to(out, tree, methods, options))
}

pub fn write_to(out: &mut dyn Write, tree: &Pcct, methods: &MethodTable, options: &ReportOptions) -> io::Result<()> {
    let metric = options.metric;
    let total_weight = tree.total();
    let total = total_weight.get(metric);
    let threshold = options.threshold(&total_weight);
    let mut rows = tree.method_totals();
    rows.retain(|row| row.total.get(metric) >= threshold && row.total.get(metric) > 0);
    rows.sort_by(|a, b| {
        b.total.get(metric).cmp(&a.total.get(metric)).then(b.self_weight.get(metric).cmp(&a.self_weight.get(metric)))
    });
    writeln!(
        out,
        "xprof  metric: {} ({})  total: {}  samples: {}  methods: {}  pruned below {:.2}% cum",
        metric.name(),
        unit(metric),
        human(metric, total),
        total_weight.samples,
        rows.len(),
        options.min_cum_share * 100.0
    )?;
    writeln!(out, "{:>12} {:>7} {:>12} {:>7} {:>9}  name", "base", "base%", "cum", "cum%", "contexts")?;
    for row in rows {
        let base = row.self_weight.get(metric);
        let cum = row.total.get(metric);
        writeln!(
            out,
            "{:>12} {:>6.2}% {:>12} {:>6.2}% {:>9}  {}",
            human(metric, base),
            percent(base, total),
            human(metric, cum),
            percent(cum, total),
            row.contexts,
            text_name(methods, row.method, &[])
        )?;
    }
    Ok(())
}
