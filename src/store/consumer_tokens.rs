//! Consumer tokens (docs/design.md §10) as every process keeps them in memory
//! (`service::pull::tokens`): all of them once, then only those whose token
//! was issued, or whose endpoint changed, after a given time. What makes a
//! token work is decided above (`domain::pull::consumer_token_works`); this
//! reads what that needs.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::domain::pull::Delivery;

/// An endpoint's consumer token as a read finds it, with what decides
/// whether it works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerTokenRow {
    pub endpoint_id: Uuid,
    /// The SHA-256 of its current token; `None`: it has none (revoked).
    pub digest: Option<[u8; 32]>,
    pub deleted: bool,
    pub delivery: Delivery,
}

/// One read of consumer tokens.
#[derive(Debug, Clone)]
pub struct ConsumerTokenRows {
    /// The database's clock as it read: the next read starts from it.
    pub read_at: DateTime<Utc>,
    pub rows: Vec<ConsumerTokenRow>,
}
