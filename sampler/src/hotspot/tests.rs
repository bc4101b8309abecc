//! The walker on synthetic stacks: a made-up VM (code heap, nmethod with
//! inlined scopes, interpreter, call stub, thread) in [`FakeMemory`], whose
//! every byte is known, then the same VM with garbage everywhere.

use super::cache::FrameCache;
use super::code::{self, BlobKind};
use super::history::History;
use super::layout::{
    BlobLayout, CodeBegin, DebugInfo, Heap, HeapLayout, Layout, Metadata, MethodLayout, Runtime, ThreadLayout,
    VerifiedEntry, INTERPRETER_BCP, INTERPRETER_LAST_SP, INTERPRETER_METHOD, INTERPRETER_SENDER_SP,
};
use super::memory::{FakeMemory, Memory};
use super::walker::{self, Broken, Ending, Memo, Registers, Walk, UNKNOWN_BCI};
use crate::agct::CallFrame;
use pcct::FrameKind;

const HEAP: usize = 0x1000_0000;
const CODE: usize = 0x2000_0000;
const CODE_SIZE: usize = 0x10000;
const SEGMAP: usize = 0x3000_0000;
const SHIFT: u32 = 7;
const INTERPRETER: usize = 0x4000_0000;
const NAMES: usize = 0x5000_0000;
const METADATA: usize = 0x5100_0000;
const SCOPES: usize = 0x5200_0000;
const THREAD: usize = 0x6000_0000;
const OSTHREAD: usize = 0x6100_0000;
const STACK: usize = 0x7000_0000;
const STACK_SIZE: usize = 0x10000;
const TID: i32 = 777;

/// The nmethod: its blob after a 16-byte heap block header at CODE.
const NM: usize = CODE + 16;
const NM_CODE: usize = NM + 0x100;
const NM_FRAME_WORDS: usize = 6;
/// The call stub's blob (segment 32), and its return address.
const STUB: usize = CODE + (32 << SHIFT) + 16;
const CALL_STUB_RETURN: usize = STUB + 0x120;

/// Methods A and B (compiled, B inlined into A) and C (interpreted).
const METHOD_A: usize = METADATA + 0x1000;
const METHOD_B: usize = METADATA + 0x2000;
const METHOD_C: usize = METADATA + 0x3000;

fn layout() -> Layout {
    Layout {
        major: 17,
        blob: BlobLayout {
            name: 0,
            size: 8,
            frame_size: 12,
            frame_complete: 16,
            frame_complete_is_short: false,
            code_begin: CodeBegin::Pointer(24),
            method: 32,
            verified_entry: VerifiedEntry::Pointer(40),
            compile_id: 48,
            debug_info: DebugInfo::InBlob { pcs_begin: 52, pcs_end: 56, scopes_pointer: 64 },
            metadata: Metadata::InBlob { offset_field: 72 },
            comp_level: Some((96, 4)),
            entry_bci: Some(100),
            stub_offset: Some(108),
        },
        method: MethodLayout {
            const_method: 8,
            constants: 8,
            idnum: 16,
            code_size: 18,
            const_method_size: 48,
            pool_holder: 24,
            jmethod_ids: 32,
            code: Some(40),
        },
        thread: ThreadLayout {
            anchor: 0x100,
            state: 0x200,
            osthread: 0x208,
            os_thread_id: 8,
            stack_base: 0x210,
            stack_size: 0x218,
            vframe_array_head: 0x220,
            saved_exception_pc: Some(0x228),
            anchor_sp: 0,
            anchor_pc: 8,
            anchor_fp: 16,
            call_wrapper_anchor: 32,
            entry_frame_call_wrapper: -48,
            in_java: 8,
            in_java_trans: 9,
        },
        heap: HeapLayout { memory: 0, segmap: 64, low: 16, high: 24, block_size: 16, block_used: 8 },
        unsigned5_base: 0,
        runtime: Runtime {
            heaps: [
                Heap { low: CODE, high: CODE + CODE_SIZE, segmap: SEGMAP, shift: SHIFT },
                Heap::default(),
                Heap::default(),
                Heap::default(),
            ],
            heap_count: 1,
            code_low: CODE,
            code_high: CODE + CODE_SIZE,
            interpreter_low: INTERPRETER,
            interpreter_high: INTERPRETER + 0x1000,
            call_stub_return: CALL_STUB_RETURN,
        },
    }
}

/// The synthetic VM, and where its stack's frames are.
struct Vm {
    memory: FakeMemory,
    layout: Layout,
    /// Compiled frame (top), interpreted frame, entry frame.
    compiled_sp: usize,
    interpreted_fp: usize,
    entry_fp: usize,
}

fn put_word(memory: &mut FakeMemory, address: usize, value: usize) {
    memory.put_u64(address, value as u64);
}

/// A `Method*` with a ConstMethod, constant pool, holder and jmethodID.
fn method(memory: &mut FakeMemory, method: usize, idnum: u16) {
    let const_method = method + 0x100;
    let constants = method + 0x200;
    let holder = method + 0x300;
    let ids = method + 0x400;
    let id_slot = method + 0x500;
    put_word(memory, method + 8, const_method);
    put_word(memory, const_method + 8, constants);
    memory.put_u16(const_method + 16, idnum);
    memory.put_u16(const_method + 18, 32); // 32 bytes of bytecode
    put_word(memory, constants + 24, holder);
    put_word(memory, holder + 32, ids);
    put_word(memory, ids, idnum as usize + 1); // length
    put_word(memory, ids + (idnum as usize + 1) * 8, id_slot);
    put_word(memory, id_slot, method);
}

/// A method's jmethodID in the synthetic VM.
fn id(method: usize) -> usize {
    method + 0x500
}

/// UNSIGNED5 as HotSpot writes it (`write_int_mb` before JDK 20, with no
/// excluded byte; `UNSIGNED5::write_uint` since, excluding the byte 0).
fn unsigned5_with(value: u32, excluded: u8, out: &mut Vec<u8>) {
    let x = excluded as u32;
    let low = 192 - x;
    let mut sum = value;
    for index in 0..5 {
        if sum < low || index == 4 {
            out.push((x + sum) as u8);
            return;
        }
        sum -= low;
        out.push((x + low + sum % 64) as u8);
        sum >>= 6;
    }
}

fn unsigned5(value: u32, out: &mut Vec<u8>) {
    unsigned5_with(value, 0, out);
}

/// The two layouts of compiled methods the walker reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Jdk {
    /// JDK 17: pointers to code and scopes, debug information in the blob.
    J17,
    /// JDK 23+: offsets, debug information in an immutable block, metadata
    /// behind the relocations, 16-bit frame-complete offset, UNSIGNED5 with
    /// an excluded byte.
    J25,
}

/// Where the JDK 25 layout's immutable and mutable data blocks are.
const IMMUTABLE: usize = 0x5300_0000;
const MUTABLE: usize = 0x5400_0000;

fn layout_of(jdk: Jdk) -> Layout {
    let mut layout = layout();
    if jdk == Jdk::J25 {
        layout.major = 25;
        layout.unsigned5_base = 1;
        layout.blob.code_begin = CodeBegin::Offset(24);
        layout.blob.verified_entry = VerifiedEntry::Offset(40);
        layout.blob.frame_complete_is_short = true;
        layout.blob.debug_info = DebugInfo::Immutable { data_pointer: 64, pcs_begin: 52, scopes_begin: 56 };
        layout.blob.metadata = Metadata::Mutable { data_pointer: 80, relocation_size: 88 };
    }
    layout
}

