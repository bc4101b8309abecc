//! Garbage in, a bounded walk out: random registers over random stacks
//! (random words, code addresses, pointers up and down the stack), readers
//! that refuse every read, frame-pointer cycles and stack pointers going
//! backwards. Every walk returns, within its buffer, without a panic, and
//! every frame after the first it writes is code of a module.

mod common;

use common::{Library, BARE_C, NO_UNWIND_FLAGS};
use pcct_native::{Ending, Modules, Registers, StackBounds, UnwindCache, Unwinder};

/// A stack made up for the test, at an address no real stack uses.
struct FakeStack {
    base: u64,
    words: Vec<u64>,
}

impl FakeStack {
    fn new(words: usize) -> FakeStack {
        FakeStack { base: 0x5555_0000_0000, words: vec![0; words] }
    }

    fn bounds(&self) -> StackBounds {
        StackBounds { low: self.base, high: self.base + 8 * self.words.len() as u64 }
    }

    fn address(&self, index: usize) -> u64 {
        self.base + 8 * index as u64
    }

    fn read(&self, address: u64) -> Option<u64> {
        let index = address.checked_sub(self.base)? / 8;
        self.words.get(usize::try_from(index).ok()?).copied()
    }
}

/// xorshift64*: a fixed, reproducible sequence.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound.max(1)
    }
}

/// Random values of the kinds a stack holds.
struct Garbage<'a> {
    random: Random,
    code: Vec<std::ops::Range<u64>>,
    stack: &'a StackBounds,
}

impl Garbage<'_> {
    fn code_address(&mut self) -> u64 {
        let range = self.code[self.random.below(self.code.len() as u64) as usize].clone();
        range.start + self.random.below(range.end - range.start)
    }

    fn stack_address(&mut self) -> u64 {
        self.stack.low + self.random.below(self.stack.high - self.stack.low)
    }

    fn word(&mut self) -> u64 {
        match self.random.below(10) {
            0..=2 => self.code_address(),
            3..=5 => self.stack_address(),
            6 => 0,
            _ => self.random.next(),
        }
    }

    fn registers(&mut self) -> Registers {
        let pc = if self.random.below(4) == 0 { self.word() } else { self.code_address() };
        let sp = if self.random.below(5) == 0 { self.word() } else { self.stack_address() };
        Registers { pc, sp, fp: self.word() }
    }
}

fn check(walk: pcct_native::NativeWalk, out: &[u64], modules: &Modules) {
    assert!(walk.frames <= out.len(), "{walk:?}");
    assert!(walk.ending != Ending::BufferFull || walk.frames == out.len(), "{walk:?}");
    for &caller in &out[1.min(walk.frames)..walk.frames] {
        assert!(modules.find(caller - 1).is_some(), "{caller:#x} is no module's code: {walk:?}");
    }
}

#[test]
fn random_registers_over_random_stacks_give_bounded_walks() {
    let _library = Library::build("bare", BARE_C, false, &NO_UNWIND_FLAGS);
    let modules = Modules::load().unwrap();
    let unwinder = Unwinder::new(&modules);
    let mut cache = UnwindCache::new();
    let mut stack = FakeStack::new(4096);
    let bounds = stack.bounds();
    let code = modules.list().iter().map(|module| module.avma.clone()).collect();
    let mut garbage = Garbage { random: Random(0x9e37_79b9_7f4a_7c15), code, stack: &bounds };
    let mut out = [0u64; 64];
    let mut endings = std::collections::HashMap::new();
    for round in 0..200 {
        for word in stack.words.iter_mut() {
            *word = garbage.word();
        }
        for _ in 0..100 {
            let start = garbage.registers();
            let stop = (round % 3 == 0).then(|| garbage.stack_address());
            let limit = 1 + garbage.random.below(out.len() as u64) as usize;
            let walk = unwinder.unwind(start, bounds, stop, |at| stack.read(at), &mut cache, &mut out[..limit]);
            check(walk, &out[..limit], &modules);
            *endings.entry(walk.ending).or_insert(0) += 1;
            let refused = unwinder.unwind(start, bounds, stop, |_| None, &mut cache, &mut out);
            check(refused, &out, &modules);
            assert!(refused.frames <= 2, "a walk that can read nothing: {refused:?}");
        }
    }
    eprintln!("{endings:?}");
    assert!(endings.len() >= 5, "the garbage reaches most endings: {endings:?}");
}

#[test]
fn frame_pointer_cycles_and_backward_chains_end_the_walk() {
    let library = Library::build("bare", BARE_C, false, &NO_UNWIND_FLAGS);
    let modules = Modules::load().unwrap();
    let unwinder = Unwinder::new(&modules);
    let mut cache = UnwindCache::new();
    // `bare` has no unwind information: the frame pointer is all there is.
    let pc = library.address("bare") + 8;
    let mut stack = FakeStack::new(1024);
    let (frame, lower) = (512, 32);
    stack.words[frame + 1] = pc;
    stack.words[lower + 1] = pc;
    let mut out = [0u64; 64];
    // A frame pointer that points to itself; one that points down the stack.
    for saved_fp in [stack.address(frame), stack.address(lower)] {
        stack.words[frame] = saved_fp;
        let start = Registers { pc, sp: stack.address(frame - 4), fp: stack.address(frame) };
        let walk = unwinder.unwind(start, stack.bounds(), None, |at| stack.read(at), &mut cache, &mut out);
        assert_eq!((walk.frames, walk.ending), (2, Ending::SpNotIncreasing), "{walk:?}");
        assert_eq!(out[..2], [pc, pc]);
    }
    // A chain that runs off the top of the stack.
    stack.words[frame] = stack.bounds().high + 64;
    let start = Registers { pc, sp: stack.address(frame - 4), fp: stack.address(frame) };
    let walk = unwinder.unwind(start, stack.bounds(), None, |at| stack.read(at), &mut cache, &mut out);
    assert_eq!((walk.frames, walk.ending), (2, Ending::ReadRefused), "{walk:?}");
}

#[test]
fn starts_outside_the_stack_or_in_unknown_code_write_nothing() {
    let modules = Modules::load().unwrap();
    let unwinder = Unwinder::new(&modules);
    let mut cache = UnwindCache::new();
    let stack = FakeStack::new(64);
    let mut out = [0u64; 8];
    let code = libc::getpid as *const () as u64;
    let mut walk = |start: Registers, stop: Option<u64>| {
        unwinder.unwind(start, stack.bounds(), stop, |at| stack.read(at), &mut cache, &mut out)
    };
    let inside = stack.address(8);
    let outside = walk(Registers { pc: code, sp: stack.bounds().high + 8, fp: 0 }, None);
    assert_eq!((outside.frames, outside.ending), (0, Ending::SpOutsideStack));
    let null = walk(Registers { pc: code, sp: 8, fp: 0 }, None);
    assert_eq!((null.frames, null.ending), (0, Ending::SpOutsideStack));
    let heap = Box::new(0u64);
    let unknown = walk(Registers { pc: &*heap as *const u64 as u64, sp: inside, fp: 0 }, None);
    assert_eq!((unknown.frames, unknown.ending), (0, Ending::UnknownCode));
    let java = walk(Registers { pc: code, sp: inside, fp: 0 }, Some(inside));
    assert_eq!((java.frames, java.ending), (0, Ending::JavaFrame));
    let empty =
        unwinder.unwind(Registers { pc: code, sp: inside, fp: 0 }, stack.bounds(), None, |_| None, &mut cache, &mut []);
    assert_eq!((empty.frames, empty.ending), (0, Ending::BufferFull));
}
