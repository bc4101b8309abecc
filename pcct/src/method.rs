//! Interned methods. The tree is keyed by [`MethodId`], never by a VM's raw
//! method handle: two handles that name the same method (a class loaded
//! twice, a handle resolved again after a purge) become one `MethodId`.
//!
//! Besides real methods the table holds *pseudo-methods*, written in
//! brackets (`[gc_active]`, `[truncated]`, ...): samples that could not be
//! attributed to Java code are recorded under them instead of being dropped.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Index of a method in a [`MethodTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct MethodId(pub u32);

/// Whether a method is Java code, native code (a function of a library,
/// [`MethodTable::intern_native`]), a bracketed stand-in, or a class: an
/// event's leaf (the allocated type, the monitor's class; see
/// [`MethodTable::intern_type`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MethodKind {
    Java,
    Pseudo,
    Type,
    Native,
}

/// One entry of a line number table: bytecodes from `start_bci` on belong to `line`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LineEntry {
    pub start_bci: u32,
    pub line: u32,
}

/// What is known about an interned method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MethodInfo {
    /// Declaring class in source form (`java.util.HashMap`), the library of
    /// a native function (`libz.so.1`); empty for pseudo-methods.
    pub class: Arc<str>,
    /// Method name (`get`), a native function's (`deflate`; its library's
    /// file name where the library has no symbol for it), or the bracketed
    /// pseudo name (`[gc_active]`).
    pub name: Arc<str>,
    /// JVM descriptor (`(Ljava/lang/Object;)Ljava/lang/Object;`); empty when unknown.
    pub signature: Arc<str>,
    pub kind: MethodKind,
    /// Line number table sorted by `start_bci`, when the VM supplied one.
    pub lines: Option<Arc<[LineEntry]>>,
    /// The declaring class's source file as its class file names it
    /// (`HashMap.java`), when the VM supplied it.
    pub file: Option<Arc<str>>,
}

impl MethodInfo {
    /// `class.name` for Java methods, the function for native ones (as
    /// async-profiler and perf show them), the bracketed name for
    /// pseudo-methods.
    pub fn display_name(&self) -> String {
        if self.class.is_empty() || self.kind == MethodKind::Native {
            self.name.to_string()
        } else {
            format!("{}.{}", self.class, self.name)
        }
    }

    /// The source file's path as tools look it up under a source root:
    /// the class's package as directories, then the file
    /// (`java/util/HashMap.java`); `None` when the file is not known.
    pub fn source_path(&self) -> Option<String> {
        let file = self.file.as_deref()?;
        let outer = self.class.split('$').next().unwrap_or("");
        Some(match outer.rsplit_once('.') {
            Some((package, _)) => format!("{}/{file}", package.replace('.', "/")),
            None => file.to_string(),
        })
    }

    /// Source line of bytecode index `bci`, if the line table covers it.
    pub fn line_of(&self, bci: i32) -> Option<u32> {
        let lines = self.lines.as_ref()?;
        let bci = u32::try_from(bci).ok()?;
        let after = lines.partition_point(|entry| entry.start_bci <= bci);
        after.checked_sub(1).map(|index| lines[index].line)
    }
}

/// Pseudo-methods every table has, at fixed ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    /// The root of every tree.
    Root,
    /// Parent of subtrees whose calling context could not be found within the
    /// bounded walk (Whaley Figure 10).
    Unattached,
    /// Stands for the frames cut off a stack deeper than the configured depth.
    Truncated,
    /// A method whose class was unloaded before its name could be read.
    Unloaded,
    /// A frame the VM reported without a method.
    UnknownMethod,
}

impl Builtin {
    pub const ALL: [Builtin; 5] =
        [Builtin::Root, Builtin::Unattached, Builtin::Truncated, Builtin::Unloaded, Builtin::UnknownMethod];

    pub fn id(self) -> MethodId {
        MethodId(self as u32)
    }

    pub fn name(self) -> &'static str {
        match self {
            Builtin::Root => "[root]",
            Builtin::Unattached => "[unattached]",
            Builtin::Truncated => "[truncated]",
            Builtin::Unloaded => "[unloaded]",
            Builtin::UnknownMethod => "[unknown_method]",
        }
    }
}

type MethodKey = (Arc<str>, Arc<str>, Arc<str>);

