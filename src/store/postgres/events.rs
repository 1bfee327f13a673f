//! Events and their fan-out in PostgreSQL: inserted with their deliveries,
//! listed, counted, cancelled, purged.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::AssertSqlSafe;
use uuid::Uuid;

use super::pg_array_literal;
use super::PgStore;
use crate::domain::json_value::same_event;
use crate::domain::status::Status;
use crate::store::events::drop_strays;
use crate::store::events::Event;
use crate::store::events::EventFilter;
use crate::store::events::EventInserted;
use crate::store::events::NewEvent;
use crate::store::events::Subscriber;
use crate::store::ordering;
use crate::store::StoreError;

const SUMMARY_COLUMNS: &str =
    "id, owner, event_type, key, content_type, deliver_at, deliveries, created_at, order_key";
/// The insert of a group commit's events and their deliveries, returning
/// each created event's id and `created_at`; `$fanned_returning` and
/// `$more` may add rows of (delivery id, NULL, its endpoint's version).
/// A delivery whose endpoint is no longer its event's owner's is not
/// written and comes back as (its id, NULL, `STRAY`): the fan-out may have
/// read its subscribers before the endpoint moved (another process's, up
/// to `SUBSCRIBERS_TTL` old), and an event never reaches another owner's
/// endpoint.
macro_rules! insert_events_sql {
    ($fanned_returning:literal, $more:literal) => {
        concat!(
            "WITH stored AS ( \
                 INSERT INTO events (id, owner, event_type, key, content_type, body, deliver_at, \
                     deliveries, order_key) \
                 SELECT * FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], \
                     $6::bytea[], $7::timestamptz[], $8::int[], $18::text[]) \
                 ON CONFLICT (key, owner) WHERE key IS NOT NULL DO NOTHING \
                 RETURNING id, created_at, content_type, deliver_at, order_key \
             ), schedules AS MATERIALIZED ( \
                 SELECT position, literal::bigint[] AS delays, name \
                 FROM UNNEST($13::text[], $14::text[]) WITH ORDINALITY AS s(literal, name, position) \
             ), strays AS MATERIALIZED ( \
                 SELECT d.id FROM UNNEST($9::uuid[], $10::uuid[], $19::text[]) AS d(id, endpoint_id, owner) \
                 WHERE (SELECT ep.owner FROM endpoints ep WHERE ep.id = d.endpoint_id) \
                     IS DISTINCT FROM d.owner \
             ), fanned AS ( \
                 INSERT INTO notifications (id, endpoint_id, event_id, content_type, body, \
                     headers, schedule_ms, schedule_name, deliver_at, next_attempt_at, pull, order_key) \
                 SELECT d.id, d.endpoint_id, d.event_id, s.content_type, ''::bytea, \
                     COALESCE(d.headers, '{}'::jsonb), sc.delays, sc.name, s.deliver_at, d.next_attempt_at, \
                     d.pull, s.order_key \
                 FROM UNNEST($9::uuid[], $10::uuid[], $11::uuid[], $12::jsonb[], $15::int[], \
                     $16::timestamptz[], $17::bool[]) \
                     AS d(id, endpoint_id, event_id, headers, schedule, next_attempt_at, pull) \
                 JOIN stored s ON s.id = d.event_id \
                 JOIN schedules sc ON sc.position = d.schedule \
                 WHERE d.id NOT IN (SELECT id FROM strays) ",
            $fanned_returning,
            " ) SELECT id, created_at, NULL::bigint FROM stored \
             UNION ALL SELECT id, NULL, -1 FROM strays ",
            $more
        )
    };
}
/// What the insert returns for a delivery it did not write (no endpoint
/// version is negative).
const STRAY: i64 = -1;

