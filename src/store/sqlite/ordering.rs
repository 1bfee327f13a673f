//! The place of created notifications in their keys' order, in SQLite
//! (`store::ordering` decides; this reads and writes in the create's
//! transaction, whose writer is the only one: no key row needs a lock).

use std::collections::HashMap;
use std::sync::LazyLock;

use sqlx::SqliteConnection;
use uuid::Uuid;

use super::columns::{self, json_text, records, IN_ID_LIST};
use super::errors::store_error;
use crate::domain::ordering::Release;
use crate::store::notifications::Ordered;
use crate::store::ordering::{
    back_in_line, key_states, places, requeued_behind, runs, Item, LineHead, Requeued, WrittenKey,
};
use crate::store::StoreError;

/// Gives each of `items` (created, in creation order, all ordered) its
/// place, and writes it on its row: two statements whatever the number
/// of keys (the writer's commit holds many), the key rows' (which also
/// gives each key its new tail, `places_of`) and the notifications'.
pub(super) async fn place_in_order(
    conn: &mut SqliteConnection,
    items: &[Item<'_>],
    created_at: i64,
) -> Result<HashMap<Uuid, Ordered>, StoreError> {
    if items.is_empty() {
        return Ok(HashMap::new());
    }
    let placed = places_of(conn, items, created_at).await?;
    let rows: Vec<(String, Option<i64>, Option<String>)> = placed
        .iter()
        .map(|(id, place)| {
            let behind = place.behind.map(|b| b.simple().to_string());
            (id.simple().to_string(), place.sequence, behind)
        })
        .collect();
    sqlx::query(records!(
        "p",
        "?",
        "UPDATE notifications AS n SET sequence = p.value ->> 1, behind = unhex(p.value ->> 2) \
         FROM p WHERE n.id = unhex(p.value ->> 0)"
    ))
    .bind(json_text(&rows))
    .execute(&mut *conn)
    .await
    .map_err(store_error)?;
    Ok(placed)
}

/// A create's key rows written, its runs (`json_each(?1)`): each key's
/// sequence grows by its run, its tail becomes the run's last, and the
/// tail before it is kept as `previous_tail`. A row inserted is stamped
/// with the create's time (`emptied_at`, as `postgres::ordering::WRITE_KEYS`
/// does; migration `0027_key_emptied_stamped.sql`).
// `WHERE true`: an upsert's SELECT needs one (SQLite's parser).
const WRITE_KEYS: &str = records!(
    "r",
    "?1",
    "INSERT INTO order_keys (endpoint_id, order_key, last_sequence, tail, emptied_at) \
     SELECT unhex(value ->> 0), value ->> 1, value ->> 2, unhex(value ->> 3), value ->> 4 \
     FROM r WHERE true \
     ON CONFLICT (endpoint_id, order_key) DO UPDATE SET \
         last_sequence = last_sequence + excluded.last_sequence, \
         previous_tail = tail, tail = excluded.tail"
);

/// The key rows a create's upsert wrote (its runs, `json_each(?1)`), as
/// `WrittenKey`s.
pub(super) static WRITTEN_KEYS: LazyLock<String> = LazyLock::new(|| {
    columns::json_rows(
        "hex(k.endpoint_id), k.order_key, k.last_sequence, \
         nullif(hex(k.held_by), ''), nullif(hex(k.previous_tail), '')",
        "FROM json_each(?1) AS r JOIN order_keys AS k \
         ON k.endpoint_id = unhex(r.value ->> 0) AND k.order_key = r.value ->> 1",
    )
});

/// `WRITE_KEYS`, then `WRITTEN_KEYS`, in one go: each statement crosses
/// to the writer's worker thread and back, and the read needs nothing
/// the write returns.
static WRITE_AND_READ_KEYS: LazyLock<String> =
    LazyLock::new(|| format!("{WRITE_KEYS}; {}", WRITTEN_KEYS.as_str()));

/// The place of each of `items` (in creation order, all ordered, all to
/// be created in this transaction), its key rows written as
/// `postgres::ordering::WRITE_KEYS` writes them: for an insert that
/// writes the places itself. `created_at`: the create's time, in the
/// schema's microseconds.
pub(super) async fn places_of(
    conn: &mut SqliteConnection,
    items: &[Item<'_>],
    created_at: i64,
) -> Result<HashMap<Uuid, Ordered>, StoreError> {
    if items.is_empty() {
        return Ok(HashMap::new());
    }
    let keys = runs(items);
    let runs: Vec<(String, &str, i64, String, i64)> = keys
        .iter()
        .map(|run| {
            (
                run.endpoint_id.simple().to_string(),
                run.order_key.as_str(),
                run.count,
                run.last.simple().to_string(),
                created_at,
            )
        })
        .collect();
    // The rows as written, read as one (`columns::json_rows`), not
    // returned a row at a time: 2.8 + 2.1 ms a batch of 1,000 keys
    // against 12.7 ms.
    let written: String = sqlx::query_scalar(sqlx::AssertSqlSafe(WRITE_AND_READ_KEYS.as_str()))
        .bind(json_text(&runs))
        .fetch_one(&mut *conn)
        .await
        .map_err(store_error)?;
    let written: Vec<WrittenKey> = columns::rows_of(&written).map_err(store_error)?;
    Ok(places(items, &key_states(written)))
}

/// Releases what a change of `endpoint`'s ordering lets go, in the
/// change's transaction, as `postgres::ordering::release` (`now` in the
/// schema's microseconds).
pub(super) async fn release(
    conn: &mut SqliteConnection,
    endpoint: Uuid,
    release: Release,
    now: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE notifications SET behind = NULL, \
             needs_index = CASE WHEN pull = 0 THEN 1 ELSE needs_index END, \
             next_attempt_at = CASE WHEN pull = 1 THEN max(next_attempt_at, ?3) \
                 ELSE next_attempt_at END \
         WHERE endpoint_id = ?1 AND status = 'pending' AND sequence IS NOT NULL \
           AND behind IS NOT NULL \
           AND NOT EXISTS (SELECT 1 FROM notifications p \
                           WHERE p.id = notifications.behind AND p.status = 'succeeded') \
           AND (?2 OR (behind IN (SELECT held_by FROM order_keys \
                                  WHERE endpoint_id = ?1 AND held_by IS NOT NULL) \
                       AND NOT EXISTS (SELECT 1 FROM notifications h \
                                       WHERE h.id = notifications.behind AND h.status = 'pending')))",
    )
    .bind(endpoint)
    .bind(release == Release::All)
    .bind(now)
    .execute(&mut *conn)
    .await
    .map_err(store_error)?;
    // All: what was in line is not any more, and the next create of a
    // key starts a line of its own. Each row written is stamped `now`
    // (`emptied_at`, for retention).
    sqlx::query(
        "UPDATE order_keys SET held_by = NULL, tail = CASE WHEN ?2 THEN NULL ELSE tail END, \
             emptied_at = max(ifnull(emptied_at, 0), ?3) \
         WHERE endpoint_id = ?1 AND (?2 OR held_by IS NOT NULL)",
    )
    .bind(endpoint)
    .bind(release == Release::All)
    .bind(now)
    .execute(&mut *conn)
    .await
    .map_err(store_error)?;
    Ok(())
}

/// `postgres::ordering::relink` in SQLite (one writer: no lock; `now` in
/// the schema's microseconds).
pub(super) async fn relink(
    conn: &mut SqliteConnection,
    endpoint: Uuid,
    now: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE order_keys SET tail = NULL, held_by = NULL, \
             emptied_at = max(ifnull(emptied_at, 0), ?2) \
         WHERE endpoint_id = ?1",
    )
    .bind(endpoint)
    .bind(now)
    .execute(&mut *conn)
    .await
    .map_err(store_error)?;
    sqlx::query(
        "WITH line AS ( \
             SELECT n.id, lag(n.id) OVER w AS before, \
                 CASE WHEN n.sequence IS NULL THEN \
                     max(ifnull(k.last_sequence, 0), \
                         ifnull(max(n.sequence) OVER (PARTITION BY n.order_key), 0)) \
                     + count(*) FILTER (WHERE n.sequence IS NULL) OVER w END AS numbered \
             FROM notifications n LEFT JOIN order_keys k \
                 ON k.endpoint_id = n.endpoint_id AND k.order_key = n.order_key \
             WHERE n.endpoint_id = ?1 AND n.status = 'pending' AND n.order_key IS NOT NULL \
             WINDOW w AS (PARTITION BY n.order_key ORDER BY n.id) \
         ) UPDATE notifications SET behind = line.before, \
             sequence = ifnull(line.numbered, notifications.sequence) \
         FROM line WHERE notifications.id = line.id",
    )
    .bind(endpoint)
    .execute(&mut *conn)
    .await
    .map_err(store_error)?;
    sqlx::query(
        "INSERT INTO order_keys (endpoint_id, order_key, last_sequence, tail, emptied_at) \
         SELECT ?1, order_key, max(sequence), max(id), ?2 FROM notifications \
         WHERE endpoint_id = ?1 AND status = 'pending' AND order_key IS NOT NULL \
         GROUP BY order_key \
         ON CONFLICT (endpoint_id, order_key) DO UPDATE SET \
             last_sequence = max(last_sequence, excluded.last_sequence), tail = excluded.tail",
    )
    .bind(endpoint)
    .bind(now)
    .execute(&mut *conn)
    .await
    .map_err(store_error)?;
    Ok(())
}

