//! Ordering and retention in PostgreSQL (docs/design.md §17): the walk of
//! the key rows retention left without history, and the release of what
//! waits for a notification retention removed (`store::ordering` and
//! `store::housekeeping` decide; this reads and writes).

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use super::partitions::id_span;
use crate::store::housekeeping::{KeyCursor, KeyPageRow, KeyRetention, KeyRow};
use crate::store::ordering::{orphan_moves, Orphan};
use crate::store::StoreError;

/// The keys of up to `$1` pending notifications that wait for one no
/// longer stored, of those whose `behind` is after `$2` and at most `$3`
/// (a page of housekeeping's walk), through `notifications_behind` (a
/// probe of the primary key each, as `release_stranded`'s join; the
/// pending test as `postgres::ordering` writes it, so that no index on
/// pending rows is taken instead). Only an ordered notification waits for
/// another; `sequence IS NOT NULL` is not said again, because it offered
/// `notifications_order` to a generic plan on statistics taken before any
/// ordered row existed, a walk of every ordered notification.
pub(super) const ORPHANED: &str = "SELECT w.endpoint_id, w.order_key FROM notifications w \
     WHERE w.behind > $2 AND w.behind <= $3 AND (w.status = 'pending') IS TRUE \
       AND NOT EXISTS (SELECT 1 FROM notifications p WHERE p.id = w.behind) \
     LIMIT $1";

/// Locks the rows of the keys `$1`/`$2` in (endpoint, key) order, passing
/// over those another transaction holds.
pub(super) const LOCK_KEYS: &str = "SELECT k.endpoint_id, k.order_key FROM order_keys k \
     JOIN UNNEST($1::uuid[], $2::text[]) AS c(endpoint_id, order_key) \
       ON k.endpoint_id = c.endpoint_id AND k.order_key = c.order_key \
     ORDER BY k.endpoint_id, k.order_key \
     FOR UPDATE OF k SKIP LOCKED";

/// The orphans of the keys `$1`/`$2` (`store::ordering::Orphan`): each
/// with the latest pending one of its key before it (`notifications_order`)
/// and its key's holder if still stored; each locked, passing over one
/// another transaction holds (its own end, under way).
pub(super) const ORPHANS: &str = "SELECT w.id, w.behind, \
         (SELECT q.id FROM notifications q \
          WHERE q.endpoint_id = w.endpoint_id AND q.order_key = w.order_key \
            AND q.sequence IS NOT NULL AND q.sequence < w.sequence \
            AND (q.status = 'pending') IS TRUE \
          ORDER BY q.sequence DESC LIMIT 1), \
         (SELECT h.id FROM order_keys k JOIN notifications h ON h.id = k.held_by \
          WHERE k.endpoint_id = w.endpoint_id AND k.order_key = w.order_key) \
     FROM UNNEST($1::uuid[], $2::text[]) AS c(endpoint_id, order_key) \
     JOIN notifications w ON w.endpoint_id = c.endpoint_id AND w.order_key = c.order_key \
     WHERE w.sequence IS NOT NULL AND w.behind IS NOT NULL AND (w.status = 'pending') IS TRUE \
       AND NOT EXISTS (SELECT 1 FROM notifications p WHERE p.id = w.behind) \
     FOR UPDATE OF w SKIP LOCKED";

/// Gives each orphan (`$1`, ids from `$5` to `$6`) what it waits for now
/// (`$3`) if it still waits for the gone one (`$2`); one that waits for
/// nothing is owed to the due index, or a pull one's wait starts (`$4`).
const MOVE_ORPHANS: &str = "UPDATE notifications n SET behind = m.next, \
         needs_index = n.needs_index OR (m.next IS NULL AND NOT n.pull), \
         next_attempt_at = CASE WHEN m.next IS NULL AND n.pull \
             THEN GREATEST(n.next_attempt_at, $4) ELSE n.next_attempt_at END \
     FROM UNNEST($1::uuid[], $2::uuid[], $3::uuid[]) AS m(id, gone, next) \
     WHERE n.id = m.id AND n.id BETWEEN $5 AND $6 \
       AND n.status = 'pending' AND n.behind = m.gone";