/// The nmethod's code pointers, PcDescs, scopes and metadata, as `jdk`
/// lays them out: PcDescs 0x40 -> scope at 10 (B at 300 inlined in A at 5),
/// 0x80 -> no scope.
fn write_debug_info(memory: &mut FakeMemory, jdk: Jdk) {
    let pcs = [(-1i32, 0i32), (0x40, 10), (0x80, 0), (0x7FFF_FFFF, 0)];
    let excluded = if jdk == Jdk::J25 { 1 } else { 0 };
    let mut scopes = vec![excluded; 1];
    unsigned5_with(0, excluded, &mut scopes);
    unsigned5_with(1, excluded, &mut scopes);
    unsigned5_with(5 + 1, excluded, &mut scopes);
    scopes.resize(10, excluded);
    unsigned5_with(1, excluded, &mut scopes);
    unsigned5_with(2, excluded, &mut scopes);
    unsigned5_with(300 + 1, excluded, &mut scopes); // a bci needing two bytes
    let (pcs_at, scopes_at, metadata_at) = match jdk {
        Jdk::J17 => {
            memory.put_u32(NM + 16, 0x10);
            put_word(memory, NM + 24, NM_CODE);
            put_word(memory, NM + 40, NM_CODE);
            memory.put_u32(NM + 52, 0x200);
            memory.put_u32(NM + 56, 0x200 + pcs.len() as u32 * 16);
            put_word(memory, NM + 64, SCOPES);
            memory.put_u32(NM + 72, 0x300);
            (NM + 0x200, SCOPES, NM + 0x300)
        }
        Jdk::J25 => {
            memory.map(IMMUTABLE, 0x200);
            memory.map(MUTABLE, 0x100);
            memory.put_u16(NM + 16, 0x10);
            memory.put_u32(NM + 24, (NM_CODE - NM) as u32);
            memory.put_u16(NM + 40, 0);
            // The PcDescs end where the scopes begin (scopes_pcs_end).
            memory.put_u32(NM + 52, 0);
            memory.put_u32(NM + 56, pcs.len() as u32 * 16);
            put_word(memory, NM + 64, IMMUTABLE);
            put_word(memory, NM + 80, MUTABLE);
            memory.put_u32(NM + 88, 0x20);
            (IMMUTABLE, IMMUTABLE + pcs.len() * 16, MUTABLE + 0x20)
        }
    };
    for (index, (pc, scope)) in pcs.iter().enumerate() {
        memory.put_u32(pcs_at + index * 16, *pc as u32);
        memory.put_u32(pcs_at + index * 16 + 4, *scope as u32);
    }
    memory.write(scopes_at, &scopes);
    put_word(memory, metadata_at, METHOD_A); // metadata_at(1)
    put_word(memory, metadata_at + 8, METHOD_B); // metadata_at(2)
}

fn build() -> Vm {
    build_as(Jdk::J17)
}

fn build_as(jdk: Jdk) -> Vm {
    let mut memory = FakeMemory::default();
    let layout = layout_of(jdk);
    for (base, size) in [
        (HEAP, 0x100),
        (CODE, CODE_SIZE),
        (SEGMAP, CODE_SIZE >> SHIFT),
        (INTERPRETER, 0x1000),
        (NAMES, 0x100),
        (METADATA, 0x4000),
        (SCOPES, 0x100),
        (THREAD, 0x400),
        (OSTHREAD, 0x100),
        (STACK, STACK_SIZE),
    ] {
        memory.map(base, size);
    }
    // The heap: committed from CODE to CODE + CODE_SIZE, its segment map.
    put_word(&mut memory, HEAP + 16, CODE);
    put_word(&mut memory, HEAP + 24, CODE + CODE_SIZE);
    put_word(&mut memory, HEAP + 64 + 16, SEGMAP);
    for index in 0..(CODE_SIZE >> SHIFT) {
        memory.put_u8(SEGMAP + index, 0xFF);
    }
    // Blocks: the nmethod in segments 0..8, the call stub in 32..36.
    for (first, count) in [(0usize, 8usize), (32, 4)] {
        for segment in 0..count {
            memory.put_u8(SEGMAP + first + segment, segment.min(0xFE) as u8);
        }
        let block = CODE + (first << SHIFT);
        put_word(&mut memory, block, count);
        memory.put_u8(block + 8, 1);
    }
    memory.write(NAMES, b"nmethod\0");
    memory.write(NAMES + 0x20, b"StubRoutines (1)\0");
    // The nmethod.
    put_word(&mut memory, NM, NAMES);
    memory.put_u32(NM + 8, (8 << SHIFT) - 16);
    memory.put_u32(NM + 12, NM_FRAME_WORDS as u32);
    put_word(&mut memory, NM + 32, METHOD_A);
    memory.put_u32(NM + 48, 42);
    write_debug_info(&mut memory, jdk);
    // The call stub.
    put_word(&mut memory, STUB, NAMES + 0x20);
    memory.put_u32(STUB + 8, 4 << SHIFT);
    match jdk {
        Jdk::J17 => put_word(&mut memory, STUB + 24, STUB + 0x100),
        Jdk::J25 => memory.put_u32(STUB + 24, 0x100),
    }
    method(&mut memory, METHOD_A, 0);
    method(&mut memory, METHOD_B, 1);
    method(&mut memory, METHOD_C, 2);
    // The thread: in Java, its stack, its OS thread.
    put_word(&mut memory, THREAD + 0x210, STACK + STACK_SIZE);
    put_word(&mut memory, THREAD + 0x218, STACK_SIZE);
    memory.put_u32(THREAD + 0x200, 8);
    put_word(&mut memory, THREAD + 0x208, OSTHREAD);
    memory.put_u32(OSTHREAD + 8, TID as u32);
    // The stack, from the top: a compiled frame (6 words), an interpreted
    // frame, an entry frame whose call wrapper's anchor is empty.
    let compiled_sp = STACK + 0x8000;
    let interpreted_fp = compiled_sp + NM_FRAME_WORDS * 8 + 0x40;
    let entry_fp = interpreted_fp + 0x100;
    put_word(&mut memory, compiled_sp + NM_FRAME_WORDS * 8 - 8, INTERPRETER + 0x80);
    put_word(&mut memory, compiled_sp + NM_FRAME_WORDS * 8 - 16, interpreted_fp);
    let slot = |words: isize| interpreted_fp.wrapping_add_signed(words * 8);
    put_word(&mut memory, slot(INTERPRETER_METHOD), METHOD_C);
    put_word(&mut memory, slot(INTERPRETER_BCP), METHOD_C + 0x100 + 48 + 7);
    put_word(&mut memory, slot(INTERPRETER_SENDER_SP), interpreted_fp + 16);
    put_word(&mut memory, interpreted_fp, entry_fp);
    put_word(&mut memory, interpreted_fp + 8, CALL_STUB_RETURN);
    let wrapper = entry_fp + 0x80;
    put_word(&mut memory, entry_fp - 48, wrapper);
    put_word(&mut memory, wrapper + 32, 0);
    Vm { memory, layout, compiled_sp, interpreted_fp, entry_fp }
}

impl Vm {
    fn registers_at(&self, pc: usize) -> Registers {
        Registers { pc, sp: self.compiled_sp, fp: 0xBAD, rbx: 0, r13: 0 }
    }

    fn walk(&self, registers: Registers, capacity: usize) -> (Walk, Vec<(usize, i32)>) {
        let mut out = vec![CallFrame::EMPTY; capacity];
        let walk = walker::walk(&self.memory, &self.layout, THREAD, registers, &mut out, Memo::default());
        let frames = out[..walk.frames].iter().map(|frame| (frame.method_id as usize, frame.lineno)).collect();
        (walk, frames)
    }
}

