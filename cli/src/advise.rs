//! `pcct advise`: the JIT advice (hot edges HotSpot did not inline, ranked,
//! with what to do and why, and the hot edges it did inline), read offline
//! from a JSON profile (its `jit_advice` section) or live from an agent,
//! printed as text or JSON, and written as a HotSpot compiler directives
//! file (`-o`).
//!
//! `--apply <pid>` closes the loop on a running JVM: it finds the JVM's
//! agent (a listening socket of the process whose unauthenticated
//! `/healthz` names pcct and that pid, asked before any token is sent; or
//! `--address`), takes the live advice, adds its directives
//! (`jcmd <pid> Compiler.directives_add`; jcmd reports a rejected file in
//! its output, not its exit status, so the output is checked and the
//! parser's own message fetched with `java -XX:CompilerDirectivesFile`),
//! asks the agent to retransform the classes whose code must be compiled
//! again (`POST /api/jit/recompile`: directives only affect compilations
//! that start later), and waits until the agent reports the edges inlined.
//! Before adding, it checks that the directives fit under the JVM's
//! `CompilerDirectivesLimit` (`directive_stack.rs`). What it added is
//! recorded beside the directives file, in a directory of the user's own
//! (`$XDG_RUNTIME_DIR/pcct/advise`, else `~/.cache/pcct/advise`: mode
//! 0700, its owner and type checked without following a symlink, and its
//! parent writable by no one else), so `--remove <pid>` pops those
//! directives (`Compiler.directives_remove`), only when
//! `Compiler.directives_print` shows them on top of the stack, and
//! recompiles the same classes. jcmd cannot pop conditionally, so a
//! directive another tool adds between that print and the pops is popped
//! in place of one of ours: the stack is printed again after the pops and
//! such a change reported as an error.
//!
//! **Whose tools run.** `jcmd` and `java` are those of the JDK pcct runs
//! with (`--jcmd`, else `$JAVA_HOME/bin`, else `PATH`), never those beside
//! the target's executable: the target's owner chooses what is there, and
//! `pcct advise` may run as another user (root, through sudo). The token
//! comes from `--token-file` or `PCCT_TOKEN` (`--token` works, but any
//! user can read a command line).

