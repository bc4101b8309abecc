//! Holding a live profile still for exact comparisons: sampling paused
//! over HTTP (`POST /api/sampling`), and a wait until every signal sent
//! has its outcome (nothing in flight), so two reads see the same profile.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::http::Client;
use crate::poll::poll_until;

const SOON: Duration = Duration::from_secs(30);

/// The number at `pointer` in `value`; panics naming it when absent.
pub fn u64_at(value: &Value, pointer: &str) -> u64 {
    value.pointer(pointer).and_then(Value::as_u64).unwrap_or_else(|| panic!("no number at {pointer} in {value}"))
}

/// Signals sent whose outcome is not yet counted.
pub fn in_flight(status: &Value) -> i64 {
    let counter = |name: &str| u64_at(status, &format!("/counters/{name}")) as i64;
    counter("signals_sent") - crate::stress::SIGNAL_OUTCOMES.iter().map(|name| counter(name)).sum::<i64>()
}

/// Pauses sampling and waits until the profile holds still: a drain after
/// the pause, and no signal in flight.
pub fn pause(client: &Client) {
    let answer = client.post_json("/api/sampling", r#"{"running":false}"#);
    assert_eq!(answer["running"], false, "{answer}");
    let tick = u64_at(&client.get_json("/api/status"), "/profile/tick");
    poll_until(Instant::now() + SOON, || {
        let status = client.get_json("/api/status");
        (u64_at(&status, "/profile/drained_tick") > tick + 1 && in_flight(&status) == 0).then_some(())
    })
    .unwrap_or_else(|| panic!("the profile did not settle after the pause: {}", client.get_json("/api/status")));
}

pub fn resume(client: &Client) {
    client.post_json("/api/sampling", r#"{"running":true}"#);
}

/// Waits until the profile has `more` samples beyond `base`.
pub fn samples_beyond(client: &Client, base: u64, more: u64) {
    poll_until(Instant::now() + SOON, || {
        (u64_at(&client.get_json("/api/status"), "/profile/samples") >= base + more).then_some(())
    })
    .unwrap_or_else(|| panic!("no {more} new samples within {SOON:?}: {}", client.get_json("/api/status")));
}
