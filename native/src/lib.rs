//! # pcct-native — native frames for the sampler
//!
//! This crate gives the sampler the frames below the last Java frame (libjvm,
//! libc, JNI libraries) and the frames of the JVM's own threads:
//!
//! - [`modules`]: the process's executable mappings (`/proc/self/maps`), each
//!   loaded once from its ELF file: its base address and its unwind sections;
//!   [`Modules::refresh`] adds libraries loaded since and drops unmapped ones.
//! - [`unwind`]: the unwinder the signal handler calls ([`Unwinder::unwind`]),
//!   framehop over the modules' unwind tables, published as an immutable
//!   snapshot behind an atomic pointer; its caches ([`UnwindCache`],
//!   [`CachePool`]) are allocated ahead of time.
//! - [`symbols`]: address to library, function and offset, from the ELF symbol
//!   tables, C++ and Rust names demangled. Used off the handler only.
//!
//! It owns no thread, no signal and no timer. Its only entry point for a
//! signal handler is [`Unwinder::unwind`] (with [`CachePool::take`]): they
//! allocate nothing, take no lock and never panic; every other function
//! allocates and must never be called from a handler. It reads no memory a
//! handler gives it except through the handler's own reader (the sampler's
//! fault-safe reads), and only inside the stack bounds it is given.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod error;
pub mod modules;
pub mod symbols;
pub mod unwind;

pub use error::{NativeError, Result};
pub use modules::{Module, Modules, Refresh};
pub use symbols::{FunctionKey, Symbol, SymbolTable, Symbolizer};
pub use unwind::{CachePool, Ending, NativeWalk, Registers, StackBounds, UnwindCache, Unwinder};
