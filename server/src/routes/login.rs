//! The browser's way in when a token is set (see `crate::auth`):
//! `GET /login` shows a form, `POST /login` exchanges a token for a
//! session cookie with that token's role (`HttpOnly; SameSite=Strict`,
//! named after this server's port) and goes to the page, `POST /logout`
//! ends the session. A wrong token waits behind its client's earlier ones
//! (`crate::throttle`), as a wrong bearer token does. Without a token there
//! is nothing to log into: both go to the page.

use axum::body::Bytes;
use axum::extract::{RawQuery, Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::auth::{client_of, local_port, token_role};
use crate::error::ApiError;
use crate::params::Params;
use crate::sessions::{cookie_name, session_cookie, SESSION_LIFETIME};
use crate::state::AppState;

/// Most bytes of the login form's body.
const MAX_FORM_BYTES: usize = 4096;

/// The login form, with `message` above it, answered with `status`.
pub fn form(message: Option<&str>, status: StatusCode) -> Response {
    let message = message.map_or(String::new(), |text| format!("<p id=\"message\">{text}</p>"));
    let page = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>pcct — log in</title>\
         <style>body{{font:15px system-ui,sans-serif;margin:3em auto;max-width:28em;color:#222}}\
         input{{font:inherit;padding:.3em;width:100%;box-sizing:border-box;margin:.4em 0}}\
         #message{{color:#b00}}</style></head><body>\
         <h1>pcct</h1><p>This profiler needs a token (the agent's control <code>token=</code> or its \
         <code>read_token=</code>, which only reads). It is sent once, to this server; the browser keeps a session cookie \
         that scripts cannot read, not the token.</p>{message}\
         <form method=\"post\" action=\"/login\"><label>Token <input type=\"password\" name=\"token\" \
         id=\"token\" autocomplete=\"current-password\" autofocus required></label>\
         <button type=\"submit\" id=\"login\">Log in</button></form></body></html>\n"
    );
    (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-store")], page)
        .into_response()
}

/// The form again with why the token was refused, keeping the error's status and `Retry-After`.
fn refused(error: ApiError) -> Response {
    let message = match error.status {
        StatusCode::TOO_MANY_REQUESTS => "Too many wrong tokens from this address: wait, then try again.",
        _ => "That is not the token.",
    };
    let mut response = form(Some(message), error.status);
    if let Some(seconds) = error.retry_after {
        response.headers_mut().insert(header::RETRY_AFTER, seconds.into());
    }
    response
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
    if !state.credentials.required() {
        return Ok(go_to("/", None));
    }
    Ok(form(None, StatusCode::OK))
}

/// `POST /login` with the form's `token=...`: a session cookie and the
/// page, or the form again (401, late; 429 when this client's wrong tokens
/// wait already).
pub async fn login(State(state): State<AppState>, request: Request) -> Result<Response, ApiError> {
    if !state.credentials.required() {
        return Ok(go_to("/", None));
    }
    let host = request.headers().get(header::HOST).and_then(|value| value.to_str().ok());
    if !crate::same_origin::origin_is_own(request.headers(), host) {
        return Err(ApiError::forbidden("a login from another origin is refused"));
    }
    let (client, port) = (client_of(request.extensions()), local_port(request.extensions()));
    let body: Bytes = axum::body::to_bytes(request.into_body(), MAX_FORM_BYTES)
        .await
        .map_err(|_| ApiError::bad_request("the form is unreadable or too long"))?;
    let fields: Vec<(String, String)> =
        serde_urlencoded::from_bytes(&body).map_err(|_| ApiError::bad_request("the form is not URL encoded"))?;
    let token = fields.iter().find(|(name, _)| name == "token").map_or("", |(_, value)| value.as_str());
    let role = match token_role(&state, client, token).await {
        Ok(role) => role,
        Err(error) => return Ok(refused(error)),
    };
    let id = state.sessions.lock().open(role, port).ok_or_else(|| ApiError::internal("no randomness for a session"))?;
    let cookie = format!(
        "{}={id}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        cookie_name(port),
        SESSION_LIFETIME.as_secs()
    );
    Ok(go_to("/", Some(cookie)))
}

/// `POST /logout`: ends the session the cookie names and forgets the cookie.
pub async fn logout(State(state): State<AppState>, request: Request) -> Response {
    let name = cookie_name(local_port(request.extensions()));
    if let Some(id) = session_cookie(request.headers(), &name) {
        state.sessions.lock().close(id);
    }
    go_to("/login", Some(format!("{name}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0")))
}
