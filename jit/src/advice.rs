//! Advice: the hot edges HotSpot did not inline, ranked by their share of
//! the profile, each with what to do and why, and the hot edges it did.
//!
//! An edge's share is its PCCT edge weight over the profile's total: the
//! samples in which the call was new (Whaley's measure of how hot a call
//! is), weighted by the metric of the profile. The action:
//!
//! - `inline`: C2 compiled the code that runs the caller without inlining
//!   the call: a directive can ask it to (see [`crate::directives`]);
//! - `wait`: the caller runs in the interpreter or in C1 code; C2 has not
//!   compiled it yet and may inline the call when it does;
//! - `cannot`: the callee has no bytecode (a native method), or a name no
//!   directive can match (hidden classes, unusual characters);
//! - `none`: inlined already;
//! - `unknown`: no code is known for the caller's frame.

use std::collections::HashMap;

use pcct::view::Completeness;
use pcct::Weight;
use serde::{Deserialize, Serialize};

use crate::context::{EdgeState, Inlined};
use crate::directives::pattern;
use crate::table::{InlineTable, MethodKey};

/// HotSpot's inlining thresholds and compilers, read from the VM's flags.
/// Every field is `None` where the flag could not be read (the defaults in
/// the comments are then assumed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InlineFlags {
    /// Largest hot callee C2 inlines (bytes of bytecode; 325 by default).
    pub freq_inline_size: Option<u32>,
    /// Largest callee inlined whether hot or not (35 by default).
    pub max_inline_size: Option<u32>,
    /// Deepest inlining C2 does (15 by default since JDK 14).
    pub max_inline_level: Option<u32>,
    /// Most compiler directives on HotSpot's stack, its default directive
    /// included (`CompilerDirectivesLimit`, 50 by default).
    #[serde(default)]
    pub directives_limit: Option<u32>,
    /// A callee whose C2 code is larger than this (bytes of instructions)
    /// is not inlined: "already compiled into a big method" (2500 on x86-64).
    #[serde(default)]
    pub inline_small_code: Option<u32>,
    /// Receiver types a call site's profile holds (2 by default): C2
    /// inlines at most that many at a virtual call.
    #[serde(default)]
    pub type_profile_width: Option<u32>,
    /// At a site with more receivers, C2 inlines the major one only when it
    /// has at least this share of the calls, in percent (90 by default).
    #[serde(default)]
    pub type_profile_major_receiver_percent: Option<u32>,
    /// `TieredCompilation` (on by default).
    #[serde(default)]
    pub tiered_compilation: Option<bool>,
    /// `TieredStopAtLevel` (4 by default: C2 compiles the hot code).
    #[serde(default)]
    pub tiered_stop_at_level: Option<u32>,
    /// `UseCompiler` (off with `-Xint`).
    #[serde(default)]
    pub use_compiler: Option<bool>,
    /// `UseJVMCICompiler`: a JVMCI compiler (Graal) replaces C2.
    #[serde(default)]
    pub use_jvmci_compiler: Option<bool>,
}

/// Which compiler compiles a JVM's hottest code, as its flags say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopCompiler {
    C2,
    /// Tiered compilation stops below C2 (`TieredStopAtLevel`).
    C1Only(u32),
    /// A JVMCI compiler (Graal) in C2's place.
    Jvmci,
    /// No compiler at all (`-Xint`, or tiers stopped at 0).
    Interpreter,
}

impl TopCompiler {
    /// As `pcct advise` and the status write it.
    pub fn describe(self) -> String {
        match self {
            TopCompiler::C2 => "C2".to_string(),
            TopCompiler::C1Only(level) => format!("C1 only (TieredStopAtLevel={level})"),
            TopCompiler::Jvmci => "a JVMCI compiler (Graal)".to_string(),
            TopCompiler::Interpreter => "no compiler (-Xint or TieredStopAtLevel=0)".to_string(),
        }
    }
}

impl InlineFlags {
    /// How many callers above a frame can have it inlined into their code.
    pub fn inline_depth(&self) -> usize {
        self.max_inline_level.unwrap_or(15) as usize
    }

    /// The compiler of the hottest code.
    pub fn top_compiler(&self) -> TopCompiler {
        if self.use_compiler == Some(false) {
            TopCompiler::Interpreter
        } else if self.use_jvmci_compiler == Some(true) {
            TopCompiler::Jvmci
        } else {
            match self.tiered_stop_at_level {
                _ if self.tiered_compilation == Some(false) => TopCompiler::C2,
                Some(0) => TopCompiler::Interpreter,
                Some(level) if level < 4 => TopCompiler::C1Only(level),
                _ => TopCompiler::C2,
            }
        }
    }

