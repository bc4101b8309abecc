//! The process's executable mappings and what the unwinder needs from each.
//!
//! [`Modules::load`] reads `/proc/self/maps` and keeps every executable mapping
//! of a file (and the kernel's `[vdso]`), each loaded once from its ELF image
//! with the `object` crate: the load bias (the address that the file's address
//! 0 is mapped at), the ranges of `.text`, `.got`, `.eh_frame` and
//! `.eh_frame_hdr`, and copies of the unwind sections (`.eh_frame` and
//! `.eh_frame_hdr`; `.debug_frame` only where there is no `.eh_frame`, since
//! framehop reads it only then). `.text`'s bytes are not copied: framehop reads
//! code only for Mach-O prologue analysis, never for ELF, and libjvm's `.text`
//! alone is over 15 MiB. A module whose file cannot be read (deleted, replaced
//! on disk since it was mapped, not ELF) is kept without unwind information:
//! the unwinder then tries frame pointers, and the walk ends truncated when
//! they fail.
//!
//! [`Modules::refresh`] reads the mappings again, loads the libraries mapped
//! since (dlopen) and drops the unmapped ones; the generation counts changes.
//! Anonymous executable memory (HotSpot's code cache, the interpreter) is not
//! a module: the Java walker owns it.
//!
//! This module allocates and reads files: it must never run in a signal
//! handler. What the handler uses is built from it ahead of time
//! ([`crate::Unwinder::publish`]).

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use framehop::ExplicitModuleSectionInfo;
use object::elf::{ProgramFlags, PF_X};
use object::read::ReadCache;
use object::{Object, ObjectSection, ObjectSegment, ReadRef, SegmentFlags};

use crate::error::{NativeError, Result};

/// The name `/proc/self/maps` gives the kernel's virtual shared object.
pub const VDSO: &str = "[vdso]";

/// The bytes of a section, shared by every snapshot of the unwinder that
/// holds the module.
pub type SectionData = Arc<[u8]>;

/// Which unwind information a module has (framehop uses the first present).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnwindInfo {
    /// `.eh_frame` with its binary-search index `.eh_frame_hdr`.
    EhFrameHdr,
    /// `.eh_frame` alone (framehop indexes it when the module is added).
    EhFrame,
    /// `.debug_frame` alone (indexed likewise).
    DebugFrame,
    /// None: frame pointers only.
    None,
}

/// One executable mapping of an ELF image.
pub struct Module {
    /// The file (or [`VDSO`]).
    pub path: PathBuf,
    /// The file's name, as reports show a library.
    pub name: Arc<str>,
    /// The executable mapping's addresses.
    pub avma: Range<u64>,
    /// The mapping's offset in the file.
    pub file_offset: u64,
    /// The file's inode, as the kernel reported it (0 for the vDSO).
    pub inode: u64,
    /// The load bias: the process address of the file's address 0.
    pub bias: u64,
    /// The unwind information found.
    pub unwind_info: UnwindInfo,
    /// Bytes of unwind sections copied for the unwinder.
    pub unwind_bytes: usize,
    /// Why the file could not be read, if it could not (the module is kept,
    /// without unwind information).
    pub problem: Option<NativeError>,
    framehop: framehop::Module<SectionData>,
}

impl Module {
    /// Whether `address` lies in this module's executable mapping.
    pub fn contains(&self, address: u64) -> bool {
        self.avma.contains(&address)
    }

    /// The module as framehop's unwinder takes it (a cheap clone: the
    /// sections are shared).
    pub(crate) fn framehop(&self) -> framehop::Module<SectionData> {
        self.framehop.clone()
    }

    fn same_mapping(&self, mapping: &Mapping) -> bool {
        self.avma == mapping.avma
            && self.file_offset == mapping.offset
            && self.inode == mapping.inode
            && self.path.as_os_str() == mapping.path.as_str()
    }

    fn load(mapping: &Mapping) -> Module {
        match Sections::read(mapping) {
            Ok(sections) => Module::with_sections(mapping, sections, None),
            Err(problem) => {
                let guess = Sections::none(mapping.avma.start.wrapping_sub(mapping.offset));
                Module::with_sections(mapping, guess, Some(problem))
            }
        }
    }

