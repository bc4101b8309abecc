//! arcflow's xarc report: one stanza per method with its parents (callers),
//! itself, and its children (callees), each with calls, base and cum in
//! one resource.
//!
//! For a method X (`calls` = PCCT edge weight in the resource's count,
//! [`crate::Metric::count`]: samples for time, objects or enters for events):
//! - self: base = self weight of all X nodes; cum = cum of the *outermost*
//!   X nodes (no X ancestor), so recursion is never counted twice.
//! - parent P: the X nodes whose parent is a P node; base and calls over
//!   all of them, cum over the outermost ones. Hence, always:
//!   sum(parent calls) = self calls, sum(parent base) = self base,
//!   sum(parent cum) = self cum.
//! - child C: the children with method C of the outermost X nodes (a
//!   recursive call shows as a child named X). Hence sum(child cum) =
//!   self cum - base of the outermost X nodes, which is self cum - self base
//!   whenever X does not recurse.

use std::collections::HashMap;
use std::io::{self, Write};

use super::{edge_weight, human, percent, text_name, unit, ReportOptions};
use crate::method::{Builtin, MethodId, MethodTable};
use crate::tree::Pcct;
use crate::weight::{Metric, Weight};

/// calls / base / cum of one record of a stanza, every resource (`calls`:
/// the edges' weights, whose count a report shows).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Arc {
    pub calls: Weight,
    pub base: Weight,
    pub cum: Weight,
}

/// One stanza of the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stanza {
    pub method: MethodId,
    pub own: Arc,
    pub parents: Vec<(MethodId, Arc)>,
    pub children: Vec<(MethodId, Arc)>,
}

#[derive(Default)]
struct Building {
    own: Arc,
    parents: HashMap<MethodId, Arc>,
    children: HashMap<MethodId, Arc>,
}

/// Computes every method's stanza (unordered; records ordered by cum in `metric`).
pub fn stanzas(tree: &Pcct, metric: Metric) -> Vec<Stanza> {
    let cum = tree.cumulative();
    let mut building: HashMap<MethodId, Building> = HashMap::new();
    for node in tree.nodes().skip(1) {
        let method = tree.method(node);
        let parent_method = tree.parent(node).map_or(Builtin::Root.id(), |parent| tree.method(parent));
        let node_self = tree.node_weight(node);
        let node_cum = cum[node.index()];
        let calls = edge_weight(tree, &cum, node);

        let entry = building.entry(method).or_default();
        entry.own.calls.add(&calls);
        entry.own.base.add(&node_self);
        let parent = entry.parents.entry(parent_method).or_default();
        parent.calls.add(&calls);
        parent.base.add(&node_self);
        if tree.is_outermost(node) {
            entry.own.cum.add(&node_cum);
            parent.cum.add(&node_cum);
            for child in tree.children(node) {
                let record = entry.children.entry(tree.method(child)).or_default();
                record.calls.add(&edge_weight(tree, &cum, child));
                record.base.add(&tree.node_weight(child));
                record.cum.add(&cum[child.index()]);
            }
        }
    }
    let ordered = |records: HashMap<MethodId, Arc>| {
        let mut records: Vec<(MethodId, Arc)> = records.into_iter().collect();
        records.sort_by(|a, b| b.1.cum.get(metric).cmp(&a.1.cum.get(metric)).then(a.0.cmp(&b.0)));
        records
    };
    building
        .into_iter()
        .map(|(method, built)| Stanza {
            method,
            own: built.own,
            parents: ordered(built.parents),
            children: ordered(built.children),
        })
        .collect()
}

/// The report as text (see [`write_to`]).
pub fn write(tree: &Pcct, methods: &MethodTable, options: &ReportOptions) -> String {
    super::to_text(|out| write_to(out, tree, methods, options))
}

pub fn write_to(out: &mut dyn Write, tree: &Pcct, methods: &MethodTable, options: &ReportOptions) -> io::Result<()> {
    let metric = options.metric;
    let total_weight = tree.total();
    let total = total_weight.get(metric);
    let threshold = options.threshold(&total_weight);
    let mut all = stanzas(tree, metric);
    all.retain(|stanza| stanza.own.cum.get(metric) >= threshold && !stanza.own.cum.is_zero());
    all.sort_by(|a, b| b.own.cum.get(metric).cmp(&a.own.cum.get(metric)).then(a.method.cmp(&b.method)));
    writeln!(
        out,
        "xarc  metric: {} ({})  total: {}  samples: {}  stanzas: {}  pruned below {:.2}% cum",
        metric.name(),
        unit(metric),
        human(metric, total),
        total_weight.samples,
        all.len(),
        options.min_cum_share * 100.0
    )?;
    let rule = "=".repeat(78);
    let row = |out: &mut dyn Write, marker: &str, record: &Arc, name: String| {
        writeln!(
            out,
            "{marker:<6} {:>9} {:>12} {:>12} {:>6.2}%  {name}",
            record.calls.get(metric.count()),
            human(metric, record.base.get(metric)),
            human(metric, record.cum.get(metric)),
            percent(record.cum.get(metric), total),
        )
    };
    for stanza in all {
        writeln!(out, "{rule}")?;
        writeln!(out, "{:<6} {:>9} {:>12} {:>12} {:>7}  name", "", "calls", "base", "cum", "cum%")?;
        for (parent, record) in &stanza.parents {
            row(out, "parent", record, format!("    {}", text_name(methods, *parent, &[])))?;
        }
        row(out, "SELF", &stanza.own, text_name(methods, stanza.method, &[]))?;
        for (child, record) in &stanza.children {
            row(out, "child", record, format!("    {}", text_name(methods, *child, &[])))?;
        }
    }
    Ok(())
}