    fn receivers(&self) -> (usize, f64) {
        let width = self.type_profile_width.unwrap_or(2) as usize;
        (width, f64::from(self.type_profile_major_receiver_percent.unwrap_or(90)) / 100.0)
    }
}

/// What to do about one edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Inline,
    Wait,
    Cannot,
    None,
    Unknown,
}

/// A call site in the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallSite {
    pub bci: i32,
    pub line: Option<u32>,
}

/// A hot edge as the profile has it.
#[derive(Clone, Debug, PartialEq)]
pub struct HotCall {
    pub caller: MethodKey,
    pub call_site: CallSite,
    pub callee: MethodKey,
    pub weight: Weight,
    pub share: f64,
    /// The methods whose compilation can inline the caller in this
    /// context: the caller, then its callers in the context, nearest
    /// first, at most `MaxInlineLevel` of them.
    pub roots: Vec<MethodKey>,
    /// Different methods the profile's hot edges call from this call site
    /// (more than `TypeProfileWidth`: a megamorphic virtual call).
    pub callees_at_site: usize,
    /// This callee's share of the samples of every call from this site (1
    /// when it is the only callee): a stand-in for its receiver type's
    /// share of the site's calls, which is what C2 decides by.
    pub site_share: f64,
    /// Whether the walks reached the context's outermost frame: in a
    /// partial context `roots` may miss callers below the break.
    pub context: Completeness,
}

/// One edge, assessed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EdgeAdvice {
    pub caller: MethodKey,
    pub call_site: CallSite,
    pub callee: MethodKey,
    /// Share of the profile's weight (samples in which the call was new).
    pub share: f64,
    /// Samples in which the call was new.
    pub calls: u64,
    pub weight: Weight,
    /// Size of the callee's bytecode, when known.
    pub callee_bytecodes: Option<u32>,
    /// Size of the callee's own C2 code (bytes of instructions), when it has some.
    #[serde(default)]
    pub callee_c2_code: Option<u32>,
    pub inlined: Inlined,
    /// 0 interpreted, 1-3 C1, 4 C2.
    pub caller_level: Option<u8>,
    /// The compiled method whose code runs the caller here.
    pub compiled_in: Option<MethodKey>,
    /// Set when that code is on-stack-replacement code (entered at this loop bci).
    pub osr_bci: Option<i32>,
    pub compile_id: Option<u32>,
    /// How long ago that method's current code last changed.
    pub changed_ago_ns: Option<u64>,
    pub action: Action,
    pub why: String,
    /// The methods whose compilation can inline the caller here (the
    /// caller, then its callers, nearest first): a directive names them
    /// all, so the call is inlined whichever of them C2 compiles it into.
    pub roots: Vec<MethodKey>,
    /// Different methods the hot edges call from this call site.
    pub callees_at_site: usize,
    /// This callee's share of the samples of the calls from this site.
    #[serde(default = "one")]
    pub site_share: f64,
    /// Of `calls`, those seen on stacks whose walk stopped short (a
    /// `partial` context): their callers below the break are unknown, so
    /// `roots` may miss the method whose compilation holds them.
    pub partial_calls: u64,
}

fn one() -> f64 {
    1.0
}

/// What the table knows of a callee.
struct Callee {
    known: bool,
    bytecodes: Option<u32>,
    /// Its own C2 code's size (normal entry).
    c2_code: Option<u32>,
}

