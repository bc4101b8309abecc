//! The inline table: the compiled code HotSpot holds now, each piece with
//! its inlining tree, the methods it names, and which code is *current* for
//! each compiled method.
//!
//! HotSpot keeps a method's old code after it compiled the method again
//! (tiered compilation goes from C1 to C2; a deoptimised method is compiled
//! anew) until it unloads it, which may be long after. The table keeps only
//! the newest code per compiled method and entry (the normal entry, and
//! each on-stack-replacement bci): the code that runs when the method is
//! called. Older code is dropped when newer code arrives, and code is
//! dropped when HotSpot unloads it (CompiledMethodUnload), so nothing of
//! unloaded code is ever read.
//!
//! Memory is bounded ([`Limits`]): past its bound a load is refused
//! ([`Loaded::Full`], counted by the caller), the table is then incomplete,
//! and the agent starts it over (an empty table refilled by JVMTI's
//! GenerateEvents). Methods are keyed by the names the profile gives them
//! (class in source form, name, JVM signature), which is how a hot edge
//! finds them, and by the VM's id, which is how events name them.

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::tree::{CodeTree, TreeBuilder};

/// A method as the profile names it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MethodKey {
    /// In source form: `java.util.HashMap`, `Outer$Inner`.
    pub class: String,
    pub name: String,
    /// JVM descriptor: `(I)J`.
    pub signature: String,
}

impl MethodKey {
    pub fn new(class: &str, name: &str, signature: &str) -> MethodKey {
        MethodKey { class: class.to_string(), name: name.to_string(), signature: signature.to_string() }
    }

    /// `class.name`, as the profile displays it.
    pub fn display(&self) -> String {
        format!("{}.{}", self.class, self.name)
    }

    /// What the table calls a method the VM could not name (it never
    /// matches a method of a profile).
    fn unnamed() -> MethodKey {
        MethodKey::new("", "[unnamed]", "")
    }

    fn approx_bytes(&self) -> usize {
        self.class.len() + self.name.len() + self.signature.len() + 3 * std::mem::size_of::<String>()
    }
}

/// A method known to the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JitMethod(pub u32);

/// What the VM says of a method when it is first named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MethodFacts {
    pub key: MethodKey,
    /// Size of its bytecode (none for native and abstract methods).
    pub bytecodes: Option<u32>,
}

/// What a CompiledMethodLoad event says of the code, besides its tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeFacts {
    /// Where the code is (what CompiledMethodUnload names).
    pub address: u64,
    /// The VM's id of the compiled method (a jmethodID).
    pub method: u64,
    /// HotSpot's compile level: 1-3 C1, 4 C2; none when not readable.
    pub level: Option<u8>,
    /// The loop's bci for on-stack-replacement code, none for the normal entry.
    pub osr_bci: Option<i32>,
    /// HotSpot's compile id (grows with every compilation), when readable.
    pub compile_id: Option<u32>,
}

/// Bounds of the table's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Methods named (compiled or inlined) before the table is full.
    pub max_methods: usize,
    /// Bytes of inlining trees kept, all code together.
    pub max_tree_bytes: usize,
    /// Nodes of one piece of code's tree (deeper chains are cut).
    pub max_tree_nodes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_methods: 1 << 16, max_tree_bytes: 16 << 20, max_tree_nodes: 1 << 14 }
    }
}

/// What became of a load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loaded {
    /// The method's first code for this entry.
    New,
    /// It replaced older code of the same method and entry.
    Replaced,
    /// Newer code of the same method and entry was there: ignored.
    Older,
    /// The same code again (GenerateEvents repeats what events reported).
    Duplicate,
    /// The table is full: refused, and the table is incomplete.
    Full,
}

/// One piece of code: what it compiled and what it inlined.
#[derive(Clone, Debug)]
pub struct Code {
    pub facts: CodeFacts,
    pub root: JitMethod,
    /// When it was loaded (the caller's clock, nanoseconds).
    pub loaded_ns: u64,
    /// Arrival order, to order code without a compile id.
    sequence: u64,
    pub tree: CodeTree,
}

impl Code {
    /// Whether `self` is newer than `other` (same method and entry).
    fn newer_than(&self, other: &Code) -> bool {
        match (self.facts.compile_id, other.facts.compile_id) {
            (Some(mine), Some(theirs)) => mine > theirs,
            _ => self.sequence > other.sequence,
        }
    }
}

