//! `/api/hot-methods`, `/api/hot-edges`, `/api/hot-nodes`: the sorted hot
//! lists, read under the profile lock in O(limit) (hot methods add one pass
//! over the tree for the totals).

use axum::extract::{RawQuery, State};
use axum::response::Response;
use pcct::view::{self, HotEdge, HotMethod, HotNode};
use pcct::MethodOrder;
use serde::Serialize;

use super::MAX_LIMIT;
use crate::error::ApiError;
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
    pub edges: Vec<HotEdge>,
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

/// `GET /api/hot-edges?limit=1..1000 (20)`
pub async fn hot_edges(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &["limit"])?;
    let limit = params.integer("limit", 1, MAX_LIMIT, 20)? as usize;
    let answer = {
        let profile = state.shared.profile.lock();
        let edges = view::hot_edges(&profile.tree, &profile.methods, limit);
        HotEdges { profile: state.header(&profile.tree), edges }
    };
    state.json(Some("limit"), &answer)
}

/// `GET /api/hot-nodes?limit=1..1000 (20)`
pub async fn hot_nodes(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &["limit"])?;
    let limit = params.integer("limit", 1, MAX_LIMIT, 20)? as usize;
    let answer = {
        let profile = state.shared.profile.lock();
        let nodes = view::hot_nodes(&profile.tree, &profile.methods, limit);
        HotNodes { profile: state.header(&profile.tree), nodes }
    };
    state.json(Some("limit"), &answer)
}
