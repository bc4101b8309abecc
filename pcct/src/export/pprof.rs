//! pprof: the tree as a gzipped `profile.proto` (the messages are in
//! [`super::pprof_proto`]), the format `go tool pprof`, Grafana Pyroscope,
//! Parca and IDEs read.
//!
//! - **Samples:** one per calling context with a self weight (one per
//!   method in `tree=methods` mode), its stack leaf first; the root's own
//!   weight (samples without a frame) as a `[root]` frame, as collapsed
//!   stacks write it. The values are one per resource the tree records,
//!   in [`Metric::ALL`]'s order, typed by the metric's name (`cpu_ns` ->
//!   `cpu`/`nanoseconds`, `samples` -> `samples`/`count`).
//! - **Locations:** a method at a source line: a caller's line is that of
//!   the call site its callee was called from (the method's line table at
//!   the call's bytecode index); a leaf's is 0 (the tree keeps no leaf bci).
//!   One location per (method, line), shared by every sample.
//! - **Functions:** one per method: `name` is `class.method`,
//!   `system_name` adds the JVM descriptor, `filename` the source path
//!   (`java/util/HashMap.java`), `start_line` the first line of its table.
//!   A native function (`native=on`) is named by itself (`deflate`).
//! - **Frame kinds:** where the samples recorded them (`kinds=on`), each
//!   sample has a `frame_kinds` label: one letter per location, leaf
//!   first, async-profiler's annotation letters (`0` interpreted, `1` C1,
//!   `j` optimized, `i` inlined; `-` unknown), so `go tool pprof
//!   -tagfocus=frame_kinds=^0` keeps the samples whose leaf was
//!   interpreted.
//! - **Mappings:** one per library that native functions come from
//!   (`libz.so.1`, its `filename`), each native function's locations in
//!   it, as pprof groups code by the binary it is in.
//!
//! **Streaming.** A protobuf message is the concatenation of its fields,
//! and repeated fields may come in any order and are appended by the
//! decoder; so the profile is written as a sequence of partial `Profile`
//! messages (one per sample, location, function or string), each encoded
//! by `prost` and compressed as it goes. Memory beyond the tree: the
//! current path, and the tables of strings, functions and locations used.

use std::collections::HashMap;
use std::io::{self, Write};

use flate2::write::GzEncoder;
use flate2::Compression;
use prost::Message;

use super::pprof_proto::{Function, Label, Line, Location, Mapping, Profile, Sample, ValueType};
use super::ReportOptions;
use crate::method::{Builtin, MethodId, MethodKind, MethodTable};
use crate::slot::NodeId;
use crate::tree::{Pcct, TreeMode};
use crate::weight::{Metric, Weight};

/// What a profile says about itself besides its samples.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PprofContext {
    /// Time between two samples (the sampling interval), nanoseconds; 0: unknown.
    pub period_ns: u64,
    /// When the profile's collection started, nanoseconds since the Unix epoch; 0: unknown.
    pub time_nanos: i64,
    /// How long the collection lasted, nanoseconds; 0: unknown.
    pub duration_nanos: i64,
    /// Free text, such as a purge during a window.
    pub comments: Vec<String>,
}

impl PprofContext {
    /// The context of `tree` as it stands: collected from its last purge
    /// (or creation) until now, one sample every `period_ns`.
    pub fn of_tree(tree: &Pcct, period_ns: u64) -> PprofContext {
        let duration = tree.collecting_since().elapsed();
        PprofContext {
            period_ns,
            time_nanos: unix_nanos_before(duration),
            duration_nanos: clamp(duration.as_nanos() as u64),
            comments: Vec::new(),
        }
    }
}

/// Nanoseconds since the Unix epoch `ago` before now (0 if the clock is
/// before the epoch).
pub fn unix_nanos_before(ago: std::time::Duration) -> i64 {
    let now = std::time::SystemTime::now();
    let then = now.checked_sub(ago).unwrap_or(now);
    then.duration_since(std::time::UNIX_EPOCH).map_or(0, |since| clamp(since.as_nanos() as u64))
}

/// The pprof type and unit of `metric`, from its name: `<type>_ns` is
/// `<type>`/`nanoseconds`, `<type>_bytes` is `<type>`/`bytes`, anything
/// else counts (`samples`/`count`).
pub fn value_type(metric: Metric) -> (&'static str, &'static str) {
    let name = metric.name();
    if let Some(kind) = name.strip_suffix("_ns") {
        (kind, "nanoseconds")
    } else if let Some(kind) = name.strip_suffix("_bytes") {
        (kind, "bytes")
    } else {
        (name, "count")
    }
}

