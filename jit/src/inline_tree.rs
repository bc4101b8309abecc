//! One method's current code as trees of its inlining decisions
//! (`/api/jit/inline-tree`): for each piece of code HotSpot runs for the
//! method (its normal entry and each on-stack-replacement entry), the
//! compiled method at the root and, nested under each method, the calls
//! inlined into it with their call sites (bcis). A call that is not nested
//! is not inlined in that code. Read from the inline table, as the advice
//! is.

use serde::Serialize;

use crate::table::{Code, InlineTable, JitMethod, MethodKey};
use crate::tree::ROOT;

/// Most overloads of one name an answer holds.
pub const MAX_OVERLOADS: usize = 16;

/// A method as the route's `method` parameter names it: `Class.name`, or
/// `Class.name(signature)` for one overload (the class in source form,
/// `java.util.HashMap`, `Outer$Inner`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MethodName {
    pub class: String,
    pub name: String,
    pub signature: Option<String>,
}

impl MethodName {
    /// Reads `text`; the error says what is expected.
    pub fn parse(text: &str) -> Result<MethodName, String> {
        let expected = "must be Class.method or Class.method(signature), such as java.util.HashMap.get or java.util.HashMap.get(Ljava/lang/Object;)Ljava/lang/Object;";
        let (head, signature) = match text.find('(') {
            Some(at) => (&text[..at], Some(text[at..].to_string())),
            None => (text, None),
        };
        match head.rsplit_once('.') {
            Some((class, name)) if !class.is_empty() && !name.is_empty() && !class.ends_with('.') => {
                Ok(MethodName { class: class.to_string(), name: name.to_string(), signature })
            }
            _ => Err(expected.to_string()),
        }
    }
}

/// The answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct InlineTrees {
    /// Each piece of current code of the methods so named, by method, then
    /// normal entry first, then OSR entries by bci.
    pub codes: Vec<CodeInlining>,
    /// Whether the inline table holds all the code HotSpot holds: when
    /// not, a method with no code here may still have some.
    pub complete: bool,
    /// Whether nodes were left out at the answer's `max_nodes`.
    pub truncated: bool,
}

/// One piece of code and its inlining tree.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CodeInlining {
    pub level: Option<u8>,
    pub compile_id: Option<u32>,
    /// Set for on-stack-replacement code (entered at this loop bci).
    pub osr_bci: Option<i32>,
    /// Bytes of instructions.
    pub code_size: Option<u32>,
    pub loaded_ago_ns: u64,
    /// Calls inlined into this code, all levels together.
    pub inlined_calls: usize,
    pub tree: InlinedNode,
}

/// A method in a piece of code: the compiled method, or a call inlined
/// into its parent at `bci`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InlinedNode {
    pub method: MethodKey,
    /// Bytes of bytecode (none for native methods).
    pub bytecodes: Option<u32>,
    /// The call site in the parent (absent at the root).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bci: Option<i32>,
    /// The calls inlined into this method here, by bci.
    pub inlined: Vec<InlinedNode>,
}

/// The inlining trees of the current code of the methods `name` names
/// (at most [`MAX_OVERLOADS`]), at most `max_nodes` nodes in all.
pub fn inline_trees(table: &InlineTable, name: &MethodName, max_nodes: usize, now_ns: u64) -> InlineTrees {
    let mut answer = InlineTrees { complete: table.complete(), ..InlineTrees::default() };
    let mut budget = max_nodes;
    let methods = table.find(&name.class, &name.name, name.signature.as_deref());
    answer.truncated = methods.len() > MAX_OVERLOADS;
    for method in methods.into_iter().take(MAX_OVERLOADS) {
        let mut codes: Vec<&Code> = table.current(method).collect();
        codes.sort_by_key(|code| code.facts.osr_bci.map_or(-1, i64::from));
        for code in codes {
            if budget == 0 {
                answer.truncated = true;
                return answer;
            }
            budget -= 1;
            let root = node(table, code.root, None);
            let tree = nested(table, code, ROOT, root, &mut budget, &mut answer.truncated);
            answer.codes.push(CodeInlining {
                level: code.facts.level,
                compile_id: code.facts.compile_id,
                osr_bci: code.facts.osr_bci,
                code_size: code.facts.code_size,
                loaded_ago_ns: now_ns.saturating_sub(code.loaded_ns),
                inlined_calls: code.tree.inlined_calls(),
                tree,
            });
        }
    }
    answer
}

