//! Whaley's marked frames, on HotSpot: what a thread's previous walk saw,
//! frame by frame, so that the next walk decodes only the frames that are
//! new and takes the rest, unchanged, from the previous sample.
//!
//! Whaley marks a frame by setting a bit in its return address and finds
//! the marked frames at the next sample without walking them. HotSpot reads
//! return addresses itself (garbage collection, deoptimisation, exceptions)
//! and would follow a marked one into nowhere, so pcct marks nothing on the
//! stack: each walk records, per physical frame, its position (stack
//! pointer, program counter, frame pointer), how to find its caller, and
//! what identifies it (an nmethod's address and compilation id, an
//! interpreted frame's `Method*` and bytecode pointer). The next walk,
//! reaching a frame at a recorded position, *verifies* the recorded frames
//! below it against the stack, cheaply (two or three reads of the thread's
//! own stack per frame and a compilation id, no decoding, no lookups), and
//! if every one down to the bottom is unchanged, copies their Java frames
//! from the previous sample instead of decoding them.
//!
//! Verifying is what makes this sound: a frame at the same position with
//! the same return address may still be a new activation whose callers
//! differ (`p -> a -> x` then `q -> a -> x` with frames of equal sizes);
//! only the whole chain down to the bottom identifies a stack.

/// Most physical frames recorded per walk (a deeper stack is walked and
/// decoded whole every time).
pub const MAX_MARKS: usize = 128;

/// How a recorded frame's caller is found (and its identity checked).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MarkKind {
    /// Not verifiable: a reuse cannot pass it.
    #[default]
    Opaque,
    /// An nmethod's frame of `size` words: `key` the nmethod, `check` its compilation id.
    Compiled,
    /// An interpreted frame: `key` its `Method*`, `check` its bytecode pointer.
    Interpreted,
    /// An entry frame (the VM called Java): the caller is in its call wrapper's anchor.
    Entry,
}

/// One physical frame of a walk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mark {
    pub sp: usize,
    pub pc: usize,
    pub fp: usize,
    pub kind: MarkKind,
    /// Frame size in words (compiled frames).
    pub size: u32,
    pub key: usize,
    pub check: usize,
    /// Java frames the walk had written when it left this frame (so this
    /// frame's own end index in the walk's output, leaf first).
    pub emitted: u32,
}

impl Mark {
    /// What identifies an nmethod's frame (`nmethod`, its frame `size` in
    /// words, its `compile_id`); the walk adds the position.
    pub fn compiled(nmethod: usize, size: u32, compile_id: u32) -> Mark {
        Mark { kind: MarkKind::Compiled, size, key: nmethod, check: compile_id as usize, ..Mark::default() }
    }
}

/// The frames of one walk, top (leaf) first, stack pointers ascending.
#[derive(Clone, Debug)]
pub struct MarkSet {
    pub count: usize,
    /// The walk reached the bottom of the stack with every frame recorded:
    /// only then can a later walk reuse it.
    pub complete: bool,
    pub marks: [Mark; MAX_MARKS],
}

impl Default for MarkSet {
    fn default() -> MarkSet {
        MarkSet { count: 0, complete: false, marks: [Mark::default(); MAX_MARKS] }
    }
}

impl MarkSet {
    pub fn clear(&mut self) {
        self.count = 0;
        self.complete = false;
    }

    /// Records a frame; a walk with more frames than fit is not reusable.
    #[inline]
    pub fn push(&mut self, mark: Mark) {
        match self.marks.get_mut(self.count) {
            Some(slot) => {
                *slot = mark;
                self.count += 1;
            }
            None => self.count = MAX_MARKS + 1,
        }
    }

    /// Whether every frame of the walk is recorded.
    pub fn is_whole(&self) -> bool {
        self.count <= MAX_MARKS
    }

    /// The recorded frames.
    pub fn frames(&self) -> &[Mark] {
        &self.marks[..self.count.min(MAX_MARKS)]
    }

    /// The index of the recorded frame at stack pointer `sp`, if any.
    #[inline]
    pub fn at_sp(&self, sp: usize) -> Option<usize> {
        let frames = self.frames();
        let index = frames.partition_point(|mark| mark.sp < sp);
        (index < frames.len() && frames[index].sp == sp).then_some(index)
    }
}
