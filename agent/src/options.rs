//! The agent's options: `-agentpath:libpcct_agent.so=interval=1ms,file=out.collapsed`
//! or, through jcmd (whose parser cuts at `=`), `interval:1ms;file:out.collapsed`.
//!
//! Items are separated by `,` or `;`; a key and its value by `=` or `:`
//! (the first of either in the item). Every option has a default; a bad one
//! is rejected with one line naming it and what it allows.

use std::path::PathBuf;
use std::time::Duration;

use pcct::export::Format;
use pcct::{FullPolicy, Metric, TreeMode};
use pcct_sampler::Mode;

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
    /// `spin`: most time the timer spins before a tick, 0 to 200us (default 20us).
    pub max_spin: Duration,
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
    /// `format`: collapsed, json, xtree, xarc or xprof (default: from the file's extension, else collapsed).
    pub format: Option<Format>,
    /// `metric`: what the reports and collapsed stacks count: cpu, wall or samples (default: by mode).
    pub metric: Option<Metric>,
    /// `http`: serve answers over HTTP (`on`/`off`, default on).
    pub http: bool,
    /// `port`: HTTP port, 0 for any free one (default 0).
    pub port: u16,
    /// `bind`: address to listen on (default 127.0.0.1).
    pub bind: String,
    /// `token`: when set, every route but /healthz requires `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// `addr_file`: write the chosen `host:port` to this file once listening.
    pub addr_file: Option<PathBuf>,
    /// `top`: hot methods exported as a Prometheus gauge, 0..=100 (default 10).
    pub metrics_top: usize,
    /// `quiet`: print nothing but errors (`on`/`off`, default off).
    pub quiet: bool,
    /// `compiled`: enable CompiledMethodLoad events (`on`/`off`, default
    /// off). With them HotSpot records debug information at non-safepoint
    /// code positions of newly compiled code (as `-XX:+DebugNonSafepoints`),
    /// which changes how samples in inlined code are attributed; see the
    /// README's "Inlined frames".
    pub compiled: bool,
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
            max_spin: Duration::from_micros(20),
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
            addr_file: None,
            metrics_top: 10,
            quiet: false,
            compiled: false,
        }
    }
}

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

