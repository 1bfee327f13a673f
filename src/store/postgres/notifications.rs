//! Notifications in PostgreSQL: inserted idempotently, read, listed.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::AssertSqlSafe;
use sqlx::QueryBuilder;
use uuid::Uuid;

pub(super) use super::list_queries::{frontier_query, list_query, prefix_ids_query};
use super::ordering as ordering_pg;
use super::partitions::id_span;
use super::{pg_array_literal, PgStore};
use crate::store::notifications::Inserted;
use crate::store::notifications::NewNotification;
use crate::store::notifications::Notification;
use crate::store::notifications::NotificationFilter;
use crate::store::notifications::Ordered;
use crate::store::ordering;
use crate::store::StoreError;

/// Everything but the body, which listings leave out. Spliced into queries
/// with `format!`, hence `AssertSqlSafe`: the SQL is made of constants only,
/// every value travels as a bind parameter. A delivery of an event has its
/// event's type: the fan-out leaves it off the delivery rows (stored once,
/// on the event), which spares each delivery an index entry in
/// `notifications_event_type_newest`. The columns stay unqualified: inside
/// the subquery, `event_id` can only be the notification's; `behind` is
/// what the notification waits for (`hookd_waits_for`: not one that
/// succeeded, which a success leaves unwritten). Whether the
/// row is `leased` is not decided here: its lease and the transaction's
/// clock (`read_at`) are read, and `domain::lease::held` decides as the
/// row is decoded (`rows.rs`).
///
/// `now() AS read_at` is the one use of PostgreSQL's clock left: it
/// decides no write, only what a read shows (`leased`, which the API
/// reports), and these columns are spliced into statements of every
/// shape (a parameter would need a number per statement). A host's clock
/// off by a second shows a lease as held a second more or less.
const SUMMARY_COLUMNS: &str = "id, endpoint_id, key, content_type, headers, schedule_ms, \
     schedule_name, status, attempts, series_start, deliver_at, next_attempt_at, last_attempt_at, \
     last_status_code, last_error, created_at, updated_at, completed_at, event_id, url, pull, \
     order_key, sequence, hookd_waits_for(behind) AS behind, lease_id, now() AS read_at, \
     CASE WHEN event_id IS NULL THEN event_type \
         ELSE (SELECT e.event_type FROM events e WHERE e.id = event_id) END AS event_type";
