//! Tokens and the roles they give. The control token (`token=`) gives
//! every route; the read-only token (`read_token=`) every route that only
//! reads (reports, scrapes, pprof, the page), never one that changes the
//! sampler or the JVM (pause, purge, interval, recompile).
//!
//! A presented token is compared by its SHA-256 digest with each expected
//! token's digest, in constant time (`subtle`): both sides are 32 bytes
//! whatever the tokens' lengths, so the comparison's time tells neither
//! how much of a guess was right nor how long the token is. Both expected
//! tokens are always compared, so the time does not say which matched.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// What a credential lets a client do. `Control` includes `Read`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Read,
    Control,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Read => "read-only",
            Role::Control => "control",
        }
    }
}

type Fingerprint = [u8; 32];

fn fingerprint(secret: &[u8]) -> Fingerprint {
    Sha256::digest(secret).into()
}

/// Whether `a` and `b` are the same secret, in time that depends on
/// neither their contents nor their lengths.
pub fn same_secret(a: &[u8], b: &[u8]) -> bool {
    bool::from(fingerprint(a).ct_eq(&fingerprint(b)))
}

/// The expected tokens, as digests (the tokens themselves are not kept).
#[derive(Clone, Default)]
pub struct Credentials {
    control: Option<Fingerprint>,
    read: Option<Fingerprint>,
}

impl Credentials {
    pub fn new(control: Option<&str>, read: Option<&str>) -> Credentials {
        Credentials {
            control: control.map(|token| fingerprint(token.as_bytes())),
            read: read.map(|token| fingerprint(token.as_bytes())),
        }
    }

    /// Whether any token is set (then every route but `/healthz` and the
    /// login form needs a credential).
    pub fn required(&self) -> bool {
        self.control.is_some() || self.read.is_some()
    }

    /// Whether a control token is set.
    pub fn has_control(&self) -> bool {
        self.control.is_some()
    }

    /// The role `presented` gives, if it is one of the tokens.
    pub fn role_of(&self, presented: &[u8]) -> Option<Role> {
        let presented = fingerprint(presented);
        // Which tokens are set is no secret; their contents are.
        let matches =
            |expected: &Option<Fingerprint>| expected.is_some_and(|expected| bool::from(expected.ct_eq(&presented)));
        let (control, read) = (matches(&self.control), matches(&self.read));
        if control {
            Some(Role::Control)
        } else if read {
            Some(Role::Read)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_equal_only_when_identical() {
        assert!(same_secret(b"secret", b"secret"));
        assert!(!same_secret(b"secret", b"secreT"));
        assert!(!same_secret(b"secret", b"secret2"));
        assert!(!same_secret(b"", b"x"));
        assert!(same_secret(b"", b""));
    }

    #[test]
    fn each_token_gives_its_role_and_nothing_else_gives_one() {
        let both = Credentials::new(Some("control-token-0123456789"), Some("read-token-0123456789"));
        assert!(both.required() && both.has_control());
        assert_eq!(both.role_of(b"control-token-0123456789"), Some(Role::Control));
        assert_eq!(both.role_of(b"read-token-0123456789"), Some(Role::Read));
        for wrong in [&b""[..], b"control-token-012345678", b"read-token-01234567890", b"x"] {
            assert_eq!(both.role_of(wrong), None, "{}", String::from_utf8_lossy(wrong));
        }
        let read_only = Credentials::new(None, Some("read-token-0123456789"));
        assert!(read_only.required() && !read_only.has_control());
        assert_eq!(read_only.role_of(b""), None, "no control token is not an empty one");
        assert!(!Credentials::default().required());
        assert!(Role::Control > Role::Read);
    }
}