/// Whether the notification aliased `$n` waits for nothing: its `behind`
/// is NULL or names one that succeeded (migrations
/// `0017_released_by_success.sql`, `0018_success_releases_unwritten.sql`;
/// `postgres::ordering::released`). A success the recorder records leaves
/// its pushed successors naming it, so every read of whether one waits
/// goes through this.
macro_rules! released {
    ($n:literal) => {
        concat!(
            "(",
            $n,
            ".behind IS NULL OR EXISTS (SELECT 1 FROM notifications pred \
             WHERE pred.id = ",
            $n,
            ".behind AND pred.status = 'succeeded'))"
        )
    };
}
pub(super) use released;

/// `postgres::ordering::requeue` in SQLite (one writer: no lock).
pub(super) async fn requeue(
    conn: &mut SqliteConnection,
    again: Requeued<'_>,
    unplaced: &[Uuid],
) -> Result<Option<Uuid>, StoreError> {
    let unplaced = super::columns::id_list(unplaced);
    let held_by: Option<Option<Uuid>> = sqlx::query_scalar(
        "SELECT held_by FROM order_keys WHERE endpoint_id = ? AND order_key = ?",
    )
    .bind(again.endpoint_id)
    .bind(again.order_key)
    .fetch_optional(&mut *conn)
    .await
    .map_err(store_error)?;
    let before: Option<Uuid> = sqlx::query_scalar(
        "SELECT id FROM notifications \
         WHERE endpoint_id = ?1 AND order_key = ?2 AND sequence IS NOT NULL \
           AND status = 'pending' AND id <> ?3 AND sequence < ?4 \
           AND id NOT IN (SELECT unhex(value) FROM json_each(?5)) \
         ORDER BY sequence DESC LIMIT 1",
    )
    .bind(again.endpoint_id)
    .bind(again.order_key)
    .bind(again.id)
    .bind(again.sequence)
    .bind(&unplaced)
    .fetch_optional(&mut *conn)
    .await
    .map_err(store_error)?;
    let head: Option<(Uuid, Option<Uuid>)> = sqlx::query_as(concat!(
        "SELECT n.id, CASE WHEN NOT ",
        released!("n"),
        " THEN n.behind END \
         FROM notifications n \
         WHERE n.endpoint_id = ?1 AND n.order_key = ?2 AND n.sequence IS NOT NULL \
           AND n.status = 'pending' AND n.id <> ?3 \
           AND n.id NOT IN (SELECT unhex(value) FROM json_each(?4)) \
           AND (n.behind IS NULL OR NOT EXISTS (SELECT 1 FROM notifications p \
               WHERE p.id = n.behind AND p.status = 'pending')) \
         ORDER BY n.sequence LIMIT 1"
    ))
    .bind(again.endpoint_id)
    .bind(again.order_key)
    .bind(again.id)
    .bind(&unplaced)
    .fetch_optional(&mut *conn)
    .await
    .map_err(store_error)?;
    let head = head.map(|(id, behind)| LineHead { id, behind });
    let behind = requeued_behind(again.id, before, head, held_by.flatten());
    if let Some(behind) = behind {
        sqlx::query(
            "UPDATE notifications SET behind = ?3 \
             WHERE endpoint_id = ?1 AND order_key = ?2 AND sequence IS NOT NULL \
               AND behind = ?4 AND status = 'pending' AND id <> ?3 \
               AND id NOT IN (SELECT unhex(value) FROM json_each(?5))",
        )
        .bind(again.endpoint_id)
        .bind(again.order_key)
        .bind(again.id)
        .bind(behind)
        .bind(&unplaced)
        .execute(&mut *conn)
        .await
        .map_err(store_error)?;
    }
    sqlx::query("UPDATE notifications SET behind = ?2, needs_index = 0 WHERE id = ?1")
        .bind(again.id)
        .bind(behind)
        .execute(&mut *conn)
        .await
        .map_err(store_error)?;
    // The tail, as `postgres::ordering::KEY_TAIL` sets it.
    sqlx::query(
        "UPDATE order_keys SET tail = ( \
             SELECT n.id FROM notifications n \
             WHERE n.endpoint_id = ?1 AND n.order_key = ?2 \
               AND n.sequence IS NOT NULL AND n.status = 'pending' \
               AND n.id NOT IN (SELECT unhex(value) FROM json_each(?3)) \
               AND NOT EXISTS (SELECT 1 FROM notifications s \
                   WHERE s.behind = n.id AND s.status = 'pending' \
                     AND s.id NOT IN (SELECT unhex(value) FROM json_each(?3))) \
             ORDER BY n.sequence DESC LIMIT 1) \
         WHERE endpoint_id = ?1 AND order_key = ?2",
    )
    .bind(again.endpoint_id)
    .bind(again.order_key)
    .bind(&unplaced)
    .execute(&mut *conn)
    .await
    .map_err(store_error)?;
    Ok(behind)
}