use std::fs::{DirBuilder, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use lexopt::prelude::*;
use pcct_jit::advice::code_name;
use pcct_jit::directives::{classes_to_recompile, directives, most_edges_within, render, to_inline, Matching};
use pcct_jit::live::AdviceReport;
use pcct_jit::{advice, Action, EdgeAdvice, MethodKey};
use serde::Deserialize;

use crate::commands::{failed, Failure};
use crate::directive_stack::{self, Found, Printed};
use crate::http::Server;
use crate::{input, locate};

struct Settings {
    limit: usize,
    /// `--match-jdk`: directives may match the JDK's own methods.
    matching: Matching,
    min_share: f64,
    format: String,
    output: Option<PathBuf>,
    address: Option<String>,
    token: Option<String>,
    jcmd: Option<PathBuf>,
    wait: Duration,
    max_input: u64,
}

enum Task {
    Show(String),
    Apply(u32),
    Remove(u32),
}

pub fn advise(mut parser: lexopt::Parser) -> Result<(), Failure> {
    let mut settings = Settings {
        limit: 20,
        matching: Matching::Application,
        min_share: 0.01,
        format: "text".to_string(),
        output: None,
        address: None,
        token: std::env::var("PCCT_TOKEN").ok(),
        jcmd: None,
        wait: Duration::from_secs(30),
        max_input: input::DEFAULT_LIMIT,
    };
    let mut task = None;
    while let Some(arg) = parser.next()? {
        match arg {
            Long("limit") => settings.limit = parser.value()?.parse()?,
            Long("min-share") => settings.min_share = parser.value()?.parse()?,
            Long("match-jdk") => settings.matching = Matching::Jdk,
            Long("format") => settings.format = parser.value()?.string()?,
            Short('o') | Long("output") => settings.output = Some(PathBuf::from(parser.value()?)),
            Long("address") => settings.address = Some(parser.value()?.string()?),
            Long("token") => {
                eprintln!(
                    "pcct: --token is visible to every user in the process list; prefer --token-file or PCCT_TOKEN"
                );
                settings.token = Some(parser.value()?.string()?)
            }
            Long("token-file") => settings.token = Some(read_token_file(Path::new(&parser.value()?))?),
            Long("jcmd") => settings.jcmd = Some(PathBuf::from(parser.value()?)),
            Long("wait") => settings.wait = parse_wait(&parser.value()?.string()?)?,
            Long("max-input") => {
                settings.max_input = input::parse_size(&parser.value()?.string()?).map_err(Failure::Usage)?
            }
            Long("apply") if task.is_none() => task = Some(Task::Apply(parser.value()?.parse()?)),
            Long("remove") if task.is_none() => task = Some(Task::Remove(parser.value()?.parse()?)),
            Value(value) if task.is_none() => task = Some(Task::Show(value.string()?)),
            other => return Err(Failure::Usage(other.unexpected().to_string())),
        }
    }
    if !(0.0..=1.0).contains(&settings.min_share) || settings.limit == 0 || settings.limit > 1000 {
        return Err(Failure::Usage("--min-share must be from 0 to 1 and --limit from 1 to 1000".to_string()));
    }
    if !["text", "json", "directives"].contains(&settings.format.as_str()) {
        return Err(Failure::Usage(format!("--format must be text, json or directives, not `{}`", settings.format)));
    }
    match task {
        Some(Task::Show(source)) => show(&source, &settings),
        Some(Task::Apply(pid)) => apply(pid, &settings),
        Some(Task::Remove(pid)) => remove(pid, &settings),
        None => Err(Failure::Usage("advise needs <profile.json | host:port>, --apply <pid> or --remove <pid>".into())),
    }
}

/// Longest `--wait`.
const MAX_WAIT: Duration = Duration::from_secs(3600);

/// `--wait`: seconds from 0 to an hour (a usage error otherwise, never a panic).
fn parse_wait(text: &str) -> Result<Duration, Failure> {
    let seconds: f64 = text.trim().parse().unwrap_or(f64::NAN);
    if !(0.0..=MAX_WAIT.as_secs_f64()).contains(&seconds) {
        return Err(Failure::Usage(format!("--wait must be a number of seconds from 0 to 3600, not `{text}`")));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// The token in the first line of `path`.
fn read_token_file(path: &Path) -> Result<String, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| failed(format!("cannot read the token file {}: {e}", path.display())))?;
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.is_empty() {
        return Err(failed(format!("the first line of {} must be the token", path.display())));
    }
    Ok(token)
}

/// The advice from a JSON profile or a live agent, cut to the settings.
fn read_advice(source: &str, settings: &Settings) -> Result<AdviceReport, Failure> {
    let path = Path::new(source);
    if path.is_file() {
        return profile_advice(path, settings);
    }
    if source.contains(':') {
        let server = Server::new(source, settings.token.clone());
        return live_advice(&server, MAX_LIMIT, settings.min_share);
    }
    Err(failed(format!("{source} is neither a JSON profile nor a host:port where an agent serves")))
}

fn profile_advice(path: &Path, settings: &Settings) -> Result<AdviceReport, Failure> {
    #[derive(Deserialize)]
    struct JitSection {
        jit_advice: Option<AdviceReport>,
    }
    let reader =
        input::open(path, settings.max_input).map_err(|e| failed(format!("cannot read {}: {e}", path.display())))?;
    let section: JitSection = serde_json::from_reader(reader)
        .map_err(|e| failed(format!("{} is not a pcct JSON profile: {e}", path.display())))?;
    let mut report = section.jit_advice.filter(|report| !report.jit.setup.state.is_empty()).ok_or_else(|| {
        failed(format!("{} holds no JIT advice (written by an agent older than `pcct advise`)", path.display()))
    })?;
    let all =
        std::mem::take(&mut report.advice.not_inlined).into_iter().chain(std::mem::take(&mut report.advice.inlined));
    let all = all.chain(std::mem::take(&mut report.advice.unknown));
    report.advice = advice::advise(all.collect(), settings.min_share, MAX_LIMIT);
    report.min_share = settings.min_share;
    Ok(report)
}

fn live_advice(server: &Server, limit: usize, min_share: f64) -> Result<AdviceReport, Failure> {
    let value = server.get_json(&format!("/api/jit/advice?limit={limit}&min_share={min_share}")).map_err(failed)?;
    serde_json::from_value(value)
        .map_err(|e| failed(format!("the agent at {} answered an unknown advice: {e}", server.address)))
}

/// Most edges of each list asked for (the routes' bound).
const MAX_LIMIT: usize = 1000;

/// `report` with each list cut to `limit`, and the directives for its
/// `limit` hottest edges a directive can ask to inline (taken from the
/// whole list).
fn cut(mut report: AdviceReport, limit: usize, matching: Matching) -> (AdviceReport, String) {
    let file = render(&directives(&to_inline(&report.advice.not_inlined, limit, matching), matching));
    for list in [&mut report.advice.not_inlined, &mut report.advice.inlined, &mut report.advice.unknown] {
        list.truncate(limit);
    }
    (report, file)
}

fn show(source: &str, settings: &Settings) -> Result<(), Failure> {
    let (report, file) = cut(read_advice(source, settings)?, settings.limit, settings.matching);
    if let Some(output) = &settings.output {
        std::fs::write(output, &file).map_err(|e| failed(format!("cannot write {}: {e}", output.display())))?;
    }
    let text = match settings.format.as_str() {
        "json" => serde_json::to_string_pretty(&report).unwrap_or_default() + "\n",
        "directives" => file,
        _ => {
            let mut text = describe(&report, &file);
            if let Some(output) = &settings.output {
                text.push_str(&format!("\ndirectives written to {}\n", output.display()));
            }
            text
        }
    };
    print!("{text}");
    Ok(())
}

fn edge_line(edge: &EdgeAdvice) -> String {
    let line = edge.call_site.line.map(|line| format!(":{line}")).unwrap_or_default();
    let size = edge.callee_bytecodes.map(|size| format!(" [{size} bytes]")).unwrap_or_default();
    let code = match &edge.compiled_in {
        Some(root) => format!("{} of {}", code_name(edge.caller_level), root.display()),
        None => code_name(edge.caller_level),
    };
    let context = match edge.partial_calls {
        0 => String::new(),
        partial => format!("  ({partial} of {} calls seen on stacks whose walk stopped short)", edge.calls),
    };
    format!(
        "{:6.2}%  {}{line} (bci {}) -> {}{size}  in {code}{context}",
        edge.share * 100.0,
        edge.caller.display(),
        edge.call_site.bci,
        edge.callee.display()
    )
}

/// The advice as text, with `file`, its directives.
fn describe(report: &AdviceReport, file: &str) -> String {
    let setup = &report.jit.setup;
    let flags = &setup.flags;
    let known = |value: Option<u32>| value.map_or("?".to_string(), |v| v.to_string());
    let mut text = format!(
        "JIT advice: inline records {} (table {}; compiler {}; FreqInlineSize={}, MaxInlineSize={}, InlineSmallCode={}); hot edges from {:.2}% on\n",
        setup.state,
        if report.jit.table.complete { "complete" } else { "incomplete" },
        flags.top_compiler().describe(),
        known(flags.freq_inline_size),
        known(flags.max_inline_size),
        known(flags.inline_small_code),
        report.min_share * 100.0
    );
    text.push_str(&format!("\nhot edges not inlined ({}):\n", report.advice.not_inlined.len()));
    for edge in &report.advice.not_inlined {
        text.push_str(&format!("{}\n          {}: {}\n", edge_line(edge), action_name(edge.action), edge.why));
    }
    text.push_str(&format!("\nhot edges inlined ({}):\n", report.advice.inlined.len()));
    for edge in &report.advice.inlined {
        text.push_str(&format!("{}\n", edge_line(edge)));
    }
    if !report.advice.unknown.is_empty() {
        text.push_str(&format!(
            "\nhot edges of unknown state ({}: no compiled code is known for their caller):\n",
            report.advice.unknown.len()
        ));
        for edge in &report.advice.unknown {
            text.push_str(&format!("{}\n", edge_line(edge)));
        }
    }
    text.push_str(&format!(
        "\ncompiler directives (HotSpot: -XX:+UnlockDiagnosticVMOptions -XX:CompilerDirectivesFile=<file>):\n{file}"
    ));
    text
}

/// The action as the JSON names it (`inline`, `wait`, ...).
fn action_name(action: Action) -> String {
    serde_json::to_value(action).ok().and_then(|name| name.as_str().map(str::to_string)).unwrap_or_default()
}

/// The directory of the user's own where `--apply` keeps its records:
/// `$XDG_RUNTIME_DIR/pcct/advise`, else `~/.cache/pcct/advise`, created
/// mode 0700.
fn records_dir() -> Result<PathBuf, Failure> {
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))
        .ok_or_else(|| failed("neither XDG_RUNTIME_DIR nor HOME is set: nowhere to keep pcct advise's records"))?;
    let dir = base.join("pcct").join("advise");
    let created = DirBuilder::new().recursive(true).mode(0o700).create(&dir);
    created.map_err(|e| failed(format!("cannot create {}: {e}", dir.display())))?;
    check_own_dir(&dir)?;
    check_parent(&base.join("pcct"))?;
    Ok(dir)
}

