//! What the frame walker needs to know about HotSpot, taken from its
//! VMStructs tables ([`Layout::from_tables`]: field offsets, type sizes,
//! constants) and, once the VM is initialised, from the VM itself
//! ([`Layout::read_runtime`]: where the code heaps, the interpreter and the
//! call stub are).
//!
//! JDK 17 and JDK 25 lay out compiled methods differently (JDK 23 moved
//! their debug information to a separate "immutable data" block and their
//! metadata behind the relocations, and replaced pointer fields with
//! offsets); each difference is one enum here, chosen by which fields the
//! tables describe, so one walker reads both.
//!
//! Fixed x86-64 facts that VMStructs does not export are constants here
//! (HotSpot's `frame_x86.hpp`): an interpreted frame keeps its `Method*` at
//! `fp[-3]`, its bytecode pointer at `fp[-8]` (JDK 11 and later), its
//! caller's stack pointer at `fp[-1]` and the stack pointer of its current
//! call at `fp[-2]`; every frame's return address sits
//! one word above its saved frame pointer.

use super::memory::Memory;
use super::vmstructs::VmStructs;

/// Interpreted frame slots, in words from the frame pointer (x86-64).
pub const INTERPRETER_SENDER_SP: isize = -1;
/// The stack pointer of the frame's current call, 0 between calls: an
/// address before JDK 22, a word offset from the frame pointer since
/// (JDK-8308984 relativized it).
pub const INTERPRETER_LAST_SP: isize = -2;
pub const INTERPRETER_METHOD: isize = -3;
pub const INTERPRETER_BCP: isize = -8;

/// Where a code blob's instructions begin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeBegin {
    /// JDK 17: `CodeBlob::_code_begin`, a pointer field.
    Pointer(usize),
    /// JDK 23+: `CodeBlob::_code_offset`, an int offset from the blob.
    Offset(usize),
}

/// Where an nmethod's verified entry point is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VerifiedEntry {
    /// JDK 17: `nmethod::_verified_entry_point`, a pointer.
    Pointer(usize),
    /// JDK 23+: `nmethod::_verified_entry_offset`, a u16 from the code begin.
    Offset(usize),
}

/// Where an nmethod keeps its debug information (PcDescs and scopes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DebugInfo {
    /// JDK 17: PcDescs from `nm + _scopes_pcs_offset` to
    /// `nm + _dependencies_offset`; scopes at the `_scopes_data_begin` pointer.
    InBlob { pcs_begin: usize, pcs_end: usize, scopes_pointer: usize },
    /// JDK 23+: both in the block at the `_immutable_data` pointer, PcDescs
    /// from its `_scopes_pcs_offset` to its `_scopes_data_offset`, where
    /// the scopes begin.
    Immutable { data_pointer: usize, pcs_begin: usize, scopes_begin: usize },
}

/// Where an nmethod's metadata (the `Method*`s its scopes name) begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metadata {
    /// JDK 17: `nm + _metadata_offset`.
    InBlob { offset_field: usize },
    /// JDK 25: after the relocations, in the block at `_mutable_data`.
    Mutable { data_pointer: usize, relocation_size: usize },
}

/// Offsets of the code blob and nmethod fields the walker reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlobLayout {
    pub name: usize,
    pub size: usize,
    pub frame_size: usize,
    /// `_frame_complete_offset` and whether it is 16 bits (JDK 23+) or 32.
    pub frame_complete: usize,
    pub frame_complete_is_short: bool,
    pub code_begin: CodeBegin,
    pub method: usize,
    pub verified_entry: VerifiedEntry,
    pub compile_id: usize,
    pub debug_info: DebugInfo,
    pub metadata: Metadata,
    /// `nmethod::_comp_level` and its width (an int in JDK 17, a one-byte
    /// `CompLevel` in JDK 25): read for the inline table, not the walk.
    pub comp_level: Option<(usize, usize)>,
    /// `nmethod::_entry_bci`: the loop bci of on-stack-replacement code,
    /// -1 (InvocationEntryBci) for the normal entry.
    pub entry_bci: Option<usize>,
    /// `nmethod::_stub_offset`: where the nmethod's stubs (calls' stubs to
    /// the interpreter, return polls' stubs, exception and deoptimisation
    /// handlers) begin after its instructions, an int from the blob's start.
    pub stub_offset: Option<usize>,
}

