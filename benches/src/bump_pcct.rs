//! pcct's first design of the arena: nodes and edges as separate structs in a
//! `bumpalo::Bump`, linked by `&'bump` references in `Cell`s (Whaley Figure
//! 8 literally). Only what the update benchmark needs: the marked-frame
//! update and the incrementally sorted node and edge lists. It exists to
//! measure the typed-index arena of the `pcct` crate against; it is not used
//! by the product.

use std::cell::Cell;

use bumpalo::Bump;
use pcct::{Frame, MethodId, Weight};

pub struct Node<'a> {
    pub method: MethodId,
    pub parent: Cell<Option<&'a Edge<'a>>>,
    pub children: Cell<Option<&'a Edge<'a>>>,
    pub prev: Cell<Option<&'a Node<'a>>>,
    pub next: Cell<Option<&'a Node<'a>>>,
    pub time: Cell<Weight>,
}

pub struct Edge<'a> {
    pub from: &'a Node<'a>,
    pub to: &'a Node<'a>,
    pub next_edge: Cell<Option<&'a Edge<'a>>>,
    pub prev: Cell<Option<&'a Edge<'a>>>,
    pub next: Cell<Option<&'a Edge<'a>>>,
    pub offset: i32,
    pub weight: Cell<Weight>,
}

/// Bytes of one node plus its incoming edge in this layout.
pub const BYTES_PER_NODE_AND_EDGE: usize = std::mem::size_of::<Node<'static>>() + std::mem::size_of::<Edge<'static>>();

pub struct BumpPcct<'a> {
    bump: &'a Bump,
    pub root: &'a Node<'a>,
    node_head: Cell<Option<&'a Node<'a>>>,
    edge_head: Cell<Option<&'a Edge<'a>>>,
}

/// A thread's marks: its previous stack and the node of each frame.
#[derive(Default)]
pub struct BumpMarks<'a> {
    frames: Vec<Frame>,
    nodes: Vec<&'a Node<'a>>,
}

impl<'a> BumpMarks<'a> {
    pub fn clear(&mut self) {
        self.frames.clear();
        self.nodes.clear();
    }
}

fn key(weight: &Weight) -> u64 {
    weight.cpu_ns
}

