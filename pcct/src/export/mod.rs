//! Output formats, one per file. Every exporter reads a tree and its method
//! table and writes text (pprof: gzipped protobuf); none of them changes
//! the tree. The text formats
//! write names escaped ([`crate::names::escape`]: control characters and
//! the format's separators as `\xNN`, a backslash as `\\`), so a name never
//! splits a line or a stack; JSON writes them as they are.

pub mod collapsed;
pub mod json;
pub mod pprof;
pub mod pprof_proto;
pub mod sites;
pub mod xarc;
pub mod xprof;
pub mod xtree;

use std::fmt::Write as _;
use std::io;

use serde::Serialize;

use crate::method::{MethodId, MethodTable};
use crate::names;
use crate::slot::NodeId;
use crate::tree::Pcct;
use crate::weight::{Metric, Weight};

/// The formats a profile can be written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// `frame;frame;frame value` lines, as flame graph tools read them.
    Collapsed,
    /// The whole tree as flat JSON (see [`json`]).
    Json,
    /// arcflow's tree report.
    Xtree,
    /// arcflow's parents / self / children report.
    Xarc,
    /// arcflow's flat report.
    Xprof,
    /// HPROF's sites: contexts (with the allocated or locked class) ranked.
    Sites,
    /// pprof's gzipped `profile.proto` (see [`pprof`]): binary, not text.
    Pprof,
}

impl Format {
    pub const ALL: [Format; 7] =
        [Format::Collapsed, Format::Json, Format::Xtree, Format::Xarc, Format::Xprof, Format::Sites, Format::Pprof];

    pub fn name(self) -> &'static str {
        match self {
            Format::Collapsed => "collapsed",
            Format::Json => "json",
            Format::Xtree => "xtree",
            Format::Xarc => "xarc",
            Format::Xprof => "xprof",
            Format::Sites => "sites",
            Format::Pprof => "pprof",
        }
    }

    /// Whether the format is text (all but pprof).
    pub fn is_text(self) -> bool {
        self != Format::Pprof
    }

    pub fn parse(text: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|format| format.name() == text)
    }
}

/// Options shared by the reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReportOptions {
    /// The resource reported (any of [`Metric::ALL`]).
    pub metric: Metric,
    /// Leave out contexts / methods whose cum is below this share (0..=1)
    /// of the total. Pruning by cum only trims leaves and whole branches.
    pub min_cum_share: f64,
    /// Collapsed stacks: each frame of a known kind gets async-profiler's
    /// suffix ([`crate::FrameKind::suffix`]: `_[0]`, `_[1]`, `_[j]`, `_[i]`).
    pub annotate: bool,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions { metric: Metric::CpuNs, min_cum_share: 0.0, annotate: false }
    }
}

impl ReportOptions {
    pub(crate) fn threshold(&self, total: &Weight) -> u64 {
        let share = self.min_cum_share.clamp(0.0, 1.0);
        (total.get(self.metric) as f64 * share).ceil() as u64
    }
}

/// Writes the tree in `format` to `out` as it goes (nothing the size of
/// the output is held in memory).
pub fn write_to(
    out: &mut dyn io::Write,
    format: Format,
    tree: &Pcct,
    methods: &MethodTable,
    options: &ReportOptions,
) -> io::Result<()> {
    match format {
        Format::Collapsed => collapsed::write_to(out, tree, methods, options),
        Format::Json => json::write_to(out, tree, methods, &[]),
        Format::Xtree => xtree::write_to(out, tree, methods, options),
        Format::Xarc => xarc::write_to(out, tree, methods, options),
        Format::Xprof => xprof::write_to(out, tree, methods, options),
        Format::Sites => sites::write_to(out, tree, methods, options),
        Format::Pprof => pprof::write_to(out, tree, methods, options, &pprof::PprofContext::default()),
    }
}

/// The tree in a text `format` as text (pprof, which is binary, comes
/// back lossily decoded: use [`write_to`] or [`pprof::write`] for it).
pub fn write(format: Format, tree: &Pcct, methods: &MethodTable, options: &ReportOptions) -> String {
    to_text(|out| write_to(out, format, tree, methods, options))
}

/// Runs a streaming writer into memory and returns the text.
pub(crate) fn to_text(write: impl FnOnce(&mut dyn io::Write) -> io::Result<()>) -> String {
    let mut bytes = Vec::new();
    write(&mut bytes).expect("writing into memory cannot fail");
    String::from_utf8(bytes).unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

/// `method`'s display name as the text reports write it: escaped, with
/// the format's `separators` (see [`crate::names`]).
pub(crate) fn text_name(methods: &MethodTable, method: MethodId, separators: &[char]) -> String {
    names::escape_owned(methods.display_name(method), separators)
}

/// A value of `metric` for people: counts as is, nanoseconds as milliseconds.
pub(crate) fn human(metric: Metric, value: u64) -> String {
    metric.human(value)
}

/// Unit of [`human`] values.
pub(crate) fn unit(metric: Metric) -> &'static str {
    metric.human_unit()
}

/// The whole weight of the edge into `node`: its time resources as the
/// tree keeps them, its event resources from the context's cum (see
/// [`Pcct::edge_weight`]).
pub(crate) fn edge_weight(tree: &Pcct, cum: &[Weight], node: NodeId) -> Weight {
    if node == NodeId::ROOT {
        return Weight::ZERO;
    }
    tree.edge_weight(node).with_events_of(&cum[node.index()])
}

pub(crate) fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Children of `node` ordered by cum (heaviest first), then by id.
pub(crate) fn children_by_cum(tree: &Pcct, cum: &[Weight], node: NodeId, metric: Metric) -> Vec<NodeId> {
    let mut children: Vec<NodeId> = tree.children(node).collect();
    children.sort_by(|a, b| cum[b.index()].get(metric).cmp(&cum[a.index()].get(metric)).then(a.cmp(b)));
    children
}

/// `name @bci (line N)` text of a node's call site, empty for the root's children.
pub(crate) fn call_site_text(tree: &Pcct, methods: &MethodTable, node: NodeId) -> String {
    let bci = tree.call_site(node);
    let mut text = String::new();
    if bci >= 0 {
        let _ = write!(text, " @{bci}");
        if let Some(parent) = tree.parent(node) {
            if let Some(line) = methods.get(tree.method(parent)).line_of(bci) {
                let _ = write!(text, " (line {line})");
            }
        }
    }
    text
}
