//! The write path's commit on SQLite: a group commit's notifications and
//! events (with their deliveries) in one transaction on the writer, so a
//! commit is one fsync however many requests it answers. Values are stored
//! as given: sealing, when configured, happens above the store.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sqlx::{QueryBuilder, Sqlite, SqliteConnection};
use uuid::Uuid;

use super::columns::{self, micros, IN_ID_LIST, NOTIFICATION_COLUMNS};
use super::returning::insert_runs;
use super::{store_error, SqliteStore};
use crate::store::events::EventInserted;
use crate::store::notifications::{Inserted, NewNotification, Notification, Ordered};
use crate::store::writes::{Committed, Writes};
use crate::store::StoreError;

/// The `version` of each of these endpoints, read in the commit's
/// transaction (`Writes::endpoint_versions`).
pub(super) async fn endpoint_versions(
    conn: &mut SqliteConnection,
    endpoints: impl Iterator<Item = Uuid>,
) -> Result<HashMap<Uuid, i64>, StoreError> {
    let mut ids: Vec<Uuid> = endpoints.collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let sql = format!("SELECT id, version FROM endpoints WHERE id IN {IN_ID_LIST}");
    let rows: Vec<(Uuid, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(columns::id_list(&ids))
        .fetch_all(&mut *conn)
        .await
        .map_err(store_error)?;
    Ok(rows.into_iter().collect())
}

impl SqliteStore {
    /// Writes everything in one transaction: what a key met already is
    /// read in it too, so a failure stores nothing of the commit. A fan-out
    /// of more than `fanout::PER_TRANSACTION` deliveries is the exception:
    /// the transaction stores the rest as a plan, written after it.
    pub async fn commit(&self, writes: Writes) -> Result<Committed, StoreError> {
        // PostgreSQL's precision, so that the rows returned are the rows
        // stored.
        let now = columns::time_of("now", micros(self.clock.now())).map_err(store_error)?;
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        let (notifications, mut endpoint_versions) =
            insert_notifications(&mut tx, writes.notifications, writes.endpoint_versions, now)
                .await?;
        let (mut events, versions, rest) =
            super::events::insert_events(&mut tx, writes.events, writes.endpoint_versions, now)
                .await?;
        endpoint_versions.extend(versions);
        // A recording waiting for the writer rides along (`riding`): both
        // on disk with one sync. It is answered once this commits.
        let rode = match self.riders.take() {
            Some(rider) => match self.ride(&mut tx, &rider).await {
                Ok(recorded) => Some((rider, recorded)),
                Err(error) => {
                    rider.answer(Err(StoreError::Unavailable(
                        "the create it rode with failed".into(),
                    )));
                    return Err(error);
                }
            },
            None => None,
        };
        if let Err(error) = tx.commit().await {
            if let Some((rider, _)) = rode {
                rider.answer(Err(StoreError::Unavailable(
                    "the create it rode with did not commit".into(),
                )));
            }
            return Err(store_error(error));
        }
        if let Some((rider, recorded)) = rode {
            rider.answer(recorded);
        }
        // A large fan-out's rest, a transaction at a time (`fanout`). The
        // commit stored it already (planned): a write that fails here is
        // retried in the background, and what it had not written is left
        // out of what the committer indexes now (housekeeping indexes it).
        if let Err((written, error)) = super::fanout::write_out(&self.writer, &rest, false).await {
            tracing::warn!(%error, "a fan-out's deliveries could not all be written at once; they will be written in the background");
            let missing: HashSet<Uuid> = rest[written..].iter().map(|row| row.id).collect();
            for event in &mut events {
                if let EventInserted::Created { push, .. } = event {
                    push.retain(|delivery| !missing.contains(&delivery.id));
                }
            }
            self.finish_fan_outs_later();
        }
        Ok(Committed {
            notifications,
            events,
            endpoint_versions,
        })
    }

    /// Records that these notifications could not be added to the due
    /// index: housekeeping adds them later.
    pub async fn mark_needs_index(&self, ids: &[Uuid]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "UPDATE notifications SET needs_index = 1 \
             WHERE id IN {IN_ID_LIST} AND status = 'pending'"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(columns::id_list(ids))
            .execute(&self.writer)
            .await
            .map_err(store_error)?;
        Ok(())
    }
}

/// Inserts notifications in multi-row statements. Items whose endpoint +
/// key exist already (or came earlier in the batch) come back as `Existing`
/// or `KeyConflict`, in the order given. With `versions`, also the version
/// of each created row's endpoint, by notification id.
async fn insert_notifications(
    conn: &mut SqliteConnection,
    items: Vec<NewNotification>,
    versions: bool,
    now: DateTime<Utc>,
) -> Result<(Vec<Inserted>, HashMap<Uuid, i64>), StoreError> {
    if items.is_empty() {
        return Ok(Default::default());
    }
    let created_at = micros(now);
    // Without business keys every row is created: the ordered ones are
    // placed first, and the insert writes each one's place with it (as in
    // PostgreSQL, `postgres::notifications`).
    let early = !items.iter().any(|item| item.key.is_some());
    let mut places = if early {
        super::ordering::places_of(conn, &crate::store::ordering::ordered(&items), created_at)
            .await?
    } else {
        HashMap::new()
    };
    let created = insert_runs(
        conn,
        &items,
        |run, returning| insert_run(run, &places, created_at, returning),
        |item| item.key.is_some(),
        |item| item.id,
    )
    .await?;
    let endpoint_versions = if versions {
        let endpoints = endpoint_versions(
            conn,
            items
                .iter()
                .filter(|i| created.contains(&i.id))
                .map(|i| i.endpoint_id),
        )
        .await?;
        items
            .iter()
            .filter(|i| created.contains(&i.id))
            .filter_map(|i| endpoints.get(&i.endpoint_id).map(|v| (i.id, *v)))
            .collect()
    } else {
        HashMap::new()
    };

    // Conflicts are rare: each is read on `notifications_key`, with one
    // statement prepared once.
    let mut existing: HashMap<(Uuid, String), Notification> = HashMap::new();
    let sql = format!(
        "SELECT {NOTIFICATION_COLUMNS}, body FROM notifications \
         WHERE key = ? AND endpoint_id = ?"
    );
    for item in items.iter().filter(|i| !created.contains(&i.id)) {
        let Some(key) = &item.key else {
            continue;
        };
        let at = (item.endpoint_id, key.clone());
        if existing.contains_key(&at) {
            continue;
        }
        let row = sqlx::query(sqlx::AssertSqlSafe(sql.as_str()))
            .bind(key)
            .bind(item.endpoint_id)
            .fetch_optional(&mut *conn)
            .await
            .map_err(store_error)?;
        if let Some(row) = row {
            existing.insert(at, columns::notification(&row, None).map_err(store_error)?);
        }
    }

    if !early {
        let in_order: Vec<crate::store::ordering::Item> = crate::store::ordering::ordered(&items)
            .into_iter()
            .filter(|i| created.contains(&i.id))
            .collect();
        places = super::ordering::place_in_order(conn, &in_order, created_at).await?;
    }

    let mut results = Vec::with_capacity(items.len());
    for item in items {
        if created.contains(&item.id) {
            let place = places.remove(&item.id).unwrap_or_default();
            results.push(Inserted::Created(item.into_row(now, place)));
            continue;
        }
        let row = item
            .key
            .as_ref()
            .and_then(|key| existing.get(&(item.endpoint_id, key.clone())));
        match row {
            Some(row) if row.same_payload(&item.content_type, &item.body) => {
                results.push(Inserted::Existing(row.clone()))
            }
            Some(row) => results.push(Inserted::KeyConflict(row.clone())),
            // Only a key can make a row not inserted.
            None => return Err(StoreError::Conflict("notifications_key".into())),
        }
    }
    Ok((results, endpoint_versions))
}

/// A run's multi-row INSERT, its places written with it. A key met (in
/// the table, or earlier in the run) writes nothing; any other violation
/// fails the commit, as in PostgreSQL. With `returning`, it returns the
/// ids of the rows it created.
fn insert_run(
    run: &[NewNotification],
    places: &HashMap<Uuid, Ordered>,
    created_at: i64,
    returning: bool,
) -> QueryBuilder<Sqlite> {
    let mut query = QueryBuilder::<Sqlite>::new(
        "INSERT INTO notifications (id, endpoint_id, key, event_type, content_type, body, \
             headers, schedule_ms, schedule_name, deliver_at, next_attempt_at, url, pull, \
             order_key, sequence, behind, created_at, updated_at) ",
    );
    query.push_values(run, |mut row, item| {
        let place = places.get(&item.id);
        row.push_bind(item.id)
            .push_bind(item.endpoint_id)
            .push_bind(item.key.clone())
            .push_bind(item.event_type.clone())
            .push_bind(item.content_type.clone())
            .push_bind(item.body.clone())
            .push_bind(columns::json_text(&item.headers))
            .push_bind(columns::json_text(&item.schedule.delays_ms()))
            .push_bind(item.schedule.name().map(str::to_string))
            .push_bind(micros(item.deliver_at))
            .push_bind(micros(item.next_attempt_at))
            .push_bind(item.url.clone())
            .push_bind(item.pull)
            .push_bind(item.order_key.clone())
            .push_bind(place.and_then(|p| p.sequence))
            .push_bind(place.and_then(|p| p.behind))
            .push_bind(created_at)
            .push_bind(created_at);
    });
    query.push(" ON CONFLICT (key, endpoint_id) WHERE key IS NOT NULL DO NOTHING");
    if returning {
        query.push(" RETURNING id");
    }
    query
}
