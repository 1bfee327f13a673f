//! What an API token may do. `admin` may do everything; the others are
//! narrow on purpose, so a producer's token cannot read signing secrets nor
//! other receivers' payloads, and a dashboard's token cannot send.

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Everything, including endpoint create/change/delete.
    Admin,
    /// Create and cancel notifications (and events), retry.
    Write,
    /// Status, lists, attempts.
    Read,
    /// Read or rotate signing secrets.
    Secrets,
    /// Pull, ack, nack and extend on any pull endpoint: it reads payloads
    /// and custom headers in clear, which `write` may not.
    Pull,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Admin => "admin",
            Scope::Write => "write",
            Scope::Read => "read",
            Scope::Secrets => "secrets",
            Scope::Pull => "pull",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The scopes one token holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scopes(u8);

impl Scopes {
    pub const ALL: Scopes = Scopes(0b1_1111);

    fn bit(scope: Scope) -> u8 {
        match scope {
            Scope::Admin => 0b0001,
            Scope::Write => 0b0010,
            Scope::Read => 0b0100,
            Scope::Secrets => 0b1000,
            Scope::Pull => 0b1_0000,
        }
    }

    pub fn of(scopes: &[Scope]) -> Self {
        if scopes.contains(&Scope::Admin) {
            return Self::ALL;
        }
        Scopes(scopes.iter().fold(0, |bits, s| bits | Self::bit(*s)))
    }

    /// Whether these scopes allow what `needed` guards; `admin` allows all.
    pub fn allow(self, needed: Scope) -> bool {
        self.0 & (Self::bit(needed) | Self::bit(Scope::Admin)) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_allows_everything_and_the_others_only_themselves() {
        let admin = Scopes::of(&[Scope::Admin]);
        for scope in [
            Scope::Admin,
            Scope::Write,
            Scope::Read,
            Scope::Secrets,
            Scope::Pull,
        ] {
            assert!(admin.allow(scope));
        }
        let read = Scopes::of(&[Scope::Read]);
        assert!(read.allow(Scope::Read));
        assert!(!read.allow(Scope::Write));
        assert!(!read.allow(Scope::Secrets));
        assert!(!read.allow(Scope::Admin));
        let write_read = Scopes::of(&[Scope::Write, Scope::Read]);
        assert!(write_read.allow(Scope::Write) && write_read.allow(Scope::Read));
        assert!(!write_read.allow(Scope::Secrets));
        // A producer's token sends; it does not read receivers' payloads.
        assert!(!write_read.allow(Scope::Pull));
        assert!(Scopes::of(&[Scope::Pull]).allow(Scope::Pull));
        assert!(!Scopes::of(&[]).allow(Scope::Read));
    }
}
