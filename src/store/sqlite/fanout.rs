//! Large fan-outs on SQLite, written in bounded transactions (issue #47).
//!
//! SQLite has one writer, and a transaction holds it to the end: one batch
//! fanning out to 200,000 deliveries held it 20 s, and every other producer
//! got 503. So a commit whose events fan out to more than
//! `PER_TRANSACTION` deliveries writes, in its one transaction, the events,
//! their first `PER_TRANSACTION` deliveries and, for each event not
//! written out whole, a *plan*: one row of `fanout_plans` holding every
//! delivery still to write, ids included. It then writes the rest
//! `PER_TRANSACTION` at a time, each in a transaction of its own (the
//! writer goes back to its queue between them, so another producer's
//! commit waits for one of those, not for the whole fan-out), and deletes
//! an event's plan in the transaction that writes its last delivery. The
//! API answers 201 after the last one, as before.
//!
//! Why nothing is lost or duplicated (DESIGN.md §6, §9):
//! - From the first commit on, an event and all its deliveries are stored:
//!   each delivery written or in its event's plan, both in the event's
//!   transaction. A plan left by a crash between the transactions is
//!   written out when the store opens (`serve`, `migrate`), before the due
//!   index is built from the table; one left by a write that failed is
//!   written out in the background, a second later and until it succeeds,
//!   its push deliveries marked `needs_index` for housekeeping to index.
//!   `hookd copy` refuses a file with a plan left.
//! - A planned delivery has its id from the start and is written with
//!   `ON CONFLICT (id) DO NOTHING` (the first transaction's deliveries are
//!   not: a taken id fails the commit there): a plan written twice (a crash after a
//!   transaction's commit, or two writers of one plan) writes each
//!   delivery once.
//! - A producer retrying with the event's key finds the event (200 with
//!   the full `deliveries` count) and fans out nothing; without a key a
//!   retry is a new event, as after any crash between a commit and its
//!   answer.
//!
//! - A cancel that may reach planned deliveries (an event's, an endpoint
//!   deleted) first writes out every plan left, in its own transaction
//!   (`finish_plans_in`), so what it cancels includes them; the chunks
//!   still to come then find their rows written and pass over them.
//!
//! Between the transactions the event is seen partly fanned out (its list
//! of deliveries, its counts). PostgreSQL needs none of this: its writers
//! do not queue behind one another, and its fan-out stays one statement.

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sqlx::{AssertSqlSafe, QueryBuilder, Sqlite, SqliteConnection, SqlitePool};
use uuid::Uuid;

use super::columns::{self, micros, IN_ID_LIST};
use super::returning::{runs, ROWS_PER_INSERT};
use super::{store_error, SqliteStore};
use crate::store::events::{NewDelivery, NewEvent};
use crate::store::StoreError;

/// Most deliveries one transaction writes when a commit fans out to more.
/// Measured in `tests/it/fan_out_bounds.rs` (a 10,000-delivery fan-out
/// beside another producer's creates): see docs/security.md, "Hostile input".
pub(super) const PER_TRANSACTION: usize = 1000;

/// One delivery row, as bound.
pub(super) struct DeliveryRow {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub event_id: Uuid,
    pub content_type: String,
    /// JSON text.
    pub headers: String,
    /// JSON text.
    pub schedule_ms: String,
    pub schedule_name: Option<String>,
    pub deliver_at: i64,
    pub next_attempt_at: i64,
    pub pull: bool,
    pub created_at: i64,
    /// Its event's order key.
    pub order_key: Option<String>,
}

impl DeliveryRow {
    pub(super) fn of(event: &NewEvent, delivery: &NewDelivery, created_at: i64) -> Self {
        Self {
            id: delivery.id,
            endpoint_id: delivery.endpoint_id,
            event_id: event.id,
            content_type: event.content_type.clone(),
            // A delivery's own headers (the event's, sealed for it by
            // `store::sealing`) or the event's.
            headers: columns::json_text(delivery.headers.as_ref().unwrap_or(&event.headers)),
            schedule_ms: columns::json_text(&delivery.schedule.delays_ms()),
            schedule_name: delivery.schedule.name().map(str::to_string),
            deliver_at: micros(event.deliver_at),
            next_attempt_at: micros(delivery.next_attempt_at),
            pull: delivery.pull,
            created_at,
            order_key: event.order_key.clone(),
        }
    }
}

/// The deliveries of one event still to write, as stored in its plan.
/// Schedules repeat across an owner's endpoints: each distinct one is
/// stored once, rows name it by position.
#[derive(Serialize, Deserialize)]
struct Plan {
    content_type: String,
    deliver_at: i64,
    created_at: i64,
    /// JSON text of the event's headers, which rows without their own get.
    headers: String,
    schedules: Vec<(String, Option<String>)>,
    /// (id, endpoint, own headers, schedule, next attempt, pull).
    rows: Vec<(Uuid, Uuid, Option<String>, usize, i64, bool)>,
    /// The event's order key (a plan holds no ordered delivery: those are
    /// written with their event, `events::insert_events`).
    #[serde(default)]
    order_key: Option<String>,
}