/// Offsets for naming a `Method*` by its jmethodID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MethodLayout {
    pub const_method: usize,
    pub constants: usize,
    pub idnum: usize,
    pub code_size: usize,
    /// `sizeof(ConstMethod)`: the bytecodes follow it.
    pub const_method_size: usize,
    pub pool_holder: usize,
    pub jmethod_ids: usize,
    /// `Method::_code`: the nmethod the method enters now (null when none),
    /// if the VM describes it (`pcct_jit::events`: code made not entrant).
    pub code: Option<usize>,
}

/// Offsets in `JavaThread` and the structures it points to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadLayout {
    pub anchor: usize,
    pub state: usize,
    pub osthread: usize,
    pub os_thread_id: usize,
    pub stack_base: usize,
    pub stack_size: usize,
    pub vframe_array_head: usize,
    /// `JavaThread::_saved_exception_pc`: where a thread that hit a
    /// safepoint poll was, while the poll's handler blob builds its frame.
    /// `None` where the VM does not export it (such samples then break).
    pub saved_exception_pc: Option<usize>,
    pub anchor_sp: usize,
    pub anchor_pc: usize,
    pub anchor_fp: usize,
    /// `JavaCallWrapper::_anchor`.
    pub call_wrapper_anchor: usize,
    /// `frame::entry_frame_call_wrapper_offset`, in bytes from the entry
    /// frame's frame pointer.
    pub entry_frame_call_wrapper: isize,
    /// `_thread_in_Java` and `_thread_in_Java_trans`.
    pub in_java: u32,
    pub in_java_trans: u32,
}

/// The code heaps' layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapLayout {
    /// Offsets in `CodeHeap` of its `_memory` and `_segmap` virtual spaces.
    pub memory: usize,
    pub segmap: usize,
    /// Offsets in `VirtualSpace` of `_low_boundary` and `_high_boundary`
    /// (the reserved bounds, fixed for the VM's life).
    pub low: usize,
    pub high: usize,
    /// `sizeof(HeapBlock)` and the offset of `HeapBlock::Header::_used`.
    pub block_size: usize,
    pub block_used: usize,
}

/// Most code heaps HotSpot has (non-nmethods, profiled, non-profiled, one
/// for everything without segmented code cache).
pub const MAX_HEAPS: usize = 4;

/// One code heap: its reserved address range, its segment map (one byte
/// per segment, covering the range) and its segment size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Heap {
    pub low: usize,
    pub high: usize,
    pub segmap: usize,
    /// log2 of the segment size.
    pub shift: u32,
}

/// Where the VM's code is, read after its initialisation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Runtime {
    pub heaps: [Heap; MAX_HEAPS],
    pub heap_count: usize,
    /// Lowest and highest address of any code heap (`CodeCache::_low_bound`/`_high_bound`).
    pub code_low: usize,
    pub code_high: usize,
    /// The interpreter's code.
    pub interpreter_low: usize,
    pub interpreter_high: usize,
    /// `StubRoutines::_call_stub_return_address`: the return address of
    /// entry frames (where the VM calls Java).
    pub call_stub_return: usize,
}

/// Everything the walker needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The JDK's major version.
    pub major: u32,
    pub blob: BlobLayout,
    pub method: MethodLayout,
    pub thread: ThreadLayout,
    pub heap: HeapLayout,
    /// UNSIGNED5's excluded byte: 1 since JDK 20 (JDK-8292758), 0 before.
    pub unsigned5_base: u8,
    pub runtime: Runtime,
}

/// Addresses of the statics [`Layout::read_runtime`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Statics {
    pub code_heaps: usize,
    pub code_low: usize,
    pub code_high: usize,
    pub growable_len: usize,
    pub growable_data: usize,
    pub heap_log2_segment: usize,
    pub interpreter_code: usize,
    pub stub_buffer: usize,
    pub buffer_limit: usize,
    pub call_stub_return: usize,
}

