//! Naming methods: the sampler asks the VM (through the agent's
//! [`MethodResolver`]) once per new method id and caches the answer.

use std::ffi::c_void;

use pcct::{LineEntry, MethodId, MethodTable};
use rustc_hash::FxHashMap as HashMap;

use crate::native_frames::{FrameKey, NativeFrames, NativeName};

/// A method's names as the VM reports them (class in source form).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MethodDesc {
    pub class: String,
    pub name: String,
    pub signature: String,
    pub lines: Vec<LineEntry>,
    /// The class's source file (`HashMap.java`), when the class file names one.
    pub file: Option<String>,
}

/// Why a method id could not be named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResolveError {
    /// The method's class was unloaded (JVMTI_ERROR_INVALID_METHODID).
    Unloaded,
    /// Any other VM error code.
    Failed(u32),
}

/// Names method ids. Implemented by the agent with JVMTI; called only on
/// the sampler thread, which is attached to the VM.
pub trait MethodResolver {
    fn resolve(&mut self, method_id: *mut c_void) -> Result<MethodDesc, ResolveError>;
}

/// A resolver for tests and for VMs that cannot name methods: every id
/// becomes `[unknown_method]`.
pub struct NoNames;

impl MethodResolver for NoNames {
    fn resolve(&mut self, _method_id: *mut c_void) -> Result<MethodDesc, ResolveError> {
        Err(ResolveError::Failed(0))
    }
}

/// Most cached ids before the cache is cleared (ids still in use are
/// named again; ids of unloaded classes are never looked up again).
const CACHE_LIMIT: usize = 1 << 20;

/// jmethodID, or a native frame's code address, -> interned method (the
/// two never collide: a jmethodID points to data, a native frame to code).
#[derive(Default)]
pub(crate) struct MethodCache {
    ids: HashMap<usize, MethodId>,
    /// Named since the last `intern_pending`, not yet interned.
    pending: Vec<(usize, Result<MethodDesc, ResolveError>)>,
    /// Native frames named since the last `intern_pending`: address, its
    /// function, its name (`None`: in no module).
    pending_native: Vec<(usize, Option<FrameKey>, Option<NativeName>)>,
    /// Native functions interned in the method table, by function: a new
    /// address of a known function takes its method without the table.
    native_ids: HashMap<FrameKey, MethodId>,
    pending_ids: HashMap<usize, ()>,
}

impl MethodCache {
    pub(crate) fn get(&self, method_id: usize) -> Option<MethodId> {
        self.ids.get(&method_id).copied()
    }

    /// Names `method_id` if it is new (outside any lock).
    pub(crate) fn resolve_if_new(&mut self, method_id: usize, resolver: &mut dyn MethodResolver) -> bool {
        if method_id == 0 || self.ids.contains_key(&method_id) || self.pending_ids.contains_key(&method_id) {
            return false;
        }
        let answer = resolver.resolve(method_id as *mut c_void);
        self.pending.push((method_id, answer));
        self.pending_ids.insert(method_id, ());
        true
    }

    /// Names the native frame at code address `address` if it is new
    /// (outside any lock).
    pub(crate) fn name_native_if_new(&mut self, address: usize, native: &mut NativeFrames) -> bool {
        if self.ids.contains_key(&address) || self.pending_ids.contains_key(&address) {
            return false;
        }
        let key = native.key(address);
        if let Some(&id) = key.as_ref().and_then(|key| self.native_ids.get(key)) {
            self.ids.insert(address, id);
            return false;
        }
        let name = key.and_then(|key| native.name(address, key));
        self.pending_native.push((address, key, name));
        self.pending_ids.insert(address, ());
        true
    }

    /// Whether some names wait to be interned.
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty() || !self.pending_native.is_empty()
    }

    /// Interns what was named (under the profile lock). Returns
    /// (resolved, unloaded, failed) counts.
    pub(crate) fn intern_pending(&mut self, methods: &mut MethodTable) -> (u64, u64, u64) {
        if self.ids.len() + self.pending.len() + self.pending_native.len() > CACHE_LIMIT {
            self.ids.clear();
        }
        for (address, key, name) in self.pending_native.drain(..) {
            let id = match (key.and_then(|key| self.native_ids.get(&key).copied()), name) {
                (Some(id), _) => id,
                (None, Some(NativeName::Function { library, function })) => methods.intern_native(&library, &function),
                (None, Some(NativeName::Truncated)) => methods.intern_pseudo(NativeName::TRUNCATED),
                (None, None) => pcct::Builtin::UnknownMethod.id(),
            };
            if let Some(key) = key {
                self.native_ids.insert(key, id);
            }
            self.ids.insert(address, id);
        }
        let mut counts = (0, 0, 0);
        for (method_id, answer) in self.pending.drain(..) {
            let id = match answer {
                Ok(desc) => {
                    counts.0 += 1;
                    let id = methods.intern(&desc.class, &desc.name, &desc.signature);
                    if !desc.lines.is_empty() && methods.get(id).lines.is_none() {
                        methods.set_lines(id, desc.lines);
                    }
                    if let Some(file) = desc.file.as_deref().filter(|_| methods.get(id).file.is_none()) {
                        methods.set_file(id, file);
                    }
                    id
                }
                Err(ResolveError::Unloaded) => {
                    counts.1 += 1;
                    pcct::Builtin::Unloaded.id()
                }
                Err(ResolveError::Failed(_)) => {
                    counts.2 += 1;
                    pcct::Builtin::UnknownMethod.id()
                }
            };
            self.ids.insert(method_id, id);
        }
        self.pending_ids.clear();
        counts
    }

    /// Forgets every id (their MethodIds belong to a method table that was replaced).
    pub(crate) fn clear(&mut self) {
        self.ids.clear();
        self.pending.clear();
        self.pending_native.clear();
        self.native_ids.clear();
        self.pending_ids.clear();
    }
}
