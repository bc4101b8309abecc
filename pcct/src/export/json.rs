//! The whole tree as JSON, flat: nodes in parent-first order, each naming
//! its parent by id. Flat JSON parses in any language whatever the depth of
//! the tree (nested JSON of a 2000-frame recursion trips most parsers'
//! recursion limits); [`crate::view::subtree`] gives nested JSON of a
//! bounded part of the tree.
//!
//! ```json
//! {"format":"pcct-json","version":1,"mode":"pcct","metric":"cpu_ns",
//!  "total":{"samples":..,"cpu_ns":..,"wall_ns":..},"stats":{..},
//!  "methods":[{"id":0,"class":"","name":"[root]","signature":"","kind":"pseudo"},..],
//!  "methods_self":[{"method":7,"self":{..}},..],
//!  "nodes":[{"id":0,"parent":null,"method":0,"call_site":-1,"line":null,"depth":0,
//!            "self":{..},"edge":{..},"cum":{..}},..]}
//! ```

use std::collections::BTreeSet;
use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use crate::error::{PcctError, Result};
use crate::method::{MethodId, MethodKind, MethodTable};
use crate::slot::NodeId;
use crate::tree::{Pcct, TreeConfig, TreeMode, TreeStats};
use crate::weight::Metric;
use crate::weight::Weight;

#[derive(Serialize)]
struct Header {
    format: &'static str,
    version: u32,
    mode: &'static str,
    metric: &'static str,
    total: Weight,
    stats: TreeStats,
    nodes_total: usize,
    arena_bytes: usize,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct JsonMethod {
    pub id: u32,
    pub class: String,
    pub name: String,
    pub signature: String,
    pub kind: MethodKind,
    /// Line number table: (start bci, line) pairs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<(u32, u32)>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct JsonNode {
    pub id: u32,
    pub parent: Option<u32>,
    pub method: u32,
    pub call_site: i32,
    pub line: Option<u32>,
    pub depth: usize,
    #[serde(rename = "self")]
    pub self_weight: Weight,
    pub edge: Weight,
    pub cum: Weight,
}

/// A hot-method counter (Figure 12): self weight of a method over all contexts.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct JsonMethodSelf {
    pub method: u32,
    #[serde(rename = "self")]
    pub self_weight: Weight,
}

/// A parsed flat JSON profile.
#[derive(Deserialize, Clone, Debug)]
pub struct JsonProfile {
    pub format: String,
    pub version: u32,
    pub mode: String,
    pub metric: String,
    pub total: Weight,
    pub methods: Vec<JsonMethod>,
    pub methods_self: Vec<JsonMethodSelf>,
    pub nodes: Vec<JsonNode>,
}

/// The flat JSON profile as text.
pub fn write(tree: &Pcct, methods: &MethodTable) -> String {
    super::to_text(|out| write_to(out, tree, methods, &serde_json::Map::new()))
}

