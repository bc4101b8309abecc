//! Native addresses to names: library, function and offset.
//!
//! A [`SymbolTable`] is built once per module from its ELF symbol tables
//! (`.symtab` and `.dynsym`, through `object`): the defined functions, sorted
//! by address, their names in one string. A lookup is a binary search. Where
//! several names share an address (glibc's `getpid` and `__getpid`), the one
//! with the fewest leading underscores wins, then global before weak before
//! local: the name a user wrote. Names are demangled when looked up: Rust
//! (`rustc-demangle`, without the hash), else C++ (`cpp_demangle`).
//!
//! A module's own symbols are joined by those of its separate debug file
//! where one is installed ([`debug_file`]: by build id or `.gnu_debuglink`,
//! as gdb and perf find them), which name the static functions a stripped
//! library hides (glibc's, with `libc6-dbg`). A module without a symbol for
//! an address (stripped, or a hidden function) gives the library's file
//! name and the address's offset in the file, as async-profiler shows it.
//!
//! [`Symbolizer`] keeps each module's table once loaded, and the module with
//! it, so addresses sampled before a library was unloaded still resolve.
//!
//! Everything here allocates and reads files: it runs on the sampler thread
//! or at report time, never in a signal handler.

use std::collections::HashMap;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use object::read::ReadCache;
use object::{Object, ObjectSection, ObjectSymbol, ReadRef, SymbolKind, SymbolScope};

use crate::error::{NativeError, Result};
use crate::modules::{Image, Module, Modules};

/// A native frame's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// The library's file name (`libc.so.6`).
    pub library: Arc<str>,
    /// The function, demangled; `None` where the library has no symbol for
    /// the address.
    pub function: Option<String>,
    /// From the function's start, or (without a function) from the
    /// library's address 0.
    pub offset: u64,
}

impl Symbol {
    /// What a report shows: the function, else the library.
    pub fn name(&self) -> &str {
        self.function.as_deref().unwrap_or(&self.library)
    }
}

/// One function symbol: its addresses in the file, its name in `names`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    start: u64,
    end: u64,
    name: Range<usize>,
}

/// A module's function symbols, sorted by address.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct SymbolTable {
    entries: Vec<Entry>,
    names: String,
}

/// A symbol as read, before the table is sorted.
struct Candidate<'a> {
    start: u64,
    size: u64,
    name: &'a str,
    rank: (usize, u8),
}

impl SymbolTable {
    /// Reads the symbols of `module`'s file (or of the vDSO in memory).
    pub fn read(module: &Module) -> Result<SymbolTable> {
        match Image::open(&module.path, &module.avma, module.inode)? {
            Image::Memory(image) => SymbolTable::parse(image, &module.path),
            Image::File(cache) => SymbolTable::parse(&TablesRead::new(cache), &module.path),
        }
    }

    /// Builds the table from an ELF image at `path`, with the symbols of its
    /// separate debug file where one is installed ([`debug_file`]).
    pub fn parse<'d, R: ReadRef<'d>>(data: R, path: &Path) -> Result<SymbolTable> {
        SymbolTable::parse_with_debug(data, path, Path::new(DEBUG_ROOT))
    }

    /// [`SymbolTable::parse`], looking for debug files under `debug_root`.
    pub fn parse_with_debug<'d, R: ReadRef<'d>>(data: R, path: &Path, debug_root: &Path) -> Result<SymbolTable> {
        let file = object::File::parse(data).map_err(|reason| NativeError::Elf { path: path.into(), reason })?;
        let debug = debug_file(&file, path, debug_root).and_then(|debug| File::open(debug).ok());
        let debug = debug.map(|debug| TablesRead::new(ReadCache::new(debug)));
        let debug = debug.as_ref().and_then(|tables| object::File::parse(tables).ok());
        let mut candidates: Vec<Candidate<'_>> =
            debug.iter().flat_map(|debug| debug.symbols()).filter_map(candidate).collect();
        candidates.extend(file.symbols().chain(file.dynamic_symbols()).filter_map(candidate).map(shorter));
        Ok(SymbolTable::from_candidates(candidates))
    }

