//! pcct's own Java stack walker for HotSpot (x86-64), for the signal handler.
//!
//! It walks the interrupted thread's frames from the signal's registers (or
//! from the thread's last Java frame when the thread is in the VM or native
//! code, or in native code on its way back to Java from the VM), frame by
//! frame, the way HotSpot's own `frame::sender` does:
//!
//! - **interpreted** frames (the program counter is in the interpreter):
//!   the `Method*` and bytecode pointer are in the frame (`fp[-3]`,
//!   `fp[-8]`), the caller's stack pointer at `fp[-1]`, its frame pointer
//!   at `fp[0]` and the return address at `fp[1]`;
//! - **compiled** frames (an nmethod): the PcDesc for the program counter
//!   names the chain of inlined scopes (one Java frame each, innermost
//!   first); the frame is `frame_size` words, the return address its last;
//! - **entry** frames (the call stub, where the VM called Java): the
//!   `JavaCallWrapper` above it holds the anchor of the Java frames that
//!   called into the VM, where the walk continues; an empty anchor is the
//!   bottom of the thread's Java stack: the walk is complete;
//! - **stubs** (adapters, runtime stubs, vtable stubs): skipped by their
//!   frame size or, at the top, by the few instruction patterns of their
//!   entries; a stub of `StubRoutines` in a call to native code by its
//!   frame pointer, when what is above it returns into Java code; the
//!   handler of a loop's safepoint poll (`SafepointBlob`), reached from the
//!   faulting poll with the method's pc in `_saved_exception_pc`, as the
//!   method's frame at the poll;
//! - **native** code called from Java without a last-Java-frame anchor (a
//!   leaf call): followed by frame pointers until it reaches Java code.
//!
//! While the thread is being deoptimised (`_vframe_array_head` set), the
//! interpreted frames above its compiled ones are refused: the VM is
//! building them.
//!
//! At the top of the stack a sample often lands where a frame is half built
//! or already gone (an nmethod's prologue or epilogue, C2's out-of-line
//! stub of a return's safepoint poll, the stubs after an nmethod's
//! instructions, the interpreter's method entry);
//! there the walker recognises the instructions HotSpot emits (as
//! async-profiler does) or uses the interpreter's registers (`rbx` holds the
//! `Method*`, `r13` the caller's stack pointer).
//!
//! Every read goes through [`Memory`] and every step is checked: the stack
//! pointer must stay inside the thread's stack and grow, a frame must be
//! plausible, a jmethodID must point back to its `Method*`. A walk that
//! cannot go on stops with the reason ([`Broken`]); the handler then asks
//! AsyncGetCallTrace, and what neither can walk keeps its pseudo-frame.
//! No allocation, no lock: it runs in the signal handler.

use super::cache::{self, CachedFrame, FrameCache};
use super::code::{self, Blob, BlobKind, Scope, MAX_SCOPES};
use super::layout::{Layout, INTERPRETER_BCP, INTERPRETER_LAST_SP, INTERPRETER_METHOD, INTERPRETER_SENDER_SP};
use super::marks::{Mark, MarkKind, MarkSet};
use super::memory::Memory;
use crate::agct::CallFrame;
use crate::cycles::{self, FrameKind as StepKind, Part};
use pcct::FrameKind;

/// Bytecode index reported for native methods (as AsyncGetCallTrace does).
pub const NATIVE_BCI: i32 = -3;
/// Bytecode index of a frame whose position in its method is unknown.
pub const UNKNOWN_BCI: i32 = -1;
/// Most frames (of any kind) stepped over in one walk.
const MAX_STEPS: usize = 8192;
/// Most native frames followed by frame pointers in a row.
const MAX_NATIVE_FRAMES: usize = 32;
/// Largest plausible interpreted frame, in bytes.
const MAX_INTERPRETER_FRAME: usize = 0x10000;
/// Farthest a call wrapper may be from its entry frame's frame pointer.
const MAX_CALL_WRAPPER_DISTANCE: usize = 512;

/// Registers of the interrupted context the walker uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Registers {
    pub pc: usize,
    pub sp: usize,
    pub fp: usize,
    /// The interpreter keeps the current `Method*` here.
    pub rbx: usize,
    /// The interpreter keeps the caller's stack pointer here.
    pub r13: usize,
}

/// Why a walk stopped before the bottom of the stack.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Broken {
    /// The thread has no Java frame (in the VM or native code, no anchor).
    NoJavaFrame = 1,
    /// The `JavaThread` or its stack bounds could not be read.
    NoThread,
    /// The stack pointer left the thread's stack or went backwards.
    StackRange,
    /// A program counter in the code cache that no blob holds.
    UnknownCode,
    /// An interpreted frame that could not be read.
    Interpreted,
    /// A compiled frame whose caller could not be found (prologue, epilogue).
    Compiled,
    /// A stub without a frame size, not at a recognised instruction.
    Stub,
    /// Native code whose frame pointers lead nowhere.
    Native,
    /// An entry frame without a readable call wrapper.
    EntryFrame,
    /// The thread is being deoptimised (its frames are being rebuilt).
    Deoptimizing,
    /// More steps than any real stack takes.
    TooLong,
    /// A method without a jmethodID (not created yet, or a stale pointer).
    NoMethodId,
}

impl Broken {
    pub const ALL: [Broken; 12] = [
        Broken::NoJavaFrame,
        Broken::NoThread,
        Broken::StackRange,
        Broken::UnknownCode,
        Broken::Interpreted,
        Broken::Compiled,
        Broken::Stub,
        Broken::Native,
        Broken::EntryFrame,
        Broken::Deoptimizing,
        Broken::TooLong,
        Broken::NoMethodId,
    ];

    pub fn from_u8(value: u8) -> Option<Broken> {
        Broken::ALL.iter().copied().find(|reason| *reason as u8 == value)
    }

    /// Short name for metrics and pseudo-frames.
    pub fn label(self) -> &'static str {
        match self {
            Broken::NoJavaFrame => "no_java_frame",
            Broken::NoThread => "no_thread",
            Broken::StackRange => "stack_range",
            Broken::UnknownCode => "unknown_code",
            Broken::Interpreted => "interpreted",
            Broken::Compiled => "compiled",
            Broken::Stub => "stub",
            Broken::Native => "native",
            Broken::EntryFrame => "entry_frame",
            Broken::Deoptimizing => "deoptimizing",
            Broken::TooLong => "too_long",
            Broken::NoMethodId => "no_method_id",
        }
    }
}

/// How a walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// It reached the bottom of the thread's Java stack.
    Complete,
    /// The buffer filled up before the bottom (a stack deeper than the depth).
    Full,
    /// It stopped early; the frames written are the top of the stack.
    Broken(Broken),
}

