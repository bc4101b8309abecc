//! The inlining tree of one piece of compiled code, built from the chains
//! of scopes a CompiledMethodLoad event reports for its code positions.
//!
//! JVMTI's inline record (`jvmticmlr.h`) lists, for each code position with
//! debug information, the methods on the compile-time stack there and their
//! bytecode indices, innermost (the method whose bytecode the position
//! belongs to) first, the compiled method last. Two neighbours in a chain
//! are an inlined call: the outer method, at its bci, calls the inner one,
//! and the call is not a call in the machine code. Every chain is a path
//! from the root of the tree; the tree is the union of the paths: its nodes
//! are method activations inside the code, its edges the inlined calls.
//!
//! A call that is not inlined is a call instruction, and HotSpot describes
//! every call for deoptimisation: some position's chain ends in the
//! caller at the call's bci. So the tree also keeps, per node, the bcis at
//! which a chain ends (a bitmap per node): a call site with such a
//! position and no inlined child is a real call; a call site with neither
//! left no instruction at all (an inlined method optimised away, such as
//! an empty constructor, or a branch C2 pruned as never taken) and is no
//! call either.
//!
//! The builder works on the VM's own method ids (jmethodIDs, opaque
//! numbers here) so it can run before the methods are named; `finish`
//! renames them and sorts the edges, so a child is found by binary search.

use std::collections::{BTreeMap, BTreeSet};

/// The root node: the compiled method itself.
pub const ROOT: u32 = 0;

/// Why a chain of scopes was not added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainError {
    /// The chain had no scope.
    Empty,
    /// Its outermost method is not the compiled method.
    NotRooted,
}

/// Collects chains into a tree of at most `max_nodes` nodes; chains that
/// would grow it further are cut where they leave it (and `truncated` says so).
#[derive(Clone, Debug)]
pub struct TreeBuilder {
    root: u64,
    children: BTreeMap<(u32, i32, u64), u32>,
    /// Per node, a bitmap of the bcis where a chain ends.
    positions: BTreeMap<u32, Vec<u64>>,
    max_nodes: usize,
    truncated: bool,
}

/// Highest bci a position bitmap covers (a method's bytecode is at most 64 KiB).
const MAX_BCI: i32 = u16::MAX as i32;

impl TreeBuilder {
    pub fn new(root: u64, max_nodes: usize) -> TreeBuilder {
        TreeBuilder {
            root,
            children: BTreeMap::new(),
            positions: BTreeMap::new(),
            max_nodes: max_nodes.max(1),
            truncated: false,
        }
    }

    /// Adds one position's chain of (method, bci), innermost first, as
    /// JVMTI lists it.
    pub fn add_chain(&mut self, chain: &[(u64, i32)]) -> Result<(), ChainError> {
        let Some((&(outermost, mut call_bci), inner)) = chain.split_last() else { return Err(ChainError::Empty) };
        if outermost != self.root {
            return Err(ChainError::NotRooted);
        }
        let mut node = ROOT;
        for &(method, bci) in inner.iter().rev() {
            let next = self.children.len() as u32 + 1;
            node = match self.children.get(&(node, call_bci, method)) {
                Some(&child) => child,
                None if self.children.len() + 1 >= self.max_nodes => {
                    self.truncated = true;
                    return Ok(());
                }
                None => *self.children.entry((node, call_bci, method)).or_insert(next),
            };
            call_bci = bci;
        }
        if (0..=MAX_BCI).contains(&call_bci) {
            let (word, bit) = (call_bci as usize / 64, call_bci as usize % 64);
            let bits = self.positions.entry(node).or_default();
            if bits.len() <= word {
                bits.resize(word + 1, 0);
            }
            bits[word] |= 1 << bit;
        }
        Ok(())
    }

    /// The compiled method and every method inlined into it.
    pub fn methods(&self) -> BTreeSet<u64> {
        let mut methods: BTreeSet<u64> = self.children.keys().map(|&(_, _, method)| method).collect();
        methods.insert(self.root);
        methods
    }

    /// Whether chains were cut at `max_nodes`.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// Nodes so far, the root included.
    pub fn nodes(&self) -> usize {
        self.children.len() + 1
    }

    /// The tree with its methods renamed by `name`.
    pub fn finish(self, mut name: impl FnMut(u64) -> u32) -> CodeTree {
        let root = name(self.root);
        let mut edges: Vec<TreeEdge> = self
            .children
            .into_iter()
            .map(|((parent, bci, method), child)| TreeEdge { parent, bci, method: name(method), child })
            .collect();
        edges.sort_unstable_by_key(|edge| (edge.parent, edge.bci, edge.method));
        let mut positions = Vec::with_capacity(self.positions.len());
        let mut bits = Vec::new();
        for (node, words) in self.positions {
            positions.push((node, bits.len() as u32, words.len() as u32));
            bits.extend(words);
        }
        CodeTree {
            root,
            edges: edges.into_boxed_slice(),
            positions: positions.into_boxed_slice(),
            bits: bits.into_boxed_slice(),
        }
    }
}

/// One inlined call: `parent` calls `method` at `bci`, inlined as node `child`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TreeEdge {
    parent: u32,
    bci: i32,
    method: u32,
    child: u32,
}