/// Part of `HousekeepingStore::release_stranded`: gives up to `limit`
/// notifications waiting for one retention removed, of those whose
/// `behind` is after `after` and at most `through`, their place again
/// (`store::ordering::orphan_behind`); how many moved.
///
/// Nothing is released early, and no create is left stuck, because the
/// decision is read under the key rows' locks, in a snapshot taken once
/// they are held (READ COMMITTED: each statement its own). A create of the
/// key, a requeue (a retry, a recover) and a change of ordering take that
/// row first, so every one that committed before is seen (its pending
/// notifications are `before`, its place written), and none runs until
/// this commits; a create then chains behind what this left, reading
/// `held_by` under the same lock. The release trigger that makes a stored
/// one the key's holder writes the key's row too: one that committed is
/// seen (`holder`); one still running waits for the lock, and its
/// notification, pending in this snapshot, is `before` if it is earlier.
/// An orphan is locked as it is read, passing over one whose own end (a
/// cancel) is under way; the move is written only where the row is still
/// pending and still waits for the gone one. A removed notification never
/// comes back, so an orphan stays one. Every lock is taken with
/// `SKIP LOCKED`, so this never waits, nor in a cycle with a create, a
/// release or a recorder: what is busy now is taken next second.
pub(super) async fn release_orphans(
    store: &super::PgStore,
    (after, through): (Uuid, Uuid),
    limit: i64,
) -> Result<u64, StoreError> {
    let now = store.clock.now();
    let mut tx = store.pool.begin().await?;
    let orphaned: BTreeSet<(Uuid, String)> = sqlx::query_as(ORPHANED)
        .bind(limit)
        .bind(after)
        .bind(through)
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .collect();
    if orphaned.is_empty() {
        return Ok(0);
    }
    let (endpoints, names): (Vec<Uuid>, Vec<String>) = orphaned.into_iter().unzip();
    let keys: Vec<(Uuid, String)> = sqlx::query_as(LOCK_KEYS)
        .bind(&endpoints)
        .bind(&names)
        .fetch_all(&mut *tx)
        .await?;
    if keys.is_empty() {
        return Ok(0);
    }
    let moves = orphan_moves(&orphans(&mut tx, keys).await?);
    if moves.is_empty() {
        return Ok(0);
    }
    let ids: Vec<Uuid> = moves.iter().map(|(id, ..)| *id).collect();
    let gone: Vec<Uuid> = moves.iter().map(|(_, gone, _)| *gone).collect();
    let next: Vec<Option<Uuid>> = moves.iter().map(|(.., next)| *next).collect();
    let (low, high) = id_span(&ids);
    let moved = sqlx::query(MOVE_ORPHANS)
        .bind(&ids)
        .bind(&gone)
        .bind(&next)
        .bind(now)
        .bind(low)
        .bind(high)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    tx.commit().await?;
    Ok(moved)
}

/// The orphans of the locked `keys`, read in a fresh snapshot.
async fn orphans(
    conn: &mut PgConnection,
    keys: Vec<(Uuid, String)>,
) -> Result<Vec<Orphan>, StoreError> {
    let (endpoints, names): (Vec<Uuid>, Vec<String>) = keys.into_iter().unzip();
    let rows: Vec<(Uuid, Uuid, Option<Uuid>, Option<Uuid>)> = sqlx::query_as(ORPHANS)
        .bind(&endpoints)
        .bind(&names)
        .fetch_all(&mut *conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(id, gone, before, holder)| Orphan {
            id,
            gone,
            before,
            holder,
        })
        .collect())
}

/// A page of the ordering keys' retention walk: the keys after `$1`/`$2`
/// in the primary key's order, each with its line (empty, and when it was
/// last emptied: `emptied_at`, migration `20261217000063`), what holds it
/// and whether that holder is still stored (a probe of the primary key).
/// The key's row alone says what `domain::retention::order_key_expired`
/// needs: an index over every ordered notification, which this once
/// probed per key, cost each one an entry at its create and another at
/// its end.
pub(super) const KEY_PAGE: &str = "SELECT k.endpoint_id, k.order_key, k.tail IS NULL, \
         k.emptied_at, k.held_by, \
         (SELECT true FROM notifications h WHERE h.id = k.held_by) IS NOT NULL \
     FROM order_keys k WHERE (k.endpoint_id, k.order_key) > ($1, $2) \
     ORDER BY k.endpoint_id, k.order_key LIMIT $3";

/// The delete of `delete_unused_keys`, of the locked keys `$1`/`$2`:
/// those still as the walk read them, their line empty and last emptied
/// at the stamp read (`$3`), and without a holder.
pub(super) const DELETE_UNUSED_KEYS: &str = "DELETE FROM order_keys k \
     USING UNNEST($1::uuid[], $2::text[], $3::timestamptz[]) AS c(endpoint_id, order_key, emptied_at) \
     WHERE k.endpoint_id = c.endpoint_id AND k.order_key = c.order_key \
       AND k.held_by IS NULL AND k.tail IS NULL AND k.emptied_at = c.emptied_at";

