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
//!
//! Weights hold every resource ([`Weight`]); an event resource that is zero
//! is left out. A method of kind `type` is an event's leaf: the allocated
//! type or the monitor's class. An edge's event resources are its
//! context's cum (every event is recorded with its whole stack).

use std::collections::{BTreeSet, HashMap};
use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use crate::error::{PcctError, Result};
use crate::frame::FrameKind;
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
    /// The class's source file (`HashMap.java`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct JsonNode {
    pub id: u32,
    pub parent: Option<u32>,
    pub method: u32,
    pub call_site: i32,
    pub line: Option<u32>,
    pub depth: usize,
    /// How the method ran ([`FrameKind::name`]); absent when unknown
    /// (frame kinds not recorded).
    #[serde(default, skip_serializing_if = "FrameKind::is_unknown")]
    pub kind: FrameKind,
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

/// How a profile was collected, as the agent's dump records it (a
/// top-level `collection` field; absent in profiles from elsewhere).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Collection {
    /// The sampling interval.
    pub interval_ns: u64,
    /// When the profile began (its last purge), nanoseconds since the Unix epoch.
    pub started_unix_ns: i64,
    /// How long it was collected.
    pub duration_ns: i64,
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
    #[serde(default)]
    pub collection: Option<Collection>,
}

/// The flat JSON profile as text.
pub fn write(tree: &Pcct, methods: &MethodTable) -> String {
    super::to_text(|out| write_to(out, tree, methods, &[]))
}

/// A top-level field a writer adds to the profile, serialized straight
/// into the output: no `serde_json::Value` is built (a value of the JIT
/// advice over a thousand edges took 8 MiB, where its structs take 1.6).
pub trait ExtraField {
    fn write_json(&self, out: &mut dyn Write) -> serde_json::Result<()>;
}

impl<T: Serialize> ExtraField for T {
    fn write_json(&self, out: &mut dyn Write) -> serde_json::Result<()> {
        serde_json::to_writer(out, self)
    }
}

/// Writes the flat JSON profile to `out` as it goes, with `extra`
/// top-level fields (a writer's own context, such as the sampler's
/// counters) placed after the header. Memory beyond the tree: one weight
/// per node (the cum pass) and the set of methods used.
pub fn write_to(
    out: &mut dyn Write,
    tree: &Pcct,
    methods: &MethodTable,
    extra: &[(&str, &dyn ExtraField)],
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
        value.write_json(&mut *out)?;
    }

    let counters = tree.method_self_weights();
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
            file: info.file.as_deref().map(str::to_string),
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
            kind: tree.kind(node),
            self_weight: tree.node_weight(node),
            edge: super::edge_weight(tree, &cum, node),
            cum: cum[node.index()],
        };
        if node != NodeId::ROOT {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, &entry)?;
    }
    out.write_all(b"]}")
}

/// Parses a flat JSON profile written by [`write()`].
pub fn parse(text: &str) -> serde_json::Result<JsonProfile> {
    serde_json::from_str(text)
}

/// Parses a flat JSON profile from `reader` as it reads (the text is never
/// held whole; wrap a file in a `BufReader`).
pub fn parse_from(reader: impl std::io::Read) -> serde_json::Result<JsonProfile> {
    serde_json::from_reader(reader)
}

fn bad(reason: String) -> PcctError {
    PcctError::BadProfileLine { line: 0, reason }
}

/// Rebuilds the tree and method table a flat JSON profile was written
/// from: same contexts, weights, hot lists and hot-method counters (node
/// ids may differ; purge history is not kept). Time and memory are linear
/// in the number of nodes, whatever the depth.
pub fn import(profile: &JsonProfile) -> Result<(Pcct, MethodTable)> {
    let (methods, ids) = import_methods(&profile.methods);
    let method = |id: u32| ids.get(&id).copied().ok_or_else(|| bad(format!("node names unknown method {id}")));
    let config = TreeConfig {
        mode: if profile.mode == "hot-methods" { TreeMode::HotMethods } else { TreeMode::Pcct },
        metric: Metric::parse(&profile.metric).unwrap_or_default(),
        // Room for every node, and event weights for every one of them.
        arena_bytes: (profile.nodes.len() + 16) * (crate::BYTES_PER_NODE_AND_EDGE + crate::BYTES_PER_EVENT_CONTEXT),
        ..TreeConfig::default()
    };
    let mut tree = Pcct::new(config)?;
    let shape = Shape::of(&profile.nodes, |node| method(node.method))?;
    let recursive = shape.recursion(methods.len());
    let mut restored: Vec<NodeId> = Vec::with_capacity(profile.nodes.len());
    for (position, node) in profile.nodes.iter().enumerate() {
        let id = match shape.parents[position] {
            None => {
                tree.restore_root_weight(node.self_weight);
                NodeId::ROOT
            }
            Some(parent) => tree
                .restore_node(
                    restored[parent],
                    (shape.methods[position], node.kind),
                    node.call_site,
                    (node.self_weight, node.edge),
                    recursive[position],
                )
                .map_err(|_| bad("arena full".to_string()))?,
        };
        restored.push(id);
    }
    for counter in &profile.methods_self {
        tree.restore_counter(method(counter.method)?, counter.self_weight);
    }
    tree.restore_method_totals();
    Ok((tree, methods))
}

