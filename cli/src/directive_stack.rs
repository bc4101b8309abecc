//! HotSpot's stack of compiler directives as `jcmd <pid>
//! Compiler.directives_print` shows it, and what `pcct advise` checks
//! against it: room under `CompilerDirectivesLimit` before `--apply` adds,
//! and whether the directives on top are the ones it added before
//! `--remove` pops them (`Compiler.directives_remove` pops whatever is on
//! top, whoever added it).
//!
//! The print lists the stack from its top, the default directive last:
//! each directive is a `Directive:` line (`Directive: (default)` for the
//! default), ` matching: p/A.m()V, p/B.n()V`, then its C1 and C2 options,
//! each section with an `  inline: +p/C.big()V, ...` line (`  inline: -`
//! when none). A file's directives go on the stack so that its first is on
//! top (the first match wins, as in the file). Lists are compared as sets:
//! HotSpot prints them in its own order.

#![forbid(unsafe_code)]

use std::collections::BTreeSet;

use pcct_jit::directives::Directive;

/// `CompilerDirectivesLimit`'s default (JDK 9 to 25), for an agent that
/// could not read the flag.
pub const DEFAULT_LIMIT: u32 = 50;

/// A directive as the print shows it (the parts `pcct advise` writes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Printed {
    pub default: bool,
    pub matching: BTreeSet<String>,
    /// The C2 section's inline patterns (`+p/C.big()V`).
    pub c2_inline: BTreeSet<String>,
}

impl Printed {
    /// How `directive` shows on the stack.
    pub fn of(directive: &Directive) -> Printed {
        Printed {
            default: false,
            matching: directive.matches.iter().cloned().collect(),
            c2_inline: directive.c2.inline.iter().cloned().collect(),
        }
    }
}

/// The stack, top first (the default directive last).
pub fn parse(print: &str) -> Vec<Printed> {
    let mut stack: Vec<Printed> = Vec::new();
    let mut in_c2 = false;
    for line in print.lines() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("Directive:") {
            stack.push(Printed { default: rest.contains("(default)"), ..Printed::default() });
            in_c2 = false;
            continue;
        }
        let Some(current) = stack.last_mut() else { continue };
        if let Some(list) = trimmed.strip_prefix("matching:") {
            current.matching = items(list);
        } else if trimmed.starts_with("c1 directives") {
            in_c2 = false;
        } else if trimmed.starts_with("c2 directives") {
            in_c2 = true;
        } else if let Some(list) = trimmed.strip_prefix("inline:").filter(|_| in_c2) {
            current.c2_inline = items(list);
        }
    }
    stack
}

fn items(list: &str) -> BTreeSet<String> {
    list.split(',').map(str::trim).filter(|item| !item.is_empty() && *item != "-").map(str::to_string).collect()
}

/// Whether `count` more directives fit on `stack` under `limit` (HotSpot
/// counts the default directive): the error says why not, and what to do.
/// `most_edges(room)`: the most edges whose directives fit in `room` (none
/// if not even one edge's do); the error suggests that `--limit`.
pub fn check_room(
    count: usize,
    stack: &[Printed],
    limit: u32,
    pid: u32,
    most_edges: impl FnOnce(usize) -> Option<usize>,
) -> Result<(), String> {
    let depth = stack.len();
    let room = (limit as usize).saturating_sub(depth);
    if count <= room {
        return Ok(());
    }
    let fewer = match most_edges(room) {
        Some(edges) => format!("apply fewer edges with `--limit {edges}` (their directives fit), or "),
        None => "remove some (`jcmd <pid> Compiler.directives_remove`), or ".to_string(),
    };
    Err(format!(
        "the advice needs {count} compiler directives but JVM {pid} has room for {room}: its CompilerDirectivesLimit is \
         {limit} and {depth} are on its stack (the default one included); {fewer}start the JVM with \
         -XX:+UnlockDiagnosticVMOptions -XX:CompilerDirectivesLimit=<more>"
    ))
}

/// Where `ours` (in file order) are on `stack`: on top, lower down (so
/// many directives were added above them), or not there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    OnTop,
    Below(usize),
    Absent,
}

pub fn find(stack: &[Printed], ours: &[Printed]) -> Found {
    if ours.is_empty() {
        return Found::Absent;
    }
    let at = stack.windows(ours.len()).position(|window| window == ours);
    match at {
        Some(0) => Found::OnTop,
        Some(above) => Found::Below(above),
        None => Found::Absent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcct_jit::directives::C2Options;

    /// What JDK 17's `jcmd Compiler.directives_print` printed after one
    /// directive of `pcct advise` (options lines cut).
    const PRINT: &str = "18424:

Directive:
 matching: java/lang/Thread.run()V, JitAdvice.work(J)V, JitAdvice.round()J
 c1 directives:
  inline: -
  Enable:false Exclude:false BreakAtExecute:false

 c2 directives:
  inline: +JitAdvice$Complex.times(LJitAdvice$Complex;)LJitAdvice$Complex;
  Enable:true Exclude:false BreakAtExecute:false


Directive: (default)
 matching: *.*
 c1 directives:
  inline: -
  Enable:true Exclude:false

 c2 directives:
  inline: -
  Enable:true Exclude:false
";

    fn ours() -> Directive {
        Directive {
            matches: vec!["JitAdvice.round()J".into(), "JitAdvice.work(J)V".into(), "java/lang/Thread.run()V".into()],
            c2: C2Options { inline: vec!["+JitAdvice$Complex.times(LJitAdvice$Complex;)LJitAdvice$Complex;".into()] },
        }
    }

    #[test]
    fn the_print_is_read_top_first_with_the_default_last() {
        let stack = parse(PRINT);
        assert_eq!(stack.len(), 2);
        assert_eq!(stack[0], Printed::of(&ours()));
        assert!(stack[1].default && stack[1].c2_inline.is_empty());
        assert_eq!(stack[1].matching, BTreeSet::from(["*.*".to_string()]));
    }

    #[test]
    fn ours_are_found_on_top_below_others_or_not_at_all() {
        let stack = parse(PRINT);
        let mine = [Printed::of(&ours())];
        assert_eq!(find(&stack, &mine), Found::OnTop);
        let other = Printed { matching: BTreeSet::from(["X.y()V".to_string()]), ..Printed::default() };
        let covered: Vec<Printed> = std::iter::once(other).chain(stack.iter().cloned()).collect();
        assert_eq!(find(&covered, &mine), Found::Below(1));
        assert_eq!(find(&stack[1..], &mine), Found::Absent);
        let changed = Directive { c2: C2Options { inline: vec!["+Other.m()V".into()] }, ..ours() };
        assert_eq!(find(&stack, &[Printed::of(&changed)]), Found::Absent);
    }

    #[test]
    fn room_counts_the_default_directive_and_the_error_names_the_limit() {
        let stack = parse(PRINT);
        assert_eq!(check_room(48, &stack, 50, 7, |_| None), Ok(()));
        // 40 edges' directives fit in the 48 left (N edges can need more
        // than N directives): the hint names the edges, not the room.
        let error = check_room(49, &stack, 50, 7, |room| (room == 48).then_some(40)).unwrap_err();
        assert!(error.contains("CompilerDirectivesLimit is 50") && error.contains("room for 48"), "{error}");
        assert!(error.contains("--limit 40"), "{error}");
        let full = check_room(1, &stack[1..], 1, 7, |_| None).unwrap_err();
        assert!(full.contains("room for 0") && full.contains("Compiler.directives_remove"), "{full}");
    }
}
