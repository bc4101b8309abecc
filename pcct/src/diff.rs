//! Two profiles compared: which methods and calling contexts grew or
//! shrank. Every weight is taken as a share of its own profile's total,
//! so a profile of a longer run is not "bigger" everywhere: a method whose
//! share doubled grew by its old share, whatever the runs' lengths.
//!
//! Methods are compared by name (`class.method`; overloads together) by
//! self share (base) and total share (cum, outermost activations only);
//! contexts by their frames' names root first (as collapsed stacks name
//! them; contexts that differ only in a call site count together) by self
//! share. [`write_text`] prints the largest changes.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};

use crate::export::{collapsed, human, unit};
use crate::method::MethodTable;
use crate::tree::Pcct;
use crate::weight::Metric;

/// One name's share of each profile's total (0..=1).
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub name: String,
    pub before: f64,
    pub after: f64,
}

impl Change {
    /// `after - before`: positive when it grew.
    pub fn delta(&self) -> f64 {
        self.after - self.before
    }
}

/// What changed between two profiles, largest changes first.
#[derive(Clone, Debug, PartialEq)]
pub struct Diff {
    pub metric: Metric,
    /// Each profile's total in `metric`.
    pub totals: (u64, u64),
    /// Methods by self share.
    pub methods_self: Vec<Change>,
    /// Methods by total share.
    pub methods_total: Vec<Change>,
    /// Contexts (frames joined by `;`, root first) by self share.
    pub contexts: Vec<Change>,
}

fn share(value: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        value as f64 / total as f64
    }
}

/// Pairs the shares of every name of either side, largest |change| first
/// (ties by name).
fn changes(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>, totals: (u64, u64)) -> Vec<Change> {
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let mut changes: Vec<Change> = names
        .into_iter()
        .map(|name| Change {
            name: name.clone(),
            before: share(before.get(name).copied().unwrap_or(0), totals.0),
            after: share(after.get(name).copied().unwrap_or(0), totals.1),
        })
        .collect();
    changes.sort_by(|a, b| b.delta().abs().total_cmp(&a.delta().abs()).then_with(|| a.name.cmp(&b.name)));
    changes
}

/// Self and total weight in `metric` of every method, by display name.
fn methods_of(tree: &Pcct, methods: &MethodTable, metric: Metric) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    let (mut base, mut cum) = (BTreeMap::new(), BTreeMap::new());
    for entry in tree.method_totals() {
        let name = methods.display_name(entry.method);
        *base.entry(name.clone()).or_insert(0) += entry.self_weight.get(metric);
        *cum.entry(name).or_insert(0) += entry.total.get(metric);
    }
    (base, cum)
}

/// Self weight in `metric` of every context, by its frames' names.
fn contexts_of(tree: &Pcct, methods: &MethodTable, metric: Metric) -> BTreeMap<String, u64> {
    let mut contexts = BTreeMap::new();
    let text = collapsed::write(tree, methods, metric);
    for line in text.lines() {
        if let Some((frames, value)) = line.rsplit_once(' ') {
            *contexts.entry(frames.to_string()).or_insert(0) += value.parse::<u64>().unwrap_or(0);
        }
    }
    contexts
}

/// Compares `before` with `after` in `metric`.
pub fn diff(before: (&Pcct, &MethodTable), after: (&Pcct, &MethodTable), metric: Metric) -> Diff {
    let totals = (before.0.total().get(metric), after.0.total().get(metric));
    let (self_before, total_before) = methods_of(before.0, before.1, metric);
    let (self_after, total_after) = methods_of(after.0, after.1, metric);
    Diff {
        metric,
        totals,
        methods_self: changes(&self_before, &self_after, totals),
        methods_total: changes(&total_before, &total_after, totals),
        contexts: changes(&contexts_of(before.0, before.1, metric), &contexts_of(after.0, after.1, metric), totals),
    }
}

fn percent(share: f64) -> String {
    format!("{:.2}%", share * 100.0)
}

