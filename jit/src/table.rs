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
//! Memory is bounded ([`Limits`]): every map has a capacity, and past it a
//! load is refused ([`Loaded::Full`], counted by the caller), the table is
//! then incomplete, and the agent starts it over (an empty table refilled
//! by JVMTI's GenerateEvents). Methods are keyed by the names the profile
//! gives them (class in source form, name, JVM signature), which is how a
//! hot edge finds them, and by the VM's id, which is how events name them.
//! A VM id is kept only while code in the table names it (each code holds
//! a reference to the ids of its tree): under class churn, a class loaded
//! again under the same name has new ids, and the old ones leave with the
//! old class's code, so the ids stay within what the code kept names. So do
//! the names: a method no code names is forgotten, unless its code was only
//! made not entrant (it stays current, with when its code changed).

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

/// The key of a method the table does not hold.
static UNNAMED: MethodKey = MethodKey { class: String::new(), name: String::new(), signature: String::new() };

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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
    /// The address of the code's nmethod (what `Method::_code` holds while
    /// the method enters it), when found.
    pub nmethod: Option<u64>,
    /// Bytes of instructions.
    pub code_size: Option<u32>,
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
    /// VM method ids named at once (those the code kept names).
    pub max_vm_ids: usize,
    /// Pieces of code kept at once.
    pub max_codes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_methods: 1 << 16,
            max_tree_bytes: 16 << 20,
            max_tree_nodes: 1 << 14,
            max_vm_ids: 1 << 18,
            max_codes: 1 << 17,
        }
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
    /// The VM ids its tree names (each holds a reference in the table).
    vm_ids: Vec<u64>,
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
    /// VM method ids named (those of the code kept).
    pub vm_ids: usize,
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
    /// By [`JitMethod`], numbered as they are named (a map, so that an
    /// [`InlineTable::extract`] keeps the numbers of the few it copies).
    methods: HashMap<JitMethod, MethodFacts>,
    by_key: HashMap<MethodKey, JitMethod>,
    /// Each VM id's method and how many pieces of code name it.
    by_vm_id: HashMap<u64, (JitMethod, u32)>,
    /// How many of `by_vm_id`'s ids each method has: a method none has
    /// (no code names it) and that no unloaded class left current is forgotten.
    ids_per_method: HashMap<JitMethod, u32>,
    /// The number the next method named gets (numbers are not reused).
    next_method: u32,
    /// Code that left the table before HotSpot unloaded it (made not
    /// entrant), by address, with its method: its unload forgets the
    /// method if nothing else keeps it. HotSpot unloads all such code in
    /// time, so this holds what HotSpot holds.
    left: HashMap<u64, JitMethod>,
    codes: HashMap<u64, Code>,
    current: HashMap<JitMethod, Current>,
    calls: usize,
    /// VM ids the code kept names, all code together (with repeats).
    code_ids: usize,
    tree_bytes: usize,
    name_bytes: usize,
    sequence: u64,
    complete: bool,
    /// A load was refused since the table started (over): it cannot be
    /// complete until it starts over.
    refused: bool,
    restarts: u64,
}