#[test]
fn blobs_are_found_from_any_pc_inside_them() {
    let vm = build();
    for pc in [NM, NM_CODE, NM_CODE + 0x2EF, CODE + (8 << SHIFT) - 1] {
        let blob = code::find_blob(&vm.memory, &vm.layout, pc).expect("the nmethod");
        assert_eq!((blob.address, blob.kind, blob.frame_size), (NM, BlobKind::Nmethod, NM_FRAME_WORDS), "{pc:#x}");
    }
    let stub = code::find_blob(&vm.memory, &vm.layout, CALL_STUB_RETURN).expect("the call stub");
    assert_eq!((stub.address, stub.kind), (STUB, BlobKind::Other));
    assert!(stub.name_starts_with(b"StubRoutines"));
    // A free segment, and a pc outside the heap.
    assert_eq!(code::find_blob(&vm.memory, &vm.layout, CODE + (20 << SHIFT)), None);
    assert_eq!(code::find_blob(&vm.memory, &vm.layout, CODE + CODE_SIZE + 8), None);
}

#[test]
fn an_nmethod_tells_its_level_entry_and_compile_id_from_any_code_address() {
    for jdk in [Jdk::J17, Jdk::J25] {
        let mut vm = build_as(jdk);
        let compile_id =
            code::compile_id(&vm.memory, &vm.layout, &code::find_blob(&vm.memory, &vm.layout, NM).unwrap());
        vm.memory.put_u32(NM + 96, 4);
        vm.memory.put_u32(NM + 100, u32::MAX); // InvocationEntryBci: the normal entry
        let facts = code::nmethod_facts(&vm.memory, &vm.layout, NM_CODE + 0x10).expect("an nmethod");
        assert_eq!(facts, code::NmethodFacts { level: Some(4), osr_bci: None, compile_id, nmethod: NM });
        vm.memory.put_u32(NM + 100, 17);
        vm.layout.blob.comp_level = Some((96, 1));
        vm.memory.put_u32(NM + 96, 3);
        let facts = code::nmethod_facts(&vm.memory, &vm.layout, NM_CODE).expect("an nmethod");
        assert_eq!((facts.level, facts.osr_bci), (Some(3), Some(17)));
        assert_eq!(code::nmethod_facts(&vm.memory, &vm.layout, CALL_STUB_RETURN), None, "a stub is no nmethod");
    }
}

#[test]
fn a_method_tells_the_nmethod_it_enters() {
    let mut vm = build();
    let m = METHOD_C;
    put_word(&mut vm.memory, m + 40, NM);
    assert_eq!(code::entered_code(&vm.memory, &vm.layout, id(m)), Some(NM));
    put_word(&mut vm.memory, m + 40, 0);
    assert_eq!(code::entered_code(&vm.memory, &vm.layout, id(m)), Some(0), "made not entrant");
    assert_eq!(code::entered_code(&vm.memory, &vm.layout, 0x10), None, "an unreadable id");
    put_word(&mut vm.memory, id(m), 0);
    assert_eq!(code::entered_code(&vm.memory, &vm.layout, id(m)), None, "a cleared id (class unloaded)");
    vm.layout.method.code = None;
    assert_eq!(code::entered_code(&vm.memory, &vm.layout, id(m)), None, "a VM that does not say");
}

#[test]
fn a_compiled_frame_with_inlining_an_interpreted_frame_and_an_entry_frame_walk_to_the_bottom() {
    for jdk in [Jdk::J17, Jdk::J25] {
        let vm = build_as(jdk);
        let (walk, frames) = vm.walk(vm.registers_at(NM_CODE + 0x30), 16);
        assert_eq!(walk.ending, Ending::Complete, "{jdk:?}");
        // B (inlined, bci 300) in A (bci 5), then C interpreted at bci 7.
        assert_eq!(frames, vec![(id(METHOD_B), 300), (id(METHOD_A), 5), (id(METHOD_C), 7)], "{jdk:?}");
        // In the prologue (before frame_complete), at the verified entry.
        let sp = vm.compiled_sp + NM_FRAME_WORDS * 8 - 8;
        let registers = Registers { pc: NM_CODE, sp, fp: vm.interpreted_fp, rbx: 0, r13: 0 };
        let mut prologue = build_as(jdk);
        put_word(&mut prologue.memory, sp, INTERPRETER + 0x80);
        let (walk, frames) = prologue.walk(registers, 16);
        assert_eq!((walk.ending, frames.len()), (Ending::Complete, 2), "{jdk:?}");
    }
}

#[test]
fn each_frame_says_how_it_ran_and_the_cache_keeps_it() {
    for jdk in [Jdk::J17, Jdk::J25] {
        let mut vm = build_as(jdk);
        vm.memory.put_u32(NM + 96, 4);
        let cache = super::cache::tests::new_cache(16, 16);
        for walk in 0..2 {
            let mut out = vec![CallFrame::EMPTY; 16];
            let memo = Memo { cache: Some(&cache), ..Memo::default() };
            let done = walker::walk(&vm.memory, &vm.layout, THREAD, vm.registers_at(NM_CODE + 0x30), &mut out, memo);
            let kinds: Vec<FrameKind> = out[..done.frames].iter().map(|frame| FrameKind::from_u8(frame.kind)).collect();
            // B inlined into A's C2 code, C interpreted; the second walk
            // takes A's frame from the cache, kinds and all.
            assert_eq!(kinds, [FrameKind::Inlined, FrameKind::Tier4, FrameKind::Interpreted], "{jdk:?} walk {walk}");
            assert_eq!(done.cache_hits, walk, "{jdk:?} walk {walk}");
        }
        vm.memory.put_u32(NM + 96, 2);
        let (_, frames) = vm.walk(vm.registers_at(NM_CODE + 0x30), 16);
        let mut out = vec![CallFrame::EMPTY; 16];
        walker::walk(&vm.memory, &vm.layout, THREAD, vm.registers_at(NM_CODE + 0x30), &mut out, Memo::default());
        assert_eq!((frames.len(), FrameKind::from_u8(out[1].kind)), (3, FrameKind::Tier2), "{jdk:?}: C1 code");
        // An interpreted frame without a bytecode pointer is a native
        // method's, in the interpreter's native entry.
        put_word(&mut vm.memory, vm.interpreted_fp.wrapping_add_signed(INTERPRETER_BCP * 8), 0);
        let mut out = vec![CallFrame::EMPTY; 16];
        walker::walk(&vm.memory, &vm.layout, THREAD, vm.registers_at(NM_CODE + 0x30), &mut out, Memo::default());
        assert_eq!((out[2].lineno, FrameKind::from_u8(out[2].kind)), (walker::NATIVE_BCI, FrameKind::Native));
    }
}

#[test]
fn compressed_integers_read_as_hotspot_writes_them() {
    for excluded in [0u8, 1] {
        let layout = Layout { unsigned5_base: excluded, ..layout() };
        let values = [0u32, 1, 63, 190, 191, 192, 193, 255, 256, 4095, 4096, 12_287, 12_288, 1 << 20, u32::MAX >> 2];
        let mut bytes = Vec::new();
        for &value in &values {
            unsigned5_with(value, excluded, &mut bytes);
        }
        let mut memory = FakeMemory::default();
        memory.map(SCOPES, bytes.len() + 8);
        memory.write(SCOPES, &bytes);
        let mut stream = code::tests_support::stream(&memory, &layout, SCOPES);
        for &value in &values {
            assert_eq!(stream.next(), Some(value), "excluded byte {excluded}");
        }
    }
}

#[test]
fn a_pc_without_debug_information_names_the_nmethods_method() {
    let vm = build();
    // 0x80's PcDesc has no scope.
    let (walk, frames) = vm.walk(vm.registers_at(NM_CODE + 0x70), 16);
    assert_eq!(walk.ending, Ending::Complete);
    assert_eq!(frames[0], (id(METHOD_A), UNKNOWN_BCI));
}

