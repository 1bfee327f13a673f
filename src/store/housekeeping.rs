//! Housekeeping's side of the store: what keeps the due index whole (rows
//! marked `needs_index`, pending rows for a rebuild, a sweep or a heal after
//! a Redis failover) and the history bounded (retention).

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// Keyset position in the pending rows: (due time, id).
pub type PendingCursor = (DateTime<Utc>, Uuid);

/// The events among a retention step's `scanned` (id, whether a delivery
/// of it is left) that go: `domain::retention::event_expired` on each, for
/// both backends.
pub(crate) fn expired_events(scanned: &[(Uuid, bool)]) -> Vec<Uuid> {
    scanned
        .iter()
        .filter(|(_, left)| crate::domain::retention::event_expired(*left))
        .map(|(id, _)| *id)
        .collect()
}

/// A retention walk's step, from its (deleted, scanned, last id scanned):
/// how many it deleted, and where the next step starts (`None` once a step
/// scanned fewer than `limit`, the end of the walk). Both backends walk so.
pub(crate) fn walked(
    (deleted, scanned, last): (i64, i64, Option<Uuid>),
    limit: i64,
) -> (u64, Option<Uuid>) {
    let next = if scanned < limit { None } else { last };
    (deleted as u64, next)
}