impl<'a> BumpPcct<'a> {
    pub fn new(bump: &'a Bump) -> BumpPcct<'a> {
        let root = bump.alloc(Node {
            method: MethodId(0),
            parent: Cell::new(None),
            children: Cell::new(None),
            prev: Cell::new(None),
            next: Cell::new(None),
            time: Cell::new(Weight::ZERO),
        });
        BumpPcct { bump, root, node_head: Cell::new(None), edge_head: Cell::new(None) }
    }

    fn new_node(&self, method: MethodId) -> &'a Node<'a> {
        self.bump.alloc(Node {
            method,
            parent: Cell::new(None),
            children: Cell::new(None),
            prev: Cell::new(None),
            next: Cell::new(None),
            time: Cell::new(Weight::ZERO),
        })
    }

    fn child(&self, from: &'a Node<'a>, offset: i32, method: MethodId, search: bool) -> &'a Edge<'a> {
        if search {
            let mut edge = from.children.get();
            while let Some(found) = edge {
                if found.to.method == method && found.offset == offset {
                    return found;
                }
                edge = found.next_edge.get();
            }
        }
        let to = self.new_node(method);
        let edge = self.bump.alloc(Edge {
            from,
            to,
            next_edge: Cell::new(from.children.get()),
            prev: Cell::new(None),
            next: Cell::new(None),
            offset,
            weight: Cell::new(Weight::ZERO),
        });
        to.parent.set(Some(edge));
        from.children.set(Some(edge));
        // New edges enter the sorted list at the head's end only when heavy;
        // keep them unlisted until their first weight (handled by `raise_edge`).
        edge
    }

    /// `update_sorted_pos` for nodes: move toward the head past lighter ones.
    fn raise_node(&self, node: &'a Node<'a>) {
        let listed = node.prev.get().is_some() || self.node_head.get().is_some_and(|head| std::ptr::eq(head, node));
        if !listed {
            // Insert at the head; the walk below would otherwise be O(n) for new nodes.
            node.next.set(self.node_head.get());
            if let Some(head) = self.node_head.get() {
                head.prev.set(Some(node));
            }
            self.node_head.set(Some(node));
        }
        let weight = key(&node.time.get());
        while let Some(next) = node.next.get() {
            if key(&next.time.get()) <= weight {
                break;
            }
            // node is lighter than its successor: swap them.
            let prev = node.prev.get();
            let after = next.next.get();
            match prev {
                Some(p) => p.next.set(Some(next)),
                None => self.node_head.set(Some(next)),
            }
            next.prev.set(prev);
            next.next.set(Some(node));
            node.prev.set(Some(next));
            node.next.set(after);
            if let Some(a) = after {
                a.prev.set(Some(node));
            }
        }
        while let Some(prev) = node.prev.get() {
            if key(&prev.time.get()) >= weight {
                break;
            }
            let before = prev.prev.get();
            let after = node.next.get();
            match before {
                Some(b) => b.next.set(Some(node)),
                None => self.node_head.set(Some(node)),
            }
            node.prev.set(before);
            node.next.set(Some(prev));
            prev.prev.set(Some(node));
            prev.next.set(after);
            if let Some(a) = after {
                a.prev.set(Some(prev));
            }
        }
    }

    fn raise_edge(&self, edge: &'a Edge<'a>) {
        let listed = edge.prev.get().is_some() || self.edge_head.get().is_some_and(|head| std::ptr::eq(head, edge));
        if !listed {
            edge.next.set(self.edge_head.get());
            if let Some(head) = self.edge_head.get() {
                head.prev.set(Some(edge));
            }
            self.edge_head.set(Some(edge));
        }
        let weight = key(&edge.weight.get());
        while let Some(prev) = edge.prev.get() {
            if key(&prev.weight.get()) >= weight {
                break;
            }
            let before = prev.prev.get();
            let after = edge.next.get();
            match before {
                Some(b) => b.next.set(Some(edge)),
                None => self.edge_head.set(Some(edge)),
            }
            edge.prev.set(before);
            edge.next.set(Some(prev));
            prev.prev.set(Some(edge));
            prev.next.set(after);
            if let Some(a) = after {
                a.prev.set(Some(prev));
            }
        }
    }

    /// The marked-frame update of the `pcct` crate, on references.
    pub fn record(&self, marks: &mut BumpMarks<'a>, stack: &[Frame], weight: Weight) {
        let common = marks.frames.len().min(stack.len());
        let mut marked = match marks.frames[..common].iter().zip(&stack[..common]).position(|(a, b)| a != b) {
            None => common,
            Some(i) if marks.frames[i].method == stack[i].method => i + 1,
            Some(i) => i,
        };
        marked = marked.min(marks.nodes.len());
        let mut node = if marked > 0 { marks.nodes[marked - 1] } else { self.root };
        marks.frames.truncate(marked);
        marks.nodes.truncate(marked);
        if marked > 0 {
            marks.frames[marked - 1] = stack[marked - 1];
        }
        let mut search = true;
        for index in marked..stack.len() {
            let offset = if index == 0 { -1 } else { stack[index - 1].bci };
            let edge = self.child(node, offset, stack[index].method, search);
            if edge.weight.get().is_zero() {
                search = false;
            }
            edge.weight.set(edge.weight.get().plus(&weight));
            self.raise_edge(edge);
            node = edge.to;
            marks.frames.push(stack[index]);
            marks.nodes.push(node);
        }
        node.time.set(node.time.get().plus(&weight));
        self.raise_node(node);
    }
}