#[test]
fn a_thread_in_the_vm_is_walked_from_its_last_java_frame() {
    let mut vm = build();
    vm.memory.put_u32(THREAD + 0x200, 6); // _thread_in_vm
    let anchor = THREAD + 0x100;
    put_word(&mut vm.memory, anchor, vm.interpreted_fp - 0x40);
    put_word(&mut vm.memory, anchor + 8, INTERPRETER + 0x10);
    put_word(&mut vm.memory, anchor + 16, vm.interpreted_fp);
    let (walk, frames) = vm.walk(vm.registers_at(0x1234), 16);
    assert_eq!(walk.ending, Ending::Complete);
    assert_eq!(frames, vec![(id(METHOD_C), 7)]);
    // No anchor: no Java frame.
    put_word(&mut vm.memory, anchor, 0);
    assert_eq!(vm.walk(vm.registers_at(0x1234), 16).0.ending, Ending::Broken(Broken::NoJavaFrame));
}

/// Back from the VM with its state set to Java again but still in the VM's
/// native frames (as after a safepoint poll): the last Java frame is where
/// the walk starts, not the native context; without one, the context.
#[test]
fn a_thread_in_java_state_in_native_code_is_walked_from_its_last_java_frame() {
    let mut vm = build();
    let anchor = THREAD + 0x100;
    put_word(&mut vm.memory, anchor, vm.interpreted_fp - 0x40);
    put_word(&mut vm.memory, anchor + 8, INTERPRETER + 0x10);
    put_word(&mut vm.memory, anchor + 16, vm.interpreted_fp);
    let native = Registers { pc: 0x7F00_0000_1000, sp: vm.compiled_sp - 0x400, fp: 0x28, rbx: 0, r13: 0 };
    let (walk, frames) = vm.walk(native, 16);
    assert_eq!((walk.ending, frames), (Ending::Complete, vec![(id(METHOD_C), 7)]));
    // In Java code, the context wins even with an anchor recorded.
    let (walk, frames) = vm.walk(vm.registers_at(NM_CODE + 0x30), 16);
    assert_eq!(
        (walk.ending, frames),
        (Ending::Complete, vec![(id(METHOD_B), 300), (id(METHOD_A), 5), (id(METHOD_C), 7)])
    );
    put_word(&mut vm.memory, anchor, 0);
    assert_eq!(vm.walk(native, 16).0.ending, Ending::Broken(Broken::Native));
}

/// Native code called from compiled code without a frame of its own yet:
/// the word at the sp is its return address when it follows a call; a
/// pointer into the code that follows none (a poll's pc the VM holds) is
/// not taken for one.
#[test]
fn native_code_at_the_top_leaves_by_a_return_address_that_follows_a_call() {
    let mut vm = build();
    let returns_to = make_return_address(&mut vm);
    let sp = vm.compiled_sp - 8;
    put_word(&mut vm.memory, sp, returns_to);
    let native = Registers { pc: 0x7F00_0000_1000, sp, fp: 0x28, rbx: 0, r13: 0 };
    let (walk, frames) = vm.walk(native, 16);
    assert_eq!(
        (walk.ending, frames),
        (Ending::Complete, vec![(id(METHOD_B), 300), (id(METHOD_A), 5), (id(METHOD_C), 7)])
    );
    vm.memory.write(returns_to - 5, &[0; 5]);
    assert_eq!(vm.walk(native, 16).0.ending, Ending::Broken(Broken::Native));
}

/// A top pc in the nmethod's stubs section (after its instructions): with
/// the caller's return address at the sp the frame is gone; a call's stub
/// to the interpreter runs with the return address back into the method at
/// the sp; an exception handler's start with the frame whole. C2's
/// out-of-line stub of a return poll, in the instructions, runs after the
/// frame is gone.
#[test]
fn a_sample_in_an_nmethods_stubs_finds_its_frame_gone_whole_or_under_a_return_address() {
    let mut vm = build();
    vm.memory.put_u32(NM + 108, 0x300);
    let stubs = NM + 0x300;
    let frame_end = vm.compiled_sp + NM_FRAME_WORDS * 8;
    // The interpreter's return address follows a call.
    vm.memory.write(INTERPRETER + 0x80 - 5, &[0xE8, 0, 0, 0, 0]);
    let at = |pc: usize, sp: usize| Registers { pc, sp, fp: 0x28, rbx: 0, r13: 0 };
    // After `pop rbp` rbp is the caller's again.
    let popped = Registers { fp: vm.interpreted_fp, ..at(stubs + 0x10, frame_end - 8) };
    let (walk, frames) = vm.walk(popped, 16);
    let gone = vec![(id(METHOD_A), UNKNOWN_BCI), (id(METHOD_C), 7)];
    assert_eq!((walk.ending, &frames), (Ending::Complete, &gone), "frame gone");
    // C2's out-of-line stub of a return poll, in the instructions: `mov r10,
    // poll; mov [r15 + 0x3a0], r10; jmp handler`, with the frame gone.
    let stub = NM_CODE + 0x1A0;
    let poll = NM_CODE + 0x100;
    vm.memory.write(stub, &[0x49, 0xBA]);
    vm.memory.write(stub + 2, &poll.to_le_bytes());
    vm.memory.write(stub + 10, &[0x4D, 0x89, 0x97, 0xA0, 0x03, 0, 0, 0xE9, 0, 0, 0, 0]);
    for pc in [stub, stub + 10, stub + 17] {
        let (walk, frames) = vm.walk(Registers { pc, ..popped }, 16);
        assert_eq!((walk.ending, &frames), (Ending::Complete, &gone), "poll stub at {:#x}", pc - stub);
    }
    let returns_to = make_return_address(&mut vm);
    put_word(&mut vm.memory, vm.compiled_sp - 8, returns_to);
    let (walk, frames) = vm.walk(at(stubs + 0x20, vm.compiled_sp - 8), 16);
    let whole = vec![(id(METHOD_B), 300), (id(METHOD_A), 5), (id(METHOD_C), 7)];
    assert_eq!((walk.ending, frames), (Ending::Complete, whole), "call's stub");
    put_word(&mut vm.memory, vm.compiled_sp, 0x28);
    let (walk, frames) = vm.walk(at(stubs + 0x30, vm.compiled_sp), 16);
    assert_eq!(
        (walk.ending, frames),
        (Ending::Complete, vec![(id(METHOD_A), UNKNOWN_BCI), (id(METHOD_C), 7)]),
        "handler"
    );
}

#[test]
fn a_sample_in_a_prologue_leaves_by_the_return_address_at_the_sp() {
    let mut vm = build();
    // At the verified entry nothing is pushed: the return address (into
    // the interpreter) is at the sp, and the caller's fp still in rbp.
    let sp = vm.compiled_sp + NM_FRAME_WORDS * 8 - 8;
    put_word(&mut vm.memory, sp, INTERPRETER + 0x80);
    let registers = Registers { pc: NM_CODE, sp, fp: vm.interpreted_fp, rbx: 0, r13: 0 };
    let (walk, frames) = vm.walk(registers, 16);
    assert_eq!(walk.ending, Ending::Complete);
    assert_eq!(frames, vec![(id(METHOD_A), UNKNOWN_BCI), (id(METHOD_C), 7)]);
}