    /// Sorts the symbols by address, keeps the best-ranked name of each.
    fn from_candidates(mut candidates: Vec<Candidate>) -> SymbolTable {
        candidates.sort_by_key(|candidate| (candidate.start, candidate.rank));
        candidates.dedup_by_key(|candidate| candidate.start);
        let mut table = SymbolTable { entries: Vec::with_capacity(candidates.len()), names: String::new() };
        for (index, candidate) in candidates.iter().enumerate() {
            let next = candidates.get(index + 1).map_or(u64::MAX, |next| next.start);
            // A symbol without a size (hand-written assembly) runs to the next.
            let end = if candidate.size == 0 { next } else { candidate.start.saturating_add(candidate.size) };
            let name = table.names.len()..table.names.len() + candidate.name.len();
            table.names.push_str(candidate.name);
            table.entries.push(Entry { start: candidate.start, end, name });
        }
        table
    }

    /// How many functions the table holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table holds no function.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The raw (mangled) name of the function holding the file address
    /// `svma`, and the offset from its start.
    pub fn lookup(&self, svma: u64) -> Option<(&str, u64)> {
        let after = self.entries.partition_point(|entry| entry.start <= svma);
        let entry = self.entries.get(after.checked_sub(1)?)?;
        (svma < entry.end).then(|| (&self.names[entry.name.clone()], svma - entry.start))
    }
}

/// An ELF file read through [`ReadCache`] (only the ranges asked for),
/// with its symbol and string tables each read whole first: `object` reads
/// each symbol's name as its own range, through the cache a seek and a read
/// system call per name (the 58,000 names of Debian JDK 17's libjvm.so took
/// 71-83 ms). Read whole, a name is a slice of its cached table.
pub(crate) struct TablesRead {
    cache: ReadCache<File>,
    /// The tables' file ranges, each in the cache as one range.
    tables: Vec<Range<u64>>,
}

/// The sections [`TablesRead`] reads whole.
const TABLES: [&str; 4] = [".symtab", ".strtab", ".dynsym", ".dynstr"];

impl TablesRead {
    /// Reads `cache`'s file's tables (those it finds; none if it is no ELF
    /// file, whose parse then fails as it would have).
    pub(crate) fn new(cache: ReadCache<File>) -> TablesRead {
        let ranges: Vec<Range<u64>> = match object::File::parse(&cache) {
            Ok(file) => TABLES
                .iter()
                .filter_map(|name| file.section_by_name(name)?.file_range())
                .map(|(offset, size)| offset..offset.saturating_add(size))
                .collect(),
            Err(_) => Vec::new(),
        };
        let tables = ranges.into_iter().filter(|range| whole(&cache, range).is_some()).collect();
        TablesRead { cache, tables }
    }

    /// The table holding the file range `offset..offset + size`, and where
    /// in it the range starts.
    fn table_of(&self, offset: u64, size: u64) -> Option<(&[u8], usize)> {
        let end = offset.checked_add(size)?;
        let table = self.tables.iter().find(|table| table.start <= offset && end <= table.end)?;
        Some((whole(&self.cache, table)?, (offset - table.start) as usize))
    }
}

/// A table's bytes: read at the first call, from the cache after.
fn whole<'a>(cache: &'a ReadCache<File>, table: &Range<u64>) -> Option<&'a [u8]> {
    cache.read_bytes_at(table.start, table.end - table.start).ok().filter(|bytes| !bytes.is_empty())
}

impl<'a> ReadRef<'a> for &'a TablesRead {
    fn len(self) -> std::result::Result<u64, ()> {
        (&self.cache).len()
    }

    fn read_bytes_at(self, offset: u64, size: u64) -> std::result::Result<&'a [u8], ()> {
        match self.table_of(offset, size) {
            Some((table, at)) => Ok(&table[at..at + size as usize]),
            None => (&self.cache).read_bytes_at(offset, size),
        }
    }

    fn read_bytes_at_until(self, range: Range<u64>, delimiter: u8) -> std::result::Result<&'a [u8], ()> {
        let Some((table, at)) = self.table_of(range.start, 0) else {
            return (&self.cache).read_bytes_at_until(range, delimiter);
        };
        let end = table.len().min(at.saturating_add((range.end.saturating_sub(range.start)) as usize));
        let bytes = &table[at..end];
        bytes.iter().position(|&byte| byte == delimiter).map(|len| &bytes[..len]).ok_or(())
    }
}

/// Where distributions install separate debug files (Debian's `-dbg` and
/// `-dbgsym` packages, Fedora's `debuginfo`).
pub const DEBUG_ROOT: &str = "/usr/lib/debug";

