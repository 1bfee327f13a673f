//! `/v1/endpoints`: receivers, their signing secrets and delivery policy.
//! Create and PATCH share one path: a create applies its fields to a default
//! endpoint, so every field is validated in one place.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use sqlx::types::Json as SqlJson;
use uuid::Uuid;

use super::auth::Audited;
use super::error::ApiError;
use super::extract::{parse_json, JsonBody, QueryParams};
use super::pagination::{encode_cursor, page, Page, PageParams};
use super::AppState;
use crate::config::Settings;
use crate::domain::fields::{
    header_problem, valid_event_type, valid_uid, MAX_HEADERS, MAX_HEADERS_BYTES,
};
use crate::domain::schedule::Schedule;
use crate::domain::secret::SigningSecret;
use crate::store::endpoints::{Endpoint, EndpointRef};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/endpoints", post(create).get(list))
        .route(
            "/v1/endpoints/{endpoint}",
            get(read).patch(update).delete(remove),
        )
        .route("/v1/endpoints/{endpoint}/secret", get(read_secret))
        .route(
            "/v1/endpoints/{endpoint}/secret/rotate",
            post(rotate_secret),
        )
        .route(
            "/v1/endpoints/{endpoint}/secret/previous",
            axum::routing::delete(end_overlap),
        )
}

/// Fields of an endpoint as a producer writes them. In a PATCH, an absent
/// field is left alone and `null` resets it to its default.
#[derive(Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EndpointFields {
    /// The producer's own name for the endpoint, usable wherever an id is.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<String>)]
    uid: Option<Option<String>>,
    /// `http` or `https` URL that receives the POSTs. Required on create.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<String>, pattern = "^https?://")]
    url: Option<Option<String>>,
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<String>)]
    description: Option<Option<String>>,
    /// `whsec_<base64 of 24 to 64 bytes>`; generated when absent. Set on
    /// create only: change it with `POST .../secret/rotate`.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<String>, pattern = "^whsec_[A-Za-z0-9+/]{32,88}={0,2}$")]
    secret: Option<Option<String>>,
    /// Event types this endpoint takes; absent or null: all.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<Vec<String>>)]
    event_types: Option<Option<Vec<String>>>,
    /// A preset name (`alipay`, `wechat`, `exponential`) or an array of
    /// durations (`["0s", "500ms", "2m"]`). Default `alipay`.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<super::openapi::ScheduleSpec>)]
    schedule: Option<Option<Value>>,
    /// When set, a 2xx only succeeds if the trimmed body equals it (`success`).
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<String>)]
    success_body: Option<Option<String>>,
    /// Statuses that end the schedule at once. Default `[410]`.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<Vec<u16>>)]
    permanent_statuses: Option<Option<Vec<u16>>>,
    /// Extra headers sent with every delivery.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<BTreeMap<String, String>>)]
    headers: Option<Option<BTreeMap<String, String>>>,
    /// Per-attempt time limit; default `sender.timeout_ms`.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<u64>)]
    timeout_ms: Option<Option<u64>>,
    /// Cap on concurrent deliveries to this endpoint.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<u32>)]
    max_in_flight: Option<Option<u32>>,
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<bool>)]
    disabled: Option<Option<bool>>,
}

/// Distinguishes an absent field (`None`) from an explicit `null` (`Some(None)`).
fn patch<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

