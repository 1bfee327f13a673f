//! The place of created notifications in their keys' order, in PostgreSQL
//! (`store::ordering` decides; this reads and writes in the create's
//! transaction).
//!
//! A statement here that finds rows by key or by `behind` tests a pending
//! row as `(status = 'pending') IS TRUE`: no partial index on pending rows
//! can serve that filter, so the generic plan (hookd plans each statement
//! once) keeps to `notifications_order` or `notifications_behind` even
//! when the statistics have seen few pending rows; it once read every
//! pending notification of the endpoint instead, for each key
//! (`migrations/20261207000053_release_through_behind.sql`).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use sqlx::PgConnection;
use uuid::Uuid;

use super::partitions::id_span;
use crate::domain::ordering::Release;
use crate::store::notifications::Ordered;
use crate::store::ordering::{
    back_in_line, key_states, places, requeued_behind, runs, Item, LineHead, ReadTail, Requeued,
    WrittenKey,
};
use crate::store::StoreError;

/// Each key's tail (`store::ordering`), keys in `$1`/`$2`: its pending
/// notification that no pending one waits for (the latest by sequence,
/// should a race have left two).
///
/// `OFFSET 0` keeps "does a pending one wait for this candidate?" a probe
/// of `notifications_behind` per candidate. Without it the planner
/// flattened the `NOT EXISTS` into an anti-join whose generic plan read
/// every waiting notification once, kept them, and compared each key's
/// candidate with all of them (`Join Filter: (s.behind = n.id)`): a batch
/// of 1,000 keys beside the previous batch's 1,000 waiting made a million
/// comparisons, 94 ms a statement (`auto_explain`, the ordering bench).
/// `ordering_plan_tests` keeps the probe.
pub(super) const TAILS: &str = "SELECT t.endpoint_id, t.order_key, ( \
         SELECT n.id FROM notifications n \
         WHERE n.endpoint_id = t.endpoint_id AND n.order_key = t.order_key \
           AND n.sequence IS NOT NULL AND (n.status = 'pending') IS TRUE \
           AND NOT EXISTS (SELECT 1 FROM notifications s \
               WHERE s.behind = n.id AND (s.status = 'pending') IS TRUE OFFSET 0) \
         ORDER BY n.sequence DESC LIMIT 1) \
     FROM UNNEST($1::uuid[], $2::text[]) AS t(endpoint_id, order_key)";

/// Passes each of `$1` (pending, ordered, ids from `$2` to `$3`) over
/// the one it waits for if that one is final and does not hold its key,
/// as the release would have: what each passed one now waits for. The
/// final one is read `FOR SHARE`: a retry of it that committed meanwhile
/// is seen (pending again, it is not passed over), and one under way is
/// passed by (`SKIP LOCKED`: never a wait, so never in a cycle with a
/// retry that waits for the create's key row); what this leaves waiting
/// for a final one, `settle` or `release_stranded` passes over later.
///
/// Each row is reached by its primary key from the ids, whatever the
/// statistics say. Hookd plans each statement once, and a generic plan on
/// statistics from before the ordered rows (`notifications_behind` a few
/// hundred rows) read that index whole for each row and filtered it by
/// id, 0.1-1.9 s a statement once 20,000 were pending (`auto_explain`,
/// the ordering bench's slow rounds). So nothing here proves `behind IS
/// NOT NULL`, the partial index's predicate: the final one is found by
/// `COALESCE(w.behind, w.id)` (a row with no predecessor finds itself,
/// pending, and is left), and the waiting one's `behind` is rechecked
/// with `IS NOT DISTINCT FROM`. The waiting one is probed by its id from
/// each pair, not read by `$1` and matched with the pairs in a join
/// filter: on the plan's guess of a row a side, that compared each of a
/// batch of 1,000 with every other (30 ms). `ordering_plan_tests` keeps
/// these shapes.
pub(super) const PASS_ENDED: &str = "UPDATE notifications n SET behind = f.next \
     FROM (SELECT w.id AS waiting, p.id, p.behind AS next FROM notifications w \
           JOIN notifications p ON p.id = COALESCE(w.behind, w.id) \
           WHERE w.id = ANY($1) AND w.id BETWEEN $2 AND $3 \
             AND p.status <> 'pending' \
             AND NOT EXISTS (SELECT 1 FROM order_keys k \
                 WHERE k.endpoint_id = p.endpoint_id AND k.order_key = p.order_key \
                   AND k.held_by = p.id) \
           FOR SHARE OF p SKIP LOCKED) f \
     WHERE n.id = f.waiting \
       AND (n.status = 'pending') IS TRUE AND n.behind IS NOT DISTINCT FROM f.id \
     RETURNING n.id, n.behind";

