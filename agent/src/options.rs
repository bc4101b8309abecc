//! The agent's options: `-agentpath:libpcct_agent.so=interval=1ms,file=out.collapsed`
//! or, through jcmd (whose parser cuts at `=`), `interval:1ms;file:out.collapsed`.
//!
//! Items are separated by `,` or `;`; a key and its value by `=` or `:`
//! (the first of either in the item). Every option has a default; a bad one
//! is rejected with one line naming it and what it allows.
//!
//! Each option is described once, in [`OPTIONS`]: its key, default, what it
//! allows, its meaning, how it is parsed and how `/api/status` shows it. The
//! parser, the key list, the error messages, the status settings and the
//! options reference in docs/options.md (checked by a test) all come from that table.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::time::Duration;

use pcct::export::Format;
use pcct::{FullPolicy, Metric, TreeMode};
use pcct_sampler::{Mode, TimerSource};

/// Every option, with its default in the doc comment.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// `interval`: time between ticks, 100us..=1s (default 10ms).
    pub interval: Duration,
    /// `mode`: `cpu` (threads that used CPU, weighted by it) or `wall` (every thread) (default cpu).
    pub mode: Mode,
    /// `tree`: `pcct` (calling contexts) or `methods` (hot-method counters only) (default pcct).
    pub tree: TreeMode,
    /// `depth`: most frames walked per sample, 1..=4096 (default 512).
    pub depth: usize,
    /// `walk`: Whaley's BUFSIZE, most new frames added per sample, or `off` (default off).
    pub walk_limit: Option<usize>,
    /// `purge`: clear the profile this often, or `off` (default off).
    pub purge: Option<Duration>,
    /// `arena`: bytes for nodes and edges, e.g. `64m` (default 64m, from 64k to 16g).
    pub arena_bytes: usize,
    /// `on_full`: `drop` samples needing new nodes, or `purge` the tree, when the arena is full (default drop).
    pub on_full: FullPolicy,
    /// `prefilter`: skip threads whose CPU clock barely moved (`on`/`off`, default on).
    pub prefilter: bool,
    /// `idle`: share of an interval a thread must use to be signalled, 0..1 (default 0.1).
    pub idle_share: f64,
    /// `signal`: the sampling signal (default SIGPROF).
    pub signal: i32,
    /// `timer`: what interrupts a running thread for a sample in cpu mode,
    /// `thread` (its own CPU timer) or `sampler` (default thread).
    pub timer: TimerSource,
    /// `spin`: most time the timer spins before a tick, 0 to 200us (default 20us).
    pub max_spin: Duration,
    /// `batch`: with threads' own CPU timers, how long the sampler thread
    /// sleeps between two drains (zero: `off`, every interval).
    pub batch: Duration,
    /// `jitter`: gaps between ticks are drawn from (1 - jitter)..(1 + jitter)
    /// intervals, 0..=0.9 (default 0.5; 0: strictly periodic).
    pub jitter: f64,
    /// `recent`: raw samples kept for /api/samples, 16..=1000000 (default 4096).
    pub recent: usize,
    /// `hot`: elements each hot list keeps sorted, 16..=100000 (default 1024).
    pub hot_list: usize,
    /// `methods`: bytes of method names before the table starts over, 256k..=4g (default 32m).
    pub methods_limit: usize,
    /// `file`: where to write the profile at VM death (default: nowhere).
    pub file: Option<PathBuf>,
    /// `format`: collapsed, json, xtree, xarc, xprof, sites or pprof (default: from the file's extension, else collapsed).
    pub format: Option<Format>,
    /// `metric`: the resource the reports and collapsed stacks count, any of `Metric::ALL` (default: by mode).
    pub metric: Option<Metric>,
    /// `http`: serve answers over HTTP (`on`/`off`, default on).
    pub http: bool,
    /// `port`: HTTP port, 0 for any free one (default 0).
    pub port: u16,
    /// `bind`: address to listen on (default 127.0.0.1).
    pub bind: String,
    /// `token`: the control token. When set, every route but /healthz
    /// requires `Authorization: Bearer <token>` (or the read-only token for
    /// routes that only read); pause, purge, interval and recompile need
    /// this one. Also set from `token_file`.
    pub token: Option<String>,
    /// `token_file`: read the control token from this file (readable by its owner only).
    pub token_file: Option<PathBuf>,
    /// `read_token`: the read-only token (scrapes, reports, pprof, the page).
    /// Also set from `read_token_file`.
    pub read_token: Option<String>,
    /// `read_token_file`: read the read-only token from this file (readable by its owner only).
    pub read_token_file: Option<PathBuf>,
    /// `unauthenticated`: allow a non-loopback `bind` without a token (`on`/`off`, default off).
    pub unauthenticated: bool,
    /// `allow_hosts`: without a token, names besides loopback addresses and
    /// `localhost` that HTTP requests may give in `Host` (default: none).
    pub allow_hosts: Vec<String>,
    /// `addr_file`: write the chosen `host:port` to this file once listening.
    pub addr_file: Option<PathBuf>,
    /// `top`: hot methods exported as a Prometheus gauge, 0..=100 (default 10).
    pub metrics_top: usize,
    /// `quiet`: print nothing but errors (`on`/`off`, default off).
    pub quiet: bool,
    /// `compiled`: keep the inlining of compiled code, from CompiledMethodLoad/Unload (`on`/`off`, default on).
    pub compiled: bool,
    /// `recompile`: serve recompile requests (with the control token only,
    /// by default), adding the capability to retransform classes at the first.
    pub recompile: Recompile,
    /// `recompile_every`: least time between two recompile requests, 1s..=1h (default 30s).
    pub recompile_every: Duration,
    /// `push`: the Pyroscope-style ingest URL windows are pushed to (default: none).
    pub push: Option<String>,
    /// `push_every`: the length of a pushed window, 1s..=1h (default 15s).
    pub push_every: Duration,
    /// `app`: the `app` label of pushed profiles (default `pcct`).
    pub app: String,
    /// `instance`: the `instance` label of pushed profiles (default `<host>-<pid>`).
    pub instance: Option<String>,
    /// `walker`: pcct's own stack walker or AsyncGetCallTrace alone (default pcct).
    pub walker: StackWalker,
    /// `nonsafepoints`: turn DebugNonSafepoints on at start-up (`on`/`off`, default on).
    pub nonsafepoints: bool,
    /// `alloc`: mean bytes between sampled allocations, 1k..=1g, or `off` (default 512k).
    pub alloc_interval: Option<u64>,
    /// `alloc_rate`: sampled allocations recorded a second at most, on
    /// average (the rest thinned, unbiased); `None` (`off`): all of them
    /// (default 5000).
    pub alloc_rate: Option<u64>,
    /// `locks`: record contended monitor enters (`on`/`off`, default on).
    pub locks: bool,
    /// `live`: most sampled allocations tracked for the live heap, 1..=
    /// 1,000,000, or `None` (`off`) (default 65536).
    pub live: Option<usize>,
    /// `threads`: `java` (only Java threads are sampled) or `all` (also
    /// HotSpot's own threads, pcct's and native ones, each under its kind).
    pub all_threads: bool,
    /// `native`: samples carry native frames (`on`/`off`).
    pub native: bool,
    /// `kinds`: samples carry each Java frame's kind (`on`/`off`).
    pub kinds: bool,
    /// `annotate`: the collapsed file writes frame kinds (`on`/`off`;
    /// records them too).
    pub annotate: bool,
    /// `kernel`: timers' samples carry kernel frames (`on`/`off`).
    pub kernel: bool,
}

