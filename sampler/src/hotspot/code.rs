//! Reading HotSpot's code and metadata: which code blob holds a program
//! counter (the code heaps' segment maps), what kind of blob it is, an
//! nmethod's frame size and debug information (the PcDesc for a program
//! counter, then the chain of inlined scopes it names), and the jmethodID
//! of a `Method*`.
//!
//! Every read goes through [`Memory`] and every value read is checked
//! before it is used as an address or a count, so a wrong program counter
//! or a half-built structure yields `None`, never a wild loop or a crash.

use super::layout::{CodeBegin, DebugInfo, Layout, Metadata, VerifiedEntry};
use super::memory::Memory;

/// The largest code blob believed (HotSpot's own limit is far lower).
const MAX_BLOB_SIZE: u32 = 64 << 20;
/// Most segment-map hops back to a blob's start.
const MAX_SEGMAP_HOPS: usize = 4096;
/// Most inlined scopes decoded at one program counter.
pub const MAX_SCOPES: usize = 64;
/// PcDesc size (four ints).
const PC_DESC_SIZE: usize = 16;
/// The free-segment marker of the segment map.
const FREE_SEGMENT: u8 = 0xFF;

/// What kind of code a blob holds, as far as walking frames goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlobKind {
    /// A compiled Java method (C1 or C2).
    Nmethod,
    /// A compiled wrapper of a native method.
    NativeNmethod,
    /// Anything else: adapters, runtime stubs, vtable stubs, the interpreter's blob.
    Other,
}

/// A code blob found in a code heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blob {
    pub address: usize,
    pub size: usize,
    pub kind: BlobKind,
    /// Frame size in words (0 for blobs without a fixed frame).
    pub frame_size: usize,
    pub code_begin: usize,
    /// Where the frame is complete (after the prologue).
    pub frame_complete: usize,
    /// First bytes of the blob's name (for stubs: `vtable chunks`, ...).
    pub name: [u8; 16],
}

impl Blob {
    pub fn contains(&self, pc: usize) -> bool {
        pc >= self.address && pc - self.address < self.size
    }

    pub fn name_starts_with(&self, prefix: &[u8]) -> bool {
        self.name.starts_with(prefix)
    }
}

/// The code blob that holds `pc`, if `pc` is in a code heap.
pub fn find_blob(memory: &impl Memory, layout: &Layout, pc: usize) -> Option<Blob> {
    let runtime = &layout.runtime;
    if pc < runtime.code_low || pc >= runtime.code_high {
        return None;
    }
    let heap = runtime.heaps[..runtime.heap_count].iter().find(|heap| pc >= heap.low && pc < heap.high)?;
    let mut index = (pc - heap.low) >> heap.shift;
    let mut hops = 0;
    loop {
        let step = memory.u8(heap.segmap.wrapping_add(index))?;
        if step == FREE_SEGMENT {
            return None;
        }
        if step == 0 {
            break;
        }
        index = index.checked_sub(step as usize)?;
        hops += 1;
        if hops > MAX_SEGMAP_HOPS {
            return None;
        }
    }
    let block = heap.low.wrapping_add(index << heap.shift);
    let fields = &layout.heap;
    if memory.u8(block.wrapping_add(fields.block_used))? == 0 {
        return None;
    }
    let blob = read_blob(memory, layout, block.wrapping_add(fields.block_size))?;
    blob.contains(pc).then_some(blob)
}