/// The key signature of a type entry ([`MethodTable::intern_type`]).
const TYPE_SIGNATURE: &str = "<type>";

/// The key signature of a native function ([`MethodTable::intern_native`]).
const NATIVE_SIGNATURE: &str = "<native>";

/// Interns methods by (class, name, signature) and pseudo-methods by name.
#[derive(Clone, Debug)]
pub struct MethodTable {
    methods: Vec<MethodInfo>,
    by_key: HashMap<MethodKey, MethodId>,
    classes: HashMap<Arc<str>, ()>,
    string_bytes: usize,
}

impl Default for MethodTable {
    fn default() -> Self {
        Self::new()
    }
}

impl MethodTable {
    pub fn new() -> MethodTable {
        let mut table =
            MethodTable { methods: Vec::new(), by_key: HashMap::new(), classes: HashMap::new(), string_bytes: 0 };
        for builtin in Builtin::ALL {
            let id = table.intern_pseudo(builtin.name());
            debug_assert_eq!(id, builtin.id());
        }
        table
    }

    /// Interns a Java method. `class` is in source form (`java.util.HashMap`).
    pub fn intern(&mut self, class: &str, name: &str, signature: &str) -> MethodId {
        let class = self.class_name(class);
        self.intern_key(class, name, signature, MethodKind::Java)
    }

    /// Interns a pseudo-method; `name` should be bracketed (`[gc_active]`).
    pub fn intern_pseudo(&mut self, name: &str) -> MethodId {
        self.intern_key(Arc::from(""), name, "", MethodKind::Pseudo)
    }

    /// Interns a class as an event's leaf frame: the type an allocation
    /// made, the class of a monitor a thread waited for. `name` is as Java
    /// writes it (`byte[]`, `java.lang.String[]`, `java.util.HashMap`); it
    /// is shown as it is (no brackets, no method), as async-profiler shows
    /// allocated types. A class and a method never share an entry: a type
    /// is keyed with the signature `<type>`, which no method has.
    pub fn intern_type(&mut self, name: &str) -> MethodId {
        let id = self.intern_key(Arc::from(""), name, TYPE_SIGNATURE, MethodKind::Type);
        debug_assert_eq!(self.get(id).kind, MethodKind::Type);
        id
    }

    /// Interns a native function: `function` of `library` (the file name,
    /// `libz.so.1`); a code address without a symbol is interned with the
    /// library's name as its function, as async-profiler shows it. A native
    /// function and a Java method never share an entry: the library is kept
    /// as the class with the signature `<native>`, which no method has.
    pub fn intern_native(&mut self, library: &str, function: &str) -> MethodId {
        let library = self.class_name(library);
        self.intern_key(library, function, NATIVE_SIGNATURE, MethodKind::Native)
    }

    fn class_name(&mut self, class: &str) -> Arc<str> {
        if let Some((interned, ())) = self.classes.get_key_value(class) {
            return Arc::clone(interned);
        }
        let interned: Arc<str> = Arc::from(class);
        self.string_bytes += class.len();
        self.classes.insert(Arc::clone(&interned), ());
        interned
    }

    fn intern_key(&mut self, class: Arc<str>, name: &str, signature: &str, kind: MethodKind) -> MethodId {
        let key: MethodKey = (class, Arc::from(name), Arc::from(signature));
        if let Some(&id) = self.by_key.get(&key) {
            return id;
        }
        let id = MethodId(u32::try_from(self.methods.len()).expect("more than 4G methods"));
        self.string_bytes += name.len() + signature.len();
        self.methods.push(MethodInfo {
            class: Arc::clone(&key.0),
            name: Arc::clone(&key.1),
            signature: Arc::clone(&key.2),
            kind,
            lines: None,
            file: None,
        });
        self.by_key.insert(key, id);
        id
    }

    /// Records the line number table of `method` (sorted here by start bci).
    pub fn set_lines(&mut self, method: MethodId, mut lines: Vec<LineEntry>) {
        if let Some(info) = self.methods.get_mut(method.0 as usize) {
            lines.sort_by_key(|entry| entry.start_bci);
            self.string_bytes += lines.len() * std::mem::size_of::<LineEntry>();
            info.lines = Some(Arc::from(lines));
        }
    }

