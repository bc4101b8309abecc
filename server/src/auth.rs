//! Authentication when a token is set: every route but `/healthz` and the
//! login form needs a credential, either `Authorization: Bearer <token>`
//! or a browser session cookie the login form gave.
//!
//! **Two roles** (`crate::secret`). The control token (`token=`) may do
//! anything; the read-only token (`read_token=`) may only read: GET and
//! HEAD, and `POST /logout`. Every other method (pause, purge, interval,
//! recompile, and any POST route added later) needs the control role, so
//! the credential a scraper holds cannot change the sampler or the JVM.
//! With only a read-only token set, nothing can change them.
//!
//! **Guessing is slow.** A wrong bearer token waits for its 401 behind
//! its client's earlier wrong tokens (`crate::throttle`): 1,000 guesses
//! from one address take at least 100 s, or are refused with 429 without
//! being compared. A right token is served at once. Comparison is by
//! digest, in constant time (`crate::secret`).
//!
//! **The browser's way in.** A browser cannot add an `Authorization`
//! header to its page loads, its `<object>` flame graph or its form posts.
//! `POST /login` takes a token once, from a form on this server's own
//! page, and answers a cookie naming a new random session with that
//! token's role (`crate::sessions`), never the token itself: `HttpOnly`
//! (scripts cannot read it), `SameSite=Strict` (the browser sends it only
//! with requests from this site's own pages), `Path=/`, named after this
//! server's port, for 12 hours.
//!
//! **What a cookie cannot do.** "Same site" ignores ports, so a page on
//! another port of this host could make the browser send the cookie; a
//! request carrying only the cookie must therefore pass the cross-site
//! checks of [`crate::same_origin`] for anything but GET and HEAD (another
//! `Origin` refused, JSON only), and GET answers carry no CORS header, so
//! another origin cannot read them. A DNS-rebinding page never gets the
//! cookie: it is bound to the name the login used.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::secret::Role;
use crate::serve::Connection;
use crate::sessions::{cookie_name, session_cookie};
use crate::state::AppState;
use crate::throttle::ClientKey;

/// The role a request needs: control for anything but GET, HEAD and `POST /logout`.
pub fn required_role(method: &Method, path: &str) -> Role {
    if matches!(*method, Method::GET | Method::HEAD) || path == "/logout" {
        Role::Read
    } else {
        Role::Control
    }
}

/// The port this server listens on, as the connection says (none without a socket).
pub fn local_port(request_extensions: &axum::http::Extensions) -> Option<u16> {
    request_extensions.get::<Connection>().map(|connection| connection.local.port())
}

/// Who sent the request, as the throttle tells clients apart (one shared
/// key without a socket).
pub fn client_of(request_extensions: &axum::http::Extensions) -> ClientKey {
    let address = request_extensions.get::<Connection>().map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.peer.ip());
    ClientKey::of(address)
}

/// The bearer token of the request, if it has one.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    // The scheme name is case-insensitive (RFC 9110).
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(token)
}

/// Whether the browser asks for a page (it accepts HTML).
fn wants_html(headers: &HeaderMap) -> bool {
    headers.get(header::ACCEPT).and_then(|value| value.to_str().ok()).is_some_and(|value| value.contains("text/html"))
}

/// The 429 of a client whose wrong tokens wait already.
pub fn too_many_wrong(wait: Duration) -> ApiError {
    ApiError::too_many("too many wrong tokens from this address; retry after the wait Retry-After gives", wait)
}

/// The role a presented `token` gives, after the throttle: 429 when its
/// client has too many wrong answers waiting, 401 (late) when it is wrong.
pub async fn token_role(state: &AppState, client: ClientKey, token: &str) -> Result<Role, ApiError> {
    state.throttle.admit(client).map_err(too_many_wrong)?;
    match state.credentials.role_of(token.as_bytes()) {
        Some(role) => Ok(role),
        None => {
            state.throttle.wrong(client).wait().await;
            Err(ApiError::unauthorized())
        }
    }
}

/// The role of the request's session cookie, if it names an open session;
/// 403 for a change that fails the cross-site checks.
fn session_role(state: &AppState, request: &Request) -> Result<Option<Role>, ApiError> {
    let port = local_port(request.extensions());
    let Some(id) = session_cookie(request.headers(), &cookie_name(port)) else { return Ok(None) };
    let Some(role) = state.sessions.lock().role_of(id, port) else { return Ok(None) };
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        crate::same_origin::check_cross_site(request).map_err(ApiError::forbidden)?;
    }
    Ok(Some(role))
}

/// The 403 of a credential whose role is not enough.
fn not_allowed(state: &AppState, role: Role) -> ApiError {
    let message = if state.credentials.has_control() {
        format!(
            "the {} credential cannot pause, purge, change sampling or recompile: that takes the control token (token=)",
            role.name()
        )
    } else {
        "no control token is set (token=): this server does not pause, purge, change sampling or recompile".to_string()
    };
    ApiError::forbidden(message)
}

pub async fn require_token(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if !state.credentials.required() {
        return next.run(request).await;
    }
    let path = request.uri().path();
    if path == "/healthz" || path == "/login" {
        return next.run(request).await;
    }
    let needed = required_role(request.method(), path);
    let role = match bearer(request.headers()) {
        Some(token) => token_role(&state, client_of(request.extensions()), token).await.map(Some),
        None => session_role(&state, &request),
    };
    match role {
        Ok(Some(role)) if role >= needed => next.run(request).await,
        Ok(Some(role)) => not_allowed(&state, role).into_response(),
        Ok(None) if request.method() == Method::GET && path == "/" && wants_html(request.headers()) => {
            crate::routes::login::form(None, StatusCode::UNAUTHORIZED)
        }
        Ok(None) => ApiError::unauthorized().into_response(),
        Err(error) => error.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reading_needs_no_more_than_the_read_role() {
        for (method, path, role) in [
            (Method::GET, "/api/status", Role::Read),
            (Method::HEAD, "/metrics", Role::Read),
            (Method::GET, "/debug/pprof/profile", Role::Read),
            (Method::POST, "/logout", Role::Read),
            (Method::POST, "/api/purge", Role::Control),
            (Method::POST, "/api/sampling", Role::Control),
            (Method::POST, "/api/jit/recompile", Role::Control),
            (Method::POST, "/api/some-later-route", Role::Control),
            (Method::DELETE, "/api/status", Role::Control),
        ] {
            assert_eq!(required_role(&method, path), role, "{method} {path}");
        }
    }
}
