//! Precision as Whaley measures it (Section 6.1): the correlation
//! coefficient (covariance over the product of the standard deviations)
//! between two profiles of the same program.
//!
//! - Hot methods: one value per method, the self weight.
//! - Contexts: one value per node and one per edge; two nodes or edges of
//!   two trees are the same when their contexts are textually identical,
//!   i.e. the method names on the path to the root are the same in the same
//!   order. Nodes of one tree with the same text (different call sites) add up.
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
pub fn correlate(a: &HashMap<String, f64>, b: &HashMap<String, f64>) -> Option<f64> {
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
    for (method, weight) in tree.top_methods_by_self(usize::MAX) {
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
        for (method, weight) in tree.top_methods_by_self(usize::MAX) {
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

/// Node and edge weights keyed by textual context (`N|a;b;c`, `E|a;b;c`).
pub fn context_profile(tree: &Pcct, methods: &MethodTable, metric: Metric) -> HashMap<String, f64> {
    let mut profile = HashMap::new();
    if tree.config().mode == TreeMode::HotMethods {
        for (name, weight) in method_profile(tree, methods, metric) {
            profile.insert(format!("N|{name}"), weight);
        }
        return profile;
    }
    let mut texts: Vec<String> = Vec::with_capacity(tree.node_count());
    for node in tree.nodes() {
        let text = match tree.parent(node) {
            None => String::new(),
            Some(parent) => {
                let name = normalise_name(&methods.display_name(tree.method(node)));
                let parent_text = &texts[parent.index()];
                if parent_text.is_empty() {
                    name
                } else {
                    format!("{parent_text};{name}")
                }
            }
        };
        let node_weight = tree.node_weight(node).get(metric) as f64;
        let edge_weight = tree.edge_weight(node).get(metric) as f64;
        if node_weight > 0.0 {
            *profile.entry(format!("N|{text}")).or_insert(0.0) += node_weight;
        }
        if node != NodeId::ROOT && edge_weight > 0.0 {
            *profile.entry(format!("E|{text}")).or_insert(0.0) += edge_weight;
        }
        texts.push(text);
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

    #[test]
    fn correlate_counts_missing_keys_as_zero() {
        let a: HashMap<String, f64> = [("x".to_string(), 10.0), ("y".to_string(), 1.0)].into();
        let b: HashMap<String, f64> = [("x".to_string(), 9.0), ("z".to_string(), 1.0)].into();
        let r = correlate(&a, &b).unwrap();
        assert!(r > 0.9 && r < 1.0, "{r}");
    }
}
