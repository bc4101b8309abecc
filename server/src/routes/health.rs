//! `/healthz`: liveness, without authentication.

pub async fn healthz() -> &'static str {
    "ok\n"
}
