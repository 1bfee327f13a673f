//! Events on SQLite: inserted with their deliveries in the commit's
//! transaction (a large fan-out's rest after it: `fanout`), read, listed,
//! counted, purged.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, QueryBuilder, Row, Sqlite, SqliteConnection};
use uuid::Uuid;

use super::columns::{self, micros, EVENT_COLUMNS, IN_ID_LIST};
use super::fanout::{insert_rows, store_plans, DeliveryRow, PER_TRANSACTION};
use super::returning::insert_runs;
use super::writes::endpoint_versions;
use super::{store_error, SqliteStore};
use crate::domain::json_value::same_payload;
use crate::domain::status::Status;
use crate::store::events::{
    delivery_endpoints, keep_owned, Event, EventFilter, EventInserted, NewDelivery, NewEvent,
};
use crate::store::notifications::MAX_EXAMINED;
use crate::store::StoreError;

/// A run's multi-row INSERT of events. A key met (in the table, or
/// earlier in the run) writes nothing. With `returning`, it returns the
/// ids of the events it created.
fn insert_run(run: &[NewEvent], created_at: i64, returning: bool) -> QueryBuilder<Sqlite> {
    let mut query = QueryBuilder::<Sqlite>::new(
        "INSERT INTO events (id, owner, event_type, key, content_type, body, deliver_at, \
             deliveries, created_at, order_key) ",
    );
    query.push_values(run, |mut row, event| {
        row.push_bind(event.id)
            .push_bind(event.owner.clone())
            .push_bind(event.event_type.clone())
            .push_bind(event.key.clone())
            .push_bind(event.content_type.clone())
            .push_bind(event.body.clone())
            .push_bind(micros(event.deliver_at))
            .push_bind(event.deliveries.len() as i64)
            .push_bind(created_at)
            .push_bind(event.order_key.clone());
    });
    // The target is `events_key` as the schema writes it (NULL owners
    // share one namespace).
    query.push(" ON CONFLICT (key, ifnull(owner, x'')) WHERE key IS NOT NULL DO NOTHING");
    if returning {
        query.push(" RETURNING id");
    }
    query
}

