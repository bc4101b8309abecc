//! Benchmark support: synthetic stacks and trees shared by the criterion
//! benches, and [`bump_pcct`], the bumpalo-arena variant of the update that
//! the typed-index arena of the `pcct` crate was measured against.

#![forbid(unsafe_code)]

pub mod bump_pcct;
pub mod synthetic;
