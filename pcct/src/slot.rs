//! The arena's element: a node and the edge that leads into it.
//!
//! In a tree every node but the root has exactly one incoming edge, so the
//! node and its edge share one slot of the arena; the edge's source is
//! `parent`. Links are `u32` indices (see the crate docs for why a typed
//! index arena and not `bumpalo` references). They are private to the crate
//! and change only through [`crate::Pcct`] and [`crate::hot_list`], which
//! keep them consistent.

use serde::Serialize;

use crate::frame::{Frame, FrameKind};
use crate::method::MethodId;
use crate::weight::{TimeWeight, EVENT_COUNT};

/// Index of a node (and of its incoming edge) in a [`crate::Pcct`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    pub const ROOT: NodeId = NodeId(0);

    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// Raw index, stable until the next purge.
    pub fn raw(self) -> u32 {
        self.0
    }
}

/// "No element" in a link.
pub(crate) const NIL: u32 = u32::MAX;
/// `Link::prev` of an element that is not in its hot list.
pub(crate) const UNLISTED: u32 = u32::MAX - 1;

/// Position in a doubly linked hot list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Link {
    pub(crate) prev: u32,
    pub(crate) next: u32,
}

impl Link {
    pub(crate) const UNLISTED: Link = Link { prev: UNLISTED, next: NIL };

    pub(crate) fn is_listed(self) -> bool {
        self.prev != UNLISTED
    }
}

/// A node together with its incoming edge (Whaley Figure 8's `PCCT_Node`
/// and `PCCT_Edge`, merged because the mapping is one to one).
#[derive(Clone, Debug)]
pub(crate) struct Slot {
    /// Source node of the incoming edge; `NIL` for the root.
    pub(crate) parent: u32,
    /// First outgoing edge (the target slot of it).
    pub(crate) first_child: u32,
    /// Next outgoing edge of `parent`.
    pub(crate) next_sibling: u32,
    pub(crate) method: MethodId,
    /// Call site of the incoming edge: bytecode index in the caller.
    pub(crate) call_site: i32,
    /// Distance from the root (root = 0) in the low 24 bits ([`DEPTH`]),
    /// the frame's [`FrameKind`] in the next 7 ([`KIND_SHIFT`]); the top
    /// bit ([`RECURSIVE`]) is set when an ancestor has the same method.
    pub(crate) depth_flags: u32,
    /// Position in the hot-node list (by `node_weight`).
    pub(crate) node_link: Link,
    /// Position in the hot-edge list (by `edge_weight`).
    pub(crate) edge_link: Link,
    /// Self weight in the time resources: samples whose leaf was this
    /// context (Whaley's `node.time`).
    pub(crate) node_time: TimeWeight,
    /// Incoming edge weight in the time resources: samples in which this
    /// call was new (`edge.weight`).
    pub(crate) edge_time: TimeWeight,
    /// Index of this context's event weights in the tree's side table
    /// ([`EventSlot`]); `NIL` while it has none (most contexts).
    pub(crate) events: u32,
}

/// The event resources of a context that has any of its own (an allocated
/// type or a monitor's class under the code that allocated or waited):
/// its self weight in each of [`crate::Metric::EVENTS`] and its position in
/// each event's hot-node list. Kept beside the arena, reached from the
/// slot by index, so the contexts without events (nearly all) pay 4 bytes
/// for them, not 64. An edge's event weight is not stored: it equals the
/// context's cum (every event is recorded with its whole stack).
#[derive(Clone, Debug)]
pub(crate) struct EventSlot {
    pub(crate) node: [u64; EVENT_COUNT],
}

impl EventSlot {
    pub(crate) const EMPTY: EventSlot = EventSlot { node: [0; EVENT_COUNT] };
}

impl Slot {
    pub(crate) fn new(parent: u32, method: MethodId, call_site: i32, depth: u32, recursive: bool) -> Slot {
        Slot {
            parent,
            first_child: NIL,
            next_sibling: NIL,
            method,
            call_site,
            depth_flags: depth.min(DEPTH) | if recursive { RECURSIVE } else { 0 },
            node_link: Link::UNLISTED,
            edge_link: Link::UNLISTED,
            node_time: TimeWeight::ZERO,
            edge_time: TimeWeight::ZERO,
            events: NIL,
        }
    }
}

/// Flag bit of [`Slot::depth_flags`]: the method recurs above this node.
pub(crate) const RECURSIVE: u32 = 1 << 31;
/// The bits of [`Slot::depth_flags`] that hold the depth (deeper paths
/// say this depth: no stack is 16 million frames deep).
pub(crate) const DEPTH: u32 = (1 << 24) - 1;
/// Where [`Slot::depth_flags`] keeps the frame's kind (7 bits).
pub(crate) const KIND_SHIFT: u32 = 24;

impl Slot {
    pub(crate) fn depth(&self) -> u32 {
        self.depth_flags & DEPTH
    }

    pub(crate) fn kind(&self) -> FrameKind {
        FrameKind::from_u8(((self.depth_flags >> KIND_SHIFT) & 0x7F) as u8)
    }

    pub(crate) fn with_kind(mut self, kind: FrameKind) -> Slot {
        self.depth_flags = (self.depth_flags & !(0x7F << KIND_SHIFT)) | ((kind as u32) << KIND_SHIFT);
        self
    }

    /// Whether this is an outermost activation of its method on its path.
    pub(crate) fn is_outermost(&self) -> bool {
        self.depth_flags & RECURSIVE == 0
    }

    /// Whether this slot's edge is the call through `call_site` to
    /// `callee`'s method and kind: a child's identity under its parent
    /// (the callee's own bci is not part of it).
    pub(crate) fn is_call_to(&self, call_site: i32, callee: Frame) -> bool {
        self.method == callee.method && self.call_site == call_site && self.kind() == callee.kind
    }
}

/// Bytes one node plus its incoming edge take in the arena.
pub const BYTES_PER_NODE_AND_EDGE: usize = std::mem::size_of::<Slot>();

/// Bytes a context with event weights of its own (an allocation or
/// monitor site) takes beside the arena, on top of [`BYTES_PER_NODE_AND_EDGE`].
pub const BYTES_PER_EVENT_CONTEXT: usize = std::mem::size_of::<EventSlot>();