impl EndpointFields {
    /// Applies the fields to `endpoint`, validating each.
    fn apply(self, endpoint: &mut Endpoint, settings: &Settings) -> Result<(), ApiError> {
        if let Some(uid) = self.uid {
            if let Some(uid) = &uid {
                if !valid_uid(uid) {
                    return Err(ApiError::invalid(
                        "invalid_value",
                        "uid",
                        "uid is 1 to 128 of A-Z a-z 0-9 _ - . : and must not look like a UUID",
                    ));
                }
            }
            endpoint.uid = uid;
        }
        if let Some(url) = self.url {
            let url =
                url.ok_or_else(|| ApiError::invalid("invalid_value", "url", "url cannot be null"))?;
            endpoint.url = check_url(&url, settings.sender.https_only)?;
        }
        if let Some(description) = self.description {
            let description = description.unwrap_or_default();
            if description.len() > 1000 || description.contains('\0') {
                return Err(ApiError::invalid(
                    "invalid_value",
                    "description",
                    "description is at most 1000 bytes",
                ));
            }
            endpoint.description = description;
        }
        if let Some(secret) = self.secret {
            endpoint.secret = match secret {
                Some(text) => SigningSecret::parse(&text)
                    .map_err(|e| ApiError::invalid("invalid_secret", "secret", e.to_string()))?
                    .as_str()
                    .to_string(),
                None => SigningSecret::generate().as_str().to_string(),
            };
        }
        if let Some(event_types) = self.event_types {
            if let Some(types) = &event_types {
                if types.is_empty() || types.len() > 100 {
                    return Err(ApiError::invalid(
                        "invalid_value",
                        "event_types",
                        "event_types lists 1 to 100 event types, or is null for all",
                    ));
                }
                if let Some((i, bad)) = types.iter().enumerate().find(|(_, t)| !valid_event_type(t))
                {
                    return Err(ApiError::invalid(
                        "invalid_value",
                        format!("event_types[{i}]"),
                        format!("`{bad}` is not an event type (1 to 255 of A-Z a-z 0-9 _ - . : /)"),
                    ));
                }
            }
            endpoint.event_types = event_types;
        }
        if let Some(schedule) = self.schedule {
            let schedule = match schedule {
                Some(value) => parse_schedule(&value, "schedule")?,
                None => Schedule::default(),
            };
            endpoint.set_schedule(&schedule);
        }
        if let Some(success_body) = self.success_body {
            if success_body
                .as_ref()
                .is_some_and(|b| b.trim().is_empty() || b.len() > 1024 || b.contains('\0'))
            {
                return Err(ApiError::invalid(
                    "invalid_value",
                    "success_body",
                    "success_body is 1 to 1024 bytes of non-blank text, or null",
                ));
            }
            endpoint.success_body = success_body.map(|b| b.trim().to_string());
        }
        if let Some(statuses) = self.permanent_statuses {
            let statuses = statuses.unwrap_or_else(|| vec![410]);
            if let Some(bad) = statuses.iter().find(|s| !(400..=599).contains(*s)) {
                return Err(ApiError::invalid(
                    "invalid_value",
                    "permanent_statuses",
                    format!("{bad} is not a 4xx or 5xx status"),
                ));
            }
            endpoint.permanent_statuses = statuses.into_iter().map(i32::from).collect();
        }
        if let Some(headers) = self.headers {
            let headers = headers.unwrap_or_default();
            check_headers(&headers, "headers")?;
            endpoint.headers = SqlJson(headers);
        }
        if let Some(timeout_ms) = self.timeout_ms {
            let max = settings.max_endpoint_timeout().as_millis() as u64;
            if timeout_ms.is_some_and(|t| !(1..=max).contains(&t)) {
                return Err(ApiError::invalid(
                    "invalid_value",
                    "timeout_ms",
                    format!("timeout_ms must be between 1 and {max}"),
                ));
            }
            endpoint.timeout_ms = timeout_ms.map(|t| t as i32);
        }
        if let Some(max_in_flight) = self.max_in_flight {
            if max_in_flight.is_some_and(|m| !(1..=10_000).contains(&m)) {
                return Err(ApiError::invalid(
                    "invalid_value",
                    "max_in_flight",
                    "max_in_flight must be between 1 and 10000",
                ));
            }
            endpoint.max_in_flight = max_in_flight.map(|m| m as i32);
        }
        if let Some(disabled) = self.disabled {
            endpoint.disabled = disabled.unwrap_or(false);
        }
        Ok(())
    }
}

pub fn parse_schedule(value: &Value, field: &str) -> Result<Schedule, ApiError> {
    Schedule::from_json(value)
        .map_err(|e| ApiError::invalid("invalid_schedule", field, e.to_string()))
}