impl Plan {
    fn of(event: &NewEvent, deliveries: &[&NewDelivery], created_at: i64) -> Self {
        let mut positions: HashMap<(String, Option<String>), usize> = HashMap::new();
        let mut schedules = Vec::new();
        let rows = deliveries
            .iter()
            .map(|d| {
                let key = (
                    columns::json_text(&d.schedule.delays_ms()),
                    d.schedule.name().map(str::to_string),
                );
                let next = positions.len();
                let position = *positions.entry(key).or_insert_with_key(|key| {
                    schedules.push(key.clone());
                    next
                });
                let headers = d.headers.as_ref().map(columns::json_text);
                (
                    d.id,
                    d.endpoint_id,
                    headers,
                    position,
                    micros(d.next_attempt_at),
                    d.pull,
                )
            })
            .collect();
        Self {
            content_type: event.content_type.clone(),
            deliver_at: micros(event.deliver_at),
            created_at,
            headers: columns::json_text(&event.headers),
            schedules,
            rows,
            order_key: event.order_key.clone(),
        }
    }

    fn into_rows(self, event_id: Uuid) -> Vec<DeliveryRow> {
        let Plan {
            content_type,
            deliver_at,
            created_at,
            headers,
            schedules,
            rows,
            order_key,
        } = self;
        rows.into_iter()
            .map(|(id, endpoint_id, own, schedule, next_attempt_at, pull)| {
                let (schedule_ms, schedule_name) =
                    schedules.get(schedule).cloned().unwrap_or_default();
                DeliveryRow {
                    id,
                    endpoint_id,
                    event_id,
                    content_type: content_type.clone(),
                    headers: own.unwrap_or_else(|| headers.clone()),
                    schedule_ms,
                    schedule_name,
                    deliver_at,
                    next_attempt_at,
                    pull,
                    created_at,
                    order_key: order_key.clone(),
                }
            })
            .collect()
    }
}

/// Stores the plan of each event whose deliveries `rest` holds (grouped
/// by event, in the commit's transaction).
pub(super) async fn store_plans(
    conn: &mut SqliteConnection,
    rest: &[(&NewEvent, &NewDelivery)],
    created_at: i64,
) -> Result<(), StoreError> {
    for group in rest.chunk_by(|a, b| a.0.id == b.0.id) {
        let event = group[0].0;
        let deliveries: Vec<&NewDelivery> = group.iter().map(|(_, d)| *d).collect();
        let plan = columns::json_text(&Plan::of(event, &deliveries, created_at));
        sqlx::query("INSERT INTO fanout_plans (event_id, plan) VALUES (?, ?)")
            .bind(event.id)
            .bind(plan)
            .execute(&mut *conn)
            .await
            .map_err(store_error)?;
    }
    Ok(())
}

/// Writes delivery rows in multi-row statements. A plan's rows (`planned`)
/// may be written already (a crash after a transaction's commit, before
/// its plan was deleted): one whose id is stored is passed over. Any other
/// row whose id is taken fails the commit, as in PostgreSQL. With
/// `needs_index`, push rows are marked for housekeeping to index (rows
/// nobody indexes at their commit).
pub(super) async fn insert_rows(
    conn: &mut SqliteConnection,
    rows: &[DeliveryRow],
    planned: bool,
    needs_index: bool,
) -> Result<(), StoreError> {
    // 15 values a row (`ROWS_PER_INSERT` says why that many rows fit).
    for run in runs(rows, ROWS_PER_INSERT) {
        let mut query = QueryBuilder::<Sqlite>::new(
            "INSERT INTO notifications (id, endpoint_id, event_id, content_type, body, headers, \
                 schedule_ms, schedule_name, deliver_at, next_attempt_at, pull, needs_index, \
                 created_at, updated_at, order_key) ",
        );
        query.push_values(run, |mut bound, row| {
            bound
                .push_bind(row.id)
                .push_bind(row.endpoint_id)
                .push_bind(row.event_id)
                .push_bind(row.content_type.as_str())
                .push_bind(Vec::<u8>::new())
                .push_bind(row.headers.as_str())
                .push_bind(row.schedule_ms.as_str())
                .push_bind(row.schedule_name.as_deref())
                .push_bind(row.deliver_at)
                .push_bind(row.next_attempt_at)
                .push_bind(row.pull)
                .push_bind(needs_index && !row.pull)
                .push_bind(row.created_at)
                .push_bind(row.created_at)
                .push_bind(row.order_key.as_deref());
        });
        if planned {
            query.push(" ON CONFLICT (id) DO NOTHING");
        }
        query
            .build()
            .execute(&mut *conn)
            .await
            .map_err(store_error)?;
    }
    Ok(())
}

