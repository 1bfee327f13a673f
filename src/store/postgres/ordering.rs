//! The place of created notifications in their keys' order, in PostgreSQL
//! (`store::ordering` decides; this reads and writes in the create's
//! transaction).
//!
//! A statement here that finds rows by key or by `behind` tests a pending
//! row as `(status = 'pending') IS TRUE`: no partial index on pending rows
//! (`status = 'pending'`) can serve that filter, so the generic plan
//! (hookd plans each statement once) keeps to `notifications_order` or
//! `notifications_behind` even when the statistics have seen few pending
//! rows; it once read every pending notification of the endpoint instead,
//! for each key (`migrations/20261207000053_release_through_behind.sql`).
//! `notifications_order` holds only pending rows, under that very test as
//! its predicate, which PostgreSQL proves from it
//! (`migrations/20261217000063_pending_order_index.sql`).

use std::collections::HashMap;

use sqlx::PgConnection;
use uuid::Uuid;

use super::partitions::id_span;
use crate::domain::ordering::Release;
use crate::store::notifications::Ordered;
use crate::store::ordering::{
    back_in_line, key_states, places, requeued_behind, runs, Item, LineHead, Requeued, WrittenKey,
};
use crate::store::StoreError;

/// Whether the notification aliased `$n` waits for nothing: its `behind`
/// is NULL or names one that succeeded (migration `20261210000056`; reads
/// that splice columns without an alias call `hookd_waits_for`, the same
/// rule). `behind IS NULL` comes first, so an unordered row costs nothing
/// more; the probe's `OFFSET 0` keeps PostgreSQL from hashing every
/// success instead of probing the one named.
macro_rules! released {
    ($n:literal) => {
        concat!(
            "(",
            $n,
            ".behind IS NULL OR EXISTS (SELECT 1 FROM notifications pred \
             WHERE pred.id = ",
            $n,
            ".behind AND pred.status = 'succeeded' OFFSET 0))"
        )
    };
}
pub(super) use released;

