//! Endpoints: a receiver's URL, signing secrets and delivery policy.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::types::Json;
use sqlx::AssertSqlSafe;
use uuid::Uuid;

use super::cancel::Pending;
use super::{Store, StoreError};
use crate::domain::pull::Delivery;
use crate::domain::schedule::Schedule;

/// How a path names an endpoint: by id or by the producer's uid.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EndpointRef {
    Id(Uuid),
    Uid(String),
}

impl EndpointRef {
    pub fn parse(text: &str) -> Self {
        match Uuid::parse_str(text) {
            Ok(id) => EndpointRef::Id(id),
            Err(_) => EndpointRef::Uid(text.to_string()),
        }
    }

    /// Whether this can name any endpoint at all: a uid that no endpoint
    /// could have (bad characters, a NUL byte) is never looked up.
    pub fn is_possible(&self) -> bool {
        match self {
            EndpointRef::Id(_) => true,
            EndpointRef::Uid(uid) => crate::domain::fields::valid_uid(uid),
        }
    }

    /// `(id, uid)` query parameters, exactly one of them set.
    fn as_params(&self) -> (Option<Uuid>, Option<&str>) {
        match self {
            EndpointRef::Id(id) => (Some(*id), None),
            EndpointRef::Uid(uid) => (None, Some(uid)),
        }
    }
}

/// `Debug` shows only identity fields: the row holds signing secrets.
#[derive(Clone, sqlx::FromRow)]
pub struct Endpoint {
    pub id: Uuid,
    pub uid: Option<String>,
    /// The tenant it belongs to; events fan out within one owner.
    pub owner: Option<String>,
    /// Where hookd POSTs (push); `None` for a pull endpoint.
    pub url: Option<String>,
    /// POSTed by hookd, or taken by consumers (DESIGN.md §10).
    pub delivery: Delivery,
    pub description: String,
    pub secret: String,
    /// Rotated-out secrets that still sign until their expiry, newest first.
    pub previous_secrets: Json<Vec<PreviousSecret>>,
    pub event_types: Option<Vec<String>>,
    pub schedule_ms: Vec<i64>,
    pub schedule_name: Option<String>,
    pub success_body: Option<String>,
    pub permanent_statuses: Vec<i32>,
    pub headers: Json<BTreeMap<String, String>>,
    pub timeout_ms: Option<i32>,
    pub max_in_flight: Option<i32>,
    pub disabled: bool,
    /// `failing` when hookd disabled it; `None` when enabled or disabled by hand.
    pub disabled_reason: Option<String>,
    /// Since when every attempt has failed; `None` after a success.
    pub failing_since: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// A secret or header value that did not open (its key is not in
    /// `secrets.keys`); those values read as empty. Such an endpoint still
    /// takes notifications, whose attempts fail saying why, but its secret
    /// cannot be shown and it cannot be changed until the key is back.
    #[sqlx(skip)]
    pub unreadable: Option<crate::domain::sealed::SealError>,
}

/// A rotated-out signing secret and until when it still signs.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviousSecret {
    pub secret: String,
    pub expires_at: DateTime<Utc>,
}

/// Most rotated-out secrets that sign at once; a rotation beyond drops the
/// oldest, so a receiver never has to check more than this plus one.
pub const MAX_PREVIOUS_SECRETS: usize = 5;

impl Endpoint {
    /// Makes `new` the signing secret. The current one keeps signing until
    /// `now + overlap` (not at all for a zero overlap); expired ones go, and
    /// beyond `MAX_PREVIOUS_SECRETS` the oldest go.
    pub fn rotate_secret(&mut self, new: String, now: DateTime<Utc>, overlap: chrono::Duration) {
        let old = std::mem::replace(&mut self.secret, new);
        let previous = &mut self.previous_secrets.0;
        previous.retain(|p| p.expires_at > now);
        if overlap > chrono::Duration::zero() {
            previous.insert(
                0,
                PreviousSecret {
                    secret: old,
                    expires_at: now + overlap,
                },
            );
        }
        previous.truncate(MAX_PREVIOUS_SECRETS);
    }

    /// Stops every rotated-out secret signing now.
    pub fn end_overlap(&mut self) {
        self.previous_secrets.0.clear();
    }

    /// The rotated-out secrets still signing at `now`, newest first.
    pub fn signing_previous(&self, now: DateTime<Utc>) -> impl Iterator<Item = &PreviousSecret> {
        self.previous_secrets
            .0
            .iter()
            .filter(move |p| p.expires_at > now)
    }

    pub fn schedule(&self) -> Schedule {
        Schedule::from_stored(self.schedule_name.clone(), &self.schedule_ms)
    }