    fn with_sections(mapping: &Mapping, sections: Sections, problem: Option<NativeError>) -> Module {
        let path = PathBuf::from(&mapping.path);
        let name: Arc<str> = file_name(&path).into();
        let framehop =
            framehop::Module::new(name.to_string(), mapping.avma.clone(), sections.bias, sections.info.clone());
        Module {
            name,
            avma: mapping.avma.clone(),
            file_offset: mapping.offset,
            inode: mapping.inode,
            bias: sections.bias,
            unwind_info: sections.kind,
            unwind_bytes: sections.bytes,
            problem,
            framehop,
            path,
        }
    }
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module")
            .field("path", &self.path)
            .field("avma", &format_args!("{:#x}..{:#x}", self.avma.start, self.avma.end))
            .field("bias", &format_args!("{:#x}", self.bias))
            .field("unwind_info", &self.unwind_info)
            .field("unwind_bytes", &self.unwind_bytes)
            .field("problem", &self.problem)
            .finish()
    }
}

/// A file's name as reports show it (the whole path if it has none).
pub fn file_name(path: &Path) -> String {
    path.file_name().unwrap_or(path.as_os_str()).to_string_lossy().into_owned()
}

/// The process's modules, sorted by address.
#[derive(Debug, Default)]
pub struct Modules {
    list: Vec<Arc<Module>>,
    generation: u64,
}

/// What a [`Modules::refresh`] changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Refresh {
    /// Paths of the modules added.
    pub added: Vec<PathBuf>,
    /// Paths of the modules dropped.
    pub removed: Vec<PathBuf>,
}

impl Refresh {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty()
    }
}

impl Modules {
    /// Reads the process's executable mappings and loads each module.
    pub fn load() -> Result<Modules> {
        let mut modules = Modules::default();
        modules.refresh()?;
        Ok(modules)
    }

    /// Loads the modules mapped since the last call and drops the unmapped
    /// ones; the generation moves when anything changed.
    pub fn refresh(&mut self) -> Result<Refresh> {
        let mappings = read_maps()?;
        Ok(self.apply(&mappings))
    }

    fn apply(&mut self, mappings: &[Mapping]) -> Refresh {
        let mut refresh = Refresh::default();
        let mut kept = Vec::with_capacity(mappings.len());
        for mapping in mappings {
            match self.list.iter().find(|module| module.same_mapping(mapping)) {
                Some(module) => kept.push(Arc::clone(module)),
                None => {
                    refresh.added.push(PathBuf::from(&mapping.path));
                    kept.push(Arc::new(Module::load(mapping)));
                }
            }
        }
        for old in &self.list {
            if !kept.iter().any(|module| Arc::ptr_eq(module, old)) {
                refresh.removed.push(old.path.clone());
            }
        }
        kept.sort_by_key(|module| module.avma.start);
        self.list = kept;
        if !refresh.is_empty() {
            self.generation += 1;
        }
        refresh
    }

    /// The modules, sorted by start address.
    pub fn list(&self) -> &[Arc<Module>] {
        &self.list
    }

    /// Counts the changes: 1 after the first load, one more per refresh
    /// that added or dropped a module.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The module whose executable mapping holds `address`.
    pub fn find(&self, address: u64) -> Option<&Arc<Module>> {
        let after = self.list.partition_point(|module| module.avma.start <= address);
        let module = self.list.get(after.checked_sub(1)?)?;
        module.contains(address).then_some(module)
    }
}

/// One line of `/proc/self/maps` that maps code of a file or the vDSO.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mapping {
    avma: Range<u64>,
    offset: u64,
    inode: u64,
    path: String,
}

fn read_maps() -> Result<Vec<Mapping>> {
    let path = Path::new("/proc/self/maps");
    let text = std::fs::read_to_string(path).map_err(|source| NativeError::Io { path: path.into(), source })?;
    let mut mappings = Vec::new();
    for line in text.lines() {
        match parse_maps_line(line) {
            Some(Some(mapping)) => mappings.push(mapping),
            Some(None) => {}
            None => return Err(NativeError::MapsLine { line: line.to_owned() }),
        }
    }
    Ok(mappings)
}