/// The current code of one compiled method, by entry.
#[derive(Clone, Debug, Default)]
struct Current {
    normal: Option<u64>,
    osr: Vec<(i32, u64)>,
    /// When its current code last changed (loaded, replaced, unloaded).
    changed_ns: u64,
}

impl Current {
    fn slot(&mut self, osr_bci: Option<i32>) -> Option<u64> {
        match osr_bci {
            None => self.normal,
            Some(bci) => self.osr.iter().find(|(at, _)| *at == bci).map(|&(_, address)| address),
        }
    }

    fn set(&mut self, osr_bci: Option<i32>, address: Option<u64>) {
        match osr_bci {
            None => self.normal = address,
            Some(bci) => {
                self.osr.retain(|(at, _)| *at != bci);
                self.osr.extend(address.map(|address| (bci, address)));
            }
        }
    }

    fn addresses(&self) -> impl Iterator<Item = u64> + '_ {
        self.normal.into_iter().chain(self.osr.iter().map(|&(_, address)| address))
    }
}

/// The table's size, for /api/status and the metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableStats {
    /// Pieces of current code kept.
    pub codes: usize,
    /// Methods named.
    pub methods: usize,
    /// Inlined calls kept.
    pub inlined_calls: usize,
    /// About how much memory it holds.
    pub bytes: usize,
    /// Whether it holds all the code HotSpot holds (nothing refused since
    /// it was last filled).
    pub complete: bool,
    /// Times it was started over.
    pub restarts: u64,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub struct InlineTable {
    limits: Limits,
    methods: Vec<MethodFacts>,
    by_key: HashMap<MethodKey, JitMethod>,
    by_vm_id: HashMap<u64, JitMethod>,
    codes: HashMap<u64, Code>,
    current: HashMap<JitMethod, Current>,
    calls: usize,
    tree_bytes: usize,
    name_bytes: usize,
    sequence: u64,
    complete: bool,
    restarts: u64,
}