/// A field the walker needs that this VM's tables do not describe.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("this JVM's VMStructs do not describe {0}")]
pub struct Missing(pub String);

fn need<T>(value: Option<T>, what: &str) -> Result<T, Missing> {
    value.ok_or_else(|| Missing(what.to_string()))
}

impl Layout {
    /// The layout described by `tables`, without the runtime part (see
    /// [`Layout::read_runtime`]).
    pub fn from_tables(tables: &VmStructs) -> Result<(Layout, Statics), Missing> {
        let major = need(tables.address("Abstract_VM_Version", "_vm_major_version"), "the VM version")?;
        // SAFETY: a static int of libjvm.so, described by its own tables.
        let major = unsafe { *(major as *const i32) } as u32;
        let layout = Layout {
            major,
            blob: blob_layout(tables)?,
            method: method_layout(tables)?,
            thread: thread_layout(tables)?,
            heap: heap_layout(tables)?,
            unsigned5_base: u8::from(major >= 20),
            runtime: Runtime::default(),
        };
        Ok((layout, statics(tables)?))
    }

    /// Reads where the code heaps, the interpreter and the call stub are.
    /// Call it after VMInit (they do not exist before).
    pub fn read_runtime(&mut self, memory: &impl Memory, statics: &Statics) -> Result<(), Missing> {
        let heaps = need(memory.word(statics.code_heaps).filter(|&a| a != 0), "the code heaps")?;
        let count = need(memory.u32(heaps + statics.growable_len), "the code heap count")? as usize;
        let data = need(memory.word(heaps + statics.growable_data), "the code heap array")?;
        if count == 0 || count > MAX_HEAPS {
            return Err(Missing(format!("a code heap count of 1..{MAX_HEAPS} (found {count})")));
        }
        let mut runtime = Runtime { heap_count: count, ..Runtime::default() };
        let fields = &self.heap;
        for index in 0..count {
            let heap = need(memory.word(data + index * 8), "a code heap")?;
            let shift = need(memory.u32(heap + statics.heap_log2_segment), "a code heap's segment size")?;
            if !(4..=16).contains(&shift) {
                return Err(Missing(format!("a plausible code segment size (2^{shift})")));
            }
            runtime.heaps[index] = Heap {
                low: need(memory.word(heap + fields.memory + fields.low), "a code heap's low bound")?,
                high: need(memory.word(heap + fields.memory + fields.high), "a code heap's high bound")?,
                segmap: need(memory.word(heap + fields.segmap + fields.low), "a code heap's segment map")?,
                shift,
            };
        }
        runtime.code_low = need(memory.word(statics.code_low), "the code cache's low bound")?;
        runtime.code_high = need(memory.word(statics.code_high), "the code cache's high bound")?;
        let interpreter = need(memory.word(statics.interpreter_code).filter(|&a| a != 0), "the interpreter")?;
        runtime.interpreter_low = need(memory.word(interpreter + statics.stub_buffer), "the interpreter's code")?;
        let limit = need(memory.u32(interpreter + statics.buffer_limit), "the interpreter's size")?;
        runtime.interpreter_high = runtime.interpreter_low + limit as usize;
        runtime.call_stub_return =
            need(memory.word(statics.call_stub_return).filter(|&a| a != 0), "the call stub's return address")?;
        self.runtime = runtime;
        Ok(())
    }
}

