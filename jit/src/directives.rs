//! HotSpot compiler directives that ask C2 to inline the advised calls.
//!
//! One directive per compiled method whose code runs the callers (the
//! `compiled_in` of the advice: the caller itself, or the method that
//! inlined it), forcing the callees inline in its C2 compilations:
//!
//! ```json
//! [
//!   {
//!     "match": "pkg/Caller.method(I)J",
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

/// One directive: a method pattern and the callees its C2 compilations inline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Directive {
    #[serde(rename = "match")]
    pub matches: String,
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

/// The directives for every `inline` advice among `edges`, in their order.
pub fn directives(edges: &[EdgeAdvice]) -> Vec<Directive> {
    let mut directives: Vec<Directive> = Vec::new();
    for edge in edges.iter().filter(|edge| edge.action == Action::Inline) {
        let root = edge.compiled_in.as_ref().unwrap_or(&edge.caller);
        let (Some(matches), Some(callee)) = (pattern(root), pattern(&edge.callee)) else { continue };
        let callee = format!("+{callee}");
        match directives.iter_mut().find(|directive| directive.matches == matches) {
            Some(directive) if directive.c2.inline.contains(&callee) => {}
            Some(directive) => directive.c2.inline.push(callee),
            None => directives.push(Directive { matches, c2: C2Options { inline: vec![callee] } }),
        }
    }
    directives
}

/// The directives file's text (a JSON array; `[]` when there is nothing to ask).
pub fn render(directives: &[Directive]) -> String {
    let mut text = serde_json::to_string_pretty(directives).expect("directives serialise");
    text.push('\n');
    text
}

/// The classes whose code must be compiled again for `directives` to take
/// effect (the matched methods' classes, in source form).
pub fn classes_to_recompile(edges: &[EdgeAdvice]) -> Vec<String> {
    let mut classes: Vec<String> = Vec::new();
    for edge in edges.iter().filter(|edge| edge.action == Action::Inline) {
        let root = edge.compiled_in.as_ref().unwrap_or(&edge.caller);
        if pattern(root).is_some() && !classes.contains(&root.class) {
            classes.push(root.class.clone());
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
        EdgeAdvice {
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
    fn one_directive_per_compiled_method_with_each_callee_once() {
        let main = MethodKey::new("p.Main", "main", "([Ljava/lang/String;)V");
        let caller = MethodKey::new("p.Main", "escape", "(DD)I");
        let times = MethodKey::new("p.Main$Complex", "times", "(Lp/Main$Complex;)Lp/Main$Complex;");
        let other = MethodKey::new("p.Other", "f", "()V");
        let edges = vec![
            advice(caller.clone(), Some(main.clone()), times.clone(), Action::Inline),
            advice(caller.clone(), Some(main.clone()), times.clone(), Action::Inline),
            advice(caller.clone(), None, other.clone(), Action::Inline),
            advice(caller.clone(), None, times.clone(), Action::Wait),
        ];
        let made = directives(&edges);
        let text = render(&made);
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            parsed,
            serde_json::json!([
                {"match": "p/Main.main([Ljava/lang/String;)V", "c2": {"inline": ["+p/Main$Complex.times(Lp/Main$Complex;)Lp/Main$Complex;"]}},
                {"match": "p/Main.escape(DD)I", "c2": {"inline": ["+p/Other.f()V"]}}
            ])
        );
        assert_eq!(classes_to_recompile(&edges), vec!["p.Main".to_string()]);
        assert_eq!(render(&[]), "[]\n");
    }
}