fn read_blob(memory: &impl Memory, layout: &Layout, address: usize) -> Option<Blob> {
    let fields = &layout.blob;
    let size = memory.u32(address.wrapping_add(fields.size))?;
    if size == 0 || size > MAX_BLOB_SIZE {
        return None;
    }
    let frame_size = memory.i32(address.wrapping_add(fields.frame_size))?;
    let code_begin = match fields.code_begin {
        CodeBegin::Pointer(offset) => memory.word(address.wrapping_add(offset))?,
        CodeBegin::Offset(offset) => address.wrapping_add(memory.u32(address.wrapping_add(offset))? as usize),
    };
    let complete = if fields.frame_complete_is_short {
        memory.u16(address.wrapping_add(fields.frame_complete))? as i16 as i32
    } else {
        memory.i32(address.wrapping_add(fields.frame_complete))?
    };
    // The name's first 16 bytes in two reads (names are C strings in
    // libjvm's read-only data; a second word that cannot be read stays 0).
    let name_pointer = memory.word(address.wrapping_add(fields.name))?;
    let mut name = [0u8; 16];
    name[..8].copy_from_slice(&memory.u64(name_pointer)?.to_le_bytes());
    if !name[..8].contains(&0) {
        name[8..].copy_from_slice(&memory.u64(name_pointer.wrapping_add(8)).unwrap_or(0).to_le_bytes());
    }
    if let Some(end) = name.iter().position(|&byte| byte == 0) {
        name[end..].fill(0);
    }
    let kind = if name.starts_with(b"nmethod\0") {
        BlobKind::Nmethod
    } else if name.starts_with(b"native nmethod\0") {
        BlobKind::NativeNmethod
    } else {
        BlobKind::Other
    };
    Some(Blob {
        address,
        size: size as usize,
        kind,
        // Blobs without a fixed frame say -1 or 0.
        frame_size: usize::try_from(frame_size.max(0)).ok().filter(|&words| words < 1 << 16)?,
        code_begin,
        frame_complete: code_begin.wrapping_add(complete.max(0) as usize),
        name,
    })
}

/// The nmethod's `Method*`.
pub fn nmethod_method(memory: &impl Memory, layout: &Layout, blob: &Blob) -> Option<usize> {
    memory.word(blob.address.wrapping_add(layout.blob.method)).filter(|&method| method != 0)
}

/// The nmethod's compilation id (unique per compilation).
pub fn compile_id(memory: &impl Memory, layout: &Layout, blob: &Blob) -> Option<u32> {
    memory.u32(blob.address.wrapping_add(layout.blob.compile_id))
}

/// What the inline table reads of an nmethod, beside its inline records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NmethodFacts {
    /// HotSpot's compile level (1-3 C1, 4 C2).
    pub level: Option<u8>,
    /// The loop bci of on-stack-replacement code (none for the normal entry).
    pub osr_bci: Option<i32>,
    pub compile_id: Option<u32>,
    /// The nmethod's own address (what `Method::_code` holds).
    pub nmethod: usize,
}

/// The nmethod the method of jmethodID `id` enters now (`Method::_code`):
/// 0 when it enters none (its code was made not entrant, or it has not
/// been compiled); `None` when the id or the method cannot be read (a
/// class unloaded), or the VM does not describe the field. Reads through
/// `memory`, so a stale id reads as `None` or as some other value, never
/// as a crash.
pub fn entered_code(memory: &impl Memory, layout: &Layout, id: usize) -> Option<usize> {
    let offset = layout.method.code?;
    let method = memory.word(id).filter(|&method| method != 0)?;
    memory.word(method.wrapping_add(offset))
}

/// The facts of the nmethod that holds code address `code` (as a
/// CompiledMethodLoad event gives it), if one does.
pub fn nmethod_facts(memory: &impl Memory, layout: &Layout, code: usize) -> Option<NmethodFacts> {
    let blob = find_blob(memory, layout, code).filter(|blob| blob.kind != BlobKind::Other)?;
    let at = |offset: usize| blob.address.wrapping_add(offset);
    Some(NmethodFacts {
        level: comp_level(memory, layout, &blob),
        osr_bci: layout.blob.entry_bci.and_then(|offset| memory.i32(at(offset))).filter(|&bci| bci >= 0),
        compile_id: compile_id(memory, layout, &blob),
        nmethod: blob.address,
    })
}

/// The nmethod's compile level (`nmethod::_comp_level`: 0 for a native
/// wrapper, 1-3 C1, 4 C2), if the VM describes it and it reads as one.
pub fn comp_level(memory: &impl Memory, layout: &Layout, blob: &Blob) -> Option<u8> {
    let (offset, width) = layout.blob.comp_level?;
    let at = blob.address.wrapping_add(offset);
    let level = match width {
        1 => memory.u8(at).map(|level| level as i8 as i32),
        _ => memory.i32(at),
    };
    level.and_then(|level| u8::try_from(level).ok()).filter(|&level| level <= 4)
}

/// The nmethod's verified entry point (where its prologue starts).
pub fn verified_entry(memory: &impl Memory, layout: &Layout, blob: &Blob) -> Option<usize> {
    match layout.blob.verified_entry {
        VerifiedEntry::Pointer(offset) => memory.word(blob.address.wrapping_add(offset)),
        VerifiedEntry::Offset(offset) => {
            Some(blob.code_begin.wrapping_add(memory.u16(blob.address.wrapping_add(offset))? as usize))
        }
    }
}

