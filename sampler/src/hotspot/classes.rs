//! An event's class, named without a JVMTI call when it was named before.
//!
//! A sampled allocation's callback gets its object's class as a JNI
//! reference. Naming it with JVMTI's `GetClassSignature` (a transition into
//! the VM, a string made and freed, the signature turned into Java's
//! spelling) was a quarter to a third of the callback's time on javac and
//! H2 (perf, 2026-11-29). A thread allocates the same few classes over and
//! over, so each callback thread keeps the names it made ([`ClassNames`]),
//! found again by what HotSpot's own structures say of the class:
//! the reference's mirror (`java.lang.Class`), its `Klass`, and the bytes
//! of the `Klass`'s name symbol ([`class_symbol`]).
//!
//! Correctness: a name is reused only for the same `Klass` whose name
//! symbol holds the same bytes as when the name was made, and only when
//! the `Klass` points back to the mirror the reference holds (so a mirror
//! moved by the collector between two reads, or a stale reference, is
//! never taken for a class). Everything else, and every read that faults,
//! falls back to JVMTI. Under ZGC, whose references carry colour bits, the
//! reading is not even tried ([`ClassLayout::from_tables`]).

use std::sync::Arc;

use super::flags;
use super::memory::Memory;
use super::vmstructs::VmStructs;

/// Longest class name (in bytes of its symbol) kept in [`ClassNames`].
pub const MAX_NAME: usize = 256;

/// Where HotSpot keeps a class's `Klass` and name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassLayout {
    /// `java_lang_Class::_klass_offset`: the mirror's field that holds its `Klass*`.
    pub mirror_klass: usize,
    /// `Klass::_java_mirror`: the `OopHandle` back to the mirror.
    pub klass_mirror: usize,
    /// `Klass::_name`: the class's name `Symbol*` (`java/lang/String`, `[B`).
    pub klass_name: usize,
    /// `Symbol::_length` (u2) and `Symbol::_body` (the bytes).
    pub symbol_length: usize,
    pub symbol_body: usize,
}

impl ClassLayout {
    /// The layout from this VM's tables, read after VMInit (the mirror's
    /// offset is computed at start-up); `None` where a field is not
    /// described or the collector is ZGC.
    pub fn from_tables(tables: &VmStructs) -> Option<ClassLayout> {
        if flags::get_bool(tables, "UseZGC") != Some(false) {
            return None;
        }
        let offset = tables.address("java_lang_Class", "_klass_offset")?;
        // SAFETY: a static int of libjvm.so, described by its own tables.
        let mirror_klass = unsafe { *(offset as *const i32) };
        Some(ClassLayout {
            mirror_klass: usize::try_from(mirror_klass).ok().filter(|&offset| offset > 0 && offset < 4096)?,
            klass_mirror: tables.offset("Klass", "_java_mirror")?,
            klass_name: tables.offset("Klass", "_name")?,
            symbol_length: tables.offset("Symbol", "_length")?,
            symbol_body: tables.offset("Symbol", "_body")?,
        })
    }
}

/// What HotSpot says of a class: its `Klass*` and its name's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassSymbol<'a> {
    pub klass: usize,
    pub bytes: &'a [u8],
}

/// The `Klass` and name bytes of the class whose local JNI reference is
/// `class`, read into `buffer`; `None` if a read faults, the reference is
/// not a plain local one, the `Klass` does not point back to the mirror,
/// or the name is longer than `buffer`.
pub fn class_symbol<'b>(
    memory: &impl Memory,
    layout: &ClassLayout,
    class: usize,
    buffer: &'b mut [u8],
) -> Option<ClassSymbol<'b>> {
    // A local reference is the address of a slot holding the oop; tagged
    // ones (global, weak) are not what a callback gets.
    if class == 0 || class & 7 != 0 {
        return None;
    }
    let mirror = memory.word(class).filter(|&oop| oop != 0 && oop & 7 == 0)?;
    let klass = memory.word(mirror + layout.mirror_klass).filter(|&klass| klass != 0)?;
    let handle = memory.word(klass + layout.klass_mirror).filter(|&slot| slot != 0)?;
    if memory.word(handle)? != mirror {
        return None;
    }
    let symbol = memory.word(klass + layout.klass_name).filter(|&symbol| symbol != 0)?;
    let length = usize::from(memory.u16(symbol + layout.symbol_length)?);
    let bytes = buffer.get_mut(..length)?;
    let body = symbol + layout.symbol_body;
    let mut chunks = bytes.chunks_exact_mut(8);
    let mut at = body;
    for chunk in &mut chunks {
        chunk.copy_from_slice(&memory.u64(at)?.to_le_bytes());
        at += 8;
    }
    for byte in chunks.into_remainder() {
        *byte = memory.u8(at)?;
        at += 1;
    }
    Some(ClassSymbol { klass, bytes })
}

/// [`class_symbol`] in this process's VM, once the walker's [`super::init`]
/// succeeded and the VM describes its classes ([`super::Vm::classes`]);
/// `None` otherwise. For the callbacks and the park hook, on the thread
/// that holds the local reference `class`.
pub fn class_symbol_here(class: usize, buffer: &mut [u8]) -> Option<ClassSymbol<'_>> {
    let layout = super::vm()?.classes.as_ref()?;
    class_symbol(&super::memory::VmMemory, layout, class, buffer)
}

/// Names a thread made for classes, found again by [`ClassSymbol`]: a
/// direct-mapped table of [`ClassNames::SLOTS`] entries (a thread's
/// classes beyond it take each other's place; nothing grows).
#[derive(Default)]
pub struct ClassNames {
    slots: Vec<Option<Entry>>,
}