/// Writes the tree as a gzipped pprof profile: every context whose self
/// weight is positive in some resource, leaving out whole subtrees whose
/// cum in `options.metric` is below `options.min_cum_share` of the total
/// (as collapsed stacks do). `options.metric` is the default sample type
/// and the period's type.
pub fn write_to(
    out: &mut dyn Write,
    tree: &Pcct,
    methods: &MethodTable,
    options: &ReportOptions,
    context: &PprofContext,
) -> io::Result<()> {
    let mut writer = Writer::new(out, methods);
    writer.header(options.metric, context)?;
    match tree.config().mode {
        TreeMode::Pcct => writer.contexts(tree, options)?,
        TreeMode::HotMethods => writer.methods_only(tree)?,
    }
    writer.finish()
}

/// The tree as gzipped pprof bytes (see [`write_to`]).
pub fn write(tree: &Pcct, methods: &MethodTable, options: &ReportOptions, context: &PprofContext) -> Vec<u8> {
    let mut bytes = Vec::new();
    write_to(&mut bytes, tree, methods, options, context).expect("writing into memory cannot fail");
    bytes
}

/// Decodes a gzipped (or plain) pprof profile into one merged [`Profile`].
pub fn decode(bytes: &[u8]) -> io::Result<Profile> {
    let mut plain = Vec::new();
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        io::Read::read_to_end(&mut flate2::read::GzDecoder::new(bytes), &mut plain)?;
        &plain[..]
    } else {
        bytes
    };
    Profile::decode(bytes).map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error))
}

/// The encoder: the tables of what was written so far, and the stream.
struct Writer<'a> {
    out: GzEncoder<&'a mut dyn Write>,
    methods: &'a MethodTable,
    /// Reused encoding buffer.
    buffer: Vec<u8>,
    strings: HashMap<String, i64>,
    functions: HashMap<MethodId, u64>,
    locations: HashMap<(MethodId, i64), u64>,
    /// Native functions' libraries, by name.
    mappings: HashMap<String, u64>,
}