    pub fn set_schedule(&mut self, schedule: &Schedule) {
        self.schedule_ms = schedule.delays_ms();
        self.schedule_name = schedule.name().map(str::to_string);
    }

    /// About how many bytes this row holds in memory, for bounded caches.
    pub fn approximate_size(&self) -> u32 {
        let text = self.url.as_ref().map_or(0, String::len)
            + self.description.len()
            + self.secret.len()
            + self
                .previous_secrets
                .iter()
                .map(|p| p.secret.len() + 32)
                .sum::<usize>()
            + self.success_body.as_ref().map_or(0, String::len)
            + self
                .event_types
                .iter()
                .flatten()
                .map(|t| t.len() + 24)
                .sum::<usize>()
            + self
                .headers
                .iter()
                .map(|(name, value)| name.len() + value.len() + 64)
                .sum::<usize>();
        u32::try_from(text + 512).unwrap_or(u32::MAX)
    }

    /// Whether a notification of `event_type` may be sent here: its
    /// `event_types` patterns match it (DESIGN.md §9).
    pub fn accepts_event_type(&self, event_type: Option<&str>) -> bool {
        crate::domain::subscription::subscribed(self.event_types.as_deref(), event_type)
    }
}

/// Spliced into queries with `format!`, hence `AssertSqlSafe`: the SQL is
/// made of constants only, every value travels as a bind parameter.
const COLUMNS: &str = "id, uid, url, description, secret, previous_secrets, \
     event_types, schedule_ms, schedule_name, success_body, permanent_statuses, headers, timeout_ms, \
     max_in_flight, disabled, disabled_reason, failing_since, created_at, updated_at, owner, delivery";