/// Gives each of `items` (created, in creation order, all ordered) its
/// place, and writes it on its row.
pub(super) async fn place_in_order(
    conn: &mut PgConnection,
    items: &[Item<'_>],
) -> Result<HashMap<Uuid, Ordered>, StoreError> {
    if items.is_empty() {
        return Ok(HashMap::new());
    }
    let runs = runs(items);
    let endpoints: Vec<Uuid> = runs.iter().map(|r| r.endpoint_id).collect();
    let keys: Vec<&str> = runs.iter().map(|r| r.order_key.as_str()).collect();
    let counts: Vec<i64> = runs.iter().map(|r| r.count).collect();
    // The key rows, locked until the commit, in (endpoint, key) order.
    let written: Vec<WrittenKey> = sqlx::query_as(
        "INSERT INTO order_keys AS k (endpoint_id, order_key, last_sequence) \
         SELECT * FROM UNNEST($1::uuid[], $2::text[], $3::bigint[]) \
         ORDER BY 1, 2 \
         ON CONFLICT (endpoint_id, order_key) \
             DO UPDATE SET last_sequence = k.last_sequence + EXCLUDED.last_sequence \
         RETURNING endpoint_id, order_key, last_sequence, held_by",
    )
    .bind(&endpoints)
    .bind(&keys)
    .bind(&counts)
    .fetch_all(&mut *conn)
    .await?;
    // Read in a statement of its own, whose snapshot is taken once the key
    // rows are held: a predecessor whose end committed meanwhile is seen
    // as final.
    let tails: Vec<ReadTail> = sqlx::query_as(TAILS)
        .bind(&endpoints)
        .bind(&keys)
        .fetch_all(&mut *conn)
        .await?;
    let states = key_states(written, tails);
    let mut placed = places(items, &states);

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
    // A tail that ended since it was read (its release ran before this
    // commit, and saw none of these) is passed over now, as its release
    // would have: in a fresh snapshot, as late as this transaction can.
    // What ends later still, housekeeping's `release_stranded` catches.
    loop {
        let passed: Vec<(Uuid, Option<Uuid>)> = sqlx::query_as(PASS_ENDED)
            .bind(&ids)
            .bind(low)
            .bind(high)
            .fetch_all(&mut *conn)
            .await?;
        if passed.is_empty() {
            return Ok(placed);
        }
        for (id, behind) in passed {
            if let Some(place) = placed.get_mut(&id) {
                place.behind = behind;
            }
        }
    }
}

/// Releases what a change of `endpoint`'s ordering lets go (`release`), in
/// the change's transaction. The key rows are taken first, as a create
/// and a release take them: every held key (`Held`), or every key of the
/// endpoint (`All`). A released push notification is owed to the due
/// index; a pull one's wait for a consumer starts `now`.
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
             UPDATE order_keys k SET held_by = NULL FROM taken \
             WHERE k.endpoint_id = $1 AND k.order_key = taken.order_key \
               AND k.held_by IS NOT NULL \
         ) SELECT order_key, held_by FROM taken",
    )
    .bind(endpoint)
    .bind(release == Release::All)
    .fetch_all(&mut *conn)
    .await?;
    let holders: Vec<Uuid> = held.iter().filter_map(|(_, by)| *by).collect();
    // All: every row waiting. Held: those waiting for a holder that is not
    // pending again (a holder retried is its key's head once more).
    sqlx::query(
        "UPDATE notifications n SET behind = NULL, \
             needs_index = n.needs_index OR NOT n.pull, \
             next_attempt_at = CASE WHEN n.pull THEN GREATEST(n.next_attempt_at, $3) \
                 ELSE n.next_attempt_at END \
         WHERE n.endpoint_id = $1 AND n.status = 'pending' AND n.sequence IS NOT NULL \
           AND n.behind IS NOT NULL \
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
        "SELECT n.id, n.behind FROM notifications n \
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
    Ok(behind)
}

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