impl InlineTable {
    pub fn new(limits: Limits) -> InlineTable {
        InlineTable { limits, ..InlineTable::default() }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Whether some of `ids` are neither named in the table nor in `names`
    /// (a name went with code unloaded since [`InlineTable::unnamed`] was
    /// asked: ask again, or the load names it as no profile does).
    pub fn lacks_names(&self, ids: &BTreeSet<u64>, names: &[(u64, Option<MethodFacts>)]) -> bool {
        ids.iter().any(|id| !self.by_vm_id.contains_key(id) && !names.iter().any(|(named, _)| named == id))
    }

    /// Those of `ids` the table cannot name yet.
    pub fn unnamed(&self, ids: &BTreeSet<u64>) -> Vec<u64> {
        ids.iter().copied().filter(|id| !self.by_vm_id.contains_key(id)).collect()
    }

    /// Names the VM's method `id` (a method it could not name gets a name
    /// no profile has), with no reference yet. `None` when the table is full.
    fn name(&mut self, id: u64, facts: Option<MethodFacts>) -> Option<JitMethod> {
        if let Some(&(known, _)) = self.by_vm_id.get(&id) {
            return Some(known);
        }
        if self.by_vm_id.len() >= self.limits.max_vm_ids {
            return None;
        }
        let facts = facts.unwrap_or(MethodFacts { key: MethodKey::unnamed(), bytecodes: None });
        let method = match self.by_key.get(&facts.key) {
            Some(&known) => known,
            None => {
                if self.methods.len() >= self.limits.max_methods {
                    return None;
                }
                let method = JitMethod(self.next_method);
                self.next_method += 1;
                self.name_bytes += facts.key.approx_bytes();
                self.by_key.insert(facts.key.clone(), method);
                self.methods.insert(method, facts);
                method
            }
        };
        self.by_vm_id.insert(id, (method, 0));
        *self.ids_per_method.entry(method).or_default() += 1;
        Some(method)
    }

    /// Forgets those of `ids` no code names, and the methods left without
    /// an id that are not current anywhere (inlined callees of unloaded code).
    fn release(&mut self, ids: &[u64]) {
        for id in ids {
            if self.by_vm_id.get(id).is_some_and(|&(_, references)| references == 0) {
                if let Some((method, _)) = self.by_vm_id.remove(id) {
                    let left = self.ids_per_method.get_mut(&method).map(|count| {
                        *count = count.saturating_sub(1);
                        *count
                    });
                    if left == Some(0) && !self.current.contains_key(&method) {
                        self.forget(method);
                    }
                }
            }
        }
    }

    /// Forgets a method's name (no code names it any more), so that under
    /// class churn the names stay within the code kept, as the ids do.
    fn forget(&mut self, method: JitMethod) {
        self.ids_per_method.remove(&method);
        if let Some(facts) = self.methods.remove(&method) {
            self.name_bytes -= facts.key.approx_bytes();
            self.by_key.remove(&facts.key);
        }
    }

    /// Adds (`+1`) or drops (`-1`) a reference of code to each of `ids`,
    /// forgetting the ids no code names any more.
    fn reference(&mut self, ids: &[u64], change: i32) {
        for id in ids {
            if let Some((_, references)) = self.by_vm_id.get_mut(id) {
                *references = references.saturating_add_signed(change);
            }
        }
        if change < 0 {
            self.release(ids);
        }
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
        let vm_ids: Vec<u64> = tree.methods().into_iter().collect();
        let outcome = self.load_named(facts, tree, names, &vm_ids, now_ns);
        if !matches!(outcome, Loaded::New | Loaded::Replaced) {
            // Names given for code not kept are not kept either.
            self.release(&vm_ids);
        }
        outcome
    }

    fn load_named(
        &mut self,
        facts: CodeFacts,
        tree: TreeBuilder,
        names: Vec<(u64, Option<MethodFacts>)>,
        vm_ids: &[u64],
        now_ns: u64,
    ) -> Loaded {
        let named = names.into_iter().chain(vm_ids.iter().map(|&id| (id, None)));
        for (id, method) in named {
            if self.name(id, method).is_none() {
                self.refuse();
                return Loaded::Full;
            }
        }
        let by_vm_id = &self.by_vm_id;
        let tree = tree.finish(|id| by_vm_id[&id].0 .0);
        let room = self.tree_bytes + tree.bytes() <= self.limits.max_tree_bytes;
        let replaces = self.codes.contains_key(&facts.address);
        if !room || (self.codes.len() >= self.limits.max_codes && !replaces) {
            self.refuse();
            return Loaded::Full;
        }
        self.sequence += 1;
        let code = Code {
            facts,
            root: JitMethod(tree.root()),
            loaded_ns: now_ns,
            sequence: self.sequence,
            tree,
            vm_ids: vm_ids.to_vec(),
        };
        self.install(code, now_ns)
    }

    /// A load refused: the table lacks that code until it starts over.
    fn refuse(&mut self) {
        self.refused = true;
        self.complete = false;
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
        self.left.remove(&address);
        self.calls += code.tree.inlined_calls();
        self.tree_bytes += code.tree.bytes();
        self.code_ids += code.vm_ids.len();
        self.reference(&code.vm_ids, 1);
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
        self.code_ids -= code.vm_ids.len();
        self.reference(&code.vm_ids, -1);
        if let Some(current) = self.current.get_mut(&code.root) {
            if current.slot(code.facts.osr_bci) == Some(address) {
                current.set(code.facts.osr_bci, None);
            }
        }
        Some(code)
    }

    /// CompiledMethodUnload: the code of VM method `method` at `address` is
    /// gone. Returns what it was, if the table held it (it may have been
    /// replaced by newer code already, or have left it).
    ///
    /// The code's method, when no code names it and it has no current
    /// code, is forgotten with its place as current code: its class is
    /// likely gone (code only made not entrant, [`InlineTable::leave`],
    /// keeps it, and with it when its code changed).
    pub fn unload(&mut self, address: u64, method: u64, now_ns: u64) -> Option<(CodeFacts, MethodKey)> {
        // `leave` notes in `left` the method of the code it takes out, so
        // `left` has it whether the code leaves now or left before.
        let left = self.leave(address, method, now_ns);
        if let Some(root) = self.left.remove(&address) {
            let unused = self.ids_per_method.get(&root).is_none_or(|&count| count == 0);
            if unused && self.current.get(&root).is_none_or(|current| current.addresses().next().is_none()) {
                self.current.remove(&root);
                self.forget(root);
            }
        }
        left
    }

    /// The code of VM method `method` at `address` is no longer entered
    /// (made not entrant, or replaced by code whose load event is still to
    /// come) or is gone: the table forgets it, as it forgets replaced
    /// code. Returns what it was, if the table held it.
    pub fn leave(&mut self, address: u64, method: u64, now_ns: u64) -> Option<(CodeFacts, MethodKey)> {
        let root = self.codes.get(&address).filter(|code| code.facts.method == method)?.root;
        let key = self.key(root).clone();
        let code = self.remove(address)?;
        self.left.insert(address, root);
        if let Some(current) = self.current.get_mut(&code.root) {
            current.changed_ns = now_ns;
        }
        Some((code.facts, key))
    }

    /// The code at `address` and its method's key, if the table holds it.
    pub fn code_at(&self, address: u64) -> Option<(CodeFacts, &MethodKey)> {
        let code = self.codes.get(&address)?;
        Some((code.facts, self.key(code.root)))
    }

    /// The normal-entry codes whose nmethod is known: those the agent
    /// checks against what their method enters (`crate::events`).
    pub fn entries(&self) -> Vec<CodeFacts> {
        let entered = |code: &&Code| code.facts.osr_bci.is_none() && code.facts.nmethod.is_some();
        self.codes.values().filter(entered).map(|code| code.facts).collect()
    }

    /// Codes whose nmethod was not read at their load (no compile level,
    /// compile id or nmethod known), at most `limit`.
    pub fn unread(&self, limit: usize) -> Vec<u64> {
        self.codes
            .values()
            .filter(|code| code.facts.nmethod.is_none())
            .map(|code| code.facts.address)
            .take(limit)
            .collect()
    }

    /// Fills in what the load of the code at `address` could not read of
    /// its nmethod, when the entry read now is the one the table keeps it
    /// under (a normal-entry code found to be OSR code is left as it is).
    /// Whether the code took them.
    pub fn read_later(
        &mut self,
        address: u64,
        level: Option<u8>,
        osr_bci: Option<i32>,
        compile_id: Option<u32>,
        nmethod: u64,
    ) -> bool {
        match self.codes.get_mut(&address) {
            Some(code) if code.facts.nmethod.is_none() && code.facts.osr_bci == osr_bci => {
                code.facts.level = level;
                code.facts.compile_id = compile_id;
                code.facts.nmethod = Some(nmethod);
                true
            }
            _ => false,
        }
    }

    /// Forgets everything (to be filled again); incomplete until
    /// [`InlineTable::mark_complete`].
    pub fn restart(&mut self) {
        let restarts = self.restarts + 1;
        *self = InlineTable { limits: self.limits, restarts, ..InlineTable::default() };
    }

    /// The table now holds all the VM's code (events enabled, and the code
    /// compiled before them generated), unless it refused a load since it
    /// started: then it stays incomplete until a restart.
    pub fn mark_complete(&mut self) {
        self.complete = !self.refused;
    }

    pub fn complete(&self) -> bool {
        self.complete
    }

    /// Whether the table needs to start over: a load was refused since it
    /// started, or a bound is reached.
    pub fn is_full(&self) -> bool {
        self.refused
            || self.methods.len() >= self.limits.max_methods
            || self.tree_bytes >= self.limits.max_tree_bytes
            || self.by_vm_id.len() >= self.limits.max_vm_ids
            || self.codes.len() >= self.limits.max_codes
    }

    /// A copy of what a join over methods named `keys` reads: those
    /// methods, their current code, and whether the table is complete
    /// (copied under the table's lock, so that the join runs after it).
    pub fn extract<'k>(&self, keys: impl IntoIterator<Item = &'k MethodKey>) -> InlineTable {
        let mut part = InlineTable { limits: self.limits, complete: self.complete, ..InlineTable::default() };
        for key in keys {
            let Some(&method) = self.by_key.get(key) else { continue };
            let Some(facts) = self.methods.get(&method) else { continue };
            if part.methods.insert(method, facts.clone()).is_some() {
                continue;
            }
            part.by_key.insert(key.clone(), method);
            let Some(current) = self.current.get(&method) else { continue };
            for address in current.addresses() {
                part.codes.extend(self.codes.get(&address).map(|code| (address, code.clone())));
            }
            part.current.insert(method, current.clone());
        }
        part
    }