/// `postgres::ordering::requeue_all` in SQLite.
pub(super) async fn requeue_all(
    conn: &mut SqliteConnection,
    endpoint: Uuid,
    ids: &[Uuid],
) -> Result<Vec<Uuid>, StoreError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT id, order_key, sequence FROM notifications \
         WHERE id IN {IN_ID_LIST} AND sequence IS NOT NULL AND order_key IS NOT NULL \
         ORDER BY order_key, sequence"
    );
    let rows: Vec<(Uuid, String, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(super::columns::id_list(ids))
        .fetch_all(&mut *conn)
        .await
        .map_err(store_error)?;
    let mut waiting = Vec::new();
    for (again, unplaced) in back_in_line(endpoint, &rows) {
        if requeue(conn, again, &unplaced).await?.is_some() {
            waiting.push(again.id);
        }
    }
    Ok(waiting)
}

/// Where a page of housekeeping's walk over waiting notifications ends,
/// as `postgres::ordering::WAITING_PAGE_END`.
const WAITING_PAGE_END: &str = "SELECT behind FROM notifications \
     WHERE behind > ?1 ORDER BY behind LIMIT 1 OFFSET ?2";

/// The release of `release_stranded`, as `postgres::ordering::STRANDED`:
/// up to `?1` of the waiting notifications whose `behind` is after `?3`
/// and at most `?4`, each waiting for one failed or cancelled that does
/// not hold its key, at `?2`.
pub(super) const STRANDED: &str = "UPDATE notifications AS n SET behind = s.next, \
         needs_index = CASE WHEN s.next IS NULL AND n.pull = 0 THEN 1 ELSE n.needs_index END, \
         next_attempt_at = CASE WHEN s.next IS NULL AND n.pull = 1 \
             THEN max(n.next_attempt_at, ?2) ELSE n.next_attempt_at END \
     FROM (SELECT w.id, p.behind AS next FROM notifications w \
           JOIN notifications p ON p.id = w.behind \
           WHERE w.behind > ?3 AND w.behind <= ?4 AND w.status = 'pending' \
             AND p.status NOT IN ('pending', 'succeeded') \
             AND NOT EXISTS (SELECT 1 FROM order_keys k \
                 WHERE k.endpoint_id = p.endpoint_id AND k.order_key = p.order_key \
                   AND k.held_by = p.id) \
           LIMIT ?1) AS s \
     WHERE n.id = s.id AND n.status = 'pending'";

/// `HousekeepingStore::release_stranded` in SQLite (one writer: only a
/// change of ordering racing nothing leaves one; kept for one rule), over
/// one page of the waiting notifications (`behind` after `after`, `limit`
/// of them).
pub(super) async fn release_stranded(
    store: &super::SqliteStore,
    after: Option<Uuid>,
    limit: i64,
) -> Result<(u64, Option<Uuid>), StoreError> {
    let now = super::columns::micros(store.clock.now());
    let from = after.unwrap_or_else(Uuid::nil);
    let end: Option<Uuid> = sqlx::query_scalar(WAITING_PAGE_END)
        .bind(from)
        .bind(limit.max(1) - 1)
        .fetch_optional(&store.reader)
        .await
        .map_err(store_error)?;
    let window = (from, end.unwrap_or_else(Uuid::max));
    let moved = sqlx::query(STRANDED)
        .bind(limit)
        .bind(now)
        .bind(window.0)
        .bind(window.1)
        .execute(&store.writer)
        .await
        .map_err(store_error)?;
    let orphans = super::ordering_retention::release_orphans(store, window, limit, now).await?;
    Ok((moved.rows_affected() + orphans, end))
}
