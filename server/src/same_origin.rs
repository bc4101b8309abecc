//! Requests from web pages, when no token is set (the default). Any page a
//! browser shows can make it send requests to 127.0.0.1, and a page whose
//! DNS name is rebound to 127.0.0.1 can even read the answers. So, without
//! a token:
//! - a request whose `Host` (or absolute URI) names anything but a loopback
//!   address, `localhost`, or a name in `allow_hosts` gets 403: a rebinding
//!   page's requests carry the page's own name;
//! - a request other than GET or HEAD with an `Origin` that is not this
//!   server's own origin gets 403;
//! - a request other than GET or HEAD without `Content-Type:
//!   application/json` gets 403: forms and other requests a page can send
//!   to another site without asking it first (a CORS preflight, which this
//!   server never grants) cannot carry that type.
//!
//! Clients that are not browsers send no `Origin`, and may send no `Host`:
//! both pass. `/healthz` is exempt (it says only "ok"). With a token none
//! of this applies: a page cannot know the token, and a browser does not
//! add it by itself.

use std::net::IpAddr;
use std::str::FromStr;

use axum::extract::{Request, State};
use axum::http::uri::Authority;
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;

/// Refuses, without a token, what a web page could send that the API's own
/// clients never do (see the module documentation).
pub async fn require_same_origin(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if state.credentials.required() || request.uri().path() == "/healthz" {
        return next.run(request).await;
    }
    match check(&request, &state.config.allowed_hosts) {
        Ok(()) => next.run(request).await,
        Err(message) => ApiError::forbidden(message).into_response(),
    }
}

/// `Ok` for a request a web page on another site could not have sent,
/// else why it is refused.
pub fn check(request: &Request, allowed_hosts: &[String]) -> Result<(), String> {
    let host = request_host(request);
    if let Some(host) = &host {
        if !allowed_host(host, allowed_hosts) {
            let shown: String = host.chars().take(100).collect();
            return Err(format!(
                "Host {shown:?} is not a loopback address or localhost; without a token the server answers other \
                 names only if the agent's allow_hosts option lists them (allow_hosts=name1|name2)"
            ));
        }
    }
    if matches!(*request.method(), Method::GET | Method::HEAD) {
        return Ok(());
    }
    check_cross_site(request)
}

/// The request's host: its absolute URI's authority, else its `Host`.
fn request_host(request: &Request) -> Option<String> {
    let authority = request.uri().authority().map(|authority| authority.as_str().to_string());
    authority.or_else(|| header_text(request.headers(), header::HOST).map(str::to_string))
}

/// `Ok` for a request other than GET or HEAD that a page of another origin
/// could not have made a browser send: no other `Origin`, and typed
/// `application/json`. Also the check of requests that carry only a
/// browser session cookie (`crate::auth`).
pub fn check_cross_site(request: &Request) -> Result<(), String> {
    if let Some(origin) = header_text(request.headers(), header::ORIGIN) {
        if !request_host(request).as_deref().is_some_and(|host| same_origin(origin, host)) {
            let shown: String = origin.chars().take(100).collect();
            return Err(format!("a {} from another origin ({shown:?}) is refused", request.method()));
        }
    }
    if !header_text(request.headers(), header::CONTENT_TYPE).is_some_and(is_json) {
        return Err(format!("a {} needs Content-Type: application/json", request.method()));
    }
    Ok(())
}

/// Whether `origin`, if the request has one, is the request's own (for
/// the login form, whose post is not JSON).
pub fn origin_is_own(request_headers: &HeaderMap, host: Option<&str>) -> bool {
    match header_text(request_headers, header::ORIGIN) {
        None => true,
        Some(origin) => host.is_some_and(|host| same_origin(origin, host)),
    }
}

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).map(|value| value.to_str().unwrap_or("\u{fffd}"))
}

/// The host of a `Host` value (`name`, `name:port`, `[v6]:port`), as
/// compared: lower case, without brackets or a final dot.
pub fn host_name(authority: &str) -> Option<String> {
    let authority = Authority::from_str(authority).ok()?;
    let host = authority.host().trim_start_matches('[').trim_end_matches(']').trim_end_matches('.');
    Some(host.to_ascii_lowercase())
}

/// A loopback address, `localhost`, or one of `allowed` (names or
/// addresses as the `allow_hosts` option gives them, IPv6 with or without
/// brackets).
pub fn allowed_host(authority: &str, allowed: &[String]) -> bool {
    let Some(host) = host_name(authority) else { return false };
    let address = host.parse::<IpAddr>().ok().map(|address| address.to_canonical());
    let listed = |name: &String| match name.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        Ok(listed) => address == Some(listed.to_canonical()),
        Err(_) => host_name(name).is_some_and(|name| name == host),
    };
    host == "localhost" || address.is_some_and(|address| address.is_loopback()) || allowed.iter().any(listed)
}

/// `origin` (`scheme://host[:port]`) is the origin of a page this server
/// served under `host` (the request's `Host` value).
fn same_origin(origin: &str, host: &str) -> bool {
    ["http://", "https://"]
        .iter()
        .any(|scheme| origin.strip_prefix(scheme).is_some_and(|rest| rest.eq_ignore_ascii_case(host)))
}

/// `application/json`, with or without parameters (`; charset=utf-8`).
fn is_json(content_type: &str) -> bool {
    content_type.split(';').next().is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_listed_names_are_allowed() {
        let none: &[String] = &[];
        for host in ["127.0.0.1:8080", "127.0.0.1", "127.8.9.10:1", "localhost:8080", "LOCALHOST", "localhost.:80"] {
            assert!(allowed_host(host, none), "{host}");
        }
        for host in ["[::1]:8080", "[::1]", "[::ffff:127.0.0.1]:80"] {
            assert!(allowed_host(host, none), "{host}");
        }
        for host in ["evil.example:8080", "127.0.0.1.evil.example", "localhost.evil.example", "10.0.0.5:80", "[::2]"] {
            assert!(!allowed_host(host, none), "{host}");
        }
        assert!(!allowed_host("not a host", none));
        let listed = ["Box.Example", "10.0.0.5", "[fe80::1]", "fd00:0::7"].map(String::from);
        for host in ["box.example:8080", "BOX.example.", "10.0.0.5:1", "[fe80::1]:9", "[fd00::7]"] {
            assert!(allowed_host(host, &listed), "{host}");
        }
        assert!(!allowed_host("other.example", &listed));
        assert!(!allowed_host("10.0.0.6", &listed));
    }

    #[test]
    fn origins_match_the_host_they_were_served_under() {
        assert!(same_origin("http://127.0.0.1:8080", "127.0.0.1:8080"));
        assert!(same_origin("http://LocalHost:8080", "localhost:8080"));
        assert!(same_origin("https://box.example", "box.example"));
        assert!(!same_origin("http://127.0.0.1:8081", "127.0.0.1:8080"));
        assert!(!same_origin("http://evil.example", "127.0.0.1:8080"));
        assert!(!same_origin("null", "127.0.0.1:8080"));
    }

    #[test]
    fn only_json_is_json() {
        assert!(is_json("application/json"));
        assert!(is_json("Application/JSON; charset=utf-8"));
        for other in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""] {
            assert!(!is_json(other), "{other}");
        }
    }
}