/// `None` if the line is not understood; `Some(None)` for a mapping that is
/// not a module (not executable, anonymous, `[vsyscall]`).
fn parse_maps_line(line: &str) -> Option<Option<Mapping>> {
    let mut fields = line.splitn(6, ' ');
    let (range, perms, offset) = (fields.next()?, fields.next()?, fields.next()?);
    let (_device, inode) = (fields.next()?, fields.next()?);
    let path = fields.next().unwrap_or("").trim_start();
    let (start, end) = range.split_once('-')?;
    let avma = u64::from_str_radix(start, 16).ok()?..u64::from_str_radix(end, 16).ok()?;
    let offset = u64::from_str_radix(offset, 16).ok()?;
    let inode = inode.parse().ok()?;
    let code = perms.as_bytes().get(2) == Some(&b'x') && (path.starts_with('/') || path == VDSO);
    Some(code.then(|| Mapping { avma, offset, inode, path: path.to_owned() }))
}

/// What is read from a module's ELF image.
struct Sections {
    bias: u64,
    kind: UnwindInfo,
    bytes: usize,
    info: ExplicitModuleSectionInfo<SectionData>,
}

impl Sections {
    fn none(bias: u64) -> Sections {
        Sections { bias, kind: UnwindInfo::None, bytes: 0, info: ExplicitModuleSectionInfo::default() }
    }

    fn read(mapping: &Mapping) -> Result<Sections> {
        let path = PathBuf::from(&mapping.path);
        match Image::open(&path, &mapping.avma, mapping.inode)? {
            Image::Memory(image) => Sections::parse(image, mapping, &path),
            Image::File(cache) => Sections::parse(&cache, mapping, &path),
        }
    }

    fn parse<'d, R: ReadRef<'d>>(data: R, mapping: &Mapping, path: &Path) -> Result<Sections> {
        let elf = |reason| NativeError::Elf { path: path.into(), reason };
        let file = object::File::parse(data).map_err(elf)?;
        let bias = load_bias(&file, mapping)
            .ok_or_else(|| NativeError::NoSegment { path: path.into(), offset: mapping.offset })?;
        let range = |name: &str| file.section_by_name(name).map(|s| s.address()..s.address() + s.size());
        let copy = |name: &str| -> Result<Option<SectionData>> {
            let Some(section) = file.section_by_name(name) else { return Ok(None) };
            Ok(Some(section.data().map_err(elf)?.into()))
        };
        let eh_frame = copy(".eh_frame")?;
        let eh_frame_hdr = if eh_frame.is_some() { copy(".eh_frame_hdr")? } else { None };
        let debug_frame = if eh_frame.is_none() { copy(".debug_frame")? } else { None };
        let kind = match (&eh_frame, &eh_frame_hdr, &debug_frame) {
            (Some(_), Some(_), _) => UnwindInfo::EhFrameHdr,
            (Some(_), None, _) => UnwindInfo::EhFrame,
            (None, _, Some(_)) => UnwindInfo::DebugFrame,
            _ => UnwindInfo::None,
        };
        let bytes: usize =
            [&eh_frame, &eh_frame_hdr, &debug_frame].iter().flat_map(|data| data.as_deref()).map(<[u8]>::len).sum();
        let info = ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: range(".text"),
            got_svma: range(".got"),
            eh_frame_svma: range(".eh_frame"),
            eh_frame_hdr_svma: range(".eh_frame_hdr"),
            eh_frame,
            eh_frame_hdr,
            debug_frame,
            ..Default::default()
        };
        Ok(Sections { bias, kind, bytes, info })
    }
}

