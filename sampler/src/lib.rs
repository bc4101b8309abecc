//! # pcct-sampler — signals, timers, stack capture and the thread registry
//!
//! This crate owns all of pcct's signal-handling and raw-memory code and
//! the sampler thread's loop (Whaley's Figure 4, on HotSpot):
//!
//! - [`timer`]: the busy-wait timer (absolute deadlines, adaptive spin).
//! - [`doorbell`]: how handlers, registration, control and queries wake
//!   the sampler thread before its next batch.
//! - [`slots`]: the fixed table of thread slots, one mailbox per thread
//!   between its signal handler and the sampler.
//! - [`handler`]: the signal handler — async-signal-safe, its rules are its
//!   module documentation (public only for [`handler::encode`]).
//! - [`registers`]: the register checksum (HPROF's ThreadHasRun).
//! - [`tsc`]: the processor's counter, the clock of a timer's handler.
//! - [`cycles`]: where the handler's time goes, counted only in a build
//!   with the `cycles` feature (for benchmarks).
//! - [`agct`]: AsyncGetCallTrace's types and result codes.
//! - [`native_frames`]: native frames (`native=on`): the unwinder the
//!   handler calls (`pcct-native`) and the names of native code.
//! - [`kernel_frames`]: kernel frames (`kernel=on`): the call chains the
//!   threads' timers record, read by the handler, named from kallsyms.
//! - [`sampler`]: the loop: drain, resolve names, update the PCCT through
//!   each thread's marked frames, choose and signal threads.
//! - [`named_stack`]: each thread's previous stack, raw and named, so only
//!   the frames a sample does not share with it are named.
//! - [`shared`]: what the agent and the HTTP server read (profile, counters,
//!   recent samples, run-time control).
//! - [`events`]: allocations and monitor waits the agent's JVMTI callbacks
//!   report, queued (lock-free, bounded) for the sampler to record.
//! - [`event_stacks`]: each thread's previous event stack, so an event
//!   carries only the frames new since then.
//! - [`thread_kinds`]: the root (`[GC]`, `[C2 CompilerThread]`, ...) of the
//!   samples of threads that run no Java code, by their kernel names.
//! - [`heap`]: the counting allocator the agent library installs, so pcct
//!   can say how much heap it holds.
//!
//! It must never: allocate, lock or log in the signal handler; hold a slot
//! in the DRAINING state across anything slower than a copy; call into the
//! VM except through the [`resolve::MethodResolver`] the agent provides.

#![deny(unsafe_op_in_unsafe_fn)]
// The module docs explain the internals (the slot's state machine, the
// handler's rules) and link to the private items that carry them out:
// `cargo doc --document-private-items` resolves those links.
#![allow(rustdoc::private_intra_doc_links)]

pub mod agct;
pub mod config;
pub mod counters;
pub mod cpu_timer;
pub mod cycles;
pub mod doorbell;
mod error;
pub mod event_stacks;
pub mod events;
pub mod handler;
pub mod heap;
pub mod hotspot;
pub mod kernel_frames;
pub mod live_heap;
mod named_stack;
pub mod native_frames;
pub mod recent;
pub mod registers;
pub mod resolve;
pub mod sampler;
pub mod shared;
pub mod signal;
pub mod slots;
#[cfg(test)]
mod test_alloc;
pub mod thread_kinds;
pub mod thread_names;
pub mod timer;
pub mod tsc;

pub use config::{Mode, SamplerConfig, TimerSource};
pub use error::{Result, SamplerError};
pub use sampler::Sampler;
pub use shared::{Profile, Shared};