/// Who may ask for recompilation (the `recompile` option).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Recompile {
    /// Never.
    Off,
    /// Holders of the control token; nobody when none is set.
    #[default]
    On,
    /// Anyone who reaches the port when no token is set.
    UnsafeWithoutToken,
}

impl Recompile {
    pub fn name(self) -> &'static str {
        match self {
            Recompile::Off => "off",
            Recompile::On => "on",
            Recompile::UnsafeWithoutToken => "unsafe-without-token",
        }
    }

    fn parse(text: &str) -> Option<Recompile> {
        match text {
            "unsafe-without-token" => Some(Recompile::UnsafeWithoutToken),
            _ => parse_switch(text).map(|on| if on { Recompile::On } else { Recompile::Off }),
        }
    }
}

/// Which stack walker walks (the `walker` option).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StackWalker {
    /// pcct's own HotSpot walker, AsyncGetCallTrace for what it cannot finish.
    #[default]
    Pcct,
    /// AsyncGetCallTrace alone.
    Agct,
}

impl StackWalker {
    pub fn name(self) -> &'static str {
        match self {
            StackWalker::Pcct => "pcct",
            StackWalker::Agct => "agct",
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            interval: Duration::from_millis(10),
            mode: Mode::Cpu,
            tree: TreeMode::Pcct,
            depth: 512,
            walk_limit: None,
            purge: None,
            arena_bytes: 64 << 20,
            on_full: FullPolicy::Drop,
            prefilter: true,
            idle_share: 0.1,
            signal: libc::SIGPROF,
            timer: TimerSource::Thread,
            max_spin: Duration::from_micros(20),
            batch: Duration::from_millis(20),
            jitter: 0.5,
            recent: 4096,
            hot_list: 1024,
            methods_limit: 32 << 20,
            file: None,
            format: None,
            metric: None,
            http: true,
            port: 0,
            bind: "127.0.0.1".to_string(),
            token: None,
            token_file: None,
            read_token: None,
            read_token_file: None,
            unauthenticated: false,
            allow_hosts: Vec::new(),
            addr_file: None,
            metrics_top: 10,
            quiet: false,
            compiled: true,
            recompile: Recompile::On,
            recompile_every: Duration::from_secs(30),
            push: None,
            push_every: Duration::from_secs(15),
            app: "pcct".to_string(),
            instance: None,
            walker: StackWalker::Pcct,
            nonsafepoints: true,
            alloc_interval: Some(512 << 10),
            alloc_rate: Some(5000),
            locks: true,
            live: Some(DEFAULT_LIVE),
            all_threads: false,
            native: false,
            kinds: false,
            annotate: false,
            kernel: false,
        }
    }
}

/// Objects the live heap tracks at most by default: 2.6 MB of table.
pub const DEFAULT_LIVE: usize = 65536;

/// A rejected option: its key (or the whole item) and what is allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bad option `{item}`: {allowed}")]
pub struct OptionError {
    pub item: String,
    pub allowed: String,
}

impl OptionError {
    /// The item is cut to 200 characters and its control characters are
    /// escaped, so the message stays one short line whatever was passed.
    fn new(item: &str, allowed: impl Into<String>) -> OptionError {
        let item = item.chars().take(200).flat_map(|c| c.escape_debug()).collect();
        OptionError { item, allowed: allowed.into() }
    }
}

pub use pcct_sampler::config::parse_duration;

/// Parses `64m`, `512k`, `1g`, `1048576`.
pub fn parse_size(text: &str) -> Option<usize> {
    let text = text.trim().to_ascii_lowercase();
    let (digits, multiplier) = match text.strip_suffix('b').unwrap_or(&text) {
        t if t.ends_with('k') => (&t[..t.len() - 1], 1usize << 10),
        t if t.ends_with('m') => (&t[..t.len() - 1], 1 << 20),
        t if t.ends_with('g') => (&t[..t.len() - 1], 1 << 30),
        t => (t, 1),
    };
    let number: usize = digits.parse().ok()?;
    number.checked_mul(multiplier)
}

fn parse_switch(text: &str) -> Option<bool> {
    match text {
        "on" | "true" | "yes" | "1" => Some(true),
        "off" | "false" | "no" | "0" => Some(false),
        _ => None,
    }
}

fn parse_ranged<T: std::str::FromStr + PartialOrd + Copy>(text: &str, low: T, high: T) -> Option<T> {
    text.parse().ok().filter(|value| *value >= low && *value <= high)
}

/// One option, described once: parsing, the list of keys, the error
/// messages, `/api/status`'s settings and docs/options.md's table all
/// come from [`OPTIONS`].
pub struct OptionSpec {
    pub key: &'static str,
    /// The default as the options reference shows it.
    pub default: &'static str,
    /// What a value may be: completes "`<key>` must be ...".
    pub allowed: &'static str,
    /// The options reference's "meaning" column.
    pub meaning: &'static str,
    /// Stores a value; false when it is not allowed.
    apply: fn(&mut Options, &str) -> bool,
    /// The option's entry in `/api/status`'s settings.
    show: fn(&Options) -> (&'static str, serde_json::Value),
}

fn ranged_duration(text: &str, low: Duration, high: Duration) -> Option<Duration> {
    parse_duration(text).filter(|d| (low..=high).contains(d))
}

fn set<T>(field: &mut T, value: Option<T>) -> bool {
    value.map(|value| *field = value).is_some()
}

fn path(text: &str) -> Option<PathBuf> {
    (!text.is_empty()).then(|| PathBuf::from(text))
}

/// Fewest bytes of a token: shorter ones are guessed too easily.
pub const MIN_TOKEN_BYTES: usize = 16;

/// What a token may be, as the error messages say it.
const TOKEN_ALLOWED: &str = "16 to 256 visible ASCII characters (a shorter token is guessed too easily; \
                             `openssl rand -hex 16` makes one)";

/// A token: [`MIN_TOKEN_BYTES`] to 256 visible ASCII characters.
fn valid_token(text: &str) -> Option<String> {
    let valid = (MIN_TOKEN_BYTES..=256).contains(&text.len()) && text.chars().all(|c| c.is_ascii_graphic());
    valid.then(|| text.to_string())
}

/// The token in `path`: its first line, if the file is readable by its
/// owner only and the line is a valid token.
fn read_token_file(path: &std::path::Path) -> Result<String, String> {
    use std::os::unix::fs::PermissionsExt;
    let metadata = std::fs::metadata(path).map_err(|error| format!("cannot read it: {error}"))?;
    let mode = metadata.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!("its group or others may read it (mode {mode:o}): chmod 600 it"));
    }
    let text = std::fs::read_to_string(path).map_err(|error| format!("cannot read it: {error}"))?;
    valid_token(text.lines().next().unwrap_or("").trim())
        .ok_or_else(|| format!("its first line must be the token, {TOKEN_ALLOWED}"))
}

