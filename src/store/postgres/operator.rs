//! The operator webhook's side of the store: the managed endpoint that
//! receives operator events (kept in step with `operator.url`, which a
//! sealing wrapper seals at rest like its secret), and the SQL
//! that writes the events. Each event is a notification to that endpoint,
//! inserted by the statement that writes the change it reports (a
//! notification ending failed, an endpoint disabled), so one never commits
//! without the other. The events come built (`domain::operator_event`);
//! this only stores them.

use uuid::Uuid;

use super::PgStore;
use crate::domain::operator_event::{OperatorEvent, OPERATOR_ENDPOINT_ID};
use crate::domain::schedule::Schedule;
use crate::store::seams::OperatorTarget;
use crate::store::StoreError;

impl PgStore {
    /// Makes the managed operator endpoint match `target`: created or
    /// updated when set, deleted (its pending events then cancelled by the
    /// dispatcher) when not.
    pub async fn sync_operator_endpoint(
        &self,
        target: Option<OperatorTarget<'_>>,
    ) -> Result<(), StoreError> {
        let now = self.clock.now();
        let Some(target) = target else {
            sqlx::query(
                "UPDATE endpoints SET deleted_at = $2, updated_at = $2, version = version + 1 \
                 WHERE id = $1 AND deleted_at IS NULL",
            )
            .bind(OPERATOR_ENDPOINT_ID)
            .bind(now)
            .execute(&self.pool)
            .await?;
            return Ok(());
        };
        // The stored values may not be comparable in SQL (sealed with a
        // fresh nonce each time): read them under a row lock, let the
        // target compare them, and write only when something changed.
        let mut tx = self.pool.begin().await?;
        let current: Option<(String, String, bool, bool)> = sqlx::query_as(
            "SELECT url, secret, deleted_at IS NOT NULL, disabled FROM endpoints WHERE id = $1 FOR UPDATE",
        )
        .bind(OPERATOR_ENDPOINT_ID)
        .fetch_optional(&mut *tx)
        .await?;
        match current {
            None => {
                let schedule = Schedule::default();
                // Another process may create it first: its row is as good.
                sqlx::query(
                    "INSERT INTO endpoints (id, url, description, secret, schedule_ms, schedule_name, managed, \
                         created_at, updated_at) \
                     VALUES ($1, $2, 'hookd operator events (operator.url)', $3, $4, $5, true, $6, $6) \
                     ON CONFLICT (id) DO NOTHING",
                )
                .bind(OPERATOR_ENDPOINT_ID)
                .bind(target.url.as_ref())
                .bind(target.secret.as_ref())
                .bind(schedule.delays_ms())
                .bind(schedule.name())
                .bind(now)
                .execute(&mut *tx)
                .await?;
            }
            Some((stored_url, stored_secret, deleted, disabled)) => {
                if !(target.unchanged)(&stored_url, &stored_secret) || deleted || disabled {
                    sqlx::query(
                        "UPDATE endpoints SET url = $2, secret = $3, deleted_at = NULL, disabled = false, disabled_at = NULL, \
                             updated_at = $4, version = version + 1 WHERE id = $1",
                    )
                    .bind(OPERATOR_ENDPOINT_ID)
                    .bind(target.url.as_ref())
                    .bind(target.secret.as_ref())
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                }
            }
        }
        tx.commit().await?;
        Ok(())
    }
}