/// `dir` (the records directory's parent) is a directory no one else may
/// write to, so no one can swap the records directory.
fn check_parent(dir: &Path) -> Result<(), Failure> {
    let metadata = std::fs::symlink_metadata(dir).map_err(|e| failed(format!("cannot read {}: {e}", dir.display())))?;
    let owner_ok = Some(metadata.uid()) == my_uid() || metadata.uid() == 0;
    if !metadata.is_dir() || !owner_ok || metadata.permissions().mode() & 0o022 != 0 {
        return Err(failed(format!("{} may be changed by others: refusing to keep records under it", dir.display())));
    }
    Ok(())
}

/// This process's effective user (the owner of `/proc/self`).
fn my_uid() -> Option<u32> {
    std::fs::metadata("/proc/self").map(|m| m.uid()).ok()
}

/// `dir` is a directory (not a symlink to one) of this user's, that no
/// one else may write or read.
fn check_own_dir(dir: &Path) -> Result<(), Failure> {
    let metadata = std::fs::symlink_metadata(dir).map_err(|e| failed(format!("cannot read {}: {e}", dir.display())))?;
    let mode = metadata.permissions().mode() & 0o777;
    if !metadata.is_dir() || Some(metadata.uid()) != my_uid() || mode & 0o077 != 0 {
        return Err(failed(format!(
            "{} must be a directory of yours that no one else may use (mode 700; it is {}mode {mode:o}): \
             refusing to keep records there",
            dir.display(),
            if metadata.file_type().is_symlink() { "a symlink, " } else { "" },
        )));
    }
    Ok(())
}

