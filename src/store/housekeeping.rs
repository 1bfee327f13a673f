//! Housekeeping's side of the store: what keeps the due index whole (rows
//! marked `needs_index`, pending rows for a rebuild, a sweep or a heal after
//! a Redis failover) and the history bounded (retention).

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// Keyset position in the pending rows: (due time, id).
pub type PendingCursor = (DateTime<Utc>, Uuid);
