//! Reading the profiles the agent writes, with the `pcct` crate's own parsers.

use std::collections::HashMap;
use std::path::Path;

use pcct::export::json::{JsonMethod, JsonNode, JsonProfile};
use pcct::Weight;

/// A flat JSON profile (`pcct::export::json`) with lookups by id.
pub struct Profile {
    pub json: JsonProfile,
    node_index: HashMap<u32, usize>,
    method_index: HashMap<u32, usize>,
}

fn add(a: Weight, b: Weight) -> Weight {
    a.plus(&b)
}

impl Profile {
    /// Reads and parses `path`; panics saying why it could not.
    pub fn read(path: &Path) -> Profile {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let json = pcct::export::json::parse(&text)
            .unwrap_or_else(|e| panic!("{} is not a pcct JSON profile: {e}", path.display()));
        Profile::new(json)
    }

    pub fn new(json: JsonProfile) -> Profile {
        let node_index = json.nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
        let method_index = json.methods.iter().enumerate().map(|(i, m)| (m.id, i)).collect();
        Profile { json, node_index, method_index }
    }

    pub fn nodes(&self) -> &[JsonNode] {
        &self.json.nodes
    }

    pub fn node(&self, id: u32) -> &JsonNode {
        &self.json.nodes[*self.node_index.get(&id).unwrap_or_else(|| panic!("no node {id}"))]
    }

    pub fn parent(&self, node: &JsonNode) -> Option<&JsonNode> {
        node.parent.map(|id| self.node(id))
    }

    pub fn method(&self, id: u32) -> &JsonMethod {
        &self.json.methods[*self.method_index.get(&id).unwrap_or_else(|| panic!("no method {id}"))]
    }

    /// The method of `node`.
    pub fn method_of(&self, node: &JsonNode) -> &JsonMethod {
        self.method(node.method)
    }

    /// `class.name` (or the bracketed pseudo name, or a native function's
    /// name) of a method.
    pub fn display(&self, method: u32) -> String {
        let method = self.method(method);
        if method.class.is_empty() || method.kind == pcct::MethodKind::Native {
            method.name.clone()
        } else {
            format!("{}.{}", method.class, method.name)
        }
    }

    /// Whether `node`'s method is `class.name`.
    pub fn is(&self, node: &JsonNode, class: &str, name: &str) -> bool {
        let method = self.method_of(node);
        method.class == class && method.name == name
    }

    /// Every node (calling context) of `class.name`.
    pub fn nodes_of(&self, class: &str, name: &str) -> Vec<&JsonNode> {
        self.json.nodes.iter().filter(|node| self.is(node, class, name)).collect()
    }

    /// The frames from the root (excluded) down to `node`, as `class.name`.
    pub fn path(&self, node: &JsonNode) -> Vec<String> {
        let mut frames = Vec::new();
        let mut current = Some(node);
        while let Some(n) = current {
            if n.parent.is_some() {
                frames.push(self.display(n.method));
            }
            current = self.parent(n);
        }
        frames.reverse();
        frames
    }

    /// Whether `node` or one of its callers is `class.name`.
    pub fn within(&self, node: &JsonNode, class: &str, name: &str) -> bool {
        let mut current = Some(node);
        while let Some(n) = current {
            if self.is(n, class, name) {
                return true;
            }
            current = self.parent(n);
        }
        false
    }

    /// Whether `node` is in a partial stack: it or one of its callers (the
    /// root aside) is a pseudo-frame (the walk stopped there, `[break_*]`,
    /// or the fallback named no frame, `[unknown_Java]`), so its calling
    /// context is unknown.
    pub fn is_partial(&self, node: &JsonNode) -> bool {
        let mut current = Some(node);
        while let Some(n) = current {
            if n.parent.is_some() && self.method_of(n).class.is_empty() {
                return true;
            }
            current = self.parent(n);
        }
        false
    }

    /// Nodes of `class.name` that have no caller of the same method (their
    /// cum weights count each sample once even under recursion).
    pub fn outermost_nodes_of(&self, class: &str, name: &str) -> Vec<&JsonNode> {
        self.nodes_of(class, name)
            .into_iter()
            .filter(|node| self.parent(node).is_none_or(|parent| !self.within(parent, class, name)))
            .collect()
    }