impl<'a> Writer<'a> {
    fn new(out: &'a mut dyn Write, methods: &'a MethodTable) -> Writer<'a> {
        Writer {
            out: GzEncoder::new(out, Compression::default()),
            methods,
            buffer: Vec::with_capacity(256),
            strings: HashMap::new(),
            functions: HashMap::new(),
            locations: HashMap::new(),
            mappings: HashMap::new(),
        }
    }

    /// Encodes one partial profile into the stream.
    fn emit(&mut self, part: Profile) -> io::Result<()> {
        self.buffer.clear();
        part.encode(&mut self.buffer).expect("a Vec grows as needed");
        self.out.write_all(&self.buffer)
    }

    /// The index of `text` in the string table, written there when new.
    fn string(&mut self, text: &str) -> io::Result<i64> {
        if let Some(&index) = self.strings.get(text) {
            return Ok(index);
        }
        let index = self.strings.len() as i64;
        self.strings.insert(text.to_string(), index);
        self.emit(Profile { string_table: vec![text.to_string()], ..Profile::default() })?;
        Ok(index)
    }

    fn value_type(&mut self, (kind, unit): (&str, &str)) -> io::Result<ValueType> {
        Ok(ValueType { r#type: self.string(kind)?, unit: self.string(unit)? })
    }

    fn header(&mut self, metric: Metric, context: &PprofContext) -> io::Result<()> {
        self.string("")?;
        let mut sample_type = Vec::with_capacity(Metric::ALL.len());
        for each in Metric::ALL {
            sample_type.push(self.value_type(value_type(each))?);
        }
        let period_type = self.value_type(value_type(metric))?;
        let mut comment = Vec::with_capacity(context.comments.len());
        for text in &context.comments {
            comment.push(self.string(text)?);
        }
        self.emit(Profile {
            sample_type,
            default_sample_type: period_type.r#type,
            period_type: Some(period_type),
            period: period(metric, context.period_ns),
            time_nanos: context.time_nanos,
            duration_nanos: context.duration_nanos,
            comment,
            ..Profile::default()
        })
    }

    /// The id of `method`'s function, written when new.
    fn function(&mut self, method: MethodId) -> io::Result<u64> {
        if let Some(&id) = self.functions.get(&method) {
            return Ok(id);
        }
        let info = self.methods.get(method);
        let display = info.display_name();
        let name = self.string(&display)?;
        let native = info.kind == MethodKind::Native;
        let system_name =
            if info.signature.is_empty() || native { name } else { self.string(&(display + &info.signature))? };
        let filename = match info.source_path() {
            Some(path) => self.string(&path)?,
            None => 0,
        };
        let start_line = info.lines.as_ref().and_then(|lines| lines.iter().map(|entry| entry.line).min());
        let id = self.functions.len() as u64 + 1;
        self.functions.insert(method, id);
        let function = Function { id, name, system_name, filename, start_line: start_line.map_or(0, i64::from) };
        self.emit(Profile { function: vec![function], ..Profile::default() })?;
        Ok(id)
    }

    /// The id of the location `method` at `line` (0: unknown), written when new.
    fn location(&mut self, method: MethodId, line: i64) -> io::Result<u64> {
        if let Some(&id) = self.locations.get(&(method, line)) {
            return Ok(id);
        }
        let function_id = self.function(method)?;
        let info = self.methods.get(method);
        let mapping_id = match info.kind {
            MethodKind::Native => self.mapping(&info.class)?,
            _ => 0,
        };
        let id = self.locations.len() as u64 + 1;
        self.locations.insert((method, line), id);
        let line = vec![Line { function_id, line, column: 0 }];
        let location = Location { id, mapping_id, line, ..Location::default() };
        self.emit(Profile { location: vec![location], ..Profile::default() })?;
        Ok(id)
    }

    /// The id of the mapping of `library` (a native function's), written
    /// when new.
    fn mapping(&mut self, library: &str) -> io::Result<u64> {
        if let Some(&id) = self.mappings.get(library) {
            return Ok(id);
        }
        let id = self.mappings.len() as u64 + 1;
        self.mappings.insert(library.to_string(), id);
        let filename = self.string(library)?;
        let mapping = Mapping { id, filename, has_functions: true, ..Mapping::default() };
        self.emit(Profile { mapping: vec![mapping], ..Profile::default() })?;
        Ok(id)
    }

    fn sample(&mut self, location_id: Vec<u64>, weight: &Weight, kinds: Option<&str>) -> io::Result<()> {
        let value = Metric::ALL.iter().map(|&metric| clamp(weight.get(metric))).collect();
        let label = match kinds {
            Some(kinds) => vec![Label { key: self.string(KINDS_LABEL)?, str: self.string(kinds)?, ..Label::default() }],
            None => Vec::new(),
        };
        self.emit(Profile { sample: vec![Sample { location_id, value, label }], ..Profile::default() })
    }

    /// One sample per context with a self weight, depth first.
    fn contexts(&mut self, tree: &Pcct, options: &ReportOptions) -> io::Result<()> {
        let metric = options.metric;
        let cum = (options.min_cum_share > 0.0).then(|| tree.cumulative());
        let threshold = options.threshold(&tree.total());
        let kept = |node: NodeId| cum.as_ref().is_none_or(|cum| cum[node.index()].get(metric) >= threshold);
        let root = tree.node_weight(NodeId::ROOT);
        if !root.is_zero() && kept(NodeId::ROOT) {
            let location = self.location(Builtin::Root.id(), 0)?;
            self.sample(vec![location], &root, None)?;
        }
        // `kinds`: the letter of each frame of the current path, root first.
        let mut kinds = String::new();
        // `path[d]`: the location of the frame at depth d + 1 as it calls
        // the next frame of the current path (its line is the call site's).
        let mut path: Vec<u64> = Vec::new();
        let mut stack: Vec<NodeId> = tree.children(NodeId::ROOT).filter(|&child| kept(child)).collect();
        while let Some(node) = stack.pop() {
            let depth = tree.depth(node);
            path.truncate(depth - 1);
            kinds.truncate(depth - 1);
            kinds.push(tree.kind(node).letter());
            if let Some(parent) = tree.parent(node).filter(|&parent| parent != NodeId::ROOT) {
                let caller = tree.method(parent);
                let line = self.methods.get(caller).line_of(tree.call_site(node)).map_or(0, i64::from);
                let location = self.location(caller, line)?;
                if let Some(last) = path.last_mut() {
                    *last = location;
                }
            }
            let weight = tree.node_weight(node);
            if !weight.is_zero() {
                let leaf = self.location(tree.method(node), 0)?;
                let stack_ids = std::iter::once(leaf).chain(path.iter().rev().copied()).collect();
                let known = kinds.bytes().any(|letter| letter != b'-');
                let letters: String = kinds.chars().rev().collect();
                self.sample(stack_ids, &weight, known.then_some(letters.as_str()))?;
            }
            path.push(0);
            stack.extend(tree.children(node).filter(|&child| kept(child)));
        }
        Ok(())
    }

    /// `tree=methods`: one sample per method, its self weight.
    fn methods_only(&mut self, tree: &Pcct) -> io::Result<()> {
        for (method, weight) in tree.top_methods_by_self(usize::MAX) {
            if !weight.is_zero() {
                let location = self.location(method, 0)?;
                self.sample(vec![location], &weight, None)?;
            }
        }
        Ok(())
    }

    fn finish(self) -> io::Result<()> {
        self.out.finish()?.flush()
    }
}

/// The key of a sample's frame kinds label.
const KINDS_LABEL: &str = "frame_kinds";

/// pprof's period (the amount of `metric` between two samples): the
/// sampling interval for the time resources, one for the sample count,
/// and unknown (0) for the event resources, whose sampling interval the
/// tree does not keep.
fn period(metric: Metric, period_ns: u64) -> i64 {
    match metric {
        Metric::CpuNs | Metric::WallNs => clamp(period_ns),
        Metric::Samples => 1,
        _ => 0,
    }
}

/// A weight as pprof's signed value (saturating).
fn clamp(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Frame, LineEntry, Marks, TreeConfig};

    fn text(profile: &Profile, index: i64) -> &str {
        &profile.string_table[index as usize]
    }

    /// Each sample as (frame names root first with their lines, values).
    fn stacks(profile: &Profile) -> Vec<(Vec<String>, Vec<i64>)> {
        let function = |id: u64| profile.function.iter().find(|f| f.id == id).unwrap();
        let location = |id: u64| profile.location.iter().find(|l| l.id == id).unwrap();
        let mut stacks: Vec<(Vec<String>, Vec<i64>)> = profile
            .sample
            .iter()
            .map(|sample| {
                let frames = sample
                    .location_id
                    .iter()
                    .rev()
                    .map(|&id| {
                        let line = &location(id).line[0];
                        format!("{}:{}", text(profile, function(line.function_id).name), line.line)
                    })
                    .collect();
                (frames, sample.value.clone())
            })
            .collect();
        stacks.sort();
        stacks
    }

    #[test]
    fn native_functions_are_located_in_a_mapping_per_library() {
        let mut methods = MethodTable::new();
        let main = methods.intern("app.Main", "main", "([Ljava/lang/String;)V");
        let jni = methods.intern_native("libzip.so", "Java_java_util_zip_Deflater_deflateBytesBytes");
        let deflate = methods.intern_native("libz.so.1", "deflate");
        let memcpy = methods.intern_native("libc.so.6", "memcpy");
        let mut tree = Pcct::new(TreeConfig::default()).unwrap();
        let mut marks = Marks::new();
        let weight = Weight { samples: 1, cpu_ns: 1000, ..Weight::ZERO };
        let stack = [Frame::new(main, 3), Frame::new(jni, -1), Frame::new(deflate, -1), Frame::new(memcpy, -1)];
        tree.record(&mut marks, &stack, weight).unwrap();
        let profile = decode(&write(&tree, &methods, &ReportOptions::default(), &PprofContext::default())).unwrap();
        let libraries: Vec<&str> = profile.mapping.iter().map(|m| text(&profile, m.filename)).collect();
        assert_eq!(libraries, ["libzip.so", "libz.so.1", "libc.so.6"]);
        for location in &profile.location {
            let function = profile.function.iter().find(|f| f.id == location.line[0].function_id).unwrap();
            let name = text(&profile, function.name);
            let mapping =
                profile.mapping.iter().find(|m| m.id == location.mapping_id).map(|m| text(&profile, m.filename));
            let expected = match name {
                "app.Main.main" => None,
                "deflate" => Some("libz.so.1"),
                "memcpy" => Some("libc.so.6"),
                _ => Some("libzip.so"),
            };
            assert_eq!(mapping, expected, "{name}");
            assert_eq!(
                text(&profile, function.system_name),
                if name == "app.Main.main" { "app.Main.main([Ljava/lang/String;)V" } else { name }
            );
        }
    }

    #[test]
    fn every_context_becomes_a_sample_with_its_call_sites_lines() {
        let mut methods = MethodTable::new();
        let main = methods.intern("app.Main", "main", "([Ljava/lang/String;)V");
        let work = methods.intern("app.Main", "work", "()V");
        methods.set_lines(main, vec![LineEntry { start_bci: 0, line: 10 }, LineEntry { start_bci: 5, line: 12 }]);
        methods.set_file(main, "Main.java");
        let mut tree = Pcct::new(TreeConfig::default()).unwrap();
        let mut marks = Marks::new();
        let weight = Weight { samples: 1, cpu_ns: 1000, wall_ns: 2000, ..Weight::ZERO };
        for stack in [vec![Frame::new(main, 1), Frame::new(work, 0)], vec![Frame::new(main, 7), Frame::new(work, 0)]] {
            tree.record(&mut marks, &stack, weight).unwrap();
        }
        tree.record(&mut marks, &[Frame::new(main, 7)], weight).unwrap();
        let context =
            PprofContext { period_ns: 1_000_000, duration_nanos: 5, comments: vec!["hi".into()], ..Default::default() };
        let bytes = write(&tree, &methods, &ReportOptions::default(), &context);
        assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzipped");
        let profile = decode(&bytes).unwrap();
        assert_eq!(profile.string_table[0], "");
        let types: Vec<(&str, &str)> =
            profile.sample_type.iter().map(|t| (text(&profile, t.r#type), text(&profile, t.unit))).collect();
        assert_eq!(types, Metric::ALL.map(value_type).to_vec());
        assert_eq!(types[0], ("samples", "count"));
        assert_eq!(text(&profile, profile.default_sample_type), "cpu");
        assert_eq!(profile.period, 1_000_000);
        assert_eq!(text(&profile, profile.period_type.unwrap().unit), "nanoseconds");
        assert_eq!(profile.duration_nanos, 5);
        assert_eq!(text(&profile, profile.comment[0]), "hi");
        assert_eq!(
            stacks(&profile),
            vec![
                (vec!["app.Main.main:0".to_string()], vec![1, 1000, 2000, 0, 0, 0, 0, 0, 0]),
                (
                    vec!["app.Main.main:10".to_string(), "app.Main.work:0".to_string()],
                    vec![1, 1000, 2000, 0, 0, 0, 0, 0, 0]
                ),
                (
                    vec!["app.Main.main:12".to_string(), "app.Main.work:0".to_string()],
                    vec![1, 1000, 2000, 0, 0, 0, 0, 0, 0]
                ),
            ]
        );
        let main_function = profile.function.iter().find(|f| text(&profile, f.name) == "app.Main.main").unwrap();
        assert_eq!(text(&profile, main_function.filename), "app/Main.java");
        assert_eq!(text(&profile, main_function.system_name), "app.Main.main([Ljava/lang/String;)V");
        assert_eq!(main_function.start_line, 10);
        // One location per (method, line), ids unique and nonzero.
        assert_eq!(profile.location.len(), 4);
        assert!(profile.location.iter().all(|l| l.id > 0) && profile.function.iter().all(|f| f.id > 0));
    }

    #[test]
    fn methods_mode_writes_one_sample_per_method_and_an_empty_tree_no_sample() {
        let methods = MethodTable::new();
        let tree = Pcct::new(TreeConfig::default()).unwrap();
        let profile = decode(&write(&tree, &methods, &ReportOptions::default(), &PprofContext::default())).unwrap();
        assert!(profile.sample.is_empty());
        let mut methods = MethodTable::new();
        let a = methods.intern("A", "a", "()V");
        let config = TreeConfig { mode: TreeMode::HotMethods, ..TreeConfig::default() };
        let mut tree = Pcct::new(config).unwrap();
        tree.record(&mut Marks::new(), &[Frame::new(a, 0), Frame::new(a, 1)], Weight::sample(5, 5)).unwrap();
        let profile = decode(&write(&tree, &methods, &ReportOptions::default(), &PprofContext::default())).unwrap();
        assert_eq!(stacks(&profile), vec![(vec!["A.a:0".to_string()], vec![1, 5, 5, 0, 0, 0, 0, 0, 0])]);
    }
}