/// A token given as `key` (`given`) or read from `key`_file (`file`), not both.
fn token_from(given: Option<String>, file: Option<&std::path::Path>, key: &str) -> Result<Option<String>, OptionError> {
    let Some(path) = file else { return Ok(given) };
    if given.is_some() {
        return Err(OptionError::new(&format!("{key}_file"), format!("give {key} or {key}_file, not both")));
    }
    let item = format!("{key}_file={}", path.display());
    read_token_file(path).map(Some).map_err(|reason| OptionError::new(&item, reason))
}

fn nanos(duration: Duration) -> serde_json::Value {
    (duration.as_nanos() as u64).into()
}

/// Every option, in the options reference's order.
pub const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        key: "interval",
        default: "10ms",
        allowed: "a duration from 100us to 1s, such as 500us, 1ms or 10ms",
        meaning: "time between ticks, 100us..1s (`500us`, `1ms`, ...)",
        apply: |o, v| set(&mut o.interval, ranged_duration(v, Duration::from_micros(100), Duration::from_secs(1))),
        show: |o| ("interval_ns", nanos(o.interval)),
    },
    OptionSpec {
        key: "mode",
        default: "cpu",
        allowed: "cpu or wall",
        meaning: "`cpu`: threads that used CPU, weighted by it; `wall`: every thread every tick, weighted by wall time",
        apply: |o, v| set(&mut o.mode, Mode::parse(v)),
        show: |o| ("mode", o.mode.name().into()),
    },
    OptionSpec {
        key: "tree",
        default: "pcct",
        allowed: "pcct or methods",
        meaning: "`pcct` (calling contexts) or `methods` (Whaley's hot-method counters only: a method's total is its self weight; an allocation or monitor wait counts for its class alone, not the code that allocated or waited)",
        apply: |o, v| {
            let mode = match v {
                "pcct" => Some(TreeMode::Pcct),
                "methods" | "hot-methods" => Some(TreeMode::HotMethods),
                _ => None,
            };
            set(&mut o.tree, mode)
        },
        show: |o| ("tree", o.tree.name().into()),
    },
    OptionSpec {
        key: "depth",
        default: "512",
        allowed: "a whole number from 1 to 4096",
        meaning: "most frames per sample (deeper stacks go under `[truncated]`), 1..4096",
        apply: |o, v| set(&mut o.depth, parse_ranged(v, 1, 4096)),
        show: |o| ("depth", o.depth.into()),
    },
    OptionSpec {
        key: "walk",
        default: "off",
        allowed: "off or a whole number from 1 to 4096",
        meaning: "Whaley's BUFSIZE: most new frames per update; deeper new chains hang under `[unattached]`",
        apply: |o, v| set(&mut o.walk_limit, if v == "off" { Some(None) } else { parse_ranged(v, 1, 4096).map(Some) }),
        show: |o| ("walk", o.walk_limit.into()),
    },
    OptionSpec {
        key: "purge",
        default: "off",
        allowed: "off or a duration of at least 100ms, such as 10s",
        meaning: "clear the profile periodically (`10s`)",
        apply: |o, v| {
            let period = if v == "off" {
                Some(None)
            } else {
                parse_duration(v).filter(|d| *d >= Duration::from_millis(100)).map(Some)
            };
            set(&mut o.purge, period)
        },
        show: |o| ("purge_ns", o.purge.map(|d| d.as_nanos() as u64).into()),
    },
    OptionSpec {
        key: "arena",
        default: "64m",
        allowed: "a size from 64k to 16g, such as 64m",
        meaning: "memory for nodes and edges (96 bytes per context, 64 more for an allocation or monitor site)",
        apply: |o, v| set(&mut o.arena_bytes, parse_size(v).filter(|size| (64 << 10..=16 << 30).contains(size))),
        show: |o| ("arena_bytes", o.arena_bytes.into()),
    },
    OptionSpec {
        key: "on_full",
        default: "drop",
        allowed: "drop or purge",
        meaning: "when the arena is full: `drop` samples needing new nodes (counted) or `purge`",
        apply: |o, v| {
            let policy = match v {
                "drop" => Some(FullPolicy::Drop),
                "purge" => Some(FullPolicy::Purge),
                _ => None,
            };
            set(&mut o.on_full, policy)
        },
        show: |o| ("on_full", format!("{:?}", o.on_full).to_lowercase().into()),
    },
    OptionSpec {
        key: "prefilter",
        default: "on",
        allowed: "on or off",
        meaning: "with `timer=sampler` (cpu mode): skip threads whose CPU clock moved less than `idle` of an interval; `off`: the register checksum alone decides",
        apply: |o, v| set(&mut o.prefilter, parse_switch(v)),
        show: |o| ("prefilter", o.prefilter.into()),
    },
    OptionSpec {
        key: "idle",
        default: "0.1",
        allowed: "a number from 0 to 1, such as 0.1",
        meaning: "share of an interval a thread must use to be signalled",
        apply: |o, v| set(&mut o.idle_share, parse_ranged(v, 0.0, 1.0)),
        show: |o| ("idle", o.idle_share.into()),
    },
    OptionSpec {
        key: "signal",
        default: "SIGPROF",
        allowed: "SIGPROF, SIGVTALRM, SIGUSR1, SIGUSR2 or SIGRTMIN+n",
        meaning: "the sampling signal (`SIGRTMIN+3`, ...); refused if someone else handles it",
        apply: |o, v| set(&mut o.signal, pcct_sampler::signal::parse_signal(v).filter(|s| !RESERVED_SIGNALS.contains(s))),
        show: |o| ("signal", pcct_sampler::signal::signal_name(o.signal).into()),
    },
    OptionSpec {
        key: "timer",
        default: "thread",
        allowed: "thread or sampler",
        meaning: "cpu mode: `thread`, each thread's own CPU timer signals it after every interval of its CPU (a perf event; \
                  the sampler's signal where the kernel refuses one); `sampler`, the sampler thread signals the threads that ran",
        apply: |o, v| set(&mut o.timer, TimerSource::parse(v)),
        show: |o| ("timer", o.timer.name().into()),
    },
    OptionSpec {
        key: "spin",
        default: "20us",
        allowed: "a duration from 0us to 200us",
        meaning: "most time the timer spins before a tick (`0us`: sleep only)",
        apply: |o, v| set(&mut o.max_spin, ranged_duration(v, Duration::ZERO, Duration::from_micros(200))),
        show: |o| ("spin_ns", nanos(o.max_spin)),
    },
    OptionSpec {
        key: "threads",
        default: "java",
        allowed: "java or all",
        meaning: "which threads are sampled: `java`, the threads that run Java code; `all`, also HotSpot's own (garbage \
                  collectors, JIT compilers, the VM thread, ...), pcct's and native ones, found in `/proc/self/task` \
                  every half second, each under a root naming its kind (`[GC]`, `[C2 CompilerThread]`, `[VM Thread]`, \
                  `[JVM]`, `[pcct]`, `[native]`) and its family (`[G1 Refine]`), with their native frames below \
                  when `native=on` (else nothing below)",
        apply: |o, v| {
            set(
                &mut o.all_threads,
                match v {
                    "java" => Some(false),
                    "all" => Some(true),
                    _ => None,
                },
            )
        },
        show: |o| ("threads", if o.all_threads { "all" } else { "java" }.into()),
    },
    OptionSpec {
        key: "native",
        default: "off",
        allowed: "on or off",
        meaning: "samples carry native frames: below a Java thread's last Java frame (libjvm, libc, JNI libraries: a \
                  function as a method of its library, `libz.so.1` `deflate`), and the whole stacks of the threads that \
                  run no Java code (`threads=all`), unwound from the signal's registers through each library's unwind \
                  tables or frame pointers, named from its ELF symbols",
        apply: |o, v| set(&mut o.native, parse_switch(v)),
        show: |o| ("native", o.native.into()),
    },
    OptionSpec {
        key: "kinds",
        default: "off",
        allowed: "on or off",
        meaning: "samples carry each Java frame's kind as pcct's walker saw it: interpreted, C1 code of its tier, \
                  C2 code, or inlined into the compiled frame below it; a kind is part of a context's identity \
                  (the same call interpreted and compiled is two contexts), written as `kind` in JSON, a \
                  `frame_kinds` label in pprof, `_[0]` `_[1]` `_[j]` `_[i]` suffixes in collapsed stacks \
                  (`/api/collapsed?annotate=on`, `annotate=on`) and colours in the flame graph",
        apply: |o, v| set(&mut o.kinds, parse_switch(v)),
        show: |o| ("kinds", o.records_kinds().into()),
    },
    OptionSpec {
        key: "annotate",
        default: "off",
        allowed: "on or off",
        meaning: "the collapsed file (`file=...`) writes each Java frame's kind as async-profiler's `ann` does: \
                  `_[0]` interpreted, `_[1]` C1, `_[j]` C2, `_[i]` inlined; turns `kinds` on",
        apply: |o, v| set(&mut o.annotate, parse_switch(v)),
        show: |o| ("annotate", o.annotate.into()),
    },
    OptionSpec {
        key: "kernel",
        default: "off",
        allowed: "on or off",
        meaning: "samples of threads' own CPU timers (`timer=thread`) carry the kernel's frames where the thread was \
                  in the kernel (a system call, a page fault), named from `/proc/kallsyms` and marked `_[k]` \
                  (`do_syscall_64_[k]`): the call chain each timer records at its overflow. The kernel allows it \
                  with `perf_event_paranoid` 1 or less, or CAP_PERFMON; where it refuses, `/api/status` says \
                  so and samples carry none",
        apply: |o, v| set(&mut o.kernel, parse_switch(v)),
        show: |o| ("kernel", o.kernel.into()),
    },
    OptionSpec {
        key: "batch",
        default: "20ms",
        allowed: "off, or a duration from 1ms to 100ms",
        meaning: "with threads' own CPU timers (`timer=thread`, cpu mode), the sampler thread sleeps this long between two \
                  drains (earlier when a thread's samples or the shared pool run low, a thread starts, or an answer wants the \
                  newest samples: answers drain first); `off`: it wakes every interval",
        apply: |o, v| {
            set(
                &mut o.batch,
                if v == "off" {
                    Some(Duration::ZERO)
                } else {
                    ranged_duration(v, Duration::from_millis(1), Duration::from_millis(100))
                },
            )
        },
        show: |o| ("batch_ns", nanos(o.batch)),
    },
    OptionSpec {
        key: "jitter",
        default: "0.5",
        allowed: "a number from 0 to 0.9, such as 0.5 (0: strictly periodic ticks)",
        meaning: "each gap between ticks is drawn from (1-jitter)..(1+jitter) intervals (mean: one interval), so ticks never lock onto a periodic program's phase; `0`: strictly periodic, 0..0.9",
        apply: |o, v| set(&mut o.jitter, parse_ranged(v, 0.0, 0.9)),
        show: |o| ("jitter", o.jitter.into()),
    },
    OptionSpec {
        key: "recent",
        default: "4096",
        allowed: "a whole number from 16 to 1000000",
        meaning: "raw samples kept for `/api/samples`",
        apply: |o, v| set(&mut o.recent, parse_ranged(v, 16, 1_000_000)),
        show: |o| ("recent", o.recent.into()),
    },
    OptionSpec {
        key: "hot",
        default: "1024",
        allowed: "a whole number from 16 to 100000",
        meaning: "elements each hot list keeps sorted",
        apply: |o, v| set(&mut o.hot_list, parse_ranged(v, 16, 100_000)),
        show: |o| ("hot", o.hot_list.into()),
    },
    OptionSpec {
        key: "methods",
        default: "32m",
        allowed: "a size from 256k to 4g",
        meaning: "memory for method names (256k..4g) before the table starts over (with a purge)",
        apply: |o, v| set(&mut o.methods_limit, parse_size(v).filter(|size| (256 << 10..=4 << 30).contains(size))),
        show: |o| ("methods_bytes", o.methods_limit.into()),
    },
    OptionSpec {
        key: "walker",
        default: "pcct",
        allowed: "pcct or agct",
        meaning: "`pcct`: pcct's own HotSpot stack walker, AsyncGetCallTrace for what it cannot finish; `agct`: AsyncGetCallTrace alone",
        apply: |o, v| {
            let walker = match v {
                "pcct" => Some(StackWalker::Pcct),
                "agct" => Some(StackWalker::Agct),
                _ => None,
            };
            set(&mut o.walker, walker)
        },
        show: |o| ("walker", o.walker.name().into()),
    },
    OptionSpec {
        key: "nonsafepoints",
        default: "on",
        allowed: "on or off",
        meaning: "turn HotSpot's DebugNonSafepoints on at start-up, so samples in inlined methods name them (see \"Inlined frames\"); `off`: leave the JVM's setting",
        apply: |o, v| set(&mut o.nonsafepoints, parse_switch(v)),
        show: |o| ("nonsafepoints", o.nonsafepoints.into()),
    },
    OptionSpec {
        key: "file",
        default: "—",
        allowed: "a path",
        meaning: "write the profile here at VM death",
        apply: |o, v| set(&mut o.file, path(v).map(Some)),
        show: |o| ("file", o.file.as_ref().map(|f| f.display().to_string()).into()),
    },
    OptionSpec {
        key: "format",
        default: "by extension",
        allowed: "collapsed, json, xtree, xarc, xprof, sites or pprof",
        meaning: "`collapsed`, `json`, `xtree`, `xarc`, `xprof`, `sites`, `pprof` (`.json` -> json, `.pb.gz` or `.pprof` -> pprof, ..., else collapsed)",
        apply: |o, v| set(&mut o.format, Format::parse(v).map(Some)),
        show: |o| ("format", o.file.as_ref().map(|_| o.dump_format().name()).into()),
    },
    OptionSpec {
        key: "metric",
        default: "by mode",
        allowed: "one of samples, cpu_ns (or cpu), wall_ns (or wall), alloc_bytes, alloc_objects, lock_wait_ns, lock_enters, live_bytes, live_objects",
        meaning: "the resource the file's reports count: `samples`, `cpu`, `wall`, `alloc_bytes`, `alloc_objects`, \
                  `lock_wait_ns`, `lock_enters`, `live_bytes`, `live_objects` (JSON holds them all)",
        apply: |o, v| set(&mut o.metric, Metric::parse(v).map(Some)),
        show: |o| ("metric", o.report_metric().name().into()),
    },
    OptionSpec {
        key: "http",
        default: "on",
        allowed: "on or off",
        meaning: "serve the HTTP API",
        apply: |o, v| set(&mut o.http, parse_switch(v)),
        show: |o| ("http", o.http.into()),
    },
    OptionSpec {
        key: "port",
        default: "0",
        allowed: "a whole number from 0 to 65535",
        meaning: "HTTP port (0: any free port; the address is printed)",
        apply: |o, v| set(&mut o.port, v.parse().ok()),
        show: |o| ("port", o.port.into()),
    },
    OptionSpec {
        key: "bind",
        default: "127.0.0.1",
        allowed: "an IP address, such as 127.0.0.1 or 0.0.0.0",
        meaning: "address to listen on",
        apply: |o, v| set(&mut o.bind, v.parse::<std::net::IpAddr>().ok().map(|_| v.to_string())),
        show: |o| ("bind", o.bind.clone().into()),
    },
    OptionSpec {
        key: "token",
        default: "—",
        allowed: TOKEN_ALLOWED,
        meaning: "the control token: require `Authorization: Bearer <token>` on every route but `/healthz` (or `read_token` on routes that only read); pausing, purging, changing sampling and recompiling need this one (browsers log in once at `/login` for a session cookie)",
        apply: |o, v| set(&mut o.token, valid_token(v).map(Some)),
        show: |o| ("token", o.token.as_ref().map(|_| "(set)").into()),
    },
    OptionSpec {
        key: "token_file",
        default: "—",
        allowed: "a path to a file readable by its owner only (chmod 600) holding the token",
        meaning: "read the control token from this file (refused if its group or others may read it); keeps it out of the command line",
        apply: |o, v| set(&mut o.token_file, path(v).map(Some)),
        show: |o| ("token_file", o.token_file.as_ref().map(|f| f.display().to_string()).into()),
    },
    OptionSpec {
        key: "read_token",
        default: "—",
        allowed: TOKEN_ALLOWED,
        meaning: "the read-only token: every route that only reads (the page, reports, `/metrics`, pprof), never one that pauses, purges, changes sampling or recompiles; give it to scrapers",
        apply: |o, v| set(&mut o.read_token, valid_token(v).map(Some)),
        show: |o| ("read_token", o.read_token.as_ref().map(|_| "(set)").into()),
    },
    OptionSpec {
        key: "read_token_file",
        default: "—",
        allowed: "a path to a file readable by its owner only (chmod 600) holding the read-only token",
        meaning: "read the read-only token from this file (refused if its group or others may read it)",
        apply: |o, v| set(&mut o.read_token_file, path(v).map(Some)),
        show: |o| ("read_token_file", o.read_token_file.as_ref().map(|f| f.display().to_string()).into()),
    },
    OptionSpec {
        key: "unauthenticated",
        default: "off",
        allowed: "on or off",
        meaning: "`on`: allow a non-loopback `bind` without a token (anyone who reaches the port may read and control the profiler)",
        apply: |o, v| set(&mut o.unauthenticated, parse_switch(v)),
        show: |o| ("unauthenticated", o.unauthenticated.into()),
    },
    OptionSpec {
        key: "allow_hosts",
        default: "—",
        allowed: "host names or IP addresses separated by `|`, such as box.example|10.0.0.5",
        meaning: "without `token`, names besides loopback addresses and `localhost` that HTTP requests may give in \
                  `Host` (`name1\\|name2`; see HTTP API)",
        apply: |o, v| {
            let names: Vec<String> = v.split('|').map(|name| name.trim().to_ascii_lowercase()).collect();
            let valid = names.len() <= 64
                && names.iter().all(|name| {
                    !name.is_empty()
                        && name.len() <= 255
                        && name.chars().all(|c| c.is_ascii_alphanumeric() || ".-_:[]".contains(c))
                });
            set(&mut o.allow_hosts, valid.then_some(names))
        },
        show: |o| ("allow_hosts", (!o.allow_hosts.is_empty()).then(|| o.allow_hosts.join("|")).into()),
    },
    OptionSpec {
        key: "addr_file",
        default: "—",
        allowed: "a path",
        meaning: "write the chosen `host:port` to this file",
        apply: |o, v| set(&mut o.addr_file, path(v).map(Some)),
        show: |o| ("addr_file", o.addr_file.as_ref().map(|f| f.display().to_string()).into()),
    },
    OptionSpec {
        key: "top",
        default: "10",
        allowed: "a whole number from 0 to 100",
        meaning: "hot methods exported as a Prometheus gauge (and as many allocation and monitor sites)",
        apply: |o, v| set(&mut o.metrics_top, parse_ranged(v, 0, 100)),
        show: |o| ("top", o.metrics_top.into()),
    },
    OptionSpec {
        key: "quiet",
        default: "off",
        allowed: "on or off",
        meaning: "print nothing but errors",
        apply: |o, v| set(&mut o.quiet, parse_switch(v)),
        show: |o| ("quiet", o.quiet.into()),
    },
    OptionSpec {
        key: "compiled",
        default: "on",
        allowed: "on or off",
        meaning: "keep which hot edges HotSpot inlined, from CompiledMethodLoad/Unload events and their inline records (`inlined` in `/api/hot-edges`, `/api/jit/*`); `off`: no such events",
        apply: |o, v| set(&mut o.compiled, parse_switch(v)),
        show: |o| ("compiled", o.compiled.into()),
    },
    OptionSpec {
        key: "recompile",
        default: "on",
        allowed: "on, off or unsafe-without-token",
        meaning: "serve `POST /api/jit/recompile` (`pcct advise --apply`) to holders of the control token: HotSpot compiles named classes again after JVMTI retransforms them (the capability is added at the first request, not at start-up; the first request deoptimises all compiled code, each later one that of the classes and of code that inlined them); without `token` it is refused; `unsafe-without-token`: served to anyone who reaches the port when no token is set; `off`: refused",
        apply: |o, v| set(&mut o.recompile, Recompile::parse(v)),
        show: |o| ("recompile", o.recompile.name().into()),
    },
    OptionSpec {
        key: "recompile_every",
        default: "30s",
        allowed: "a duration from 1s to 1h",
        meaning: "least time between two recompile requests (more get 429 with `Retry-After`)",
        apply: |o, v| {
            set(&mut o.recompile_every, ranged_duration(v, Duration::from_secs(1), Duration::from_secs(3600)))
        },
        show: |o| ("recompile_every_ms", (o.recompile_every.as_millis() as u64).into()),
    },
    OptionSpec {
        key: "alloc",
        default: "512k",
        allowed: "off or a size from 1k to 1g, such as 512k",
        meaning: "sample allocations every so many bytes on average (JVMTI SampledObjectAlloc, as JFR and async-profiler), \
                  recorded in the same tree under their type (see \"Allocations and locks\"); `off`: no allocation events",
        apply: |o, v| {
            let interval = if v == "off" {
                Some(None)
            } else {
                parse_size(v).filter(|size| (1 << 10..=1 << 30).contains(size)).map(|size| Some(size as u64))
            };
            set(&mut o.alloc_interval, interval)
        },
        show: |o| ("alloc_interval_bytes", o.alloc_interval.into()),
    },
    OptionSpec {
        key: "live",
        default: "65536",
        allowed: "off or a number of objects from 1 to 1000000",
        meaning: "the live heap (`live_bytes`, `live_objects`): every recorded allocation keeps a weak reference to \
                  its object, checked after each garbage collection by the agent's heap thread; the objects still \
                  reachable are a resource like the others. At most so many are tracked (about 40 bytes each and \
                  a JNI weak reference); beyond it new ones are not, and are counted. Needs `alloc=`; `off`: no \
                  weak references, no GarbageCollectionFinish events",
        apply: |o, v| {
            let live = if v == "off" { Some(None) } else { parse_ranged(v, 1, 1_000_000).map(Some) };
            set(&mut o.live, live)
        },
        show: |o| ("live_max", o.live.map(|max| max as u64).into()),
    },
    OptionSpec {
        key: "alloc_rate",
        default: "5000",
        allowed: "off or a number of samples a second from 1 to 100000",
        meaning: "record about so many sampled allocations a second at most: above it each sample is kept at random \
                  and the kept ones weigh for the rest, so shares and totals stay unbiased. What the default buys: \
                  50,000 samples in 10 s, every share within about 0.25 points (one standard error); what it costs: \
                  an event takes about 5 µs of CPU on H2's and a service's stacks (2.5 % of a CPU at the limit), \
                  32 µs on javac's varied deep ones (see \"Allocations and locks\"); `off`: every sample `alloc=` \
                  gives",
        apply: |o, v| {
            let rate = if v == "off" { Some(None) } else { parse_ranged(v, 1, 100_000).map(Some) };
            set(&mut o.alloc_rate, rate)
        },
        show: |o| ("alloc_rate_per_s", o.alloc_rate.into()),
    },
    OptionSpec {
        key: "locks",
        default: "on",
        allowed: "on or off",
        meaning: "record contended monitor enters (JVMTI MonitorContendedEnter/Entered): wait time per context and \
                  monitor class; `off`: no monitor events",
        apply: |o, v| set(&mut o.locks, parse_switch(v)),
        show: |o| ("locks", o.locks.into()),
    },
    OptionSpec {
        key: "push",
        default: "—",
        allowed: "an http:// URL with a host and no query",
        meaning: "push the profile window by window (gzipped pprof) to this Pyroscope-style `/ingest` URL (`/ingest` added to a bare host:port); see \"Pushing profiles\"",
        apply: |o, v| set(&mut o.push, pcct_server::push::check_url(v).ok().map(Some)),
        show: |o| ("push", o.push.as_deref().map(pcct_server::push::redacted).into()),
    },
    OptionSpec {
        key: "push_every",
        default: "15s",
        allowed: "a duration from 1s to 1h",
        meaning: "length of each pushed window",
        apply: |o, v| set(&mut o.push_every, ranged_duration(v, Duration::from_secs(1), Duration::from_secs(3600))),
        show: |o| ("push_every_ms", (o.push_every.as_millis() as u64).into()),
    },
    OptionSpec {
        key: "app",
        default: "pcct",
        allowed: "1 to 100 letters, digits and `._-:`",
        meaning: "the application name pushed profiles carry",
        apply: |o, v| set(&mut o.app, label(v)),
        show: |o| ("app", o.app.clone().into()),
    },
    OptionSpec {
        key: "instance",
        default: "host-pid",
        allowed: "1 to 100 letters, digits and `._-:`",
        meaning: "the `instance` label pushed profiles carry",
        apply: |o, v| set(&mut o.instance, label(v).map(Some)),
        show: |o| ("instance", o.instance_label().into()),
    },
];