/// The process address of the file's address 0: the executable mapping
/// starts at file offset `mapping.offset`, which the loadable segment holding
/// it maps at `p_vaddr + (offset - p_offset)`.
fn load_bias<'d, R: ReadRef<'d>>(file: &object::File<'d, R>, mapping: &Mapping) -> Option<u64> {
    const PAGE: u64 = 4096;
    file.segments().find_map(|segment| {
        let (file_start, size) = segment.file_range();
        let executable =
            matches!(segment.flags(), SegmentFlags::Elf { p_flags, .. } if p_flags & PF_X != ProgramFlags(0));
        let holds = file_start & !(PAGE - 1) <= mapping.offset && mapping.offset < file_start + size;
        if !(executable && holds) {
            return None;
        }
        let vaddr_at_offset = (segment.address() + mapping.offset).checked_sub(file_start)?;
        Some(mapping.avma.start.wrapping_sub(vaddr_at_offset))
    })
}

/// Where a module's ELF image is read from.
pub(crate) enum Image {
    /// The vDSO, in place.
    Memory(&'static [u8]),
    /// A file, read by ranges as `object` asks for them.
    File(ReadCache<File>),
}

impl Image {
    /// Opens the image of the module mapped at `avma` from `path` (whose
    /// inode the kernel reported as `inode`: a file replaced on disk since is
    /// refused, its contents are not what is mapped).
    pub(crate) fn open(path: &Path, avma: &Range<u64>, inode: u64) -> Result<Image> {
        if path.as_os_str() == VDSO {
            let len = avma.end.saturating_sub(avma.start) as usize;
            // SAFETY: the kernel maps the vDSO readable for the life of the
            // process and nothing unmaps it; the range is the one it reported.
            return Ok(Image::Memory(unsafe { std::slice::from_raw_parts(avma.start as *const u8, len) }));
        }
        let io = |source| NativeError::Io { path: path.into(), source };
        let file = File::open(path).map_err(io)?;
        if file.metadata().map_err(io)?.ino() != inode {
            return Err(io(std::io::Error::other("the file was replaced since it was mapped")));
        }
        Ok(Image::File(ReadCache::new(file)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_are_parsed() {
        let line = "7f1c2a400000-7f1c2a595000 r-xp 00028000 fe:01 1053   /usr/lib/x86_64-linux-gnu/libc.so.6";
        let mapping = parse_maps_line(line).unwrap().unwrap();
        assert_eq!(mapping.avma, 0x7f1c2a400000..0x7f1c2a595000);
        assert_eq!((mapping.offset, mapping.inode), (0x28000, 1053));
        assert_eq!(mapping.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
        let spaced = "7f00-7f10 r-xp 00000000 fe:01 7 /tmp/a dir/lib x.so";
        assert_eq!(parse_maps_line(spaced).unwrap().unwrap().path, "/tmp/a dir/lib x.so");
        assert_eq!(parse_maps_line("7f00-7f10 r--p 00000000 fe:01 7 /lib/x.so"), Some(None));
        assert_eq!(parse_maps_line("7f00-7f10 rwxp 00000000 00:00 0 "), Some(None));
        assert_eq!(parse_maps_line("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]"), Some(None));
        assert!(parse_maps_line("7f00-7f10 r-xp 00000000 00:00 0 [vdso]").unwrap().is_some());
        assert_eq!(parse_maps_line("garbage"), None);
    }

    #[test]
    fn this_process_has_libc_and_the_vdso_with_unwind_tables() {
        let modules = Modules::load().unwrap();
        assert_eq!(modules.generation(), 1);
        let libc = modules.find(libc::getpid as *const () as u64).expect("getpid is in a module");
        assert!(libc.name.starts_with("libc.so"), "{libc:?}");
        assert_eq!(libc.unwind_info, UnwindInfo::EhFrameHdr, "{libc:?}");
        assert!(libc.problem.is_none());
        let vdso = modules.list().iter().find(|module| module.path.as_os_str() == VDSO);
        if let Some(vdso) = vdso {
            assert!(vdso.problem.is_none() && vdso.unwind_info != UnwindInfo::None, "{vdso:?}");
        }
    }

    #[test]
    fn a_refresh_without_changes_keeps_the_generation() {
        let mut modules = Modules::load().unwrap();
        let refresh = modules.refresh().unwrap();
        assert!(refresh.is_empty(), "{refresh:?}");
        assert_eq!(modules.generation(), 1);
    }
}
