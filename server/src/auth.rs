//! Authentication when a token is set: every route but `/healthz` and the
//! login form needs either `Authorization: Bearer <token>` (compared in
//! constant time) or a browser session cookie the login form gave.
//!
//! **The browser's way in.** A browser cannot add an `Authorization`
//! header to its page loads, its `<object>` flame graph or its form posts.
//! `POST /login` takes the token once, from a form on this server's own
//! page, and answers a cookie naming a new random session (256 bits from
//! the kernel), never the token itself: `HttpOnly` (scripts cannot read
//! it), `SameSite=Strict` (the browser sends it only with requests from
//! this site's own pages), `Path=/`, for 12 hours. Sessions live in memory
//! ([`Sessions`]: at most [`MAX_SESSIONS`], the oldest dropped first) and
//! end with `POST /logout` or the JVM. A wrong token waits half a second
//! before its answer (guessing is slow).
//!
//! **What a cookie cannot do.** "Same site" ignores ports, so a page on
//! another port of this host could make the browser send the cookie; a
//! request carrying only the cookie must therefore pass the cross-site
//! checks of [`crate::same_origin`] for anything but GET and HEAD (another
//! `Origin` refused, JSON only), and GET answers carry no CORS header, so
//! another origin cannot read them. A DNS-rebinding page never gets the
//! cookie: it is bound to the name the login used.

use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;

/// The session cookie's name.
pub const COOKIE: &str = "pcct_session";
/// How long a session lasts.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// Most sessions at once; a new login beyond it ends the oldest.
pub const MAX_SESSIONS: usize = 32;

/// Compares two byte strings in time that depends only on their lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let difference = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(difference) == 0
}

/// The browser sessions the login form opened.
#[derive(Default)]
pub struct Sessions {
    open: Vec<(String, Instant)>,
}

impl Sessions {
    /// Opens a session; its id, or `None` if the kernel gave no randomness.
    pub fn open(&mut self) -> Option<String> {
        let mut bytes = [0u8; 32];
        std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom").ok()?, &mut bytes).ok()?;
        let id: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        self.expire();
        if self.open.len() >= MAX_SESSIONS {
            self.open.remove(0);
        }
        self.open.push((id.clone(), Instant::now()));
        Some(id)
    }

    /// Whether `id` names an open session (compared in constant time).
    pub fn is_open(&mut self, id: &str) -> bool {
        self.expire();
        self.open.iter().fold(false, |found, (open, _)| found | constant_time_eq(open.as_bytes(), id.as_bytes()))
    }

    pub fn close(&mut self, id: &str) {
        self.open.retain(|(open, _)| !constant_time_eq(open.as_bytes(), id.as_bytes()));
    }

    fn expire(&mut self) {
        self.open.retain(|(_, opened)| opened.elapsed() < SESSION_LIFETIME);
    }
}

/// The session id in the request's cookies, if any.
pub fn session_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(COOKIE)?.strip_prefix('='))
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

pub async fn require_token(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Some(expected) = state.config.token.as_deref() else {
        return next.run(request).await;
    };
    let path = request.uri().path();
    if path == "/healthz" || path == "/login" {
        return next.run(request).await;
    }
    if constant_time_eq(bearer(request.headers()).unwrap_or("").as_bytes(), expected.as_bytes()) {
        return next.run(request).await;
    }
    let session = session_cookie(request.headers()).is_some_and(|id| state.sessions.lock().is_open(id));
    if session {
        if !matches!(*request.method(), Method::GET | Method::HEAD) {
            if let Err(message) = crate::same_origin::check_cross_site(&request) {
                return ApiError::forbidden(message).into_response();
            }
        }
        return next.run(request).await;
    }
    if request.method() == Method::GET && path == "/" && wants_html(request.headers()) {
        return crate::routes::login::form(None, axum::http::StatusCode::UNAUTHORIZED);
    }
    ApiError::unauthorized().into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_only_when_identical() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
        assert!(!constant_time_eq(b"", b"x"));
    }

    #[test]
    fn sessions_are_random_bounded_and_closable() {
        let mut sessions = Sessions::default();
        let first = sessions.open().unwrap();
        let second = sessions.open().unwrap();
        assert_eq!(first.len(), 64);
        assert_ne!(first, second);
        assert!(sessions.is_open(&first) && sessions.is_open(&second));
        assert!(!sessions.is_open("") && !sessions.is_open(&first[..63]));
        sessions.close(&first);
        assert!(!sessions.is_open(&first));
        for _ in 0..MAX_SESSIONS {
            sessions.open().unwrap();
        }
        assert!(!sessions.is_open(&second), "the oldest session ends first");
    }

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, "a=1; pcct_session=abc; b=2".parse().unwrap());
        assert_eq!(session_cookie(&headers), Some("abc"));
        headers.insert(header::COOKIE, "pcct_sessionx=abc".parse().unwrap());
        assert_eq!(session_cookie(&headers), None);
    }
}