/// Events that may wait for the sampler between two ticks (sampled
/// allocations and monitor waits together; more are dropped, counted):
/// 100,000 a second at the default interval. Each holds its frames (16
/// bytes a frame, `depth` at most), so this bounds their memory too.
const EVENT_QUEUE: usize = 1024;

/// A label value for pushed profiles (`app`, `instance`).
fn label(text: &str) -> Option<String> {
    let valid =
        (1..=100).contains(&text.len()) && text.chars().all(|c| c.is_ascii_alphanumeric() || "._-:".contains(c));
    valid.then(|| text.to_string())
}

/// Signals pcct must not take (the JVM and the kernel own them).
const RESERVED_SIGNALS: [i32; 7] =
    [libc::SIGKILL, libc::SIGSTOP, libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE, libc::SIGQUIT];

/// The option names.
pub fn keys() -> impl Iterator<Item = &'static str> {
    OPTIONS.iter().map(|spec| spec.key)
}

/// The options reference (`docs/options.md`'s table), as [`OPTIONS`] describes it.
pub fn reference_table() -> String {
    let mut table = String::from("| option | default | meaning |\n|---|---|---|\n");
    for spec in OPTIONS {
        // Values in backticks; "—" (none) and descriptions ("by mode") as they are.
        let plain = spec.default == "—" || spec.default.contains(' ');
        let default = if plain { spec.default.to_string() } else { format!("`{}`", spec.default) };
        table.push_str(&format!("| `{}` | {default} | {} |\n", spec.key, spec.meaning));
    }
    table
}

