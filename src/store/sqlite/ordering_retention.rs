//! Ordering and retention in SQLite, as `postgres::ordering_retention`
//! (docs/design.md §17): the walk of the key rows retention left without
//! history, and the release of what waits for a notification retention
//! removed (`store::ordering` and `store::housekeeping` decide; this reads
//! and writes, on the only writer).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::columns::{json_text, micros, time_of};
use super::errors::store_error;
use crate::store::housekeeping::{KeyCursor, KeyRetention, KeyRow};
use crate::store::ordering::{orphan_moves, Orphan};
use crate::store::StoreError;

/// Up to `?1` pending notifications waiting for one no longer stored
/// (`store::ordering::Orphan`), of those whose `behind` is after `?2` and
/// at most `?3`, through `notifications_behind`, each with
/// the latest pending one of its key before it (`notifications_order`)
/// and its key's holder if still stored.
pub(super) const ORPHANS: &str = "SELECT w.id, w.behind, \
         (SELECT q.id FROM notifications q \
          WHERE q.endpoint_id = w.endpoint_id AND q.order_key = w.order_key \
            AND q.sequence IS NOT NULL AND q.sequence < w.sequence \
            AND q.status = 'pending' \
          ORDER BY q.sequence DESC LIMIT 1), \
         (SELECT h.id FROM order_keys k JOIN notifications h ON h.id = k.held_by \
          WHERE k.endpoint_id = w.endpoint_id AND k.order_key = w.order_key) \
     FROM notifications w \
     WHERE w.behind > ?2 AND w.behind <= ?3 AND w.status = 'pending' \
       AND w.sequence IS NOT NULL \
       AND NOT EXISTS (SELECT 1 FROM notifications p WHERE p.id = w.behind) \
     LIMIT ?1";

/// Part of `release_stranded`: gives up to `limit` notifications waiting
/// for one retention removed, of those whose `behind` is in `window`
/// (after the first, at most the second), their place again
/// (`store::ordering::orphan_behind`), read and written in one transaction
/// of the only writer; how many moved.
pub(super) async fn release_orphans(
    store: &super::SqliteStore,
    (after, through): (Uuid, Uuid),
    limit: i64,
    now: i64,
) -> Result<u64, StoreError> {
    let mut tx = store.writer.begin().await.map_err(store_error)?;
    let rows: Vec<(Uuid, Uuid, Option<Uuid>, Option<Uuid>)> = sqlx::query_as(ORPHANS)
        .bind(limit)
        .bind(after)
        .bind(through)
        .fetch_all(&mut *tx)
        .await
        .map_err(store_error)?;
    let orphans: Vec<Orphan> = rows
        .into_iter()
        .map(|(id, gone, before, holder)| Orphan {
            id,
            gone,
            before,
            holder,
        })
        .collect();
    let moves: Vec<(String, String, Option<String>)> = orphan_moves(&orphans)
        .into_iter()
        .map(|(id, gone, next)| {
            let hex = |id: Uuid| id.simple().to_string();
            (hex(id), hex(gone), next.map(hex))
        })
        .collect();
    if moves.is_empty() {
        return Ok(0);
    }
    let moved = sqlx::query(
        "UPDATE notifications AS n SET behind = unhex(m.value ->> 2), \
             needs_index = CASE WHEN m.value ->> 2 IS NULL AND n.pull = 0 \
                 THEN 1 ELSE n.needs_index END, \
             next_attempt_at = CASE WHEN m.value ->> 2 IS NULL AND n.pull = 1 \
                 THEN max(n.next_attempt_at, ?2) ELSE n.next_attempt_at END \
         FROM json_each(?1) AS m \
         WHERE n.id = unhex(m.value ->> 0) AND n.status = 'pending' \
           AND n.behind = unhex(m.value ->> 1)",
    )
    .bind(json_text(&moves))
    .bind(now)
    .execute(&mut *tx)
    .await
    .map_err(store_error)?
    .rows_affected();
    tx.commit().await.map_err(store_error)?;
    Ok(moved)
}

/// A page of the ordering keys' retention walk, as
/// `postgres::ordering_retention::KEY_PAGE` (each key's last emptied time
/// in the schema's microseconds).
pub(super) const KEY_PAGE: &str = "SELECT k.endpoint_id, k.order_key, k.tail IS NULL, \
         k.emptied_at, k.held_by, \
         EXISTS (SELECT 1 FROM notifications h WHERE h.id = k.held_by) \
     FROM order_keys k WHERE (k.endpoint_id, k.order_key) > (?1, ?2) \
     ORDER BY k.endpoint_id, k.order_key LIMIT ?3";

