//! Endpoints on SQLite, with the semantics of `store::endpoints` on
//! PostgreSQL: soft delete (the uid is freed, pending notifications are
//! cancelled, history stays), managed endpoints out of the API's sight,
//! the owner filter and keyset pagination newest first.
//!
//! Sealing aside: values are stored as given; sealing at rest becomes a
//! wrapper of any store (issue #34). Inherent methods for now, until the
//! seam traits are reshaped.

use crate::clock::Clock;
use sqlx::sqlite::SqliteRow;
use sqlx::{AssertSqlSafe, QueryBuilder, Sqlite};
use uuid::Uuid;

use super::columns::micros;
use super::errors::cause;
use super::rows::{self, to_json, ENDPOINT_COLUMNS};
use super::{store_error, SqliteStore};
use crate::domain::health;
use crate::domain::ordering;
use crate::domain::pull;
use crate::store::cancel::Pending;
use crate::store::endpoints::{Endpoint, EndpointRef};
use crate::store::StoreError;

/// The live, API-visible endpoint `?1` names, by id or by uid: one
/// statement for each, each for its own index (an `id = ? OR uid = ?`
/// makes SQLite scan the table).
pub(super) fn named(by: &EndpointRef) -> &'static str {
    match by {
        EndpointRef::Id(_) => "id = ?1 AND deleted_at IS NULL AND managed = 0",
        EndpointRef::Uid(_) => "uid = ?1 AND deleted_at IS NULL AND managed = 0",
    }
}

type SqliteQuery<'q> = sqlx::query::Query<'q, Sqlite, sqlx::sqlite::SqliteArguments>;

/// Binds `?1` of a statement written with `named`.
pub(super) fn bind_named<'q>(query: SqliteQuery<'q>, by: &'q EndpointRef) -> SqliteQuery<'q> {
    match by {
        EndpointRef::Id(id) => query.bind(*id),
        EndpointRef::Uid(uid) => query.bind(uid.as_str()),
    }
}

/// Newest first after the cursor `?1` when there is one, `?3`'s only when
/// an owner is given: one statement for each case, so that each seeks its
/// index (`(?1 IS NULL OR id < ?1)` would walk from the newest).
fn list_sql(cursor: bool, owner: bool) -> String {
    format!(
        "SELECT {ENDPOINT_COLUMNS} FROM endpoints WHERE deleted_at IS NULL AND managed = 0{}{} \
         ORDER BY id DESC LIMIT ?2",
        if cursor {
            " AND id < ?1"
        } else {
            " AND ?1 IS NULL"
        },
        if owner {
            " AND owner = ?3"
        } else {
            " AND ?3 IS NULL"
        },
    )
}

fn decoded(row: SqliteRow) -> Result<Endpoint, StoreError> {
    rows::endpoint(&row).map_err(|e| StoreError::Database(cause(e)))
}

/// The time a change stores as `updated_at`, taken with the writer held
/// (inside its transaction): changes commit one at a time, so their times
/// follow their commit order, and a read of what changed since a time
/// (`consumer_tokens`, which takes its own with the writer held) misses
/// none. Taken before the writer, a change waiting for it could commit a
/// time older than a read that ran meanwhile.
fn stamp(clock: &Clock) -> i64 {
    micros(clock.now())
}

/// The generation past every one owner `$owner` had (its endpoints',
/// deleted ones included, and its revocations') and `$own`, as
/// `postgres::endpoints` writes it (`domain::portal`).
macro_rules! past_generations {
    ($owner:literal, $own:literal) => {
        concat!(
            "max(",
            $own,
            ", (SELECT coalesce(max(o.portal_generation), 0) FROM endpoints o \
                 WHERE o.owner = ",
            $owner,
            " AND o.managed = 0), \
             coalesce((SELECT p.generation FROM portal_owners p WHERE p.owner = ",
            $owner,
            "), 0)) + 1"
        )
    };
}