impl Store {
    pub async fn create_endpoint(&self, endpoint: &Endpoint) -> Result<Endpoint, StoreError> {
        let sql = format!(
            "INSERT INTO endpoints ({COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $15, $6, $7, $8, $9, $10, $11, $12, $13, $14, NULL, NULL, now(), now(), $16, $17) \
             RETURNING {COLUMNS}"
        );
        let sealed = self.seal_endpoint(endpoint);
        let created = sqlx::query_as::<_, Endpoint>(AssertSqlSafe(sql))
            .bind(endpoint.id)
            .bind(&endpoint.uid)
            .bind(&endpoint.url)
            .bind(&endpoint.description)
            .bind(&sealed.secret)
            .bind(&endpoint.event_types)
            .bind(&endpoint.schedule_ms)
            .bind(&endpoint.schedule_name)
            .bind(&endpoint.success_body)
            .bind(&endpoint.permanent_statuses)
            .bind(&sealed.headers)
            .bind(endpoint.timeout_ms)
            .bind(endpoint.max_in_flight)
            .bind(endpoint.disabled)
            .bind(&sealed.previous_secrets)
            .bind(&endpoint.owner)
            .bind(endpoint.delivery)
            .fetch_one(&self.pool)
            .await?;
        Ok(self.open_endpoint(created))
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
            .await?
            .map(|e| self.open_endpoint(e)))
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
        let rows = sqlx::query_as::<_, Endpoint>(AssertSqlSafe(sql))
            .bind(ids)
            .bind(uids)
            .fetch_all(&self.pool)
            .await?;
        Ok(self.open_endpoints(rows))
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
        let rows = sqlx::query_as::<_, Endpoint>(AssertSqlSafe(sql))
            .bind(before)
            .bind(limit)
            .bind(owner)
            .fetch_all(&self.pool)
            .await?;
        Ok(self.open_endpoints(rows))
    }

    /// Applies `change` to the endpoint under a row lock and writes it back,
    /// so concurrent changes never overwrite each other. `Ok(None)`: no such
    /// endpoint. `change` may refuse with its own error.
    pub async fn modify_endpoint<E>(
        &self,
        by: &EndpointRef,
        change: impl FnOnce(&mut Endpoint) -> Result<(), E>,
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
        let Some(row) = sqlx::query_as::<_, Endpoint>(AssertSqlSafe(sql))
            .bind(id)
            .bind(uid)
            .fetch_optional(&mut *tx)
            .await?
        else {
            return Ok(None);
        };
        let mut endpoint = self.open_endpoint(row);
        if let Some(error) = endpoint.unreadable.take() {
            // Writing back would replace the values that did not open.
            return Err(StoreError::Sealed {
                what: format!("endpoint {}", endpoint.id),
                error,
            });
        }
        if let Err(refused) = change(&mut endpoint) {
            return Ok(Some(Err(refused)));
        }
        let sql = format!(
            "UPDATE endpoints SET uid = $2, url = $3, description = $4, secret = $5, previous_secrets = $6, \
             event_types = $7, schedule_ms = $8, schedule_name = $9, \
             success_body = $10, permanent_statuses = $11, headers = $12, timeout_ms = $13, \
             max_in_flight = $14, disabled = $15, owner = $16, delivery = $17, updated_at = now(), \
             disabled_reason = CASE WHEN $15 THEN disabled_reason END, \
             failing_since = CASE WHEN (disabled AND NOT $15) OR $3 IS NULL THEN NULL \
                                  ELSE failing_since END \
             WHERE id = $1 RETURNING {COLUMNS}"
        );
        let sealed = self.seal_endpoint(&endpoint);
        let updated = sqlx::query_as::<_, Endpoint>(AssertSqlSafe(sql))
            .bind(endpoint.id)
            .bind(&endpoint.uid)
            .bind(&endpoint.url)
            .bind(&endpoint.description)
            .bind(&sealed.secret)
            .bind(&sealed.previous_secrets)
            .bind(&endpoint.event_types)
            .bind(&endpoint.schedule_ms)
            .bind(&endpoint.schedule_name)
            .bind(&endpoint.success_body)
            .bind(&endpoint.permanent_statuses)
            .bind(&sealed.headers)
            .bind(endpoint.timeout_ms)
            .bind(endpoint.max_in_flight)
            .bind(endpoint.disabled)
            .bind(&endpoint.owner)
            .bind(endpoint.delivery)
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        // Opening what was just sealed cannot fail; the plaintext is at hand.
        let mut updated = updated;
        updated.secret = endpoint.secret;
        updated.previous_secrets = endpoint.previous_secrets;
        updated.headers = endpoint.headers;
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
        let mut tx = self.pool.begin().await?;
        let (id, uid) = by.as_params();
        let deleted: Option<Uuid> = sqlx::query_scalar(
            "UPDATE endpoints SET deleted_at = now(), updated_at = now() \
             WHERE (id = $1 OR uid = $2) AND deleted_at IS NULL AND NOT managed RETURNING id",
        )
        .bind(id)
        .bind(uid)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(endpoint_id) = deleted else {
            return Ok(None);
        };
        let cancelled =
            super::cancel::cancel_pending(&mut *tx, Pending::Endpoint(endpoint_id)).await?;
        tx.commit().await?;
        Ok(Some(cancelled))
    }
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("id", &self.id)
            .field("uid", &self.uid)
            .field("disabled", &self.disabled)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(secret: &str) -> Endpoint {
        let now = Utc::now();
        Endpoint {
            id: Uuid::nil(),
            uid: None,
            owner: None,
            url: None,
            delivery: Delivery::Push,
            description: String::new(),
            secret: secret.to_string(),
            previous_secrets: Json(Vec::new()),
            event_types: None,
            schedule_ms: Vec::new(),
            schedule_name: None,
            success_body: None,
            permanent_statuses: Vec::new(),
            headers: Json(BTreeMap::new()),
            timeout_ms: None,
            max_in_flight: None,
            disabled: false,
            disabled_reason: None,
            failing_since: None,
            created_at: now,
            updated_at: now,
            unreadable: None,
        }
    }

    fn signing(endpoint: &Endpoint, now: DateTime<Utc>) -> Vec<&str> {
        endpoint
            .signing_previous(now)
            .map(|p| p.secret.as_str())
            .collect()
    }

    #[test]
    fn each_rotated_out_secret_signs_until_its_own_expiry() {
        let now = Utc::now();
        let hour = chrono::Duration::hours(1);
        let mut e = endpoint("s0");
        e.rotate_secret("s1".into(), now, hour);
        e.rotate_secret("s2".into(), now + chrono::Duration::minutes(1), hour * 24);
        assert_eq!(e.secret, "s2");
        assert_eq!(signing(&e, now), ["s1", "s0"]);
        assert_eq!(signing(&e, now + hour * 2), ["s1"]);
        // A zero overlap drops only the secret it replaces.
        e.rotate_secret("s3".into(), now, chrono::Duration::zero());
        assert_eq!(signing(&e, now), ["s1", "s0"]);
        e.end_overlap();
        assert!(signing(&e, now).is_empty());
    }

    #[test]
    fn at_most_five_rotated_out_secrets_sign_and_the_oldest_go_first() {
        let now = Utc::now();
        let mut e = endpoint("s0");
        for i in 1..=7 {
            e.rotate_secret(format!("s{i}"), now, chrono::Duration::hours(1));
        }
        assert_eq!(signing(&e, now), ["s6", "s5", "s4", "s3", "s2"]);
        // Expired ones are dropped by the next rotation.
        e.rotate_secret(
            "s8".into(),
            now + chrono::Duration::hours(2),
            chrono::Duration::hours(1),
        );
        assert_eq!(e.previous_secrets.0.len(), 1);
    }
}