    /// Sum of the cum weights of the outermost contexts of `class.name`.
    pub fn cum_of(&self, class: &str, name: &str) -> Weight {
        self.outermost_nodes_of(class, name).iter().fold(Weight::ZERO, |sum, node| add(sum, node.cum))
    }

    /// Sum of the self weights of every node within `class.name` (the
    /// method itself or anything it called).
    pub fn self_within(&self, class: &str, name: &str) -> Weight {
        self.json
            .nodes
            .iter()
            .filter(|node| self.within(node, class, name))
            .fold(Weight::ZERO, |sum, node| add(sum, node.self_weight))
    }

    /// The hot-method counter (self weight over all contexts) of `class.name`.
    pub fn method_self(&self, class: &str, name: &str) -> Weight {
        self.json
            .methods_self
            .iter()
            .filter(|entry| {
                let method = self.method(entry.method);
                method.class == class && method.name == name
            })
            .fold(Weight::ZERO, |sum, entry| add(sum, entry.self_weight))
    }

    /// Sum of every node's self weight.
    pub fn sum_of_self(&self) -> Weight {
        self.json.nodes.iter().fold(Weight::ZERO, |sum, node| add(sum, node.self_weight))
    }

    /// Sum of the self weight of nodes whose method is a Java method (not a
    /// pseudo-frame such as `[break_*]` or `[unknown_java]`).
    pub fn sum_of_java_self(&self) -> Weight {
        self.json
            .nodes
            .iter()
            .filter(|node| !self.method_of(node).class.is_empty())
            .fold(Weight::ZERO, |sum, node| add(sum, node.self_weight))
    }

    /// One line per node with its path and weights, for assertion messages.
    pub fn describe(&self, nodes: &[&JsonNode]) -> String {
        nodes
            .iter()
            .map(|node| {
                format!(
                    "  {} [call site {}] self {:?} edge {:?} cum {:?}\n",
                    self.path(node).join(";"),
                    node.call_site,
                    node.self_weight,
                    node.edge,
                    node.cum
                )
            })
            .collect()
    }

    /// The heaviest `count` methods by self CPU, for assertion messages.
    pub fn top_methods(&self, count: usize) -> String {
        let mut counters: Vec<_> = self.json.methods_self.iter().collect();
        counters.sort_by_key(|entry| std::cmp::Reverse(entry.self_weight.cpu_ns));
        counters
            .iter()
            .take(count)
            .map(|entry| format!("  {} {:?}\n", self.display(entry.method), entry.self_weight))
            .collect()
    }
}

/// Reads and parses collapsed stacks (`pcct::export::collapsed`).
pub fn read_collapsed(path: &Path) -> Vec<(Vec<String>, u64)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    pcct::export::collapsed::parse(&text)
        .unwrap_or_else(|e| panic!("{} is not in the collapsed format: {e}", path.display()))
}

/// Samples a thread took for `cpu_ns` of its CPU at one sample per
/// `interval` of it: within `tolerance` (a share: 0.15 is 15 %) of
/// `cpu_ns / interval`. Each sample weighs the CPU since the thread's
/// previous one, so CPU totals balance however few samples are taken; only
/// a count shows a sampler that samples at half its rate (or twice it).
pub fn assert_sample_rate(samples: u64, cpu_ns: u64, interval: std::time::Duration, tolerance: f64, context: &str) {
    let expected = cpu_ns as f64 / interval.as_nanos() as f64;
    let ratio = samples as f64 / expected;
    assert!(
        (ratio - 1.0).abs() <= tolerance,
        "{samples} samples for {:.3} s of CPU at one per {interval:?}: {:.1} % of the {expected:.0} expected \
         (100 ± {:.0} %)\n{context}",
        cpu_ns as f64 / 1e9,
        ratio * 100.0,
        tolerance * 100.0
    );
}

/// How far a thread's sample count may be from its CPU over the interval
/// when its own CPU timer samples it: the timer fires after every interval
/// of the thread's CPU, so the count is exact but for samples refused while
/// the slot was full.
pub const TIMER_RATE_TOLERANCE: f64 = 0.15;
/// The same for the sampler thread's signals: they come at its ticks, on
/// the wall clock, and a loaded machine makes the sampler thread late (81-84
/// % of the expected count in two of four runs beside two builds and a
/// test loop on two cores). Half the rate is still far outside.
pub const SAMPLER_RATE_TOLERANCE: f64 = 0.25;