/// Assesses `call` in the state the table gives it.
pub fn assess(call: HotCall, state: &EdgeState, table: &InlineTable, flags: InlineFlags, now_ns: u64) -> EdgeAdvice {
    let method = table.method(&call.callee);
    let callee = Callee {
        known: method.is_some(),
        bytecodes: method.and_then(|method| table.bytecodes(method)),
        c2_code: method.and_then(|method| {
            table
                .current(method)
                .find(|code| code.facts.osr_bci.is_none() && code.facts.level == Some(4))
                .and_then(|code| code.facts.code_size)
        }),
    };
    let compiled_in = state.code.map(|code| table.key(code.root).clone());
    let (action, why) = decide(&call, state, compiled_in.as_ref(), &callee, flags);
    let (callee_bytecodes, callee_c2_code) = (callee.bytecodes, callee.c2_code);
    EdgeAdvice {
        caller: call.caller,
        call_site: call.call_site,
        callee: call.callee,
        share: call.share,
        calls: call.weight.samples,
        weight: call.weight,
        callee_bytecodes,
        callee_c2_code,
        inlined: state.inlined,
        caller_level: state.caller_level,
        compiled_in,
        osr_bci: state.code.and_then(|code| code.osr_bci),
        compile_id: state.code.and_then(|code| code.compile_id),
        changed_ago_ns: state.changed_ns.map(|at| now_ns.saturating_sub(at)),
        action,
        why,
        roots: call.roots,
        callees_at_site: call.callees_at_site,
        site_share: call.site_share,
        partial_calls: if call.context == Completeness::Partial { call.weight.samples } else { 0 },
    }
}

/// Where code of a compile level runs, as the advice and `pcct advise`
/// write it: "the interpreter", "C1 code (level 3)", "C2 code (level 4)".
pub fn code_name(level: Option<u8>) -> String {
    match level {
        Some(0) => "the interpreter".to_string(),
        Some(4) => "C2 code (level 4)".to_string(),
        Some(level) => format!("C1 code (level {level})"),
        None => "compiled code (level unknown)".to_string(),
    }
}

fn decide(
    call: &HotCall,
    state: &EdgeState,
    compiled_in: Option<&MethodKey>,
    callee: &Callee,
    flags: InlineFlags,
) -> (Action, String) {
    let runs_in = match compiled_in {
        Some(root) if *root == call.caller => format!("its own {}", code_name(state.caller_level)),
        Some(root) => format!("{} of {}", code_name(state.caller_level), root.display()),
        None => code_name(state.caller_level),
    };
    match state.inlined {
        Inlined::Unknown => (Action::Unknown, "no compiled code is known for the caller's frame".to_string()),
        Inlined::Yes if state.optimized_away => (
            Action::None,
            format!("inlined: no instruction of the call remains in {runs_in} (optimised away, or a branch C2 pruned)"),
        ),
        Inlined::Yes => (Action::None, format!("inlined: the caller runs in {runs_in}")),
        Inlined::No if callee.known && callee.bytecodes.is_none() => {
            (Action::Cannot, "the callee has no bytecode (a native method): HotSpot cannot inline it".to_string())
        }
        Inlined::No => match (megamorphic(call, flags), no_c2(flags)) {
            (Some(why), _) | (None, Some(why)) => (Action::Cannot, why),
            (None, None) if state.caller_level.is_some_and(|level| level < 4) => (
                Action::Wait,
                format!(
                    "a call: the caller runs in {runs_in}; C2 has not compiled it yet and may inline the call when it does"
                ),
            ),
            (None, None) => {
                let root = compiled_in.unwrap_or(&call.caller);
                match (pattern(root), pattern(&call.callee)) {
                    (Some(_), Some(_)) => {
                        let size = size_reason(callee.bytecodes, callee.c2_code, flags);
                        (Action::Inline, format!("a call in {runs_in}: {size}{}", polymorphic_note(call, flags)))
                    }
                    _ => (
                        Action::Cannot,
                        format!(
                            "a call in {runs_in}, but {} or {} has a name no compiler directive can match (a hidden class or unusual characters)",
                            root.display(),
                            call.callee.display()
                        ),
                    ),
                }
            }
        },
    }
}

/// Why no directive can get the call inlined at a megamorphic site: more
/// methods called from it than C2's type profile holds, and this one
/// without the major receiver's share. `None` when C2 can inline it.
fn megamorphic(call: &HotCall, flags: InlineFlags) -> Option<String> {
    let (width, major) = flags.receivers();
    (call.callees_at_site > width && call.site_share < major).then(|| {
        format!(
            "a megamorphic call: the profile sees {} different methods called from this site, this one in {:.0} % of its samples; \
             C2 inlines at most {width} receiver types at a call (TypeProfileWidth), or one that has at least {:.0} % of the calls \
             (TypeProfileMajorReceiverPercent), and no directive changes that (the shares are of sampled time, not of calls)",
            call.callees_at_site,
            100.0 * call.site_share,
            100.0 * major
        )
    })
}