/// Where `--apply` keeps what it added to JVM `pid`, and the directives file.
fn record_paths(pid: u32) -> Result<(PathBuf, PathBuf), Failure> {
    let dir = records_dir()?;
    Ok((dir.join(format!("advise-{pid}.applied.json")), dir.join(format!("advise-{pid}.directives.json"))))
}

/// A record of ours: read without following a symlink, and only if it is
/// a file this user owns. `None` when there is none.
fn read_record(path: &Path) -> Result<Option<String>, Failure> {
    let opened = OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path);
    let mut file = match opened {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(failed(format!("cannot open {} (not followed if a symlink): {error}", path.display())))
        }
    };
    let metadata = file.metadata().map_err(|e| failed(format!("cannot read {}: {e}", path.display())))?;
    if !metadata.is_file() || Some(metadata.uid()) != my_uid() {
        return Err(failed(format!("{} is not a file of yours: refusing to act on it", path.display())));
    }
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(|e| failed(format!("cannot read {}: {e}", path.display())))?;
    Ok(Some(text))
}

/// Writes a new file readable by its owner only (never through a file or
/// symlink that is there already).
fn write_new(path: &Path, text: &str) -> Result<(), Failure> {
    let _ = std::fs::remove_file(path);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| failed(format!("cannot create {}: {e}", path.display())))?;
    file.write_all(text.as_bytes()).map_err(|e| failed(format!("cannot write {}: {e}", path.display())))
}

/// Whether `server` says, without a token, that it is the pcct agent of JVM `pid`.
fn is_pcct_of(server: &Server, pid: u32) -> bool {
    let Ok(answer) = server.get("/healthz") else { return false };
    let identity = answer.header("x-pcct-agent").unwrap_or("");
    answer.status == 200 && identity.starts_with("pcct/") && identity.ends_with(&format!(" pid={pid}"))
}

/// The agent of JVM `pid`: `--address`, or the listening socket of the
/// process whose `/healthz` names pcct and `pid` (asked without the token,
/// which goes only to that socket).
fn find_agent(pid: u32, settings: &Settings) -> Result<Server, Failure> {
    let candidates = match &settings.address {
        Some(address) => vec![address.clone()],
        None => locate::listening_addresses(pid).map_err(failed)?,
    };
    let found = candidates.iter().find(|address| {
        let probe = Server { timeout: Duration::from_secs(5), ..Server::new(address, None) };
        is_pcct_of(&probe, pid)
    });
    let Some(address) = found else {
        return Err(failed(format!(
            "no pcct agent of JVM {pid} answered at {} (is it running with http=on? --address host:port names it)",
            if candidates.is_empty() {
                "any listening socket of the process".to_string()
            } else {
                candidates.join(", ")
            }
        )));
    };
    let server = Server::new(address, settings.token.clone());
    let answer = server.get("/api/status").map_err(failed)?;
    match answer.status {
        200 => Ok(server),
        401 => Err(failed(format!("the agent at {address} needs a token (--token-file or PCCT_TOKEN)"))),
        status => Err(failed(format!("the agent at {address} answered {status}: {}", answer.text()))),
    }
}

