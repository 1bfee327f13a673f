//! Endpoints in PostgreSQL: create, find, list, change under the row lock,
//! delete (cancelling what is pending).

use sqlx::types::Json;
use sqlx::AssertSqlSafe;
use uuid::Uuid;

use super::PgStore;
use crate::domain::health;
use crate::domain::ordering;
use crate::domain::pull;
use crate::store::cancel::Pending;
use crate::store::endpoints::Endpoint;
use crate::store::endpoints::EndpointRef;
use crate::store::StoreError;

/// Spliced into queries with `format!`, hence `AssertSqlSafe`: the SQL is
/// made of constants only, every value travels as a bind parameter.
const COLUMNS: &str = "id, uid, url, description, secret, previous_secrets, \
     event_types, schedule_ms, schedule_name, success_body, permanent_statuses, headers, timeout_ms, \
     max_in_flight, disabled, disabled_reason, failing_since, created_at, updated_at, owner, delivery, schedule_jitter, \
     rate_limit_per_second, rate_limit_burst, breaker_off, breaker_failures, breaker_open_ms, breaker_max_open_ms, url_secret, portal_generation, \
     ordering, ordering_on_failure, fresh_share, filter, success_filter";
/// The generation past every one owner `$owner` had (its endpoints',
/// deleted ones included, and its revocations') and `$own`: what an
/// endpoint takes as it comes to an owner that refuses its links
/// (`domain::portal`).
macro_rules! past_generations {
    ($owner:literal, $own:literal) => {
        concat!(
            "GREATEST(",
            $own,
            ", (SELECT COALESCE(max(o.portal_generation), 0) FROM endpoints o \
                 WHERE o.owner = ",
            $owner,
            " AND NOT o.managed), \
             COALESCE((SELECT p.generation FROM portal_owners p WHERE p.owner = ",
            $owner,
            "), 0)) + 1"
        )
    };
}

/// A created endpoint's generation: its own, unless its owner has no live
/// endpoint, whose links must stay refused (`domain::portal`).
const CREATED_GENERATION: &str = concat!(
    "CASE WHEN $16::text IS NULL OR EXISTS (SELECT 1 FROM endpoints o \
         WHERE o.owner = $16 AND o.deleted_at IS NULL AND NOT o.managed) THEN $26 ELSE ",
    past_generations!("$16", "$26"),
    " END"
);

/// A changed endpoint's generation: past its new owner's and its own when
/// its owner changes (`domain::portal`), as it was otherwise.
const CHANGED_GENERATION: &str = concat!(
    "CASE WHEN owner IS NOT DISTINCT FROM $16 THEN portal_generation ELSE ",
    past_generations!("$16", "portal_generation"),
    " END"
);

impl PgStore {
    pub async fn create_endpoint(&self, endpoint: &Endpoint) -> Result<Endpoint, StoreError> {
        let sql = format!(
            "INSERT INTO endpoints ({COLUMNS}, disabled_at) \
             VALUES ($1, $2, $3, $4, $5, $15, $6, $7, $8, $9, $10, $11, $12, $13, $14, NULL, NULL, $27, $27, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, \
                 {CREATED_GENERATION}, $28, $29, $30, $31, $32, \
                 CASE WHEN $14 THEN $27 END) \
             RETURNING {COLUMNS}"
        );
        sqlx::query_as::<_, Endpoint>(AssertSqlSafe(sql))
            .bind(endpoint.id)
            .bind(&endpoint.uid)
            .bind(&endpoint.url)
            .bind(&endpoint.description)
            .bind(&endpoint.secret)
            .bind(&endpoint.event_types)
            .bind(&endpoint.schedule_ms)
            .bind(&endpoint.schedule_name)
            .bind(&endpoint.success_body)
            .bind(&endpoint.permanent_statuses)
            .bind(Json(&endpoint.headers))
            .bind(endpoint.timeout_ms)
            .bind(endpoint.max_in_flight)
            .bind(endpoint.disabled)
            .bind(Json(&endpoint.previous_secrets))
            .bind(&endpoint.owner)
            .bind(endpoint.delivery)
            .bind(endpoint.schedule_jitter)
            .bind(endpoint.rate_limit_per_second)
            .bind(endpoint.rate_limit_burst)
            .bind(endpoint.breaker.columns().0)
            .bind(endpoint.breaker.columns().1)
            .bind(endpoint.breaker.columns().2)
            .bind(endpoint.breaker.columns().3)
            .bind(endpoint.url_secret)
            .bind(endpoint.portal_generation)
            .bind(self.clock.now())
            .bind(endpoint.ordering)
            .bind(endpoint.ordering_on_failure)
            .bind(endpoint.fresh_share)
            .bind(endpoint.filter.as_ref().map(Json))
            .bind(endpoint.success_filter.as_ref().map(Json))
            .fetch_one(&self.pool)
            .await
            .map_err(StoreError::from)
    }