/// The ordering keys' retention walk in SQLite
/// (`store::housekeeping::purge_order_keys` decides), on the writer, as
/// every delete: a page read there sees the notifications' walk before it.
#[async_trait::async_trait]
impl KeyRetention for super::SqliteStore {
    async fn key_page(&self, after: &KeyCursor, limit: i64) -> Result<Vec<KeyRow>, StoreError> {
        let rows: Vec<(Uuid, String, bool, Option<i64>, Option<Uuid>, bool)> =
            sqlx::query_as(KEY_PAGE)
                .bind(after.0)
                .bind(&after.1)
                .bind(limit)
                .fetch_all(&self.writer)
                .await
                .map_err(store_error)?;
        rows.into_iter()
            .map(|(endpoint, key, empty, emptied_at, held_by, stored)| {
                let emptied_at = emptied_at
                    .map(|us| time_of("emptied_at", us))
                    .transpose()
                    .map_err(store_error)?;
                Ok(KeyRow::from((
                    endpoint, key, empty, emptied_at, held_by, stored,
                )))
            })
            .collect()
    }

    /// One statement, fenced as in PostgreSQL by what the walk read: with
    /// one writer, no create runs between its check and its delete
    /// (`postgres::ordering_retention` needs two).
    async fn delete_unused_keys(
        &self,
        keys: &[(KeyCursor, DateTime<Utc>)],
    ) -> Result<u64, StoreError> {
        let rows: Vec<(String, &str, i64)> = keys
            .iter()
            .map(|((endpoint, key), at)| (endpoint.simple().to_string(), key.as_str(), micros(*at)))
            .collect();
        Ok(sqlx::query(
            "DELETE FROM order_keys AS k \
             WHERE (k.endpoint_id, k.order_key, k.emptied_at) IN ( \
                   SELECT unhex(value ->> 0), value ->> 1, value ->> 2 FROM json_each(?1)) \
               AND k.held_by IS NULL AND k.tail IS NULL",
        )
        .bind(json_text(&rows))
        .execute(&self.writer)
        .await
        .map_err(store_error)?
        .rows_affected())
    }

    /// One statement, fenced by the holder read, as in PostgreSQL.
    async fn clear_gone_holders(&self, holders: &[(KeyCursor, Uuid)]) -> Result<(), StoreError> {
        let rows: Vec<(String, &str, String)> = holders
            .iter()
            .map(|((endpoint, key), gone)| {
                let gone = gone.simple().to_string();
                (endpoint.simple().to_string(), key.as_str(), gone)
            })
            .collect();
        sqlx::query(
            "UPDATE order_keys AS k SET held_by = NULL FROM json_each(?1) AS c \
             WHERE k.endpoint_id = unhex(c.value ->> 0) AND k.order_key = c.value ->> 1 \
               AND k.held_by = unhex(c.value ->> 2) \
               AND NOT EXISTS (SELECT 1 FROM notifications h WHERE h.id = k.held_by)",
        )
        .bind(json_text(&rows))
        .execute(&self.writer)
        .await
        .map_err(store_error)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};
    use uuid::Uuid;

    use super::super::columns::micros;
    use crate::store::housekeeping::key_fence;

    #[tokio::test]
    async fn a_key_goes_only_while_its_row_is_as_the_walk_read_it() {
        let (_dir, store) = super::super::plans::migrated().await;
        let endpoint = Uuid::now_v7();
        let set = async |tail: Option<Uuid>, at: DateTime<Utc>| {
            sqlx::query(
                "INSERT INTO order_keys (endpoint_id, order_key, last_sequence, tail, emptied_at) \
                 VALUES (?1, 'order-1', 3, ?2, ?3) \
                 ON CONFLICT (endpoint_id, order_key) DO UPDATE SET \
                     tail = excluded.tail, emptied_at = excluded.emptied_at",
            )
            .bind(endpoint)
            .bind(tail)
            .bind(micros(at))
            .execute(&store.writer)
            .await
            .unwrap();
        };
        key_fence::a_key_goes_only_while_its_row_is_as_the_walk_read_it(&store, endpoint, set)
            .await;
    }
}