/// The result of a walk: frames written (leaf first) and how it ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walk {
    pub frames: usize,
    pub ending: Ending,
    /// Of the frames, those copied from the previous walk (unchanged frames
    /// at the bottom of the stack, verified, not decoded).
    pub reused: usize,
    /// Compiled frames taken from the frame cache, and cached frames found
    /// stale (the code at that address recompiled).
    pub cache_hits: u32,
    pub cache_stale: u32,
}

/// A frame position during the walk.
#[derive(Clone, Copy, Debug)]
struct Position {
    pc: usize,
    sp: usize,
    fp: usize,
    /// The pc is where the thread was interrupted (not a return address).
    top: bool,
}

/// A top pc in an nmethod's stubs section: where its frame is.
#[derive(Clone, Copy, Debug)]
enum InStubs {
    /// Whole, below the word at the sp (a return address into the method,
    /// or a deoptimisation handler's own address): the walk goes on there.
    Pushed(Position),
    /// Gone: the caller's return address is at the sp.
    FrameGone,
}

/// The thread's stack, `[low, high)`.
#[derive(Clone, Copy, Debug)]
struct Stack {
    low: usize,
    high: usize,
}

impl Stack {
    fn contains(&self, address: usize) -> bool {
        address >= self.low && address < self.high
    }
}

/// The walk in progress: where it writes and what it has seen.
struct Walker<'a, M: Memory> {
    memory: &'a M,
    layout: &'a Layout,
    thread: usize,
    stack: Stack,
    out: &'a mut [CallFrame],
    written: usize,
    registers: Registers,
    cache: Option<&'a FrameCache>,
    hits: u32,
    stale: u32,
    /// The previous walk's frames and output, and this walk's record.
    previous: Option<Previous<'a>>,
    marks: Option<&'a mut MarkSet>,
    /// What identifies the frame just walked (set by the frame's handler).
    mark: Mark,
    /// Reuses tried (each costs a verification down the stack).
    reuse_attempts: u8,
    /// Java frames taken from the previous walk.
    reused: usize,
    /// A compiled frame was walked: interpreted frames below it are not
    /// the ones a deoptimisation is building.
    below_compiled: bool,
}

/// The previous walk of the thread: its frames and its output (leaf first).
#[derive(Clone, Copy, Debug)]
pub struct Previous<'a> {
    pub marks: &'a MarkSet,
    pub out: &'a [CallFrame],
}

/// What a walk remembers and records beyond its output.
#[derive(Debug, Default)]
pub struct Memo<'a> {
    /// Decoded frames and jmethodIDs of earlier walks (of any thread).
    pub cache: Option<&'a FrameCache>,
    /// The previous walk, to reuse its unchanged frames.
    pub previous: Option<Previous<'a>>,
    /// Where this walk records its frames for the next.
    pub marks: Option<&'a mut MarkSet>,
}

/// Walks the Java stack of the current thread (`JavaThread*` `thread`),
/// interrupted with `registers`, into `out` (leaf first), with the frames
/// and method ids earlier walks (of any thread) decoded in `cache`.
pub fn walk(
    memory: &impl Memory,
    layout: &Layout,
    thread: usize,
    registers: Registers,
    out: &mut [CallFrame],
    memo: Memo<'_>,
) -> Walk {
    let Memo { cache, previous, mut marks } = memo;
    if let Some(marks) = marks.as_deref_mut() {
        marks.clear();
    }
    let Some(stack) = thread_stack(memory, layout, thread) else {
        return Walk { frames: 0, ending: Ending::Broken(Broken::NoThread), reused: 0, cache_hits: 0, cache_stale: 0 };
    };
    if let Some(previous) = previous {
        let prefetching = cycles::now();
        prefetch_previous(memory, layout, cache, previous.marks);
        cycles::since(Part::Prefetch, prefetching);
    }
    let previous = previous.filter(|previous| previous.marks.complete && previous.marks.is_whole());
    let mut walker = Walker {
        memory,
        layout,
        thread,
        stack,
        out,
        written: 0,
        registers,
        cache,
        hits: 0,
        stale: 0,
        previous,
        marks,
        mark: Mark::default(),
        reuse_attempts: 0,
        reused: 0,
        below_compiled: false,
    };
    let walking = cycles::now();
    let ending = walker.run();
    cycles::since(Part::Walk, walking);
    cycles::add(Part::Walks, 1);
    if let Some(marks) = walker.marks.as_deref_mut() {
        marks.complete = ending == Ending::Complete;
    }
    Walk { frames: walker.written, ending, reused: walker.reused, cache_hits: walker.hits, cache_stale: walker.stale }
}

/// Asks the processor for what this walk will probably read, all at once:
/// the frames of the thread's previous walk are mostly this walk's too (the
/// bottom ones are verified by their nmethods' compilation ids, the new ones
/// at the top run much the same code), so their frame-cache entries and
/// compilation ids are fetched together instead of one miss after another
/// as the walk goes down the stack. Hints only: nothing is read.
fn prefetch_previous(memory: &impl Memory, layout: &Layout, cache: Option<&FrameCache>, marks: &MarkSet) {
    for mark in marks.frames().iter().filter(|mark| mark.kind == MarkKind::Compiled) {
        memory.prefetch(mark.key.wrapping_add(layout.blob.compile_id));
        if let Some(cache) = cache {
            cache.prefetch_frame(mark.pc);
        }
    }
}

/// The `JavaThread`'s stack bounds.
fn thread_stack(memory: &impl Memory, layout: &Layout, thread: usize) -> Option<Stack> {
    let base = memory.word(thread.wrapping_add(layout.thread.stack_base))?;
    let size = memory.word(thread.wrapping_add(layout.thread.stack_size))?;
    (size > 0 && size <= base && size < 1 << 34).then(|| Stack { low: base - size, high: base })
}

/// Where native frames of the `JavaThread` `thread` may lie: its stack's
/// bounds (low, high), and the sp of its last Java frame if its anchor
/// records one (the native frames end there). Async-signal-safe.
pub fn native_bounds(memory: &impl Memory, layout: &Layout, thread: usize) -> Option<((usize, usize), Option<usize>)> {
    let stack = thread_stack(memory, layout, thread)?;
    let anchor = thread.wrapping_add(layout.thread.anchor);
    let last_java_sp = memory.word(anchor.wrapping_add(layout.thread.anchor_sp)).filter(|&sp| sp != 0);
    Some(((stack.low, stack.high), last_java_sp))
}

/// The kind of scope `index` (innermost first) of a compiled frame of
/// `count` scopes whose code is of `kind`: all but the outermost are
/// inlined into it.
fn scope_kind(index: usize, count: usize, kind: FrameKind) -> FrameKind {
    if index + 1 < count {
        FrameKind::Inlined
    } else {
        kind
    }
}

