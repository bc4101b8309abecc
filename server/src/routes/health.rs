//! `/healthz`: liveness, without authentication.

use axum::extract::RawQuery;

use crate::error::ApiError;
use crate::params::Params;

pub async fn healthz(RawQuery(query): RawQuery) -> Result<&'static str, ApiError> {
    Params::parse(query.as_deref(), &[])?;
    Ok("ok\n")
}
