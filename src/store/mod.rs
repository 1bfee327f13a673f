//! The source of truth, as hookd's parts see it: neutral model types (one
//! file per topic), one neutral error, and the seams (`seams.rs`) each part
//! of hookd uses. Backends implement the seams side by side: `postgres/`
//! (server mode) and `sqlite/` (the embedded mode), both held to one
//! conformance suite (`tests/it/conformance/`);
//! wrappers over any backend implement them too: `sealing/` (secrets
//! sealed at rest) and `replica.rs` (the API's reads from a streaming
//! replica, server mode). Nothing above `store/` names a database driver.

pub mod attempts;
pub mod backlog;
pub mod breaker;
pub mod cancel;
pub mod consumer_tokens;
mod debug;
pub mod delivery;
pub mod endpoints;
pub mod events;
pub mod health;
pub mod housekeeping;
mod migrations;
pub mod notifications;
pub(crate) mod operation_page;
pub mod operations;
pub mod ordering;
pub mod partitions;
#[cfg(feature = "server")]
pub mod postgres;
pub mod pull;
pub mod pull_due;
pub mod recording;
pub mod replica;
pub mod reseal;
pub mod sealing;
pub mod seams;
pub mod sqlite;
pub mod stats;
pub mod writes;

use crate::domain::sealed::SealError;

/// What a backend's error was, kept for the log (never shown to a client).
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

/// Which database a store is: what `/readyz` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// Server mode's.
    Postgres,
    /// The embedded mode's file.
    Sqlite,
}

/// A store's failure, whichever backend: what its callers need to tell
/// apart (answer 503, 409, 422 or 500), with the backend's error as cause.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database cannot be reached, or cannot write now (connection
    /// refused, pool exhausted, a full disk...): the API answers 503 and the
    /// dispatcher waits.
    // The cause is in the message rather than the error chain, so it is
    // printed once wherever the error is.
    #[error("database unavailable: {0}")]
    Unavailable(Cause),
    /// A unique constraint refused the write; the name says which.
    #[error("conflict on {0}")]
    Conflict(String),
    /// The database refused a value (e.g. a NUL byte in text).
    #[error("invalid value: {0}")]
    InvalidValue(Cause),
    #[error("database error: {0}")]
    Database(Cause),
    /// A value sealed at rest does not open: its key is not configured, or
    /// it was altered.
    #[error("{what}: {error}")]
    Sealed { what: String, error: SealError },
}