impl InlineTable {
    pub fn new(limits: Limits) -> InlineTable {
        InlineTable { limits, ..InlineTable::default() }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Those of `ids` the table cannot name yet.
    pub fn unnamed(&self, ids: &BTreeSet<u64>) -> Vec<u64> {
        ids.iter().copied().filter(|id| !self.by_vm_id.contains_key(id)).collect()
    }

    /// Names the VM's method `id` (a method it could not name gets a name
    /// no profile has). `None` when the table is full.
    fn name(&mut self, id: u64, facts: Option<MethodFacts>) -> Option<JitMethod> {
        if let Some(&known) = self.by_vm_id.get(&id) {
            return Some(known);
        }
        let facts = facts.unwrap_or(MethodFacts { key: MethodKey::unnamed(), bytecodes: None });
        let method = match self.by_key.get(&facts.key) {
            Some(&known) => known,
            None => {
                if self.methods.len() >= self.limits.max_methods {
                    return None;
                }
                let method = JitMethod(self.methods.len() as u32);
                self.name_bytes += facts.key.approx_bytes();
                self.by_key.insert(facts.key.clone(), method);
                self.methods.push(facts);
                method
            }
        };
        self.by_vm_id.insert(id, method);
        Some(method)
    }

    /// Records the code one CompiledMethodLoad reported: `tree` over the
    /// VM's method ids, `names` for those [`InlineTable::unnamed`] listed
    /// (`None`: the VM could not name it). `now_ns` is the caller's clock.
    pub fn load(
        &mut self,
        facts: CodeFacts,
        tree: TreeBuilder,
        names: Vec<(u64, Option<MethodFacts>)>,
        now_ns: u64,
    ) -> Loaded {
        for (id, method) in names {
            if self.name(id, method).is_none() {
                self.complete = false;
                return Loaded::Full;
            }
        }
        for id in tree.methods() {
            if self.name(id, None).is_none() {
                self.complete = false;
                return Loaded::Full;
            }
        }
        let by_vm_id = &self.by_vm_id;
        let tree = tree.finish(|id| by_vm_id[&id].0);
        if self.tree_bytes + tree.bytes() > self.limits.max_tree_bytes {
            self.complete = false;
            return Loaded::Full;
        }
        self.sequence += 1;
        let code = Code { facts, root: JitMethod(tree.root()), loaded_ns: now_ns, sequence: self.sequence, tree };
        self.install(code, now_ns)
    }

    fn install(&mut self, code: Code, now_ns: u64) -> Loaded {
        let (root, osr_bci, address) = (code.root, code.facts.osr_bci, code.facts.address);
        let held = self.current.get_mut(&root).and_then(|current| current.slot(osr_bci));
        let outcome = match held.and_then(|held| self.codes.get(&held)) {
            Some(old) if old.facts == code.facts => return Loaded::Duplicate,
            Some(old) if !code.newer_than(old) => return Loaded::Older,
            Some(_) => Loaded::Replaced,
            None => Loaded::New,
        };
        if let Some(held) = held {
            self.remove(held);
        }
        // Whatever else sat at this address is gone from the VM.
        self.remove(address);
        self.calls += code.tree.inlined_calls();
        self.tree_bytes += code.tree.bytes();
        self.codes.insert(address, code);
        let current = self.current.entry(root).or_default();
        current.set(osr_bci, Some(address));
        current.changed_ns = now_ns;
        outcome
    }

    /// Forgets the code at `address` (and its place as current code).
    fn remove(&mut self, address: u64) -> Option<Code> {
        let code = self.codes.remove(&address)?;
        self.calls -= code.tree.inlined_calls();
        self.tree_bytes -= code.tree.bytes();
        if let Some(current) = self.current.get_mut(&code.root) {
            if current.slot(code.facts.osr_bci) == Some(address) {
                current.set(code.facts.osr_bci, None);
            }
        }
        Some(code)
    }

    /// CompiledMethodUnload: the code of VM method `method` at `address` is
    /// gone. Returns whether the table held it (it may have been replaced
    /// by newer code already).
    pub fn unload(&mut self, address: u64, method: u64, now_ns: u64) -> bool {
        if self.codes.get(&address).is_none_or(|code| code.facts.method != method) {
            return false;
        }
        let code = self.remove(address).expect("present");
        if let Some(current) = self.current.get_mut(&code.root) {
            current.changed_ns = now_ns;
        }
        true
    }

    /// Forgets everything (to be filled again); incomplete until
    /// [`InlineTable::mark_complete`].
    pub fn restart(&mut self) {
        let restarts = self.restarts + 1;
        *self = InlineTable { limits: self.limits, restarts, ..InlineTable::default() };
    }

    /// The table now holds all the VM's code (events enabled, and the code
    /// compiled before them generated).
    pub fn mark_complete(&mut self) {
        self.complete = true;
    }

    pub fn complete(&self) -> bool {
        self.complete
    }

    /// Whether the table needs to start over (a load was refused).
    pub fn is_full(&self) -> bool {
        self.methods.len() >= self.limits.max_methods || self.tree_bytes >= self.limits.max_tree_bytes
    }

    /// The method the profile calls `key`, if the table knows it.
    pub fn method(&self, key: &MethodKey) -> Option<JitMethod> {
        self.by_key.get(key).copied()
    }

    pub fn key(&self, method: JitMethod) -> &MethodKey {
        &self.methods[method.0 as usize].key
    }

    pub fn bytecodes(&self, method: JitMethod) -> Option<u32> {
        self.methods[method.0 as usize].bytecodes
    }

    /// The current code of `method` (normal entry, then OSR entries).
    pub fn current(&self, method: JitMethod) -> impl Iterator<Item = &Code> + '_ {
        self.current.get(&method).into_iter().flat_map(|current| current.addresses()).filter_map(|a| self.codes.get(&a))
    }

    /// When `method`'s current code last changed, if it ever had code.
    pub fn changed_ns(&self, method: JitMethod) -> Option<u64> {
        self.current.get(&method).map(|current| current.changed_ns)
    }