pub fn check_headers(headers: &BTreeMap<String, String>, field: &str) -> Result<(), ApiError> {
    if headers.len() > MAX_HEADERS {
        return Err(ApiError::invalid(
            "invalid_value",
            field,
            format!("at most {MAX_HEADERS} custom headers"),
        ));
    }
    let total: usize = headers.iter().map(|(n, v)| n.len() + v.len()).sum();
    if total > MAX_HEADERS_BYTES {
        return Err(ApiError::TooLarge {
            message: format!(
                "the custom headers hold {total} bytes; at most {MAX_HEADERS_BYTES} in all"
            ),
            field: Some(field.to_string()),
        });
    }
    for (name, value) in headers {
        if let Some(problem) = header_problem(name, value) {
            return Err(ApiError::invalid(
                "invalid_header",
                format!("{field}.{name}"),
                problem,
            ));
        }
    }
    Ok(())
}

fn check_url(text: &str, https_only: bool) -> Result<String, ApiError> {
    let invalid = |message: &str| ApiError::invalid("invalid_url", "url", message);
    if text.len() > 2048 {
        return Err(invalid("url is at most 2048 bytes"));
    }
    let url = url::Url::parse(text.trim())
        .map_err(|e| invalid(&format!("url is not a valid URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid("url must use http or https"));
    }
    if https_only && url.scheme() != "https" {
        return Err(invalid("url must use https (sender.https_only)"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("url must name a host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            "url must not carry credentials (user:password@); send them in `headers`, whose values are kept secret",
        ));
    }
    Ok(url.to_string())
}

fn default_endpoint() -> Endpoint {
    let now = Utc::now();
    let schedule = Schedule::default();
    Endpoint {
        id: crate::domain::id::new_id(),
        uid: None,
        url: String::new(),
        description: String::new(),
        secret: SigningSecret::generate().as_str().to_string(),
        previous_secrets: SqlJson(Vec::new()),
        event_types: None,
        schedule_ms: schedule.delays_ms(),
        schedule_name: schedule.name().map(str::to_string),
        success_body: None,
        permanent_statuses: vec![410],
        headers: SqlJson(BTreeMap::new()),
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

/// An endpoint as the API shows it. The secret appears only when it is new
/// (create, rotate) or asked for (`GET .../secret`).
#[derive(Serialize, utoipa::ToSchema)]
pub struct EndpointView {
    pub id: Uuid,
    pub uid: Option<String>,
    pub url: String,
    pub description: String,
    pub event_types: Option<Vec<String>>,
    #[schema(value_type = super::openapi::ScheduleSpec)]
    pub schedule: Value,
    pub success_body: Option<String>,
    pub permanent_statuses: Vec<i32>,
    /// Custom headers by name; their values are never shown (`***`).
    pub headers: BTreeMap<String, String>,
    pub timeout_ms: Option<i32>,
    pub max_in_flight: Option<i32>,
    pub disabled: bool,
    /// `failing` when hookd disabled the endpoint because every attempt
    /// failed for `dispatcher.disable_failing_endpoints_after_hours`.
    pub disabled_reason: Option<String>,
    /// Since when every attempt to the endpoint has failed; null after a
    /// success.
    pub failing_since: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

impl EndpointView {
    fn of(endpoint: Endpoint) -> Self {
        Self {
            id: endpoint.id,
            schedule: endpoint.schedule().to_json(),
            uid: endpoint.uid,
            url: without_userinfo(endpoint.url),
            description: endpoint.description,
            event_types: endpoint.event_types,
            success_body: endpoint.success_body,
            permanent_statuses: endpoint.permanent_statuses,
            headers: masked(endpoint.headers.0),
            timeout_ms: endpoint.timeout_ms,
            max_in_flight: endpoint.max_in_flight,
            disabled: endpoint.disabled,
            disabled_reason: endpoint.disabled_reason,
            failing_since: endpoint.failing_since,
            created_at: endpoint.created_at,
            updated_at: endpoint.updated_at,
            secret: None,
        }
    }

    fn with_secret(endpoint: Endpoint) -> Self {
        let secret = endpoint.secret.clone();
        Self {
            secret: Some(secret),
            ..Self::of(endpoint)
        }
    }
}

/// What a response shows of custom headers: their names, never their
/// values (they often carry the receiver's credentials).
pub const MASK: &str = "***";

pub fn masked(headers: BTreeMap<String, String>) -> BTreeMap<String, String> {
    headers
        .into_keys()
        .map(|name| (name, MASK.to_string()))
        .collect()
}

/// An endpoint URL as responses show it. URLs with credentials are refused
/// now, but rows from before that rule may hold some: they are masked.
fn without_userinfo(url: String) -> String {
    match url::Url::parse(&url) {
        Ok(mut parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
            let _ = parsed.set_username(MASK);
            let _ = parsed.set_password(None);
            parsed.to_string()
        }
        _ => url,
    }
}

fn uid_conflict(error: crate::store::StoreError) -> ApiError {
    match error {
        crate::store::StoreError::Conflict(_) => ApiError::Conflict {
            code: "uid_taken",
            message: "another endpoint has this uid".into(),
        },
        other => other.into(),
    }
}

#[utoipa::path(operation_id = "create_endpoint", post, path = "/v1/endpoints", tag = "endpoints", request_body = EndpointFields,
    responses((status = 201, body = EndpointView), (status = 409, body = super::error::ErrorBody), (status = 422, body = super::error::ErrorBody)))]
pub async fn create(
    State(state): State<AppState>,
    JsonBody(fields): JsonBody<EndpointFields>,
) -> Result<(StatusCode, Extension<Audited>, Json<EndpointView>), ApiError> {
    if !matches!(fields.url, Some(Some(_))) {
        return Err(ApiError::Invalid {
            code: "missing_field",
            message: "url is required".into(),
            field: Some("url".into()),
        });
    }
    let mut endpoint = default_endpoint();
    fields.apply(&mut endpoint, &state.settings)?;
    let created = state
        .store
        .create_endpoint(&endpoint)
        .await
        .map_err(uid_conflict)?;
    Ok((
        StatusCode::CREATED,
        Extension(Audited(created.id)),
        Json(EndpointView::with_secret(created)),
    ))
}

#[utoipa::path(operation_id = "list_endpoints", get, path = "/v1/endpoints", tag = "endpoints",
    params(("limit" = Option<i64>, Query, minimum = 1, maximum = 500, description = "1 to 500, default 50"), ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page, unchanged")),
    responses((status = 200, body = Page<EndpointView>)))]
pub async fn list(
    State(state): State<AppState>,
    QueryParams(params): QueryParams<PageParams>,
) -> Result<Json<Page<EndpointView>>, ApiError> {
    let limit = params.limit()?;
    let rows = state
        .store
        .list_endpoints(params.cursor_id()?, limit + 1)
        .await?;
    Ok(Json(page(
        rows,
        limit,
        |e| encode_cursor(e.id),
        EndpointView::of,
    )))
}

#[utoipa::path(operation_id = "get_endpoint", get, path = "/v1/endpoints/{endpoint}", tag = "endpoints",
    params(("endpoint" = String, Path, description = "id or uid")),
    responses((status = 200, body = EndpointView), (status = 404, body = super::error::ErrorBody)))]
pub async fn read(
    State(state): State<AppState>,
    Path(endpoint): Path<String>,
) -> Result<Json<EndpointView>, ApiError> {
    let found = state
        .store
        .find_endpoint(&EndpointRef::parse(&endpoint))
        .await?;
    found
        .map(|e| Json(EndpointView::of(e)))
        .ok_or(ApiError::NotFound("endpoint"))
}

#[utoipa::path(operation_id = "update_endpoint", patch, path = "/v1/endpoints/{endpoint}", tag = "endpoints", request_body = EndpointFields,
    params(("endpoint" = String, Path, description = "id or uid")),
    responses((status = 200, body = EndpointView), (status = 404, body = super::error::ErrorBody), (status = 422, body = super::error::ErrorBody)))]