/// With the body; a delivery of an event has its event's.
pub(super) fn columns_with_body() -> String {
    format!(
        "{SUMMARY_COLUMNS}, CASE WHEN event_id IS NULL THEN body \
             ELSE (SELECT e.body FROM events e WHERE e.id = event_id) END AS body"
    )
}
pub(super) fn columns_without_body() -> String {
    format!("{SUMMARY_COLUMNS}, ''::bytea AS body")
}
/// The insert of a group commit, returning each created row's id, its
/// `created_at` and the given expression (its endpoint's version, or NULL).
///
/// A key is unique per endpoint in `notification_keys` (a unique index of
/// the partitioned `notifications` would have to hold the id): a keyed row
/// is inserted only when its key row was (`$keyed`, a CTE returning the
/// ids whose key row it wrote), in the same statement.
macro_rules! insert_notifications_sql {
    ($keyed:expr, $endpoint_version:expr) => {
        concat!(
            "WITH t AS MATERIALIZED ( \
                 SELECT * FROM UNNEST($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], \
                     $6::bytea[], $7::jsonb[], $8::text[], $9::text[], $10::timestamptz[], \
                     $11::timestamptz[], $12::text[], $13::bool[], $14::text[], $15::bigint[], \
                     $16::uuid[]) \
                 AS t(id, endpoint_id, key, event_type, content_type, body, headers, schedule, \
                      schedule_name, deliver_at, next_attempt_at, url, pull, order_key, sequence, \
                      behind) \
             ), keyed AS (",
            $keyed,
            ") \
             INSERT INTO notifications (id, endpoint_id, key, event_type, content_type, body, headers, \
                 schedule_ms, schedule_name, deliver_at, next_attempt_at, url, pull, order_key, \
                 sequence, behind) \
             SELECT id, endpoint_id, key, event_type, content_type, body, headers, \
                 schedule::bigint[], schedule_name, deliver_at, next_attempt_at, url, pull, order_key, \
                 sequence, behind \
             FROM t WHERE key IS NULL OR id IN (SELECT id FROM keyed) \
             RETURNING id, created_at, ",
            $endpoint_version
        )
    };
}
/// The key rows of new keys.
macro_rules! new_keys {
    () => {
        "INSERT INTO notification_keys AS k (key, endpoint_id, id) \
         SELECT key, endpoint_id, id FROM t WHERE key IS NOT NULL \
         ON CONFLICT (key, endpoint_id) DO NOTHING \
         RETURNING k.id"
    };
}
/// A key row whose notification is gone is taken over (a crash between
/// retention's drop and its deletion of the day's key rows, or a purge by
/// an older hookd, leaves one): `$17` holds, per row, the id the key row
/// was read pointing to, whose notification a later statement no longer
/// found. The update happens only while the key row still points there.
/// Not `ON CONFLICT … DO UPDATE … WHERE NOT EXISTS (notification)` in the
/// first insert: that subquery reads the statement's snapshot, which does
/// not see a notification committed with its key row by a concurrent
/// create, and would take over a live key. Two creates taking over the
/// same key queue on its row: the second, once the first committed, finds
/// the row no longer points to the stale id and reads the first's
/// notification as any existing key's.
macro_rules! stale_keys {
    () => {
        "UPDATE notification_keys k SET id = s.id \
         FROM UNNEST($1::uuid[], $2::uuid[], $3::text[], $17::uuid[]) \
             AS s(id, endpoint_id, key, stale) \
         WHERE k.key = s.key AND k.endpoint_id = s.endpoint_id AND k.id = s.stale \
         RETURNING s.id"
    };
}
/// The version of each created row's endpoint, when the caller hands the
/// rows to this process's dispatcher (`Writes::endpoint_versions`): read
/// in the insert's snapshot, it tells the dispatcher whether its prepared
/// endpoint is current, as a claim's load would.
macro_rules! endpoint_version {
    () => {
        "(SELECT ep.version FROM endpoints ep WHERE ep.id = notifications.endpoint_id)"
    };
}
impl PgStore {
    /// Inserts many notifications in one statement (one commit). Items whose
    /// endpoint + key exist already come back as `Existing` or `KeyConflict`,
    /// in the order given. With `endpoint_versions`, also the version of each
    /// created row's endpoint, by notification id.
    pub(super) async fn insert_notifications(
        &self,
        conn: &mut sqlx::PgConnection,
        items: Vec<NewNotification>,
        endpoint_versions: bool,
    ) -> Result<(Vec<Inserted>, HashMap<Uuid, i64>), StoreError> {
        if items.is_empty() {
            return Ok(Default::default());
        }
        // Keyed rows go in ordered by (endpoint, key). Two commits inserting
        // the same keys in opposite orders would each wait for the other's
        // uncommitted entry in the unique index, a deadlock PostgreSQL ends
        // by failing one of them; in one order they wait and never cycle.
        // Rows without a key conflict with nothing: a batch without keys
        // keeps its order.
        let mut ordered: Vec<&NewNotification> = items.iter().collect();
        if items.iter().any(|item| item.key.is_some()) {
            ordered.sort_by(|a, b| {
                (a.endpoint_id, a.key.as_deref()).cmp(&(b.endpoint_id, b.key.as_deref()))
            });
        }
        // Without business keys every row is created: the ordered ones
        // are placed first (their key rows written), and the insert
        // writes each one's place with it. With keys, the insert decides
        // which are created, and those are placed after it.
        let early = !items.iter().any(|item| item.key.is_some());
        let mut places = if early {
            let in_order = ordering::ordered(&items);
            ordering_pg::places_of(conn, &in_order, self.clock.now()).await?
        } else {
            HashMap::new()
        };
        let returned = insert_rows(conn, &ordered, None, endpoint_versions, &places).await?;
        let mut versions = HashMap::new();
        let mut created = HashMap::with_capacity(returned.len());
        record(&mut created, &mut versions, returned);

        let conflicting: Vec<&NewNotification> = ordered
            .iter()
            .copied()
            .filter(|i| !created.contains_key(&i.id))
            .collect();
        let mut existing = existing_rows(conn, &conflicting).await?;
        let missing: Vec<&NewNotification> = conflicting
            .iter()
            .copied()
            .filter(|i| !existing.contains_key(&(i.endpoint_id, i.key.clone().unwrap_or_default())))
            .collect();
        if !missing.is_empty() {
            // Key rows without their notification: taken over, then what
            // a concurrent create took over instead is read.
            let stale = stale_keys(conn, &missing).await?;
            let takers: Vec<&NewNotification> = missing
                .iter()
                .copied()
                .filter(|i| stale.contains_key(&(i.endpoint_id, i.key.clone().unwrap_or_default())))
                .collect();
            let stale_ids: Vec<Uuid> = takers
                .iter()
                .map(|i| stale[&(i.endpoint_id, i.key.clone().unwrap_or_default())])
                .collect();
            if !takers.is_empty() {
                let returned =
                    insert_rows(conn, &takers, Some(&stale_ids), endpoint_versions, &places)
                        .await?;
                record(&mut created, &mut versions, returned);
            }
            let left: Vec<&NewNotification> = missing
                .iter()
                .copied()
                .filter(|i| !created.contains_key(&i.id))
                .collect();
            existing.extend(existing_rows(conn, &left).await?);
        }

        if !early {
            let in_order: Vec<ordering::Item> = ordering::ordered(&items)
                .into_iter()
                .filter(|i| created.contains_key(&i.id))
                .collect();
            places = ordering_pg::place_in_order(conn, &in_order, self.clock.now()).await?;
        }

        let mut results = Vec::with_capacity(items.len());
        for item in items {
            if let Some(created_at) = created.get(&item.id) {
                let place = places.remove(&item.id).unwrap_or_default();
                results.push(Inserted::Created(item.into_row(*created_at, place)));
                continue;
            }
            let found = item
                .key
                .as_ref()
                .and_then(|key| existing.get(&(item.endpoint_id, key.clone())));
            match found {
                Some(row) if row.same_payload(&item.content_type, &item.body) => {
                    results.push(Inserted::Existing(row.clone()))
                }
                Some(row) => results.push(Inserted::KeyConflict(row.clone())),
                // Not inserted, not taken over and not found: its key's
                // notification was deleted again in between (retention).
                None => return Err(StoreError::Conflict("notifications_key".into())),
            }
        }
        Ok((results, versions))
    }

