//! `/api/hot-methods`, `/api/hot-edges`, `/api/hot-nodes`, `/api/sites`:
//! the sorted hot lists, in any resource (`resource=`, or `metric=`),
//! read under the profile lock in O(limit) where a list is sorted by the
//! resource: the tree's metric (cpu or wall by mode) for methods, nodes
//! and edges, and every event resource (allocations, locks) for methods,
//! nodes and sites. Hot methods by total, or by another time resource, add
//! one pass over the methods' counters, not the tree.
//!
//! Hot nodes and sites carry their paths (up to `depth=` frames each), so
//! under the lock only their ids, weights and the methods and call sites
//! of their paths are copied, at most [`MAX_HOT_NODE_STEPS`] path steps in
//! all; they are named and serialised after the lock is released. What no
//! list covers (a `limit` beyond a full hot list, `hot=` below `limit`; a
//! resource without a list; edges by an event resource, whose weight is
//! the callee's cum) needs a pass over every node: that runs as a heavy
//! job, on a copy of the profile.
//!
//! Hot edges also say whether the code that runs their caller inlines the
//! call (`inlined`, `caller_level`, ...): their contexts are copied under
//! the lock as ids and joined with the inline table after it, on a
//! blocking thread (`routes/jit.rs` `join`, `pcct_jit::profile`).

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::response::Response;
use pcct::view::{self, HotEdge, HotMethod, HotNode, HotNodeIds, Site, TooManySteps};
use pcct::{MethodOrder, MethodTable, Metric, NodeId};
use pcct_jit::profile::{inlining, EdgeContexts, EdgeInlining};
use pcct_sampler::timer::now_ns;
use pcct_sampler::Profile;
use serde::Serialize;

use super::MAX_LIMIT;
use crate::error::ApiError;
use crate::heavy::with_snapshot;
use crate::params::{with_resource, Params};
use crate::state::{AppState, ProfileHeader};

#[derive(Serialize)]
pub struct HotMethods {
    pub profile: ProfileHeader,
    /// The resource the methods are ranked by and their shares are of.
    pub resource: Metric,
    pub by: &'static str,
    pub methods: Vec<HotMethod>,
}

#[derive(Serialize)]
pub struct HotEdges {
    pub profile: ProfileHeader,
    pub resource: Metric,
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
    pub resource: Metric,
    pub nodes: Vec<HotNode>,
}

#[derive(Serialize)]
pub struct Sites {
    pub profile: ProfileHeader,
    pub resource: Metric,
    pub sites: Vec<Site>,
}

/// `GET /api/hot-methods?limit=1..1000 (20)&by=self|total (self)&resource=<any> (the tree's)`
pub async fn hot_methods(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &with_resource(&["limit", "by"]))?;
    let limit = params.integer("limit", 1, MAX_LIMIT, 20)? as usize;
    let by = params.choice("by", &["self", "total"], "self")?;
    let order = if by == "total" { MethodOrder::Total } else { MethodOrder::SelfWeight };
    let resource = params.resource()?;
    let answer = move |state: &AppState, profile: &Profile| {
        let resource = resource.unwrap_or(profile.tree.config().metric);
        let methods = view::hot_methods(&profile.tree, &profile.methods, limit, order, resource);
        HotMethods { profile: state.header(&profile.tree), resource, by, methods }
    };
    // The live heap is only in copies of the profile.
    let answer = if resource.is_some_and(Metric::is_live) {
        let job_state = state.clone();
        with_snapshot(&state, move |profile| answer(&job_state, &profile)).await?
    } else {
        answer(&state, &state.shared.profile.lock())
    };
    state.json(Some("limit"), &answer)
}

/// Hot edges as copied under the lock: named, with their contexts (ids)
/// for the join with the inline table after the lock is released.
type CopiedEdges = (ProfileHeader, Metric, Vec<HotEdge>, EdgeContexts, Arc<MethodTable>);

fn copy_edges(state: &AppState, profile: &Profile, edges: &[NodeId], resource: Metric) -> CopiedEdges {
    let contexts = EdgeContexts::copy(&profile.tree, edges, MAX_HOT_NODE_STEPS);
    let known: Vec<_> = contexts.edges.iter().map(|edge| (edge.node, edge.outermost)).collect();
    (
        state.header(&profile.tree),
        resource,
        view::hot_edges_known(&profile.tree, &profile.methods, &known, resource),
        contexts,
        Arc::clone(&profile.methods),
    )
}