/// Writes `rows` (grouped by event, each group the whole rest of its
/// event's plan) `PER_TRANSACTION` at a time, a transaction each, deleting
/// each event's plan with its last row. On failure, how many rows were
/// committed before it.
pub(super) async fn write_out(
    writer: &SqlitePool,
    rows: &[DeliveryRow],
    needs_index: bool,
) -> Result<(), (usize, StoreError)> {
    let mut written = 0;
    for chunk in rows.chunks(PER_TRANSACTION) {
        let started = std::time::Instant::now();
        let end = written + chunk.len();
        // The events this chunk finishes: all it holds but the last one's,
        // when that one goes on in the next chunk.
        let mut done: Vec<Uuid> = chunk.iter().map(|r| r.event_id).collect();
        done.dedup();
        if rows.get(end).map(|r| r.event_id) == chunk.last().map(|r| r.event_id) {
            done.pop();
        }
        let step = async {
            let mut tx = writer.begin().await.map_err(store_error)?;
            insert_rows(&mut tx, chunk, true, needs_index).await?;
            if !done.is_empty() {
                let sql = format!("DELETE FROM fanout_plans WHERE event_id IN {IN_ID_LIST}");
                sqlx::query(AssertSqlSafe(sql))
                    .bind(columns::id_list(&done))
                    .execute(&mut *tx)
                    .await
                    .map_err(store_error)?;
            }
            tx.commit().await.map_err(store_error)
        };
        step.await.map_err(|error| (written, error))?;
        metrics::histogram!("hookd_fan_out_transaction_seconds")
            .record(started.elapsed().as_secs_f64());
        written = end;
    }
    Ok(())
}

/// Every plan left, with its event, as the rows still to write.
async fn plans(conn: &mut SqliteConnection) -> Result<Vec<(Uuid, Vec<DeliveryRow>)>, StoreError> {
    let stored: Vec<(Uuid, String)> = sqlx::query_as("SELECT event_id, plan FROM fanout_plans")
        .fetch_all(&mut *conn)
        .await
        .map_err(store_error)?;
    stored
        .into_iter()
        .map(|(event, text)| {
            let plan: Plan = serde_json::from_str(&text)
                .map_err(|error| StoreError::Database(Box::new(error)))?;
            Ok((event, plan.into_rows(event)))
        })
        .collect()
}

/// Writes out every plan left in the caller's transaction, whatever its
/// length: for a cancel that must reach the deliveries still planned (the
/// table is empty but while a fan-out is being written, so this is one
/// read of an empty table nearly always). Push rows are marked for
/// housekeeping to index; a fan-out's later chunks pass over them.
pub(super) async fn finish_plans_in(conn: &mut SqliteConnection) -> Result<(), StoreError> {
    for (event, rows) in plans(conn).await? {
        insert_rows(conn, &rows, true, true).await?;
        sqlx::query("DELETE FROM fanout_plans WHERE event_id = ?")
            .bind(event)
            .execute(&mut *conn)
            .await
            .map_err(store_error)?;
        tracing::info!(event_id = %event, deliveries = rows.len(), "wrote out a fan-out's planned deliveries for a cancel");
    }
    Ok(())
}

impl SqliteStore {
    /// Writes out every plan left (by a crash between a fan-out's
    /// transactions, or a write that failed); returns how many deliveries
    /// it wrote or found written.
    pub async fn finish_fan_outs(&self) -> Result<usize, StoreError> {
        let left = {
            let mut conn = self.writer.acquire().await.map_err(store_error)?;
            plans(&mut conn).await?
        };
        let mut total = 0;
        for (event, rows) in left {
            // A plan another writer finished meanwhile writes nothing twice:
            // its rows are passed over.
            write_out(&self.writer, &rows, true)
                .await
                .map_err(|(_, error)| error)?;
            total += rows.len();
            tracing::info!(event_id = %event, deliveries = rows.len(), "finished a fan-out a stopped write had left");
        }
        Ok(total)
    }

    /// Writes out the plans left by a failed write, in the background,
    /// every second until that succeeds.
    pub(super) fn finish_fan_outs_later(&self) {
        let store = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                if store.writer.is_closed() {
                    // Closed: the next start writes them out.
                    return;
                }
                match store.finish_fan_outs().await {
                    Ok(_) => return,
                    Err(error) => {
                        tracing::warn!(%error, "a fan-out's deliveries are not all written yet; trying again")
                    }
                }
            }
        });
    }
}
