//! # pcct-jit — what HotSpot's JIT made of the hot edges, and what to ask of it
//!
//! Whaley built the PCCT to feed an optimising compiler: its hot edges say
//! which calls deserve inlining. This crate closes that loop for HotSpot:
//!
//! - [`tree`]: the inlining tree of one piece of compiled code, from the
//!   chains of scopes a JVMTI CompiledMethodLoad event reports;
//! - [`table`]: the current compiled code of every method, bounded and
//!   counted, forgetting code HotSpot replaced or unloaded;
//! - [`context`]: whether a call is inlined in the code that runs it, in
//!   one calling context (the code of an outer method that inlined the
//!   caller decides, not the caller's own code);
//! - [`profile`]: hot edges copied from a PCCT with their contexts, joined
//!   with the table;
//! - [`advice`]: hot edges not inlined, ranked, with what to do and why;
//! - [`directives`]: HotSpot compiler directives that ask C2 to inline them;
//! - [`events`]: what the JIT did to the code the table follows (compiled,
//!   not entrant, replaced, unloaded), a bounded ring;
//! - [`live`]: the table behind its lock, shared by the agent (which fills
//!   it from JVMTI), the HTTP server and the dump, with the queue of
//!   recompilation requests.
//!
//! Pure safe Rust: it knows HotSpot's vocabulary (compile levels, OSR,
//! directives) but never calls into a VM; the agent feeds it.

#![forbid(unsafe_code)]

pub mod advice;
pub mod context;
pub mod directives;
pub mod events;
pub mod inline_tree;
pub mod live;
pub mod profile;
pub mod table;
pub mod tree;

pub use advice::{Action, Advice, EdgeAdvice, InlineFlags, TopCompiler};
pub use context::{EdgeState, Inlined};
pub use live::{Jit, RecompileReport};
pub use table::{InlineTable, MethodKey};
