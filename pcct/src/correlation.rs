//! Precision as Whaley measures it (Section 6.1): the correlation
//! coefficient (covariance over the product of the standard deviations)
//! between two profiles of the same program.
//!
//! - Hot methods: one value per method, the self weight.
//! - Contexts: one value per node and one per edge; two nodes or edges of
//!   two trees are the same when their contexts are textually identical,
//!   i.e. the method names on the path to the root are the same in the same
//!   order. Nodes of one tree with the same text (different call sites) add
//!   up. Texts are compared by id ([`ContextKeys`]), never written out.
//!
//! - Real methods: one value per Java method, the weight of the contexts
//!   whose deepest Java frame it is. A pseudo-frame (`[break_*]`,
//!   `[unknown_Java]`, `[gc_active]`) is not a method: its weight goes to the
//!   Java frame above it, or, in a sample with no Java frame at all, to the
//!   share reported beside the figure. A profile with a quarter of its
//!   weight in one pseudo-frame then no longer looks precise.
//!
//! Keys present in only one profile count as zero in the other. Class names
//! that carry run-specific addresses (lambda and hidden classes) are
//! normalised first, so successive runs can be compared.

use std::collections::HashMap;
use std::hash::Hash;

use crate::method::{MethodId, MethodKind, MethodTable};
use crate::slot::NodeId;
use crate::tree::{Pcct, TreeMode};
use crate::weight::Metric;

/// Pearson's correlation coefficient of paired values; `None` when fewer
/// than two pairs or when either side has no variance.
pub fn pearson(pairs: &[(f64, f64)]) -> Option<f64> {
    let n = pairs.len() as f64;
    if pairs.len() < 2 {
        return None;
    }
    let (mean_a, mean_b) = pairs.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x / n, b + y / n));
    let (mut cov, mut var_a, mut var_b) = (0.0, 0.0, 0.0);
    for (x, y) in pairs {
        cov += (x - mean_a) * (y - mean_b);
        var_a += (x - mean_a) * (x - mean_a);
        var_b += (y - mean_b) * (y - mean_b);
    }
    if var_a <= 0.0 || var_b <= 0.0 {
        return None;
    }
    Some(cov / (var_a.sqrt() * var_b.sqrt()))
}

/// Correlation of two keyed profiles over the union of their keys.
pub fn correlate<K: Eq + Hash>(a: &HashMap<K, f64>, b: &HashMap<K, f64>) -> Option<f64> {
    let mut pairs: Vec<(f64, f64)> = a.iter().map(|(key, &x)| (x, b.get(key).copied().unwrap_or(0.0))).collect();
    pairs.extend(b.iter().filter(|(key, _)| !a.contains_key(*key)).map(|(_, &y)| (0.0, y)));
    pearson(&pairs)
}

/// Replaces run-specific parts of generated class names:
/// `Foo$$Lambda$22/0x0000000800c03000.run` and
/// `Foo$$Lambda/0x00007f99e003dd88.run` both become `Foo$$Lambda.run`;
/// other `0x...` addresses and numbered lambda suffixes are dropped too.
pub fn normalise_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let bytes = name.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        if name[index..].starts_with("$$Lambda") {
            out.push_str("$$Lambda");
            index += "$$Lambda".len();
            // Skip `$<digits>`, then `/0x<hex>` or `.0x<hex>`.
            if bytes.get(index) == Some(&b'$') && bytes.get(index + 1).is_some_and(u8::is_ascii_digit) {
                index += 1;
                while bytes.get(index).is_some_and(u8::is_ascii_digit) {
                    index += 1;
                }
            }
            continue;
        }
        if (bytes[index] == b'/' || bytes[index] == b'.') && name[index + 1..].starts_with("0x") {
            index += 3;
            while bytes.get(index).is_some_and(u8::is_ascii_hexdigit) {
                index += 1;
            }
            continue;
        }
        let character = name[index..].chars().next().expect("in bounds");
        out.push(character);
        index += character.len_utf8();
    }
    out
}

/// Self weight per method (the hot-method counters), keyed by normalised name.
pub fn method_profile(tree: &Pcct, methods: &MethodTable, metric: Metric) -> HashMap<String, f64> {
    let mut profile = HashMap::new();
    for (method, weight) in tree.method_self_weights() {
        *profile.entry(normalise_name(&methods.display_name(method))).or_insert(0.0) += weight.get(metric) as f64;
    }
    profile
}