impl PgStore {
    /// Inserts events and their deliveries in one statement: an event whose
    /// key exists already for its owner writes nothing, not even a
    /// delivery. Those come back as `Existing` or `KeyConflict`. With
    /// `endpoint_versions`, also each delivery's endpoint version, by
    /// delivery id.
    pub(super) async fn insert_events(
        &self,
        conn: &mut sqlx::PgConnection,
        mut events: Vec<NewEvent>,
        endpoint_versions: bool,
    ) -> Result<(Vec<EventInserted>, HashMap<Uuid, i64>), StoreError> {
        if events.is_empty() {
            return Ok(Default::default());
        }
        let rows: usize = events.iter().map(|e| e.deliveries.len()).sum();
        let (mut ids, mut owners, mut types, mut keys) = (vec![], vec![], vec![], vec![]);
        let (mut content_types, mut bodies, mut deliver_ats, mut counts) =
            (vec![], vec![], vec![], vec![]);
        let mut order_keys = Vec::with_capacity(events.len());
        let mut d_ids = Vec::with_capacity(rows);
        let mut d_endpoints = Vec::with_capacity(rows);
        let mut d_events = Vec::with_capacity(rows);
        let mut d_headers = Vec::with_capacity(rows);
        let mut d_schedules: Vec<i32> = Vec::with_capacity(rows);
        let mut d_next = Vec::with_capacity(rows);
        let mut d_pull = Vec::with_capacity(rows);
        // Each delivery's event's owner, which its endpoint must still have
        // (a probe by primary key each, as the foreign key's check is).
        let mut d_owners = Vec::with_capacity(rows);
        // Schedules repeat across an owner's endpoints: each distinct one
        // travels (and is parsed by PostgreSQL) once per commit, and rows
        // refer to it by its 1-based position.
        let mut schedules: HashMap<(Vec<i64>, Option<&str>), i32> = HashMap::new();
        let (mut schedule_literals, mut schedule_names) = (Vec::new(), Vec::new());
        // Events go in ordered by (owner, key), for the reason
        // `insert_notifications` gives: no two commits wait on each other's
        // keys in a cycle.
        let mut ordered: Vec<&NewEvent> = events.iter().collect();
        if events.iter().any(|event| event.key.is_some()) {
            ordered.sort_by(|a, b| {
                (a.owner.as_deref(), a.key.as_deref()).cmp(&(b.owner.as_deref(), b.key.as_deref()))
            });
        }
        for event in ordered {
            ids.push(event.id);
            owners.push(event.owner.as_deref());
            types.push(event.event_type.as_str());
            keys.push(event.key.as_deref());
            content_types.push(event.content_type.as_str());
            bodies.push(event.body.as_slice());
            deliver_ats.push(event.deliver_at);
            counts.push(event.deliveries.len() as i32);
            order_keys.push(event.order_key.as_deref());
            for delivery in &event.deliveries {
                d_ids.push(delivery.id);
                d_endpoints.push(delivery.endpoint_id);
                d_events.push(event.id);
                // A delivery's own headers (the event's, sealed for it) or
                // the event's; without custom headers (the common case) the
                // column default applies: nothing to parse.
                let headers = delivery.headers.as_ref().unwrap_or(&event.headers);
                d_headers.push((!headers.is_empty()).then_some(Json(headers)));
                let key = (delivery.schedule.delays_ms(), delivery.schedule.name());
                let next = schedules.len() as i32 + 1;
                let position = *schedules.entry(key).or_insert_with_key(|(delays, name)| {
                    schedule_literals.push(pg_array_literal(delays));
                    schedule_names.push(*name);
                    next
                });
                d_schedules.push(position);
                d_next.push(delivery.next_attempt_at);
                d_pull.push(delivery.pull);
                d_owners.push(event.owner.as_deref());
            }
        }
        // With `endpoint_versions`, each delivery's endpoint version comes
        // back too (as for single notifications: the committer hands them
        // to this process's dispatcher), in rows of their own.
        let statement = if endpoint_versions {
            insert_events_sql!(
                "RETURNING id, (SELECT ep.version FROM endpoints ep \
                     WHERE ep.id = notifications.endpoint_id) AS version",
                "UNION ALL SELECT id, NULL, version FROM fanned"
            )
        } else {
            insert_events_sql!("", "")
        };
        let returned: Vec<(Uuid, Option<DateTime<Utc>>, Option<i64>)> = sqlx::query_as(statement)
            .bind(&ids)
            .bind(&owners)
            .bind(&types)
            .bind(&keys)
            .bind(&content_types)
            .bind(&bodies)
            .bind(&deliver_ats)
            .bind(&counts)
            .bind(&d_ids)
            .bind(&d_endpoints)
            .bind(&d_events)
            .bind(&d_headers)
            .bind(&schedule_literals)
            .bind(&schedule_names)
            .bind(&d_schedules)
            .bind(&d_next)
            .bind(&d_pull)
            .bind(&order_keys)
            .bind(&d_owners)
            .fetch_all(&mut *conn)
            .await?;
        let mut created = HashMap::new();
        let mut versions = HashMap::new();
        let mut strays = HashSet::new();
        for (id, created_at, version) in returned {
            if version == Some(STRAY) {
                strays.insert(id);
                continue;
            }
            if let Some(created_at) = created_at {
                created.insert(id, created_at);
            }
            if let Some(version) = version {
                versions.insert(id, version);
            }
        }

        // Deliveries to an endpoint that is no longer their event's owner's
        // were not written (`strays`): their events count what was.
        if !strays.is_empty() {
            let (lost, by): (Vec<Uuid>, Vec<i32>) = drop_strays(&mut events, &strays)
                .into_iter()
                .filter(|(event, _)| created.contains_key(event))
                .unzip();
            sqlx::query(
                "UPDATE events e SET deliveries = e.deliveries - d.n \
                 FROM UNNEST($1::uuid[], $2::int[]) AS d(id, n) WHERE e.id = d.id",
            )
            .bind(&lost)
            .bind(&by)
            .execute(&mut *conn)
            .await?;
        }

        // Events not stored met an existing key: read those events in the
        // same transaction.
        let conflicting: Vec<&NewEvent> = events
            .iter()
            .filter(|e| !created.contains_key(&e.id))
            .collect();
        let mut existing: HashMap<(Option<String>, String), Event> = HashMap::new();
        if !conflicting.is_empty() {
            let keys: Vec<&str> = conflicting
                .iter()
                .map(|e| e.key.as_deref().unwrap_or_default())
                .collect();
            let owners: Vec<Option<&str>> =
                conflicting.iter().map(|e| e.owner.as_deref()).collect();
            let rows = sqlx::query_as::<_, Event>(
                "SELECT e.id, e.owner, e.event_type, e.key, e.content_type, e.body, e.deliver_at, \
                     e.deliveries, e.created_at, e.order_key \
                 FROM events e JOIN UNNEST($1::text[], $2::text[]) AS t(key, owner) \
                 ON e.key = t.key AND e.owner IS NOT DISTINCT FROM t.owner",
            )
            .bind(&keys)
            .bind(&owners)
            .fetch_all(&mut *conn)
            .await?;
            for row in rows {
                let key = row.key.clone().unwrap_or_default();
                existing.insert((row.owner.clone(), key), row);
            }
        }

        // The ordered deliveries of the events stored, in commit order.
        let in_order = ordering::ordered_deliveries(
            events
                .iter()
                .filter(|event| created.contains_key(&event.id)),
        );
        let mut places = super::ordering::place_in_order(conn, &in_order, self.clock.now()).await?;

        let mut results = Vec::with_capacity(events.len());
        for mut event in events {
            if let Some(created_at) = created.get(&event.id) {
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
                    event: event.into_row(*created_at, count),
                });
                continue;
            }
            let found = event
                .key
                .as_ref()
                .and_then(|key| existing.get(&(event.owner.clone(), key.clone())));
            match found {
                Some(row)
                    if same_event(
                        (&row.event_type, &row.content_type, &row.body),
                        (&event.event_type, &event.content_type, &event.body),
                    ) =>
                {
                    results.push(EventInserted::Existing(row.clone()))
                }
                Some(row) => results.push(EventInserted::KeyConflict(row.clone())),
                None => return Err(StoreError::Conflict("events_key".into())),
            }
        }
        Ok((results, versions))
    }

    /// The live, enabled endpoints of these owners (`None`: endpoints
    /// without an owner), in id order: the candidates of a fan-out.
    pub async fn subscribers(
        &self,
        owners: &[Option<String>],
    ) -> Result<Vec<Subscriber>, StoreError> {
        let named: Vec<&str> = owners.iter().flatten().map(String::as_str).collect();
        let unowned = owners.iter().any(Option::is_none);
        Ok(sqlx::query_as(
            "SELECT id, owner, event_types, filter, schedule_ms, schedule_name, delivery, ordering \
             FROM endpoints \
             WHERE (owner = ANY($1) OR ($2 AND owner IS NULL)) \
               AND deleted_at IS NULL AND NOT disabled AND NOT managed \
             ORDER BY owner, id",
        )
        .bind(&named)
        .bind(unowned)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn get_event(&self, id: Uuid) -> Result<Option<Event>, StoreError> {
        // Constants only (`AssertSqlSafe`); the id travels as a bind.
        Ok(sqlx::query_as(AssertSqlSafe(format!(
            "SELECT {SUMMARY_COLUMNS}, body FROM events WHERE id = $1"
        )))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// How many of the event's deliveries are in each status.
    pub async fn event_counts(&self, id: Uuid) -> Result<Vec<(Status, i64)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT status, count(*) FROM notifications WHERE event_id = $1 GROUP BY status",
        )
        .bind(id)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Cancels the event's pending deliveries; `None` when there is no such
    /// event.
    pub async fn cancel_event(&self, id: Uuid) -> Result<Option<Vec<Uuid>>, StoreError> {
        let exists: Option<i32> = sqlx::query_scalar("SELECT 1 FROM events WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        if exists.is_none() {
            return Ok(None);
        }
        Ok(Some(
            super::cancel::cancel_pending_now(
                &self.pool,
                crate::store::cancel::Pending::Event(id),
                self.clock.now(),
            )
            .await?,
        ))
    }

    /// Deletes the events created before `before` whose deliveries are all
    /// gone (retention deleted them), among the next `limit` events after
    /// `after`. Returns how many it deleted and where to go on from (`None`
    /// once the walk is done). Events kept (a delivery still pending, say
    /// for a disabled endpoint) are passed over once per walk, not once per
    /// batch, as `purge_completed` does. The walk's end is
    /// `domain::retention::events_end`; the walk is
    /// `store::housekeeping::purge_events`. `NOT EXISTS` a delivery in the
    /// delete is not a choice but a reference kept (a delivery's body is
    /// its event's), tested where it is deleted so a delivery cannot be
    /// orphaned.
    pub async fn purge_events(
        &self,
        before: DateTime<Utc>,
        after: Option<Uuid>,
        limit: i64,
    ) -> Result<(u64, Option<Uuid>), StoreError> {
        crate::store::housekeeping::purge_events(self, before, after, limit).await
    }

    /// Where a bounded page stops reading (`list_queries::events_frontier`).
    pub async fn events_frontier(&self, filter: &EventFilter) -> Result<Option<Uuid>, StoreError> {
        Ok(super::list_queries::events_frontier(filter)
            .build_query_scalar()
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Newest first, filtered; payloads left out (`list_queries::events`).
    pub async fn list_events(&self, filter: &EventFilter) -> Result<Vec<Event>, StoreError> {
        let mut query = super::list_queries::events(filter, SUMMARY_COLUMNS);
        Ok(query
            .build_query_as::<Event>()
            .fetch_all(&self.pool)
            .await?)
    }
}

#[async_trait::async_trait]
impl crate::store::housekeeping::EventRetention for PgStore {
    async fn event_page(
        &self,
        after: Uuid,
        end: Uuid,
        limit: i64,
    ) -> Result<Vec<(Uuid, bool)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT e.id, EXISTS (SELECT 1 FROM notifications n WHERE n.event_id = e.id) \
             FROM events e WHERE e.id > $3 AND e.id < $1 ORDER BY e.id LIMIT $2",
        )
        .bind(end)
        .bind(limit)
        .bind(after)
        .fetch_all(&self.pool)
        .await?)
    }

    async fn delete_unused_events(&self, ids: &[Uuid]) -> Result<u64, StoreError> {
        Ok(sqlx::query(
            "DELETE FROM events e WHERE e.id = ANY($1) \
             AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.event_id = e.id)",
        )
        .bind(ids)
        .execute(&self.pool)
        .await?
        .rows_affected())
    }
}