/// Inserts events and their deliveries: an event whose key exists already
/// for its owner (or came earlier in the batch) writes nothing, not even a
/// delivery, and comes back as `Existing` or `KeyConflict`. With
/// `versions`, also each delivery's endpoint version, by delivery id.
/// Deliveries past the first `PER_TRANSACTION` (ordered ones excepted:
/// those are all written here) are planned, not written:
/// they come back last, for the caller to write after the commit
/// (`fanout::write_out`).
pub(super) async fn insert_events(
    conn: &mut SqliteConnection,
    mut events: Vec<NewEvent>,
    versions: bool,
    now: DateTime<Utc>,
) -> Result<(Vec<EventInserted>, HashMap<Uuid, i64>, Vec<DeliveryRow>), StoreError> {
    if events.is_empty() {
        return Ok(Default::default());
    }
    let endpoints = delivery_endpoints(&events);
    if !endpoints.is_empty() {
        let sql = format!("SELECT id, owner FROM endpoints WHERE id IN {IN_ID_LIST}");
        let owners: HashMap<Uuid, Option<String>> = sqlx::query_as(AssertSqlSafe(sql))
            .bind(columns::id_list(&endpoints))
            .fetch_all(&mut *conn)
            .await
            .map_err(store_error)?
            .into_iter()
            .collect();
        keep_owned(&mut events, &owners);
    }
    let created_at = micros(now);
    let created = insert_runs(
        conn,
        &events,
        |run, returning| insert_run(run, created_at, returning),
        |event| event.key.is_some(),
        |event| event.id,
    )
    .await?;

    // The deliveries of the events stored, each carrying its event's
    // content type and due time; the payload stays on the event. Past
    // `PER_TRANSACTION`, the rest is planned here and written after this
    // transaction (`fanout`).
    // Ordered deliveries are all written here, with their events, whatever
    // their number: each takes its place in its key's order in this
    // transaction, before any later notification of its key can.
    let (mut deliveries, unordered): (Vec<(&NewEvent, &NewDelivery)>, Vec<_>) = events
        .iter()
        .filter(|e| created.contains(&e.id))
        .flat_map(|e| e.deliveries.iter().map(move |d| (e, d)))
        .partition(|(e, d)| d.ordered && e.order_key.is_some());
    let in_first = PER_TRANSACTION.max(deliveries.len());
    deliveries.extend(unordered);
    let (first, rest) = deliveries.split_at(deliveries.len().min(in_first));
    let rows: Vec<DeliveryRow> = first
        .iter()
        .map(|(event, delivery)| DeliveryRow::of(event, delivery, created_at))
        .collect();
    insert_rows(conn, &rows, false, false).await?;
    let in_order = crate::store::ordering::ordered_deliveries(
        events.iter().filter(|e| created.contains(&e.id)),
    );
    let mut places = super::ordering::place_in_order(conn, &in_order, created_at).await?;
    store_plans(conn, rest, created_at).await?;
    let rest: Vec<DeliveryRow> = rest
        .iter()
        .map(|(event, delivery)| DeliveryRow::of(event, delivery, created_at))
        .collect();
    let delivery_versions = if versions {
        let endpoints =
            endpoint_versions(conn, deliveries.iter().map(|(_, d)| d.endpoint_id)).await?;
        deliveries
            .iter()
            .filter_map(|(_, d)| endpoints.get(&d.endpoint_id).map(|v| (d.id, *v)))
            .collect()
    } else {
        HashMap::new()
    };

    // Events not stored met an existing key: read those, in the same
    // transaction, on `events_key`.
    let mut existing: HashMap<(Option<String>, String), Event> = HashMap::new();
    let sql = format!(
        "SELECT {EVENT_COLUMNS}, body FROM events \
         WHERE key = ? AND ifnull(owner, x'') = ifnull(?, x'')"
    );
    for event in events.iter().filter(|e| !created.contains(&e.id)) {
        let Some(key) = &event.key else {
            continue;
        };
        let at = (event.owner.clone(), key.clone());
        if existing.contains_key(&at) {
            continue;
        }
        let row = sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(key)
            .bind(event.owner.as_deref())
            .fetch_optional(&mut *conn)
            .await
            .map_err(store_error)?;
        if let Some(row) = row {
            existing.insert(at, columns::event(&row).map_err(store_error)?);
        }
    }

    let mut results = Vec::with_capacity(events.len());
    for mut event in events {
        if created.contains(&event.id) {
            let mut deliveries = std::mem::take(&mut event.deliveries);
            for delivery in deliveries.iter_mut().filter(|d| d.ordered) {
                delivery.place = places.remove(&delivery.id).unwrap_or_default();
            }
            let headers = std::mem::take(&mut event.headers);
            let count = deliveries.len();
            let (pull, push): (Vec<_>, Vec<_>) = deliveries.into_iter().partition(|d| d.pull);
            results.push(EventInserted::Created {
                push,
                headers,
                pulled: pull.iter().map(|d| d.endpoint_id).collect(),
                event: event.into_row(now, count),
            });
            continue;
        }
        let found = event
            .key
            .as_ref()
            .and_then(|key| existing.get(&(event.owner.clone(), key.clone())));
        match found {
            Some(row)
                if row.event_type == event.event_type
                    && same_payload(
                        (&row.content_type, &row.body),
                        (&event.content_type, &event.body),
                    ) =>
            {
                results.push(EventInserted::Existing(row.clone()))
            }
            Some(row) => results.push(EventInserted::KeyConflict(row.clone())),
            None => return Err(StoreError::Conflict("events_key".into())),
        }
    }
    Ok((results, delivery_versions, rest))
}