pub async fn update(
    State(state): State<AppState>,
    Path(endpoint): Path<String>,
    JsonBody(fields): JsonBody<EndpointFields>,
) -> Result<Json<EndpointView>, ApiError> {
    if fields.secret.is_some() {
        return Err(ApiError::invalid(
            "invalid_value",
            "secret",
            "change a secret with POST /v1/endpoints/{id}/secret/rotate, which keeps the old one signing for secrets.rotation_overlap_ms (or the overlap asked for)",
        ));
    }
    let settings = state.settings.clone();
    let updated = state
        .store
        .modify_endpoint(&EndpointRef::parse(&endpoint), |e| {
            fields.apply(e, &settings)
        })
        .await
        .map_err(uid_conflict)?
        .ok_or(ApiError::NotFound("endpoint"))??;
    state.endpoints.clear();
    Ok(Json(EndpointView::of(updated)))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Deleted {
    pub deleted: bool,
    /// Pending notifications of the endpoint that were cancelled.
    pub cancelled_notifications: usize,
}

#[utoipa::path(operation_id = "delete_endpoint", delete, path = "/v1/endpoints/{endpoint}", tag = "endpoints",
    params(("endpoint" = String, Path, description = "id or uid")),
    responses((status = 200, body = Deleted), (status = 404, body = super::error::ErrorBody)))]