/// Gives each of `items` (created, in creation order, all ordered) its
/// place, and writes it on its row: two statements, the key rows' (which
/// also gives each key its new tail, `places_of`) and the notifications'.
pub(super) async fn place_in_order(
    conn: &mut PgConnection,
    items: &[Item<'_>],
    now: chrono::DateTime<chrono::Utc>,
) -> Result<HashMap<Uuid, Ordered>, StoreError> {
    if items.is_empty() {
        return Ok(HashMap::new());
    }
    let placed = places_of(conn, items, now).await?;
    let ids: Vec<Uuid> = placed.keys().copied().collect();
    let sequences: Vec<Option<i64>> = ids.iter().map(|id| placed[id].sequence).collect();
    let behind: Vec<Option<Uuid>> = ids.iter().map(|id| placed[id].behind).collect();
    let (low, high) = id_span(&ids);
    sqlx::query(
        "UPDATE notifications n SET sequence = t.sequence, behind = t.behind \
         FROM UNNEST($1::uuid[], $2::bigint[], $3::uuid[]) AS t(id, sequence, behind) \
         WHERE n.id = t.id AND n.id BETWEEN $4 AND $5",
    )
    .bind(&ids)
    .bind(&sequences)
    .bind(&behind)
    .bind(low)
    .bind(high)
    .execute(&mut *conn)
    .await?;
    Ok(placed)
}

/// The place of each of `items` (in creation order, all ordered, all to
/// be created in this transaction), its key rows written (`WRITE_KEYS`,
/// a row inserted stamped `now`): for an insert that writes the places
/// itself.
pub(super) async fn places_of(
    conn: &mut PgConnection,
    items: &[Item<'_>],
    now: chrono::DateTime<chrono::Utc>,
) -> Result<HashMap<Uuid, Ordered>, StoreError> {
    if items.is_empty() {
        return Ok(HashMap::new());
    }
    let runs = runs(items);
    let endpoints: Vec<Uuid> = runs.iter().map(|r| r.endpoint_id).collect();
    let keys: Vec<&str> = runs.iter().map(|r| r.order_key.as_str()).collect();
    let counts: Vec<i64> = runs.iter().map(|r| r.count).collect();
    let tails: Vec<Uuid> = runs.iter().map(|r| r.last).collect();
    let written: Vec<WrittenKey> = sqlx::query_as(WRITE_KEYS)
        .bind(&endpoints)
        .bind(&keys)
        .bind(&counts)
        .bind(&tails)
        .bind(now)
        .fetch_all(&mut *conn)
        .await?;
    Ok(places(items, &key_states(written)))
}

/// A create's write of its key rows (`$1`/`$2`), locked until the commit,
/// in (endpoint, key) order: each key's last sequence grows by its new
/// notifications (`$3`), its tail becomes the last of them (`$4`), and
/// the tail before is returned (`previous_tail`, a column only this
/// writes and reads: PostgreSQL before 18 has no `RETURNING OLD`). A row
/// this waited for is read as its writer committed it (an end of the
/// key's tail, or another create): the tail before is the key's tail at
/// that moment (`store::ordering`). A row inserted is stamped with the
/// create's time (`$5`, `emptied_at`: hookd's clock, not PostgreSQL's).
pub(super) const WRITE_KEYS: &str = "INSERT INTO order_keys AS k \
         (endpoint_id, order_key, last_sequence, tail, emptied_at) \
     SELECT *, $5::timestamptz FROM UNNEST($1::uuid[], $2::text[], $3::bigint[], $4::uuid[]) \
     ORDER BY 1, 2 \
     ON CONFLICT (endpoint_id, order_key) DO UPDATE SET \
         last_sequence = k.last_sequence + EXCLUDED.last_sequence, \
         previous_tail = k.tail, tail = EXCLUDED.tail \
     RETURNING endpoint_id, order_key, last_sequence, held_by, previous_tail";

/// Releases what a change of `endpoint`'s ordering lets go (`release`), in
/// the change's transaction. The key rows are taken first, as a create
/// and a release take them: every held key (`Held`), or every key of the
/// endpoint (`All`, which also forgets each key's tail: what was in line
/// is not any more), each stamped `now` (`emptied_at`, for retention:
/// migration `20261217000063`). A released push notification is owed to
/// the due index; a pull one's wait for a consumer starts `now`.
pub(super) async fn release(
    conn: &mut PgConnection,
    endpoint: Uuid,
    release: Release,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), StoreError> {
    let held: Vec<(String, Option<Uuid>)> = sqlx::query_as(
        "WITH taken AS ( \
             SELECT order_key, held_by FROM order_keys \
             WHERE endpoint_id = $1 AND ($2 OR held_by IS NOT NULL) \
             ORDER BY order_key FOR UPDATE \
         ), cleared AS ( \
             UPDATE order_keys k SET held_by = NULL, \
                 tail = CASE WHEN $2 THEN NULL ELSE k.tail END, \
                 emptied_at = GREATEST(k.emptied_at, $3) FROM taken \
             WHERE k.endpoint_id = $1 AND k.order_key = taken.order_key \
               AND ($2 OR k.held_by IS NOT NULL) \
         ) SELECT order_key, held_by FROM taken",
    )
    .bind(endpoint)
    .bind(release == Release::All)
    .bind(now)
    .fetch_all(&mut *conn)
    .await?;
    let holders: Vec<Uuid> = held.iter().filter_map(|(_, by)| *by).collect();
    // All: every row waiting (not one a success released: it may be in
    // flight). Held: those waiting for a holder that is not pending again
    // (a holder retried is its key's head once more).
    sqlx::query(
        "UPDATE notifications n SET behind = NULL, \
             needs_index = n.needs_index OR NOT n.pull, \
             next_attempt_at = CASE WHEN n.pull THEN GREATEST(n.next_attempt_at, $3) \
                 ELSE n.next_attempt_at END \
         WHERE n.endpoint_id = $1 AND n.status = 'pending' AND n.sequence IS NOT NULL \
           AND n.behind IS NOT NULL \
           AND NOT EXISTS (SELECT 1 FROM notifications p \
               WHERE p.id = n.behind AND p.status = 'succeeded') \
           AND ($2 OR (n.behind = ANY($4) AND NOT EXISTS ( \
               SELECT 1 FROM notifications h WHERE h.id = n.behind AND h.status = 'pending')))",
    )
    .bind(endpoint)
    .bind(release == Release::All)
    .bind(now)
    .bind(&holders)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Puts every pending notification of `endpoint` that has a key back in
/// its key's line as ordering is turned on again (`ordering::lines_again`),
/// in the change's transaction: each key's in creation order, the first
/// its key's head and each next waiting for the one before it; one created
/// while ordering was off is numbered on from the key's count; the key's
/// row names the last as its tail (inserted for a key that had none), and
/// every other key of the endpoint is left empty. The key rows are taken
/// first, in a create's order. One in flight finishes its attempt; one
/// that now waits is passed over by the dispatcher's claim until released.
pub(super) async fn relink(
    conn: &mut PgConnection,
    endpoint: Uuid,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), StoreError> {
    sqlx::query(
        "WITH taken AS ( \
             SELECT order_key FROM order_keys WHERE endpoint_id = $1 \
             ORDER BY order_key FOR UPDATE \
         ) UPDATE order_keys k SET tail = NULL, held_by = NULL, \
             emptied_at = GREATEST(k.emptied_at, $2) \
         FROM taken WHERE k.endpoint_id = $1 AND k.order_key = taken.order_key",
    )
    .bind(endpoint)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "WITH line AS ( \
             SELECT n.id, lag(n.id) OVER w AS before, \
                 CASE WHEN n.sequence IS NULL THEN \
                     GREATEST(COALESCE(k.last_sequence, 0), \
                         COALESCE(max(n.sequence) OVER (PARTITION BY n.order_key), 0)) \
                     + count(*) FILTER (WHERE n.sequence IS NULL) OVER w END AS numbered \
             FROM notifications n LEFT JOIN order_keys k \
                 ON k.endpoint_id = n.endpoint_id AND k.order_key = n.order_key \
             WHERE n.endpoint_id = $1 AND (n.status = 'pending') IS TRUE \
               AND n.order_key IS NOT NULL \
             WINDOW w AS (PARTITION BY n.order_key ORDER BY n.id) \
         ) UPDATE notifications n SET behind = line.before, \
             sequence = COALESCE(line.numbered, n.sequence) \
         FROM line WHERE n.id = line.id AND (n.status = 'pending') IS TRUE",
    )
    .bind(endpoint)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "INSERT INTO order_keys AS k (endpoint_id, order_key, last_sequence, tail, emptied_at) \
         SELECT $1, order_key, max(sequence), (array_agg(id ORDER BY id DESC))[1], $2 \
         FROM notifications \
         WHERE endpoint_id = $1 AND (status = 'pending') IS TRUE AND order_key IS NOT NULL \
         GROUP BY order_key ORDER BY order_key \
         ON CONFLICT (endpoint_id, order_key) DO UPDATE SET \
             last_sequence = GREATEST(k.last_sequence, EXCLUDED.last_sequence), \
             tail = EXCLUDED.tail",
    )
    .bind(endpoint)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Puts a notification of an ordered key that is pending again (a retry,
/// a recover) back in its key's line, at the place
/// `store::ordering::requeued_behind` gives it, under the key's row; the
/// one that waited for the same now waits for it. What it waits for.
///
/// `unplaced`: others pending again in the same transaction and not put
/// back yet (a recover's page), which are not in line meanwhile.
pub(super) async fn requeue(
    conn: &mut PgConnection,
    again: Requeued<'_>,
    unplaced: &[Uuid],
) -> Result<Option<Uuid>, StoreError> {
    let held_by: Option<Option<Uuid>> = sqlx::query_scalar(
        "SELECT held_by FROM order_keys WHERE endpoint_id = $1 AND order_key = $2 FOR UPDATE",
    )
    .bind(again.endpoint_id)
    .bind(again.order_key)
    .fetch_optional(&mut *conn)
    .await?;
    let before: Option<Uuid> = sqlx::query_scalar(
        "SELECT id FROM notifications \
         WHERE endpoint_id = $1 AND order_key = $2 AND sequence IS NOT NULL \
           AND (status = 'pending') IS TRUE AND id <> $3 AND sequence < $4 AND NOT (id = ANY($5)) \
         ORDER BY sequence DESC LIMIT 1",
    )
    .bind(again.endpoint_id)
    .bind(again.order_key)
    .bind(again.id)
    .bind(again.sequence)
    .bind(unplaced)
    .fetch_optional(&mut *conn)
    .await?;
    let head: Option<(Uuid, Option<Uuid>)> = sqlx::query_as(
        "SELECT n.id, hookd_waits_for(n.behind) FROM notifications n \
         WHERE n.endpoint_id = $1 AND n.order_key = $2 AND n.sequence IS NOT NULL \
           AND (n.status = 'pending') IS TRUE AND n.id <> $3 AND NOT (n.id = ANY($4)) \
           AND (n.behind IS NULL OR NOT EXISTS (SELECT 1 FROM notifications p \
               WHERE p.id = n.behind AND p.status = 'pending')) \
         ORDER BY n.sequence LIMIT 1",
    )
    .bind(again.endpoint_id)
    .bind(again.order_key)
    .bind(again.id)
    .bind(unplaced)
    .fetch_optional(&mut *conn)
    .await?;
    let head = head.map(|(id, behind)| LineHead { id, behind });
    let behind = requeued_behind(again.id, before, head, held_by.flatten());
    if let Some(behind) = behind {
        sqlx::query(
            "UPDATE notifications SET behind = $3 \
             WHERE endpoint_id = $1 AND order_key = $2 AND sequence IS NOT NULL \
               AND behind = $4 AND (status = 'pending') IS TRUE AND id <> $3 AND NOT (id = ANY($5))",
        )
        .bind(again.endpoint_id)
        .bind(again.order_key)
        .bind(again.id)
        .bind(behind)
        .bind(unplaced)
        .execute(&mut *conn)
        .await?;
    }
    sqlx::query("UPDATE notifications SET behind = $2, needs_index = false WHERE id = $1")
        .bind(again.id)
        .bind(behind)
        .execute(&mut *conn)
        .await?;
    sqlx::query(KEY_TAIL)
        .bind(again.endpoint_id)
        .bind(again.order_key)
        .bind(unplaced)
        .execute(&mut *conn)
        .await?;
    Ok(behind)
}

/// Sets the tail of the key `$1`/`$2` on its row from its notifications:
/// its latest pending one that no pending one waits for, leaving out
/// those of `$3` (pending again, not back in line yet). For a requeue,
/// which may put one at the end of the line; a create and an end keep
/// the tail without a search.
pub(super) const KEY_TAIL: &str = "UPDATE order_keys k SET tail = ( \
         SELECT n.id FROM notifications n \
         WHERE n.endpoint_id = k.endpoint_id AND n.order_key = k.order_key \
           AND n.sequence IS NOT NULL AND (n.status = 'pending') IS TRUE \
           AND NOT (n.id = ANY($3)) \
           AND NOT EXISTS (SELECT 1 FROM notifications s \
               WHERE s.behind = n.id AND (s.status = 'pending') IS TRUE \
                 AND NOT (s.id = ANY($3)) OFFSET 0) \
         ORDER BY n.sequence DESC LIMIT 1) \
     WHERE k.endpoint_id = $1 AND k.order_key = $2";

/// Puts the ordered ones among `ids` (notifications of `endpoint` pending
/// again) back in line, oldest of each key first; those now waiting.
pub(super) async fn requeue_all(
    conn: &mut PgConnection,
    endpoint: Uuid,
    ids: &[Uuid],
) -> Result<Vec<Uuid>, StoreError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let (low, high) = id_span(ids);
    let rows: Vec<(Uuid, String, i64)> = sqlx::query_as(
        "SELECT id, order_key, sequence FROM notifications \
         WHERE id = ANY($1) AND id BETWEEN $2 AND $3 AND sequence IS NOT NULL \
           AND order_key IS NOT NULL \
         ORDER BY order_key, sequence",
    )
    .bind(ids)
    .bind(low)
    .bind(high)
    .fetch_all(&mut *conn)
    .await?;
    let mut waiting = Vec::new();
    for (again, unplaced) in back_in_line(endpoint, &rows) {
        if requeue(conn, again, &unplaced).await?.is_some() {
            waiting.push(again.id);
        }
    }
    Ok(waiting)
}

/// Where a page of housekeeping's walk over waiting notifications ends
/// (`HousekeepingStore::release_stranded`): the `behind` of the `$2`-th
/// notification after `$1` in `notifications_behind`'s order, or none if
/// fewer are left.
pub(super) const WAITING_PAGE_END: &str = "SELECT behind FROM notifications \
     WHERE behind > $1 ORDER BY behind OFFSET $2 LIMIT 1";

/// The release of `release_stranded`: up to `$1` of the waiting
/// notifications whose `behind` is after `$3` and at most `$4`, each
/// waiting for one failed or cancelled that does not hold its key, at
/// `$2`. The waiting ones are read first (the span of
/// `notifications_behind`), and what each waits for is probed in a
/// lateral read that `OFFSET 0` keeps from becoming a join: as a join, a
/// generic plan read every notification whose status is neither pending
/// nor succeeded to probe what waits for each, 32 ms a tick beside the
/// drain bench's 50,000 pending, none of them waiting.
pub(super) const STRANDED: &str = "UPDATE notifications n SET behind = s.next, \
         needs_index = n.needs_index OR (s.next IS NULL AND NOT n.pull), \
         next_attempt_at = CASE WHEN s.next IS NULL AND n.pull \
             THEN GREATEST(n.next_attempt_at, $2) ELSE n.next_attempt_at END \
     FROM (SELECT w.id, w.behind AS was, p.behind AS next FROM notifications w \
           CROSS JOIN LATERAL (SELECT p.behind FROM notifications p \
               WHERE p.id = w.behind AND p.status NOT IN ('pending', 'succeeded') \
                 AND NOT EXISTS (SELECT 1 FROM order_keys k \
                     WHERE k.endpoint_id = p.endpoint_id AND k.order_key = p.order_key \
                       AND k.held_by = p.id) \
               FOR SHARE SKIP LOCKED OFFSET 0) p \
           WHERE w.behind > $3 AND w.behind <= $4 AND (w.status = 'pending') IS TRUE \
           LIMIT $1) s \
     WHERE n.id = s.id AND n.status = 'pending' AND n.behind = s.was";

/// `HousekeepingStore::release_stranded` in PostgreSQL: through
/// `notifications_behind`, at the store's clock, over one page of the
/// waiting notifications (`behind` after `after`, `limit` of them). Stranded
/// is behind one that failed or was cancelled and does not hold its key
/// (one behind a success waits for nothing already). That one is read
/// `FOR SHARE SKIP LOCKED` and the waiting one must still wait for it: a
/// retry of it that commits meanwhile (it is pending again, and its
/// successor must keep waiting) is seen, or the pair is left for the
/// walk's next round.
pub(super) async fn release_stranded(
    store: &super::PgStore,
    after: Option<Uuid>,
    limit: i64,
) -> Result<(u64, Option<Uuid>), StoreError> {
    let now = store.clock.now();
    let from = after.unwrap_or_else(Uuid::nil);
    let end: Option<Uuid> = sqlx::query_scalar(WAITING_PAGE_END)
        .bind(from)
        .bind(limit.max(1) - 1)
        .fetch_optional(&store.pool)
        .await?;
    let through = end.unwrap_or_else(Uuid::max);
    let moved = sqlx::query(STRANDED)
        .bind(limit)
        .bind(now)
        .bind(from)
        .bind(through)
        .execute(&store.pool)
        .await?;
    let orphans = super::ordering_retention::release_orphans(store, (from, through), limit).await?;
    Ok((moved.rows_affected() + orphans, end))
}