impl Options {
    /// Parses an option string (empty or absent: all defaults).
    pub fn parse(text: &str) -> Result<Options, OptionError> {
        let mut options = Options::default();
        for item in text.split([',', ';']) {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let split =
                item.find(['=', ':']).ok_or_else(|| OptionError::new(item, "expected key=value or key:value"))?;
            let (key, value) = (item[..split].trim(), item[split + 1..].trim());
            let Some(spec) = OPTIONS.iter().find(|spec| spec.key == key) else {
                let known = keys().collect::<Vec<_>>().join(", ");
                return Err(OptionError::new(item, format!("unknown option; known options: {known}")));
            };
            if !(spec.apply)(&mut options, value) {
                // A token is never echoed, not even a malformed one.
                let hidden = match key {
                    "push" => format!("push={}", pcct_server::push::redacted(value)),
                    _ => format!("{key}=(not shown)"),
                };
                let shown = if key.ends_with("token") || key == "push" { hidden.as_str() } else { item };
                return Err(OptionError::new(shown, format!("{key} must be {}", spec.allowed)));
            }
        }
        options.check_combinations()?;
        Ok(options)
    }

    /// The rules between options, once every option is parsed; reads
    /// `token_file` and `read_token_file`.
    fn check_combinations(&mut self) -> Result<(), OptionError> {
        if self.format.is_some() && self.file.is_none() {
            return Err(OptionError::new("format", "format needs file=<path> too"));
        }
        self.token = token_from(self.token.take(), self.token_file.as_deref(), "token")?;
        self.read_token = token_from(self.read_token.take(), self.read_token_file.as_deref(), "read_token")?;
        if self.token.is_some() && self.token == self.read_token {
            return Err(OptionError::new("read_token", "read_token must differ from token (the control token)"));
        }
        let loopback = self.bind.parse::<std::net::IpAddr>().is_ok_and(|address| address.is_loopback());
        let any_token = self.token.is_some() || self.read_token.is_some();
        if self.http && !loopback && !any_token && !self.unauthenticated {
            let item = format!("bind={}", self.bind);
            let why = "a non-loopback address needs token= or token_file= (or unauthenticated=on to serve anyone who reaches the port)";
            return Err(OptionError::new(&item, why));
        }
        Ok(())
    }