fn section(out: &mut dyn Write, title: &str, changes: &[Change], top: usize, min_change: f64) -> io::Result<()> {
    writeln!(out, "\n{title}")?;
    writeln!(out, "{:>9} {:>9} {:>9}  name", "change", "before", "after")?;
    let shown: Vec<&Change> = changes.iter().filter(|change| change.delta().abs() >= min_change).take(top).collect();
    for change in &shown {
        let sign = if change.delta() >= 0.0 { "+" } else { "-" };
        let delta = format!("{sign}{}", percent(change.delta().abs()));
        writeln!(out, "{delta:>9} {:>9} {:>9}  {}", percent(change.before), percent(change.after), change.name)?;
    }
    if shown.is_empty() {
        writeln!(out, "  (no change of {} or more)", percent(min_change))?;
    }
    Ok(())
}

/// Prints the `top` largest changes of each kind whose share moved by at
/// least `min_change` (0..=1), with `names` for the two profiles.
pub fn write_text(
    out: &mut dyn Write,
    diff: &Diff,
    names: (&str, &str),
    top: usize,
    min_change: f64,
) -> io::Result<()> {
    let metric = diff.metric;
    writeln!(
        out,
        "{} ({} {}) -> {} ({} {}); shares of each profile's own total of {}",
        names.0,
        human(metric, diff.totals.0),
        unit(metric),
        names.1,
        human(metric, diff.totals.1),
        unit(metric),
        metric.name()
    )?;
    section(out, "Methods by self share (base)", &diff.methods_self, top, min_change)?;
    section(out, "Methods by total share (cum)", &diff.methods_total, top, min_change)?;
    section(out, "Contexts by self share", &diff.contexts, top, min_change)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Frame, Marks, MethodId, TreeConfig, Weight};

    /// A profile of `main -> a` and `main -> b` samples.
    fn profile(a_samples: u64, b_samples: u64) -> (Pcct, MethodTable) {
        let mut methods = MethodTable::new();
        let main = methods.intern("Main", "main", "()V");
        let [a, b] = ["a", "b"].map(|name| methods.intern("Main", name, "()V"));
        let mut tree = Pcct::new(TreeConfig::default()).unwrap();
        let mut record = |leaf: MethodId, count: u64| {
            for _ in 0..count {
                let stack = [Frame::new(main, 1), Frame::new(leaf, 0)];
                tree.record(&mut Marks::new(), &stack, Weight::sample(1000, 1000)).unwrap();
            }
        };
        record(a, a_samples);
        record(b, b_samples);
        (tree, methods)
    }

    #[test]
    fn a_share_that_doubles_is_the_largest_change_whatever_the_totals() {
        // a: 25 % of 40 samples, then 50 % of 400 samples.
        let (before, before_methods) = profile(10, 30);
        let (after, after_methods) = profile(200, 200);
        let diff = diff((&before, &before_methods), (&after, &after_methods), Metric::Samples);
        assert_eq!(diff.totals, (40, 400));
        let first = &diff.methods_self[0];
        assert_eq!(first.name, "Main.a");
        assert!((first.before - 0.25).abs() < 1e-12 && (first.after - 0.5).abs() < 1e-12, "{first:?}");
        let b = diff.methods_self.iter().find(|change| change.name == "Main.b").unwrap();
        assert!((b.delta() + 0.25).abs() < 1e-12);
        let main = diff.methods_total.iter().find(|change| change.name == "Main.main").unwrap();
        assert_eq!((main.before, main.after), (1.0, 1.0));
        assert_eq!(diff.contexts[0].name, "Main.main;Main.a");
        let mut text = Vec::new();
        write_text(&mut text, &diff, ("old", "new"), 5, 0.001).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("  +25.00%    25.00%    50.00%  Main.a"), "{text}");
        assert!(text.contains("  -25.00%    75.00%    50.00%  Main.b"), "{text}");
        assert!(!text.contains("  Main.main\n"), "an unchanged method is left out: {text}");
    }
}
