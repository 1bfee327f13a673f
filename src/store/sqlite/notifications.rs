//! The API's reads of notifications on SQLite: one, a filtered page, the
//! URL it names, its attempts.

use sqlx::{AssertSqlSafe, QueryBuilder, Sqlite};
use uuid::Uuid;

use super::columns::{self, NOTIFICATION_BODY, NOTIFICATION_COLUMNS};
use super::{store_error, SqliteStore};
use crate::domain::status::Status;
use crate::store::attempts::Attempt;
use crate::store::notifications::{ListOrder, Notification, NotificationFilter};
use crate::store::StoreError;

impl SqliteStore {
    /// `ReadStore::recent_event_types`, as PostgreSQL's.
    pub async fn recent_event_types(
        &self,
        endpoint_id: Uuid,
        owner: Option<&str>,
        since: Uuid,
        per_source: i64,
    ) -> Result<Vec<String>, StoreError> {
        sqlx::query_scalar(RECENT_EVENT_TYPES)
            .bind(endpoint_id)
            .bind(owner)
            .bind(since)
            .bind(per_source)
            .fetch_all(&self.reader)
            .await
            .map_err(store_error)
    }

    pub async fn get_notification(&self, id: Uuid) -> Result<Option<Notification>, StoreError> {
        let sql = format!(
            "SELECT {NOTIFICATION_COLUMNS}, {NOTIFICATION_BODY} FROM notifications WHERE id = ?"
        );
        let read_at = self.clock.now();
        sqlx::query(AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(&self.reader)
            .await
            .map_err(store_error)?
            .map(|row| columns::notification(&row, Some(read_at)).map_err(store_error))
            .transpose()
    }

    /// Newest first, filtered; payloads left out.
    pub async fn list_notifications(
        &self,
        filter: &NotificationFilter,
    ) -> Result<Vec<Notification>, StoreError> {
        self.notification_rows(list_query(filter)).await
    }

    /// The notifications `query` reads (`NOTIFICATION_COLUMNS`, a body),
    /// as of now.
    pub(super) async fn notification_rows(
        &self,
        mut query: QueryBuilder<Sqlite>,
    ) -> Result<Vec<Notification>, StoreError> {
        let read_at = self.clock.now();
        let rows = query
            .build()
            .fetch_all(&self.reader)
            .await
            .map_err(store_error)?;
        rows.iter()
            .map(|row| columns::notification(row, Some(read_at)))
            .collect::<Result<_, _>>()
            .map_err(store_error)
    }

    /// The notifications a key prefix names (`prefix_ids_query`), up to
    /// `cap`.
    pub async fn key_prefix_ids(
        &self,
        prefix: &str,
        filter: &NotificationFilter,
        cap: i64,
    ) -> Result<Vec<Uuid>, StoreError> {
        prefix_ids_query(filter, prefix, cap)
            .build_query_scalar()
            .fetch_all(&self.reader)
            .await
            .map_err(store_error)
    }

    /// Where a bounded page stops reading (`frontier_query`).
    pub async fn notifications_frontier(
        &self,
        filter: &NotificationFilter,
    ) -> Result<Option<Uuid>, StoreError> {
        let endpoints = match (&filter.owner, filter.endpoint_id) {
            (Some(owner), None) => sqlx::query_scalar(
                "SELECT count(*) FROM endpoints \
                 WHERE owner = ? AND deleted_at IS NULL AND managed = 0",
            )
            .bind(owner)
            .fetch_one(&self.reader)
            .await
            .map_err(store_error)?,
            _ => 1,
        };
        let per_endpoint = filter.examined_per_endpoint(endpoints);
        let found: Option<Option<Uuid>> = frontier_query(filter, per_endpoint)
            .build_query_scalar()
            .fetch_optional(&self.reader)
            .await
            .map_err(store_error)?;
        Ok(found.flatten())
    }

    /// A notification's attempts in order, after attempt number `after`:
    /// its rows of `attempts` and, when it was delivered at its first
    /// attempt, that attempt, kept in the notification's own row (listed
    /// instead of a row 1, should one exist, as PostgreSQL does).
    pub async fn list_attempts(
        &self,
        notification_id: Uuid,
        after: i32,
        limit: i64,
    ) -> Result<Vec<Attempt>, StoreError> {
        let rows = sqlx::query(
            "WITH kept AS ( \
                 SELECT id, last_attempt_at, first_attempt_ms, last_status_code, \
                     first_attempt_body \
                 FROM notifications WHERE id = ?1 AND first_attempt_ms IS NOT NULL \
             ) \
             SELECT notification_id, number, started_at, duration_ms, status_code, \
                 response_body, error_code, error_message, outcome, sent_headers, \
                 response_headers, retried \
             FROM attempts WHERE notification_id = ?1 AND number > ?2 \
               AND NOT (number = 1 AND EXISTS (SELECT 1 FROM kept)) \
             UNION ALL \
             SELECT id, 1, last_attempt_at, first_attempt_ms, last_status_code, \
                 first_attempt_body, NULL, NULL, 'succeeded', NULL, NULL, 0 \
             FROM kept WHERE ?2 < 1 \
             ORDER BY number LIMIT ?3",
        )
        .bind(notification_id)
        .bind(after)
        .bind(limit)
        .fetch_all(&self.reader)
        .await
        .map_err(store_error)?;
        rows.iter()
            .map(columns::attempt)
            .collect::<Result<_, _>>()
            .map_err(store_error)
    }
}

/// `list_notifications`' statement. A bounded page
/// (`NotificationFilter::bounded`) states `status` and `event_type` with
/// a unary `+`, which keeps SQLite from reading an index of theirs: it
/// reads the scope's index (an endpoint's, each of an owner's endpoints',
/// or the primary key) between the frontier and the cursor, and checks
/// them on those rows only.
pub(super) fn list_query(filter: &NotificationFilter) -> QueryBuilder<Sqlite> {
    let plus = if filter.bounded() { "+" } else { "" };
    let mut query = QueryBuilder::<Sqlite>::new(format!(
        "SELECT {NOTIFICATION_COLUMNS}, x'' AS body FROM notifications WHERE 1"
    ));
    if let Some(endpoint_id) = filter.endpoint_id {
        query.push(" AND endpoint_id = ").push_bind(endpoint_id);
    }
    if let Some(status) = filter.status {
        // Literals, not parameters: SQLite uses a partial index only
        // when the query states its terms as written (the schema's
        // header). `notifications_unsettled_newest` is for failed and
        // cancelled rows; its own term is stated for them.
        query.push(format_args!(" AND {plus}status = '{}'", status.as_str()));
        if matches!(status, Status::Failed | Status::Cancelled) && plus.is_empty() {
            query.push(" AND status IN ('failed', 'cancelled')");
        }
    }
    if let Some(key) = &filter.key {
        // An event's deliveries have their key on the event row only.
        query
            .push(" AND (key = ")
            .push_bind(key.clone())
            .push(
                " OR id IN (SELECT d.id FROM events e JOIN notifications d \
                 ON d.event_id = e.id WHERE e.key = ",
            )
            .push_bind(key.clone())
            .push("))");
    }
    if let Some(ids) = &filter.ids {
        // `columns::IN_ID_LIST`, its parameter bound here.
        query
            .push(" AND id IN (SELECT unhex(value) FROM json_each(")
            .push_bind(columns::id_list(ids))
            .push("))");
    }
    if let Some(prefix) = filter.checked_prefix() {
        // On the rows a bounded page reads: a delivery's key is its
        // event's, looked up by id (`coalesce` reads it only then).
        query
            .push(
                " AND substr(coalesce(+key, (SELECT e.key FROM events e \
                 WHERE e.id = notifications.event_id)), 1, length(",
            )
            .push_bind(prefix.to_string())
            .push(")) = ")
            .push_bind(prefix.to_string());
    }
    if let Some(after) = filter.completed_after {
        query
            .push(" AND +completed_at >= ")
            .push_bind(columns::micros(after));
    }
    if let Some(event_type) = &filter.event_type {
        // An event's deliveries have their type on the event row only.
        if plus.is_empty() {
            query
                .push(" AND (event_type = ")
                .push_bind(event_type.clone())
                .push(" OR event_id IN (SELECT e.id FROM events e WHERE e.event_type = ")
                .push_bind(event_type.clone())
                .push("))");
        } else {
            // Bounded: its event looked up by id for each row read, not
            // the list of every event of the type.
            query
                .push(
                    " AND CASE WHEN +event_id IS NULL THEN +event_type \
                     ELSE (SELECT e.event_type FROM events e WHERE e.id = notifications.event_id) \
                     END = ",
                )
                .push_bind(event_type.clone());
        }
    }
    if let Some(event_id) = filter.event_id {
        query.push(" AND event_id = ").push_bind(event_id);
    }
    if let Some(owner) = &filter.owner {
        query
            .push(" AND endpoint_id IN (SELECT e.id FROM endpoints e WHERE e.owner = ")
            .push_bind(owner.clone())
            .push(" AND e.deleted_at IS NULL AND e.managed = 0)");
    }
    push_created(&mut query, &filter.created);
    let order = filter.order;
    if let Some(cursor) = filter.cursor {
        query
            .push(format_args!(" AND id {} ", order.past()))
            .push_bind(cursor);
    }
    if let Some(from) = filter.from {
        query
            .push(format_args!(" AND id {} ", order.up_to()))
            .push_bind(from);
    }
    query
        .push(format_args!(" ORDER BY id {} LIMIT ", order.direction()))
        .push_bind(filter.limit);
    query
}

/// `key_prefix_ids`' statement: up to `cap` ids of the notifications
/// whose key, or whose event's key, starts with `prefix` (the range
/// `[prefix, prefix_end)` of `notifications_key` and `events_key`), in the
/// filter's endpoint and creation window, past its cursor.
pub(super) fn prefix_ids_query(
    filter: &NotificationFilter,
    prefix: &str,
    cap: i64,
) -> QueryBuilder<Sqlite> {
    let mut query =
        QueryBuilder::<Sqlite>::new("SELECT id FROM (SELECT n.id FROM notifications n WHERE 1");
    push_prefix(&mut query, "n", prefix);
    push_scope(&mut query, "n", filter);
    query.push(
        " UNION ALL SELECT d.id FROM events e JOIN notifications d ON d.event_id = e.id WHERE 1",
    );
    push_prefix(&mut query, "e", prefix);
    push_scope(&mut query, "d", filter);
    query.push(") LIMIT ").push_bind(cap);
    query
}

/// `AND <rows>.…`: the filter's endpoint, its creation window as ids, and
/// its cursor, with a unary `+`: the key's range is what the statement
/// reads, never an endpoint's every row.
fn push_scope(query: &mut QueryBuilder<Sqlite>, rows: &str, filter: &NotificationFilter) {
    if let Some(endpoint_id) = filter.endpoint_id {
        query
            .push(format_args!(" AND +{rows}.endpoint_id = "))
            .push_bind(endpoint_id);
    }
    for (op, bound) in filter.id_terms() {
        query
            .push(format_args!(" AND +{rows}.id {op} "))
            .push_bind(bound);
    }
}

/// `AND <keyed>.key` in the prefix's range (`BINARY`, byte order).
fn push_prefix(query: &mut QueryBuilder<Sqlite>, keyed: &str, prefix: &str) {
    query
        .push(format_args!(" AND {keyed}.key >= "))
        .push_bind(prefix.to_string());
    if let Some(end) = crate::domain::fields::prefix_end(prefix) {
        query
            .push(format_args!(" AND {keyed}.key < "))
            .push_bind(end);
    }
}

/// `notifications_frontier`'s statement for a scope of `per_endpoint` rows
/// an endpoint: the last id of the scope's first rows past the cursor in
/// the list's order (newest first: the lowest of the newest), in the
/// creation window, read on the ids of its index alone; for an owner, the
/// first such id of its endpoints in that order (every owner row before
/// it is among those read). NULL, or no row, when the scope has fewer.
pub(super) fn frontier_query(
    filter: &NotificationFilter,
    per_endpoint: i64,
) -> QueryBuilder<Sqlite> {
    let owner = filter
        .owner
        .as_ref()
        .filter(|_| filter.endpoint_id.is_none());
    let order = filter.order;
    let first = match order {
        ListOrder::NewestFirst => "max",
        ListOrder::OldestFirst => "min",
    };
    let mut query = QueryBuilder::<Sqlite>::new(match owner {
        Some(_) => {
            format!("SELECT {first}((SELECT n.id FROM notifications n WHERE n.endpoint_id = o.id")
        }
        None => "SELECT id FROM notifications n WHERE 1".to_string(),
    });
    if let Some(endpoint_id) = filter.endpoint_id {
        query.push(" AND n.endpoint_id = ").push_bind(endpoint_id);
    }
    let (low, high) = filter.created.id_range();
    if let (Some(_), Some(low)) = (filter.created.after, low) {
        query.push(" AND n.id >= ").push_bind(low);
    }
    if let (Some(_), Some(high)) = (filter.created.before, high) {
        query.push(" AND n.id < ").push_bind(high);
    }
    if let Some(cursor) = filter.cursor {
        query
            .push(format_args!(" AND n.id {} ", order.past()))
            .push_bind(cursor);
    }
    query
        .push(format_args!(
            " ORDER BY n.id {} LIMIT 1 OFFSET ",
            order.direction()
        ))
        .push_bind(per_endpoint - 1);
    if let Some(owner) = owner {
        query
            .push(")) FROM endpoints o WHERE o.owner = ")
            .push_bind(owner.clone())
            .push(" AND o.deleted_at IS NULL AND o.managed = 0");
    }
    query
}

/// The `created_after` / `created_before` window: exact on `created_at`,
/// and as an id range (`domain::created`) so the id-ordered indexes start
/// at the window's end. Shared with the events' list.
pub(super) fn push_created(
    query: &mut QueryBuilder<Sqlite>,
    window: &crate::domain::created::CreatedWindow,
) {
    let (low, high) = window.id_range();
    if let (Some(after), Some(low)) = (window.after, low) {
        query
            .push(" AND created_at >= ")
            .push_bind(columns::micros(after));
        query.push(" AND id >= ").push_bind(low);
    }
    if let (Some(before), Some(high)) = (window.before, high) {
        query
            .push(" AND created_at < ")
            .push_bind(columns::micros(before));
        query.push(" AND id < ").push_bind(high);
    }
}

/// `recent_event_types`: `IS` matches a NULL owner too.
pub(super) const RECENT_EVENT_TYPES: &str = "SELECT DISTINCT t FROM ( \
     SELECT * FROM (SELECT event_type AS t FROM events \
      WHERE owner IS ?2 AND id > ?3 ORDER BY id DESC LIMIT ?4) \
     UNION ALL \
     SELECT * FROM (SELECT event_type FROM notifications \
      WHERE endpoint_id = ?1 AND id > ?3 ORDER BY id DESC LIMIT ?4)) \
     WHERE t IS NOT NULL";