/// A profile by real methods: see the module documentation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RealMethods {
    /// Weight per Java method (normalised name) of the contexts whose
    /// deepest Java frame it is.
    pub weights: HashMap<String, f64>,
    /// Weight of the contexts with no Java frame.
    pub no_java: f64,
    /// All the profile's self weight.
    pub total: f64,
}

impl RealMethods {
    /// The share (0..1) of the weight with no Java frame; `None` for an
    /// empty profile.
    pub fn no_java_share(&self) -> Option<f64> {
        (self.total > 0.0).then(|| self.no_java / self.total)
    }
}

fn is_java(methods: &MethodTable, method: MethodId) -> bool {
    methods.get(method).kind == MethodKind::Java
}

/// Self weight by deepest Java frame, and the weight with none.
pub fn real_method_profile(tree: &Pcct, methods: &MethodTable, metric: Metric) -> RealMethods {
    let mut real = RealMethods::default();
    let add = |real: &mut RealMethods, method: Option<MethodId>, weight: f64| {
        real.total += weight;
        match method {
            Some(method) => *real.weights.entry(normalise_name(&methods.display_name(method))).or_insert(0.0) += weight,
            None => real.no_java += weight,
        }
    };
    if tree.config().mode == TreeMode::HotMethods {
        for (method, weight) in tree.method_self_weights() {
            add(&mut real, is_java(methods, method).then_some(method), weight.get(metric) as f64);
        }
        return real;
    }
    // Parents come before their children: each node's deepest Java frame
    // is its own method or its parent's.
    let mut deepest: Vec<Option<MethodId>> = Vec::with_capacity(tree.node_count());
    for node in tree.nodes() {
        let method = tree.method(node);
        let inherited = tree.parent(node).and_then(|parent| deepest[parent.index()]);
        let java = (node != NodeId::ROOT && is_java(methods, method)).then_some(method).or(inherited);
        let weight = tree.node_weight(node).get(metric) as f64;
        if weight > 0.0 {
            add(&mut real, java, weight);
        }
        deepest.push(java);
    }
    real
}

/// A textual context of [`context_profile`]: a node or the edge into it,
/// by the id [`ContextKeys`] gave the context's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ContextKey {
    Node(u32),
    Edge(u32),
}

/// Gives each textual context (the normalised names from the root down)
/// one id, the same in every tree passed through the same keys. A context
/// is known by its parent context's id and its last name's id, so no path
/// is ever written out: memory grows with the number of contexts, not with
/// contexts times depth (a 100,000-deep chain's texts alone would be 75 GB).
#[derive(Debug, Default)]
pub struct ContextKeys {
    names: HashMap<String, u32>,
    contexts: HashMap<(u32, u32), u32>,
}

impl ContextKeys {
    /// The id of the empty context (the root).
    pub const ROOT: u32 = 0;

    pub fn new() -> ContextKeys {
        ContextKeys::default()
    }

    /// Contexts given an id so far, the root aside.
    pub fn len(&self) -> usize {
        self.contexts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.contexts.is_empty()
    }

    fn name(&mut self, name: String) -> u32 {
        let next = self.names.len() as u32;
        *self.names.entry(name).or_insert(next)
    }

    /// The context `name` under `parent`.
    fn child(&mut self, parent: u32, name: u32) -> u32 {
        let next = self.contexts.len() as u32 + 1;
        *self.contexts.entry((parent, name)).or_insert(next)
    }
}

/// The normalised name ids of one method table, computed once per method.
struct NameIds<'a> {
    methods: &'a MethodTable,
    ids: Vec<Option<u32>>,
}

impl NameIds<'_> {
    fn of(&mut self, keys: &mut ContextKeys, method: MethodId) -> u32 {
        let index = method.0 as usize;
        if let Some(Some(id)) = self.ids.get(index) {
            return *id;
        }
        let id = keys.name(normalise_name(&self.methods.display_name(method)));
        if let Some(slot) = self.ids.get_mut(index) {
            *slot = Some(id);
        }
        id
    }
}

