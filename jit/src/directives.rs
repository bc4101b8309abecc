//! HotSpot compiler directives that ask C2 to inline the advised calls.
//!
//! A directive forces a callee inline in the C2 compilations of the methods
//! it matches. Which compilation inlines a call depends on the context: the
//! caller's own, or that of a method above it that inlined the caller, and
//! that changes as HotSpot compiles again (an outer method compiled later
//! may inline the caller, and then decides the call by its own directive).
//! So each advised call's directive matches every method whose compilation
//! can hold it in its context: the caller and its callers up to
//! `MaxInlineLevel` above (the `roots` of the advice). Only the first
//! directive matching a method counts, so methods are grouped by the
//! callees they must inline, one directive per group:
//!
//! ```json
//! [
//!   {
//!     "match": ["pkg/Caller.method(I)J", "pkg/Outer.run()V"],
//!     "c2": {
//!       "inline": ["+pkg/Callee.method(J)J"]
//!     }
//!   }
//! ]
//! ```
//!
//! HotSpot reads the file at start-up (`-XX:+UnlockDiagnosticVMOptions
//! -XX:CompilerDirectivesFile=<file>`) or adds it to a running JVM (`jcmd
//! <pid> Compiler.directives_add <file>`); either way only compilations
//! that start afterwards follow it. Patterns name the class with `/`
//! between packages and the method with its signature, so one overload is
//! meant. Methods of hidden classes (lambdas, whose names change every
//! run) and names with characters outside Java's usual identifiers get no
//! pattern: the advice says `cannot` for them.

use serde::{Deserialize, Serialize};

use crate::advice::{Action, EdgeAdvice};
use crate::table::MethodKey;

/// One directive: method patterns and the callees their C2 compilations inline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Directive {
    #[serde(rename = "match")]
    pub matches: Vec<String>,
    pub c2: C2Options,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct C2Options {
    /// `+pattern`: inline it.
    pub inline: Vec<String>,
}

fn is_identifier(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$')
}

/// HotSpot's method pattern for `key` (`pkg/Class.name(sig)`), or none
/// when no pattern can match it exactly.
pub fn pattern(key: &MethodKey) -> Option<String> {
    let parts: Vec<&str> = key.class.split('.').collect();
    // A hidden class's name ends in its address (`Foo$$Lambda$14.0x0000000800c03000`).
    let hidden = parts.iter().any(|part| part.starts_with("0x"));
    if hidden || !parts.iter().all(|part| is_identifier(part)) {
        return None;
    }
    let name_ok = is_identifier(&key.name) || key.name == "<init>" || key.name == "<clinit>";
    let signature_ok = key.signature.starts_with('(')
        && key.signature.bytes().all(|b| b.is_ascii_alphanumeric() || b"_$/;[()".contains(&b));
    (name_ok && signature_ok).then(|| format!("{}.{}{}", parts.join("/"), key.name, key.signature))
}

/// The first `limit` edges of `edges` to inline (action `inline`), in order.
pub fn to_inline(edges: &[EdgeAdvice], limit: usize) -> Vec<EdgeAdvice> {
    edges.iter().filter(|edge| edge.action == Action::Inline).take(limit).cloned().collect()
}

/// The directives for every `inline` advice among `edges`, in their order.
pub fn directives(edges: &[EdgeAdvice]) -> Vec<Directive> {
    // Each method to match, with the callees its compilations must inline.
    let mut roots: Vec<(String, Vec<String>)> = Vec::new();
    for edge in edges.iter().filter(|edge| edge.action == Action::Inline) {
        let Some(callee) = pattern(&edge.callee) else { continue };
        let callee = format!("+{callee}");
        let named = edge.compiled_in.iter().chain(std::iter::once(&edge.caller)).chain(&edge.roots);
        for root in named.filter_map(pattern) {
            match roots.iter_mut().find(|(known, _)| *known == root) {
                Some((_, callees)) if callees.contains(&callee) => {}
                Some((_, callees)) => callees.push(callee.clone()),
                None => roots.push((root, vec![callee.clone()])),
            }
        }
    }
    let mut directives: Vec<Directive> = Vec::new();
    for (root, callees) in roots {
        match directives.iter_mut().find(|directive| directive.c2.inline == callees) {
            Some(directive) => directive.matches.push(root),
            None => directives.push(Directive { matches: vec![root], c2: C2Options { inline: callees } }),
        }
    }
    directives
}

/// The method pattern of the directive an empty file holds: a class no
/// program has (`pcct` is no package a JVM loads), so it matches nothing.
pub const NOTHING_TO_ASK: &str = "pcct/NoAdvice.none()V";