/// Whether `pc` is in code HotSpot generated: the code heaps or the
/// interpreter. Async-signal-safe.
pub fn in_generated_code(layout: &Layout, pc: usize) -> bool {
    let runtime = &layout.runtime;
    (pc >= runtime.code_low && pc < runtime.code_high)
        || (pc >= runtime.interpreter_low && pc < runtime.interpreter_high)
}

/// Whether the `JavaThread` `thread` runs Java code (or is entering it):
/// its frames then start at the interrupted registers, not at its anchor.
/// `None` if its state cannot be read.
pub fn runs_java(memory: &impl Memory, layout: &Layout, thread: usize) -> Option<bool> {
    let fields = &layout.thread;
    let state = memory.u32(thread.wrapping_add(fields.state))?;
    Some(state == fields.in_java || state == fields.in_java_trans)
}

/// The thread's OS thread id (to check the `JavaThread` is this thread's).
pub fn os_thread_id(memory: &impl Memory, layout: &Layout, thread: usize) -> Option<i32> {
    let osthread = memory.word(thread.wrapping_add(layout.thread.osthread))?;
    memory.i32(osthread.wrapping_add(layout.thread.os_thread_id))
}

impl<M: Memory> Walker<'_, M> {
    fn run(&mut self) -> Ending {
        let Some(mut position) = self.start() else { return Ending::Broken(Broken::NoJavaFrame) };
        let mut native_run = 0;
        for _ in 0..MAX_STEPS {
            if self.written >= self.out.len() {
                return Ending::Full;
            }
            if !self.stack.contains(position.sp) || position.sp % 8 != 0 {
                return Ending::Broken(Broken::StackRange);
            }
            let reusing = cycles::now();
            let reuse = self.try_reuse(position);
            cycles::since(Part::Reuse, reusing);
            if let Some(ending) = reuse {
                cycles::add(Part::Reused, 1);
                return ending;
            }
            self.mark = Mark::default();
            let written_before = self.written;
            let runtime = &self.layout.runtime;
            let in_code_cache = position.pc >= runtime.code_low && position.pc < runtime.code_high;
            native_run = if in_code_cache || self.in_interpreter(position.pc) { 0 } else { native_run + 1 };
            if native_run > MAX_NATIVE_FRAMES {
                return Ending::Broken(Broken::Native);
            }
            let started = cycles::now();
            let (kind, next) = self.step(position, in_code_cache);
            cycles::frame(position.top, kind, started);
            self.record(position, written_before);
            match next {
                Ok(Some(next)) => {
                    if next.sp < position.sp || (next.sp == position.sp && next.pc == position.pc) {
                        return Ending::Broken(Broken::StackRange);
                    }
                    position = next;
                }
                Ok(None) => return Ending::Complete,
                Err(reason) => return Ending::Broken(reason),
            }
        }
        Ending::Broken(Broken::TooLong)
    }

    /// Walks the frame at `position` (`in_code_cache`: its pc is in a code
    /// heap): how, and its caller.
    fn step(&mut self, position: Position, in_code_cache: bool) -> (StepKind, Result<Option<Position>, Broken>) {
        if self.in_interpreter(position.pc) {
            return (StepKind::Interpreted, self.interpreted(position));
        }
        if !in_code_cache {
            return (StepKind::Native, self.native(position));
        }
        if let Some(caller) = self.cached(position) {
            return (StepKind::CachedFrame, caller);
        }
        let finding = cycles::now();
        let Some(blob) = code::find_blob(self.memory, self.layout, position.pc) else {
            return (StepKind::Unknown, Err(Broken::UnknownCode));
        };
        if position.top {
            cycles::since(Part::TopFind, finding);
        }
        (StepKind::Blob, self.in_blob(position, &blob))
    }

    /// Records the frame just walked at `position` for the next walk.
    fn record(&mut self, position: Position, written_before: usize) {
        let Some(marks) = self.marks.as_deref_mut() else { return };
        // A top frame is where the thread was interrupted: no later walk
        // finds it at a return address; it is recorded for the positions.
        let mark = Mark {
            sp: position.sp,
            pc: position.pc,
            fp: position.fp,
            emitted: self.written as u32,
            kind: if position.top || written_before == self.written && self.mark.kind != MarkKind::Entry {
                MarkKind::Opaque
            } else {
                self.mark.kind
            },
            ..self.mark
        };
        marks.push(mark);
    }

    /// At a frame the previous walk recorded at the same position: if every
    /// recorded frame from there to the bottom is still on the stack,
    /// copies their Java frames from the previous walk and ends the walk.
    fn try_reuse(&mut self, position: Position) -> Option<Ending> {
        if position.top || self.reuse_attempts >= 2 {
            return None;
        }
        let previous = self.previous?;
        let index = previous.marks.at_sp(position.sp)?;
        let mark = previous.marks.frames()[index];
        if !matches_position(&mark, position) {
            return None;
        }
        self.reuse_attempts += 1;
        cycles::add(Part::ReuseTries, 1);
        if !self.verify(previous.marks, index) {
            cycles::add(Part::ReuseRefused, 1);
            return None;
        }
        Some(self.adopt(previous, index))
    }

    /// Whether the recorded frames from `first` down are still the stack's.
    fn verify(&self, marks: &MarkSet, first: usize) -> bool {
        let frames = marks.frames();
        for (index, mark) in frames.iter().enumerate().skip(first) {
            let Some(next) = self.verified_caller(mark) else { return false };
            match (next, frames.get(index + 1)) {
                // The bottom, where the previous walk ended too.
                (None, None) => return true,
                (Some(next), Some(expected)) if matches_position(expected, next) => {}
                _ => return false,
            }
        }
        false
    }

    /// The caller of a recorded frame, read from the stack, if the frame
    /// is still what it was (`Some(None)`: the bottom of the stack).
    fn verified_caller(&self, mark: &Mark) -> Option<Option<Position>> {
        match mark.kind {
            MarkKind::Compiled => {
                let compile_id = self.memory.u32(mark.key.wrapping_add(self.layout.blob.compile_id))?;
                (compile_id as usize == mark.check).then_some(())?;
                self.caller_by_size(mark.sp, mark.size as usize).map(Some)
            }
            MarkKind::Interpreted => {
                let same = self.slot(mark.fp, INTERPRETER_METHOD) == Some(mark.key)
                    && self.slot(mark.fp, INTERPRETER_BCP) == Some(mark.check);
                same.then_some(())?;
                let sender_sp = self.slot(mark.fp, INTERPRETER_SENDER_SP)?;
                self.caller_by_fp(mark.fp, sender_sp).map(Some)
            }
            MarkKind::Entry => {
                let position = Position { pc: mark.pc, sp: mark.sp, fp: mark.fp, top: false };
                self.entry_caller(position).ok()
            }
            MarkKind::Opaque => None,
        }
    }

    /// Copies the previous walk's Java frames from its frame `first` down,
    /// and its records of those frames.
    fn adopt(&mut self, previous: Previous<'_>, first: usize) -> Ending {
        let frames = previous.marks.frames();
        let start = if first == 0 { 0 } else { frames[first - 1].emitted as usize };
        let end = frames.last().map_or(start, |mark| mark.emitted as usize).min(previous.out.len());
        let base = self.written;
        for frame in &previous.out[start.min(end)..end] {
            if self.written >= self.out.len() {
                return Ending::Full;
            }
            self.out[self.written] = *frame;
            self.written += 1;
        }
        self.reused = self.written - base;
        if let Some(marks) = self.marks.as_deref_mut() {
            for mark in &frames[first..] {
                marks.push(Mark { emitted: (mark.emitted as usize - start + base) as u32, ..*mark });
            }
        }
        Ending::Complete
    }

    /// Where the walk starts: the interrupted context when the thread runs
    /// Java code, else its last Java frame. A thread whose state says Java
    /// but that runs native code with its last Java frame recorded is on
    /// its way back from the VM (the state is set back before the VM's
    /// frames return to the stub that called it, as after a safepoint
    /// poll): that frame is the reliable start, as HotSpot's own sampling
    /// (`pd_get_top_frame`) takes it whenever it is set. A leaf call into
    /// native code records none and is walked from the context.
    fn start(&self) -> Option<Position> {
        let registers = self.registers;
        let anchor = self.thread.wrapping_add(self.layout.thread.anchor);
        if runs_java(self.memory, self.layout, self.thread)? {
            if !self.in_generated_code(registers.pc) {
                if let Some(frame) = self.anchor_frame(anchor) {
                    return Some(frame);
                }
            }
            return Some(Position { pc: registers.pc, sp: registers.sp, fp: registers.fp, top: true });
        }
        self.anchor_frame(anchor)
    }

    /// Whether `pc` is in code HotSpot generated: the code heaps or the
    /// interpreter.
    fn in_generated_code(&self, pc: usize) -> bool {
        in_generated_code(self.layout, pc)
    }

    /// The last Java frame an anchor records (`None` if it records none).
    fn anchor_frame(&self, anchor: usize) -> Option<Position> {
        let fields = &self.layout.thread;
        let sp = self.memory.word(anchor.wrapping_add(fields.anchor_sp)).filter(|&sp| sp != 0)?;
        let pc = match self.memory.word(anchor.wrapping_add(fields.anchor_pc))? {
            // Not made walkable yet: the return address is below the sp.
            0 => self.memory.word(sp.checked_sub(8)?)?,
            pc => pc,
        };
        let fp = self.memory.word(anchor.wrapping_add(fields.anchor_fp))?;
        Some(Position { pc, sp, fp, top: false })
    }

    /// Whether `fp` can be the frame pointer of a frame at or just above
    /// `sp`: aligned, on the thread's stack, at most an interpreted frame's
    /// largest size above `sp`.
    fn frame_pointer_near(&self, fp: usize, sp: usize) -> bool {
        fp.is_multiple_of(8) && self.stack.contains(fp) && fp >= sp && fp - sp < MAX_INTERPRETER_FRAME
    }

    fn in_interpreter(&self, pc: usize) -> bool {
        let runtime = &self.layout.runtime;
        pc >= runtime.interpreter_low && pc < runtime.interpreter_high
    }

    fn emit(&mut self, method_id: usize, bci: i32, kind: FrameKind) {
        if let Some(slot) = self.out.get_mut(self.written) {
            *slot = CallFrame { lineno: bci, kind: kind as u8, method_id: method_id as *mut std::ffi::c_void };
            self.written += 1;
        }
    }

    fn word(&self, address: usize) -> Option<usize> {
        self.memory.word(address)
    }

    fn slot(&self, fp: usize, words: isize) -> Option<usize> {
        self.word(fp.wrapping_add_signed(words * 8))
    }

    /// The caller of a frame whose frame pointer is `fp` (saved fp at
    /// `fp[0]`, return address at `fp[1]`), with the caller's sp `sp`.
    fn caller_by_fp(&self, fp: usize, sp: usize) -> Option<Position> {
        Some(Position { pc: self.slot(fp, 1)?, sp, fp: self.slot(fp, 0)?, top: false })
    }

    /// The caller of a frame interrupted with its saved rbp at `sp` and
    /// the return address above it (right after `push rbp`, or at a `pop
    /// rbp` not yet done).
    fn caller_above_saved_rbp(&self, sp: usize) -> Option<Position> {
        self.caller_by_fp(sp, sp.wrapping_add(16))
    }

    /// The caller of a frame of `words` words at `sp` (the return address
    /// is its last word, the saved frame pointer the one below).
    fn caller_by_size(&self, sp: usize, words: usize) -> Option<Position> {
        let sender_sp = sp.checked_add(words * 8)?;
        Some(Position {
            pc: self.word(sender_sp.wrapping_sub(8))?,
            sp: sender_sp,
            fp: self.word(sender_sp.wrapping_sub(16))?,
            top: false,
        })
    }

    /// The caller of a frame interrupted at its first instruction (or
    /// before pushing anything): the return address is at `sp`.
    fn caller_at_entry(&self, position: Position) -> Option<Position> {
        Some(Position { pc: self.word(position.sp)?, sp: position.sp.wrapping_add(8), fp: position.fp, top: false })
    }

    fn interpreted(&mut self, position: Position) -> Result<Option<Position>, Broken> {
        if !self.below_compiled
            && self.memory.word(self.thread.wrapping_add(self.layout.thread.vframe_array_head)).unwrap_or(0) != 0
        {
            // Deoptimisation is turning compiled frames into interpreted
            // ones: it pushes them, unfilled, right below its blob's frame
            // (the top's), where the compiled frame was. Below a compiled
            // frame (the one being deoptimised, while the VM reads it) the
            // interpreted frames are old ones.
            return Err(Broken::Deoptimizing);
        }
        let fp = position.fp;
        let plausible = self.frame_pointer_near(fp, position.sp);
        if plausible {
            if let Some(method_id) = self.interpreted_frame(fp) {
                let sender_sp = self.slot(fp, INTERPRETER_SENDER_SP).ok_or(Broken::Interpreted)?;
                let kind = if method_id.1 == NATIVE_BCI { FrameKind::Native } else { FrameKind::Interpreted };
                self.emit(method_id.0, method_id.1, kind);
                self.mark = Mark {
                    kind: MarkKind::Interpreted,
                    key: self.slot(fp, INTERPRETER_METHOD).unwrap_or(0),
                    check: self.slot(fp, INTERPRETER_BCP).unwrap_or(0),
                    ..Mark::default()
                };
                return self.caller_by_fp(fp, sender_sp).map(Some).ok_or(Broken::Interpreted);
            }
        }
        if !position.top {
            return Err(Broken::Interpreted);
        }
        // The method entry is building the frame: rbx holds the Method*,
        // r13 the caller's sp; the return address is at the sp or, once rbp
        // was pushed and set, above the frame pointer.
        let method = self.registers.rbx;
        let method_id = self.method_id(method).ok_or(Broken::Interpreted)?;
        self.emit(method_id, 0, FrameKind::Interpreted);
        let sender_sp = self.registers.r13;
        let caller = if plausible {
            self.caller_by_fp(fp, sender_sp)
        } else {
            self.word(position.sp).map(|pc| Position { pc, sp: sender_sp, fp, top: false })
        };
        caller.map(Some).ok_or(Broken::Interpreted)
    }

    /// (jmethodID, bci) of the interpreted frame at `fp`, if it reads right:
    /// a native method's (the interpreter's native entry, which keeps no
    /// bytecode pointer) at [`NATIVE_BCI`], as AsyncGetCallTrace names it.
    fn interpreted_frame(&mut self, fp: usize) -> Option<(usize, i32)> {
        let method = self.slot(fp, INTERPRETER_METHOD)?;
        let method_id = self.method_id(method)?;
        let bcp = self.slot(fp, INTERPRETER_BCP)?;
        if bcp == 0 {
            return Some((method_id, NATIVE_BCI));
        }
        let bci = code::bci_of(self.memory, self.layout, method, bcp).unwrap_or(0);
        Some((method_id, bci))
    }

    fn in_blob(&mut self, position: Position, blob: &Blob) -> Result<Option<Position>, Broken> {
        match blob.kind {
            BlobKind::Nmethod | BlobKind::NativeNmethod => self.compiled(position, blob),
            BlobKind::Other if position.pc == self.layout.runtime.call_stub_return => self.entry_frame(position),
            BlobKind::Other => self.stub(position, blob),
        }
    }

    fn compiled(&mut self, position: Position, blob: &Blob) -> Result<Option<Position>, Broken> {
        let method = code::nmethod_method(self.memory, self.layout, blob).ok_or(Broken::Compiled)?;
        if position.top {
            if let Some(found) = self.unwind_top(position, blob, method) {
                return found;
            }
        }
        let compile_id = code::compile_id(self.memory, self.layout, blob);
        let kind = self.code_kind(blob);
        self.compiled_scopes(position, blob, (method, kind), compile_id.unwrap_or(0))?;
        self.below_compiled = true;
        if blob.frame_size == 0 {
            return Err(Broken::Compiled);
        }
        if let Some(compile_id) = compile_id {
            self.mark = Mark::compiled(blob.address, blob.frame_size as u32, compile_id);
        }
        self.caller_by_size(position.sp, blob.frame_size).map(Some).ok_or(Broken::Compiled)
    }

    /// The kind of the code of a compiled frame's method (its outermost
    /// scope): a native method's wrapper, or code of its tier (`Unknown`
    /// where the level cannot be read).
    fn code_kind(&self, blob: &Blob) -> FrameKind {
        if blob.kind == BlobKind::NativeNmethod {
            return FrameKind::Native;
        }
        code::comp_level(self.memory, self.layout, blob).and_then(FrameKind::of_level).unwrap_or(FrameKind::Unknown)
    }

    /// Emits the Java frames of a compiled frame: its inlined scopes at the
    /// pc (each `Inlined` but the outermost, which is the code's `kind`),
    /// or the nmethod's method when the pc has no debug information;
    /// a return address's frames are kept in the cache (with the nmethod's
    /// `compile_id`, 0 when unreadable: not kept).
    fn compiled_scopes(
        &mut self,
        position: Position,
        blob: &Blob,
        (method, kind): (usize, FrameKind),
        compile_id: u32,
    ) -> Result<(), Broken> {
        let mut scopes = [Scope { method: 0, bci: 0 }; MAX_SCOPES];
        // The first PcDesc at or after the pc, as AsyncGetCallTrace takes it
        // (`pc_desc_at(pc)`, else `pc_desc_near(pc + 1)`): a return address
        // is described exactly; an interrupted instruction that ends a run
        // of code (a PcDesc marks the end of the instructions it describes)
        // is charged to that run, the instructions just executed.
        let decoding = cycles::now();
        let mut count = if blob.kind == BlobKind::Nmethod {
            code::scopes_at(self.memory, self.layout, blob, position.pc, &mut scopes)
        } else {
            0
        };
        let naming = cycles::now();
        if position.top {
            cycles::add(Part::TopScopes, naming.wrapping_sub(decoding));
        }
        // A top pc without debug information (in the stubs after the
        // instructions, where the frame may be gone) is not kept: only what
        // holds at that pc whatever the stack may be.
        let keep = count > 0 || !position.top;
        if count == 0 {
            let bci = if blob.kind == BlobKind::NativeNmethod { NATIVE_BCI } else { UNKNOWN_BCI };
            scopes[0] = Scope { method, bci };
            count = 1;
        }
        let mut entry = CachedFrame {
            pc: position.pc,
            blob: blob.address,
            compile_id,
            frame_size: blob.frame_size as u32,
            count: count as u8,
            kind,
            ..CachedFrame::default()
        };
        for (index, scope) in scopes[..count].iter().enumerate() {
            let method_id = self.method_id(scope.method).ok_or(Broken::NoMethodId)?;
            self.emit(method_id, scope.bci, scope_kind(index, count, kind));
            if index < cache::SCOPES {
                entry.method_ids[index] = method_id;
                entry.bcis[index] = scope.bci;
            }
        }
        if position.top {
            cycles::since(Part::TopMethodIds, naming);
        }
        if let Some(cache) = self.cache {
            if keep && count <= cache::SCOPES && blob.frame_size > 0 && entry.compile_id != 0 {
                cache.keep_frame(&entry);
            }
        }
        Ok(())
    }

    /// A compiled frame at a pc decoded before: its frames from the cache,
    /// if the code at that address is still the same compilation. (A top
    /// pc is kept only where its frame was complete and not in the
    /// epilogue, which is a property of the instruction, so it holds again.)
    fn cached(&mut self, position: Position) -> Option<Result<Option<Position>, Broken>> {
        let entry = self.cache?.frame(position.pc)?;
        // Compilation ids are unique for the VM's life: an nmethod at that
        // address with that id is the compilation decoded. (Its method is
        // not read too: it is on another cache line, a second miss per frame.
        // What is left: code freed and replaced by a blob that starts
        // elsewhere, whose bytes at that offset happen to equal the id; the
        // frame is then misnamed, every read still a safe one.)
        let compile_id = self.memory.u32(entry.blob.wrapping_add(self.layout.blob.compile_id));
        if compile_id != Some(entry.compile_id) {
            self.stale += 1;
            return None;
        }
        self.hits += 1;
        self.below_compiled = true;
        let count = entry.count as usize;
        for index in 0..count {
            self.emit(entry.method_ids[index], entry.bcis[index], scope_kind(index, count, entry.kind));
        }
        self.mark = Mark::compiled(entry.blob, entry.frame_size, entry.compile_id);
        Some(self.caller_by_size(position.sp, entry.frame_size as usize).map(Some).ok_or(Broken::Compiled))
    }

    /// The jmethodID of `method`, from the cache when it still points back.
    fn method_id(&mut self, method: usize) -> Option<usize> {
        if let Some(id) = self.cache.and_then(|cache| cache.method_id(method)) {
            if self.memory.word(id) == Some(method) {
                return Some(id);
            }
        }
        let id = code::method_id(self.memory, self.layout, method)?;
        if let Some(cache) = self.cache {
            cache.keep_method_id(method, id);
        }
        Some(id)
    }

    /// The caller of an nmethod interrupted in its prologue.
    fn unwind_prologue(&self, position: Position, blob: &Blob) -> Option<Position> {
        let entry = code::verified_entry(self.memory, self.layout, blob)?;
        let pc = position.pc;
        let byte = self.memory.u8(pc)?;
        if pc <= entry || byte == PUSH_RBP || blob.frame_size == 0 {
            return self.caller_at_entry(position);
        }
        if pc <= entry.wrapping_add(15) && self.memory.u8(pc.wrapping_sub(1))? == PUSH_RBP {
            // Right after `push rbp`: the return address is one word up.
            return self.caller_above_saved_rbp(position.sp);
        }
        if pc <= entry.wrapping_add(31) && self.frame_allocated(entry, pc) {
            return self.caller_by_size(position.sp, blob.frame_size);
        }
        None
    }

    /// Whether a `sub rsp, frame_size` lies between `entry` and `pc`.
    fn frame_allocated(&self, entry: usize, pc: usize) -> bool {
        (entry..pc.saturating_sub(3)).rev().any(|at| {
            let bytes = (self.memory.u8(at), self.memory.u8(at.wrapping_add(1)), self.memory.u8(at.wrapping_add(2)));
            matches!(bytes, (Some(0x48), Some(second), Some(0xEC)) if second & 0xFD == 0x81)
        })
    }

    /// The caller of a frame interrupted in its epilogue (after `add rsp`:
    /// at `pop rbp`, the return poll or `ret`); `None` if not there.
    fn unwind_epilogue(&self, position: Position) -> Option<Position> {
        let pc = position.pc;
        let byte = self.memory.u8(pc)?;
        if byte == RET || self.is_poll_return(pc) {
            return self.caller_at_entry(position);
        }
        if byte == POP_RBP {
            return self.caller_above_saved_rbp(position.sp);
        }
        None
    }

    /// A top pc in the nmethod's stubs section (`_stub_offset`, after its
    /// instructions), where the frame may have a word pushed on it or be
    /// gone: a call's stub to the interpreter (the method called out, the
    /// return address back into it at the sp) or a deoptimisation handler
    /// that pushed its own address leaves to the word at the sp, in the
    /// method, where its frame is whole; a return address into other code
    /// at the sp means the frame is gone, and the method is left by it.
    /// Otherwise (an exception or deoptimisation handler at its start) the
    /// frame is whole: `None`.
    fn in_stubs(&self, position: Position, blob: &Blob) -> Option<InStubs> {
        let stubs = code::stub_begin(self.memory, self.layout, blob)?;
        if position.pc < stubs {
            return None;
        }
        let word = self.word(position.sp)?;
        if blob.contains(word) && word >= blob.code_begin {
            let sp = position.sp.wrapping_add(8);
            return Some(InStubs::Pushed(Position { pc: word, sp, fp: position.fp, top: false }));
        }
        self.is_return_address(word).then_some(InStubs::FrameGone)
    }

    /// A compiled frame at the top, half built or already gone, known by
    /// instruction (the prologue, the epilogue, C2's return-poll stub, the
    /// stubs section): the method at an unknown bci and its caller. `None`
    /// where the frame is whole.
    fn unwind_top(
        &mut self,
        position: Position,
        blob: &Blob,
        method: usize,
    ) -> Option<Result<Option<Position>, Broken>> {
        let caller = if position.pc < blob.frame_complete {
            // In the prologue: the frame is not built yet.
            self.unwind_prologue(position, blob)
        } else if let Some(caller) = self.unwind_epilogue(position) {
            Some(caller)
        } else if self.in_return_poll_stub(position.pc, blob) {
            self.caller_at_entry(position)
        } else {
            match self.in_stubs(position, blob)? {
                // The method's frame is whole below the pushed word: walked there.
                InStubs::Pushed(next) => return Some(Ok(Some(next))),
                InStubs::FrameGone => self.caller_at_entry(position),
            }
        };
        let Some(method_id) = self.method_id(method) else { return Some(Err(Broken::NoMethodId)) };
        self.emit(method_id, UNKNOWN_BCI, self.code_kind(blob));
        Some(caller.map(Some).ok_or(Broken::Compiled))
    }

    /// Whether `pc` is in C2's stub for a return's safepoint poll (JDK 17+),
    /// out of line after the method's instructions and jumped to from the
    /// epilogue's poll after `pop rbp`, the frame gone: `mov r10, poll`
    /// (`lea` of an internal address: a 64-bit immediate), `mov [r15 +
    /// saved_exception_pc], r10`, `jmp handler`, the poll inside the same
    /// nmethod.
    fn in_return_poll_stub(&self, pc: usize, blob: &Blob) -> bool {
        let bytes =
            |at: usize| (self.memory.u8(at), self.memory.u8(at.wrapping_add(1)), self.memory.u8(at.wrapping_add(2)));
        let load_at = |at: usize| {
            matches!(bytes(at), (Some(0x49), Some(0xBA), _))
                && self.memory.word(at.wrapping_add(2)).is_some_and(|poll| blob.contains(poll))
        };
        // `mov [r15 + disp32], r10` or `mov [r15 + disp8], r10`: its length.
        let store_at = |at: usize| match bytes(at) {
            (Some(0x4D), Some(0x89), Some(0x97)) => Some(7),
            (Some(0x4D), Some(0x89), Some(0x57)) => Some(4),
            _ => None,
        };
        let at_store = |at: usize| store_at(at).is_some() && load_at(at.wrapping_sub(10));
        let at_jump = |len: usize| store_at(pc.wrapping_sub(len)) == Some(len) && at_store(pc.wrapping_sub(len));
        at_store(pc.wrapping_add(10))
            || at_store(pc)
            || (self.memory.u8(pc) == Some(0xE9) && (at_jump(7) || at_jump(4)))
    }

    /// JDK 17+'s return poll after `pop rbp`: `cmp rsp, [r15 + n]; ja slow; ret`.
    fn is_poll_return(&self, pc: usize) -> bool {
        let at = |offset: usize| self.memory.u8(pc.wrapping_add(offset));
        let cmp = at(0) == Some(0x49) && at(1) == Some(0x3B) && matches!(at(2), Some(0x67 | 0xA7));
        let after_pop = pc.checked_sub(1).and_then(|p| self.memory.u8(p)) == Some(POP_RBP);
        let ja_then_ret = at(0) == Some(0x0F) && at(1) == Some(0x87) && at(6) == Some(RET);
        (cmp && after_pop) || ja_then_ret
    }

    fn entry_frame(&mut self, position: Position) -> Result<Option<Position>, Broken> {
        self.mark = Mark { kind: MarkKind::Entry, ..Mark::default() };
        self.entry_caller(position)
    }

    /// The Java frames below an entry frame: the anchor its call wrapper
    /// saved (`None`: there are none, the bottom of the stack).
    fn entry_caller(&self, position: Position) -> Result<Option<Position>, Broken> {
        let fields = &self.layout.thread;
        let slot = position.fp.checked_add_signed(fields.entry_frame_call_wrapper).ok_or(Broken::EntryFrame)?;
        let wrapper = self.word(slot).ok_or(Broken::EntryFrame)?;
        if !wrapper.is_multiple_of(8) || wrapper < position.fp || wrapper - position.fp > MAX_CALL_WRAPPER_DISTANCE {
            return Err(Broken::EntryFrame);
        }
        let anchor = wrapper.wrapping_add(fields.call_wrapper_anchor);
        match self.word(anchor.wrapping_add(fields.anchor_sp)) {
            None => Err(Broken::EntryFrame),
            // The first call into Java on this thread: the bottom.
            Some(0) => Ok(None),
            Some(_) => self.anchor_frame(anchor).map(Some).ok_or(Broken::EntryFrame),
        }
    }

    fn stub(&mut self, position: Position, blob: &Blob) -> Result<Option<Position>, Broken> {
        if position.top && blob.name_starts_with(b"SafepointBlob") && self.memory.u8(blob.code_begin) == Some(PUSH_RBX)
        {
            return self.poll_handler(position, blob).map(Some).ok_or(Broken::Stub);
        }
        if let Some(caller) = self.unwind_stub(position, blob) {
            return Ok(Some(caller));
        }
        if blob.frame_size > 0 {
            return self.caller_by_size(position.sp, blob.frame_size).map(Some).ok_or(Broken::Stub);
        }
        if !position.top && blob.name_starts_with(b"StubRoutines") {
            // In a call out of a stub of `StubRoutines` (they begin `push
            // rbp; mov rbp, rsp` each, inside one blob) to native code, as
            // an oop arraycopy calls G1's barrier after saving every
            // register. Not other stubs without a frame size: an adapter
            // calling the VM keeps its caller's sp in a register, and its
            // rbp is the compiled caller's general register.
            return self.java_caller_by_fp(position.fp, position.sp).map(Some).ok_or(Broken::Stub);
        }
        Err(Broken::Stub)
    }

    /// The Java frame of a thread interrupted in the handler of a safepoint
    /// poll inside a method (a loop's): the poll faulted, HotSpot's fault
    /// handler saved its pc in `JavaThread::_saved_exception_pc` and sent the
    /// thread to this blob, which pushes a slot for the return address
    /// (`push rbx`), builds its frame (`push rbp; mov rbp, rsp`, then the
    /// registers), writes the poll's pc into the slot before calling the VM,
    /// and after the call may move it past the poll instruction. The
    /// sampling signal, held while the fault was handled, arrives mostly at
    /// the blob's first instruction, where the slot is not there yet. The
    /// method's frame is then the top one, at the poll, with its sp above
    /// the slot: known by instruction at the start and at the `ret` (where
    /// the slot must hold the poll's pc), by the blob's frame pointer in
    /// between (the sp must lie inside the frame it bounds). The method's
    /// frame is named at the poll's own pc, described exactly, not at the
    /// slot's (moved past it, or to a deoptimisation handler).
    fn poll_handler(&self, position: Position, blob: &Blob) -> Option<Position> {
        let offset = self.layout.thread.saved_exception_pc?;
        let poll = self.word(self.thread.wrapping_add(offset)).filter(|&pc| pc != 0)?;
        let (pc, sp, fp) = (position.pc, position.sp, position.fp);
        let is_poll = |slot: usize| slot.wrapping_sub(poll) <= MAX_POLL_LENGTH;
        let (java_sp, java_fp) = match pc.wrapping_sub(blob.code_begin) {
            0 => (sp, fp),
            // After `push rbx`; after `push rbp`.
            1 => (sp.wrapping_add(8), fp),
            2 => (sp.wrapping_add(16), self.word(sp)?),
            _ if self.memory.u8(pc)? == RET => {
                is_poll(self.word(sp)?).then_some(())?;
                (sp.wrapping_add(8), fp)
            }
            _ => {
                // The blob's frame pointer: the sp lies inside its frame.
                let frame_bytes = blob.frame_size.checked_mul(8)?;
                let inside = fp >= sp && fp.wrapping_add(16) <= sp.wrapping_add(frame_bytes);
                (inside && self.stack.contains(fp)).then_some(())?;
                (fp.wrapping_add(16), self.word(fp)?)
            }
        };
        Some(Position { pc: poll, sp: java_sp, fp: java_fp, top: true })
    }

    /// A stub interrupted where its frame is known by instruction: at its
    /// entry or `ret` (return address at the sp), in a vtable or itable
    /// stub (they build no frame), between its `push rbp` and `mov rbp,
    /// rsp` (at the blob's start, or at the start of one of the stubs of
    /// `StubRoutines` when what is above the saved rbp returns into Java
    /// code), or in a blob that begins `push rbp; mov rbp, rsp`; else, at
    /// the top of the stack, a stub that builds no frame of known size
    /// (adapters, the stubs of `StubRoutines`) is left by the return
    /// address at the sp; by the interpreted frame the frame pointer still
    /// points to, when that frame is in a call (an i2c adapter's caller); or
    /// above the frame pointer, whichever follows a call instruction in Java
    /// code.
    fn unwind_stub(&self, position: Position, blob: &Blob) -> Option<Position> {
        let pc = position.pc;
        let frameless = blob.name_starts_with(b"vtable")
            || blob.name_starts_with(b"itable")
            || blob.name_starts_with(b"InlineCacheBuf");
        if position.top && (pc == blob.code_begin || self.memory.u8(pc)? == RET || frameless) {
            return self.caller_at_entry(position);
        }
        if position.top && self.memory.u32(pc.wrapping_sub(1)) == Some(PUSH_RBP_MOV_RBP_RSP) {
            let caller = self.caller_above_saved_rbp(position.sp)?;
            if pc == blob.code_begin.wrapping_add(1) || self.is_return_address(caller.pc) {
                return Some(caller);
            }
        }
        if self.memory.u32(blob.code_begin)? == PUSH_RBP_MOV_RBP_RSP
            && self.stack.contains(position.fp)
            && position.fp >= position.sp
        {
            return self.caller_by_fp(position.fp, position.fp.wrapping_add(16));
        }
        if !position.top {
            return None;
        }
        if self.word(position.sp).is_some_and(|returns_to| self.is_return_address(returns_to)) {
            return self.caller_at_entry(position);
        }
        let (fp, sp) = (position.fp, position.sp);
        self.interpreted_caller(fp, sp).or_else(|| self.java_caller_by_fp(fp, sp))
    }

    /// The caller above the frame pointer `fp` of a frame at `sp`, when `fp`
    /// is near and what is above it returns into Java code (a frame pointer
    /// that is a compiled caller's general register seldom passes both).
    fn java_caller_by_fp(&self, fp: usize, sp: usize) -> Option<Position> {
        if !self.frame_pointer_near(fp, sp) {
            return None;
        }
        let caller = self.caller_by_fp(fp, fp.wrapping_add(16))?;
        self.is_return_address(caller.pc).then_some(caller)
    }

    /// The interpreted frame at `fp`, when code that built no frame of its
    /// own runs on top of it with the frame pointer still the interpreted
    /// frame's: a stub (an i2c adapter between an interpreted caller and
    /// compiled code) or a native function without a frame pointer (a leaf
    /// call). That frame is the caller, found at the stack pointer of its
    /// current call (`last_sp`, the return address into the interpreter
    /// just below) or, between calls, at `sp` with a pc at the interpreter's
    /// start (its bytecode index comes from its bytecode pointer, not the
    /// pc). Following the frame pointer instead skips the interpreted frame
    /// and lands on *its* caller. A frame pointer of native code that built
    /// a frame does not lead here: its `fp[-3]` is no `Method*` whose
    /// jmethodID points back to it.
    fn interpreted_caller(&self, fp: usize, sp: usize) -> Option<Position> {
        if !self.frame_pointer_near(fp, sp) || self.interpreted_method(fp).is_none() {
            return None;
        }
        let raw = self.slot(fp, INTERPRETER_LAST_SP)?;
        let relative = raw as isize;
        let last_sp = if relative < 0 && relative > -((MAX_INTERPRETER_FRAME / 8) as isize) {
            fp.wrapping_add_signed(relative * 8)
        } else {
            raw
        };
        let in_call = raw != 0 && last_sp.is_multiple_of(8) && last_sp > sp && last_sp <= fp;
        let returns_to = in_call.then(|| self.word(last_sp - 8)).flatten().filter(|&pc| self.in_interpreter(pc));
        Some(match returns_to {
            Some(pc) => Position { pc, sp: last_sp, fp, top: false },
            None => Position { pc: self.layout.runtime.interpreter_low, sp, fp, top: false },
        })
    }

    /// The `Method*` of the interpreted frame at `fp`, if it reads as one
    /// (it has a jmethodID).
    fn interpreted_method(&self, fp: usize) -> Option<usize> {
        let method = self.slot(fp, INTERPRETER_METHOD)?;
        code::method_id(self.memory, self.layout, method).map(|_| method)
    }

    /// Whether `pc` is in Java code (an nmethod or the interpreter) right
    /// after a call instruction: what a return address into Java code is.
    fn is_return_address(&self, pc: usize) -> bool {
        let runtime = &self.layout.runtime;
        let in_java = self.in_interpreter(pc)
            || (pc >= runtime.code_low
                && pc < runtime.code_high
                && code::find_blob(self.memory, self.layout, pc).is_some_and(|blob| blob.kind != BlobKind::Other));
        in_java && self.follows_call(pc)
    }

    /// Whether the instruction before `pc` is a call: `call rel32`, or an
    /// indirect `call` through a register or memory (with or without REX).
    fn follows_call(&self, pc: usize) -> bool {
        let byte = |back: usize| pc.checked_sub(back).and_then(|at| self.memory.u8(at));
        let modrm_is_call = |modrm: u8| (modrm >> 3) & 7 == 2;
        byte(5) == Some(0xE8)
            // call reg (FF D0+r), call [reg] (FF 10+r)
            || (byte(2) == Some(0xFF) && byte(1).is_some_and(|m| modrm_is_call(m) && (m >> 6 == 3 || m >> 6 == 0)))
            // call [reg + disp8] (FF 50+r d8)
            || (byte(3) == Some(0xFF) && byte(2).is_some_and(|m| modrm_is_call(m) && m >> 6 == 1))
            // call [reg + disp32] (FF 90+r d32)
            || (byte(6) == Some(0xFF) && byte(5).is_some_and(|m| modrm_is_call(m) && m >> 6 == 2))
    }

    /// Native code (outside the code heaps): follow the frame pointer. At
    /// the top, a function interrupted before it built a frame (its return
    /// address, into generated code right after a call, still at the sp) is
    /// left by its return address, and one that builds none, with the frame
    /// pointer still an interpreted frame's, is left to that frame. (Deeper
    /// in a function, the word at the sp can be any pointer into the code,
    /// such as a safepoint poll's pc the VM keeps: not a return address.)
    fn native(&self, position: Position) -> Result<Option<Position>, Broken> {
        if position.top {
            let returns_to = self.word(position.sp).ok_or(Broken::Native)?;
            if self.in_generated_code(returns_to) && self.follows_call(returns_to) {
                return Ok(Some(Position {
                    pc: returns_to,
                    sp: position.sp.wrapping_add(8),
                    fp: position.fp,
                    top: false,
                }));
            }
        }
        let fp = position.fp;
        if !fp.is_multiple_of(8) || !self.stack.contains(fp) || fp < position.sp {
            return Err(Broken::Native);
        }
        if position.top {
            if let Some(caller) = self.interpreted_caller(fp, position.sp) {
                return Ok(Some(caller));
            }
        }
        self.caller_by_fp(fp, fp.wrapping_add(16)).map(Some).ok_or(Broken::Native)
    }
}

/// Whether a walk at `position` is at the recorded frame `mark` (the frame
/// pointer matters only to interpreted frames: compiled code uses rbp as a
/// general register, so a compiled frame's saved rbp can differ).
fn matches_position(mark: &Mark, position: Position) -> bool {
    mark.sp == position.sp && mark.pc == position.pc && (mark.kind != MarkKind::Interpreted || mark.fp == position.fp)
}

const PUSH_RBP: u8 = 0x55;
const PUSH_RBX: u8 = 0x53;
/// How far past a safepoint poll's pc its handler may move the return
/// address (the poll instruction's length, with prefixes).
const MAX_POLL_LENGTH: usize = 8;
const POP_RBP: u8 = 0x5D;
const RET: u8 = 0xC3;
/// `push rbp; mov rbp, rsp` as a little-endian u32.
const PUSH_RBP_MOV_RBP_RSP: u32 = 0xEC8B_4855;