/// An i2c adapter (interpreted caller, compiled callee) builds no frame:
/// interrupted in it, with its sp moved off the return address and rbp
/// still the interpreted caller's frame pointer, the walk goes on at that
/// interpreted frame (at its call's `last_sp`), not at the frame's caller;
/// the same for native code that builds no frame.
#[test]
fn a_frameless_stub_called_from_the_interpreter_keeps_its_interpreted_caller() {
    for jdk in [Jdk::J17, Jdk::J25] {
        let mut vm = build_as(jdk);
        let fp = vm.interpreted_fp;
        let last_sp = fp - 0x20;
        // The interpreter pushed the return address (its invoke's return
        // entry) and recorded the sp of the call.
        put_word(&mut vm.memory, last_sp - 8, INTERPRETER + 0x90);
        let recorded = match jdk {
            Jdk::J17 => last_sp,
            Jdk::J25 => (-((fp - last_sp) as isize / 8)) as usize,
        };
        put_word(&mut vm.memory, fp.wrapping_add_signed(INTERPRETER_LAST_SP * 8), recorded);
        // In the stub (not at its first instruction, nothing at the sp that
        // returns into Java), the sp aligned below the return address.
        let registers = Registers { pc: STUB + 0x110, sp: last_sp - 0x30, fp, rbx: 0, r13: 0 };
        let (walk, frames) = vm.walk(registers, 16);
        assert_eq!((walk.ending, frames), (Ending::Complete, vec![(id(METHOD_C), 7)]), "{jdk:?}");
        // Native code without a frame pointer (a leaf call) on top of it,
        // between calls (no last_sp): the caller is the interpreted frame.
        put_word(&mut vm.memory, fp.wrapping_add_signed(INTERPRETER_LAST_SP * 8), 0);
        let native = Registers { pc: 0x7F00_0000_1000, ..registers };
        let (walk, frames) = vm.walk(native, 16);
        assert_eq!((walk.ending, frames), (Ending::Complete, vec![(id(METHOD_C), 7)]), "{jdk:?}");
        // A frame pointer that is no interpreted frame's (no Method* that
        // its jmethodID points back to) is followed as before.
        put_word(&mut vm.memory, fp.wrapping_add_signed(INTERPRETER_METHOD * 8), METADATA + 0x3800);
        let (walk, frames) = vm.walk(native, 16);
        assert_ne!(frames.first(), Some(&(id(METHOD_C), 7)), "{jdk:?}: {walk:?}");
    }
}

/// The nmethod's pc `NM_CODE + 0x30` made a return address: a `call` before it.
fn make_return_address(vm: &mut Vm) -> usize {
    let pc = NM_CODE + 0x30;
    vm.memory.write(pc - 5, &[0xE8, 0, 0, 0, 0]);
    pc
}

/// A stub of `StubRoutines` (an oop arraycopy) calls native code (G1's
/// barrier) after `push rbp; mov rbp, rsp` and saving every register; a
/// sample in the native code reaches the stub by frame pointers and leaves
/// it by its frame pointer, to the compiled caller, when what is above it
/// returns into Java code.
#[test]
fn a_stub_routine_in_a_call_to_native_code_is_left_by_its_frame_pointer() {
    let mut vm = build();
    let returns_to = make_return_address(&mut vm);
    let stub_fp = vm.compiled_sp - 16;
    let stub_sp = stub_fp - 0x80;
    let native_fp = stub_sp - 16;
    put_word(&mut vm.memory, stub_fp, 0x28); // the compiled caller's rbp: a general register
    put_word(&mut vm.memory, stub_fp + 8, returns_to);
    put_word(&mut vm.memory, native_fp, stub_fp);
    put_word(&mut vm.memory, native_fp + 8, STUB + 0x180);
    let registers = Registers { pc: 0x7F00_0000_1000, sp: native_fp - 0x20, fp: native_fp, rbx: 0, r13: 0 };
    let (walk, frames) = vm.walk(registers, 16);
    assert_eq!(walk.ending, Ending::Complete);
    assert_eq!(frames, vec![(id(METHOD_B), 300), (id(METHOD_A), 5), (id(METHOD_C), 7)]);
    // What is above the stub's frame pointer does not return into Java code
    // (no call before it): the walk stops at the stub.
    vm.memory.write(returns_to - 5, &[0; 5]);
    assert_eq!(vm.walk(registers, 16).0.ending, Ending::Broken(Broken::Stub));
    // Another stub without a frame size (an adapter) is not left so.
    vm.memory.write(returns_to - 5, &[0xE8, 0, 0, 0, 0]);
    vm.memory.write(NAMES + 0x20, b"I2C/C2I adapters\0");
    assert_eq!(vm.walk(registers, 16).0.ending, Ending::Broken(Broken::Stub));
    vm.memory.write(NAMES + 0x20, b"StubRoutines (1)\0");
    assert_eq!(vm.walk(registers, 16).0.ending, Ending::Complete);
    // Nor is a frame pointer below the stub's sp followed.
    put_word(&mut vm.memory, stub_sp - 0x40, stub_fp);
    put_word(&mut vm.memory, stub_sp - 0x38, returns_to);
    put_word(&mut vm.memory, native_fp, stub_sp - 0x40);
    assert_eq!(vm.walk(registers, 16).0.ending, Ending::Broken(Broken::Stub));
}

/// Interrupted between a stub routine's `push rbp` and its `mov rbp, rsp`
/// (the stubs of `StubRoutines` share one blob, so this is not the blob's
/// start): the saved rbp is at the sp, the return address above it.
#[test]
fn a_stub_routine_between_push_rbp_and_mov_rbp_rsp_leaves_by_the_return_address_above() {
    let mut vm = build();
    let returns_to = make_return_address(&mut vm);
    let entry = STUB + 0x160;
    vm.memory.write(entry, &[0x55, 0x48, 0x8B, 0xEC]);
    let sp = vm.compiled_sp - 16;
    put_word(&mut vm.memory, sp, 0x28);
    put_word(&mut vm.memory, sp + 8, returns_to);
    let registers = Registers { pc: entry + 1, sp, fp: 0x28, rbx: 0, r13: 0 };
    let (walk, frames) = vm.walk(registers, 16);
    assert_eq!(walk.ending, Ending::Complete);
    assert_eq!(frames, vec![(id(METHOD_B), 300), (id(METHOD_A), 5), (id(METHOD_C), 7)]);
    // Above the saved rbp no return into Java code: not taken for a frame.
    vm.memory.write(returns_to - 5, &[0; 5]);
    assert_eq!(vm.walk(registers, 16).0.ending, Ending::Broken(Broken::Stub));
}