    pub async fn get_notification(&self, id: Uuid) -> Result<Option<Notification>, StoreError> {
        let sql = format!(
            "SELECT {} FROM notifications WHERE id = $1",
            columns_with_body()
        );
        Ok(sqlx::query_as::<_, Notification>(AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Newest first, filtered; payloads left out.
    pub async fn list_notifications(
        &self,
        filter: &NotificationFilter,
    ) -> Result<Vec<Notification>, StoreError> {
        let mut query = list_query(filter);
        Ok(query
            .build_query_as::<Notification>()
            .fetch_all(&self.pool)
            .await?)
    }

    /// Where a bounded page stops reading (`frontier_query`).
    pub async fn notifications_frontier(
        &self,
        filter: &NotificationFilter,
    ) -> Result<Option<Uuid>, StoreError> {
        let endpoints = match (&filter.owner, filter.endpoint_id) {
            (Some(owner), None) => {
                sqlx::query_scalar(
                    "SELECT count(*) FROM endpoints \
                     WHERE owner = $1 AND deleted_at IS NULL AND NOT managed",
                )
                .bind(owner)
                .fetch_one(&self.pool)
                .await?
            }
            _ => 1,
        };
        let per_endpoint = filter.examined_per_endpoint(endpoints);
        let found: Option<Option<Uuid>> = frontier_query(filter, per_endpoint)
            .build_query_scalar()
            .fetch_optional(&self.pool)
            .await?;
        Ok(found.flatten())
    }

    /// The notifications a key prefix names (`prefix_ids_query`), up to
    /// `cap`.
    pub async fn key_prefix_ids(
        &self,
        prefix: &str,
        filter: &NotificationFilter,
        cap: i64,
    ) -> Result<Vec<Uuid>, StoreError> {
        Ok(prefix_ids_query(filter, prefix, cap)
            .build_query_scalar()
            .fetch_all(&self.pool)
            .await?)
    }

    /// Records that these notifications could not be added to the due index:
    /// the indexer adds them when Redis is back.
    pub async fn mark_needs_index(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        let (low, high) = id_span(ids);
        sqlx::query(
            "UPDATE notifications SET needs_index = true \
             WHERE id = ANY($1) AND id BETWEEN $2 AND $3 AND status = 'pending'",
        )
        .bind(ids)
        .bind(low)
        .bind(high)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

/// Notes the rows an insert returned: their `created_at` and version.
fn record(
    created: &mut HashMap<Uuid, DateTime<Utc>>,
    versions: &mut HashMap<Uuid, i64>,
    returned: Vec<(Uuid, DateTime<Utc>, Option<i64>)>,
) {
    for (id, created_at, version) in returned {
        created.insert(id, created_at);
        if let Some(version) = version {
            versions.insert(id, version);
        }
    }
}

/// Runs the insert for `items` (ordered as `insert_notifications` orders
/// them): new keys, or with `stale` (one id per item) keys taken over;
/// each with its place in its key's order if `places` has it.
async fn insert_rows(
    conn: &mut sqlx::PgConnection,
    items: &[&NewNotification],
    stale: Option<&[Uuid]>,
    endpoint_versions: bool,
    places: &HashMap<Uuid, Ordered>,
) -> Result<Vec<(Uuid, DateTime<Utc>, Option<i64>)>, StoreError> {
    let mut ids = Vec::with_capacity(items.len());
    let mut endpoint_ids = Vec::with_capacity(items.len());
    let mut keys = Vec::with_capacity(items.len());
    let mut event_types = Vec::with_capacity(items.len());
    let mut content_types = Vec::with_capacity(items.len());
    let mut bodies = Vec::with_capacity(items.len());
    let mut headers = Vec::with_capacity(items.len());
    let mut schedules = Vec::with_capacity(items.len());
    let mut schedule_names = Vec::with_capacity(items.len());
    let mut deliver_ats = Vec::with_capacity(items.len());
    let mut next_attempt_ats = Vec::with_capacity(items.len());
    let mut urls = Vec::with_capacity(items.len());
    let mut pulls = Vec::with_capacity(items.len());
    let mut order_keys = Vec::with_capacity(items.len());
    let mut sequences = Vec::with_capacity(items.len());
    let mut behind = Vec::with_capacity(items.len());
    for item in items {
        ids.push(item.id);
        endpoint_ids.push(item.endpoint_id);
        keys.push(item.key.as_deref());
        event_types.push(item.event_type.as_deref());
        content_types.push(item.content_type.as_str());
        bodies.push(item.body.as_slice());
        headers.push(Json(&item.headers));
        // A 2-D array would flatten under UNNEST: each schedule travels as
        // the text of a bigint[] literal.
        schedules.push(pg_array_literal(&item.schedule.delays_ms()));
        schedule_names.push(item.schedule.name());
        deliver_ats.push(item.deliver_at);
        next_attempt_ats.push(item.next_attempt_at);
        urls.push(item.url.as_deref());
        pulls.push(item.pull);
        order_keys.push(item.order_key.as_deref());
        let place = places.get(&item.id);
        sequences.push(place.and_then(|p| p.sequence));
        behind.push(place.and_then(|p| p.behind));
    }
    let statement: &'static str = match (stale.is_some(), endpoint_versions) {
        (false, true) => insert_notifications_sql!(new_keys!(), endpoint_version!()),
        (false, false) => insert_notifications_sql!(new_keys!(), "NULL::bigint"),
        (true, true) => insert_notifications_sql!(stale_keys!(), endpoint_version!()),
        (true, false) => insert_notifications_sql!(stale_keys!(), "NULL::bigint"),
    };
    let mut query = sqlx::query_as(statement)
        .bind(&ids)
        .bind(&endpoint_ids)
        .bind(&keys)
        .bind(&event_types)
        .bind(&content_types)
        .bind(&bodies)
        .bind(&headers)
        .bind(&schedules)
        .bind(&schedule_names)
        .bind(&deliver_ats)
        .bind(&next_attempt_ats)
        .bind(&urls)
        .bind(&pulls)
        .bind(&order_keys)
        .bind(&sequences)
        .bind(&behind);
    if let Some(stale) = stale {
        query = query.bind(stale);
    }
    Ok(query.fetch_all(&mut *conn).await?)
}

/// The notifications the keys of `items` point to, by (endpoint, key).
async fn existing_rows(
    conn: &mut sqlx::PgConnection,
    items: &[&NewNotification],
) -> Result<HashMap<(Uuid, String), Notification>, StoreError> {
    let mut existing = HashMap::new();
    if items.is_empty() {
        return Ok(existing);
    }
    let endpoint_ids: Vec<Uuid> = items.iter().map(|i| i.endpoint_id).collect();
    let keys: Vec<&str> = items
        .iter()
        .map(|i| i.key.as_deref().unwrap_or_default())
        .collect();
    let sql = "SELECT n.* FROM UNNEST($1::uuid[], $2::text[]) AS t(endpoint_id, key) \
         JOIN notification_keys k ON k.key = t.key AND k.endpoint_id = t.endpoint_id \
         JOIN notifications n ON n.id = k.id";
    let rows = sqlx::query_as::<_, Notification>(sql)
        .bind(&endpoint_ids)
        .bind(&keys)
        .fetch_all(&mut *conn)
        .await?;
    for row in rows {
        let key = row.key.clone().unwrap_or_default();
        existing.insert((row.endpoint_id, key), row);
    }
    Ok(existing)
}

/// The key rows of `items` whose notification is gone, by (endpoint, key):
/// the id each points to. Read after `existing_rows` found no notification
/// for them; a key row and its notification are committed together and a
/// deleted notification never comes back, so one gone now stays gone.
async fn stale_keys(
    conn: &mut sqlx::PgConnection,
    items: &[&NewNotification],
) -> Result<HashMap<(Uuid, String), Uuid>, StoreError> {
    let endpoint_ids: Vec<Uuid> = items.iter().map(|i| i.endpoint_id).collect();
    let keys: Vec<&str> = items
        .iter()
        .map(|i| i.key.as_deref().unwrap_or_default())
        .collect();
    let rows: Vec<(Uuid, String, Uuid)> = sqlx::query_as(
        "SELECT k.endpoint_id, k.key, k.id FROM UNNEST($1::uuid[], $2::text[]) AS t(endpoint_id, key) \
         JOIN notification_keys k ON k.key = t.key AND k.endpoint_id = t.endpoint_id \
         WHERE NOT EXISTS (SELECT 1 FROM notifications n WHERE n.id = k.id)",
    )
    .bind(&endpoint_ids)
    .bind(&keys)
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(endpoint_id, key, id)| ((endpoint_id, key), id))
        .collect())
}

/// The `created_after` / `created_before` window: exact on `created_at`,
/// and as an id range (`domain::created`) so the id-ordered indexes start
/// at the window's end. Shared with the events' list.
pub(super) fn push_created(
    query: &mut QueryBuilder<sqlx::Postgres>,
    window: &crate::domain::created::CreatedWindow,
) {
    let (low, high) = window.id_range();
    if let (Some(after), Some(low)) = (window.after, low) {
        query.push(" AND created_at >= ").push_bind(after);
        query.push(" AND id >= ").push_bind(low);
    }
    if let (Some(before), Some(high)) = (window.before, high) {
        query.push(" AND created_at < ").push_bind(before);
        query.push(" AND id < ").push_bind(high);
    }
}
