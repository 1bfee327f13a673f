//! Housekeeping's side of the store: what keeps the due index whole (rows
//! marked `needs_index`, pending rows for a rebuild, a sweep or a heal after
//! a Redis failover) and the history bounded (retention, and the ordering
//! keys whose history it removed).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::domain::retention::{order_key_expired, KeyHolder, KeyLine};

/// Keyset position in the pending rows: (due time, id).
pub type PendingCursor = (DateTime<Utc>, Uuid);

/// A backend's side of the events' retention walk (`purge_events`): a
/// page read and a delete fenced by what decided it.
#[async_trait::async_trait]
pub(crate) trait EventRetention: Sync {
    /// The next `limit` events after `after` and before `end`, in id
    /// order, each with whether a delivery of it is left.
    async fn event_page(
        &self,
        after: Uuid,
        end: Uuid,
        limit: i64,
    ) -> Result<Vec<(Uuid, bool)>, super::StoreError>;
    /// Deletes those of `ids` that still have no delivery left (one is
    /// never added later: the fence only guards a hand-made row); how many.
    async fn delete_unused_events(&self, ids: &[Uuid]) -> Result<u64, super::StoreError>;
}

/// One step of the events' retention walk, for both backends: the events
/// created before `before` whose deliveries are all gone (retention
/// deleted them) among the next `limit` after `after` go. Returns how many
/// went and where to go on from (`None` once the walk is done); events
/// kept are passed over once per walk. The walk ends at
/// `domain::retention::events_end`; `event_expired` decides.
pub(crate) async fn purge_events(
    store: &impl EventRetention,
    before: DateTime<Utc>,
    after: Option<Uuid>,
    limit: i64,
) -> Result<(u64, Option<Uuid>), super::StoreError> {
    let end = crate::domain::retention::events_end(before);
    let scanned = store
        .event_page(after.unwrap_or(Uuid::nil()), end, limit)
        .await?;
    let expired = expired_events(&scanned);
    let deleted = if expired.is_empty() {
        0
    } else {
        store.delete_unused_events(&expired).await?
    };
    let last = scanned.last().map(|(id, _)| *id);
    Ok(walked((deleted as i64, scanned.len() as i64, last), limit))
}

/// The events among a retention step's `scanned` (id, whether a delivery
/// of it is left) that go: `domain::retention::event_expired` on each.
fn expired_events(scanned: &[(Uuid, bool)]) -> Vec<Uuid> {
    scanned
        .iter()
        .filter(|(_, left)| crate::domain::retention::event_expired(*left))
        .map(|(id, _)| *id)
        .collect()
}

/// Keyset position in the ordering keys (`order_keys`): (endpoint, key).
pub type KeyCursor = (Uuid, String);

/// One key of a page of the ordering keys' walk, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyRow {
    pub endpoint_id: Uuid,
    pub order_key: String,
    /// Its line: whether it is empty, and when it was last emptied.
    pub line: KeyLine,
    /// What holds the key (`held_by`).
    pub held_by: Option<Uuid>,
    /// Whether the notification `held_by` names is still stored.
    pub holder_stored: bool,
}

impl KeyRow {
    /// What holds the key, for `domain::retention::order_key_expired`.
    fn holder(&self) -> KeyHolder {
        match (self.held_by, self.holder_stored) {
            (None, _) => KeyHolder::None,
            (Some(_), true) => KeyHolder::Stored,
            (Some(_), false) => KeyHolder::Gone,
        }
    }
}

/// As a page reads it: (endpoint, key, line empty, last emptied, held
/// by, holder stored).
pub(crate) type KeyPageRow = (
    Uuid,
    String,
    bool,
    Option<DateTime<Utc>>,
    Option<Uuid>,
    bool,
);

impl From<KeyPageRow> for KeyRow {
    fn from(
        (endpoint_id, order_key, empty, emptied_at, held_by, holder_stored): KeyPageRow,
    ) -> Self {
        Self {
            endpoint_id,
            order_key,
            line: KeyLine { empty, emptied_at },
            held_by,
            holder_stored,
        }
    }
}