/// A finished inlining tree: 16 bytes per inlined call, and a bit per bci
/// of each node's method up to its last position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeTree {
    root: u32,
    edges: Box<[TreeEdge]>,
    /// (node, first word in `bits`, words), by node.
    positions: Box<[(u32, u32, u32)]>,
    bits: Box<[u64]>,
}

impl CodeTree {
    /// The compiled method.
    pub fn root(&self) -> u32 {
        self.root
    }

    /// The node of `method` inlined at `bci` of node `node`, if it is.
    pub fn child(&self, node: u32, bci: i32, method: u32) -> Option<u32> {
        let key = (node, bci, method);
        self.edges
            .binary_search_by_key(&key, |edge| (edge.parent, edge.bci, edge.method))
            .ok()
            .map(|index| self.edges[index].child)
    }

    /// Whether some code position's chain ends at `bci` of node `node`
    /// (where a call that is not inlined always has one).
    pub fn has_position(&self, node: u32, bci: i32) -> bool {
        let Ok(index) = self.positions.binary_search_by_key(&node, |&(at, _, _)| at) else { return false };
        let (_, start, words) = self.positions[index];
        let Ok(bci) = usize::try_from(bci) else { return false };
        let word = bci / 64;
        word < words as usize && self.bits[start as usize + word] & (1 << (bci % 64)) != 0
    }

    /// The calls inlined into node `node`: (bci, method, child node), by bci.
    pub fn children(&self, node: u32) -> impl Iterator<Item = (i32, u32, u32)> + '_ {
        let start = self.edges.partition_point(|edge| edge.parent < node);
        self.edges[start..]
            .iter()
            .take_while(move |edge| edge.parent == node)
            .map(|edge| (edge.bci, edge.method, edge.child))
    }

    /// Inlined calls in the tree.
    pub fn inlined_calls(&self) -> usize {
        self.edges.len()
    }

    /// About how many bytes the tree holds.
    pub fn bytes(&self) -> usize {
        self.edges.len() * std::mem::size_of::<TreeEdge>() + self.positions.len() * 12 + self.bits.len() * 8
    }

    /// Every method inlined at least once.
    pub fn inlined_methods(&self) -> impl Iterator<Item = u32> + '_ {
        self.edges.iter().map(|edge| edge.method)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// main -> loop @ 5, loop -> leaf @ 9 at one position, loop alone at another.
    fn main_loop_leaf() -> CodeTree {
        let mut builder = TreeBuilder::new(100, 64);
        builder.add_chain(&[(300, 2), (200, 9), (100, 5)]).unwrap();
        builder.add_chain(&[(200, 11), (100, 5)]).unwrap();
        builder.add_chain(&[(100, 7)]).unwrap();
        builder.finish(|id| id as u32 / 100)
    }

    #[test]
    fn neighbours_in_a_chain_are_inlined_calls_at_the_outer_bci() {
        let tree = main_loop_leaf();
        assert_eq!(tree.root(), 1);
        let loop_node = tree.child(ROOT, 5, 2).expect("loop inlined at main@5");
        assert!(tree.child(loop_node, 9, 3).is_some(), "leaf inlined at loop@9");
        assert_eq!(tree.child(loop_node, 11, 3), None, "bci 11 is a position in loop, not a call");
        assert_eq!(tree.child(ROOT, 7, 2), None);
        assert_eq!(tree.inlined_calls(), 2);
        assert!(tree.has_position(loop_node, 11) && tree.has_position(ROOT, 7));
        assert!(!tree.has_position(ROOT, 5), "bci 5 is inlined, no position of main's own");
        assert!(!tree.has_position(loop_node, 9) && !tree.has_position(99, 0) && !tree.has_position(ROOT, 700));
        assert_eq!(tree.children(ROOT).collect::<Vec<_>>(), vec![(5, 2, loop_node)]);
        let leaf = tree.child(loop_node, 9, 3).unwrap();
        assert_eq!(tree.children(loop_node).collect::<Vec<_>>(), vec![(9, 3, leaf)]);
        assert_eq!(tree.children(leaf).count(), 0);
    }

    #[test]
    fn chains_of_another_method_or_none_are_refused() {
        let mut builder = TreeBuilder::new(100, 64);
        assert_eq!(builder.add_chain(&[]), Err(ChainError::Empty));
        assert_eq!(builder.add_chain(&[(200, 1), (999, 3)]), Err(ChainError::NotRooted));
        assert_eq!(builder.nodes(), 1);
    }

    #[test]
    fn the_tree_stops_growing_at_its_bound() {
        let mut builder = TreeBuilder::new(1, 3);
        for callee in 2..10u64 {
            builder.add_chain(&[(callee, 0), (1, callee as i32)]).unwrap();
        }
        assert!(builder.truncated());
        assert_eq!(builder.nodes(), 3);
        assert_eq!(builder.finish(|id| id as u32).inlined_calls(), 2);
    }

    #[test]
    fn the_same_call_reached_twice_is_one_node() {
        let mut builder = TreeBuilder::new(1, 64);
        builder.add_chain(&[(2, 0), (1, 4)]).unwrap();
        builder.add_chain(&[(2, 3), (1, 4)]).unwrap();
        assert_eq!(builder.nodes(), 2);
        assert_eq!(builder.methods().into_iter().collect::<Vec<_>>(), vec![1, 2]);
    }
}