/// `HousekeepingStore::release_stranded` in PostgreSQL: through
/// `notifications_behind`, at the store's clock. The final one is read
/// `FOR SHARE SKIP LOCKED` and the waiting one must still wait for it, as
/// in `PASS_ENDED`: a retry of the final one that commits meanwhile (it is
/// pending again, and its successor must keep waiting) is seen, or the
/// pair is left for the next second.
pub(super) async fn release_stranded(
    store: &super::PgStore,
    limit: i64,
) -> Result<u64, StoreError> {
    let now = store.clock.now();
    let moved = sqlx::query(
        "UPDATE notifications n SET behind = s.next, \
             needs_index = n.needs_index OR (s.next IS NULL AND NOT n.pull), \
             next_attempt_at = CASE WHEN s.next IS NULL AND n.pull \
                 THEN GREATEST(n.next_attempt_at, $2) ELSE n.next_attempt_at END \
         FROM (SELECT w.id, w.behind AS was, p.behind AS next FROM notifications w \
               JOIN notifications p ON p.id = w.behind \
               WHERE w.behind IS NOT NULL AND (w.status = 'pending') IS TRUE AND p.status <> 'pending' \
                 AND NOT EXISTS (SELECT 1 FROM order_keys k \
                     WHERE k.endpoint_id = p.endpoint_id AND k.order_key = p.order_key \
                       AND k.held_by = p.id) \
               LIMIT $1 FOR SHARE OF p SKIP LOCKED) s \
         WHERE n.id = s.id AND n.status = 'pending' AND n.behind = s.was",
    )
    .bind(limit)
    .bind(now)
    .execute(&store.pool)
    .await?;
    let orphans = super::ordering_retention::release_orphans(store, limit).await?;
    Ok(moved.rows_affected() + orphans)
}

/// After an ordered create's commit: passes over the tails its new
/// notifications (`ids`) wait for that ended too late for the create to
/// see and too early for their release to see them. Such an end ran its
/// trigger before the create committed: either it has committed since,
/// and this pass's fresh snapshot sees it, or its transaction still holds
/// its tail's row, which this waits to see free (`LOCK_WAIT` at most)
/// before it looks. It looks with `SKIP LOCKED` and holds no lock while
/// it waits, so it never waits in a cycle with a recorder. An end that
/// starts after the commit sees the new ones itself. What this cannot do
/// (a row held for seconds, an error) housekeeping's `release_stranded`
/// does within a second. Each of `ids` whose place changed, with what it
/// now waits for.
pub(super) async fn settle(
    store: &super::PgStore,
    ids: &[Uuid],
) -> Result<HashMap<Uuid, Option<Uuid>>, StoreError> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let (low, high) = id_span(ids);
    // The tails outside the create, and whether a transaction holds one.
    let tails: Vec<(Uuid, bool)> = sqlx::query_as(
        "WITH tails AS ( \
             SELECT DISTINCT n.behind AS id FROM notifications n \
             WHERE n.id = ANY($1) AND n.id BETWEEN $2 AND $3 \
               AND n.behind IS NOT NULL AND NOT (n.behind = ANY($1)) \
         ), free AS ( \
             SELECT p.id FROM notifications p WHERE p.id IN (SELECT id FROM tails) \
             FOR SHARE SKIP LOCKED \
         ) SELECT t.id, NOT EXISTS (SELECT 1 FROM free WHERE free.id = t.id) FROM tails t",
    )
    .bind(ids)
    .bind(low)
    .bind(high)
    .fetch_all(&store.pool)
    .await?;
    if tails.is_empty() {
        return Ok(HashMap::new());
    }
    let held: Vec<Uuid> = tails
        .into_iter()
        .filter_map(|(tail, held)| held.then_some(tail))
        .collect();
    until_free(store, held).await?;
    let mut moved: HashMap<Uuid, Option<Uuid>> = HashMap::new();
    loop {
        let passed: Vec<(Uuid, Option<Uuid>)> = sqlx::query_as(PASS_ENDED)
            .bind(ids)
            .bind(low)
            .bind(high)
            .fetch_all(&store.pool)
            .await?;
        if passed.is_empty() {
            return Ok(moved);
        }
        moved.extend(passed);
    }
}

/// How long `settle` waits for a tail's row to be free: an end's
/// transaction is a few statements; one that takes longer is left to
/// housekeeping.
const LOCK_WAIT: Duration = Duration::from_secs(2);

/// Waits until each of `held` has been seen free of any transaction's
/// lock once (or `LOCK_WAIT` passed), looking again after a pause that
/// doubles from a millisecond.
async fn until_free(store: &super::PgStore, mut held: Vec<Uuid>) -> Result<(), StoreError> {
    let deadline = Instant::now() + LOCK_WAIT;
    let mut pause = Duration::from_millis(1);
    while !held.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(50));
        let (low, high) = id_span(&held);
        let free: HashSet<Uuid> = sqlx::query_scalar(
            "SELECT id FROM notifications WHERE id = ANY($1) AND id BETWEEN $2 AND $3 \
             FOR SHARE SKIP LOCKED",
        )
        .bind(&held)
        .bind(low)
        .bind(high)
        .fetch_all(&store.pool)
        .await?
        .into_iter()
        .collect();
        held.retain(|id| !free.contains(id));
    }
    Ok(())
}