    pub fn stats(&self) -> TableStats {
        let codes = self.codes.len();
        let maps = (self.by_key.len() + self.by_vm_id.len()) * 48 + self.current.len() * 64;
        TableStats {
            codes,
            methods: self.methods.len(),
            inlined_calls: self.calls,
            bytes: self.name_bytes + maps + self.tree_bytes + codes * std::mem::size_of::<Code>(),
            complete: self.complete,
            restarts: self.restarts,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn key(name: &str) -> MethodKey {
        MethodKey::new("T", name, "()V")
    }

    /// Names for VM ids 1.. as T.m1, T.m2, ...
    pub fn names(ids: &[u64]) -> Vec<(u64, Option<MethodFacts>)> {
        ids.iter().map(|&id| (id, Some(MethodFacts { key: key(&format!("m{id}")), bytecodes: Some(10) }))).collect()
    }

    pub fn facts(address: u64, method: u64, compile_id: u32) -> CodeFacts {
        CodeFacts { address, method, level: Some(4), osr_bci: None, compile_id: Some(compile_id) }
    }

    /// Code of `root` inlining each of `callees` at bci = callee id.
    pub fn tree(root: u64, callees: &[u64]) -> TreeBuilder {
        let mut builder = TreeBuilder::new(root, 1024);
        builder.add_chain(&[(root, 0)]).unwrap();
        for &callee in callees {
            builder.add_chain(&[(callee, 0), (root, callee as i32)]).unwrap();
        }
        builder
    }

    fn load(table: &mut InlineTable, facts: CodeFacts, callees: &[u64]) -> Loaded {
        let builder = tree(facts.method, callees);
        let unnamed = table.unnamed(&builder.methods());
        table.load(facts, builder, names(&unnamed), 7)
    }

    #[test]
    fn newer_code_of_a_method_replaces_older_and_older_code_is_ignored() {
        let mut table = InlineTable::new(Limits::default());
        assert_eq!(load(&mut table, facts(0x1000, 1, 10), &[2]), Loaded::New);
        assert_eq!(load(&mut table, facts(0x1000, 1, 10), &[2]), Loaded::Duplicate);
        assert_eq!(load(&mut table, facts(0x2000, 1, 12), &[2, 3]), Loaded::Replaced);
        assert_eq!(load(&mut table, facts(0x3000, 1, 11), &[]), Loaded::Older);
        let m1 = table.method(&key("m1")).unwrap();
        let current: Vec<u64> = table.current(m1).map(|code| code.facts.address).collect();
        assert_eq!(current, vec![0x2000]);
        assert_eq!(table.stats().inlined_calls, 2);
        assert_eq!(table.stats().codes, 1);
    }

    #[test]
    fn osr_code_is_current_beside_the_normal_entry() {
        let mut table = InlineTable::new(Limits::default());
        load(&mut table, facts(0x1000, 1, 10), &[2]);
        let osr = CodeFacts { osr_bci: Some(7), ..facts(0x2000, 1, 11) };
        assert_eq!(load(&mut table, osr, &[]), Loaded::New);
        let m1 = table.method(&key("m1")).unwrap();
        assert_eq!(table.current(m1).count(), 2);
    }

    #[test]
    fn unloaded_code_is_forgotten_but_only_if_it_is_the_code_named() {
        let mut table = InlineTable::new(Limits::default());
        load(&mut table, facts(0x1000, 1, 10), &[2]);
        assert!(!table.unload(0x1000, 99, 8), "another method's code at that address");
        assert!(table.unload(0x1000, 1, 9));
        assert!(!table.unload(0x1000, 1, 9));
        let m1 = table.method(&key("m1")).unwrap();
        assert_eq!(table.current(m1).count(), 0);
        assert_eq!(table.changed_ns(m1), Some(9));
        assert_eq!(table.stats().inlined_calls, 0);
    }

    #[test]
    fn a_full_table_refuses_and_says_it_is_incomplete_until_started_over() {
        let limits = Limits { max_methods: 3, ..Limits::default() };
        let mut table = InlineTable::new(limits);
        table.mark_complete();
        assert_eq!(load(&mut table, facts(0x1000, 1, 1), &[2]), Loaded::New);
        assert_eq!(load(&mut table, facts(0x2000, 3, 2), &[4]), Loaded::Full);
        assert!(!table.complete());
        assert!(table.is_full());
        table.restart();
        assert_eq!(table.stats(), TableStats { restarts: 1, ..TableStats::default() });
        assert_eq!(load(&mut table, facts(0x2000, 3, 2), &[4]), Loaded::New);
    }

    #[test]
    fn the_same_names_under_two_vm_ids_are_one_method() {
        let mut table = InlineTable::new(Limits::default());
        // Two classes of one name in two class loaders: the profile cannot
        // tell them apart either, so the newest code of either is current.
        let same = || Some(MethodFacts { key: key("same"), bytecodes: None });
        table.load(facts(0x1000, 1, 1), tree(1, &[]), vec![(1, same())], 0);
        assert_eq!(table.load(facts(0x2000, 2, 2), tree(2, &[]), vec![(2, same())], 0), Loaded::Replaced);
        assert_eq!(table.stats().methods, 1);
        assert_eq!(table.current(table.method(&key("same")).unwrap()).count(), 1);
    }
}
