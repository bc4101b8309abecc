//! The resource vector carried by every node and edge (the arcflow model:
//! contexts x resource consumption), and [`Metric`], the one description
//! of each resource: its name in options, URLs, reports and JSON, its
//! unit, and whether it is *time* or an *event*.
//!
//! - **Time** resources (`samples`, `cpu_ns`, `wall_ns`) come from the
//!   sampler's ticks: a sample's weight goes to its leaf context and to
//!   every call that was new since the thread's previous sample (Whaley's
//!   marked frames).
//! - **Event** resources (`alloc_bytes`, `alloc_objects`, `lock_wait_ns`,
//!   `lock_enters`) come from events the VM reports on the thread itself
//!   (a sampled allocation, a contended monitor enter). Each event is
//!   recorded with its whole stack, so every call on it is new and the
//!   weight of an edge in an event resource equals the cum of its context:
//!   the tree stores event weights for contexts only (see
//!   [`crate::Pcct::edge_weight`]).
//!
//! - **Live** resources (`live_bytes`, `live_objects`) are the sampled
//!   allocations still reachable at the last garbage collection. They are
//!   never recorded in the profile itself, which only grows: a copy of the
//!   profile gets them added, at the contexts of their allocations, when a
//!   view needs them (`pcct_sampler::live_heap`). They are event
//!   resources like the allocations they come from.
//!
//! Every field only ever grows between purges; the hot lists rely on that.
//! Every list of resources elsewhere (HTTP parameters, exports, metrics,
//! the CLI) is derived from [`Metric::ALL`] and [`Metric::name`].

use serde::{Deserialize, Serialize};

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// One sample's or event's (or an accumulation's) resource consumption.
///
/// In JSON the time fields are always written; an event field is left out
/// when it is zero (a CPU profile's JSON stays as small as it was), and
/// read as zero when absent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Weight {
    /// Number of samples (ticks of the sampler; events are not samples).
    pub samples: u64,
    /// CPU time the sampled thread used, in nanoseconds (Whaley's footnote 7).
    pub cpu_ns: u64,
    /// Elapsed wall-clock time the samples stand for, in nanoseconds.
    pub wall_ns: u64,
    /// Bytes allocated, estimated from sampled allocations.
    #[serde(skip_serializing_if = "is_zero")]
    pub alloc_bytes: u64,
    /// Objects allocated, estimated from sampled allocations.
    #[serde(skip_serializing_if = "is_zero")]
    pub alloc_objects: u64,
    /// Time threads waited to enter a contended monitor, in nanoseconds.
    #[serde(skip_serializing_if = "is_zero")]
    pub lock_wait_ns: u64,
    /// Contended monitor enters (each one waited).
    #[serde(skip_serializing_if = "is_zero")]
    pub lock_enters: u64,
    /// Bytes of sampled allocations still reachable (estimated like
    /// `alloc_bytes`, for the objects that survive).
    #[serde(skip_serializing_if = "is_zero")]
    pub live_bytes: u64,
    /// Objects of sampled allocations still reachable (estimated).
    #[serde(skip_serializing_if = "is_zero")]
    pub live_objects: u64,
}

/// How many event resources there are ([`Metric::EVENTS`]).
pub const EVENT_COUNT: usize = Metric::EVENTS.len();

/// A single component of a [`Weight`]: a resource, used to sort, to
/// select and to report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Samples,
    #[default]
    CpuNs,
    WallNs,
    AllocBytes,
    AllocObjects,
    LockWaitNs,
    LockEnters,
    LiveBytes,
    LiveObjects,
}

impl Metric {
    /// Every resource, time first, in the order reports list them.
    pub const ALL: [Metric; 9] = [
        Metric::Samples,
        Metric::CpuNs,
        Metric::WallNs,
        Metric::AllocBytes,
        Metric::AllocObjects,
        Metric::LockWaitNs,
        Metric::LockEnters,
        Metric::LiveBytes,
        Metric::LiveObjects,
    ];

    /// The event resources, in the order of their per-event hot lists.
    pub const EVENTS: [Metric; 6] = [
        Metric::AllocBytes,
        Metric::AllocObjects,
        Metric::LockWaitNs,
        Metric::LockEnters,
        Metric::LiveBytes,
        Metric::LiveObjects,
    ];