/// A backend's side of the ordering keys' retention walk
/// (`purge_order_keys`): a page read, and a delete fenced by what was
/// read (the neutral walk decides).
#[async_trait::async_trait]
pub(crate) trait KeyRetention: Sync {
    /// The next `limit` keys after `after`, in (endpoint, key) order, each
    /// with its line (empty or not, last emptied) and what holds it.
    async fn key_page(
        &self,
        after: &KeyCursor,
        limit: i64,
    ) -> Result<Vec<KeyRow>, super::StoreError>;
    /// Deletes those of `keys` whose row is still as it was read when the
    /// walk let it go: its line empty, last emptied at the stamp given,
    /// and no holder; how many. A create of the key may be under way
    /// meanwhile: it must either be seen by the fence or find no row and
    /// start the key again (each backend says how).
    async fn delete_unused_keys(
        &self,
        keys: &[(KeyCursor, DateTime<Utc>)],
    ) -> Result<u64, super::StoreError>;
    /// Clears the `held_by` of each of `holders` (a key and the holder
    /// read on its row) that still names it, that holder being gone.
    async fn clear_gone_holders(
        &self,
        holders: &[(KeyCursor, Uuid)],
    ) -> Result<(), super::StoreError>;
}

/// One step of the ordering keys' retention walk, for both backends: among
/// the next `limit` keys after `after`, a holder retention removed is
/// cleared from its key (it holds nothing: `KeyHolder::Gone`), and those
/// that `domain::retention::order_key_expired` lets go (their line empty
/// since before retention's cutoff `before`, no stored one holding them)
/// go, and their sequence starts again at 1. Returns how many went and
/// where to go on from (`None` once the walk is done). It runs after the
/// notifications' walk, which removes their history.
pub(crate) async fn purge_order_keys(
    store: &impl KeyRetention,
    after: Option<KeyCursor>,
    limit: i64,
    before: DateTime<Utc>,
) -> Result<(u64, Option<KeyCursor>), super::StoreError> {
    // No key is empty (`domain::ordering::valid_order_key`): every one
    // comes after the nil endpoint's empty key.
    let after = after.unwrap_or((Uuid::nil(), String::new()));
    let scanned = store.key_page(&after, limit).await?;
    let cursor = |key: &KeyRow| (key.endpoint_id, key.order_key.clone());
    let gone: Vec<(KeyCursor, Uuid)> = scanned
        .iter()
        .filter(|key| key.holder() == KeyHolder::Gone)
        .filter_map(|key| Some((cursor(key), key.held_by?)))
        .collect();
    if !gone.is_empty() {
        store.clear_gone_holders(&gone).await?;
    }
    let expired: Vec<(KeyCursor, DateTime<Utc>)> = scanned
        .iter()
        .filter(|key| order_key_expired(key.line, before, key.holder()))
        .filter_map(|key| Some((cursor(key), key.line.emptied_at?)))
        .collect();
    let deleted = if expired.is_empty() {
        0
    } else {
        store.delete_unused_keys(&expired).await?
    };
    let last = scanned.last().map(cursor);
    Ok(walked((deleted as i64, scanned.len() as i64, last), limit))
}

/// A retention walk's step, from its (deleted, scanned, last row scanned):
/// how many it deleted, and where the next step starts (`None` once a step
/// scanned fewer than `limit`, the end of the walk). Both backends walk so.
pub(crate) fn walked<C>(
    (deleted, scanned, last): (i64, i64, Option<C>),
    limit: i64,
) -> (u64, Option<C>) {
    let next = if scanned < limit { None } else { last };
    (deleted as u64, next)
}

/// How many of the oldest due rows of each kind `due_backlog` reads: it
/// runs once a minute, so it stays a bounded walk of an index however
/// large the backlog. An endpoint whose oldest due row lies past them is
/// younger than every one read, so the oldest endpoints are exact; the
/// counts stop at this.
pub const DUE_SCAN: i64 = 10_000;