/// jcmd: `--jcmd`, else the JDK pcct runs with (`$JAVA_HOME`, `PATH`);
/// never the target's own.
fn jcmd_for(settings: &Settings) -> PathBuf {
    settings.jcmd.clone().unwrap_or_else(|| locate::jdk_tool("jcmd"))
}

/// java: beside `--jcmd`, else the JDK pcct runs with; never the target's own.
fn java_for(settings: &Settings) -> PathBuf {
    let beside = settings.jcmd.as_ref().map(|jcmd| jcmd.with_file_name("java")).filter(|java| java.is_file());
    beside.unwrap_or_else(|| locate::jdk_tool("java"))
}

fn run_jcmd(jcmd: &Path, pid: u32, arguments: &[&str]) -> Result<String, Failure> {
    let output = Command::new(jcmd)
        .arg(pid.to_string())
        .args(arguments)
        .output()
        .map_err(|e| failed(format!("cannot run {}: {e}", jcmd.display())))?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(failed(format!("{} {pid} {} failed: {}", jcmd.display(), arguments.join(" "), text.trim())));
    }
    Ok(text)
}

/// HotSpot's own account of why it rejects `file`: its directives parser
/// run by `java` (jcmd only says that parsing failed).
fn parser_message(java: &Path, file: &Path) -> String {
    let output = Command::new(java)
        .arg("-XX:+UnlockDiagnosticVMOptions")
        .arg(format!("-XX:CompilerDirectivesFile={}", file.display()))
        .arg("-version")
        .output();
    match output {
        Ok(output) => {
            let text = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
            text.lines()
                .filter(|line| !line.contains("version") && !line.contains("Runtime Environment"))
                .collect::<Vec<_>>()
                .join("\n")
        }
        Err(e) => format!("(java could not be run to say why: {e})"),
    }
}

/// `jcmd Compiler.directives_add`: `count` directives, or a clear error.
fn add_directives(settings: &Settings, pid: u32, file: &Path, count: usize) -> Result<(), Failure> {
    let output = run_jcmd(&jcmd_for(settings), pid, &["Compiler.directives_add", &file.display().to_string()])?;
    let added =
        output.lines().find_map(|line| line.trim().strip_suffix(" compiler directives added")?.parse::<usize>().ok());
    if added == Some(count) {
        return Ok(());
    }
    Err(failed(format!(
        "JVM {pid} rejected the directives in {}:\n{}\nHotSpot's parser says:\n{}",
        file.display(),
        output.trim(),
        parser_message(&java_for(settings), file).trim()
    )))
}

/// The key of an edge across recompilations.
fn edge_key(edge: &EdgeAdvice) -> EdgeKey {
    (edge.caller.clone(), edge.call_site.bci, edge.callee.clone())
}

fn apply(pid: u32, settings: &Settings) -> Result<(), Failure> {
    let server = find_agent(pid, settings)?;
    let full = live_advice(&server, MAX_LIMIT, settings.min_share)?;
    let limit = full.jit.setup.flags.directives_limit.unwrap_or(directive_stack::DEFAULT_LIMIT);
    let chosen = to_inline(&full.advice.not_inlined, settings.limit, settings.matching);
    let candidates = full.advice.not_inlined.clone();
    let (report, file_text) = cut(full, settings.limit, settings.matching);
    print!("{}", describe(&report, &file_text));
    if chosen.is_empty() {
        println!("\nnothing to apply: no hot edge from {:.2}% on is a call in C2 code", settings.min_share * 100.0);
        return Ok(());
    }
    let (record, file) = record_paths(pid)?;
    let started = locate::process_start(pid);
    if let Some(text) = read_record(&record)? {
        let earlier: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        if earlier["started"].as_u64() == started {
            return Err(failed(format!(
                "pcct advise already added directives to JVM {pid} ({}): run `pcct advise --remove {pid}` first",
                record.display()
            )));
        }
        // A record of an earlier process that had this pid.
        let _ = std::fs::remove_file(&record);
    }
    let made = directives(&chosen, settings.matching);
    let classes = classes_to_recompile(&chosen, settings.matching);
    let jcmd = jcmd_for(settings);
    let stack = directive_stack::parse(&run_jcmd(&jcmd, pid, &["Compiler.directives_print"])?);
    let most_edges = |room| most_edges_within(&candidates, room, settings.matching);
    directive_stack::check_room(made.len(), &stack, limit, pid, most_edges).map_err(failed)?;
    write_new(&file, &file_text)?;
    add_directives(settings, pid, &file, made.len())?;
    let applied = serde_json::json!({
        "pid": pid,
        "started": started,
        "address": server.address,
        "directives": made.len(),
        "made": made,
        "classes": classes,
        "file": file,
        "edges": chosen.iter().map(edge_key).collect::<Vec<_>>(),
    });
    write_new(&record, &serde_json::to_string_pretty(&applied).unwrap_or_default())?;
    println!(
        "\nadded {} compiler directives to JVM {pid} ({}); undo with `pcct advise --remove {pid}`",
        made.len(),
        file.display()
    );
    recompile(&server, &classes)?;
    wait_until_inlined(&server, &chosen, settings.wait)
}

