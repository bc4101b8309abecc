//! What the sampler is told to do.

use std::time::Duration;

use pcct::TreeConfig;
use serde::Serialize;

/// Which threads are sampled and what a sample weighs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Threads that used CPU since their last sample; weight = that CPU time.
    #[default]
    Cpu,
    /// Every thread at every tick; weight = elapsed wall time (and CPU time).
    Wall,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Cpu => "cpu",
            Mode::Wall => "wall",
        }
    }

    /// What reports count by default in this mode (and what sorts the hot
    /// lists of a profile recorded in it).
    pub fn metric(self) -> pcct::Metric {
        match self {
            Mode::Cpu => pcct::Metric::CpuNs,
            Mode::Wall => pcct::Metric::WallNs,
        }
    }

    pub fn parse(text: &str) -> Option<Mode> {
        match text {
            "cpu" => Some(Mode::Cpu),
            "wall" => Some(Mode::Wall),
            _ => None,
        }
    }

    pub(crate) fn from_u8(value: u8) -> Mode {
        if value == 1 {
            Mode::Wall
        } else {
            Mode::Cpu
        }
    }

    pub(crate) fn as_u8(self) -> u8 {
        match self {
            Mode::Cpu => 0,
            Mode::Wall => 1,
        }
    }
}

/// What interrupts a running thread for a sample in cpu mode (wall mode
/// always uses the sampler's signals: it samples threads that do not run).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerSource {
    /// The thread's own CPU timer (`cpu_timer`): a perf event that
    /// interrupts it on its own CPU after every interval of its CPU time;
    /// the sampler's signal for a thread whose timer the kernel refused.
    #[default]
    Thread,
    /// The sampler thread's signal, sent to the threads whose CPU clock
    /// moved since their last sample.
    Sampler,
}

impl TimerSource {
    pub fn name(self) -> &'static str {
        match self {
            TimerSource::Thread => "thread",
            TimerSource::Sampler => "sampler",
        }
    }

    pub fn parse(text: &str) -> Option<TimerSource> {
        match text {
            "thread" => Some(TimerSource::Thread),
            "sampler" => Some(TimerSource::Sampler),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SamplerConfig {
    pub interval: Duration,
    pub mode: Mode,
    /// Most frames walked per sample; deeper stacks are recorded under `[truncated]`.
    pub depth: usize,
    /// Skip threads whose CPU clock barely moved (cpu mode). Off: every
    /// thread is signalled and the register checksum alone decides (HPROF).
    pub prefilter: bool,
    /// A thread counts as idle when it used less than this share of an
    /// interval since its last sample.
    pub idle_share: f64,
    /// The sampling signal.
    pub signal: i32,
    /// What interrupts a running thread for a sample (cpu mode).
    pub timer: TimerSource,
    /// Cap of the busy-wait spin (0: sleep only).
    pub max_spin: Duration,
    /// With threads' own CPU timers, the sampler's sleep between two
    /// drains (`sampler`, "Batches"; zero: it ticks every interval).
    pub batch: Duration,
    /// Gaps between ticks are drawn from `(1 - jitter) .. (1 + jitter)`
    /// intervals, against aliasing with periodic programs (0: periodic).
    pub jitter: f64,
    /// Recent samples kept for `/api/samples`.
    pub recent_capacity: usize,
    /// Stop sampling a thread after this many consecutive failed walks when
    /// it never had a Java stack (JVM service threads, native threads).
    pub exclude_after_failures: u32,
    /// Bytes the method names may take before the table starts over.
    pub methods_limit: usize,
    /// Events (sampled allocations, monitor waits) that may wait for the
    /// sampler between two ticks; 0 when no event is reported (no queue).
    pub event_capacity: usize,
    /// Most sampled allocations tracked for the live heap (0: off).
    pub live_capacity: usize,
    /// Threads that run no Java code are sampled too (`threads=all`):
    /// registered by the agent as `ThreadOrigin::Native`, and the sampler
    /// thread's own CPU recorded under `[pcct]`.
    pub all_threads: bool,
    /// Samples carry native frames (`native=on`, [`crate::native_frames`]):
    /// those below a Java thread's last Java frame, and the whole stacks of
    /// threads that run no Java code.
    pub native: bool,
    /// Samples carry each Java frame's [`pcct::FrameKind`] (`kinds=on`):
    /// part of a frame's identity in the tree.
    pub kinds: bool,
    /// Samples of threads' own timers carry the kernel's frames where the
    /// thread was in the kernel (`kernel=on`, [`crate::kernel_frames`]).
    pub kernel: bool,
    pub tree: TreeConfig,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            interval: Duration::from_millis(10),
            mode: Mode::Cpu,
            depth: 512,
            prefilter: true,
            idle_share: 0.1,
            signal: libc::SIGPROF,
            timer: TimerSource::Thread,
            max_spin: Duration::from_micros(20),
            batch: Duration::from_millis(20),
            jitter: 0.5,
            recent_capacity: 4096,
            exclude_after_failures: 64,
            methods_limit: 32 << 20,
            event_capacity: 0,
            live_capacity: 0,
            all_threads: false,
            native: false,
            kinds: false,
            kernel: false,
            tree: TreeConfig::default(),
        }
    }
}

/// Parses `1ms`, `500us`, `2s`, `10000ns`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit() && c != '.')?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    if !number.is_finite() || number < 0.0 {
        return None;
    }
    let nanos = match unit {
        "ns" => number,
        "us" | "µs" => number * 1e3,
        "ms" => number * 1e6,
        "s" => number * 1e9,
        "m" | "min" => number * 60e9,
        _ => return None,
    };
    (nanos <= 1e15).then(|| Duration::from_nanos(nanos as u64))
}

/// Shortest and longest sampling intervals accepted anywhere.
pub const MIN_INTERVAL: Duration = Duration::from_micros(100);
pub const MAX_INTERVAL: Duration = Duration::from_secs(1);
