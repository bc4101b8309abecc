//! Browser sessions the login form opens (`crate::routes::login`): a
//! random id (256 bits from the kernel) in a cookie, the role of the token
//! the login gave, at most [`MAX_SESSIONS`] at once (the oldest dropped
//! first), [`SESSION_LIFETIME`] each, in memory only.
//!
//! **Bound to this agent's port.** A browser sends a host's cookies to
//! every port of it, so agents on one host would overwrite each other's
//! cookie, and a session could be offered to another port. The cookie's
//! name carries the port the server listens on (`pcct_session_7070`), and
//! a session is valid only on the port it was opened on.

use std::time::{Duration, Instant};

use axum::http::{header, HeaderMap};

use crate::secret::{same_secret, Role};

/// The start of the session cookie's name (the port follows).
pub const COOKIE_PREFIX: &str = "pcct_session";
/// How long a session lasts.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// Most sessions at once; a new login beyond it ends the oldest.
pub const MAX_SESSIONS: usize = 32;

/// The session cookie's name on a server listening on `port` (unknown:
/// the bare prefix, as in tests without a socket).
pub fn cookie_name(port: Option<u16>) -> String {
    port.map_or_else(|| COOKIE_PREFIX.to_string(), |port| format!("{COOKIE_PREFIX}_{port}"))
}

struct Session {
    id: String,
    opened: Instant,
    role: Role,
    port: Option<u16>,
}

/// The open sessions.
#[derive(Default)]
pub struct Sessions {
    open: Vec<Session>,
}

impl Sessions {
    /// Opens a session with `role` on `port`; its id, or `None` if the
    /// kernel gave no randomness.
    pub fn open(&mut self, role: Role, port: Option<u16>) -> Option<String> {
        let mut bytes = [0u8; 32];
        std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom").ok()?, &mut bytes).ok()?;
        let id: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        self.expire();
        if self.open.len() >= MAX_SESSIONS {
            self.open.remove(0);
        }
        self.open.push(Session { id: id.clone(), opened: Instant::now(), role, port });
        Some(id)
    }

    /// The role of the session `id` names on `port`, if it is open
    /// (every id compared, in constant time).
    pub fn role_of(&mut self, id: &str, port: Option<u16>) -> Option<Role> {
        self.expire();
        self.open.iter().fold(None, |found, session| {
            let matches = same_secret(session.id.as_bytes(), id.as_bytes()) && session.port == port;
            if matches {
                Some(session.role)
            } else {
                found
            }
        })
    }

    pub fn close(&mut self, id: &str) {
        self.open.retain(|session| !same_secret(session.id.as_bytes(), id.as_bytes()));
    }

    fn expire(&mut self) {
        self.open.retain(|session| session.opened.elapsed() < SESSION_LIFETIME);
    }
}

/// The value of the cookie `name` in the request's cookies, if any.
pub fn session_cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(name)?.strip_prefix('='))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_random_bounded_closable_and_keep_their_role() {
        let mut sessions = Sessions::default();
        let first = sessions.open(Role::Control, Some(7070)).unwrap();
        let second = sessions.open(Role::Read, Some(7070)).unwrap();
        assert_eq!(first.len(), 64);
        assert_ne!(first, second);
        assert_eq!(sessions.role_of(&first, Some(7070)), Some(Role::Control));
        assert_eq!(sessions.role_of(&second, Some(7070)), Some(Role::Read));
        assert_eq!(sessions.role_of(&first, Some(7071)), None, "another port's session");
        assert_eq!(sessions.role_of("", Some(7070)), None);
        assert_eq!(sessions.role_of(&first[..63], Some(7070)), None);
        sessions.close(&first);
        assert_eq!(sessions.role_of(&first, Some(7070)), None);
        for _ in 0..MAX_SESSIONS {
            sessions.open(Role::Read, None).unwrap();
        }
        assert_eq!(sessions.role_of(&second, Some(7070)), None, "the oldest session ends first");
    }

    #[test]
    fn the_cookie_carries_the_port_and_is_found_among_others() {
        assert_eq!(cookie_name(Some(7070)), "pcct_session_7070");
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, "a=1; pcct_session_7071=x; pcct_session_7070=abc; b=2".parse().unwrap());
        assert_eq!(session_cookie(&headers, "pcct_session_7070"), Some("abc"));
        assert_eq!(session_cookie(&headers, "pcct_session_707"), None);
        headers.insert(header::COOKIE, "pcct_session_7070x=abc".parse().unwrap());
        assert_eq!(session_cookie(&headers, "pcct_session_7070"), None);
    }
}