/// SQL for two CTEs (`reported_keys`, `reported`, to follow a comma in a
/// `WITH`) that insert operator events, for a statement that binds
/// them as the arrays `$ids`, `$subjects` (uuid[]), `$types`, `$keys`
/// (text[]) and `$bodies` (bytea[]) (see `EventBinds`: the ids are made in
/// Rust, as every id hookd makes) and the operator endpoint's id as
/// `$operator`, the store's clock as `$now` (when the events are due),
/// and whose CTE `$changed` returns the `id` of each row it
/// changed. An event is inserted only if its subject's change was, and only
/// while the operator endpoint exists; its key (a row of
/// `notification_keys`, as every key is) makes a second recording of the
/// same change insert nothing. The events are due at once and marked
/// `needs_index`: the housekeeper adds them to the due index.
///
/// A key row whose event is gone (retention dropped its day and crashed
/// before deleting the day's key rows, or an older hookd purged it) is
/// taken over, as notification creates take one over
/// (`notifications::stale_keys!`), or it would suppress that event for
/// good. Stale means: the key row as the statement's snapshot sees it,
/// pointing to the very id it points to now, points to no notification in
/// that snapshot. A key row and its notification commit together, so a
/// key written by a concurrent recording of the same change (invisible to
/// the snapshot, or pointing elsewhere in it) is never taken over.
/// `DISTINCT ON` keeps one event a key, as `DO NOTHING` did: an upsert may
/// not touch a row twice in one statement.
macro_rules! insert_operator_events {
    ($changed:literal, $ids:literal, $subjects:literal, $types:literal, $keys:literal, $bodies:literal, $operator:literal, $now:literal) => {
        concat!(
            "reported_keys AS ( \
                 INSERT INTO notification_keys AS k (key, endpoint_id, id) \
                 SELECT DISTINCT ON (ev.key) ev.key, op.id, ev.id FROM UNNEST(",
            $ids,
            "::uuid[], ",
            $subjects,
            "::uuid[], ",
            $keys,
            "::text[]) AS ev(id, subject, key) \
                 JOIN ",
            $changed,
            " changed ON changed.id = ev.subject \
                 JOIN endpoints op ON op.id = ",
            $operator,
            " AND op.deleted_at IS NULL \
                 ORDER BY ev.key, ev.id \
                 ON CONFLICT (key, endpoint_id) DO UPDATE SET id = EXCLUDED.id \
                 WHERE EXISTS (SELECT 1 FROM notification_keys seen \
                         WHERE seen.key = k.key AND seen.endpoint_id = k.endpoint_id \
                           AND seen.id = k.id) \
                   AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.id = k.id) \
                 RETURNING k.id \
             ), reported AS ( \
                 INSERT INTO notifications (id, endpoint_id, key, event_type, content_type, body, \
                     schedule_ms, schedule_name, deliver_at, next_attempt_at, needs_index) \
                 SELECT ev.id, op.id, ev.key, ev.event_type, 'application/json', ev.body, \
                     op.schedule_ms, op.schedule_name, ",
            $now,
            "::timestamptz, ",
            $now,
            "::timestamptz, true \
                 FROM UNNEST(",
            $ids,
            "::uuid[], ",
            $types,
            "::text[], ",
            $keys,
            "::text[], ",
            $bodies,
            "::bytea[]) AS ev(id, event_type, key, body) \
                 JOIN reported_keys r ON r.id = ev.id \
                 JOIN endpoints op ON op.id = ",
            $operator,
            " \
             )"
        )
    };
}
pub(super) use insert_operator_events;

/// Operator events as the arrays `insert_operator_events!` binds.
#[derive(Default)]
pub(super) struct EventBinds<'a> {
    pub ids: Vec<Uuid>,
    pub subjects: Vec<Uuid>,
    pub types: Vec<&'static str>,
    pub keys: Vec<&'a str>,
    pub bodies: Vec<&'a [u8]>,
}

impl<'a> EventBinds<'a> {
    pub fn push(&mut self, event: &'a OperatorEvent) {
        self.ids.push(crate::domain::id::new_id());
        self.subjects.push(event.subject);
        self.types.push(event.event_type);
        self.keys.push(&event.key);
        self.bodies.push(&event.body);
    }
}

impl<'a> FromIterator<&'a OperatorEvent> for EventBinds<'a> {
    fn from_iter<I: IntoIterator<Item = &'a OperatorEvent>>(events: I) -> Self {
        let mut binds = Self::default();
        for event in events {
            binds.push(event);
        }
        binds
    }
}
