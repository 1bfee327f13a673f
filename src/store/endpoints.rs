//! Endpoints: a receiver's URL, signing secrets and delivery policy.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use uuid::Uuid;

use super::{Store, StoreError};
use crate::domain::schedule::Schedule;

/// How a path names an endpoint: by id or by the producer's uid.
#[derive(Debug, Clone, PartialEq, Eq)]
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

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Endpoint {
    pub id: Uuid,
    pub uid: Option<String>,
    pub url: String,
    pub description: String,
    pub secret: String,
    pub previous_secret: Option<String>,
    pub previous_secret_expires_at: Option<DateTime<Utc>>,
    pub event_types: Option<Vec<String>>,
    pub schedule_ms: Vec<i64>,
    pub schedule_name: Option<String>,
    pub success_body: Option<String>,
    pub permanent_statuses: Vec<i32>,
    pub headers: Json<BTreeMap<String, String>>,
    pub timeout_ms: Option<i32>,
    pub max_in_flight: Option<i32>,
    pub disabled: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Endpoint {
    pub fn schedule(&self) -> Schedule {
        Schedule::from_stored(self.schedule_name.clone(), &self.schedule_ms)
    }

    pub fn set_schedule(&mut self, schedule: &Schedule) {
        self.schedule_ms = schedule.delays_ms();
        self.schedule_name = schedule.name().map(str::to_string);
    }

    /// Whether a notification of `event_type` may be sent here.
    pub fn accepts_event_type(&self, event_type: Option<&str>) -> bool {
        match (&self.event_types, event_type) {
            (Some(types), Some(event_type)) => types.iter().any(|t| t == event_type),
            _ => true,
        }
    }
}

const COLUMNS: &str = "id, uid, url, description, secret, previous_secret, previous_secret_expires_at, \
     event_types, schedule_ms, schedule_name, success_body, permanent_statuses, headers, timeout_ms, \
     max_in_flight, disabled, created_at, updated_at";

impl Store {
    pub async fn create_endpoint(&self, endpoint: &Endpoint) -> Result<Endpoint, StoreError> {
        let sql = format!(
            "INSERT INTO endpoints ({COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, NULL, NULL, $6, $7, $8, $9, $10, $11, $12, $13, $14, now(), now()) \
             RETURNING {COLUMNS}"
        );
        let created = sqlx::query_as::<_, Endpoint>(&sql)
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
            .bind(&endpoint.headers)
            .bind(endpoint.timeout_ms)
            .bind(endpoint.max_in_flight)
            .bind(endpoint.disabled)
            .fetch_one(&self.pool)
            .await?;
        Ok(created)
    }

    pub async fn find_endpoint(&self, by: &EndpointRef) -> Result<Option<Endpoint>, StoreError> {
        if !by.is_possible() {
            return Ok(None);
        }
        let (id, uid) = by.as_params();
        let sql = format!(
            "SELECT {COLUMNS} FROM endpoints WHERE (id = $1 OR uid = $2) AND deleted_at IS NULL"
        );
        Ok(sqlx::query_as::<_, Endpoint>(&sql)
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
             WHERE (id = ANY($1) OR uid = ANY($2)) AND deleted_at IS NULL"
        );
        Ok(sqlx::query_as::<_, Endpoint>(&sql)
            .bind(ids)
            .bind(uids)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Newest first, after the cursor id.
    pub async fn list_endpoints(
        &self,
        before: Option<Uuid>,
        limit: i64,
    ) -> Result<Vec<Endpoint>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM endpoints \
             WHERE deleted_at IS NULL AND ($1::uuid IS NULL OR id < $1) \
             ORDER BY id DESC LIMIT $2"
        );
        Ok(sqlx::query_as::<_, Endpoint>(&sql)
            .bind(before)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?)
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
            "SELECT {COLUMNS} FROM endpoints WHERE (id = $1 OR uid = $2) AND deleted_at IS NULL FOR UPDATE"
        );
        let Some(mut endpoint) = sqlx::query_as::<_, Endpoint>(&sql)
            .bind(id)
            .bind(uid)
            .fetch_optional(&mut *tx)
            .await?
        else {
            return Ok(None);
        };
        if let Err(refused) = change(&mut endpoint) {
            return Ok(Some(Err(refused)));
        }
        let sql = format!(
            "UPDATE endpoints SET uid = $2, url = $3, description = $4, secret = $5, previous_secret = $6, \
             previous_secret_expires_at = $7, event_types = $8, schedule_ms = $9, schedule_name = $10, \
             success_body = $11, permanent_statuses = $12, headers = $13, timeout_ms = $14, \
             max_in_flight = $15, disabled = $16, updated_at = now() \
             WHERE id = $1 RETURNING {COLUMNS}"
        );
        let updated = sqlx::query_as::<_, Endpoint>(&sql)
            .bind(endpoint.id)
            .bind(&endpoint.uid)
            .bind(&endpoint.url)
            .bind(&endpoint.description)
            .bind(&endpoint.secret)
            .bind(&endpoint.previous_secret)
            .bind(endpoint.previous_secret_expires_at)
            .bind(&endpoint.event_types)
            .bind(&endpoint.schedule_ms)
            .bind(&endpoint.schedule_name)
            .bind(&endpoint.success_body)
            .bind(&endpoint.permanent_statuses)
            .bind(&endpoint.headers)
            .bind(endpoint.timeout_ms)
            .bind(endpoint.max_in_flight)
            .bind(endpoint.disabled)
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
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
             WHERE (id = $1 OR uid = $2) AND deleted_at IS NULL RETURNING id",
        )
        .bind(id)
        .bind(uid)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(endpoint_id) = deleted else {
            return Ok(None);
        };
        let cancelled: Vec<Uuid> = sqlx::query_scalar(
            "UPDATE notifications SET status = 'cancelled', next_attempt_at = NULL, \
             completed_at = now(), updated_at = now() \
             WHERE endpoint_id = $1 AND status = 'pending' RETURNING id",
        )
        .bind(endpoint_id)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(cancelled))
    }
}