/// A loop's safepoint poll faulted in the compiled frame at the top and
/// HotSpot's fault handler sent the thread to the `SafepointBlob` that
/// starts `push rbx; push rbp; mov rbp, rsp`, with the poll's pc in
/// `JavaThread::_saved_exception_pc`. Wherever the blob is interrupted,
/// the compiled frame is the top one, at the poll.
#[test]
fn a_sample_in_a_safepoint_polls_handler_is_the_method_at_the_poll() {
    let mut vm = build();
    let poll = NM_CODE + 0x30;
    let blob_code = STUB + 0x100;
    let frame_words = 0x20;
    vm.memory.write(NAMES + 0x20, b"SafepointBlob\0");
    vm.memory.put_u32(STUB + 12, frame_words as u32);
    vm.memory.write(blob_code, &[0x53, 0x55, 0x48, 0x8B, 0xEC, 0x9C]);
    vm.memory.put_u8(blob_code + 0x60, 0xC3);
    put_word(&mut vm.memory, THREAD + 0x228, poll);
    let java_sp = vm.compiled_sp;
    let expected = vec![(id(METHOD_B), 300), (id(METHOD_A), 5), (id(METHOD_C), 7)];
    let at = |pc: usize, sp: usize, fp: usize| Registers { pc: blob_code + pc, sp, fp, rbx: 0, r13: 0 };
    // At the first instruction (the slot not pushed), after `push rbx`,
    // after `push rbp` (the compiled code's rbp, a general register, saved).
    let fp = java_sp - 16;
    put_word(&mut vm.memory, java_sp - 8, 0x1234);
    put_word(&mut vm.memory, fp, 0x28);
    let frame_sp = fp + 16 - frame_words * 8;
    let cases = [
        ("at the start", at(0, java_sp, 0x28)),
        ("after push rbx", at(1, java_sp - 8, 0x28)),
        ("after push rbp", at(2, java_sp - 16, 0x28)),
        ("saving registers, slot not written", at(0x10, fp - 0x40, fp)),
        ("frame built, slot not written", at(0x30, frame_sp, fp)),
    ];
    for (when, registers) in cases {
        let (walk, frames) = vm.walk(registers, 16);
        assert_eq!((walk.ending, &frames), (Ending::Complete, &expected), "{when}");
    }
    // The slot written with the poll's pc, then moved past the poll: the
    // frame is still named at the poll.
    for slot in [poll, poll + 3] {
        put_word(&mut vm.memory, java_sp - 8, slot);
        let (walk, frames) = vm.walk(at(0x40, frame_sp, fp), 16);
        assert_eq!((walk.ending, &frames), (Ending::Complete, &expected), "slot {slot:#x}");
        // At the `ret`, the slot at the sp.
        let (walk, frames) = vm.walk(at(0x60, java_sp - 8, 0x28), 16);
        assert_eq!((walk.ending, &frames), (Ending::Complete, &expected), "ret to {slot:#x}");
    }
    // At the `ret` to anything but the poll; a frame pointer that does not
    // bound the sp; no saved pc: the walk stops at the blob.
    put_word(&mut vm.memory, java_sp - 8, NM_CODE + 0x70);
    assert_eq!(vm.walk(at(0x60, java_sp - 8, 0x28), 16).0.ending, Ending::Broken(Broken::Stub));
    assert_eq!(vm.walk(at(0x40, frame_sp, frame_sp - 8), 16).0.ending, Ending::Broken(Broken::Stub));
    put_word(&mut vm.memory, THREAD + 0x228, 0);
    assert_eq!(vm.walk(at(0, java_sp, 0x28), 16).0.ending, Ending::Broken(Broken::Stub));
    // The return poll's blob (no slot pushed: its method's frame is gone)
    // is left by the return address at the sp, as any stub's entry.
    vm.memory.write(blob_code, &[0x55, 0x48, 0x8B, 0xEC, 0x9C]);
    let returns_to = make_return_address(&mut vm);
    put_word(&mut vm.memory, java_sp - 8, returns_to);
    let (walk, frames) = vm.walk(at(0, java_sp - 8, 0x28), 16);
    assert_eq!((walk.ending, &frames), (Ending::Complete, &expected), "return poll");
}

#[test]
fn a_full_buffer_ends_the_walk_with_the_top_frames() {
    let vm = build();
    let (walk, frames) = vm.walk(vm.registers_at(NM_CODE + 0x30), 2);
    assert_eq!(walk.ending, Ending::Full);
    assert_eq!(frames, vec![(id(METHOD_B), 300), (id(METHOD_A), 5)]);
}

#[test]
fn a_jmethod_id_that_does_not_point_back_is_refused() {
    let mut vm = build();
    put_word(&mut vm.memory, id(METHOD_C), METHOD_A);
    let (walk, frames) = vm.walk(vm.registers_at(NM_CODE + 0x30), 16);
    assert_eq!(walk.ending, Ending::Broken(Broken::Interpreted));
    assert_eq!(frames.len(), 2, "the frames above are kept");
}

#[test]
fn frame_pointer_cycles_and_stacks_going_backwards_stop_the_walk() {
    let mut vm = build();
    // The interpreted frame's caller is itself.
    put_word(&mut vm.memory, vm.interpreted_fp, vm.interpreted_fp);
    put_word(&mut vm.memory, vm.interpreted_fp + 8, INTERPRETER + 0x10);
    put_word(&mut vm.memory, vm.interpreted_fp - 8, vm.compiled_sp);
    let (walk, _) = vm.walk(vm.registers_at(NM_CODE + 0x30), 64);
    assert_eq!(walk.ending, Ending::Broken(Broken::StackRange));
    // A stack pointer outside the thread's stack.
    let mut registers = vm.registers_at(NM_CODE + 0x30);
    registers.sp = STACK - 64;
    assert_eq!(vm.walk(registers, 16).0.ending, Ending::Broken(Broken::StackRange));
}

#[test]
fn an_entry_frame_with_a_wild_call_wrapper_stops_the_walk() {
    let mut vm = build();
    put_word(&mut vm.memory, vm.entry_fp - 48, 0xDEAD_BEEF);
    let (walk, frames) = vm.walk(vm.registers_at(NM_CODE + 0x30), 16);
    assert_eq!(walk.ending, Ending::Broken(Broken::EntryFrame));
    assert_eq!(frames.len(), 3);
}

/// A deterministic xorshift generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A word that is often a plausible address of the synthetic VM.
    fn word(&mut self) -> usize {
        let bases = [0, HEAP, CODE, NM, NM_CODE, SEGMAP, INTERPRETER, METADATA, SCOPES, THREAD, STACK, STACK + 0x8000];
        let value = self.next();
        match value % 4 {
            0 => value as usize,
            1 => bases[(value >> 8) as usize % bases.len()],
            _ => bases[(value >> 8) as usize % bases.len()] + ((value >> 32) as usize % 0x9000),
        }
    }
}

/// Garbage stacks, garbage registers, garbage structures: every walk ends
/// (no panic, no endless loop) within the buffer, whatever it reads.
#[test]
fn garbage_frames_and_structures_never_break_the_walker() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..300 {
        let mut vm = build();
        // Overwrite a share of the stack and of the VM's structures with
        // plausible-looking garbage.
        let regions: [(usize, usize); 6] = [
            (STACK + 0x7000, 0x2000),
            (NM, 0x400),
            (SCOPES, 0x40),
            (METADATA, 0x4000),
            (THREAD, 0x300),
            (SEGMAP, CODE_SIZE >> SHIFT),
        ];
        for _ in 0..(round % 64 + 1) {
            let (base, size) = regions[rng.next() as usize % regions.len()];
            let at = base + (rng.next() as usize % (size - 8)) / 8 * 8;
            if base == SEGMAP {
                vm.memory.put_u8(at, rng.next() as u8);
            } else {
                put_word(&mut vm.memory, at, rng.word());
            }
        }
        for _ in 0..20 {
            let registers = Registers {
                pc: if rng.next().is_multiple_of(2) { NM_CODE + rng.next() as usize % 0x300 } else { rng.word() },
                sp: if rng.next().is_multiple_of(2) { vm.compiled_sp } else { rng.word() },
                fp: rng.word(),
                rbx: rng.word(),
                r13: rng.word(),
            };
            let capacity = 1 + rng.next() as usize % 64;
            let (walk, frames) = vm.walk(registers, capacity);
            assert!(walk.frames <= capacity && frames.len() == walk.frames);
        }
    }
}

/// The real process's memory through the fault-safe reads: a walk whose
/// registers and structures point at unmapped and unreadable memory reports
/// a broken walk instead of crashing.
#[test]
fn a_walk_over_unmapped_memory_reads_nothing_and_survives() {
    super::safe_read::install().expect("fault handler");
    let memory = super::memory::VmMemory;
    // A layout whose code heap and thread are at addresses nothing maps.
    let mut layout = layout();
    let nowhere = 0x7EAD_0000_0000;
    layout.runtime.heaps[0] = Heap { low: nowhere, high: nowhere + 0x1000_0000, segmap: nowhere, shift: SHIFT };
    layout.runtime.code_low = nowhere;
    layout.runtime.code_high = nowhere + 0x1000_0000;
    let mut out = [CallFrame::EMPTY; 8];
    let walk = walker::walk(&memory, &layout, nowhere + 0x100, Registers::default(), &mut out, Memo::default());
    assert_eq!(walk.ending, Ending::Broken(Broken::NoThread));
    // A real, readable "thread" whose stack bounds are this thread's
    // stack, and registers pointing into unmapped code.
    let local = 0u64;
    let here = &local as *const u64 as usize;
    let mut thread = vec![0u64; 0x400 / 8];
    thread[0x210 / 8] = (here + 0x1000) as u64;
    thread[0x218 / 8] = 0x10000;
    thread[0x200 / 8] = 8; // in Java
    let registers = Registers { pc: nowhere + 0x40, sp: here & !7, fp: here & !7, rbx: nowhere, r13: nowhere };
    let walk = walker::walk(&memory, &layout, thread.as_ptr() as usize, registers, &mut out, Memo::default());
    assert_eq!(walk.frames, 0);
    assert!(matches!(walk.ending, Ending::Broken(_)), "{walk:?}");
    assert_eq!(memory.u64(nowhere), None);
}