    /// The name used in options, URLs, reports and JSON (the [`Weight`] field).
    pub fn name(self) -> &'static str {
        match self {
            Metric::Samples => "samples",
            Metric::CpuNs => "cpu_ns",
            Metric::WallNs => "wall_ns",
            Metric::AllocBytes => "alloc_bytes",
            Metric::AllocObjects => "alloc_objects",
            Metric::LockWaitNs => "lock_wait_ns",
            Metric::LockEnters => "lock_enters",
            Metric::LiveBytes => "live_bytes",
            Metric::LiveObjects => "live_objects",
        }
    }

    /// Whether the resource is the live heap: never in the profile itself,
    /// only in the copies a view takes (see the module docs).
    pub fn is_live(self) -> bool {
        matches!(self, Metric::LiveBytes | Metric::LiveObjects)
    }

    /// A shorter name also accepted (`cpu`, `wall`).
    pub fn alias(self) -> Option<&'static str> {
        match self {
            Metric::CpuNs => Some("cpu"),
            Metric::WallNs => Some("wall"),
            _ => None,
        }
    }

    /// Parses [`Metric::name`] or [`Metric::alias`].
    pub fn parse(text: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|metric| metric.name() == text || metric.alias() == Some(text))
    }

    /// Every accepted name, for error messages: `samples, cpu_ns (or cpu), ...`.
    pub fn accepted() -> String {
        let names: Vec<String> = Metric::ALL
            .iter()
            .map(|metric| match metric.alias() {
                Some(alias) => format!("{} (or {alias})", metric.name()),
                None => metric.name().to_string(),
            })
            .collect();
        names.join(", ")
    }

    /// Whether the resource comes from events (allocations, monitors)
    /// rather than from the sampler's ticks.
    pub fn is_event(self) -> bool {
        self.event_index().is_some()
    }

    /// Position in [`Metric::EVENTS`].
    pub fn event_index(self) -> Option<usize> {
        Metric::EVENTS.iter().position(|&event| event == self)
    }

    /// The resource that counts this one's occurrences (arcflow's
    /// `calls`): samples for time, estimated objects for allocations,
    /// enters for monitors.
    pub fn count(self) -> Metric {
        match self {
            Metric::Samples | Metric::CpuNs | Metric::WallNs => Metric::Samples,
            Metric::AllocBytes | Metric::AllocObjects => Metric::AllocObjects,
            Metric::LockWaitNs | Metric::LockEnters => Metric::LockEnters,
            Metric::LiveBytes | Metric::LiveObjects => Metric::LiveObjects,
        }
    }

    /// Whether values are nanoseconds.
    pub fn is_time_ns(self) -> bool {
        matches!(self, Metric::CpuNs | Metric::WallNs | Metric::LockWaitNs)
    }

    /// What one unit of a raw value is (`CPU ns`, `bytes`), for people.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::Samples => "samples",
            Metric::CpuNs => "CPU ns",
            Metric::WallNs => "wall ns",
            Metric::AllocBytes => "bytes",
            Metric::AllocObjects => "objects",
            Metric::LockWaitNs => "lock wait ns",
            Metric::LockEnters => "enters",
            Metric::LiveBytes => "live bytes",
            Metric::LiveObjects => "live objects",
        }
    }

    /// What one unit of [`Metric::human`] is, for report headers.
    pub fn human_unit(self) -> &'static str {
        match self {
            Metric::Samples => "samples",
            Metric::CpuNs => "CPU ms",
            Metric::WallNs => "wall ms",
            Metric::AllocBytes => "bytes",
            Metric::AllocObjects => "objects",
            Metric::LockWaitNs => "lock wait ms",
            Metric::LockEnters => "enters",
            Metric::LiveBytes => "live bytes",
            Metric::LiveObjects => "live objects",
        }
    }

    /// A value for people: nanoseconds as milliseconds, counts as they are.
    pub fn human(self, value: u64) -> String {
        if self.is_time_ns() {
            format!("{:.3}", value as f64 / 1e6)
        } else {
            value.to_string()
        }
    }
}

impl Weight {
    pub const ZERO: Weight = Weight {
        samples: 0,
        cpu_ns: 0,
        wall_ns: 0,
        alloc_bytes: 0,
        alloc_objects: 0,
        lock_wait_ns: 0,
        lock_enters: 0,
        live_bytes: 0,
        live_objects: 0,
    };

