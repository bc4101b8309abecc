//! One frame of a sampled stack, as the tree consumes it.

use serde::{Deserialize, Serialize};

use crate::method::MethodId;

/// Bytecode index used when a position is unknown, and as the call site of
/// the root's children (no caller).
pub const NO_BCI: i32 = -1;

/// How a Java frame's method was running when the stack was walked: in
/// the interpreter, as compiled code of a tier (its *outermost* scope), or
/// inlined into the compiled code of a frame below it. `Unknown` where the
/// walker did not say (kinds not recorded, a stand-in frame, a stack from
/// AsyncGetCallTrace or JVMTI). Part of a frame's identity: two contexts
/// that differ only in kind are two nodes.
#[repr(u8)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FrameKind {
    #[default]
    Unknown = 0,
    Interpreted = 1,
    /// C1 code without profiling (tier 1, the C1-only and trivial methods).
    Tier1 = 2,
    /// C1 code with invocation and backedge counters (tier 2).
    Tier2 = 3,
    /// C1 code with full profiling (tier 3).
    Tier3 = 4,
    /// The optimizing compiler's code (tier 4: C2, or Graal as the JIT).
    Tier4 = 5,
    /// Inlined into the compiled frame nearest below it on the path.
    Inlined = 6,
    /// A native method's wrapper (the method is Java's, its body is not).
    Native = 7,
}

impl FrameKind {
    pub const ALL: [FrameKind; 8] = [
        FrameKind::Unknown,
        FrameKind::Interpreted,
        FrameKind::Tier1,
        FrameKind::Tier2,
        FrameKind::Tier3,
        FrameKind::Tier4,
        FrameKind::Inlined,
        FrameKind::Native,
    ];

    /// The kind of code HotSpot's compile `level` (1-4) runs: `None` for
    /// other levels.
    pub fn of_level(level: u8) -> Option<FrameKind> {
        match level {
            1 => Some(FrameKind::Tier1),
            2 => Some(FrameKind::Tier2),
            3 => Some(FrameKind::Tier3),
            4 => Some(FrameKind::Tier4),
            _ => None,
        }
    }

    pub fn from_u8(value: u8) -> FrameKind {
        FrameKind::ALL.get(value as usize).copied().unwrap_or(FrameKind::Unknown)
    }

    /// The name JSON and pprof labels carry.
    pub fn name(self) -> &'static str {
        match self {
            FrameKind::Unknown => "unknown",
            FrameKind::Interpreted => "interpreted",
            FrameKind::Tier1 => "c1_tier1",
            FrameKind::Tier2 => "c1_tier2",
            FrameKind::Tier3 => "c1_tier3",
            FrameKind::Tier4 => "c2",
            FrameKind::Inlined => "inlined",
            FrameKind::Native => "native",
        }
    }

    /// async-profiler's annotation of a frame of this kind in collapsed
    /// stacks (`ann`): `_[0]` interpreted, `_[1]` C1, `_[j]` optimized
    /// (and a native method's compiled wrapper, as async-profiler writes
    /// it), `_[i]` inlined; none where the kind is unknown.
    pub fn suffix(self) -> &'static str {
        match self {
            FrameKind::Unknown => "",
            FrameKind::Interpreted => "_[0]",
            FrameKind::Tier1 | FrameKind::Tier2 | FrameKind::Tier3 => "_[1]",
            FrameKind::Tier4 | FrameKind::Native => "_[j]",
            FrameKind::Inlined => "_[i]",
        }
    }

    /// The kind [`FrameKind::name`] names.
    pub fn parse(name: &str) -> Option<FrameKind> {
        FrameKind::ALL.iter().copied().find(|kind| kind.name() == name)
    }

    pub fn is_unknown(&self) -> bool {
        *self == FrameKind::Unknown
    }

    /// The letter of [`FrameKind::suffix`] (`-` for unknown), as pprof's
    /// `frame_kinds` label writes each frame.
    pub fn letter(self) -> char {
        match self.suffix().as_bytes() {
            [b'_', b'[', letter, b']'] => *letter as char,
            _ => '-',
        }
    }

    /// The compile level of compiled code (1-4), `None` for the others.
    pub fn level(self) -> Option<u8> {
        match self {
            FrameKind::Tier1 => Some(1),
            FrameKind::Tier2 => Some(2),
            FrameKind::Tier3 => Some(3),
            FrameKind::Tier4 => Some(4),
            _ => None,
        }
    }
}

impl Serialize for FrameKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for FrameKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<FrameKind, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        FrameKind::parse(&name).ok_or_else(|| {
            let names: Vec<_> = FrameKind::ALL.iter().map(|kind| kind.name()).collect();
            serde::de::Error::custom(format!("unknown frame kind {name:?}: one of {}", names.join(", ")))
        })
    }
}

/// A frame: the method, the bytecode index it was executing and, when the
/// walker recorded it, how its method ran. For every frame but the leaf,
/// `bci` is the invoke that called the next frame, so it is the *call
/// site* of the edge to that frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Frame {
    pub method: MethodId,
    pub bci: i32,
    pub kind: FrameKind,
}

impl Frame {
    /// A frame of unknown kind.
    pub fn new(method: MethodId, bci: i32) -> Frame {
        Frame { method, bci, kind: FrameKind::Unknown }
    }

    pub fn with_kind(method: MethodId, bci: i32, kind: FrameKind) -> Frame {
        Frame { method, bci, kind }
    }
}