    /// Whether recompile requests are served: `recompile=on` with a control
    /// token, or `unsafe-without-token`.
    pub fn recompile_served(&self) -> bool {
        match self.recompile {
            Recompile::Off => false,
            Recompile::On => self.token.is_some(),
            Recompile::UnsafeWithoutToken => true,
        }
    }

    /// The options in force, as `/api/status` shows them.
    pub fn settings(&self) -> serde_json::Map<String, serde_json::Value> {
        OPTIONS.iter().map(|spec| (spec.show)(self)).map(|(key, value)| (key.to_string(), value)).collect()
    }

    /// The `instance` label: as given, else `<host name>-<pid>`.
    pub fn instance_label(&self) -> String {
        self.instance.clone().unwrap_or_else(|| {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
            let host: String =
                host.trim().chars().filter(|c| c.is_ascii_alphanumeric() || "._-".contains(*c)).collect();
            format!("{}-{}", if host.is_empty() { "jvm" } else { &host }, std::process::id())
        })
    }

    /// The push's configuration, if `push` is set.
    pub fn push_config(&self) -> Option<pcct_server::push::PushConfig> {
        Some(pcct_server::push::PushConfig {
            url: self.push.clone()?,
            every: self.push_every,
            app: self.app.clone(),
            instance: self.instance_label(),
        })
    }