/// At a site with more methods than the type profile holds, why C2 can
/// still inline this one: it is the major receiver.
fn polymorphic_note(call: &HotCall, flags: InlineFlags) -> String {
    let (width, _) = flags.receivers();
    if call.callees_at_site > width {
        format!(
            " (the site calls {} methods, this one in {:.0} % of its samples: C2 can inline it behind a type check)",
            call.callees_at_site,
            100.0 * call.site_share
        )
    } else {
        String::new()
    }
}

/// Why a directive for C2 cannot help in this JVM: no C2 runs.
fn no_c2(flags: InlineFlags) -> Option<String> {
    match flags.top_compiler() {
        TopCompiler::C2 => None,
        TopCompiler::C1Only(level) => Some(format!(
            "this JVM compiles with C1 only (TieredStopAtLevel={level}): the caller never reaches C2 code, and pcct's directives are C2's"
        )),
        TopCompiler::Jvmci => Some(
            "a JVMCI compiler (Graal, UseJVMCICompiler) compiles this JVM's hot code: it decides inlining by its own rules, not by the C2 directives pcct writes"
                .to_string(),
        ),
        TopCompiler::Interpreter => {
            Some("this JVM runs without a compiler (-Xint or TieredStopAtLevel=0): nothing is inlined".to_string())
        }
    }
}

/// Why C2 probably did not inline a callee of this bytecode size and C2
/// code size, in the order C2 checks (`InlineTree::should_inline`, then
/// `should_not_inline`).
fn size_reason(bytecodes: Option<u32>, c2_code: Option<u32>, flags: InlineFlags) -> String {
    let freq = flags.freq_inline_size.unwrap_or(325);
    let max = flags.max_inline_size.unwrap_or(35);
    let small_code = flags.inline_small_code.unwrap_or(2500);
    match (bytecodes, c2_code) {
        (Some(size), _) if size > freq => format!(
            "the callee has {size} bytes of bytecode, over FreqInlineSize={freq} (C2: \"hot method too big\"); a directive can force it"
        ),
        (_, Some(code)) if code > small_code => format!(
            "the callee is already compiled into {code} bytes of C2 code, over InlineSmallCode={small_code} (C2: \"already compiled into a big method\"); a directive can force it"
        ),
        (Some(size), _) if size > max => format!(
            "the callee has {size} bytes of bytecode, over MaxInlineSize={max}: inlined only where C2 finds the call hot, which it did not here"
        ),
        (Some(size), _) => format!(
            "the callee is small ({size} bytes of bytecode{}): the inlining depth (MaxInlineLevel) or the caller's size budget was reached, or C2 found the call site cold",
            c2_code.map_or(String::new(), |code| format!(", {code} bytes of C2 code"))
        ),
        (None, _) => "the callee's size is unknown (it was never compiled)".to_string(),
    }
}

/// Most roots one advised edge keeps (its contexts' together).
pub const MAX_ROOTS: usize = 64;

/// The advice answer: hot edges not inlined and hot edges inlined, each
/// ranked by share, at least `min_share`, at most `limit`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    pub not_inlined: Vec<EdgeAdvice>,
    pub inlined: Vec<EdgeAdvice>,
    /// Hot edges whose caller's frame has no known code.
    pub unknown: Vec<EdgeAdvice>,
}

/// What makes two contexts' edges one advice: the call (caller, bci,
/// callee), where it is compiled (method, OSR entry) and whether inlined.
type MergeKey = (MethodKey, i32, MethodKey, Option<MethodKey>, Option<i32>, bool);