pub async fn remove(
    State(state): State<AppState>,
    Path(endpoint): Path<String>,
) -> Result<Json<Deleted>, ApiError> {
    let cancelled = state
        .store
        .delete_endpoint(&EndpointRef::parse(&endpoint))
        .await?
        .ok_or(ApiError::NotFound("endpoint"))?;
    state.endpoints.clear();
    if let Err(error) = state.due.remove(&cancelled).await {
        // The dispatcher skips cancelled rows anyway; this only tidies Redis.
        tracing::debug!(%error, "could not remove cancelled notifications from the due index");
    }
    Ok(Json(Deleted {
        deleted: true,
        cancelled_notifications: cancelled.len(),
    }))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct SecretView {
    pub secret: String,
    /// Until when the last rotated-out secret still signs, if one does.
    pub previous_secret_expires_at: Option<DateTime<Utc>>,
    /// The rotated-out secrets that still sign beside `secret`, newest
    /// first: their expiry only, never their value.
    pub previous_secrets: Vec<PreviousSecretView>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct PreviousSecretView {
    /// Deliveries stop carrying a signature with this secret at this time.
    pub expires_at: DateTime<Utc>,
}

impl SecretView {
    fn of(endpoint: &Endpoint, now: DateTime<Utc>) -> Self {
        let previous: Vec<PreviousSecretView> = endpoint
            .signing_previous(now)
            .map(|p| PreviousSecretView {
                expires_at: p.expires_at,
            })
            .collect();
        Self {
            secret: endpoint.secret.clone(),
            previous_secret_expires_at: previous.iter().map(|p| p.expires_at).max(),
            previous_secrets: previous,
        }
    }
}

#[utoipa::path(operation_id = "get_endpoint_secret", get, path = "/v1/endpoints/{endpoint}/secret", tag = "endpoints",
    params(("endpoint" = String, Path, description = "id or uid")),
    responses((status = 200, body = SecretView), (status = 404, body = super::error::ErrorBody)))]
pub async fn read_secret(
    State(state): State<AppState>,
    Path(endpoint): Path<String>,
) -> Result<Json<SecretView>, ApiError> {
    let endpoint = state
        .store
        .find_endpoint(&EndpointRef::parse(&endpoint))
        .await?
        .ok_or(ApiError::NotFound("endpoint"))?;
    if let Some(error) = endpoint.unreadable.clone() {
        let what = format!("endpoint {}", endpoint.id);
        return Err(crate::store::StoreError::Sealed { what, error }.into());
    }
    Ok(Json(SecretView::of(&endpoint, Utc::now())))
}