fn blob_layout(tables: &VmStructs) -> Result<BlobLayout, Missing> {
    // nmethod fields moved from CompiledMethod (JDK 17) to nmethod (JDK 23+).
    let nm = |field: &str| tables.offset("nmethod", field).or_else(|| tables.offset("CompiledMethod", field));
    let code_begin = match (tables.offset("CodeBlob", "_code_begin"), tables.offset("CodeBlob", "_code_offset")) {
        (Some(pointer), _) => CodeBegin::Pointer(pointer),
        (None, Some(offset)) => CodeBegin::Offset(offset),
        _ => return Err(Missing("CodeBlob::_code_begin or _code_offset".to_string())),
    };
    let verified_entry = match (nm("_verified_entry_point"), nm("_verified_entry_offset")) {
        (Some(pointer), _) => VerifiedEntry::Pointer(pointer),
        (None, Some(offset)) => VerifiedEntry::Offset(offset),
        _ => return Err(Missing("nmethod::_verified_entry_point or _verified_entry_offset".to_string())),
    };
    let pcs_begin = need(nm("_scopes_pcs_offset"), "nmethod::_scopes_pcs_offset")?;
    let debug_info = match (nm("_immutable_data"), nm("_scopes_data_begin")) {
        (Some(data_pointer), _) => DebugInfo::Immutable {
            data_pointer,
            pcs_begin,
            scopes_begin: need(nm("_scopes_data_offset"), "nmethod::_scopes_data_offset")?,
        },
        (None, Some(scopes_pointer)) => DebugInfo::InBlob {
            pcs_begin,
            pcs_end: need(nm("_dependencies_offset"), "nmethod::_dependencies_offset")?,
            scopes_pointer,
        },
        _ => return Err(Missing("nmethod::_immutable_data or _scopes_data_begin".to_string())),
    };
    let metadata = match (nm("_metadata_offset"), tables.offset("CodeBlob", "_mutable_data")) {
        (Some(offset_field), _) => Metadata::InBlob { offset_field },
        (None, Some(data_pointer)) => Metadata::Mutable {
            data_pointer,
            relocation_size: need(tables.offset("CodeBlob", "_relocation_size"), "CodeBlob::_relocation_size")?,
        },
        _ => return Err(Missing("nmethod::_metadata_offset or CodeBlob::_mutable_data".to_string())),
    };
    Ok(BlobLayout {
        name: need(tables.offset("CodeBlob", "_name"), "CodeBlob::_name")?,
        size: need(tables.offset("CodeBlob", "_size"), "CodeBlob::_size")?,
        frame_size: need(tables.offset("CodeBlob", "_frame_size"), "CodeBlob::_frame_size")?,
        frame_complete: need(tables.offset("CodeBlob", "_frame_complete_offset"), "CodeBlob::_frame_complete_offset")?,
        // An int before JDK 23, an int16_t since.
        frame_complete_is_short: tables.field_type("CodeBlob", "_frame_complete_offset") == Some("int16_t"),
        code_begin,
        method: need(nm("_method"), "nmethod::_method")?,
        verified_entry,
        compile_id: need(nm("_compile_id"), "nmethod::_compile_id")?,
        debug_info,
        metadata,
        comp_level: nm("_comp_level").map(|offset| {
            let width = tables.field_type("nmethod", "_comp_level").and_then(|ty| tables.size(ty)).unwrap_or(4);
            (offset, width)
        }),
        entry_bci: nm("_entry_bci"),
        stub_offset: nm("_stub_offset"),
    })
}

fn method_layout(tables: &VmStructs) -> Result<MethodLayout, Missing> {
    Ok(MethodLayout {
        const_method: need(tables.offset("Method", "_constMethod"), "Method::_constMethod")?,
        constants: need(tables.offset("ConstMethod", "_constants"), "ConstMethod::_constants")?,
        idnum: need(tables.offset("ConstMethod", "_method_idnum"), "ConstMethod::_method_idnum")?,
        code_size: need(tables.offset("ConstMethod", "_code_size"), "ConstMethod::_code_size")?,
        const_method_size: need(tables.size("ConstMethod"), "sizeof(ConstMethod)")?,
        pool_holder: need(tables.offset("ConstantPool", "_pool_holder"), "ConstantPool::_pool_holder")?,
        jmethod_ids: need(
            tables.offset("InstanceKlass", "_methods_jmethod_ids"),
            "InstanceKlass::_methods_jmethod_ids",
        )?,
        code: tables.offset("Method", "_code"),
    })
}