    pub async fn find_endpoint(&self, by: &EndpointRef) -> Result<Option<Endpoint>, StoreError> {
        if !by.is_possible() {
            return Ok(None);
        }
        let (id, uid) = by.as_params();
        let sql = format!(
            "SELECT {COLUMNS} FROM endpoints WHERE (id = $1 OR uid = $2) AND deleted_at IS NULL AND NOT managed"
        );
        Ok(sqlx::query_as::<_, Endpoint>(AssertSqlSafe(sql))
            .bind(id)
            .bind(uid)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Live endpoints by id, for resolving many notifications at once.
    pub async fn find_endpoints(
        &self,
        ids: &[Uuid],
        uids: &[String],
    ) -> Result<Vec<Endpoint>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM endpoints \
             WHERE (id = ANY($1) OR uid = ANY($2)) AND deleted_at IS NULL AND NOT managed"
        );
        Ok(sqlx::query_as::<_, Endpoint>(AssertSqlSafe(sql))
            .bind(ids)
            .bind(uids)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Newest first, after the cursor id; only `owner`'s when it is given.
    pub async fn list_endpoints(
        &self,
        before: Option<Uuid>,
        limit: i64,
        owner: Option<&str>,
    ) -> Result<Vec<Endpoint>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM endpoints \
             WHERE deleted_at IS NULL AND NOT managed AND ($1::uuid IS NULL OR id < $1) \
               AND ($3::text IS NULL OR owner = $3) \
             ORDER BY id DESC LIMIT $2"
        );
        Ok(sqlx::query_as::<_, Endpoint>(AssertSqlSafe(sql))
            .bind(before)
            .bind(limit)
            .bind(owner)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Applies `change` to the endpoint under a row lock and writes it back,
    /// so concurrent changes never overwrite each other. `Ok(None)`: no such
    /// endpoint. `change` may refuse with its own error.
    ///
    /// The change locks the endpoint, then (re-enabling it, turning
    /// ordering off or on, moving it to another owner) its pending
    /// notifications. A recording that changes the endpoint's health
    /// locks them the other way round, its notifications, then the
    /// endpoint, and PostgreSQL breaks the deadlock by failing one of the
    /// two. A change it fails runs again (`change` again, on the row as
    /// it then reads; three runs at most) rather than answer 503: the
    /// recording it lost to has committed or is about to
    /// (`try_again_after`).
    pub async fn modify_endpoint<E>(
        &self,
        by: &EndpointRef,
        mut change: impl FnMut(&mut Endpoint) -> Result<(), E>,
    ) -> Result<Option<Result<Endpoint, E>>, StoreError> {
        let mut tries = 1;
        loop {
            match self.modify_endpoint_once(by, &mut change).await {
                Err(error) if super::try_again_after(&error, &mut tries) => {}
                done => return done,
            }
        }
    }

    async fn modify_endpoint_once<E>(
        &self,
        by: &EndpointRef,
        change: &mut impl FnMut(&mut Endpoint) -> Result<(), E>,
    ) -> Result<Option<Result<Endpoint, E>>, StoreError> {
        if !by.is_possible() {
            return Ok(None);
        }
        let mut tx = self.pool.begin().await?;
        let (id, uid) = by.as_params();
        let sql = format!(
            "SELECT {COLUMNS} FROM endpoints WHERE (id = $1 OR uid = $2) AND deleted_at IS NULL AND NOT managed \
             FOR UPDATE"
        );
        let Some(mut endpoint) = sqlx::query_as::<_, Endpoint>(AssertSqlSafe(sql))
            .bind(id)
            .bind(uid)
            .fetch_optional(&mut *tx)
            .await?
        else {
            return Ok(None);
        };
        let was_ordered = (endpoint.ordering, endpoint.ordering_on_failure);
        let was_delivered = endpoint.delivery;
        let was_owned = endpoint.owner.clone();
        let (was_disabled, kept) = (
            endpoint.disabled,
            health::Kept {
                disabled_reason: endpoint.disabled_reason.clone(),
                failing_since: endpoint.failing_since,
            },
        );
        if let Err(refused) = change(&mut endpoint) {
            return Ok(Some(Err(refused)));
        }
        let kept = health::after_change(
            kept,
            was_disabled,
            endpoint.disabled,
            endpoint.url.is_some(),
        );
        let now = self.clock.now();
        if was_disabled && !endpoint.disabled {
            release_held(&mut tx, endpoint.id, now).await?;
        }
        let ordered = (endpoint.ordering, endpoint.ordering_on_failure);
        if let Some(release) = ordering::released_by(was_ordered, ordered) {
            super::ordering::release(&mut tx, endpoint.id, release, now).await?;
        }
        if ordering::lines_again(was_ordered.0, ordered.0) {
            super::ordering::relink(&mut tx, endpoint.id, now).await?;
        }
        if pull::switch_revokes_token(was_delivered, endpoint.delivery) {
            super::consumer_tokens::revoke(&mut *tx, endpoint.id).await?;
        }
        if endpoint.owner != was_owned {
            moved_from_owner(&mut tx, endpoint.id).await?;
            let owner = endpoint.owner.as_deref();
            let theirs = Pending::OtherOwners {
                endpoint_id: endpoint.id,
                owner,
            };
            super::cancel::cancel_pending(&mut tx, theirs, now).await?;
        }
        // `disabled_at`: when a disabled span started, kept while it lasts.
        let sql = format!(
            "UPDATE endpoints SET uid = $2, url = $3, description = $4, secret = $5, previous_secrets = $6, \
             event_types = $7, schedule_ms = $8, schedule_name = $9, \
             success_body = $10, permanent_statuses = $11, headers = $12, timeout_ms = $13, \
             max_in_flight = $14, disabled = $15, owner = $16, delivery = $17, updated_at = $28, \
             version = version + 1, \
             disabled_at = CASE WHEN NOT $15 THEN NULL \
                 WHEN disabled THEN COALESCE(disabled_at, $28) ELSE $28 END, \
             disabled_reason = $18, failing_since = $19, schedule_jitter = $20, \
             rate_limit_per_second = $21, rate_limit_burst = $22, \
             breaker_off = $23, breaker_failures = $24, breaker_open_ms = $25, breaker_max_open_ms = $26, url_secret = $27, \
             ordering = $29, ordering_on_failure = $30, fresh_share = $31, filter = $32, \
             success_filter = $33, \
             portal_generation = {CHANGED_GENERATION} \
             WHERE id = $1 RETURNING {COLUMNS}"
        );
        let updated = sqlx::query_as::<_, Endpoint>(AssertSqlSafe(sql))
            .bind(endpoint.id)
            .bind(&endpoint.uid)
            .bind(&endpoint.url)
            .bind(&endpoint.description)
            .bind(&endpoint.secret)
            .bind(Json(&endpoint.previous_secrets))
            .bind(&endpoint.event_types)
            .bind(&endpoint.schedule_ms)
            .bind(&endpoint.schedule_name)
            .bind(&endpoint.success_body)
            .bind(&endpoint.permanent_statuses)
            .bind(Json(&endpoint.headers))
            .bind(endpoint.timeout_ms)
            .bind(endpoint.max_in_flight)
            .bind(endpoint.disabled)
            .bind(&endpoint.owner)
            .bind(endpoint.delivery)
            .bind(&kept.disabled_reason)
            .bind(kept.failing_since)
            .bind(endpoint.schedule_jitter)
            .bind(endpoint.rate_limit_per_second)
            .bind(endpoint.rate_limit_burst)
            .bind(endpoint.breaker.columns().0)
            .bind(endpoint.breaker.columns().1)
            .bind(endpoint.breaker.columns().2)
            .bind(endpoint.breaker.columns().3)
            .bind(endpoint.url_secret)
            .bind(now)
            .bind(endpoint.ordering)
            .bind(endpoint.ordering_on_failure)
            .bind(endpoint.fresh_share)
            .bind(endpoint.filter.as_ref().map(Json))
            .bind(endpoint.success_filter.as_ref().map(Json))
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Some(Ok(updated)))
    }

    /// Deletes an endpoint: it disappears from the API, its uid is freed, its
    /// pending notifications are cancelled, and their history is kept.
    /// Returns the ids of the cancelled notifications, or `None` if there was
    /// no such endpoint. It locks the endpoint, then the notifications, and
    /// runs again when it loses a deadlock with a recording, as
    /// `modify_endpoint` does.
    pub async fn delete_endpoint(&self, by: &EndpointRef) -> Result<Option<Vec<Uuid>>, StoreError> {
        if !by.is_possible() {
            return Ok(None);
        }
        let mut tries = 1;
        loop {
            match self.delete_endpoint_once(by).await {
                Err(error) if super::try_again_after(&error, &mut tries) => {}
                done => return done,
            }
        }
    }

    async fn delete_endpoint_once(
        &self,
        by: &EndpointRef,
    ) -> Result<Option<Vec<Uuid>>, StoreError> {
        let now = self.clock.now();
        let mut tx = self.pool.begin().await?;
        let (id, uid) = by.as_params();
        let deleted: Option<Uuid> = sqlx::query_scalar(
            "UPDATE endpoints SET deleted_at = $3, updated_at = $3, version = version + 1 \
             WHERE (id = $1 OR uid = $2) AND deleted_at IS NULL AND NOT managed RETURNING id",
        )
        .bind(id)
        .bind(uid)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(endpoint_id) = deleted else {
            return Ok(None);
        };
        let cancelled =
            super::cancel::cancel_pending(&mut tx, Pending::Endpoint(endpoint_id), now).await?;
        // Its circuit goes with it: nothing is left to probe or hold.
        sqlx::query("DELETE FROM endpoint_circuits WHERE endpoint_id = $1")
            .bind(endpoint_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Some(cancelled))
    }
}

/// Keeps the generation of the owner endpoint `id` leaves (as it is moved
/// to another owner or to none) in `portal_owners`, so that the owner's
/// generation does not fall back as the endpoint takes its own away
/// (`domain::portal`). In the change's transaction, before its update.
async fn moved_from_owner(tx: &mut sqlx::PgConnection, id: Uuid) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO portal_owners AS p (owner, generation) \
         SELECT owner, portal_generation FROM endpoints WHERE id = $1 AND owner IS NOT NULL \
         ON CONFLICT (owner) DO UPDATE SET generation = GREATEST(p.generation, EXCLUDED.generation)",
    )
    .bind(id)
    .execute(tx)
    .await?;
    Ok(())
}