    /// The dump format: as given, else from the file's extension, else collapsed.
    pub fn dump_format(&self) -> Format {
        if let Some(format) = self.format {
            return format;
        }
        let extension = self.file.as_ref().and_then(|file| file.extension()).and_then(|e| e.to_str()).unwrap_or("");
        match extension {
            "json" => Format::Json,
            "xtree" => Format::Xtree,
            "xarc" => Format::Xarc,
            "xprof" => Format::Xprof,
            "sites" => Format::Sites,
            "pprof" => Format::Pprof,
            "gz" if self.file.as_ref().is_some_and(|file| file.to_string_lossy().ends_with(".pb.gz")) => Format::Pprof,
            _ => Format::Collapsed,
        }
    }

    /// How the file's reports are written.
    pub fn file_report(&self) -> pcct::export::ReportOptions {
        pcct::export::ReportOptions { metric: self.report_metric(), min_cum_share: 0.0, annotate: self.annotate }
    }

    /// Whether samples record frame kinds: `kinds=on`, or `annotate=on`,
    /// which needs them.
    pub fn records_kinds(&self) -> bool {
        self.kinds || self.annotate
    }

    /// The metric reports count: as given, else CPU time in cpu mode and wall time in wall mode.
    pub fn report_metric(&self) -> Metric {
        self.metric.unwrap_or(match self.mode {
            Mode::Cpu => Metric::CpuNs,
            Mode::Wall => Metric::WallNs,
        })
    }