fn thread_layout(tables: &VmStructs) -> Result<ThreadLayout, Missing> {
    let thread = |field: &str| tables.offset("JavaThread", field).or_else(|| tables.offset("Thread", field));
    let constant = |name: &str| need(tables.constant(name), name);
    Ok(ThreadLayout {
        anchor: need(thread("_anchor"), "JavaThread::_anchor")?,
        state: need(thread("_thread_state"), "JavaThread::_thread_state")?,
        osthread: need(thread("_osthread"), "Thread::_osthread")?,
        os_thread_id: need(tables.offset("OSThread", "_thread_id"), "OSThread::_thread_id")?,
        stack_base: need(thread("_stack_base"), "JavaThread::_stack_base")?,
        stack_size: need(thread("_stack_size"), "JavaThread::_stack_size")?,
        vframe_array_head: need(thread("_vframe_array_head"), "JavaThread::_vframe_array_head")?,
        saved_exception_pc: thread("_saved_exception_pc"),
        anchor_sp: need(tables.offset("JavaFrameAnchor", "_last_Java_sp"), "JavaFrameAnchor::_last_Java_sp")?,
        anchor_pc: need(tables.offset("JavaFrameAnchor", "_last_Java_pc"), "JavaFrameAnchor::_last_Java_pc")?,
        anchor_fp: need(tables.offset("JavaFrameAnchor", "_last_Java_fp"), "JavaFrameAnchor::_last_Java_fp")?,
        call_wrapper_anchor: need(tables.offset("JavaCallWrapper", "_anchor"), "JavaCallWrapper::_anchor")?,
        entry_frame_call_wrapper: constant("frame::entry_frame_call_wrapper_offset")? as isize * 8,
        in_java: constant("_thread_in_Java")? as u32,
        in_java_trans: constant("_thread_in_Java_trans")? as u32,
    })
}

fn heap_layout(tables: &VmStructs) -> Result<HeapLayout, Missing> {
    Ok(HeapLayout {
        memory: need(tables.offset("CodeHeap", "_memory"), "CodeHeap::_memory")?,
        segmap: need(tables.offset("CodeHeap", "_segmap"), "CodeHeap::_segmap")?,
        low: need(tables.offset("VirtualSpace", "_low_boundary"), "VirtualSpace::_low_boundary")?,
        high: need(tables.offset("VirtualSpace", "_high_boundary"), "VirtualSpace::_high_boundary")?,
        block_size: need(tables.size("HeapBlock"), "sizeof(HeapBlock)")?,
        block_used: need(tables.offset("HeapBlock::Header", "_used"), "HeapBlock::Header::_used")?,
    })
}

fn statics(tables: &VmStructs) -> Result<Statics, Missing> {
    Ok(Statics {
        code_heaps: need(tables.address("CodeCache", "_heaps"), "CodeCache::_heaps")?,
        code_low: need(tables.address("CodeCache", "_low_bound"), "CodeCache::_low_bound")?,
        code_high: need(tables.address("CodeCache", "_high_bound"), "CodeCache::_high_bound")?,
        // GenericGrowableArray until JDK 16 renamed it.
        growable_len: need(
            tables.offset("GrowableArrayBase", "_len").or_else(|| tables.offset("GenericGrowableArray", "_len")),
            "GrowableArrayBase::_len",
        )?,
        growable_data: need(tables.offset("GrowableArray<int>", "_data"), "GrowableArray::_data")?,
        heap_log2_segment: need(tables.offset("CodeHeap", "_log2_segment_size"), "CodeHeap::_log2_segment_size")?,
        interpreter_code: need(tables.address("AbstractInterpreter", "_code"), "AbstractInterpreter::_code")?,
        stub_buffer: need(tables.offset("StubQueue", "_stub_buffer"), "StubQueue::_stub_buffer")?,
        buffer_limit: need(tables.offset("StubQueue", "_buffer_limit"), "StubQueue::_buffer_limit")?,
        call_stub_return: need(
            tables.address("StubRoutines", "_call_stub_return_address"),
            "StubRoutines::_call_stub_return_address",
        )?,
    })
}
