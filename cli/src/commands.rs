//! The subcommands.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use lexopt::prelude::*;
use pcct::export::{self, json, pprof, Format, ReportOptions};
use pcct::Metric;

use crate::{input, locate, summary};

#[derive(Debug)]
pub(crate) enum Failure {
    Usage(String),
    Failed(String),
    Help,
}

impl From<lexopt::Error> for Failure {
    fn from(error: lexopt::Error) -> Failure {
        Failure::Usage(error.to_string())
    }
}

pub(crate) fn failed(message: impl Into<String>) -> Failure {
    Failure::Failed(message.into())
}

const DEMO_SOURCE: &str = include_str!("../../demo/Demo.java");

pub fn dispatch(args: Vec<OsString>) -> Result<(), Failure> {
    let mut parser = lexopt::Parser::from_args(args);
    let command = match parser.next()? {
        Some(Value(command)) => command.string()?,
        Some(Long("help")) | Some(Short('h')) | None => return Err(Failure::Help),
        Some(other) => return Err(Failure::Usage(other.unexpected().to_string())),
    };
    match command.as_str() {
        "demo" => demo(parser),
        "run" => run(parser),
        "attach" => attach(parser),
        "report" => report(parser),
        "correlate" => correlate(parser),
        "diff" => diff(parser),
        "import-stacks" => import_stacks(parser),
        "advise" => crate::advise::advise(parser),
        "help" => Err(Failure::Help),
        other => Err(Failure::Usage(format!("unknown command `{other}`"))),
    }
}

fn parse_metric(text: &str) -> Result<Metric, Failure> {
    Metric::parse(text)
        .ok_or_else(|| Failure::Usage(format!("--resource must be one of {}, not `{text}`", Metric::accepted())))
}

fn parse_max_input(parser: &mut lexopt::Parser) -> Result<u64, Failure> {
    input::parse_size(&parser.value()?.string()?).map_err(Failure::Usage)
}

/// Reads a JSON profile as it parses it, at most `limit` bytes.
fn read_profile(path: &Path, limit: u64) -> Result<(pcct::Pcct, pcct::MethodTable), Failure> {
    read_profile_and_collection(path, limit).map(|(tree, methods, _)| (tree, methods))
}

/// [`read_profile`], with how the profile was collected when the agent said.
fn read_profile_and_collection(
    path: &Path,
    limit: u64,
) -> Result<(pcct::Pcct, pcct::MethodTable, Option<json::Collection>), Failure> {
    let cannot_read = |e: &dyn std::fmt::Display| failed(format!("cannot read {}: {e}", path.display()));
    let reader = input::open(path, limit).map_err(|e| cannot_read(&e))?;
    let profile = json::parse_from(reader).map_err(|e| {
        if e.is_io() {
            return cannot_read(&e);
        }
        failed(format!("{} is not a pcct JSON profile (write one with file=<path>.json): {e}", path.display()))
    })?;
    let (tree, methods) = json::import(&profile).map_err(|e| failed(format!("{}: {e}", path.display())))?;
    Ok((tree, methods, profile.collection))
}

