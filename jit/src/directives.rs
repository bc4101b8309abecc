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
//!
//! Methods of the JDK's own classes ([`is_jdk`]: `java/lang/Thread.run()V`,
//! `ThreadPoolExecutor.runWorker`, ...) are not matched unless the caller
//! asks ([`Matching::Jdk`]): they are the roots of every thread's stack,
//! and since HotSpot follows only the first directive that matches a
//! method, a directive matching one of them would shadow any other
//! directive the user has for it. They may still be inlined (a `+` callee).
//! An edge none of whose methods may be matched gets no directive, and the
//! edges a limit counts are only those that get one ([`to_inline`]).

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

/// Which methods directives may match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Matching {
    /// Not the JDK's own ([`is_jdk`]): the default.
    #[default]
    Application,
    /// Every method, the JDK's too.
    Jdk,
}

/// The package prefixes of the JDK's own classes (source form).
const JDK_PACKAGES: [&str; 5] = ["java.", "javax.", "jdk.", "sun.", "com.sun."];

/// Whether `key` is a method of the JDK's own classes.
pub fn is_jdk(key: &MethodKey) -> bool {
    JDK_PACKAGES.iter().any(|prefix| key.class.starts_with(prefix))
}

/// The pattern a directive matches `key` by, if `matching` allows it.
fn match_pattern(key: &MethodKey, matching: Matching) -> Option<String> {
    (matching == Matching::Jdk || !is_jdk(key)).then(|| pattern(key)).flatten()
}

/// The methods whose compilations can hold `edge`'s call: the code that
/// runs it now, its caller and the callers above (`roots`).
fn contexts(edge: &EdgeAdvice) -> impl Iterator<Item = &MethodKey> {
    edge.compiled_in.iter().chain(std::iter::once(&edge.caller)).chain(&edge.roots)
}

/// Whether a directive can ask for `edge`: an `inline` advice whose callee
/// has a pattern and one of whose contexts may be matched.
fn directable(edge: &EdgeAdvice, matching: Matching) -> bool {
    edge.action == Action::Inline
        && pattern(&edge.callee).is_some()
        && contexts(edge).any(|key| match_pattern(key, matching).is_some())
}

/// The first `limit` edges of `edges` a directive can ask to inline, in
/// order (so a limit counts edges that get a directive).
pub fn to_inline(edges: &[EdgeAdvice], limit: usize, matching: Matching) -> Vec<EdgeAdvice> {
    edges.iter().filter(|edge| directable(edge, matching)).take(limit).cloned().collect()
}

/// The most of `edges` (in order, as [`to_inline`] takes them) whose
/// directives number at most `room`, if one fits: N edges can need more
/// than N directives (each group of methods that must inline the same
/// callees is one directive).
pub fn most_edges_within(edges: &[EdgeAdvice], room: usize, matching: Matching) -> Option<usize> {
    let candidates = to_inline(edges, usize::MAX, matching);
    (1..=candidates.len()).rev().find(|&count| directives(&candidates[..count], matching).len() <= room)
}