    /// The sampler's configuration for these options.
    pub fn sampler_config(&self) -> pcct_sampler::SamplerConfig {
        pcct_sampler::SamplerConfig {
            interval: self.interval,
            mode: self.mode,
            depth: self.depth,
            prefilter: self.prefilter,
            idle_share: self.idle_share,
            signal: self.signal,
            timer: self.timer,
            max_spin: self.max_spin,
            batch: self.batch,
            jitter: self.jitter,
            recent_capacity: self.recent,
            exclude_after_failures: 64,
            methods_limit: self.methods_limit,
            event_capacity: if self.alloc_interval.is_some() || self.locks { EVENT_QUEUE } else { 0 },
            live_capacity: if self.alloc_interval.is_some() { self.live.unwrap_or(0) } else { 0 },
            all_threads: self.all_threads,
            native: self.native,
            kinds: self.records_kinds(),
            kernel: self.kernel,
            tree: pcct::TreeConfig {
                mode: self.tree,
                metric: match self.mode {
                    Mode::Cpu => Metric::CpuNs,
                    Mode::Wall => Metric::WallNs,
                },
                arena_bytes: self.arena_bytes,
                hot_list_capacity: self.hot_list,
                walk_limit: self.walk_limit,
                full_policy: self.on_full,
                purge_period: self.purge,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_syntaxes_parse_to_the_same_options() {
        let a = Options::parse("interval=1ms,mode=wall,depth=64,file=/tmp/p.json,port=8080").unwrap();
        let b = Options::parse("interval:1ms;mode:wall;depth:64;file:/tmp/p.json;port:8080").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.interval, Duration::from_millis(1));
        assert_eq!(a.mode, Mode::Wall);
        assert_eq!(a.dump_format(), Format::Json);
        assert_eq!(Options::parse("").unwrap(), Options::default());
        for (file, format) in [("p.pb.gz", Format::Pprof), ("p.pprof", Format::Pprof), ("p.gz", Format::Collapsed)] {
            assert_eq!(Options::parse(&format!("file=/tmp/{file}")).unwrap().dump_format(), format, "{file}");
        }
    }

    #[test]
    fn every_rejection_names_the_option() {
        for (text, key) in [
            ("interval=abc", "interval"),
            ("interval=10us", "interval"),
            ("mode=fast", "mode"),
            ("depth=0", "depth"),
            ("arena=1k", "arena"),
            ("port=70000", "port"),
            ("bind=localhost", "bind"),
            ("colour=red", "colour"),
            ("format=xml,file=a", "format"),
            ("format=json", "format"),
            ("signal=SIGSEGV", "signal"),
            ("jitter=1", "jitter"),
            ("jitter=-0.1", "jitter"),
            ("jitter=NaN", "jitter"),
            ("novalue", "novalue"),
            ("bind=0.0.0.0", "bind"),
            ("token=a-long-enough-token-1,token_file=/x", "token_file"),
            ("token_file=/nonexistent-pcct-token", "token_file"),
            ("token=short", "token"),
            ("read_token=short", "read_token"),
            ("token=same-token-for-both-1,read_token=same-token-for-both-1", "read_token"),
            ("recompile=maybe", "recompile"),
            ("recompile_every=100ms", "recompile_every"),
        ] {
            let error = Options::parse(text).unwrap_err();
            let line = error.to_string();
            assert!(line.contains(key), "{text}: {line}");
            assert!(!line.contains('\n'), "one line: {line}");
        }
    }

    #[test]
    fn a_token_is_never_echoed() {
        for key in ["token", "read_token"] {
            let secret = "s3cr3t-s3cr3t-s3cr3t\u{7f}";
            let line = Options::parse(&format!("{key}={secret}")).unwrap_err().to_string();
            assert!(line.contains(&format!("`{key}=(not shown)`")) && !line.contains("s3cr3t"), "{line}");
            let status = Options::parse(&format!("{key}=s3cr3t-s3cr3t-s3cr3t")).unwrap().settings();
            assert_eq!(status[key], "(set)");
        }
    }

    #[test]
    fn a_token_shorter_than_16_bytes_is_refused_in_one_line_naming_the_option() {
        let line = Options::parse("token=fifteen-bytes!!").unwrap_err().to_string();
        assert!(line.starts_with("bad option `token=(not shown)`: token must be 16 to 256"), "{line}");
        assert!(!line.contains('\n') && !line.contains("fifteen"), "{line}");
        assert!(Options::parse("token=sixteen-bytes!!!").is_ok());
    }

    #[test]
    fn recompiling_needs_the_control_token_unless_the_risk_is_named() {
        assert!(!Options::default().recompile_served(), "no token: refused");
        assert!(Options::parse("token=a-long-enough-token-1").unwrap().recompile_served());
        let read_only = Options::parse("read_token=a-long-enough-token-1").unwrap();
        assert!(!read_only.recompile_served(), "a read-only token cannot recompile");
        assert!(Options::parse("recompile=unsafe-without-token").unwrap().recompile_served());
        assert!(!Options::parse("recompile=off,token=a-long-enough-token-1").unwrap().recompile_served());
        assert_eq!(Options::parse("recompile_every=2s").unwrap().recompile_every, Duration::from_secs(2));
    }

    #[test]
    fn a_non_loopback_bind_needs_a_token_or_says_so() {
        assert!(Options::parse("bind=::1").is_ok());
        assert!(Options::parse("bind=0.0.0.0,token=a-long-enough-token-1").is_ok());
        assert!(Options::parse("bind=0.0.0.0,read_token=a-long-enough-token-1").is_ok());
        assert!(Options::parse("bind=0.0.0.0,unauthenticated=on").is_ok());
        assert!(Options::parse("bind=0.0.0.0,http=off").is_ok(), "nothing is served");
        assert!(Options::parse("bind=0.0.0.0").is_err());
    }

    #[test]
    fn the_token_files_must_be_the_owners_alone() {
        use std::os::unix::fs::PermissionsExt;
        type Field = fn(&Options) -> Option<String>;
        let fields: [(&str, Field); 2] = [("token", |o| o.token.clone()), ("read_token", |o| o.read_token.clone())];
        for (key, field) in fields {
            let directory = tempfile::tempdir().expect("a directory");
            let path = directory.path().join("token");
            std::fs::write(&path, "from-the-file-0123\n").expect("write");
            let option = format!("{key}_file={}", path.display());
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
            let line = Options::parse(&option).unwrap_err().to_string();
            assert!(line.contains(&format!("`{key}_file=")) && line.contains("chmod 600"), "{line}");
            assert!(!line.contains("from-the-file"), "{line}");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
            assert_eq!(field(&Options::parse(&option).unwrap()).as_deref(), Some("from-the-file-0123"));
            std::fs::write(&path, "short\n").expect("write");
            let line = Options::parse(&option).unwrap_err().to_string();
            assert!(line.contains("first line") && line.contains("16 to 256"), "{line}");
        }
    }

    #[test]
    fn every_default_in_the_table_is_the_default() {
        for spec in OPTIONS {
            if ["—", "by extension", "by mode", "host-pid"].contains(&spec.default) {
                continue;
            }
            let parsed = Options::parse(&format!("{}={}", spec.key, spec.default))
                .unwrap_or_else(|error| panic!("{}'s default does not parse: {error}", spec.key));
            assert_eq!(parsed, Options::default(), "{}={} is not the default", spec.key, spec.default);
        }
    }

    #[test]
    fn every_option_shows_in_the_settings_and_says_what_it_allows() {
        let settings = Options::default().settings();
        assert_eq!(settings.len(), OPTIONS.len(), "one setting per option: {settings:?}");
        for spec in OPTIONS {
            let error = Options::parse(&format!("{}=", spec.key)).expect_err("an empty value is never allowed");
            assert_eq!(error.allowed, format!("{} must be {}", spec.key, spec.allowed));
        }
    }

    /// docs/options.md's options table is the one `OPTIONS` describes.
    #[test]
    fn the_options_reference_matches_the_options() {
        let readme = include_str!("../../docs/options.md");
        let expected = reference_table();
        assert!(
            readme.contains(&expected),
            "docs/options.md's options table differs from agent/src/options.rs; it should read:\n{expected}"
        );
    }

    #[test]
    fn the_metric_option_takes_every_resource_by_the_names_everyone_uses() {
        let spec = OPTIONS.iter().find(|spec| spec.key == "metric").expect("metric");
        assert_eq!(spec.allowed, format!("one of {}", Metric::accepted()), "the message lists Metric::ALL");
        for metric in Metric::ALL {
            let parsed = Options::parse(&format!("metric={}", metric.name())).expect("every resource");
            assert_eq!(parsed.report_metric(), metric);
        }
        assert_eq!(Options::parse("metric=cpu").unwrap().report_metric(), Metric::CpuNs);
    }

    #[test]
    fn allocation_sampling_and_locks_switch_off_and_bound_the_interval() {
        let defaults = Options::default();
        assert_eq!((defaults.alloc_interval, defaults.locks), (Some(512 << 10), true));
        assert!(defaults.sampler_config().event_capacity > 0);
        let off = Options::parse("alloc=off,locks=off").unwrap();
        assert_eq!((off.alloc_interval, off.locks), (None, false));
        assert_eq!(off.sampler_config().event_capacity, 0, "no queue when no event is reported");
        assert_eq!(Options::parse("alloc=16k").unwrap().alloc_interval, Some(16 << 10));
        assert_eq!(defaults.alloc_rate, Some(5000));
        assert_eq!(Options::parse("alloc_rate=off").unwrap().alloc_rate, None);
        assert_eq!(Options::parse("alloc_rate=2000").unwrap().alloc_rate, Some(2000));
        for bad in
            ["alloc=100", "alloc=2g", "alloc=fast", "locks=maybe", "alloc_rate=0", "alloc_rate=1k", "alloc_rate=200001"]
        {
            assert!(Options::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_and_durations() {
        assert_eq!(parse_size("64m"), Some(64 << 20));
        assert_eq!(parse_size("512K"), Some(512 << 10));
        assert_eq!(parse_size("12"), Some(12));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_duration("500us"), Some(Duration::from_micros(500)));
        assert_eq!(parse_duration("1.5ms"), Some(Duration::from_micros(1500)));
        assert_eq!(parse_duration("10"), None);
    }
}