/// The ordering keys' retention walk in PostgreSQL
/// (`store::housekeeping::purge_order_keys` decides).
#[async_trait::async_trait]
impl KeyRetention for super::PgStore {
    async fn key_page(&self, after: &KeyCursor, limit: i64) -> Result<Vec<KeyRow>, StoreError> {
        let rows: Vec<KeyPageRow> = sqlx::query_as(KEY_PAGE)
            .bind(after.0)
            .bind(&after.1)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.into_iter().map(KeyRow::from).collect())
    }

    /// In a transaction of two statements: the rows are locked first,
    /// passing over those a create, an end or a release holds (`SKIP
    /// LOCKED`: this never waits, so it never deadlocks with any of them),
    /// and the delete then compares each locked row with what was read
    /// (`DELETE_UNUSED_KEYS`): a create that committed before the lock
    /// left its tail there, and an end since, its stamp. A create writes
    /// its notification before it upserts the key's row; one that comes
    /// later waits for the lock, and once the row is gone inserts it anew:
    /// its notifications are then the key's only ones, from 1.
    async fn delete_unused_keys(
        &self,
        keys: &[(KeyCursor, DateTime<Utc>)],
    ) -> Result<u64, StoreError> {
        let endpoints: Vec<Uuid> = keys.iter().map(|((endpoint, _), _)| *endpoint).collect();
        let names: Vec<&str> = keys.iter().map(|((_, key), _)| key.as_str()).collect();
        let stamps: Vec<DateTime<Utc>> = keys.iter().map(|(_, at)| *at).collect();
        let mut tx = self.pool.begin().await?;
        // Each locked row with the stamp the walk read for it.
        let locked: Vec<(Uuid, String, DateTime<Utc>)> = sqlx::query_as(
            "SELECT k.endpoint_id, k.order_key, c.emptied_at FROM order_keys k \
             JOIN UNNEST($1::uuid[], $2::text[], $3::timestamptz[]) \
                 AS c(endpoint_id, order_key, emptied_at) \
               ON k.endpoint_id = c.endpoint_id AND k.order_key = c.order_key \
             LIMIT $4 FOR UPDATE OF k SKIP LOCKED",
        )
        .bind(&endpoints)
        .bind(&names)
        .bind(&stamps)
        .bind(keys.len() as i64)
        .fetch_all(&mut *tx)
        .await?;
        if locked.is_empty() {
            return Ok(0);
        }
        let (mut endpoints, mut names, mut stamps) = (Vec::new(), Vec::new(), Vec::new());
        for (endpoint, name, stamp) in locked {
            endpoints.push(endpoint);
            names.push(name);
            stamps.push(stamp);
        }
        let deleted = sqlx::query(DELETE_UNUSED_KEYS)
            .bind(&endpoints)
            .bind(&names)
            .bind(&stamps)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        tx.commit().await?;
        Ok(deleted)
    }

    /// One statement, fenced by the holder read: under READ COMMITTED, a
    /// release trigger that sets `held_by` meanwhile (a new holder, stored)
    /// makes the row differ from the one read, and the update re-checked
    /// on the new row (EvalPlanQual) passes over it.
    async fn clear_gone_holders(&self, holders: &[(KeyCursor, Uuid)]) -> Result<(), StoreError> {
        let endpoints: Vec<Uuid> = holders.iter().map(|((endpoint, _), _)| *endpoint).collect();
        let names: Vec<&str> = holders.iter().map(|((_, key), _)| key.as_str()).collect();
        let gone: Vec<Uuid> = holders.iter().map(|(_, holder)| *holder).collect();
        sqlx::query(
            "UPDATE order_keys k SET held_by = NULL \
             FROM UNNEST($1::uuid[], $2::text[], $3::uuid[]) AS c(endpoint_id, order_key, gone) \
             WHERE k.endpoint_id = c.endpoint_id AND k.order_key = c.order_key \
               AND k.held_by = c.gone \
               AND NOT EXISTS (SELECT 1 FROM notifications h WHERE h.id = c.gone)",
        )
        .bind(&endpoints)
        .bind(&names)
        .bind(&gone)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};
    use sqlx::PgPool;
    use uuid::Uuid;

    use crate::store::housekeeping::key_fence;

    #[sqlx::test(migrator = "super::super::MIGRATOR")]
    async fn a_key_goes_only_while_its_row_is_as_the_walk_read_it(pool: PgPool) {
        let store = super::super::PgStore::new(pool.clone());
        let endpoint = Uuid::now_v7();
        let set = async |tail: Option<Uuid>, at: DateTime<Utc>| {
            sqlx::query(
                "INSERT INTO order_keys (endpoint_id, order_key, last_sequence, tail, emptied_at) \
                 VALUES ($1, 'order-1', 3, $2, $3) \
                 ON CONFLICT (endpoint_id, order_key) DO UPDATE SET \
                     tail = EXCLUDED.tail, emptied_at = EXCLUDED.emptied_at",
            )
            .bind(endpoint)
            .bind(tail)
            .bind(at)
            .execute(&pool)
            .await
            .unwrap();
        };
        key_fence::a_key_goes_only_while_its_row_is_as_the_walk_read_it(&store, endpoint, set)
            .await;
    }
}