/// The method table of a profile, and its method ids' new ids.
fn import_methods(listed: &[JsonMethod]) -> (MethodTable, HashMap<u32, MethodId>) {
    let mut methods = MethodTable::new();
    let mut ids = HashMap::with_capacity(listed.len());
    for method in listed {
        let id = match method.kind {
            MethodKind::Pseudo => methods.intern_pseudo(&method.name),
            MethodKind::Type => methods.intern_type(&method.name),
            MethodKind::Native => methods.intern_native(&method.class, &method.name),
            MethodKind::Java => methods.intern(&method.class, &method.name, &method.signature),
        };
        if !method.lines.is_empty() {
            let lines = method.lines.iter().map(|&(start_bci, line)| crate::LineEntry { start_bci, line }).collect();
            methods.set_lines(id, lines);
        }
        if let Some(file) = &method.file {
            methods.set_file(id, file);
        }
        ids.insert(method.id, id);
    }
    (methods, ids)
}

/// The tree a profile's nodes describe, by their positions in the list:
/// each node's parent (`None` for the root) and method, and the children.
struct Shape {
    parents: Vec<Option<usize>>,
    methods: Vec<MethodId>,
    /// `children[child_start[p]..child_start[p + 1]]` are `p`'s children.
    child_start: Vec<usize>,
    children: Vec<usize>,
}

impl Shape {
    fn of(nodes: &[JsonNode], method: impl Fn(&JsonNode) -> Result<MethodId>) -> Result<Shape> {
        let mut positions: HashMap<u32, usize> = HashMap::with_capacity(nodes.len());
        let mut parents = Vec::with_capacity(nodes.len());
        let mut methods = Vec::with_capacity(nodes.len());
        for (position, node) in nodes.iter().enumerate() {
            let parent = match node.parent {
                None => None,
                Some(parent) => Some(
                    *positions.get(&parent).ok_or_else(|| bad(format!("node {} comes before its parent", node.id)))?,
                ),
            };
            methods.push(if parent.is_some() { method(node)? } else { MethodId(0) });
            parents.push(parent);
            positions.insert(node.id, position);
        }
        let (child_start, children) = Shape::child_lists(&parents);
        Ok(Shape { parents, methods, child_start, children })
    }

    /// Every node's children, in list order, as one array and its offsets.
    fn child_lists(parents: &[Option<usize>]) -> (Vec<usize>, Vec<usize>) {
        let mut child_start = vec![0usize; parents.len() + 1];
        for parent in parents.iter().flatten() {
            child_start[parent + 1] += 1;
        }
        for index in 1..child_start.len() {
            child_start[index] += child_start[index - 1];
        }
        let mut filled = child_start.clone();
        let mut children = vec![0usize; child_start[parents.len()]];
        for (position, parent) in parents.iter().enumerate() {
            if let Some(parent) = *parent {
                children[filled[parent]] = position;
                filled[parent] += 1;
            }
        }
        (child_start, children)
    }

    /// Whether each node has an ancestor of its method (the root aside):
    /// one depth-first pass counting the methods on the current path, so
    /// a chain 100,000 deep costs 100,000 steps, not 5 billion.
    fn recursion(&self, method_count: usize) -> Vec<bool> {
        let mut recursive = vec![false; self.parents.len()];
        let mut on_path = vec![0u32; method_count];
        // (position, leaving)
        let mut stack: Vec<(usize, bool)> = Vec::new();
        for root in (0..self.parents.len()).filter(|&position| self.parents[position].is_none()) {
            stack.extend(self.children_of(root).rev().map(|child| (child, false)));
            while let Some((position, leaving)) = stack.pop() {
                let method = self.methods[position].0 as usize;
                if leaving {
                    on_path[method] -= 1;
                    continue;
                }
                recursive[position] = on_path[method] > 0;
                on_path[method] += 1;
                stack.push((position, true));
                stack.extend(self.children_of(position).rev().map(|child| (child, false)));
            }
        }
        recursive
    }

    fn children_of(&self, position: usize) -> impl DoubleEndedIterator<Item = usize> + '_ {
        self.children[self.child_start[position]..self.child_start[position + 1]].iter().copied()
    }
}
