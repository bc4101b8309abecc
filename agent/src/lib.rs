//! # pcct-agent — the JVMTI agent `libpcct_agent.so`
//!
//! Owns JVMTI, the agent options and the exported entry points
//! (`Agent_OnLoad`, `Agent_OnAttach`, `Agent_OnUnload`). It sets up the
//! sampler (crate `pcct-sampler`), feeds it threads (ThreadStart/End, the
//! main thread at VMInit, running threads on attach) and method ids
//! (ClassPrepare, a sweep of loaded classes), names methods for it with
//! JVMTI on the sampler thread, hands it sampled allocations and contended
//! monitor enters (`events.rs`), starts the HTTP server, feeds the inline
//! table (`pcct-jit`) from CompiledMethodLoad/Unload and runs its JIT
//! thread (`jit.rs`), and writes the profile at VM death.
//!
//! It must never let a panic unwind into the VM (every entry point and
//! callback runs inside `console::guard`), block the VM's exit for more
//! than a few seconds, or do slow work in `Agent_OnAttach` (the class sweep
//! and thread discovery run on the sampler thread).
//!
//! JVMTI bindings are generated from the JDK's `jvmti.h` with bindgen and
//! committed (`jvmti_sys.rs`, `agent/bindgen/`): the `jvmti-sys` 0.1.0 crate
//! declares error and event codes as Rust enums (a code it does not list,
//! which newer JDKs return, would be undefined behaviour) and stops at
//! JVMTI 1.2.

#![deny(unsafe_op_in_unsafe_fn)]

mod agent;
mod callbacks;
mod classes;
mod cmlr;
mod console;
mod dump;
mod entry;
mod events;
mod jit;
mod jvmti;
mod live_heap;
#[rustfmt::skip]
#[allow(clippy::all, unsafe_op_in_unsafe_fn)]
mod jvmti_sys;
pub mod options;
mod parks;
mod resolver;
mod serve;
mod summary;
mod threads;
mod walker;

/// Every allocation of the agent's Rust code is counted (`pcct_sampler::heap`):
/// `/api/status`, `/metrics` and the dump say how much heap pcct holds.
#[global_allocator]
static HEAP: pcct_sampler::heap::CountingAllocator = pcct_sampler::heap::CountingAllocator;