/// Where an nmethod's stubs begin (after its instructions), if the VM says
/// and the offset falls inside the blob's code.
pub fn stub_begin(memory: &impl Memory, layout: &Layout, blob: &Blob) -> Option<usize> {
    let offset = memory.u32(blob.address.wrapping_add(layout.blob.stub_offset?))? as usize;
    let begin = blob.address.wrapping_add(offset);
    (begin > blob.code_begin && blob.contains(begin)).then_some(begin)
}

/// Where an nmethod's PcDescs and scopes are.
struct DebugData {
    pcs_begin: usize,
    pcs_end: usize,
    scopes: usize,
    metadata: usize,
}

fn debug_data(memory: &impl Memory, layout: &Layout, blob: &Blob) -> Option<DebugData> {
    let nm = blob.address;
    let (pcs_begin, pcs_end, scopes) = match layout.blob.debug_info {
        DebugInfo::InBlob { pcs_begin, pcs_end, scopes_pointer } => (
            nm.wrapping_add(memory.u32(nm.wrapping_add(pcs_begin))? as usize),
            nm.wrapping_add(memory.u32(nm.wrapping_add(pcs_end))? as usize),
            memory.word(nm.wrapping_add(scopes_pointer))?,
        ),
        DebugInfo::Immutable { data_pointer, pcs_begin, scopes_begin } => {
            let data = memory.word(nm.wrapping_add(data_pointer))?;
            let scopes = data.wrapping_add(memory.u32(nm.wrapping_add(scopes_begin))? as usize);
            (data.wrapping_add(memory.u32(nm.wrapping_add(pcs_begin))? as usize), scopes, scopes)
        }
    };
    let metadata = match layout.blob.metadata {
        Metadata::InBlob { offset_field } => nm.wrapping_add(memory.u32(nm.wrapping_add(offset_field))? as usize),
        Metadata::Mutable { data_pointer, relocation_size } => memory
            .word(nm.wrapping_add(data_pointer))?
            .wrapping_add(memory.u32(nm.wrapping_add(relocation_size))? as usize),
    };
    (pcs_end >= pcs_begin && (pcs_end - pcs_begin) % PC_DESC_SIZE == 0).then_some(DebugData {
        pcs_begin,
        pcs_end,
        scopes,
        metadata,
    })
}

/// The scope decode offset of the first PcDesc at or after `pc_offset`
/// (HotSpot's `pc_desc_near`); `None` when there is none or it has no scope.
fn scope_offset_near(memory: &impl Memory, data: &DebugData, pc_offset: i32) -> Option<u32> {
    // The first and last PcDescs are sentinels.
    let count = (data.pcs_end - data.pcs_begin) / PC_DESC_SIZE;
    let (mut low, mut high) = (0usize, count);
    while low < high {
        let middle = low + (high - low) / 2;
        if memory.i32(data.pcs_begin.wrapping_add(middle * PC_DESC_SIZE))? < pc_offset {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    if low >= count {
        return None;
    }
    let scope = memory.i32(data.pcs_begin.wrapping_add(low * PC_DESC_SIZE + 4))?;
    // 0 is DebugInformationRecorder::serialized_null.
    (scope > 0).then_some(scope as u32)
}

/// One decoded scope: the method (`Method*`) and bytecode index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scope {
    pub method: usize,
    pub bci: i32,
}

/// Decodes the chain of scopes at `pc` in nmethod `blob`, innermost
/// (inlined callee) first, into `out`; returns how many. 0 when the pc has
/// no debug information (the caller then names the nmethod's own method).
pub fn scopes_at(memory: &impl Memory, layout: &Layout, blob: &Blob, pc: usize, out: &mut [Scope]) -> usize {
    let Some(data) = debug_data(memory, layout, blob) else { return 0 };
    let Ok(pc_offset) = i32::try_from(pc.wrapping_sub(blob.code_begin)) else { return 0 };
    let Some(offset) = scope_offset_near(memory, &data, pc_offset) else { return 0 };
    decode_scopes(memory, layout, &data, offset, out)
}

/// Decodes the chain of scopes starting at decode offset `first`.
fn decode_scopes(memory: &impl Memory, layout: &Layout, data: &DebugData, first: u32, out: &mut [Scope]) -> usize {
    let mut offset = first;
    let mut count = 0;
    while count < out.len().min(MAX_SCOPES) {
        let mut stream =
            Unsigned5 { memory, position: data.scopes.wrapping_add(offset as usize), base: layout.unsigned5_base };
        let (Some(sender), Some(method_index), Some(bci)) = (stream.next(), stream.next(), stream.next()) else {
            break;
        };
        let method = match method_index {
            0 => None,
            index => memory.word(data.metadata.wrapping_add((index as usize - 1).wrapping_mul(8))),
        };
        let Some(method) = method.filter(|&m| m != 0) else { break };
        // read_bci: the stored value plus InvocationEntryBci (-1).
        out[count] = Scope { method, bci: (bci as i32).wrapping_sub(1) };
        count += 1;
        if sender == 0 || sender == offset {
            break;
        }
        offset = sender;
    }
    count
}

/// HotSpot's compressed integers (UNSIGNED5, from Pack200): up to five
/// bytes, the first below 192 ending the number, each worth its value less
/// the excluded byte `base` (0 before JDK 20; since JDK-8292758 the byte 0 is
/// excluded, so values are stored plus one) times 64 to its position.
struct Unsigned5<'m, M: Memory> {
    memory: &'m M,
    position: usize,
    base: u8,
}