/// The directives for every `inline` advice among `edges`, in their order.
pub fn directives(edges: &[EdgeAdvice], matching: Matching) -> Vec<Directive> {
    // Each method to match, with the callees its compilations must inline.
    let mut roots: Vec<(String, Vec<String>)> = Vec::new();
    for edge in edges.iter().filter(|edge| directable(edge, matching)) {
        let Some(callee) = pattern(&edge.callee) else { continue };
        let callee = format!("+{callee}");
        for root in contexts(edge).filter_map(|key| match_pattern(key, matching)) {
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
/// advised call now, and the caller's, where a directive matches them.
pub fn classes_to_recompile(edges: &[EdgeAdvice], matching: Matching) -> Vec<String> {
    let mut classes: Vec<String> = Vec::new();
    for edge in edges.iter().filter(|edge| directable(edge, matching)) {
        for method in edge.compiled_in.iter().chain(std::iter::once(&edge.caller)) {
            if match_pattern(method, matching).is_some() && !classes.contains(&method.class) {
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
            site_share: 1.0,
            partial_calls: 0,
            caller,
            call_site: CallSite { bci: 5, line: None },
            callee,
            share: 0.5,
            calls: 10,
            weight: Weight::ZERO,
            callee_bytecodes: Some(400),
            callee_c2_code: None,
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
        let made = directives(&edges, Matching::Application);
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
        assert_eq!(classes_to_recompile(&edges, Matching::Application), vec!["p.Main".to_string()]);
        let empty: serde_json::Value = serde_json::from_str(&render(&[])).unwrap();
        assert_eq!(empty, serde_json::json!([{"match": [NOTHING_TO_ASK], "c2": {"inline": []}}]));
        assert_eq!(to_inline(&edges, 2, Matching::Application).len(), 2);
        assert!(to_inline(&edges, 10, Matching::Application).iter().all(|edge| edge.action == Action::Inline));
    }

    #[test]
    fn jdk_methods_are_matched_only_when_asked() {
        let run = MethodKey::new("java.lang.Thread", "run", "()V");
        let caller = MethodKey::new("p.Main", "work", "()V");
        let callee = MethodKey::new("p.Main", "step", "()V");
        let mut edge = advice(caller.clone(), None, callee.clone(), Action::Inline);
        edge.roots = vec![caller.clone(), run.clone()];
        let made = directives(std::slice::from_ref(&edge), Matching::Application);
        assert_eq!(made.len(), 1);
        assert_eq!(made[0].matches, vec!["p/Main.work()V".to_string()]);
        let with_jdk = directives(std::slice::from_ref(&edge), Matching::Jdk);
        assert_eq!(with_jdk[0].matches, vec!["p/Main.work()V".to_string(), "java/lang/Thread.run()V".to_string()]);
        // An edge inside the JDK, under JDK roots only: no directive, and
        // a limit does not count it.
        let hash = MethodKey::new("java.util.HashMap", "putVal", "(ILjava/lang/Object;)V");
        let resize = MethodKey::new("java.util.HashMap", "resize", "()[Ljava/util/HashMap$Node;");
        let mut inside = advice(hash.clone(), None, resize, Action::Inline);
        inside.roots = vec![hash, run];
        let edges = vec![inside.clone(), edge.clone()];
        assert_eq!(to_inline(&edges, 1, Matching::Application), vec![edge.clone()]);
        assert!(directives(&[inside.clone()], Matching::Application).is_empty());
        assert_eq!(classes_to_recompile(&[inside.clone()], Matching::Application), Vec::<String>::new());
        assert_eq!(to_inline(&edges, 1, Matching::Jdk), vec![inside]);
    }

    #[test]
    fn the_most_edges_within_a_room_count_directives_not_edges() {
        // Two edges with different callees and different contexts: one
        // directive each; a third whose context also holds the first's
        // callee turns one group into two.
        let a = MethodKey::new("p.A", "a", "()V");
        let b = MethodKey::new("p.B", "b", "()V");
        let c = MethodKey::new("p.C", "c", "()V");
        let x = MethodKey::new("p.X", "x", "()V");
        let y = MethodKey::new("p.Y", "y", "()V");
        let mut first = advice(a.clone(), None, x.clone(), Action::Inline);
        first.roots = vec![a.clone(), c.clone()];
        let mut second = advice(b.clone(), None, y.clone(), Action::Inline);
        second.roots = vec![b.clone(), c.clone()];
        let edges = vec![first, second];
        assert_eq!(directives(&edges[..1], Matching::Application).len(), 1);
        // p.C must inline both x and y: a group of its own.
        assert_eq!(directives(&edges, Matching::Application).len(), 3);
        assert_eq!(most_edges_within(&edges, 3, Matching::Application), Some(2));
        assert_eq!(most_edges_within(&edges, 2, Matching::Application), Some(1));
        assert_eq!(most_edges_within(&edges, 0, Matching::Application), None);
    }
}