/// What an endpoint held while disabled (docs/design.md §17), released as it is
/// enabled again, in the transaction that enables it:
/// - its free pending pull notifications' due times move on by the time it
///   spent disabled (`domain::lease::due_after_hold`, rendered as one
///   statement: a held backlog of any size), so `pull.max_wait` counts only
///   while it is enabled;
/// - its push notifications that are due, which the dispatcher put back
///   in the due index a minute at a time while it was disabled, are
///   marked `needs_index`: the housekeeper (every second) moves them to
///   their due time in the index, so they go out now rather than at their
///   next look, and a crash after this commit loses none of that.
///
/// The caller holds the endpoint's row, whose `disabled_at` says when the
/// span started; `now` (the store's clock) is the enabling.
async fn release_held(
    conn: &mut sqlx::PgConnection,
    endpoint_id: Uuid,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE notifications n \
         SET next_attempt_at = n.next_attempt_at + ($2 - GREATEST(e.disabled_at, n.next_attempt_at)), \
             updated_at = $2 \
         FROM endpoints e \
         WHERE e.id = $1 AND e.disabled_at IS NOT NULL \
           AND n.endpoint_id = $1 AND n.status = 'pending' AND n.pull AND n.lease_id IS NULL \
           AND n.next_attempt_at < $2",
    )
    .bind(endpoint_id)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "UPDATE notifications SET needs_index = true \
         WHERE endpoint_id = $1 AND status = 'pending' AND NOT pull AND next_attempt_at <= $2",
    )
    .bind(endpoint_id)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(())
}