    /// One sample standing for `cpu_ns` of CPU time and `wall_ns` of wall time.
    pub fn sample(cpu_ns: u64, wall_ns: u64) -> Weight {
        Weight { samples: 1, cpu_ns, wall_ns, ..Weight::ZERO }
    }

    /// A sampled allocation standing for `bytes` and `objects`.
    pub fn allocation(bytes: u64, objects: u64) -> Weight {
        Weight { alloc_bytes: bytes, alloc_objects: objects, ..Weight::ZERO }
    }

    /// Sampled allocations still reachable, standing for `bytes` and `objects`.
    pub fn live(bytes: u64, objects: u64) -> Weight {
        Weight { live_bytes: bytes, live_objects: objects, ..Weight::ZERO }
    }

    /// One contended monitor enter that waited `wait_ns`.
    pub fn lock_wait(wait_ns: u64) -> Weight {
        Weight { lock_wait_ns: wait_ns, lock_enters: 1, ..Weight::ZERO }
    }

    pub fn get(&self, metric: Metric) -> u64 {
        match metric {
            Metric::Samples => self.samples,
            Metric::CpuNs => self.cpu_ns,
            Metric::WallNs => self.wall_ns,
            Metric::AllocBytes => self.alloc_bytes,
            Metric::AllocObjects => self.alloc_objects,
            Metric::LockWaitNs => self.lock_wait_ns,
            Metric::LockEnters => self.lock_enters,
            Metric::LiveBytes => self.live_bytes,
            Metric::LiveObjects => self.live_objects,
        }
    }

    pub(crate) fn get_mut(&mut self, metric: Metric) -> &mut u64 {
        match metric {
            Metric::Samples => &mut self.samples,
            Metric::CpuNs => &mut self.cpu_ns,
            Metric::WallNs => &mut self.wall_ns,
            Metric::AllocBytes => &mut self.alloc_bytes,
            Metric::AllocObjects => &mut self.alloc_objects,
            Metric::LockWaitNs => &mut self.lock_wait_ns,
            Metric::LockEnters => &mut self.lock_enters,
            Metric::LiveBytes => &mut self.live_bytes,
            Metric::LiveObjects => &mut self.live_objects,
        }
    }

    /// Adds `other` component-wise; saturates instead of wrapping so a
    /// corrupt input can never make a weight shrink.
    #[inline]
    pub fn add(&mut self, other: &Weight) {
        // Field by field (the update path adds weights to every method on a
        // stack): `Metric::ALL` through `get_mut` costs a match per field.
        self.samples = self.samples.saturating_add(other.samples);
        self.cpu_ns = self.cpu_ns.saturating_add(other.cpu_ns);
        self.wall_ns = self.wall_ns.saturating_add(other.wall_ns);
        self.alloc_bytes = self.alloc_bytes.saturating_add(other.alloc_bytes);
        self.alloc_objects = self.alloc_objects.saturating_add(other.alloc_objects);
        self.lock_wait_ns = self.lock_wait_ns.saturating_add(other.lock_wait_ns);
        self.lock_enters = self.lock_enters.saturating_add(other.lock_enters);
        self.live_bytes = self.live_bytes.saturating_add(other.live_bytes);
        self.live_objects = self.live_objects.saturating_add(other.live_objects);
    }

    pub fn plus(mut self, other: &Weight) -> Weight {
        self.add(other);
        self
    }

    pub fn is_zero(&self) -> bool {
        *self == Weight::ZERO
    }

    /// The time resources alone (events zero).
    pub fn time(&self) -> Weight {
        Weight { samples: self.samples, cpu_ns: self.cpu_ns, wall_ns: self.wall_ns, ..Weight::ZERO }
    }

    /// Whether any time resource is nonzero.
    pub fn has_time(&self) -> bool {
        self.samples != 0 || self.cpu_ns != 0 || self.wall_ns != 0
    }

    /// Whether any event resource is nonzero.
    pub fn has_events(&self) -> bool {
        Metric::EVENTS.iter().any(|&event| self.get(event) != 0)
    }

    /// The event resources, in [`Metric::EVENTS`] order.
    pub(crate) fn events(&self) -> [u64; EVENT_COUNT] {
        Metric::EVENTS.map(|event| self.get(event))
    }

    /// This weight's time resources with `from`'s event resources: an
    /// edge's whole weight, given its context's cum (see the module docs).
    pub fn with_events_of(&self, from: &Weight) -> Weight {
        let mut weight = self.time();
        for event in Metric::EVENTS {
            *weight.get_mut(event) = from.get(event);
        }
        weight
    }