/// The option names, for the "unknown option" message.
pub const KEYS: &[&str] = &[
    "interval",
    "mode",
    "tree",
    "depth",
    "walk",
    "purge",
    "arena",
    "on_full",
    "prefilter",
    "idle",
    "signal",
    "spin",
    "jitter",
    "recent",
    "hot",
    "methods",
    "file",
    "format",
    "metric",
    "http",
    "port",
    "bind",
    "token",
    "addr_file",
    "top",
    "quiet",
    "compiled",
];

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
            options.set(item, key, value)?;
        }
        if options.format.is_some() && options.file.is_none() {
            return Err(OptionError::new("format", "format needs file=<path> too"));
        }
        Ok(options)
    }

    fn set(&mut self, item: &str, key: &str, value: &str) -> Result<(), OptionError> {
        let bad = |allowed: &str| OptionError::new(item, allowed);
        match key {
            "interval" => {
                self.interval = parse_duration(value)
                    .filter(|d| *d >= Duration::from_micros(100) && *d <= Duration::from_secs(1))
                    .ok_or_else(|| bad("interval must be a duration from 100us to 1s, such as 500us, 1ms or 10ms"))?
            }
            "mode" => self.mode = Mode::parse(value).ok_or_else(|| bad("mode must be cpu or wall"))?,
            "tree" => {
                self.tree = match value {
                    "pcct" => TreeMode::Pcct,
                    "methods" | "hot-methods" => TreeMode::HotMethods,
                    _ => return Err(bad("tree must be pcct or methods")),
                }
            }
            "depth" => {
                self.depth =
                    parse_ranged(value, 1, 4096).ok_or_else(|| bad("depth must be a whole number from 1 to 4096"))?
            }
            "walk" => {
                self.walk_limit = if value == "off" {
                    None
                } else {
                    Some(
                        parse_ranged(value, 1, 4096)
                            .ok_or_else(|| bad("walk must be off or a whole number from 1 to 4096"))?,
                    )
                }
            }
            "purge" => {
                self.purge = if value == "off" {
                    None
                } else {
                    Some(
                        parse_duration(value)
                            .filter(|d| *d >= Duration::from_millis(100))
                            .ok_or_else(|| bad("purge must be off or a duration of at least 100ms, such as 10s"))?,
                    )
                }
            }
            "arena" => {
                self.arena_bytes = parse_size(value)
                    .filter(|size| (64 << 10..=16 << 30).contains(size))
                    .ok_or_else(|| bad("arena must be a size from 64k to 16g, such as 64m"))?
            }
            "on_full" => {
                self.on_full = match value {
                    "drop" => FullPolicy::Drop,
                    "purge" => FullPolicy::Purge,
                    _ => return Err(bad("on_full must be drop or purge")),
                }
            }
            "prefilter" => self.prefilter = parse_switch(value).ok_or_else(|| bad("prefilter must be on or off"))?,
            "idle" => {
                self.idle_share = parse_ranged(value, 0.0, 1.0)
                    .ok_or_else(|| bad("idle must be a number from 0 to 1, such as 0.1"))?
            }
            "signal" => {
                self.signal = pcct_sampler::signal::parse_signal(value)
                    .filter(|s| {
                        ![
                            libc::SIGKILL,
                            libc::SIGSTOP,
                            libc::SIGSEGV,
                            libc::SIGBUS,
                            libc::SIGILL,
                            libc::SIGFPE,
                            libc::SIGQUIT,
                        ]
                        .contains(s)
                    })
                    .ok_or_else(|| bad("signal must be SIGPROF, SIGVTALRM, SIGUSR1, SIGUSR2 or SIGRTMIN+n"))?
            }
            "spin" => {
                self.max_spin = parse_duration(value)
                    .filter(|d| *d <= Duration::from_micros(200))
                    .ok_or_else(|| bad("spin must be a duration from 0us to 200us"))?
            }
            "jitter" => {
                self.jitter = parse_ranged(value, 0.0, 0.9).ok_or_else(|| {
                    bad("jitter must be a number from 0 to 0.9, such as 0.5 (0: strictly periodic ticks)")
                })?
            }
            "recent" => {
                self.recent = parse_ranged(value, 16, 1_000_000)
                    .ok_or_else(|| bad("recent must be a whole number from 16 to 1000000"))?
            }
            "hot" => {
                self.hot_list = parse_ranged(value, 16, 100_000)
                    .ok_or_else(|| bad("hot must be a whole number from 16 to 100000"))?
            }
            "methods" => {
                self.methods_limit = parse_size(value)
                    .filter(|size| (256 << 10..=4 << 30).contains(size))
                    .ok_or_else(|| bad("methods must be a size from 256k to 4g"))?
            }
            "file" => {
                if value.is_empty() {
                    return Err(bad("file must be a path"));
                }
                self.file = Some(PathBuf::from(value));
            }
            "format" => {
                self.format = Some(
                    Format::parse(value).ok_or_else(|| bad("format must be collapsed, json, xtree, xarc or xprof"))?,
                )
            }
            "metric" => {
                self.metric = Some(match value {
                    "cpu" | "cpu_ns" => Metric::CpuNs,
                    "wall" | "wall_ns" => Metric::WallNs,
                    "samples" => Metric::Samples,
                    _ => return Err(bad("metric must be cpu, wall or samples")),
                })
            }
            "http" => self.http = parse_switch(value).ok_or_else(|| bad("http must be on or off"))?,
            "port" => self.port = value.parse().map_err(|_| bad("port must be a whole number from 0 to 65535"))?,
            "bind" => {
                if value.parse::<std::net::IpAddr>().is_err() {
                    return Err(bad("bind must be an IP address, such as 127.0.0.1 or 0.0.0.0"));
                }
                self.bind = value.to_string();
            }
            "token" => {
                if value.is_empty() || value.len() > 256 || !value.chars().all(|c| c.is_ascii_graphic()) {
                    return Err(bad("token must be 1 to 256 visible ASCII characters"));
                }
                self.token = Some(value.to_string());
            }
            "addr_file" => {
                if value.is_empty() {
                    return Err(bad("addr_file must be a path"));
                }
                self.addr_file = Some(PathBuf::from(value));
            }
            "top" => {
                self.metrics_top =
                    parse_ranged(value, 0, 100).ok_or_else(|| bad("top must be a whole number from 0 to 100"))?
            }
            "quiet" => self.quiet = parse_switch(value).ok_or_else(|| bad("quiet must be on or off"))?,
            "compiled" => self.compiled = parse_switch(value).ok_or_else(|| bad("compiled must be on or off"))?,
            _ => return Err(bad(&format!("unknown option; known options: {}", KEYS.join(", ")))),
        }
        Ok(())
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
            _ => Format::Collapsed,
        }
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
            max_spin: self.max_spin,
            jitter: self.jitter,
            recent_capacity: self.recent,
            exclude_after_failures: 64,
            methods_limit: self.methods_limit,
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
        ] {
            let error = Options::parse(text).unwrap_err();
            let line = error.to_string();
            assert!(line.contains(key), "{text}: {line}");
            assert!(!line.contains('\n'), "one line: {line}");
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