/// Longest wait `recompile` honours when the agent answers 429.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// Asks the agent to retransform `classes`, printing what it did; when the
/// agent allows no request yet (429), waits as long as it says (up to
/// [`MAX_RETRY_AFTER`]) and asks once more; when the agent's JIT thread
/// did not answer in time (504), asks once more, which waits for the
/// queued request instead of retransforming twice. Every ask carries the
/// same request id, so the agent knows a retry from a new request.
fn recompile(server: &Server, classes: &[String]) -> Result<(), Failure> {
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let id = format!("pcct-advise-{}-{}", std::process::id(), since_epoch.as_nanos());
    let body = serde_json::json!({ "classes": classes, "request": id }).to_string();
    let mut answer = server.post_json("/api/jit/recompile", &body).map_err(failed)?;
    let retry_after = answer.header("retry-after").and_then(|seconds| seconds.parse().ok()).map(Duration::from_secs);
    if let Some(wait) = retry_after.filter(|wait| answer.status == 429 && *wait <= MAX_RETRY_AFTER) {
        println!("the agent allows no recompile request yet: waiting {} s", wait.as_secs());
        std::thread::sleep(wait);
        answer = server.post_json("/api/jit/recompile", &body).map_err(failed)?;
    }
    if answer.status == 504 {
        println!("the agent's JIT thread has not answered yet: waiting for the same request");
        answer = server.post_json("/api/jit/recompile", &body).map_err(failed)?;
    }
    if answer.status != 200 {
        return Err(failed(format!(
            "the agent could not recompile {} ({}): {}; the directives affect only code compiled from now on",
            classes.join(", "),
            answer.status,
            answer.text()
        )));
    }
    let report: serde_json::Value = serde_json::from_slice(&answer.body).unwrap_or_default();
    println!(
        "recompiling: retransformed {} in {:.1} ms{}{}",
        report["retransformed"],
        report["elapsed_ns"].as_f64().unwrap_or(0.0) / 1e6,
        if report["not_found"].as_array().is_some_and(|a| !a.is_empty()) {
            format!("; not loaded: {}", report["not_found"])
        } else {
            String::new()
        },
        if report["failed"].as_array().is_some_and(|a| !a.is_empty()) {
            format!("; failed: {}", report["failed"])
        } else {
            String::new()
        },
    );
    Ok(())
}

/// How long a chosen edge must go without a new call after the recompile
/// to count as no longer called (not as waiting to be compiled again).
const IDLE_AFTER: Duration = Duration::from_secs(5);

type EdgeKey = (MethodKey, i32, MethodKey);

/// Calls of the edge `key` in the advice, all contexts and states together.
fn calls_of(advice: &pcct_jit::Advice, key: &EdgeKey) -> u64 {
    let lists = [&advice.not_inlined, &advice.inlined, &advice.unknown];
    lists.iter().flat_map(|list| list.iter()).filter(|edge| edge_key(edge) == *key).map(|edge| edge.calls).sum()
}

