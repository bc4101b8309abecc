//! The resource vector carried by every node and edge (the arcflow model:
//! contexts x resource consumption).
//!
//! Every field only ever grows between purges; the hot lists rely on that.
//! A new resource (allocation bytes, lock wait time, ...) is one more field
//! here and one more [`Metric`] variant: the tree stores `Weight` whole and
//! never needs reshaping.

use serde::{Deserialize, Serialize};

/// One sample's (or an accumulation of samples') resource consumption.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Weight {
    /// Number of samples.
    pub samples: u64,
    /// CPU time the sampled thread used, in nanoseconds (Whaley's footnote 7).
    pub cpu_ns: u64,
    /// Elapsed wall-clock time the samples stand for, in nanoseconds.
    pub wall_ns: u64,
}

/// A single component of a [`Weight`], used to sort and to report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Samples,
    #[default]
    CpuNs,
    WallNs,
}

impl Metric {
    pub const ALL: [Metric; 3] = [Metric::Samples, Metric::CpuNs, Metric::WallNs];

    /// The name used in options, URLs and reports.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Samples => "samples",
            Metric::CpuNs => "cpu_ns",
            Metric::WallNs => "wall_ns",
        }
    }

    /// Parses [`Metric::name`] (also accepts `cpu` and `wall`).
    pub fn parse(text: &str) -> Option<Metric> {
        match text {
            "samples" => Some(Metric::Samples),
            "cpu_ns" | "cpu" => Some(Metric::CpuNs),
            "wall_ns" | "wall" => Some(Metric::WallNs),
            _ => None,
        }
    }
}

impl Weight {
    pub const ZERO: Weight = Weight { samples: 0, cpu_ns: 0, wall_ns: 0 };

    /// One sample standing for `cpu_ns` of CPU time and `wall_ns` of wall time.
    pub fn sample(cpu_ns: u64, wall_ns: u64) -> Weight {
        Weight { samples: 1, cpu_ns, wall_ns }
    }

    pub fn get(&self, metric: Metric) -> u64 {
        match metric {
            Metric::Samples => self.samples,
            Metric::CpuNs => self.cpu_ns,
            Metric::WallNs => self.wall_ns,
        }
    }

    /// Adds `other` component-wise; saturates instead of wrapping so a
    /// corrupt input can never make a weight shrink.
    pub fn add(&mut self, other: &Weight) {
        self.samples = self.samples.saturating_add(other.samples);
        self.cpu_ns = self.cpu_ns.saturating_add(other.cpu_ns);
        self.wall_ns = self.wall_ns.saturating_add(other.wall_ns);
    }

    pub fn plus(mut self, other: &Weight) -> Weight {
        self.add(other);
        self
    }

    pub fn is_zero(&self) -> bool {
        *self == Weight::ZERO
    }

    /// `self - earlier`, component-wise, saturating at zero: what was added
    /// to a weight since `earlier` was read (weights only grow between purges).
    pub fn since(&self, earlier: &Weight) -> Weight {
        // Destructured whole, so a new resource cannot be forgotten here.
        let Weight { samples, cpu_ns, wall_ns } = *self;
        Weight {
            samples: samples.saturating_sub(earlier.samples),
            cpu_ns: cpu_ns.saturating_sub(earlier.cpu_ns),
            wall_ns: wall_ns.saturating_sub(earlier.wall_ns),
        }
    }
}

impl std::ops::AddAssign<&Weight> for Weight {
    fn add_assign(&mut self, rhs: &Weight) {
        self.add(rhs);
    }
}

impl std::iter::Sum for Weight {
    fn sum<I: Iterator<Item = Weight>>(iter: I) -> Weight {
        iter.fold(Weight::ZERO, |acc, w| acc.plus(&w))
    }
}