fn node(table: &InlineTable, method: JitMethod, bci: Option<i32>) -> InlinedNode {
    InlinedNode { method: table.key(method).clone(), bytecodes: table.bytecodes(method), bci, inlined: Vec::new() }
}

/// `at` (tree node `index` of `code`) with the calls inlined below it, as
/// far as `budget` nodes go.
fn nested(
    table: &InlineTable,
    code: &Code,
    index: u32,
    mut at: InlinedNode,
    budget: &mut usize,
    truncated: &mut bool,
) -> InlinedNode {
    for (bci, method, child) in code.tree.children(index) {
        if *budget == 0 {
            *truncated = true;
            break;
        }
        *budget -= 1;
        let inner = node(table, JitMethod(method), Some(bci));
        at.inlined.push(nested(table, code, child, inner, budget, truncated));
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::tests::{facts, names};
    use crate::table::{CodeFacts, Limits};
    use crate::tree::TreeBuilder;

    #[test]
    fn a_name_is_class_dot_method_with_an_optional_signature() {
        let plain = MethodName::parse("java.util.HashMap.get").unwrap();
        assert_eq!((plain.class.as_str(), plain.name.as_str(), plain.signature), ("java.util.HashMap", "get", None));
        let one = MethodName::parse("Outer$Inner.run()V").unwrap();
        assert_eq!(
            (one.class.as_str(), one.name.as_str(), one.signature.as_deref()),
            ("Outer$Inner", "run", Some("()V"))
        );
        for bad in ["", "get", ".get", "Map.", "Map..get", "(I)V"] {
            assert!(MethodName::parse(bad).is_err(), "{bad}");
        }
    }

    /// m1's normal code inlines m2 at bci 4 and, inside it, m3 at bci 7;
    /// its OSR code at bci 20 inlines nothing.
    fn table() -> InlineTable {
        let mut table = InlineTable::new(Limits::default());
        let mut tree = TreeBuilder::new(1, 64);
        tree.add_chain(&[(3, 0), (2, 7), (1, 4)]).unwrap();
        tree.add_chain(&[(1, 9)]).unwrap();
        table.load(CodeFacts { code_size: Some(300), ..facts(0x1000, 1, 5) }, tree, names(&[1, 2, 3]), 10);
        let osr = CodeFacts { osr_bci: Some(20), ..facts(0x2000, 1, 6) };
        table.load(osr, TreeBuilder::new(1, 64), names(&[1]), 12);
        table
    }

    #[test]
    fn each_current_code_nests_its_inlined_calls() {
        let table = table();
        let trees = inline_trees(&table, &MethodName::parse("T.m1").unwrap(), 100, 30);
        assert_eq!(trees.codes.len(), 2);
        let normal = &trees.codes[0];
        assert_eq!((normal.osr_bci, normal.compile_id, normal.code_size), (None, Some(5), Some(300)));
        assert_eq!((normal.loaded_ago_ns, normal.inlined_calls), (20, 2));
        assert_eq!(normal.tree.method.name, "m1");
        let m2 = &normal.tree.inlined[0];
        assert_eq!((m2.method.name.as_str(), m2.bci), ("m2", Some(4)));
        assert_eq!((m2.inlined[0].method.name.as_str(), m2.inlined[0].bci), ("m3", Some(7)));
        assert_eq!(trees.codes[1].osr_bci, Some(20));
        assert!(trees.codes[1].tree.inlined.is_empty());
        assert!(!trees.truncated);
        let json = serde_json::to_value(&trees).unwrap();
        assert!(json["codes"][0]["tree"].get("bci").is_none(), "the root has no call site");
    }

    #[test]
    fn the_answer_is_bounded_and_unknown_names_have_no_code() {
        let table = table();
        let cut = inline_trees(&table, &MethodName::parse("T.m1").unwrap(), 2, 30);
        assert!(cut.truncated);
        assert_eq!(cut.codes.len(), 1);
        assert_eq!(cut.codes[0].tree.inlined[0].inlined.len(), 0, "two nodes: m1 and m2");
        let none = inline_trees(&table, &MethodName::parse("T.nothing").unwrap(), 100, 30);
        assert!(none.codes.is_empty() && !none.truncated);
        let wrong_signature = inline_trees(&table, &MethodName::parse("T.m1(I)V").unwrap(), 100, 30);
        assert!(wrong_signature.codes.is_empty());
    }
}