/// A created endpoint's generation: its own, unless its owner has no live
/// endpoint, whose links must stay refused (`domain::portal`).
const CREATED_GENERATION: &str = concat!(
    "CASE WHEN ?17 IS NULL OR EXISTS (SELECT 1 FROM endpoints o \
         WHERE o.owner = ?17 AND o.deleted_at IS NULL AND o.managed = 0) THEN ?27 ELSE ",
    past_generations!("?17", "?27"),
    " END"
);

/// A changed endpoint's generation: past its new owner's and its own when
/// its owner changes (`domain::portal`), as it was otherwise.
const CHANGED_GENERATION: &str = concat!(
    "CASE WHEN owner IS ?16 THEN portal_generation ELSE ",
    past_generations!("?16", "portal_generation"),
    " END"
);

/// Endpoint `id` moves to `owner`, in the change's transaction: the
/// generation of the owner it leaves is kept in `portal_owners` (as
/// `postgres::endpoints::moved_from_owner` does), and its pending
/// deliveries of other owners' events are cancelled, those a fan-out still
/// has to write included.
async fn moved_to_owner(
    tx: &mut sqlx::SqliteConnection,
    id: Uuid,
    owner: Option<&str>,
    now: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO portal_owners AS p (owner, generation) \
         SELECT owner, portal_generation FROM endpoints WHERE id = ?1 AND owner IS NOT NULL \
         ON CONFLICT (owner) DO UPDATE SET generation = max(p.generation, excluded.generation)",
    )
    .bind(id)
    .execute(&mut *tx)
    .await
    .map_err(store_error)?;
    super::fanout::finish_plans_in(&mut *tx).await?;
    let theirs = Pending::OtherOwners {
        endpoint_id: id,
        owner,
    };
    super::cancel::cancel_pending(&mut *tx, theirs, now).await?;
    Ok(())
}