struct Entry {
    klass: usize,
    bytes: Box<[u8]>,
    name: Arc<str>,
}

impl ClassNames {
    pub const SLOTS: usize = 64;

    fn index(klass: usize) -> usize {
        // Klass pointers are 8-aligned; mix the bits above.
        ((klass >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) % Self::SLOTS
    }

    /// The name made for `symbol` before, if its class and bytes are the same.
    pub fn get(&self, symbol: &ClassSymbol<'_>) -> Option<Arc<str>> {
        let entry = self.slots.get(Self::index(symbol.klass))?.as_ref()?;
        (entry.klass == symbol.klass && *entry.bytes == *symbol.bytes).then(|| Arc::clone(&entry.name))
    }

    /// Keeps `name` for `symbol`.
    pub fn insert(&mut self, symbol: &ClassSymbol<'_>, name: Arc<str>) {
        if self.slots.is_empty() {
            self.slots.resize_with(Self::SLOTS, || None);
        }
        let entry = Entry { klass: symbol.klass, bytes: symbol.bytes.into(), name };
        self.slots[Self::index(symbol.klass)] = Some(entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hotspot::memory::FakeMemory;

    const LAYOUT: ClassLayout =
        ClassLayout { mirror_klass: 0x60, klass_mirror: 0x70, klass_name: 0x10, symbol_length: 4, symbol_body: 6 };
    const REFERENCE: usize = 0x1000;
    const MIRROR: usize = 0x2000;
    const KLASS: usize = 0x3000;
    const SLOT: usize = 0x4000;
    const SYMBOL: usize = 0x5000;

    fn class_named(name: &[u8]) -> FakeMemory {
        let mut memory = FakeMemory::default();
        for base in [REFERENCE, MIRROR, KLASS, SLOT, SYMBOL] {
            memory.map(base, 0x200);
        }
        memory.put_u64(REFERENCE, MIRROR as u64);
        memory.put_u64(MIRROR + LAYOUT.mirror_klass, KLASS as u64);
        memory.put_u64(KLASS + LAYOUT.klass_mirror, SLOT as u64);
        memory.put_u64(SLOT, MIRROR as u64);
        memory.put_u64(KLASS + LAYOUT.klass_name, SYMBOL as u64);
        memory.put_u16(SYMBOL + LAYOUT.symbol_length, name.len() as u16);
        memory.write(SYMBOL + LAYOUT.symbol_body, name);
        memory
    }

    #[test]
    fn a_class_is_read_from_its_mirror_and_klass() {
        for name in [&b"java/lang/String"[..], b"[B", b"", b"Exactly8", b"a/b/C$D$$Lambda+0x0000000800c01000"] {
            let memory = class_named(name);
            let mut buffer = [0u8; MAX_NAME];
            let symbol = class_symbol(&memory, &LAYOUT, REFERENCE, &mut buffer);
            assert_eq!(symbol, Some(ClassSymbol { klass: KLASS, bytes: name }));
        }
    }

    #[test]
    fn a_klass_that_does_not_point_back_is_no_class() {
        let mut memory = class_named(b"java/lang/String");
        memory.put_u64(SLOT, (MIRROR + 0x100) as u64); // the mirror moved
        assert_eq!(class_symbol(&memory, &LAYOUT, REFERENCE, &mut [0u8; MAX_NAME]), None);
    }

    #[test]
    fn unreadable_tagged_or_long_is_no_class() {
        let memory = class_named(b"java/lang/String");
        assert_eq!(class_symbol(&memory, &LAYOUT, REFERENCE | 2, &mut [0u8; MAX_NAME]), None);
        assert_eq!(class_symbol(&memory, &LAYOUT, 0x9000, &mut [0u8; MAX_NAME]), None);
        assert_eq!(class_symbol(&memory, &LAYOUT, REFERENCE, &mut [0u8; 8]), None);
        let mut cut = class_named(b"java/lang/String");
        cut.put_u16(SYMBOL + LAYOUT.symbol_length, 0x1FF); // runs past the mapped bytes
        assert_eq!(class_symbol(&cut, &LAYOUT, REFERENCE, &mut [0u8; 0x200]), None);
    }

    #[test]
    fn a_name_is_reused_only_for_the_same_klass_and_bytes() {
        let mut names = ClassNames::default();
        let string = ClassSymbol { klass: KLASS, bytes: b"java/lang/String" };
        assert_eq!(names.get(&string), None);
        names.insert(&string, Arc::from("java.lang.String"));
        assert_eq!(names.get(&string).as_deref(), Some("java.lang.String"));
        // The same Klass memory now another class (unloaded, reused).
        assert_eq!(names.get(&ClassSymbol { klass: KLASS, bytes: b"java/lang/Strinh" }), None);
        assert_eq!(names.get(&ClassSymbol { klass: KLASS + 8, bytes: b"java/lang/String" }), None);
        // A class in the same slot takes its place.
        let other = (1..).map(|n| KLASS + 8 * n).find(|&k| ClassNames::index(k) == ClassNames::index(KLASS)).unwrap();
        names.insert(&ClassSymbol { klass: other, bytes: b"[B" }, Arc::from("byte[]"));
        assert_eq!(names.get(&string), None);
        assert_eq!(names.get(&ClassSymbol { klass: other, bytes: b"[B" }).as_deref(), Some("byte[]"));
    }
}