/// Writes the flat JSON profile to `out` as it goes, with `extra`
/// top-level fields (a writer's own context, such as the sampler's
/// counters) placed after the header. Memory beyond the tree: one weight
/// per node (the cum pass) and the set of methods used.
pub fn write_to(
    out: &mut dyn Write,
    tree: &Pcct,
    methods: &MethodTable,
    extra: &serde_json::Map<String, serde_json::Value>,
) -> io::Result<()> {
    let cum = tree.cumulative();
    let header = Header {
        format: "pcct-json",
        version: 1,
        mode: tree.config().mode.name(),
        metric: tree.config().metric.name(),
        total: tree.total(),
        stats: tree.stats(),
        nodes_total: tree.node_count(),
        arena_bytes: tree.arena_used(),
    };
    let mut header = serde_json::to_string(&header)?;
    header.pop(); // reopen the object
    out.write_all(header.as_bytes())?;
    for (key, value) in extra {
        out.write_all(b",")?;
        serde_json::to_writer(&mut *out, key)?;
        out.write_all(b":")?;
        serde_json::to_writer(&mut *out, value)?;
    }

    let counters = tree.top_methods_by_self(usize::MAX);
    let used: BTreeSet<MethodId> =
        tree.nodes().map(|node| tree.method(node)).chain(counters.iter().map(|&(method, _)| method)).collect();
    out.write_all(b",\"methods\":[")?;
    for (index, method) in used.iter().enumerate() {
        let info = methods.get(*method);
        let entry = JsonMethod {
            id: method.0,
            class: info.class.to_string(),
            name: info.name.to_string(),
            signature: info.signature.to_string(),
            kind: info.kind,
            lines: info
                .lines
                .as_ref()
                .map_or_else(Vec::new, |lines| lines.iter().map(|l| (l.start_bci, l.line)).collect()),
        };
        if index > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, &entry)?;
    }
    out.write_all(b"],\"methods_self\":[")?;
    for (index, (method, weight)) in counters.iter().enumerate() {
        if index > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, &JsonMethodSelf { method: method.0, self_weight: *weight })?;
    }
    out.write_all(b"],\"nodes\":[")?;
    for node in tree.nodes() {
        let parent = tree.parent(node);
        let call_site = tree.call_site(node);
        let line = parent.and_then(|parent| methods.get(tree.method(parent)).line_of(call_site));
        let entry = JsonNode {
            id: node.raw(),
            parent: parent.map(NodeId::raw),
            method: tree.method(node).0,
            call_site,
            line,
            depth: tree.depth(node),
            self_weight: tree.node_weight(node),
            edge: tree.edge_weight(node),
            cum: cum[node.index()],
        };
        if node != NodeId::ROOT {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, &entry)?;
    }
    out.write_all(b"]}")
}

/// Parses a flat JSON profile written by [`write`].
pub fn parse(text: &str) -> serde_json::Result<JsonProfile> {
    serde_json::from_str(text)
}

/// Rebuilds the tree and method table a flat JSON profile was written
/// from: same contexts, weights, hot lists and hot-method counters (node
/// ids may differ; purge history is not kept).
pub fn import(profile: &JsonProfile) -> Result<(Pcct, MethodTable)> {
    let bad = |reason: String| PcctError::BadProfileLine { line: 0, reason };
    let mut methods = MethodTable::new();
    let mut ids = std::collections::HashMap::new();
    for method in &profile.methods {
        let id = match method.kind {
            MethodKind::Pseudo => methods.intern_pseudo(&method.name),
            MethodKind::Java => methods.intern(&method.class, &method.name, &method.signature),
        };
        if !method.lines.is_empty() {
            let lines = method.lines.iter().map(|&(start_bci, line)| crate::LineEntry { start_bci, line }).collect();
            methods.set_lines(id, lines);
        }
        ids.insert(method.id, id);
    }
    let method = |id: u32| ids.get(&id).copied().ok_or_else(|| bad(format!("node names unknown method {id}")));
    let config = TreeConfig {
        mode: if profile.mode == "hot-methods" { TreeMode::HotMethods } else { TreeMode::Pcct },
        metric: Metric::parse(&profile.metric).unwrap_or_default(),
        arena_bytes: (profile.nodes.len() + 16) * crate::BYTES_PER_NODE_AND_EDGE,
        ..TreeConfig::default()
    };
    let mut tree = Pcct::new(config)?;
    let mut nodes = std::collections::HashMap::new();
    for node in &profile.nodes {
        match node.parent {
            None => {
                tree.restore_root_weight(node.self_weight);
                nodes.insert(node.id, NodeId::ROOT);
            }
            Some(parent) => {
                let parent =
                    *nodes.get(&parent).ok_or_else(|| bad(format!("node {} comes before its parent", node.id)))?;
                let id = tree
                    .restore_node(parent, method(node.method)?, node.call_site, node.self_weight, node.edge)
                    .map_err(|_| bad("arena full".to_string()))?;
                nodes.insert(node.id, id);
            }
        }
    }
    for counter in &profile.methods_self {
        tree.restore_counter(method(counter.method)?, counter.self_weight);
    }
    tree.restore_method_totals();
    Ok((tree, methods))
}