    /// `self - earlier`, resource by resource, saturating at zero: what was
    /// added to a weight since `earlier` was read (weights only grow
    /// between purges).
    pub fn since(&self, earlier: &Weight) -> Weight {
        let mut weight = Weight::ZERO;
        for metric in Metric::ALL {
            *weight.get_mut(metric) = self.get(metric).saturating_sub(earlier.get(metric));
        }
        weight
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

/// The time resources of a node or an edge, as the arena stores them
/// inline (events live in a side table, see [`crate::Pcct`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TimeWeight {
    pub(crate) samples: u64,
    pub(crate) cpu_ns: u64,
    pub(crate) wall_ns: u64,
}

impl TimeWeight {
    pub(crate) const ZERO: TimeWeight = TimeWeight { samples: 0, cpu_ns: 0, wall_ns: 0 };

    /// `metric` if it is a time resource, else 0.
    #[inline]
    pub(crate) fn get(&self, metric: Metric) -> u64 {
        match metric {
            Metric::Samples => self.samples,
            Metric::CpuNs => self.cpu_ns,
            Metric::WallNs => self.wall_ns,
            _ => 0,
        }
    }

    #[inline]
    pub(crate) fn add(&mut self, weight: &Weight) {
        self.samples = self.samples.saturating_add(weight.samples);
        self.cpu_ns = self.cpu_ns.saturating_add(weight.cpu_ns);
        self.wall_ns = self.wall_ns.saturating_add(weight.wall_ns);
    }

    pub(crate) fn weight(&self) -> Weight {
        Weight { samples: self.samples, cpu_ns: self.cpu_ns, wall_ns: self.wall_ns, ..Weight::ZERO }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_parses_from_its_name_and_alias() {
        for metric in Metric::ALL {
            assert_eq!(Metric::parse(metric.name()), Some(metric));
            if let Some(alias) = metric.alias() {
                assert_eq!(Metric::parse(alias), Some(metric));
            }
            let json = serde_json::to_string(&metric).unwrap();
            assert_eq!(json, format!("\"{}\"", metric.name()), "serde and name agree");
        }
        assert_eq!(Metric::parse("bytes"), None);
        assert!(Metric::accepted().contains("cpu_ns (or cpu)"));
    }

    #[test]
    fn every_metric_is_a_field_of_the_weight_json() {
        let mut weight = Weight::ZERO;
        for (index, metric) in Metric::ALL.into_iter().enumerate() {
            *weight.get_mut(metric) = index as u64 + 1;
        }
        let json = serde_json::to_value(weight).unwrap();
        for (index, metric) in Metric::ALL.into_iter().enumerate() {
            assert_eq!(json[metric.name()], index as u64 + 1, "{}", metric.name());
        }
        let back: Weight = serde_json::from_value(json).unwrap();
        assert_eq!(back, weight);
        let twice = weight.plus(&weight);
        for (index, metric) in Metric::ALL.into_iter().enumerate() {
            assert_eq!(twice.get(metric), 2 * (index as u64 + 1), "add covers {}", metric.name());
        }
    }

    #[test]
    fn zero_events_are_left_out_of_json_and_read_back_as_zero() {
        let json = serde_json::to_string(&Weight::sample(5, 7)).unwrap();
        assert_eq!(json, r#"{"samples":1,"cpu_ns":5,"wall_ns":7}"#);
        let old: Weight = serde_json::from_str(r#"{"samples":1,"cpu_ns":5,"wall_ns":7}"#).unwrap();
        assert_eq!(old, Weight::sample(5, 7));
    }

    #[test]
    fn time_and_events_split_and_join() {
        let whole = Weight::sample(3, 4).plus(&Weight::allocation(100, 2)).plus(&Weight::lock_wait(9));
        assert!(whole.has_time() && whole.has_events());
        assert_eq!(whole.time(), Weight::sample(3, 4));
        assert!(!whole.time().has_events());
        let cum = Weight::allocation(500, 5);
        assert_eq!(whole.with_events_of(&cum), Weight::sample(3, 4).plus(&cum));
        assert_eq!(whole.events(), [100, 2, 9, 1, 0, 0]);
        assert_eq!(Weight::live(40, 1).events(), [0, 0, 0, 0, 40, 1]);
    }
}