/// One endpoint's oldest due push notification of one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OldestDue {
    pub endpoint_id: Uuid,
    /// Whether it is on the backlog lane: attempted before (a retry), or
    /// released by a closing circuit; the others are what the fresh lane
    /// carries (docs/design.md §17, `domain::lane`).
    pub attempted: bool,
    /// The earliest due time among that endpoint's due rows of this kind.
    pub due_since: DateTime<Utc>,
}

/// What is due and not yet sent, by lane: the figure an operator alerts
/// on when fresh callbacks are late.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DueBacklog {
    /// Per kind, the endpoints whose oldest due row is oldest (at most the
    /// limit asked of each kind): the fresh lane's first, then the backlog's,
    /// each oldest first.
    pub oldest: Vec<OldestDue>,
    /// How many rows of the fresh lane are due (counted up to `DUE_SCAN`).
    pub fresh: i64,
    /// How many rows of the backlog lane are due (counted up to
    /// `DUE_SCAN`).
    pub retrying: i64,
}

impl DueBacklog {
    /// Builds the figure from a backend's groups of the rows read, each
    /// (endpoint, attempted, earliest due, how many), keeping `limit`
    /// endpoints of each kind.
    pub(crate) fn from_groups(
        mut groups: Vec<(Uuid, bool, DateTime<Utc>, i64)>,
        limit: usize,
    ) -> Self {
        groups.sort_by_key(|&(endpoint, attempted, due, _)| (attempted, due, endpoint));
        let mut backlog = DueBacklog::default();
        let (mut fresh, mut retrying) = (0, 0);
        for (endpoint_id, attempted, due_since, count) in groups {
            let (total, kept) = if attempted {
                (&mut backlog.retrying, &mut retrying)
            } else {
                (&mut backlog.fresh, &mut fresh)
            };
            *total += count;
            if *kept < limit {
                *kept += 1;
                backlog.oldest.push(OldestDue {
                    endpoint_id,
                    attempted,
                    due_since,
                });
            }
        }
        backlog
    }
}

/// What both backends' `KeyRetention` must show: the delete is fenced by
/// the row as the walk read it.
#[cfg(test)]
pub(crate) mod key_fence {
    use super::*;

    /// On a store holding one key row of endpoint `endpoint` and key
    /// "order-1", which `set` writes (its tail, its stamp): a key read
    /// with its line empty goes only while its row is still as read.
    pub(crate) async fn a_key_goes_only_while_its_row_is_as_the_walk_read_it(
        store: &impl KeyRetention,
        endpoint: Uuid,
        set: impl AsyncFn(Option<Uuid>, DateTime<Utc>),
    ) {
        let read_at = DateTime::from_timestamp_micros(1_700_000_000_123_456).unwrap();
        let key = (endpoint, "order-1".to_string());
        set(None, read_at).await;
        let page = store
            .key_page(&(Uuid::nil(), String::new()), 10)
            .await
            .unwrap();
        assert_eq!(
            page.iter().map(|k| k.line).collect::<Vec<_>>(),
            [KeyLine {
                empty: true,
                emptied_at: Some(read_at),
            }]
        );
        let read = [(key.clone(), read_at)];

        // An end stamped it since.
        set(None, read_at + chrono::Duration::microseconds(1)).await;
        assert_eq!(
            store.delete_unused_keys(&read).await.unwrap(),
            0,
            "stamped since"
        );
        // A create put one in line since.
        set(Some(Uuid::now_v7()), read_at).await;
        assert_eq!(
            store.delete_unused_keys(&read).await.unwrap(),
            0,
            "one in line"
        );
        // As read.
        set(None, read_at).await;
        assert_eq!(store.delete_unused_keys(&read).await.unwrap(), 1);
        assert!(store
            .key_page(&(Uuid::nil(), String::new()), 10)
            .await
            .unwrap()
            .is_empty());
    }
}