/// `GET /api/hot-edges?limit=1..1000 (20)&resource=<any> (the tree's)`
pub async fn hot_edges(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &with_resource(&["limit"]))?;
    let limit = params.integer("limit", 1, MAX_LIMIT, 20)? as usize;
    let resource = params.resource()?;
    let listed = if resource.is_some_and(Metric::is_live) {
        None // the live heap is only in copies of the profile
    } else {
        let profile = state.shared.profile.lock();
        let resource = resource.unwrap_or(profile.tree.config().metric);
        let edges = profile.tree.listed_top_edges_by(resource, limit);
        edges.map(|edges| copy_edges(&state, &profile, &edges, resource))
    };
    let (profile, resource, edges, contexts, methods) = match listed {
        Some(copied) => copied,
        None => {
            let job_state = state.clone();
            with_snapshot(&state, move |profile| {
                let resource = resource.unwrap_or(profile.tree.config().metric);
                copy_edges(&job_state, &profile, &profile.tree.top_edges_by(resource, limit), resource)
            })
            .await?
        }
    };
    let inlining = super::jit::join(&state, move |jit| inlining(jit, &methods, &contexts, now_ns())).await?;
    let edges = edges.into_iter().zip(inlining).map(|(edge, inlining)| HotEdgeEntry { edge, inlining }).collect();
    state.json(Some("limit"), &HotEdges { profile, resource, edges })
}

/// Most path steps in one hot-nodes answer (1000 contexts 100 frames deep).
pub const MAX_HOT_NODE_STEPS: usize = 100_000;

/// The hot nodes copied from `profile` (ids only), its header and method
/// table, and the resource they are ranked by.
type CopiedNodes = (Result<HotNodeIds, TooManySteps>, ProfileHeader, Arc<MethodTable>, Metric);

fn copy_nodes(state: &AppState, profile: &Profile, nodes: &[NodeId], resource: Metric) -> CopiedNodes {
    let copy = HotNodeIds::copy(&profile.tree, nodes, MAX_HOT_NODE_STEPS, resource);
    (copy, state.header(&profile.tree), Arc::clone(&profile.methods), resource)
}

/// The `limit` hottest nodes in `resource` (the tree's metric when
/// `None`), copied under the lock from a hot-node list, or from a copy of
/// the profile when no list covers them.
async fn hottest_nodes(state: &AppState, limit: usize, resource: Option<Metric>) -> Result<CopiedNodes, ApiError> {
    let listed = if resource.is_some_and(Metric::is_live) {
        None // the live heap is only in copies of the profile
    } else {
        let profile = state.shared.profile.lock();
        let resource = resource.unwrap_or(profile.tree.config().metric);
        let nodes = profile.tree.listed_top_nodes_by(resource, limit);
        nodes.map(|nodes| copy_nodes(state, &profile, &nodes, resource))
    };
    match listed {
        Some(copied) => Ok(copied),
        None => {
            let job_state = state.clone();
            with_snapshot(state, move |profile| {
                let resource = resource.unwrap_or(profile.tree.config().metric);
                copy_nodes(&job_state, &profile, &profile.tree.top_nodes_by(resource, limit), resource)
            })
            .await
        }
    }
}

/// The 413 of hot nodes or sites whose paths are too long to answer.
fn too_many_steps(limit: usize) -> impl FnOnce(TooManySteps) -> ApiError {
    move |TooManySteps { steps }| {
        let message = format!(
            "the paths of the {limit} hottest contexts have {steps} steps, more than the {MAX_HOT_NODE_STEPS} \
             the server answers with; ask for fewer with a smaller limit"
        );
        ApiError::too_large(Some("limit"), message)
    }
}

/// `GET /api/hot-nodes?limit=1..1000 (20)&resource=<any> (the tree's)`
pub async fn hot_nodes(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &with_resource(&["limit"]))?;
    let limit = params.integer("limit", 1, MAX_LIMIT, 20)? as usize;
    let (copy, profile, methods, resource) = hottest_nodes(&state, limit, params.resource()?).await?;
    let copy = copy.map_err(too_many_steps(limit))?;
    state.json(Some("limit"), &HotNodes { profile, resource, nodes: copy.name(&methods) })
}

/// `GET /api/sites?limit=1..1000 (20)&resource=<any> (alloc_bytes)`: HPROF's
/// sites, the (class, context) pairs of allocations or monitor waits ranked
/// by the resource with their shares and accumulated shares; for a time
/// resource, the hottest contexts alone.
pub async fn sites(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &with_resource(&["limit"]))?;
    let limit = params.integer("limit", 1, MAX_LIMIT, 20)? as usize;
    let resource = params.metric(Metric::AllocBytes)?;
    let (copy, profile, methods, resource) = hottest_nodes(&state, limit, Some(resource)).await?;
    let copy = copy.map_err(too_many_steps(limit))?;
    state.json(Some("limit"), &Sites { profile, resource, sites: copy.sites(&methods) })
}
