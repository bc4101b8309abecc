//! The browser's way in when a token is set (see `crate::auth`):
//! `GET /login` shows a form, `POST /login` exchanges the token for a
//! session cookie (`HttpOnly; SameSite=Strict`) and goes to the page,
//! `POST /logout` ends the session. Without a token there is nothing to
//! log into: both go to the page.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::auth::{constant_time_eq, session_cookie, COOKIE, SESSION_LIFETIME};
use crate::error::ApiError;
use crate::params::Params;
use crate::state::AppState;

/// How long a wrong token waits for its answer.
const WRONG_TOKEN_DELAY: Duration = Duration::from_millis(500);

/// The login form, with `message` above it, answered with `status`.
pub fn form(message: Option<&str>, status: StatusCode) -> Response {
    let message = message.map_or(String::new(), |text| format!("<p id=\"message\">{text}</p>"));
    let page = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>pcct — log in</title>\
         <style>body{{font:15px system-ui,sans-serif;margin:3em auto;max-width:28em;color:#222}}\
         input{{font:inherit;padding:.3em;width:100%;box-sizing:border-box;margin:.4em 0}}\
         #message{{color:#b00}}</style></head><body>\
         <h1>pcct</h1><p>This profiler needs its token (the agent's <code>token=</code> or \
         <code>token_file=</code>). It is sent once, to this server; the browser keeps a session cookie \
         that scripts cannot read, not the token.</p>{message}\
         <form method=\"post\" action=\"/login\"><label>Token <input type=\"password\" name=\"token\" \
         id=\"token\" autocomplete=\"current-password\" autofocus required></label>\
         <button type=\"submit\" id=\"login\">Log in</button></form></body></html>\n"
    );
    (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-store")], page)
        .into_response()
}

fn go_to(location: &'static str, cookie: Option<String>) -> Response {
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response();
    if let Some(cookie) = cookie.and_then(|cookie| cookie.parse().ok()) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

/// `GET /login`: the form (the page, without a token).
pub async fn show(State(state): State<AppState>, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    Params::parse(query.as_deref(), &[])?;
    if state.config.token.is_none() {
        return Ok(go_to("/", None));
    }
    Ok(form(None, StatusCode::OK))
}

/// `POST /login` with the form's `token=...`: a session cookie and the
/// page, or the form again (401) after a short wait.
pub async fn login(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Result<Response, ApiError> {
    let Some(expected) = state.config.token.as_deref() else { return Ok(go_to("/", None)) };
    let host = headers.get(header::HOST).and_then(|value| value.to_str().ok());
    if !crate::same_origin::origin_is_own(&headers, host) {
        return Err(ApiError::forbidden("a login from another origin is refused"));
    }
    let fields: Vec<(String, String)> =
        serde_urlencoded::from_bytes(&body).map_err(|_| ApiError::bad_request("the form is not URL encoded"))?;
    let token = fields.iter().find(|(name, _)| name == "token").map_or("", |(_, value)| value.as_str());
    if !constant_time_eq(token.as_bytes(), expected.as_bytes()) {
        tokio::time::sleep(WRONG_TOKEN_DELAY).await;
        return Ok(form(Some("That is not the token."), StatusCode::UNAUTHORIZED));
    }
    let id = state.sessions.lock().open().ok_or_else(|| ApiError::internal("no randomness for a session"))?;
    let cookie = format!("{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}", SESSION_LIFETIME.as_secs());
    Ok(go_to("/", Some(cookie)))
}

/// `POST /logout`: ends the session the cookie names and forgets the cookie.
pub async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(id) = session_cookie(&headers) {
        state.sessions.lock().close(id);
    }
    go_to("/login", Some(format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0")))
}