/// The separate debug file of the ELF `file` at `path`, if one is
/// installed, as gdb and perf find it: by its build id
/// (`<root>/.build-id/ab/cdef....debug`), else by its `.gnu_debuglink`
/// name beside it, in `.debug/` beside it, or under `<root>` at its
/// directory. Its symbols (a full `.symtab`: static functions too) are
/// what a stripped library lacks.
pub fn debug_file<'d, R: ReadRef<'d>>(file: &object::File<'d, R>, path: &Path, root: &Path) -> Option<PathBuf> {
    if let Ok(Some(id)) = file.build_id() {
        let hex: String = id.iter().map(|byte| format!("{byte:02x}")).collect();
        if hex.len() > 2 {
            let candidate = root.join(".build-id").join(&hex[..2]).join(format!("{}.debug", &hex[2..]));
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    let (name, _crc) = file.gnu_debuglink().ok().flatten()?;
    let name = std::str::from_utf8(name).ok()?;
    let dir = path.parent()?;
    let under_root = root.join(dir.strip_prefix("/").unwrap_or(dir)).join(name);
    [dir.join(name), dir.join(".debug").join(name), under_root]
        .into_iter()
        .find(|candidate| candidate.is_file() && candidate != path)
}

/// A candidate of a longer-lived image among those of a shorter-lived one.
fn shorter<'a, 'b: 'a>(candidate: Candidate<'b>) -> Candidate<'a> {
    candidate
}

/// A defined function symbol with an address, ranked among its aliases.
fn candidate<'d, S: ObjectSymbol<'d>>(symbol: S) -> Option<Candidate<'d>> {
    let function = symbol.kind() == SymbolKind::Text || symbol.kind() == SymbolKind::Unknown;
    let name = symbol.name().ok().filter(|name| !name.is_empty())?;
    if !function || !symbol.is_definition() || symbol.address() == 0 {
        return None;
    }
    let underscores = name.bytes().take_while(|&byte| byte == b'_').count();
    let binding = match (symbol.scope(), symbol.is_weak()) {
        (SymbolScope::Dynamic | SymbolScope::Linkage, false) => 0,
        (_, true) => 1,
        _ => 2,
    };
    Some(Candidate { start: symbol.address(), size: symbol.size(), name, rank: (underscores, binding) })
}

/// A symbol's name as a user reads it: Rust names without their hash, C++
/// names demangled, anything else as it is.
pub fn demangle(raw: &str) -> String {
    if let Ok(rust) = rustc_demangle::try_demangle(raw) {
        return format!("{rust:#}");
    }
    if raw.starts_with("_Z") {
        if let Ok(Ok(cpp)) = cpp_demangle::Symbol::new(raw).map(|symbol| symbol.demangle()) {
            return cpp;
        }
    }
    raw.to_owned()
}

/// A module seen by the symbolizer, with its table once read.
struct Loaded {
    module: Arc<Module>,
    /// `None` if the file's symbols could not be read.
    table: Option<Arc<SymbolTable>>,
}

/// The function an address lies in: its module (by identity, for as long
/// as the symbolizer keeps it) and the function's start (its file address),
/// or no start where the module has no symbol for the address. Cheap to
/// find ([`Symbolizer::function_of`]: a binary search, no name made), so
/// callers can keep names by function rather than by address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FunctionKey {
    module: usize,
    start: Option<u64>,
}

/// Names native addresses, reading each module's symbols once.
#[derive(Default)]
pub struct Symbolizer {
    /// By the module's address (each kept alive by its `Arc` here).
    loaded: HashMap<usize, Loaded>,
}

impl Symbolizer {
    pub fn new() -> Symbolizer {
        Symbolizer::default()
    }

    /// Names `address` (for a return address, pass `address - 1`: the call
    /// instruction). `None` if no module, current or seen before, holds it.
    pub fn symbolize(&mut self, modules: &Modules, address: u64) -> Option<Symbol> {
        let module = self.module_of(modules, address)?;
        let table = self.table(&module);
        let svma = address.wrapping_sub(module.bias);
        let library = Arc::clone(&module.name);
        Some(match table.as_deref().and_then(|table| table.lookup(svma)) {
            Some((raw, offset)) => Symbol { library, function: Some(demangle(raw)), offset },
            None => Symbol { library, function: None, offset: svma },
        })
    }