#[derive(Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateSecret {
    /// The new secret, `whsec_<base64 of 24 to 64 bytes>`; generated when absent.
    #[schema(pattern = "^whsec_[A-Za-z0-9+/]{32,88}={0,2}$")]
    pub secret: Option<String>,
    /// How long the current secret keeps signing beside the new one, as a
    /// duration (`"24h"`, `"30m"`, `"0s"` for not at all); at most 7 days.
    /// Default `secrets.rotation_overlap_ms`. Secrets rotated out before
    /// keep their own expiry (at most 5 sign at once).
    #[schema(example = "24h")]
    pub overlap: Option<String>,
}

impl RotateSecret {
    fn overlap(&self, settings: &Settings) -> Result<chrono::Duration, ApiError> {
        let Some(text) = &self.overlap else {
            return Ok(chrono::Duration::from_std(settings.rotation_overlap()).unwrap_or_default());
        };
        let invalid = || {
            ApiError::invalid(
                "invalid_value",
                "overlap",
                "overlap is a duration such as \"24h\" or \"0s\", at most 7 days",
            )
        };
        let ms = crate::domain::schedule::parse_duration(text).map_err(|_| invalid())?;
        if ms > crate::config::MAX_ROTATION_OVERLAP.as_millis() as u64 {
            return Err(invalid());
        }
        Ok(chrono::Duration::milliseconds(ms as i64))
    }
}

#[utoipa::path(operation_id = "rotate_endpoint_secret", post, path = "/v1/endpoints/{endpoint}/secret/rotate", tag = "endpoints", request_body = Option<RotateSecret>,
    params(("endpoint" = String, Path, description = "id or uid")),
    responses((status = 200, body = EndpointView, description = "the endpoint with its new secret"), (status = 404, body = super::error::ErrorBody)))]
pub async fn rotate_secret(
    State(state): State<AppState>,
    Path(endpoint): Path<String>,
    body: axum::body::Bytes,
) -> Result<Json<EndpointView>, ApiError> {
    // The body is optional: an empty one asks for a generated secret.
    let request: RotateSecret = if body.iter().all(u8::is_ascii_whitespace) {
        RotateSecret::default()
    } else {
        parse_json(&body)?
    };
    let overlap = request.overlap(&state.settings)?;
    let new_secret = match request.secret {
        Some(text) => SigningSecret::parse(&text)
            .map_err(|e| ApiError::invalid("invalid_secret", "secret", e.to_string()))?,
        None => SigningSecret::generate(),
    };
    let rotated = state
        .store
        .modify_endpoint::<ApiError>(&EndpointRef::parse(&endpoint), |e| {
            e.rotate_secret(new_secret.as_str().to_string(), Utc::now(), overlap);
            Ok(())
        })
        .await?
        .ok_or(ApiError::NotFound("endpoint"))??;
    state.endpoints.clear();
    Ok(Json(EndpointView::with_secret(rotated)))
}

#[utoipa::path(operation_id = "end_endpoint_secret_overlap", delete, path = "/v1/endpoints/{endpoint}/secret/previous", tag = "endpoints",
    params(("endpoint" = String, Path, description = "id or uid")),
    responses((status = 200, body = SecretView, description = "the secret, with no rotated-out secret signing any more"), (status = 404, body = super::error::ErrorBody)))]
pub async fn end_overlap(
    State(state): State<AppState>,
    Path(endpoint): Path<String>,
) -> Result<Json<SecretView>, ApiError> {
    let ended = state
        .store
        .modify_endpoint::<ApiError>(&EndpointRef::parse(&endpoint), |e| {
            e.end_overlap();
            Ok(())
        })
        .await?
        .ok_or(ApiError::NotFound("endpoint"))??;
    state.endpoints.clear();
    Ok(Json(SecretView::of(&ended, Utc::now())))
}