impl<M: Memory> Unsigned5<'_, M> {
    /// Bytes below this end a number (the "low" bytes), in both encodings:
    /// L = 192 low bytes from 0, or L = 191 from the excluded byte 1.
    const LOW_END: u32 = 192;

    fn next(&mut self) -> Option<u32> {
        let base = self.base as u32;
        let first = self.memory.u8(self.position)? as u32;
        self.position = self.position.wrapping_add(1);
        let mut sum = first.checked_sub(base)?;
        if first < Self::LOW_END {
            return Some(sum);
        }
        let mut shift = 6;
        for index in 1..5 {
            let byte = self.memory.u8(self.position)? as u32;
            self.position = self.position.wrapping_add(1);
            sum = sum.wrapping_add(byte.checked_sub(base)? << shift);
            if byte < Self::LOW_END || index == 4 {
                break;
            }
            shift += 6;
        }
        Some(sum)
    }
}

/// The jmethodID of `Method*` `method`, checked: a jmethodID points to a
/// slot holding its `Method*`, so one that does not point back is refused
/// (a wrong frame guess, a half-built frame, a method being redefined).
pub fn method_id(memory: &impl Memory, layout: &Layout, method: usize) -> Option<usize> {
    let fields = &layout.method;
    if !method.is_multiple_of(8) {
        return None;
    }
    let const_method = memory.word(method.wrapping_add(fields.const_method))?;
    let constants = memory.word(const_method.wrapping_add(fields.constants))?;
    let idnum = memory.u16(const_method.wrapping_add(fields.idnum))? as usize;
    let holder = memory.word(constants.wrapping_add(fields.pool_holder))?;
    let ids = memory.word(holder.wrapping_add(fields.jmethod_ids))?;
    // ids[0] is the array's length; ids[1 + idnum] the method's id.
    let length = memory.word(ids)?;
    if idnum >= length {
        return None;
    }
    let id = memory.word(ids.wrapping_add((idnum + 1) * 8)).filter(|&id| id != 0)?;
    (memory.word(id)? == method).then_some(id)
}

/// The bytecode index of bytecode pointer `bcp` in `method`; `None` when
/// it is not within the method's bytecodes.
pub fn bci_of(memory: &impl Memory, layout: &Layout, method: usize, bcp: usize) -> Option<i32> {
    let fields = &layout.method;
    let const_method = memory.word(method.wrapping_add(fields.const_method))?;
    let start = const_method.wrapping_add(fields.const_method_size);
    let size = memory.u16(const_method.wrapping_add(fields.code_size))? as usize;
    let bci = bcp.checked_sub(start)?;
    (bci < size.max(1)).then_some(bci as i32)
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    /// A compressed-integer reader at `position`, for tests.
    pub fn stream<'m, M: Memory>(memory: &'m M, layout: &Layout, position: usize) -> impl Iterator<Item = u32> + 'm {
        let mut stream = Unsigned5 { memory, position, base: layout.unsigned5_base };
        std::iter::from_fn(move || stream.next())
    }
}