/// The stack with one more interpreted frame on top (method C again), so
/// that the compiled frame is reached by its return address.
fn build_with_interpreted_top() -> (Vm, Registers) {
    let mut vm = build();
    let top_fp = vm.compiled_sp - 0x40;
    let top_sp = top_fp - 0x60;
    let slot = |words: isize| top_fp.wrapping_add_signed(words * 8);
    put_word(&mut vm.memory, slot(INTERPRETER_METHOD), METHOD_C);
    put_word(&mut vm.memory, slot(INTERPRETER_BCP), METHOD_C + 0x100 + 48 + 3);
    put_word(&mut vm.memory, slot(INTERPRETER_SENDER_SP), vm.compiled_sp);
    put_word(&mut vm.memory, top_fp, 0x5EED);
    // Returns into the nmethod at a PcDesc (0x40: B at 300 inlined in A at 5).
    put_word(&mut vm.memory, top_fp + 8, NM_CODE + 0x40);
    (vm, Registers { pc: INTERPRETER + 0x200, sp: top_sp, fp: top_fp, rbx: 0, r13: 0 })
}

/// While the thread is deoptimised (`_vframe_array_head` set) the
/// interpreted frames right below the top are being built and are not
/// read; those below a compiled frame are old ones and are.
#[test]
fn a_deoptimising_thread_refuses_the_interpreted_frames_above_its_compiled_ones() {
    let (mut vm, registers) = build_with_interpreted_top();
    put_word(&mut vm.memory, THREAD + 0x220, 0x5000);
    let (walk, frames) = vm.walk(registers, 16);
    assert_eq!((walk.ending, frames), (Ending::Broken(Broken::Deoptimizing), vec![]));
    let (walk, frames) = vm.walk(vm.registers_at(NM_CODE + 0x30), 16);
    assert_eq!(
        (walk.ending, frames),
        (Ending::Complete, vec![(id(METHOD_B), 300), (id(METHOD_A), 5), (id(METHOD_C), 7)])
    );
    // The same from the frame cache.
    let cache = super::cache::tests::new_cache(128, 64);
    for _ in 0..2 {
        let (walk, frames) = walk_cached(&vm, vm.registers_at(NM_CODE + 0x30), &cache);
        assert_eq!(walk.ending, Ending::Complete);
        assert_eq!(frames.len(), 3);
    }
}

fn walk_cached(vm: &Vm, registers: Registers, cache: &FrameCache) -> (Walk, Vec<(usize, i32)>) {
    let mut out = vec![CallFrame::EMPTY; 16];
    let memo = Memo { cache: Some(cache), ..Memo::default() };
    let walk = walker::walk(&vm.memory, &vm.layout, THREAD, registers, &mut out, memo);
    (walk, out[..walk.frames].iter().map(|frame| (frame.method_id as usize, frame.lineno)).collect())
}

#[test]
fn a_cached_frame_gives_the_same_frames_and_a_recompiled_one_is_decoded_again() {
    let (mut vm, registers) = build_with_interpreted_top();
    let expected = vec![(id(METHOD_C), 3), (id(METHOD_B), 300), (id(METHOD_A), 5), (id(METHOD_C), 7)];
    let cache = super::cache::tests::new_cache(128, 64);
    let (first, frames) = walk_cached(&vm, registers, &cache);
    assert_eq!((first.ending, frames), (Ending::Complete, expected.clone()));
    assert_eq!((first.cache_hits, first.cache_stale), (0, 0));
    let (second, frames) = walk_cached(&vm, registers, &cache);
    assert_eq!((second.ending, frames), (Ending::Complete, expected.clone()));
    assert_eq!(second.cache_hits, 1, "the compiled frame came from the cache");
    // The nmethod at that address is now another compilation whose inlined
    // method is A alone (the scope at 10 now names A at bci 9).
    vm.memory.put_u32(NM + 48, 43);
    let mut scopes = Vec::new();
    unsigned5(0, &mut scopes);
    unsigned5(1, &mut scopes);
    unsigned5(9 + 1, &mut scopes);
    vm.memory.write(SCOPES + 10, &scopes);
    let (third, frames) = walk_cached(&vm, registers, &cache);
    assert_eq!(third.ending, Ending::Complete);
    assert_eq!(frames, vec![(id(METHOD_C), 3), (id(METHOD_A), 9), (id(METHOD_C), 7)]);
    assert_eq!((third.cache_hits, third.cache_stale), (0, 1));
    // Decoded again and kept: the next walk takes it from the cache.
    let (fourth, frames) = walk_cached(&vm, registers, &cache);
    assert_eq!((fourth.cache_hits, frames.len()), (1, 3));
}

#[test]
fn a_cached_method_id_that_no_longer_points_back_is_looked_up_again() {
    let (mut vm, registers) = build_with_interpreted_top();
    let cache = super::cache::tests::new_cache(128, 64);
    walk_cached(&vm, registers, &cache);
    // C's jmethodID is cleared (its class unloaded): C's frames are refused.
    put_word(&mut vm.memory, id(METHOD_C), 0);
    let (walk, frames) = walk_cached(&vm, registers, &cache);
    assert_eq!(walk.ending, Ending::Broken(Broken::Interpreted));
    assert!(frames.is_empty());
}

/// Garbage read through a cache filled by walks of a sound stack: every
/// walk still ends within its buffer.
#[test]
fn garbage_walks_with_a_warm_cache_never_break_the_walker() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let (sound, registers) = build_with_interpreted_top();
    let cache = super::cache::tests::new_cache(128, 64);
    walk_cached(&sound, registers, &cache);
    for round in 0..200 {
        let (mut vm, mut registers) = build_with_interpreted_top();
        for _ in 0..(round % 32 + 1) {
            let at = STACK + 0x7000 + (rng.next() as usize % 0x1ff8) / 8 * 8;
            put_word(&mut vm.memory, at, rng.word());
        }
        if round % 3 == 0 {
            registers.fp = rng.word();
        }
        let mut out = vec![CallFrame::EMPTY; 1 + rng.next() as usize % 32];
        let memo = Memo { cache: Some(&cache), ..Memo::default() };
        let walk = walker::walk(&vm.memory, &vm.layout, THREAD, registers, &mut out, memo);
        assert!(walk.frames <= out.len());
    }
}

/// Walks with a history, as the handler does: into the next half of a
/// two-half buffer; returns the walk and its frames.
fn walk_remembering(
    vm: &Vm,
    registers: Registers,
    history: &mut History,
    buffer: &mut [CallFrame],
) -> (Walk, Vec<(usize, i32)>) {
    thread_local! {
        /// Each test thread's own frame cache (the process's is shared).
        static CACHE: FrameCache = super::cache::tests::new_cache(128, 64);
    }
    let capacity = buffer.len() / 2;
    let (half, previous, out) = super::history::halves(history, buffer);
    let walk = CACHE.with(|cache| {
        let memo = history.memo(previous, Some(cache));
        walker::walk(&vm.memory, &vm.layout, THREAD, registers, out, memo)
    });
    history.finish(&walk, half, 0);
    let frames = buffer[half * capacity..half * capacity + walk.frames]
        .iter()
        .map(|frame| (frame.method_id as usize, frame.lineno))
        .collect();
    (walk, frames)
}