    /// The method the profile calls `key`, if the table knows it.
    pub fn method(&self, key: &MethodKey) -> Option<JitMethod> {
        self.by_key.get(key).copied()
    }

    /// The methods named `class.name`, of `signature` when given (every
    /// overload otherwise), in the order of their keys.
    pub fn find(&self, class: &str, name: &str, signature: Option<&str>) -> Vec<JitMethod> {
        let mut found: Vec<(&MethodKey, JitMethod)> = self
            .methods
            .iter()
            .filter(|(_, facts)| {
                facts.key.class == class && facts.key.name == name && signature.is_none_or(|s| facts.key.signature == s)
            })
            .map(|(&method, facts)| (&facts.key, method))
            .collect();
        found.sort();
        found.into_iter().map(|(_, method)| method).collect()
    }

    pub fn key(&self, method: JitMethod) -> &MethodKey {
        self.methods.get(&method).map_or(&UNNAMED, |facts| &facts.key)
    }

    pub fn bytecodes(&self, method: JitMethod) -> Option<u32> {
        self.methods.get(&method).and_then(|facts| facts.bytecodes)
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
            vm_ids: self.by_vm_id.len(),
            inlined_calls: self.calls,
            bytes: self.name_bytes + maps + self.code_ids * 8 + self.tree_bytes + codes * std::mem::size_of::<Code>(),
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
        CodeFacts {
            address,
            method,
            level: Some(4),
            osr_bci: None,
            compile_id: Some(compile_id),
            ..CodeFacts::default()
        }
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
    fn facts_not_read_at_the_load_are_filled_in_later_for_the_same_entry() {
        let mut table = InlineTable::new(Limits::default());
        let unread = CodeFacts { level: None, compile_id: None, nmethod: None, ..facts(0x1000, 1, 5) };
        table.load(unread, tree(1, &[]), names(&[1]), 10);
        table.load(CodeFacts { nmethod: Some(0x900), ..facts(0x2000, 2, 6) }, tree(2, &[]), names(&[2]), 10);
        assert_eq!(table.unread(10), vec![0x1000]);
        assert!(table.entries().iter().all(|facts| facts.address == 0x2000), "unread code is not checked");
        assert!(!table.read_later(0x1000, Some(4), Some(12), Some(7), 0x800), "an OSR entry is not the one kept");
        assert!(table.read_later(0x1000, Some(4), None, Some(7), 0x800));
        let (facts, _) = table.code_at(0x1000).unwrap();
        assert_eq!((facts.level, facts.compile_id, facts.nmethod), (Some(4), Some(7), Some(0x800)));
        assert!(table.unread(10).is_empty());
        assert!(!table.read_later(0x1000, Some(3), None, Some(8), 0x700), "read once");
        assert!(!table.read_later(0x3000, Some(4), None, Some(9), 0x600), "not held");
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
        assert!(table.unload(0x1000, 99, 8).is_none(), "another method's code at that address");
        assert!(table.unload(0x1000, 1, 9).is_some());
        assert!(table.unload(0x1000, 1, 9).is_none());
        // No code names m1 or its inlined m2 now: both names go with it.
        assert_eq!((table.method(&key("m1")), table.method(&key("m2"))), (None, None));
        let stats = table.stats();
        assert_eq!((stats.methods, stats.vm_ids, stats.inlined_calls), (0, 0, 0));
    }

    #[test]
    fn code_made_not_entrant_leaves_its_method_known_with_when_it_changed() {
        let mut table = InlineTable::new(Limits::default());
        load(&mut table, facts(0x1000, 1, 10), &[2]);
        assert!(table.leave(0x1000, 1, 9).is_some());
        let m1 = table.method(&key("m1")).expect("m1 stays known");
        assert_eq!((table.current(m1).count(), table.changed_ns(m1)), (0, Some(9)));
        // Its inlined callee, current nowhere and named by no code, goes.
        assert_eq!(table.method(&key("m2")), None);
        // Compiled again, it keeps its number.
        load(&mut table, facts(0x2000, 1, 11), &[]);
        assert_eq!(table.method(&key("m1")), Some(m1));
        // That code made not entrant too, then unloaded (its class went):
        // the method goes at the first unload that finds it without code.
        assert!(table.leave(0x2000, 1, 12).is_some());
        assert!(table.unload(0x1000, 1, 13).is_none(), "already left");
        assert_eq!((table.method(&key("m1")), table.stats().methods), (None, 0));
        assert!(table.unload(0x2000, 1, 14).is_none());
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
    fn code_no_longer_entered_leaves_with_its_facts_and_name() {
        let mut table = InlineTable::new(Limits::default());
        let entered = CodeFacts { nmethod: Some(0x900), code_size: Some(64), ..facts(0x1000, 1, 10) };
        assert_eq!(load(&mut table, entered, &[2]), Loaded::New);
        let osr = CodeFacts { osr_bci: Some(3), nmethod: Some(0xa00), ..facts(0x2000, 1, 11) };
        assert_eq!(load(&mut table, osr, &[]), Loaded::New);
        assert_eq!(load(&mut table, facts(0x3000, 4, 12), &[]), Loaded::New);
        assert_eq!(table.entries(), vec![entered], "normal entries with a known nmethod only");
        assert_eq!(table.code_at(0x1000).map(|(f, k)| (f, k.clone())), Some((entered, key("m1"))));
        assert_eq!(table.leave(0x1000, 99, 5), None, "another method's");
        assert_eq!(table.leave(0x1000, 1, 5), Some((entered, key("m1"))));
        assert_eq!(table.leave(0x1000, 1, 6), None, "gone");
        let m1 = table.method(&key("m1")).unwrap();
        assert_eq!(table.current(m1).map(|code| code.facts.address).collect::<Vec<_>>(), vec![0x2000]);
        assert_eq!(table.changed_ns(m1), Some(5));
        assert!(table.unload(0x1000, 1, 7).is_none(), "an unload after it finds nothing");
    }

    /// A refusal for tree bytes leaves every bound short of its cap: the
    /// table is still incomplete, needs to start over, and a fill that
    /// ends after the refusal does not call it complete.
    #[test]
    fn a_refusal_below_every_cap_keeps_the_table_incomplete_until_it_starts_over() {
        let probe = {
            let mut table = InlineTable::new(Limits::default());
            load(&mut table, facts(0x1000, 1, 1), &[2, 3, 4]);
            table.tree_bytes
        };
        let mut table = InlineTable::new(Limits { max_tree_bytes: probe + probe / 2, ..Limits::default() });
        assert_eq!(load(&mut table, facts(0x1000, 1, 1), &[2, 3, 4]), Loaded::New);
        assert_eq!(load(&mut table, facts(0x2000, 5, 2), &[6, 7, 8]), Loaded::Full);
        assert!(table.tree_bytes < table.limits.max_tree_bytes, "no cap reached");
        assert!(table.is_full(), "a restart is due");
        table.mark_complete();
        assert!(!table.complete(), "the fill ended after a refusal");
        table.restart();
        table.mark_complete();
        assert!(table.complete() && !table.is_full());
    }

    /// Class churn: the same class loaded again and again under one name,
    /// each time with new VM ids, its code compiled and then unloaded.
    #[test]
    fn vm_ids_leave_with_the_code_that_named_them_under_class_churn() {
        let limits = Limits { max_vm_ids: 8, ..Limits::default() };
        let mut table = InlineTable::new(limits);
        let same = |name: &str| Some(MethodFacts { key: key(name), bytecodes: Some(10) });
        for generation in 0..1000u64 {
            // Ids 2g+1 (the caller) and 2g+2 (its inlined callee): new
            // every generation, the same two names, gone with the code.
            let (caller, callee) = (2 * generation + 1, 2 * generation + 2);
            let address = 0x1000 + generation;
            let builder = tree(caller, &[callee]);
            assert_eq!(table.unnamed(&builder.methods()), vec![caller, callee]);
            let names = vec![(caller, same("churn")), (callee, same("helper"))];
            let loaded = table.load(facts(address, caller, generation as u32), builder, names, generation);
            assert!(matches!(loaded, Loaded::New | Loaded::Replaced), "generation {generation}: {loaded:?}");
            assert!(table.unload(address, caller, generation).is_some());
            let stats = table.stats();
            assert_eq!((stats.vm_ids, stats.codes, stats.methods), (0, 0, 0), "generation {generation}");
        }
        assert!(!table.is_full());
    }

    #[test]
    fn past_its_vm_ids_bound_a_load_is_refused_and_names_of_code_not_kept_are_not_kept() {
        let limits = Limits { max_vm_ids: 4, ..Limits::default() };
        let mut table = InlineTable::new(limits);
        table.mark_complete();
        assert_eq!(load(&mut table, facts(0x1000, 1, 1), &[2, 3]), Loaded::New);
        assert_eq!(table.stats().vm_ids, 3);
        // Two more ids do not fit: refused, and the one named first is let go.
        assert_eq!(load(&mut table, facts(0x2000, 4, 2), &[5]), Loaded::Full);
        assert_eq!(table.stats().vm_ids, 3);
        assert!(!table.complete());
        // Code already known is a duplicate: the names given for it go.
        let builder = tree(1, &[2, 3]);
        assert_eq!(table.load(facts(0x1000, 1, 1), builder, vec![], 0), Loaded::Duplicate);
        assert_eq!(table.stats().vm_ids, 3);
        // Unloading frees its ids: the refused code now fits.
        assert!(table.unload(0x1000, 1, 1).is_some());
        assert_eq!(table.stats().vm_ids, 0);
        assert_eq!(load(&mut table, facts(0x2000, 4, 2), &[5]), Loaded::New);
    }

    #[test]
    fn past_its_codes_bound_a_load_is_refused() {
        let mut table = InlineTable::new(Limits { max_codes: 2, ..Limits::default() });
        assert_eq!(load(&mut table, facts(0x1000, 1, 1), &[]), Loaded::New);
        assert_eq!(load(&mut table, facts(0x2000, 2, 2), &[]), Loaded::New);
        assert_eq!(load(&mut table, facts(0x3000, 3, 3), &[]), Loaded::Full);
        assert!(table.is_full());
        // Newer code of a method kept replaces its old code: it fits.
        assert_eq!(load(&mut table, facts(0x1000, 1, 4), &[]), Loaded::Replaced);
    }

    #[test]
    fn a_method_whose_name_went_with_unloaded_code_is_asked_for_again() {
        let mut table = InlineTable::new(Limits::default());
        load(&mut table, facts(0x1000, 1, 1), &[2]);
        // The agent asked for names of 3 and [1, 2] known...
        let builder = tree(3, &[2]);
        assert_eq!(table.unnamed(&builder.methods()), vec![3]);
        // ...then the code naming 2 was unloaded before the load.
        assert!(table.unload(0x1000, 1, 2).is_some());
        assert!(table.lacks_names(&builder.methods(), &names(&[3])));
        assert!(!table.lacks_names(&builder.methods(), &names(&[2, 3])));
        assert_eq!(load(&mut table, facts(0x2000, 3, 2), &[2]), Loaded::New);
    }

    #[test]
    fn an_extract_holds_the_methods_named_and_their_current_code_only() {
        let mut table = InlineTable::new(Limits::default());
        load(&mut table, facts(0x1000, 1, 1), &[2]);
        load(&mut table, facts(0x2000, 3, 2), &[]);
        table.mark_complete();
        let part = table.extract([&key("m1"), &key("m2"), &key("m9")]);
        let m1 = part.method(&key("m1")).expect("m1");
        assert_eq!(m1, table.method(&key("m1")).unwrap(), "the same numbers");
        let code = part.current(m1).next().expect("m1's code");
        assert_eq!(code.tree.inlined_methods().collect::<Vec<_>>(), vec![table.method(&key("m2")).unwrap().0]);
        assert_eq!(part.key(code.root), &key("m1"));
        assert_eq!(part.method(&key("m3")), None);
        assert!(part.complete());
        assert_eq!(part.stats().codes, 1);
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