/// Polls the agent, at most `wait`, until every edge of `chosen` is either
/// reported inlined in every context, or no longer called (no new call
/// for [`IDLE_AFTER`]: hot once, at start-up say, it is not compiled again
/// and there is nothing to see). Fails if one is still a call, or none was
/// seen inlined.
fn wait_until_inlined(server: &Server, chosen: &[EdgeAdvice], wait: Duration) -> Result<(), Failure> {
    let started = Instant::now();
    let wanted: Vec<EdgeKey> = chosen.iter().map(edge_key).collect();
    let first = live_advice(server, MAX_LIMIT, 0.0)?;
    // (calls seen, when they last grew), per edge.
    let mut seen: Vec<(u64, Instant)> = wanted.iter().map(|key| (calls_of(&first.advice, key), started)).collect();
    loop {
        let now = live_advice(server, MAX_LIMIT, 0.0)?;
        let inlined_everywhere = |key: &EdgeKey| {
            now.advice.inlined.iter().any(|edge| edge_key(edge) == *key)
                && !now.advice.not_inlined.iter().any(|edge| edge_key(edge) == *key)
        };
        for (key, (calls, since)) in wanted.iter().zip(seen.iter_mut()) {
            let total = calls_of(&now.advice, key);
            if total > *calls {
                *calls = total;
                *since = Instant::now();
            }
        }
        let idle = |index: usize| seen[index].1.elapsed() >= IDLE_AFTER;
        let inlined: Vec<usize> = (0..wanted.len()).filter(|&i| inlined_everywhere(&wanted[i])).collect();
        let settled = (0..wanted.len()).all(|i| inlined.contains(&i) || idle(i));
        let describe_key =
            |(caller, bci, callee): &EdgeKey| format!("{} (bci {bci}) -> {}", caller.display(), callee.display());
        if settled && !inlined.is_empty() {
            println!("inlined after {:.1} s:", started.elapsed().as_secs_f64());
            for edge in now.advice.inlined.iter().filter(|edge| inlined.iter().any(|&i| edge_key(edge) == wanted[i])) {
                println!("{}", edge_line(edge));
            }
            let cold: Vec<String> =
                (0..wanted.len()).filter(|i| !inlined.contains(i)).map(|i| describe_key(&wanted[i])).collect();
            if !cold.is_empty() {
                println!("no longer called (not compiled again, nothing to see): {}", cold.join(", "));
            }
            return Ok(());
        }
        if started.elapsed() >= wait {
            let missing: Vec<String> =
                (0..wanted.len()).filter(|i| !inlined.contains(i)).map(|i| describe_key(&wanted[i])).collect();
            return Err(failed(format!(
                "not reported inlined within {} s: {} (the code may not be hot enough to be compiled again yet; the directives stay, `pcct advise --remove` undoes them)",
                wait.as_secs(),
                missing.join(", ")
            )));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn remove(pid: u32, settings: &Settings) -> Result<(), Failure> {
    let (record, file) = record_paths(pid)?;
    let text = read_record(&record)?.ok_or_else(|| {
        failed(format!(
            "pcct advise --apply added no directives to JVM {pid} (no {}); `jcmd {pid} Compiler.directives_clear` removes every directive",
            record.display()
        ))
    })?;
    let applied: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| failed(format!("{} is not a record of pcct advise: {e}", record.display())))?;
    if applied["started"].as_u64() != locate::process_start(pid) {
        let _ = std::fs::remove_file(&record);
        return Err(failed(format!(
            "{} is the record of an earlier process that had pid {pid}: pcct advise --apply added nothing to this one",
            record.display()
        )));
    }
    let made: Vec<pcct_jit::directives::Directive> = serde_json::from_value(applied["made"].clone())
        .map_err(|e| failed(format!("{} does not list the directives it added: {e}", record.display())))?;
    let ours: Vec<Printed> = made.iter().map(Printed::of).collect();
    let jcmd = jcmd_for(settings);
    let stack = directive_stack::parse(&run_jcmd(&jcmd, pid, &["Compiler.directives_print"])?);
    match directive_stack::find(&stack, &ours) {
        Found::OnTop => {}
        Found::Below(above) => {
            return Err(failed(format!(
                "{above} compiler directives were added to JVM {pid} above the {} pcct advise added: \
                 nothing removed (Compiler.directives_remove pops the top one, whoever added it; remove those first)",
                ours.len()
            )))
        }
        Found::Absent => {
            println!(
                "nothing of pcct advise's is on JVM {pid}'s compiler directive stack any more (removed or cleared \
                 meanwhile): nothing removed"
            );
            let _ = std::fs::remove_file(&record);
            let _ = std::fs::remove_file(&file);
            return Ok(());
        }
    }
    for _ in &ours {
        run_jcmd(&jcmd, pid, &["Compiler.directives_remove"])?;
    }
    // jcmd has no "pop if it is this one": a directive added between the
    // print and the pops would be popped instead of one of ours. The
    // stack after says whether that happened.
    let after = directive_stack::parse(&run_jcmd(&jcmd, pid, &["Compiler.directives_print"])?);
    if after != stack[ours.len()..] {
        let _ = std::fs::remove_file(&record);
        return Err(failed(format!(
            "JVM {pid}'s compiler directive stack changed while pcct advise removed its {} directives (another \
             `jcmd Compiler.directives_add` or `_remove` at the same time): {} directives expected after, {} found; \
             check `jcmd {pid} Compiler.directives_print`",
            ours.len(),
            stack.len() - ours.len(),
            after.len()
        )));
    }
    println!("removed the {} compiler directives pcct advise added to JVM {pid}", ours.len());
    let classes: Vec<String> = serde_json::from_value(applied["classes"].clone()).unwrap_or_default();
    let address = settings.address.clone().or_else(|| applied["address"].as_str().map(str::to_string));
    let server = Server::new(address.as_deref().unwrap_or_default(), settings.token.clone());
    let recompiled = if classes.is_empty() { Ok(()) } else { recompile(&server, &classes) };
    let _ = std::fs::remove_file(&record);
    let _ = std::fs::remove_file(&file);
    recompiled
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcct::Weight;
    use pcct_jit::advice::CallSite;
    use pcct_jit::Inlined;

    #[test]
    fn wait_takes_only_usable_seconds() {
        assert_eq!(parse_wait("90").ok(), Some(Duration::from_secs(90)));
        assert_eq!(parse_wait("0.5").ok(), Some(Duration::from_millis(500)));
        for bad in ["-1", "NaN", "inf", "3601", "1e300", "", "soon"] {
            let Err(Failure::Usage(message)) = parse_wait(bad) else { panic!("--wait {bad} was taken") };
            assert!(message.contains("--wait must be"), "{message}");
        }
    }

    #[test]
    fn records_are_kept_only_in_a_directory_of_ones_own() {
        use std::os::unix::fs::symlink;
        let base = std::env::temp_dir().join(format!("pcct-advise-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        DirBuilder::new().mode(0o700).create(&base).unwrap();
        let own = base.join("own");
        DirBuilder::new().mode(0o700).create(&own).unwrap();
        assert!(check_own_dir(&own).is_ok());
        std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(check_own_dir(&own).is_err(), "others may read it");
        let link = base.join("link");
        symlink(&own, &link).unwrap();
        std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(check_own_dir(&link).is_err(), "a symlink is not followed");
        let record = own.join("r.json");
        write_new(&record, "{}").unwrap();
        assert_eq!(read_record(&record).unwrap().as_deref(), Some("{}"));
        assert_eq!(read_record(&own.join("none.json")).unwrap(), None);
        symlink(&record, own.join("planted.json")).unwrap();
        assert!(read_record(&own.join("planted.json")).is_err(), "a planted symlink is not read");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn the_text_names_each_edge_its_code_and_what_to_do() {
        let edge = EdgeAdvice {
            caller: MethodKey::new("p.A", "run", "()V"),
            call_site: CallSite { bci: 7, line: Some(12) },
            callee: MethodKey::new("p.B", "big", "()V"),
            share: 0.25,
            calls: 10,
            weight: Weight::ZERO,
            callee_bytecodes: Some(400),
            callee_c2_code: None,
            inlined: Inlined::No,
            caller_level: Some(4),
            compiled_in: Some(MethodKey::new("p.A", "main", "()V")),
            osr_bci: None,
            compile_id: Some(3),
            changed_ago_ns: None,
            action: Action::Inline,
            why: "because".to_string(),
            roots: vec![MethodKey::new("p.A", "run", "()V"), MethodKey::new("p.A", "main", "()V")],
            callees_at_site: 1,
            site_share: 1.0,
            partial_calls: 0,
        };
        let partial = EdgeAdvice { partial_calls: 3, ..edge.clone() };
        assert!(edge_line(&partial).ends_with("of p.A.main  (3 of 10 calls seen on stacks whose walk stopped short)"));
        let report = AdviceReport { advice: advice::advise(vec![edge], 0.0, 10), ..AdviceReport::default() };
        let (report, file) = cut(report, 10, Matching::Application);
        let text = describe(&report, &file);
        assert!(
            text.contains(" 25.00%  p.A.run:12 (bci 7) -> p.B.big [400 bytes]  in C2 code (level 4) of p.A.main"),
            "{text}"
        );
        assert!(text.contains("inline: because"), "{text}");
        assert!(text.contains(r#""p/A.main()V","#) && text.contains(r#""p/A.run()V""#), "{text}");
    }
}
