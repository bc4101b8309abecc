//! `/api/hot-methods`, `/api/hot-edges`, `/api/hot-nodes`: the sorted hot
//! lists, read under the profile lock in O(limit) (hot methods by total
//! add one pass over the methods' counters, not the tree).
//!
//! Hot edges also say whether the code that runs their caller inlines the
//! call (`inlined`, `caller_level`, ...): their contexts are copied under
//! the lock as ids and joined with the inline table after it
//! (`routes/jit.rs`, `pcct_jit::profile`).
//!
//! Hot nodes carry their paths (up to `depth=` frames each), so under the
//! lock only their ids, weights and the methods and call sites of their
//! paths are copied, at most [`MAX_HOT_NODE_STEPS`] path steps in all;
//! they are named and serialised after the lock is released. A `limit`
//! beyond what a full hot list holds (`hot=` below `limit`) needs a sort
//! of every node: that runs as a heavy job, on a copy of the profile.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::response::Response;
use pcct::view::{self, HotEdge, HotMethod, HotNode, HotNodeIds, TooManySteps};
use pcct::{MethodOrder, MethodTable, NodeId};
use pcct_jit::profile::{EdgeContexts, EdgeInlining};
use pcct_sampler::timer::now_ns;
use pcct_sampler::Profile;
use serde::Serialize;

use super::MAX_LIMIT;
use crate::error::ApiError;
use crate::heavy::with_snapshot;
use crate::params::Params;
use crate::state::{AppState, ProfileHeader};

#[derive(Serialize)]
pub struct HotMethods {
    pub profile: ProfileHeader,
    pub by: &'static str,
    pub methods: Vec<HotMethod>,
}

#[derive(Serialize)]
pub struct HotEdges {
    pub profile: ProfileHeader,
    pub edges: Vec<HotEdgeEntry>,
}

/// A hot edge and whether the code that runs its caller inlines it
/// (`pcct_jit::profile::EdgeInlining`: `inlined`, `caller_level`, ...).
#[derive(Serialize)]
pub struct HotEdgeEntry {
    #[serde(flatten)]
    pub edge: HotEdge,
    #[serde(flatten)]
    pub inlining: EdgeInlining,
}

#[derive(Serialize)]
pub struct HotNodes {
    pub profile: ProfileHeader,
    pub nodes: Vec<HotNode>,
}

/// `GET /api/hot-methods?limit=1..1000 (20)&by=self|total (self)`
pub async fn hot_methods(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &["limit", "by"])?;
    let limit = params.integer("limit", 1, MAX_LIMIT, 20)? as usize;
    let by = params.choice("by", &["self", "total"], "self")?;
    let order = if by == "total" { MethodOrder::Total } else { MethodOrder::SelfWeight };
    let answer = {
        let profile = state.shared.profile.lock();
        let methods = view::hot_methods(&profile.tree, &profile.methods, limit, order);
        HotMethods { profile: state.header(&profile.tree), by, methods }
    };
    state.json(Some("limit"), &answer)
}

/// Hot edges as copied under the lock: named, with their contexts (ids)
/// for the join with the inline table after the lock is released.
type CopiedEdges = (ProfileHeader, Vec<HotEdge>, EdgeContexts, Arc<MethodTable>);

fn copy_edges(state: &AppState, profile: &Profile, edges: &[NodeId]) -> CopiedEdges {
    (
        state.header(&profile.tree),
        view::hot_edges_of(&profile.tree, &profile.methods, edges),
        EdgeContexts::copy(&profile.tree, edges, MAX_HOT_NODE_STEPS),
        Arc::clone(&profile.methods),
    )
}

/// `GET /api/hot-edges?limit=1..1000 (20)`
pub async fn hot_edges(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &["limit"])?;
    let limit = params.integer("limit", 1, MAX_LIMIT, 20)? as usize;
    let listed = {
        let profile = state.shared.profile.lock();
        profile.tree.listed_top_edges(limit).map(|edges| copy_edges(&state, &profile, &edges))
    };
    let (profile, edges, contexts, methods) = match listed {
        Some(copied) => copied,
        None => {
            let job_state = state.clone();
            with_snapshot(&state, move |profile| copy_edges(&job_state, &profile, &profile.tree.top_edges(limit)))
                .await?
        }
    };
    let inlining = pcct_jit::profile::inlining(&state.shared.jit, &methods, &contexts, now_ns());
    let edges = edges.into_iter().zip(inlining).map(|(edge, inlining)| HotEdgeEntry { edge, inlining }).collect();
    state.json(Some("limit"), &HotEdges { profile, edges })
}

/// Most path steps in one hot-nodes answer (1000 contexts 100 frames deep).
pub const MAX_HOT_NODE_STEPS: usize = 100_000;

/// The hot nodes copied from `profile` (ids only), its header and method table.
type CopiedNodes = (Result<HotNodeIds, TooManySteps>, ProfileHeader, Arc<MethodTable>);

fn copy_nodes(state: &AppState, profile: &Profile, nodes: &[NodeId]) -> CopiedNodes {
    let copy = HotNodeIds::copy(&profile.tree, nodes, MAX_HOT_NODE_STEPS);
    (copy, state.header(&profile.tree), Arc::clone(&profile.methods))
}

/// The `limit` hottest nodes, copied under the lock from the hot-node
/// list, or from a copy of the profile when the list does not cover them.
async fn hottest_nodes(state: &AppState, limit: usize) -> Result<CopiedNodes, ApiError> {
    let listed = {
        let profile = state.shared.profile.lock();
        profile.tree.listed_top_nodes(limit).map(|nodes| copy_nodes(state, &profile, &nodes))
    };
    match listed {
        Some(copied) => Ok(copied),
        None => {
            let job_state = state.clone();
            with_snapshot(state, move |profile| copy_nodes(&job_state, &profile, &profile.tree.top_nodes(limit))).await
        }
    }
}

/// `GET /api/hot-nodes?limit=1..1000 (20)`
pub async fn hot_nodes(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &["limit"])?;
    let limit = params.integer("limit", 1, MAX_LIMIT, 20)? as usize;
    let (copy, profile, methods) = hottest_nodes(&state, limit).await?;
    let copy = copy.map_err(|TooManySteps { steps }| {
        let message = format!(
            "the paths of the {limit} hottest contexts have {steps} steps, more than the {MAX_HOT_NODE_STEPS} \
             the server answers with; ask for fewer with a smaller limit"
        );
        ApiError::too_large(Some("limit"), message)
    })?;
    state.json(Some("limit"), &HotNodes { profile, nodes: copy.name(&methods) })
}