impl SqliteStore {
    pub async fn get_event(&self, id: Uuid) -> Result<Option<Event>, StoreError> {
        let sql = format!("SELECT {EVENT_COLUMNS}, body FROM events WHERE id = ?");
        sqlx::query(AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(&self.reader)
            .await
            .map_err(store_error)?
            .map(|row| columns::event(&row).map_err(store_error))
            .transpose()
    }

    /// How many of the event's deliveries are in each status.
    pub async fn event_counts(&self, id: Uuid) -> Result<Vec<(Status, i64)>, StoreError> {
        let rows = sqlx::query(
            "SELECT status, count(*) AS n FROM notifications WHERE event_id = ? GROUP BY status",
        )
        .bind(id)
        .fetch_all(&self.reader)
        .await
        .map_err(store_error)?;
        rows.iter()
            .map(|row| Ok((columns::status(row, "status")?, row.try_get("n")?)))
            .collect::<Result<_, sqlx::Error>>()
            .map_err(store_error)
    }

    /// Where a bounded page stops reading (`EventFilter::bounded`): the
    /// lowest id of the scope's newest `MAX_EXAMINED` events below the
    /// cursor, on its index's ids alone.
    pub async fn events_frontier(&self, filter: &EventFilter) -> Result<Option<Uuid>, StoreError> {
        let mut query = QueryBuilder::<Sqlite>::new("SELECT id FROM events WHERE 1");
        event_scope(&mut query, filter);
        let (low, high) = filter.created.id_range();
        if let (Some(_), Some(low)) = (filter.created.after, low) {
            query.push(" AND id >= ").push_bind(low);
        }
        if let (Some(_), Some(high)) = (filter.created.before, high) {
            query.push(" AND id < ").push_bind(high);
        }
        if let Some(before) = filter.before {
            query.push(" AND id < ").push_bind(before);
        }
        query
            .push(" ORDER BY id DESC LIMIT 1 OFFSET ")
            .push_bind(MAX_EXAMINED - 1);
        query
            .build_query_scalar()
            .fetch_optional(&self.reader)
            .await
            .map_err(store_error)
    }

    /// Newest first, filtered; payloads left out. Bounded
    /// (`EventFilter::bounded`), the type is stated with a unary `+`: the
    /// scope's index (the owner's, or the primary key) is read from the
    /// frontier, the type checked on those rows.
    pub async fn list_events(&self, filter: &EventFilter) -> Result<Vec<Event>, StoreError> {
        let plus = if filter.bounded() { "+" } else { "" };
        let mut query = QueryBuilder::<Sqlite>::new(format!(
            "SELECT {EVENT_COLUMNS}, x'' AS body FROM events WHERE 1"
        ));
        event_scope(&mut query, filter);
        if let Some(event_type) = &filter.event_type {
            query
                .push(format_args!(" AND {plus}event_type = "))
                .push_bind(event_type.clone());
        }
        if let Some(key) = &filter.key {
            query.push(" AND key = ").push_bind(key.clone());
        }
        super::notifications::push_created(&mut query, &filter.created);
        if let Some(before) = filter.before {
            query.push(" AND id < ").push_bind(before);
        }
        if let Some(from) = filter.from {
            query.push(" AND id >= ").push_bind(from);
        }
        query
            .push(" ORDER BY id DESC LIMIT ")
            .push_bind(filter.limit);
        let rows = query
            .build()
            .fetch_all(&self.reader)
            .await
            .map_err(store_error)?;
        rows.iter()
            .map(columns::event)
            .collect::<Result<_, _>>()
            .map_err(store_error)
    }

    /// Deletes the events created before `before` whose deliveries are all
    /// gone (retention deleted them), among the next `limit` events after
    /// `after`. Returns how many it deleted and where to go on from (`None`
    /// once the walk is done); events kept are passed over once per walk.
    /// The walk's end is `domain::retention::events_end`.
    pub async fn purge_events(
        &self,
        before: DateTime<Utc>,
        after: Option<Uuid>,
        limit: i64,
    ) -> Result<(u64, Option<Uuid>), StoreError> {
        crate::store::housekeeping::purge_events(self, before, after, limit).await
    }
}

/// On the writer, as every delete: a page read there sees the deletes of
/// the notification walk before it.
#[async_trait::async_trait]
impl crate::store::housekeeping::EventRetention for SqliteStore {
    async fn event_page(
        &self,
        after: Uuid,
        end: Uuid,
        limit: i64,
    ) -> Result<Vec<(Uuid, bool)>, StoreError> {
        sqlx::query_as(
            "SELECT e.id, EXISTS (SELECT 1 FROM notifications n WHERE n.event_id = e.id) \
             FROM events e WHERE e.id > ? AND e.id < ? ORDER BY e.id LIMIT ?",
        )
        .bind(after)
        .bind(end)
        .bind(limit)
        .fetch_all(&self.writer)
        .await
        .map_err(store_error)
    }

    async fn delete_unused_events(&self, ids: &[Uuid]) -> Result<u64, StoreError> {
        let sql = format!(
            "DELETE FROM events WHERE id IN {} \
             AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.event_id = events.id)",
            columns::IN_ID_LIST
        );
        Ok(sqlx::query(AssertSqlSafe(sql))
            .bind(columns::id_list(ids))
            .execute(&self.writer)
            .await
            .map_err(store_error)?
            .rows_affected())
    }
}

/// The events' scope: an owner's, those without one, or all.
fn event_scope(query: &mut QueryBuilder<Sqlite>, filter: &EventFilter) {
    match &filter.owner {
        Some(Some(owner)) => {
            query.push(" AND owner = ").push_bind(owner.clone());
        }
        Some(None) => {
            query.push(" AND owner IS NULL");
        }
        None => {}
    }
}