/// Merges the contexts of one call compiled in one place, then ranks.
pub fn advise(edges: Vec<EdgeAdvice>, min_share: f64, limit: usize) -> Advice {
    let mut merged: Vec<EdgeAdvice> = Vec::new();
    let mut index: HashMap<MergeKey, usize> = HashMap::new();
    for edge in edges {
        let key = (
            edge.caller.clone(),
            edge.call_site.bci,
            edge.callee.clone(),
            edge.compiled_in.clone(),
            edge.osr_bci,
            edge.inlined == Inlined::Yes,
        );
        match index.get(&key) {
            Some(&at) if edge.inlined != Inlined::Unknown => {
                let into = &mut merged[at];
                into.share += edge.share;
                into.calls += edge.calls;
                into.partial_calls += edge.partial_calls;
                into.weight.add(&edge.weight);
                for root in edge.roots {
                    if into.roots.len() < MAX_ROOTS && !into.roots.contains(&root) {
                        into.roots.push(root);
                    }
                }
            }
            _ => {
                index.insert(key, merged.len());
                merged.push(edge);
            }
        }
    }
    merged.retain(|edge| edge.share >= min_share);
    merged.sort_by(|a, b| b.share.total_cmp(&a.share));
    let mut advice = Advice::default();
    for edge in merged {
        let list = match edge.inlined {
            Inlined::No => &mut advice.not_inlined,
            Inlined::Yes => &mut advice.inlined,
            Inlined::Unknown => &mut advice.unknown,
        };
        if list.len() < limit {
            list.push(edge);
        }
    }
    advice
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::RunningCode;
    use crate::table::tests::{facts, key, names, tree};
    use crate::table::{CodeFacts, JitMethod, Limits, MethodFacts};

    fn table() -> InlineTable {
        let mut table = InlineTable::new(Limits::default());
        table.load(facts(0x1000, 1, 5), tree(1, &[2]), names(&[1, 2]), 10);
        table
    }

    fn call(callee: &str, share: f64) -> HotCall {
        HotCall {
            caller: key("m1"),
            call_site: CallSite { bci: 3, line: Some(12) },
            callee: key(callee),
            weight: Weight { samples: 4, cpu_ns: 40, wall_ns: 40, ..Weight::default() },
            share,
            roots: vec![key("m1")],
            callees_at_site: 1,
            site_share: 1.0,
            context: Completeness::Whole,
        }
    }

    fn state(inlined: Inlined, level: u8) -> EdgeState {
        let code =
            RunningCode { root: JitMethod(0), osr_bci: None, compile_id: Some(5), level: Some(level), loaded_ns: 10 };
        EdgeState { inlined, caller_level: Some(level), code: Some(code), changed_ns: Some(10), optimized_away: false }
    }

    #[test]
    fn a_call_in_c2_code_is_advised_to_inline_with_the_reason_its_size_gives() {
        let table = table();
        let flags = InlineFlags {
            freq_inline_size: Some(325),
            max_inline_size: Some(35),
            max_inline_level: Some(15),
            directives_limit: Some(50),
            ..InlineFlags::default()
        };
        let edge = assess(call("m2", 0.4), &state(Inlined::No, 4), &table, flags, 30);
        assert_eq!(edge.action, Action::Inline);
        assert_eq!(edge.callee_bytecodes, Some(10));
        assert!(edge.why.contains("small (10 bytes"), "{}", edge.why);
        assert_eq!(edge.changed_ago_ns, Some(20));
        assert_eq!(edge.compiled_in, Some(key("m1")));
        assert!(size_reason(Some(400), None, flags).contains("over FreqInlineSize=325"));
    }

    #[test]
    fn c1_and_interpreted_callers_wait_and_native_callees_cannot() {
        let table = table();
        let flags = InlineFlags::default();
        assert_eq!(assess(call("m2", 0.4), &state(Inlined::No, 3), &table, flags, 30).action, Action::Wait);
        let interpreted = EdgeState { caller_level: Some(0), code: None, ..state(Inlined::No, 0) };
        assert_eq!(assess(call("m2", 0.4), &interpreted, &table, flags, 30).action, Action::Wait);
        let mut native = InlineTable::new(Limits::default());
        let no_bytecode = Some(MethodFacts { key: key("m2"), bytecodes: None });
        native.load(facts(0x1000, 1, 5), tree(1, &[2]), vec![(1, None), (2, no_bytecode)], 10);
        assert_eq!(assess(call("m2", 0.4), &state(Inlined::No, 4), &native, flags, 30).action, Action::Cannot);
        assert_eq!(assess(call("m2", 0.4), &state(Inlined::Yes, 4), &table, flags, 30).action, Action::None);
        let megamorphic = HotCall { callees_at_site: 3, site_share: 0.5, ..call("m2", 0.4) };
        let edge = assess(megamorphic.clone(), &state(Inlined::No, 4), &table, flags, 30);
        assert_eq!(edge.action, Action::Cannot);
        assert!(edge.why.contains("megamorphic"), "{}", edge.why);
        // A C1 caller at a megamorphic site cannot wait for C2 to help.
        assert_eq!(assess(megamorphic, &state(Inlined::No, 3), &table, flags, 30).action, Action::Cannot);
        let bimorphic = HotCall { callees_at_site: 2, site_share: 0.5, ..call("m2", 0.4) };
        assert_eq!(assess(bimorphic, &state(Inlined::No, 4), &table, flags, 30).action, Action::Inline);
    }

    #[test]
    fn a_jvm_without_c2_gets_no_directive_and_never_waits() {
        let table = table();
        let without = |flags: InlineFlags, needle: &str| {
            for level in [3, 4] {
                let edge = assess(call("m2", 0.4), &state(Inlined::No, level), &table, flags, 30);
                assert_eq!(edge.action, Action::Cannot, "{}", edge.why);
                assert!(edge.why.contains(needle), "{}", edge.why);
            }
        };
        without(
            InlineFlags { tiered_stop_at_level: Some(1), ..InlineFlags::default() },
            "C1 only (TieredStopAtLevel=1)",
        );
        without(InlineFlags { use_jvmci_compiler: Some(true), ..InlineFlags::default() }, "JVMCI");
        without(InlineFlags { use_compiler: Some(false), ..InlineFlags::default() }, "-Xint");
        without(InlineFlags { tiered_stop_at_level: Some(0), ..InlineFlags::default() }, "TieredStopAtLevel=0");
        // C2 alone (no tiers) stops at no level.
        let c2_only =
            InlineFlags { tiered_compilation: Some(false), tiered_stop_at_level: Some(1), ..InlineFlags::default() };
        assert_eq!(c2_only.top_compiler(), TopCompiler::C2);
        assert_eq!(assess(call("m2", 0.4), &state(Inlined::No, 4), &table, c2_only, 30).action, Action::Inline);
    }

    #[test]
    fn a_callee_compiled_into_big_code_says_inline_small_code() {
        let flags = InlineFlags { inline_small_code: Some(2500), ..InlineFlags::default() };
        let why = size_reason(Some(100), Some(3000), flags);
        assert!(why.contains("3000 bytes of C2 code, over InlineSmallCode=2500"), "{why}");
        // C2 checks the bytecode's size first.
        assert!(size_reason(Some(400), Some(3000), flags).contains("FreqInlineSize"));
        assert!(size_reason(Some(20), Some(800), flags).contains("small (20 bytes of bytecode, 800 bytes of C2 code)"));
        let mut table = table();
        let callee_code = CodeFacts { level: Some(4), code_size: Some(3000), ..facts(0x2000, 2, 6) };
        table.load(callee_code, tree(2, &[]), names(&[2]), 20);
        let edge = assess(call("m2", 0.4), &state(Inlined::No, 4), &table, flags, 30);
        assert_eq!(edge.callee_c2_code, Some(3000));
        assert!(edge.why.contains("InlineSmallCode"), "{}", edge.why);
    }

    #[test]
    fn contexts_of_one_call_merge_and_the_ranking_filters_by_share_and_limit() {
        let table = table();
        let flags = InlineFlags::default();
        let no = state(Inlined::No, 4);
        let edges = vec![
            assess(call("m2", 0.2), &no, &table, flags, 30),
            assess(HotCall { context: Completeness::Partial, ..call("m2", 0.3) }, &no, &table, flags, 30),
            assess(call("m3", 0.4), &no, &table, flags, 30),
            assess(call("m4", 0.01), &no, &table, flags, 30),
            assess(call("m5", 0.6), &state(Inlined::Yes, 4), &table, flags, 30),
            assess(call("m6", 0.6), &EdgeState::UNKNOWN, &table, flags, 30),
        ];
        let advice = advise(edges, 0.05, 10);
        let ranked: Vec<(&str, f64)> = advice.not_inlined.iter().map(|e| (e.callee.name.as_str(), e.share)).collect();
        assert_eq!(ranked, vec![("m2", 0.5), ("m3", 0.4)]);
        assert_eq!(advice.not_inlined[0].calls, 8);
        assert_eq!(advice.not_inlined[0].partial_calls, 4, "the partial context's calls, merged");
        assert_eq!(advice.not_inlined[1].partial_calls, 0);
        assert_eq!(advice.inlined.len(), 1);
        assert_eq!(advice.unknown.len(), 1);
        assert_eq!(advise(advice.not_inlined.clone(), 0.0, 1).not_inlined.len(), 1);
    }

    #[test]
    fn advice_round_trips_through_json() {
        let table = table();
        let edge = assess(call("m2", 0.4), &state(Inlined::No, 4), &table, InlineFlags::default(), 30);
        let advice = advise(vec![edge], 0.0, 10);
        let text = serde_json::to_string(&advice).unwrap();
        assert_eq!(serde_json::from_str::<Advice>(&text).unwrap(), advice);
    }
}
