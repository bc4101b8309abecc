//! The messages of pprof's `profile.proto` (package `perftools.profiles`),
//! transcribed field by field into structs that `prost` encodes and
//! decodes: no `protoc` at build time, no hand-written wire format. The
//! same schema is in `pprof.proto` beside this file, for tools that need
//! it as text (`protoc --decode perftools.profiles.Profile pprof.proto`).
//!
//! Strings are indices into [`Profile::string_table`], whose entry 0 is
//! the empty string; ids of locations and functions are nonzero.

/// A whole profile. Its encoding is the concatenation of its fields, so a
/// profile can also be written as a sequence of partial `Profile`s (one
/// per sample, location, function or string), which a decoder merges into
/// one: repeated fields append, in order (see [`super::pprof`]).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    /// What each value of a sample measures (`["cpu", "nanoseconds"]`).
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// Every string the profile uses; entry 0 is `""`.
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    #[prost(int64, tag = "8")]
    pub keep_frames: i64,
    /// When the profile's collection started, nanoseconds since the Unix epoch.
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    /// How long the collection lasted.
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    /// What is counted between two samples (`["cpu", "nanoseconds"]`).
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    /// How much of `period_type` lies between two samples.
    #[prost(int64, tag = "12")]
    pub period: i64,
    /// Free text (string indices).
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    /// The type (string index) of the sample value tools show first.
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
    #[prost(int64, tag = "15")]
    pub doc_url: i64,
}

/// The meaning of a value: a type and a unit, both string indices.
#[derive(Clone, Copy, PartialEq, Eq, Hash, prost::Message)]
pub struct ValueType {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// Values measured in one calling context.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// The stack, leaf first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// One value per [`Profile::sample_type`].
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    #[prost(int64, tag = "1")]
    pub key: i64,
    #[prost(int64, tag = "2")]
    pub str: i64,
    #[prost(int64, tag = "3")]
    pub num: i64,
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

/// An address range of a binary (unused for Java code, which has none).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Mapping {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    #[prost(int64, tag = "5")]
    pub filename: i64,
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

/// A place in the code: here, a method at a source line.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// Inlined functions first, the function they were inlined into last.
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
    #[prost(bool, tag = "5")]
    pub is_folded: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Line {
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    /// Source line; 0 when unknown.
    #[prost(int64, tag = "2")]
    pub line: i64,
    #[prost(int64, tag = "3")]
    pub column: i64,
}

/// A function: here, a Java method or a pcct pseudo-frame.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Human-readable name (`java.util.HashMap.get`).
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// The name as the system knows it (with the JVM descriptor).
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    /// Source file (`java/util/HashMap.java`).
    #[prost(int64, tag = "4")]
    pub filename: i64,
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}
