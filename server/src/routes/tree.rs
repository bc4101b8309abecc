//! `/api/tree?path=&min_share=&max_depth=`: a pruned subtree as nested JSON.

use axum::extract::{RawQuery, State};
use axum::response::Response;
use pcct::view::{self, SubtreeLimits, SubtreeNode};
use serde::Serialize;

use crate::error::ApiError;
use crate::heavy::with_snapshot;
use crate::params::{with_resource, Params};
use crate::state::{AppState, ProfileHeader};

/// Most steps a context path may have.
const MAX_PATH_STEPS: usize = 256;
/// Most matching contexts expanded in one answer.
const MAX_MATCHES_EXPANDED: usize = 16;

#[derive(Serialize)]
pub struct TreeAnswer {
    pub profile: ProfileHeader,
    /// The resource children are ordered and pruned by.
    pub resource: pcct::Metric,
    /// The path asked for, and how many contexts matched it (different call
    /// sites of the same methods match alike).
    pub path: Vec<String>,
    pub matches: usize,
    pub subtrees: Vec<SubtreeNode>,
}

/// `GET /api/tree?path=a;b;c&min_share=0..1 (0.01)&max_depth=1..64 (12)&max_nodes=1..20000 (2000)&resource=<any>`.
/// `path` steps are `class.method` names (or `*`), root first; children
/// are ordered and pruned by their cum in the resource (the tree's metric
/// by default).
pub async fn tree(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &with_resource(&["path", "min_share", "max_depth", "max_nodes"]))?;
    let resource = params.resource()?;
    let limits = view::SubtreeLimits {
        metric: resource.unwrap_or_default(),
        min_share: params.number("min_share", 0.0, 1.0, 0.01)?,
        max_depth: params.integer("max_depth", 1, 64, 12)? as usize,
        max_nodes: params.integer("max_nodes", 1, 20_000, 2_000)? as usize,
    };
    let path: Vec<String> = match params.get("path") {
        None | Some("") => Vec::new(),
        Some(text) => text.split(';').map(|step| step.trim().to_string()).collect(),
    };
    if path.len() > MAX_PATH_STEPS {
        return Err(ApiError::parameter("path", format!("at most {MAX_PATH_STEPS} steps")));
    }
    if path.iter().any(|step| step.is_empty() || step.len() > 1024) {
        return Err(ApiError::parameter(
            "path",
            "steps must be non-empty method names of at most 1024 characters, separated by ';'",
        ));
    }
    // The cum pass and the subtrees are computed on a snapshot, off the
    // profile lock and off the async runtime.
    let job_state = state.clone();
    with_snapshot(&state, move |profile| {
        let steps: Vec<&str> = path.iter().map(String::as_str).collect();
        let nodes = profile
            .tree
            .find_contexts(&profile.methods, &steps)
            .map_err(|error| ApiError::parameter("path", error.to_string()))?;
        let cum = profile.tree.cumulative();
        let limits = SubtreeLimits { metric: resource.unwrap_or(profile.tree.config().metric), ..limits };
        // Answers stay bounded: at most 16 matching contexts are expanded,
        // sharing one node budget.
        let mut budget = limits.max_nodes;
        let mut subtrees = Vec::new();
        for &node in nodes.iter().take(MAX_MATCHES_EXPANDED) {
            if budget == 0 {
                break;
            }
            let subtree = view::subtree(
                &profile.tree,
                &profile.methods,
                &cum,
                node,
                SubtreeLimits { max_nodes: budget, ..limits },
            );
            budget = budget.saturating_sub(subtree.node_count());
            subtrees.push(subtree);
        }
        let header = job_state.header(&profile.tree);
        let answer = TreeAnswer { profile: header, resource: limits.metric, path, matches: nodes.len(), subtrees };
        job_state.json(Some("max_nodes"), &answer)
    })
    .await?
}