    /// Records the source file of `method`'s class (`HashMap.java`); file
    /// names are interned like class names.
    pub fn set_file(&mut self, method: MethodId, file: &str) {
        if self.methods.get(method.0 as usize).is_none() || file.is_empty() {
            return;
        }
        let file = self.class_name(file);
        self.methods[method.0 as usize].file = Some(file);
    }

    /// The method behind `id`. Ids come from this table; an unknown id
    /// yields the `[unknown_method]` entry rather than a panic.
    pub fn get(&self, id: MethodId) -> &MethodInfo {
        self.methods.get(id.0 as usize).unwrap_or(&self.methods[Builtin::UnknownMethod as usize])
    }

    pub fn len(&self) -> usize {
        self.methods.len()
    }

    pub fn is_empty(&self) -> bool {
        self.methods.is_empty()
    }

    /// Number of Java methods (not native functions, pseudo-methods or types).
    pub fn java_methods(&self) -> usize {
        self.methods.iter().filter(|info| info.kind == MethodKind::Java).count()
    }

    /// Approximate heap bytes held by the table (entries, index and strings).
    pub fn approx_bytes(&self) -> usize {
        self.methods.capacity() * std::mem::size_of::<MethodInfo>()
            + self.by_key.capacity() * (std::mem::size_of::<MethodKey>() + 8)
            + self.string_bytes
    }

    /// `class.name` of `id`.
    pub fn display_name(&self, id: MethodId) -> String {
        self.get(id).display_name()
    }

    pub fn iter(&self) -> impl Iterator<Item = (MethodId, &MethodInfo)> {
        self.methods.iter().enumerate().map(|(index, info)| (MethodId(index as u32), info))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_idempotent_and_builtins_are_fixed() {
        let mut table = MethodTable::new();
        let a = table.intern("java.util.HashMap", "get", "(Ljava/lang/Object;)Ljava/lang/Object;");
        let b = table.intern("java.util.HashMap", "get", "(Ljava/lang/Object;)Ljava/lang/Object;");
        let c = table.intern("java.util.HashMap", "put", "()V");
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(table.get(Builtin::Truncated.id()).name.as_ref(), "[truncated]");
        assert_eq!(table.intern_pseudo("[root]"), Builtin::Root.id());
        assert_eq!(table.display_name(a), "java.util.HashMap.get");
        assert_eq!(table.java_methods(), 2);
    }

    #[test]
    fn line_lookup_uses_the_covering_entry() {
        let mut table = MethodTable::new();
        let m = table.intern("A", "f", "()V");
        table.set_lines(m, vec![LineEntry { start_bci: 10, line: 7 }, LineEntry { start_bci: 0, line: 5 }]);
        let info = table.get(m);
        assert_eq!(info.line_of(0), Some(5));
        assert_eq!(info.line_of(9), Some(5));
        assert_eq!(info.line_of(10), Some(7));
        assert_eq!(info.line_of(-1), None);
    }

    #[test]
    fn source_paths_follow_the_package_of_the_outermost_class() {
        let mut table = MethodTable::new();
        let inner = table.intern("java.util.HashMap$Node", "get", "()V");
        let bare = table.intern("Demo", "main", "()V");
        assert_eq!(table.get(inner).source_path(), None);
        table.set_file(inner, "HashMap.java");
        table.set_file(bare, "Demo.java");
        assert_eq!(table.get(inner).source_path().as_deref(), Some("java/util/HashMap.java"));
        assert_eq!(table.get(bare).source_path().as_deref(), Some("Demo.java"));
        table.set_file(MethodId(9999), "X.java");
    }

    #[test]
    fn native_functions_are_methods_of_their_library_and_never_java() {
        let mut table = MethodTable::new();
        let deflate = table.intern_native("libz.so.1", "deflate");
        assert_eq!(table.intern_native("libz.so.1", "deflate"), deflate);
        assert_ne!(table.intern_native("libc.so.6", "deflate"), deflate, "one function per library");
        let java = table.intern("libz.so.1", "deflate", "()V");
        assert_ne!(java, deflate);
        let info = table.get(deflate);
        assert_eq!((info.kind, info.class.as_ref()), (MethodKind::Native, "libz.so.1"));
        assert_eq!(info.display_name(), "deflate");
        assert_eq!(table.java_methods(), 1);
    }
}
