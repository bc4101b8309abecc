//! One frame of a sampled stack, as the tree consumes it.

use serde::Serialize;

use crate::method::MethodId;

/// Bytecode index used when a position is unknown, and as the call site of
/// the root's children (no caller).
pub const NO_BCI: i32 = -1;

/// A frame: the method and the bytecode index it was executing. For every
/// frame but the leaf, `bci` is the invoke that called the next frame, so
/// it is the *call site* of the edge to that frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Frame {
    pub method: MethodId,
    pub bci: i32,
}

impl Frame {
    pub fn new(method: MethodId, bci: i32) -> Frame {
        Frame { method, bci }
    }
}