/// Node and edge weights keyed by textual context (see [`ContextKeys`];
/// compare two profiles keyed through the same keys). Nodes of one tree
/// with the same text add up.
pub fn context_profile(
    tree: &Pcct,
    methods: &MethodTable,
    metric: Metric,
    keys: &mut ContextKeys,
) -> HashMap<ContextKey, f64> {
    let mut profile = HashMap::new();
    let mut names = NameIds { methods, ids: vec![None; methods.len()] };
    let mut add = |key: ContextKey, weight: f64| {
        if weight > 0.0 {
            *profile.entry(key).or_insert(0.0) += weight;
        }
    };
    if tree.config().mode == TreeMode::HotMethods {
        for (method, weight) in tree.method_self_weights() {
            let name = names.of(keys, method);
            let context = keys.child(ContextKeys::ROOT, name);
            add(ContextKey::Node(context), weight.get(metric) as f64);
        }
        return profile;
    }
    // Parents come before their children: each node's context is its
    // parent's and its own name.
    let mut contexts: Vec<u32> = Vec::with_capacity(tree.node_count());
    for node in tree.nodes() {
        let context = match tree.parent(node) {
            None => ContextKeys::ROOT,
            Some(parent) => {
                let name = names.of(keys, tree.method(node));
                keys.child(contexts[parent.index()], name)
            }
        };
        add(ContextKey::Node(context), tree.node_weight(node).get(metric) as f64);
        if node != NodeId::ROOT {
            add(ContextKey::Edge(context), tree.edge_weight(node).get(metric) as f64);
        }
        contexts.push(context);
    }
    profile
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pearson_of_identical_and_opposite_series() {
        let same = [(1.0, 1.0), (2.0, 2.0), (5.0, 5.0)];
        assert!((pearson(&same).unwrap() - 1.0).abs() < 1e-12);
        let opposite = [(1.0, 3.0), (2.0, 2.0), (3.0, 1.0)];
        assert!((pearson(&opposite).unwrap() + 1.0).abs() < 1e-12);
        assert_eq!(pearson(&[(1.0, 1.0)]), None);
        assert_eq!(pearson(&[(1.0, 1.0), (1.0, 2.0)]), None);
    }

    #[test]
    fn lambda_names_lose_their_addresses() {
        assert_eq!(normalise_name("Foo$$Lambda$22/0x0000000800c03000.run"), "Foo$$Lambda.run");
        assert_eq!(normalise_name("Foo$$Lambda/0x00007f99e003dd88.run"), "Foo$$Lambda.run");
        assert_eq!(normalise_name("Foo$$Lambda$22.0x00007f99e003dd88.run"), "Foo$$Lambda.run");
        assert_eq!(normalise_name("java.util.HashMap.get"), "java.util.HashMap.get");
        assert_eq!(normalise_name("[gc_active]"), "[gc_active]");
    }

    #[test]
    fn pseudo_frames_give_their_weight_to_the_java_frame_above_or_to_no_java() {
        use crate::frame::Frame;
        use crate::marks::Marks;
        use crate::tree::TreeConfig;
        use crate::weight::Weight;
        let mut methods = MethodTable::new();
        let main = methods.intern("App", "main", "()V");
        let work = methods.intern("App", "work", "()V");
        let broken = methods.intern_pseudo("[break_stack_range]");
        let native = methods.intern_pseudo("[no_Java_frame]");
        let mut tree = Pcct::new(TreeConfig::default()).unwrap();
        let mut record = |stack: &[MethodId], samples: u64| {
            let frames: Vec<Frame> = stack.iter().map(|&method| Frame::new(method, 0)).collect();
            for _ in 0..samples {
                tree.record(&mut Marks::new(), &frames, Weight::sample(1000, 1000)).unwrap();
            }
        };
        record(&[main, work], 6);
        record(&[main, work, broken], 2);
        record(&[main], 1);
        record(&[native], 1);

        let real = real_method_profile(&tree, &methods, Metric::Samples);
        assert_eq!(real.weights.get("App.work"), Some(&8.0));
        assert_eq!(real.weights.get("App.main"), Some(&1.0));
        assert!(!real.weights.keys().any(|name| name.starts_with('[')), "{:?}", real.weights);
        assert_eq!((real.no_java, real.total), (1.0, 10.0));
        assert_eq!(real.no_java_share(), Some(0.1));
        assert_eq!(RealMethods::default().no_java_share(), None);
    }

    /// The text of every context written out: what `context_profile`
    /// computed before its keys (quadratic in depth), kept as the model.
    fn text_profile(tree: &Pcct, methods: &MethodTable, metric: Metric) -> HashMap<String, f64> {
        let mut profile = HashMap::new();
        let mut texts: Vec<String> = Vec::new();
        for node in tree.nodes() {
            let text = match tree.parent(node) {
                None => String::new(),
                Some(parent) => {
                    let name = normalise_name(&methods.display_name(tree.method(node)));
                    [texts[parent.index()].as_str(), &name].join(";")
                }
            };
            for (kind, weight) in [("N", tree.node_weight(node)), ("E", tree.edge_weight(node))] {
                let weight = weight.get(metric) as f64;
                if weight > 0.0 && (kind == "N" || node != NodeId::ROOT) {
                    *profile.entry(format!("{kind}|{text}")).or_insert(0.0) += weight;
                }
            }
            texts.push(text);
        }
        profile
    }

    /// A tree of `stacks` (names `class.method`), its methods interned in `order`.
    fn tree_of(order: &[&str], stacks: &[(&[(&str, i32)], u64)]) -> (Pcct, MethodTable) {
        use crate::frame::Frame;
        use crate::marks::Marks;
        use crate::tree::TreeConfig;
        use crate::weight::Weight;
        let mut methods = MethodTable::new();
        let id = |methods: &mut MethodTable, name: &str| {
            let (class, method) = name.rsplit_once('.').unwrap();
            methods.intern(class, method, "()V")
        };
        for name in order {
            id(&mut methods, name);
        }
        let mut tree = Pcct::new(TreeConfig::default()).unwrap();
        for (stack, samples) in stacks {
            let frames: Vec<Frame> = stack.iter().map(|&(name, bci)| Frame::new(id(&mut methods, name), bci)).collect();
            for _ in 0..*samples {
                tree.record(&mut Marks::new(), &frames, Weight::sample(1000, 1000)).unwrap();
            }
        }
        (tree, methods)
    }

    #[test]
    fn context_keys_pair_the_same_contexts_as_their_texts() {
        let (main, work, hash) = (("App.main", 1), ("App.work", 2), ("App.hash", 0));
        let (a, methods_a) = tree_of(
            &["App.main", "App.work", "App.hash"],
            &[
                (&[main, work, hash], 5),
                (&[("App.main", 3), work, hash], 2),
                (&[main, ("Foo$$Lambda$3/0x0000000800c03000.run", 0)], 4),
                (&[main, work], 1),
            ],
        );
        let (b, methods_b) = tree_of(
            &["App.copy", "App.hash", "App.main"],
            &[
                (&[main, work, hash], 6),
                (&[main, ("Foo$$Lambda/0x00007f99e003dd88.run", 0)], 3),
                (&[main, ("App.copy", 0)], 2),
                (&[("App.work", 0), main], 1),
            ],
        );
        let mut keys = ContextKeys::new();
        let keyed_a = context_profile(&a, &methods_a, Metric::Samples, &mut keys);
        let keyed_b = context_profile(&b, &methods_b, Metric::Samples, &mut keys);
        let (text_a, text_b) =
            (text_profile(&a, &methods_a, Metric::Samples), text_profile(&b, &methods_b, Metric::Samples));
        let sorted = |values: Vec<f64>| {
            let mut values = values;
            values.sort_by(f64::total_cmp);
            values
        };
        assert_eq!(sorted(keyed_a.values().copied().collect()), sorted(text_a.values().copied().collect()));
        assert_eq!(sorted(keyed_b.values().copied().collect()), sorted(text_b.values().copied().collect()));
        let (keyed, text) = (correlate(&keyed_a, &keyed_b).unwrap(), correlate(&text_a, &text_b).unwrap());
        assert!((keyed - text).abs() < 1e-12, "{keyed} against the model's {text}");
        assert!(keyed > 0.5 && keyed < 1.0, "{keyed}");
        // Shared contexts have one key: main, main;work, main;work;hash, the
        // lambda, main;copy, work, work;main.
        assert_eq!(keys.len(), 7);
        let same = context_profile(&a, &methods_a, Metric::Samples, &mut keys);
        assert_eq!(same, keyed_a, "keys are stable");
    }

    #[test]
    fn correlate_counts_missing_keys_as_zero() {
        let a: HashMap<String, f64> = [("x".to_string(), 10.0), ("y".to_string(), 1.0)].into();
        let b: HashMap<String, f64> = [("x".to_string(), 9.0), ("z".to_string(), 1.0)].into();
        let r = correlate(&a, &b).unwrap();
        assert!(r > 0.9 && r < 1.0, "{r}");
    }
}