    /// The function holding `address` (for a return address, pass
    /// `address - 1`), without naming it; `None` if no module, current or
    /// seen before, holds it.
    pub fn function_of(&mut self, modules: &Modules, address: u64) -> Option<FunctionKey> {
        let module = self.module_of(modules, address)?;
        let table = self.table(&module);
        let svma = address.wrapping_sub(module.bias);
        let start = table.as_deref().and_then(|table| table.lookup(svma)).map(|(_, offset)| svma - offset);
        Some(FunctionKey { module: Arc::as_ptr(&module) as usize, start })
    }

    fn module_of(&self, modules: &Modules, address: u64) -> Option<Arc<Module>> {
        match modules.find(address) {
            Some(module) => Some(Arc::clone(module)),
            None => {
                self.loaded.values().find(|loaded| loaded.module.contains(address)).map(|loaded| loaded.module.clone())
            }
        }
    }

    /// Reads the symbol table of every module of `modules` not read yet, so
    /// that naming their addresses later costs a binary search (the caller
    /// chooses when to pay: the 44,000 functions of Debian JDK 17's
    /// libjvm.so take about 18 ms in a release build, more in a debug one).
    pub fn read_tables(&mut self, modules: &Modules) {
        for module in modules.list() {
            self.table(module);
        }
    }

    /// How many modules' tables were read (or tried).
    pub fn modules_read(&self) -> usize {
        self.loaded.len()
    }

    fn table(&mut self, module: &Arc<Module>) -> Option<Arc<SymbolTable>> {
        let key = Arc::as_ptr(module) as usize;
        let loaded = self.loaded.entry(key).or_insert_with(|| Loaded {
            module: Arc::clone(module),
            table: SymbolTable::read(module).ok().map(Arc::new),
        });
        loaded.table.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_demangled() {
        assert_eq!(demangle("_ZN2ns6Widget4spinEi"), "ns::Widget::spin(int)");
        assert_eq!(demangle("_ZN4core3ptr13drop_in_place17h0123456789abcdefE"), "core::ptr::drop_in_place");
        assert_eq!(demangle("getpid"), "getpid");
        assert_eq!(demangle("_Znot valid"), "_Znot valid");
    }

    #[test]
    fn tables_read_whole_give_the_same_symbols() {
        // This test binary (a .symtab) and the process's libc (its debug
        // file's symbols too, where installed).
        let modules = Modules::load().unwrap();
        let libc = modules.list().iter().find(|module| module.name.starts_with("libc.so")).unwrap();
        for path in [std::env::current_exe().unwrap(), libc.path.clone()] {
            let open = || ReadCache::new(File::open(&path).unwrap());
            let by_ranges = SymbolTable::parse(&open(), &path).unwrap();
            let whole = SymbolTable::parse(&TablesRead::new(open()), &path).unwrap();
            assert!(by_ranges.len() > 100, "{}: {} functions", path.display(), by_ranges.len());
            assert_eq!(whole, by_ranges, "{}", path.display());
        }
    }

    #[test]
    fn a_file_that_is_no_elf_reads_no_tables() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, b"not an ELF file at all").unwrap();
        let tables = TablesRead::new(ReadCache::new(File::open(file.path()).unwrap()));
        assert!(tables.tables.is_empty());
        assert!(SymbolTable::parse(&tables, file.path()).is_err());
    }

    #[test]
    fn aliases_and_sizes_are_resolved() {
        let symbols = [
            Candidate { start: 0x100, size: 0x10, name: "__getpid", rank: (2, 0) },
            Candidate { start: 0x100, size: 0x10, name: "getpid", rank: (0, 1) },
            Candidate { start: 0x200, size: 0, name: "asm_routine", rank: (0, 0) },
            Candidate { start: 0x300, size: 0x8, name: "last", rank: (0, 0) },
        ];
        let table = SymbolTable::from_candidates(symbols.into());
        assert_eq!(table.lookup(0x105), Some(("getpid", 5)));
        assert_eq!(table.lookup(0x110), None, "past getpid's size");
        assert_eq!(table.lookup(0x2ff), Some(("asm_routine", 0xff)), "runs to the next symbol");
        assert_eq!(table.lookup(0x308), None);
        assert_eq!(table.lookup(0xff), None);
    }
}