impl SqliteStore {
    pub async fn create_endpoint(&self, endpoint: &Endpoint) -> Result<Endpoint, StoreError> {
        // Stamped with the writer held, as every change here (`stamp`).
        let mut conn = self.writer.acquire().await.map_err(store_error)?;
        let now = stamp(&self.clock);
        let sql = format!(
            "INSERT INTO endpoints ({ENDPOINT_COLUMNS}, disabled_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, NULL, NULL, \
                     ?16, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, {CREATED_GENERATION}, \
                     ?28, ?29, ?30, ?31, ?32, CASE WHEN ?15 THEN ?16 END) \
             RETURNING {ENDPOINT_COLUMNS}"
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(endpoint.id)
            .bind(&endpoint.uid)
            .bind(&endpoint.url)
            .bind(&endpoint.description)
            .bind(&endpoint.secret)
            .bind(to_json(&endpoint.previous_secrets))
            .bind(endpoint.event_types.as_ref().map(to_json))
            .bind(to_json(&endpoint.schedule_ms))
            .bind(&endpoint.schedule_name)
            .bind(&endpoint.success_body)
            .bind(to_json(&endpoint.permanent_statuses))
            .bind(to_json(&endpoint.headers))
            .bind(endpoint.timeout_ms)
            .bind(endpoint.max_in_flight)
            .bind(endpoint.disabled)
            .bind(now)
            .bind(&endpoint.owner)
            .bind(endpoint.delivery.as_str())
            .bind(endpoint.schedule_jitter)
            .bind(endpoint.rate_limit_per_second)
            .bind(endpoint.rate_limit_burst)
            .bind(endpoint.breaker.columns().0)
            .bind(endpoint.breaker.columns().1)
            .bind(endpoint.breaker.columns().2)
            .bind(endpoint.breaker.columns().3)
            .bind(endpoint.url_secret)
            .bind(endpoint.portal_generation)
            .bind(endpoint.ordering.as_str())
            .bind(endpoint.ordering_on_failure.as_str())
            .bind(endpoint.fresh_share)
            .bind(endpoint.filter.as_ref().map(to_json))
            .bind(endpoint.success_filter.as_ref().map(to_json))
            .fetch_one(&mut *conn)
            .await
            .map_err(store_error)?;
        decoded(row)
    }

    pub async fn find_endpoint(&self, by: &EndpointRef) -> Result<Option<Endpoint>, StoreError> {
        if !by.is_possible() {
            return Ok(None);
        }
        let sql = format!(
            "SELECT {ENDPOINT_COLUMNS} FROM endpoints WHERE {}",
            named(by)
        );
        bind_named(sqlx::query(AssertSqlSafe(sql)), by)
            .fetch_optional(&self.reader)
            .await
            .map_err(store_error)?
            .map(decoded)
            .transpose()
    }

    /// Live endpoints by id or uid, for resolving many notifications at once.
    pub async fn find_endpoints(
        &self,
        ids: &[Uuid],
        uids: &[String],
    ) -> Result<Vec<Endpoint>, StoreError> {
        // SQLite has no array parameters: one placeholder per value (a
        // batch's endpoints are far below SQLite's 32,766 parameters). A
        // UNION, so that each half seeks its own index.
        let mut query = QueryBuilder::<Sqlite>::new(format!(
            "SELECT {ENDPOINT_COLUMNS} FROM endpoints WHERE deleted_at IS NULL AND managed = 0 \
             AND id IN ("
        ));
        let mut list = query.separated(", ");
        for id in ids {
            list.push_bind(*id);
        }
        query.push(format!(
            ") UNION SELECT {ENDPOINT_COLUMNS} FROM endpoints \
             WHERE deleted_at IS NULL AND managed = 0 AND uid IN ("
        ));
        let mut list = query.separated(", ");
        for uid in uids {
            list.push_bind(uid.as_str());
        }
        query.push(")");
        let found = query
            .build()
            .fetch_all(&self.reader)
            .await
            .map_err(store_error)?;
        found.into_iter().map(decoded).collect()
    }

    /// Newest first, after the cursor id; only `owner`'s when it is given.
    pub async fn list_endpoints(
        &self,
        before: Option<Uuid>,
        limit: i64,
        owner: Option<&str>,
    ) -> Result<Vec<Endpoint>, StoreError> {
        let sql = list_sql(before.is_some(), owner.is_some());
        let found = sqlx::query(AssertSqlSafe(sql))
            .bind(before)
            .bind(limit)
            .bind(owner)
            .fetch_all(&self.reader)
            .await
            .map_err(store_error)?;
        found.into_iter().map(decoded).collect()
    }

    /// Applies `change` to the endpoint and writes it back, bumping its
    /// version. The read, the change and the write run in one transaction
    /// on the only writer, so no other write comes between them; the
    /// version check says so again, for when writers are more than one.
    /// `Ok(None)`: no such endpoint. `change` may refuse with its own error,
    /// and then nothing is written.
    pub async fn modify_endpoint<E>(
        &self,
        by: &EndpointRef,
        change: impl FnOnce(&mut Endpoint) -> Result<(), E>,
    ) -> Result<Option<Result<Endpoint, E>>, StoreError> {
        if !by.is_possible() {
            return Ok(None);
        }
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        let sql = format!(
            "SELECT {ENDPOINT_COLUMNS}, version FROM endpoints WHERE {}",
            named(by)
        );
        let Some(row) = bind_named(sqlx::query(AssertSqlSafe(sql)), by)
            .fetch_optional(&mut *tx)
            .await
            .map_err(store_error)?
        else {
            return Ok(None);
        };
        let version: i64 =
            sqlx::Row::try_get(&row, "version").map_err(|e| StoreError::Database(cause(e)))?;
        let before = decoded(row)?;
        let mut endpoint = before.clone();
        if let Err(refused) = change(&mut endpoint) {
            return Ok(Some(Err(refused)));
        }
        let health::Kept {
            disabled_reason,
            failing_since,
        } = health::after_change(
            health::Kept {
                disabled_reason: before.disabled_reason.clone(),
                failing_since: before.failing_since,
            },
            before.disabled,
            endpoint.disabled,
            endpoint.url.is_some(),
        );
        let now = stamp(&self.clock);
        if before.disabled && !endpoint.disabled {
            release_held(&mut tx, endpoint.id, now).await?;
        }
        let ordered = |e: &Endpoint| (e.ordering, e.ordering_on_failure);
        if let Some(release) = ordering::released_by(ordered(&before), ordered(&endpoint)) {
            super::ordering::release(&mut tx, endpoint.id, release, now).await?;
        }
        if ordering::lines_again(before.ordering, endpoint.ordering) {
            super::ordering::relink(&mut tx, endpoint.id, now).await?;
        }
        if pull::switch_revokes_token(before.delivery, endpoint.delivery) {
            super::consumer_tokens::revoke(&mut *tx, endpoint.id).await?;
        }
        if endpoint.owner != before.owner {
            moved_to_owner(&mut tx, endpoint.id, endpoint.owner.as_deref(), now).await?;
        }
        // `disabled_at`: when a disabled span started, kept while it lasts.
        let sql = format!(
            "UPDATE endpoints SET uid = ?2, url = ?3, description = ?4, secret = ?5, \
             previous_secrets = ?6, event_types = ?7, schedule_ms = ?8, schedule_name = ?9, \
             success_body = ?10, permanent_statuses = ?11, headers = ?12, timeout_ms = ?13, \
             max_in_flight = ?14, disabled = ?15, owner = ?16, delivery = ?17, updated_at = ?18, \
             disabled_at = CASE WHEN NOT ?15 THEN NULL \
                 WHEN disabled = 1 THEN COALESCE(disabled_at, ?18) ELSE ?18 END, \
             disabled_reason = ?19, failing_since = ?20, schedule_jitter = ?22, \
             rate_limit_per_second = ?23, rate_limit_burst = ?24, \
             breaker_off = ?25, breaker_failures = ?26, breaker_open_ms = ?27, breaker_max_open_ms = ?28, url_secret = ?29, \
             ordering = ?30, ordering_on_failure = ?31, fresh_share = ?32, filter = ?33, success_filter = ?34, version = version + 1, \
             portal_generation = {CHANGED_GENERATION} \
             WHERE id = ?1 AND version = ?21 RETURNING {ENDPOINT_COLUMNS}"
        );
        let updated = sqlx::query(AssertSqlSafe(sql))
            .bind(endpoint.id)
            .bind(&endpoint.uid)
            .bind(&endpoint.url)
            .bind(&endpoint.description)
            .bind(&endpoint.secret)
            .bind(to_json(&endpoint.previous_secrets))
            .bind(endpoint.event_types.as_ref().map(to_json))
            .bind(to_json(&endpoint.schedule_ms))
            .bind(&endpoint.schedule_name)
            .bind(&endpoint.success_body)
            .bind(to_json(&endpoint.permanent_statuses))
            .bind(to_json(&endpoint.headers))
            .bind(endpoint.timeout_ms)
            .bind(endpoint.max_in_flight)
            .bind(endpoint.disabled)
            .bind(&endpoint.owner)
            .bind(endpoint.delivery.as_str())
            .bind(now)
            .bind(disabled_reason)
            .bind(failing_since.map(micros))
            .bind(version)
            .bind(endpoint.schedule_jitter)
            .bind(endpoint.rate_limit_per_second)
            .bind(endpoint.rate_limit_burst)
            .bind(endpoint.breaker.columns().0)
            .bind(endpoint.breaker.columns().1)
            .bind(endpoint.breaker.columns().2)
            .bind(endpoint.breaker.columns().3)
            .bind(endpoint.url_secret)
            .bind(endpoint.ordering.as_str())
            .bind(endpoint.ordering_on_failure.as_str())
            .bind(endpoint.fresh_share)
            .bind(endpoint.filter.as_ref().map(to_json))
            .bind(endpoint.success_filter.as_ref().map(to_json))
            .fetch_optional(&mut *tx)
            .await
            .map_err(store_error)?;
        let Some(updated) = updated else {
            // Another writer changed it since the read.
            return Err(StoreError::Conflict("endpoints_version".into()));
        };
        let updated = decoded(updated)?;
        tx.commit().await.map_err(store_error)?;
        Ok(Some(Ok(updated)))
    }

    /// Deletes an endpoint: it disappears from the API, its uid is freed, its
    /// pending notifications are cancelled, and their history is kept.
    /// Returns the ids of the cancelled notifications, or `None` if there was
    /// no such endpoint.
    pub async fn delete_endpoint(&self, by: &EndpointRef) -> Result<Option<Vec<Uuid>>, StoreError> {
        if !by.is_possible() {
            return Ok(None);
        }
        let mut tx = self.writer.begin().await.map_err(store_error)?;
        let now = stamp(&self.clock);
        let sql = format!(
            "UPDATE endpoints SET deleted_at = ?2, updated_at = ?2, version = version + 1 \
             WHERE {} RETURNING id",
            named(by)
        );
        let deleted: Option<Uuid> = bind_named(sqlx::query(AssertSqlSafe(sql)), by)
            .bind(now)
            .fetch_optional(&mut *tx)
            .await
            .map_err(store_error)?
            .map(|row| sqlx::Row::try_get(&row, "id"))
            .transpose()
            .map_err(|e| StoreError::Database(cause(e)))?;
        let Some(endpoint_id) = deleted else {
            return Ok(None);
        };
        // Deliveries a fan-out still has to write to it are cancelled too.
        super::fanout::finish_plans_in(&mut tx).await?;
        // As PostgreSQL's `cancel_pending` (`store/postgres/cancel.rs`) for an endpoint, through
        // `notifications_endpoint_newest`.
        let cancelled =
            super::cancel::cancel_pending(&mut *tx, Pending::Endpoint(endpoint_id), now).await?;
        // Its circuit goes with it: nothing is left to probe or hold.
        sqlx::query("DELETE FROM endpoint_circuits WHERE endpoint_id = ?1")
            .bind(endpoint_id)
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        tx.commit().await.map_err(store_error)?;
        Ok(Some(cancelled))
    }
}

/// What an endpoint held while disabled, released as it is enabled again
/// at `now`, as PostgreSQL's `release_held` does (which says why): its free
/// pending pull notifications' due times move on by the time it spent
/// disabled (`domain::lease::due_after_hold`), and its due push ones are
/// marked `needs_index`. The caller holds the writer; the endpoint's
/// `disabled_at` says when the span started.
async fn release_held(
    conn: &mut sqlx::SqliteConnection,
    endpoint_id: Uuid,
    now: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE notifications \
         SET next_attempt_at = next_attempt_at + (?2 - MAX(held.since, next_attempt_at)), \
             updated_at = ?2 \
         FROM (SELECT disabled_at AS since FROM endpoints WHERE id = ?1 AND disabled_at IS NOT NULL) held \
         WHERE endpoint_id = ?1 AND status = 'pending' AND pull = 1 AND lease_id IS NULL \
           AND next_attempt_at < ?2",
    )
    .bind(endpoint_id)
    .bind(now)
    .execute(&mut *conn)
    .await
    .map_err(store_error)?;
    sqlx::query(
        "UPDATE notifications SET needs_index = 1 \
         WHERE endpoint_id = ?1 AND status = 'pending' AND pull = 0 AND next_attempt_at <= ?2",
    )
    .bind(endpoint_id)
    .bind(now)
    .execute(&mut *conn)
    .await
    .map_err(store_error)?;
    Ok(())
}

#[cfg(test)]
mod tests;