#[test]
fn unchanged_frames_below_a_new_top_are_taken_from_the_previous_walk() {
    let (mut vm, registers) = build_with_interpreted_top();
    let mut history = History::default();
    let mut buffer = vec![CallFrame::EMPTY; 32];
    let (first, frames) = walk_remembering(&vm, registers, &mut history, &mut buffer);
    let expected = vec![(id(METHOD_C), 3), (id(METHOD_B), 300), (id(METHOD_A), 5), (id(METHOD_C), 7)];
    assert_eq!((first.ending, first.reused, frames), (Ending::Complete, 0, expected.clone()));
    // The same stack: everything below the top frame is reused.
    let (second, frames) = walk_remembering(&vm, registers, &mut history, &mut buffer);
    assert_eq!((second.ending, frames), (Ending::Complete, expected.clone()));
    assert_eq!(second.reused, 3, "the compiled frame's two and the bottom interpreted frame");
    // The top frame moves on (another bytecode): the rest is still reused.
    let top_fp = registers.fp;
    put_word(&mut vm.memory, top_fp.wrapping_add_signed(INTERPRETER_BCP * 8), METHOD_C + 0x100 + 48 + 9);
    let (third, frames) = walk_remembering(&vm, registers, &mut history, &mut buffer);
    assert_eq!(frames[0], (id(METHOD_C), 9));
    assert_eq!((third.reused, &frames[1..]), (3, &expected[1..]));
}

#[test]
fn a_changed_frame_below_stops_the_reuse() {
    let (mut vm, registers) = build_with_interpreted_top();
    let mut history = History::default();
    let mut buffer = vec![CallFrame::EMPTY; 32];
    walk_remembering(&vm, registers, &mut history, &mut buffer);
    // The bottom interpreted frame is at another bytecode now: its caller's
    // position is the same, but the frame is not what it was.
    let slot = vm.interpreted_fp.wrapping_add_signed(INTERPRETER_BCP * 8);
    put_word(&mut vm.memory, slot, METHOD_C + 0x100 + 48 + 11);
    let (walk, frames) = walk_remembering(&vm, registers, &mut history, &mut buffer);
    assert_eq!(walk.reused, 0);
    assert_eq!(frames.last(), Some(&(id(METHOD_C), 11)));
    // The nmethod recompiled at the same address: its frame is decoded
    // again; only the interpreted frame below it is reused.
    walk_remembering(&vm, registers, &mut history, &mut buffer);
    vm.memory.put_u32(NM + 48, 99);
    let (walk, frames) = walk_remembering(&vm, registers, &mut history, &mut buffer);
    assert_eq!((walk.ending, walk.reused), (Ending::Complete, 1));
    assert_eq!(frames.len(), 4);
}

/// Garbage stacks walked with a history of sound walks: every walk ends
/// within its buffer, and a reuse only ever copies frames the previous walk
/// wrote.
#[test]
fn garbage_walks_with_a_history_never_break_the_walker() {
    let mut rng = Rng(0x1234_5678_9ABC_DEF1);
    let mut history = History::default();
    let mut buffer = vec![CallFrame::EMPTY; 64];
    for round in 0..300 {
        let (mut vm, mut registers) = build_with_interpreted_top();
        if round % 2 == 1 {
            for _ in 0..(round % 16 + 1) {
                let at = STACK + 0x7000 + (rng.next() as usize % 0x1ff8) / 8 * 8;
                put_word(&mut vm.memory, at, rng.word());
            }
            if round % 3 == 0 {
                registers.fp = rng.word();
            }
        }
        let (walk, frames) = walk_remembering(&vm, registers, &mut history, &mut buffer);
        assert!(walk.frames <= 32 && walk.reused <= walk.frames && frames.len() == walk.frames);
    }
}

/// Rule 1 of the handler (it allocates nothing) for pcct's own walker, the
/// code the handler runs for a HotSpot thread: walks of every kind the tests
/// above make (whole stacks, interpreted and compiled frames, the frame
/// cache, a history to reuse, garbage stacks and structures, and the
/// process's own unmapped memory through the fault-safe reads) run inside a
/// window of the counting allocator (`crate::test_alloc`), over VMs,
/// registers and buffers made before it.
#[test]
fn walks_of_every_kind_allocate_nothing() {
    super::safe_read::install().expect("fault handler");
    let mut rng = Rng(0x0DDB_1A5E_5BAD_5EED);
    let mut scenes: Vec<(Vm, Registers)> = Vec::new();
    let sound = build();
    let at_inlined = sound.registers_at(NM_CODE + 0x30);
    scenes.push((sound, at_inlined));
    scenes.push(build_with_interpreted_top());
    for round in 0..200 {
        let (mut vm, mut registers) = build_with_interpreted_top();
        for _ in 0..(round % 32 + 1) {
            let at = STACK + 0x7000 + (rng.next() as usize % 0x1ff8) / 8 * 8;
            put_word(&mut vm.memory, at, rng.word());
            put_word(&mut vm.memory, NM + (rng.next() as usize % 0x3f8) / 8 * 8, rng.word());
        }
        if round % 3 == 0 {
            registers =
                Registers { pc: rng.word(), sp: registers.sp, fp: rng.word(), rbx: rng.word(), r13: rng.word() };
        }
        scenes.push((vm, registers));
    }
    let cache = super::cache::tests::new_cache(128, 64);
    let mut history = History::default();
    let mut buffer = vec![CallFrame::EMPTY; 64];
    let mut out = vec![CallFrame::EMPTY; 32];
    let unmapped = super::memory::VmMemory;
    let mut unmapped_layout = layout();
    let nowhere = 0x7EAD_0000_0000;
    unmapped_layout.runtime.heaps[0] =
        Heap { low: nowhere, high: nowhere + 0x1000_0000, segmap: nowhere, shift: SHIFT };
    unmapped_layout.runtime.code_low = nowhere;
    unmapped_layout.runtime.code_high = nowhere + 0x1000_0000;

    let ((walks, frames, complete), calls) = crate::test_alloc::allocations_during(|| {
        let (mut walks, mut frames, mut complete) = (0, 0, 0);
        for (vm, registers) in &scenes {
            let plain = walker::walk(&vm.memory, &vm.layout, THREAD, *registers, &mut out, Memo::default());
            let memo = Memo { cache: Some(&cache), ..Memo::default() };
            let cached = walker::walk(&vm.memory, &vm.layout, THREAD, *registers, &mut out, memo);
            let (half, previous, into) = super::history::halves(&mut history, &mut buffer);
            let memo = history.memo(previous, Some(&cache));
            let remembered = walker::walk(&vm.memory, &vm.layout, THREAD, *registers, into, memo);
            history.finish(&remembered, half, 0);
            for walk in [plain, cached, remembered] {
                walks += 1;
                frames += walk.frames;
                complete += usize::from(walk.ending == Ending::Complete);
            }
        }
        let lost =
            walker::walk(&unmapped, &unmapped_layout, nowhere + 0x100, Registers::default(), &mut out, Memo::default());
        walks += usize::from(lost.ending == Ending::Broken(Broken::NoThread));
        (walks, frames, complete)
    });
    assert_eq!(calls, 0, "the walker called the allocator {calls} times in {walks} walks");
    // The window held real walks: whole ones, and the unmapped one.
    assert_eq!(walks, scenes.len() * 3 + 1);
    assert!(complete >= 6 && frames >= complete * 3, "{complete} complete walks, {frames} frames");
}