/// Runs `write` on standard output through a buffer, as it goes. A reader
/// that stops early (`pcct report ... | head`) ends the output quietly.
fn print_with(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<(), Failure> {
    let mut out = BufWriter::new(io::stdout().lock());
    match write(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(failed(format!("cannot write the output: {e}"))),
        _ => Ok(()),
    }
}

/// Runs `java` with the agent and prints the summary of what it wrote.
fn profile_java(
    agent: &Path,
    java: &Path,
    options: &str,
    out: &Path,
    java_args: &[OsString],
    working_dir: Option<&Path>,
) -> Result<(), Failure> {
    let mut agent_options = format!("file={}", out.display());
    if !options.is_empty() {
        agent_options = format!("{options},{agent_options}");
    }
    let mut command = Command::new(java);
    command.arg(format!("-agentpath:{}={agent_options}", agent.display())).args(java_args);
    if let Some(dir) = working_dir {
        command.current_dir(dir);
    }
    let status = command.status().map_err(|e| failed(format!("cannot run {}: {e}", java.display())))?;
    if !status.success() {
        return Err(failed(format!("java exited with {status}")));
    }
    let (tree, methods) = read_profile(out, input::DEFAULT_LIMIT)?;
    let metric = tree.config().metric;
    print_with(|out| {
        writeln!(out)?;
        summary::write_to(out, &tree, &methods, 12, metric)
    })
}

fn demo(mut parser: lexopt::Parser) -> Result<(), Failure> {
    let (mut seconds, mut interval, mut java, mut agent, mut keep) = (10u32, "1ms".to_string(), None, None, false);
    while let Some(arg) = parser.next()? {
        match arg {
            Long("seconds") => seconds = parser.value()?.parse()?,
            Long("interval") => interval = parser.value()?.string()?,
            Long("java") => java = Some(PathBuf::from(parser.value()?)),
            Long("agent") => agent = Some(PathBuf::from(parser.value()?)),
            Long("keep") => keep = true,
            other => return Err(Failure::Usage(other.unexpected().to_string())),
        }
    }
    let agent = locate::agent(agent.as_deref()).map_err(failed)?;
    let java = java.unwrap_or_else(|| locate::jdk_tool("java"));
    let javac = java.with_file_name("javac");
    let javac = if javac.exists() { javac } else { locate::jdk_tool("javac") };
    let dir = locate::temp_dir("demo").map_err(failed)?;
    std::fs::write(dir.join("Demo.java"), DEMO_SOURCE).map_err(|e| failed(format!("cannot write the demo: {e}")))?;
    let status = Command::new(&javac)
        .args(["-d", "."])
        .arg("Demo.java")
        .current_dir(&dir)
        .status()
        .map_err(|e| failed(format!("cannot run {} (is a JDK installed?): {e}", javac.display())))?;
    if !status.success() {
        return Err(failed("javac failed on the demo"));
    }
    println!(
        "pcct demo: profiling demo/Demo.java for {seconds} s at a {interval} interval \
         (2 busy workers, a reporter, a sleeper); live at the address the agent prints"
    );
    let out = dir.join("demo.json");
    let options = format!("interval={interval}");
    let result = profile_java(
        &agent,
        &java,
        &options,
        &out,
        &["-cp".into(), ".".into(), "Demo".into(), seconds.to_string().into()],
        Some(&dir),
    );
    if keep {
        println!("The profile is in {} (pcct report {} --format xarc)", out.display(), out.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

fn run(mut parser: lexopt::Parser) -> Result<(), Failure> {
    let (mut options, mut out, mut java, mut agent) = (String::new(), None, None, None);
    let mut java_args = Vec::new();
    while let Some(arg) = parser.next()? {
        match arg {
            Long("options") => options = parser.value()?.string()?,
            Long("out") => out = Some(PathBuf::from(parser.value()?)),
            Long("java") => java = Some(PathBuf::from(parser.value()?)),
            Long("agent") => agent = Some(PathBuf::from(parser.value()?)),
            Value(value) => {
                java_args.push(value);
                java_args.extend(parser.raw_args()?);
            }
            other => return Err(Failure::Usage(other.unexpected().to_string())),
        }
    }
    if java_args.is_empty() {
        return Err(Failure::Usage("run needs the java arguments after --".to_string()));
    }
    let agent = locate::agent(agent.as_deref()).map_err(failed)?;
    let java = java.unwrap_or_else(|| locate::jdk_tool("java"));
    let out = out.unwrap_or_else(|| PathBuf::from(format!("pcct-{}.json", std::process::id())));
    let out = if out.is_absolute() { out } else { std::env::current_dir().map(|d| d.join(&out)).unwrap_or(out) };
    profile_java(&agent, &java, &options, &out, &java_args, None)?;
    println!("Profile written to {}", out.display());
    Ok(())
}

fn attach(mut parser: lexopt::Parser) -> Result<(), Failure> {
    let (mut pid, mut options, mut jcmd, mut agent) = (None, String::new(), None, None);
    while let Some(arg) = parser.next()? {
        match arg {
            Long("options") => options = parser.value()?.string()?,
            Long("jcmd") => jcmd = Some(PathBuf::from(parser.value()?)),
            Long("agent") => agent = Some(PathBuf::from(parser.value()?)),
            Value(value) if pid.is_none() => pid = Some(value.parse::<u32>()?),
            other => return Err(Failure::Usage(other.unexpected().to_string())),
        }
    }
    let pid = pid.ok_or_else(|| Failure::Usage("attach needs the JVM's pid".to_string()))?;
    let agent = locate::agent(agent.as_deref()).map_err(failed)?;
    // jcmd cuts its arguments at '=': send the key:value;key:value form.
    let options = options.replace('=', ":").replace(',', ";");
    let jcmd = jcmd.unwrap_or_else(|| locate::jdk_tool("jcmd"));
    let output = Command::new(&jcmd)
        .arg(pid.to_string())
        .arg("JVMTI.agent_load")
        .arg(&agent)
        .arg(&options)
        .output()
        .map_err(|e| failed(format!("cannot run {}: {e}", jcmd.display())))?;
    let text = String::from_utf8_lossy(&output.stdout);
    print!("{text}");
    eprint!("{}", String::from_utf8_lossy(&output.stderr));
    if !output.status.success() || text.contains("return code: -") || text.contains("error") {
        return Err(failed(format!("attaching to {pid} failed (the JVM's standard error says why)")));
    }
    Ok(())
}

fn report(mut parser: lexopt::Parser) -> Result<(), Failure> {
    let (mut path, mut format, mut top, mut min_share, mut metric) =
        (None, "summary".to_string(), 15usize, 0.0f64, None);
    let mut limit = input::DEFAULT_LIMIT;
    while let Some(arg) = parser.next()? {
        match arg {
            Long("max-input") => limit = parse_max_input(&mut parser)?,
            Long("format") => format = parser.value()?.string()?,
            Long("top") => top = parser.value()?.parse()?,
            Long("min-share") => min_share = parser.value()?.parse()?,
            Long("resource") | Long("metric") => metric = Some(parse_metric(&parser.value()?.string()?)?),
            Value(value) if path.is_none() => path = Some(PathBuf::from(value)),
            other => return Err(Failure::Usage(other.unexpected().to_string())),
        }
    }
    let path =
        path.ok_or_else(|| Failure::Usage("report needs a profile written with file=<path>.json".to_string()))?;
    let format = match format.as_str() {
        "summary" => None,
        _ => Some(Format::parse(&format).ok_or_else(|| {
            let formats: Vec<&str> = Format::ALL.iter().map(|format| format.name()).collect();
            Failure::Usage(format!("--format must be summary or one of {}, not `{format}`", formats.join(", ")))
        })?),
    };
    if format.is_some_and(|format| !format.is_text()) && io::stdout().is_terminal() {
        return Err(Failure::Usage("pprof is binary: send it to a file (`> profile.pb.gz`)".to_string()));
    }
    let (tree, methods, collection) = read_profile_and_collection(&path, limit)?;
    let metric = metric.unwrap_or(tree.config().metric);
    let options = ReportOptions { metric, min_cum_share: min_share.clamp(0.0, 1.0), annotate: false };
    print_with(|out| match format {
        None => summary::write_to(out, &tree, &methods, top, metric),
        Some(Format::Pprof) => {
            let context = collection.map_or_else(Default::default, |collection| pprof::PprofContext {
                period_ns: collection.interval_ns,
                time_nanos: collection.started_unix_ns,
                duration_nanos: collection.duration_ns,
                comments: Vec::new(),
            });
            pprof::write_to(out, &tree, &methods, &options, &context)
        }
        Some(format) => export::write_to(out, format, &tree, &methods, &options),
    })
}

fn correlate(mut parser: lexopt::Parser) -> Result<(), Failure> {
    let mut paths = Vec::new();
    let mut metric = Metric::Samples;
    let mut limit = input::DEFAULT_LIMIT;
    while let Some(arg) = parser.next()? {
        match arg {
            Long("max-input") => limit = parse_max_input(&mut parser)?,
            Long("resource") | Long("metric") => metric = parse_metric(&parser.value()?.string()?)?,
            Value(value) => paths.push(PathBuf::from(value)),
            other => return Err(Failure::Usage(other.unexpected().to_string())),
        }
    }
    let [a, b] = paths.as_slice() else {
        return Err(Failure::Usage("correlate needs exactly two profiles".to_string()));
    };
    let (tree_a, methods_a) = read_profile(a, limit)?;
    let (tree_b, methods_b) = read_profile(b, limit)?;
    use pcct::correlation::{context_profile, correlate, method_profile, real_method_profile, ContextKeys};
    let per_method =
        correlate(&method_profile(&tree_a, &methods_a, metric), &method_profile(&tree_b, &methods_b, metric));
    let mut keys = ContextKeys::new();
    let contexts_a = context_profile(&tree_a, &methods_a, metric, &mut keys);
    let per_context = correlate(&contexts_a, &context_profile(&tree_b, &methods_b, metric, &mut keys));
    let (real_a, real_b) =
        (real_method_profile(&tree_a, &methods_a, metric), real_method_profile(&tree_b, &methods_b, metric));
    let per_real_method = correlate(&real_a.weights, &real_b.weights);
    let no_java = [real_a.no_java_share(), real_b.no_java_share()];
    let show = |value: Option<f64>| value.map_or("n/a".to_string(), |v| format!("{v:.4}"));
    let percent = |value: Option<f64>| value.map_or("n/a".to_string(), |v| format!("{:.2}%", v * 100.0));
    println!(
        "{}",
        serde_json::json!({
            "metric": metric.name(),
            "per_method": per_method,
            "per_context": per_context,
            "per_real_method": per_real_method,
            "no_java_share": no_java,
        })
    );
    eprintln!(
        "precision ({}): per method {}, per context {}; over real methods {} (without a Java frame: {} and {})",
        metric.name(),
        show(per_method),
        show(per_context),
        show(per_real_method),
        percent(no_java[0]),
        percent(no_java[1])
    );
    Ok(())
}

/// Compares two profiles: the methods and contexts whose share of their
/// profile's total grew or shrank most (`pcct::diff`), and with
/// `--flamegraph` a differential flame graph (inferno: the after profile's
/// widths, red where a frame grew, blue where it shrank, the before
/// profile normalised to the after one's total).
fn diff(mut parser: lexopt::Parser) -> Result<(), Failure> {
    let mut paths = Vec::new();
    let (mut metric, mut top, mut min_change, mut flamegraph) = (None, 20usize, 0.001f64, None);
    let mut limit = input::DEFAULT_LIMIT;
    while let Some(arg) = parser.next()? {
        match arg {
            Long("max-input") => limit = parse_max_input(&mut parser)?,
            Long("metric") => metric = Some(parse_metric(&parser.value()?.string()?)?),
            Long("top") => top = parser.value()?.parse()?,
            Long("min-change") => min_change = parser.value()?.parse()?,
            Long("flamegraph") => flamegraph = Some(PathBuf::from(parser.value()?)),
            Value(value) => paths.push(PathBuf::from(value)),
            other => return Err(Failure::Usage(other.unexpected().to_string())),
        }
    }
    let [before_path, after_path] = paths.as_slice() else {
        return Err(Failure::Usage("diff needs exactly two profiles: <before.json> <after.json>".to_string()));
    };
    let before = read_profile(before_path, limit)?;
    let after = read_profile(after_path, limit)?;
    let metric = metric.unwrap_or(after.0.config().metric);
    if let Some(svg) = &flamegraph {
        differential_flamegraph(&before, &after, metric, svg, (before_path, after_path))?;
    }
    let diff = pcct::diff::diff((&before.0, &before.1), (&after.0, &after.1), metric);
    let names = (before_path.display().to_string(), after_path.display().to_string());
    print_with(|out| pcct::diff::write_text(out, &diff, (&names.0, &names.1), top, min_change.clamp(0.0, 1.0)))?;
    if let Some(svg) = flamegraph {
        eprintln!("differential flame graph written to {}", svg.display());
    }
    Ok(())
}

/// Writes the differential flame graph of `before` -> `after` to `path`.
fn differential_flamegraph(
    before: &(pcct::Pcct, pcct::MethodTable),
    after: &(pcct::Pcct, pcct::MethodTable),
    metric: Metric,
    path: &Path,
    names: (&Path, &Path),
) -> Result<(), Failure> {
    let before_text = export::collapsed::write(&before.0, &before.1, metric);
    let after_text = export::collapsed::write(&after.0, &after.1, metric);
    let mut folded = Vec::new();
    let options = inferno::differential::Options { normalize: true, strip_hex: false };
    inferno::differential::from_readers(options, before_text.as_bytes(), after_text.as_bytes(), &mut folded)
        .map_err(|e| failed(format!("cannot fold the two profiles: {e}")))?;
    let mut options = inferno::flamegraph::Options::default();
    options.title = format!("pcct diff: {} -> {}", names.0.display(), names.1.display());
    options.subtitle =
        Some("red: grew, blue: shrank (shares of each profile's total); widths: the second profile".into());
    options.count_name = metric.name().to_string();
    options.deterministic = true;
    let mut svg =
        BufWriter::new(File::create(path).map_err(|e| failed(format!("cannot write {}: {e}", path.display())))?);
    if folded.is_empty() {
        folded.extend_from_slice(b"[no samples] 0 1\n");
    }
    inferno::flamegraph::from_reader(&mut options, &folded[..], &mut svg)
        .and_then(|()| svg.flush())
        .map_err(|e| failed(format!("cannot write {}: {e}", path.display())))
}

/// Builds a PCCT from sampled stacks written by another profiler
/// (`pcct::import` reads them, a line at a time) and writes it as a JSON
/// profile. Each sample weighs `--interval-ns` of CPU and wall time.
fn import_stacks(mut parser: lexopt::Parser) -> Result<(), Failure> {
    let (mut input, mut output, mut interval_ns) = (None, None, 1_000_000u64);
    let mut limit = input::DEFAULT_LIMIT;
    while let Some(arg) = parser.next()? {
        match arg {
            Long("max-input") => limit = parse_max_input(&mut parser)?,
            Long("interval-ns") => interval_ns = parser.value()?.parse()?,
            Value(value) if input.is_none() => input = Some(PathBuf::from(value)),
            Value(value) if output.is_none() => output = Some(PathBuf::from(value)),
            other => return Err(Failure::Usage(other.unexpected().to_string())),
        }
    }
    let (Some(input), Some(output)) = (input, output) else {
        return Err(Failure::Usage("import-stacks needs <input.stacks> <output.json>".to_string()));
    };
    let samples = read_stacks(&input, limit).map_err(|e| failed(format!("{}: {e}", input.display())))?;
    let count = samples.len();
    let config = pcct::TreeConfig { arena_bytes: 1 << 30, ..pcct::TreeConfig::default() };
    let (tree, methods) = samples.build(interval_ns, config).map_err(|e| failed(e.to_string()))?;
    write_profile(&output, &tree, &methods).map_err(|e| {
        let _ = std::fs::remove_file(&output);
        failed(format!("cannot write {}: {e}", output.display()))
    })?;
    eprintln!("imported {count} samples into {} contexts", tree.node_count() - 1);
    Ok(())
}

/// The samples of a stacks file, read a line at a time, at most `limit` bytes.
fn read_stacks(path: &Path, limit: u64) -> Result<pcct::import::Samples, String> {
    let mut reader = input::open(path, limit).map_err(|e| format!("cannot read it: {e}"))?;
    let mut samples = pcct::import::Samples::new();
    input::for_each_line(&mut reader, |number, line| samples.add_line(number, line).map_err(|e| e.to_string()))?;
    Ok(samples)
}

/// Streams the JSON profile into `path`.
fn write_profile(path: &Path, tree: &pcct::Pcct, methods: &pcct::MethodTable) -> io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    json::write_to(&mut out, tree, methods, &[])?;
    out.flush()
}
