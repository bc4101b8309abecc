//! `/api/samples?since=&limit=&filtered=exclude|include|only`: the recent
//! raw samples, numbered so a client can page without loss.

use axum::extract::{RawQuery, State};
use axum::response::Response;
use pcct_sampler::recent::{Broken, FilterSelection, Outcome};
use serde::Serialize;

use super::MAX_LIMIT;
use crate::error::ApiError;
use crate::params::Params;
use crate::state::{AppState, ProfileHeader};

#[derive(Serialize)]
pub struct Sample {
    pub seq: u64,
    /// Milliseconds since sampling started.
    pub time_ms: f64,
    pub tid: i32,
    /// The Java thread's name, where known (taken when it registered).
    pub thread: Option<String>,
    pub cpu_delta_ns: u64,
    pub wall_delta_ns: u64,
    /// The register checksum, hexadecimal.
    pub checksum: String,
    pub outcome: Outcome,
    /// Frames of the whole stack (0 when the stack was not walked).
    pub depth: u32,
    /// Leaf first.
    pub top_frames: Vec<String>,
    /// Which walker gave the frames: `pcct` (its own walker), `agct`
    /// (AsyncGetCallTrace, after pcct's stopped short) or `partial` (both
    /// stopped short: the top of the stack, recorded under
    /// `[break_<walk_stopped>]`); null when the stack was not walked.
    pub walker: Option<&'static str>,
    /// Why pcct's walker stopped short of the stack's bottom, when it did.
    pub walk_stopped: Option<&'static str>,
}

#[derive(Serialize)]
pub struct SamplesPage {
    /// The profile's header, as every JSON answer carries it: its tick and
    /// drained tick say how fresh the page is.
    pub profile: ProfileHeader,
    pub samples: Vec<Sample>,
    /// Pass as `since` to continue after this page.
    pub next_since: u64,
    /// Samples at or after `since` that the ring overwrote before this request.
    pub overwritten: u64,
    pub oldest: u64,
    pub capacity: usize,
}

/// `GET /api/samples?since=0.. (0)&limit=1..1000 (100)&filtered=exclude|include|only (include)`
pub async fn samples(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &["since", "limit", "filtered"])?;
    let since = params.integer("since", 0, u64::MAX, 0)?;
    let limit = params.integer("limit", 1, MAX_LIMIT, 100)? as usize;
    let filter = FilterSelection::parse(params.choice("filtered", &["exclude", "include", "only"], "include")?)
        .expect("validated choice");
    // The profile lock first, then the ring (the sampler's order): no drain
    // runs in between, so the header's ticks describe this very page and
    // the records' method ids belong to the method table that names them.
    let profile = state.shared.profile.lock();
    let header = state.header(&profile.tree);
    let (page, capacity) = {
        let recent = state.shared.recent.lock();
        (recent.page(since, limit, filter), recent.capacity())
    };
    let samples = page
        .records
        .iter()
        .map(|record| Sample {
            seq: record.seq,
            time_ms: record.time_ns as f64 / 1e6,
            tid: record.tid,
            thread: None,
            cpu_delta_ns: record.cpu_delta_ns,
            wall_delta_ns: record.wall_delta_ns,
            checksum: format!("{:016x}", record.checksum),
            outcome: record.outcome,
            depth: record.depth,
            top_frames: record.top_frames().iter().map(|&method| profile.methods.display_name(method)).collect(),
            walker: record.walker.label(),
            walk_stopped: record.walk_stopped.map(Broken::label),
        })
        .collect::<Vec<Sample>>();
    drop(profile);
    // Named after the profile lock is released (the names' lock is a leaf).
    let mut samples = samples;
    {
        let names = state.shared.thread_names.lock();
        for sample in &mut samples {
            sample.thread = names.name(sample.tid).map(|name| name.to_string());
        }
    }
    let answer = SamplesPage {
        profile: header,
        samples,
        next_since: page.next_since,
        overwritten: page.overwritten,
        oldest: page.oldest,
        capacity,
    };
    state.json(Some("limit"), &answer)
}