/// The directives file's text, a JSON array. With nothing to ask it holds
/// one directive that matches no method and asks nothing: HotSpot refuses
/// a file without directives (`No directives in file`, and then the JVM
/// does not start), so `[]` is never written.
pub fn render(directives: &[Directive]) -> String {
    let nothing = [Directive { matches: vec![NOTHING_TO_ASK.to_string()], c2: C2Options { inline: Vec::new() } }];
    let shown = if directives.is_empty() { &nothing[..] } else { directives };
    let mut text = serde_json::to_string_pretty(shown).expect("directives serialise");
    text.push('\n');
    text
}

/// The classes whose code must be compiled again for the directives to
/// take effect (in source form): the class of the code that runs each
/// advised call now, and the caller's.
pub fn classes_to_recompile(edges: &[EdgeAdvice]) -> Vec<String> {
    let mut classes: Vec<String> = Vec::new();
    for edge in edges.iter().filter(|edge| edge.action == Action::Inline) {
        for method in edge.compiled_in.iter().chain(std::iter::once(&edge.caller)) {
            if pattern(method).is_some() && !classes.contains(&method.class) {
                classes.push(method.class.clone());
            }
        }
    }
    classes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advice::CallSite;
    use crate::context::Inlined;
    use pcct::Weight;

    fn advice(caller: MethodKey, root: Option<MethodKey>, callee: MethodKey, action: Action) -> EdgeAdvice {
        let roots = vec![caller.clone()];
        EdgeAdvice {
            roots,
            callees_at_site: 1,
            partial_calls: 0,
            caller,
            call_site: CallSite { bci: 5, line: None },
            callee,
            share: 0.5,
            calls: 10,
            weight: Weight::ZERO,
            callee_bytecodes: Some(400),
            inlined: Inlined::No,
            caller_level: Some(4),
            compiled_in: root,
            osr_bci: None,
            compile_id: None,
            changed_ago_ns: None,
            action,
            why: String::new(),
        }
    }

    #[test]
    fn patterns_use_slashes_and_the_signature_and_refuse_hidden_classes() {
        assert_eq!(
            pattern(&MethodKey::new("java.util.HashMap", "get", "(Ljava/lang/Object;)Ljava/lang/Object;")).as_deref(),
            Some("java/util/HashMap.get(Ljava/lang/Object;)Ljava/lang/Object;")
        );
        assert_eq!(pattern(&MethodKey::new("A$B", "<init>", "(I)V")).as_deref(), Some("A$B.<init>(I)V"));
        assert_eq!(pattern(&MethodKey::new("Foo$$Lambda$14.0x0000000800c03000", "run", "()V")), None);
        assert_eq!(pattern(&MethodKey::new("", "[gc_active]", "")), None);
        assert_eq!(pattern(&MethodKey::new("a.b", "we ird", "()V")), None);
        assert_eq!(pattern(&MethodKey::new("a.b", "x", "()V\"")), None);
        assert_eq!(pattern(&MethodKey::new("a..b", "x", "()V")), None);
    }

    #[test]
    fn every_method_that_can_compile_the_call_is_matched_once_with_all_its_callees() {
        let main = MethodKey::new("p.Main", "main", "([Ljava/lang/String;)V");
        let round = MethodKey::new("p.Main", "round", "()J");
        let caller = MethodKey::new("p.Main", "escape", "(DD)I");
        let times = MethodKey::new("p.Main$Complex", "times", "(Lp/Main$Complex;)Lp/Main$Complex;");
        let other = MethodKey::new("p.Other", "f", "()V");
        let mut to_times = advice(caller.clone(), Some(round.clone()), times.clone(), Action::Inline);
        to_times.roots = vec![caller.clone(), round.clone(), main.clone()];
        let edges = vec![
            to_times.clone(),
            to_times,
            advice(caller.clone(), None, other.clone(), Action::Inline),
            advice(caller.clone(), None, times.clone(), Action::Wait),
        ];
        let made = directives(&edges);
        let text = render(&made);
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        let times = "+p/Main$Complex.times(Lp/Main$Complex;)Lp/Main$Complex;";
        assert_eq!(
            parsed,
            serde_json::json!([
                {"match": ["p/Main.round()J", "p/Main.main([Ljava/lang/String;)V"], "c2": {"inline": [times]}},
                {"match": ["p/Main.escape(DD)I"], "c2": {"inline": [times, "+p/Other.f()V"]}}
            ])
        );
        assert_eq!(classes_to_recompile(&edges), vec!["p.Main".to_string()]);
        let empty: serde_json::Value = serde_json::from_str(&render(&[])).unwrap();
        assert_eq!(empty, serde_json::json!([{"match": [NOTHING_TO_ASK], "c2": {"inline": []}}]));
        assert_eq!(to_inline(&edges, 2).len(), 2);
        assert!(to_inline(&edges, 10).iter().all(|edge| edge.action == Action::Inline));
    }
}
