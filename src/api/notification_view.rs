//! How a notification is shown: its view, with receiver URLs masked for
//! callers who may not see them whole (`url_secret` endpoints included).

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;
use uuid::Uuid;

use super::auth::SeesSecrets;
use super::waiting::Holds;
use super::AppState;
use crate::domain::fields::masked;
use crate::domain::status::Status;
use crate::domain::waiting::Waiting;
use crate::store::notifications::Notification;

#[derive(Serialize, utoipa::ToSchema)]
pub struct LastAttempt {
    pub at: DateTime<Utc>,
    pub status_code: Option<i32>,
    pub error: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct NotificationView {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    /// The event this notification delivers, when it is one's delivery.
    #[schema(required = true)]
    pub event_id: Option<Uuid>,
    /// Where it is sent, when not to its endpoint's URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[schema(required = true)]
    pub key: Option<String>,
    /// The business object it is about; on an endpoint ordered by key,
    /// notifications of one `order_key` go one at a time.
    #[schema(required = true)]
    pub order_key: Option<String>,
    /// Its place in its key's order (1, 2, 3 …, and 1 again once retention
    /// removed every notification of the key), sent as `webhook-sequence`;
    /// `null` unless its endpoint orders by key.
    #[schema(required = true)]
    pub sequence: Option<i64>,
    #[schema(required = true)]
    pub event_type: Option<String>,
    pub status: Status,
    /// Attempts made so far, over every series.
    pub attempts: i32,
    /// When the next attempt is due; `null` once final. While `leased`,
    /// when the lease runs out.
    #[schema(required = true)]
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// A pull consumer holds it under a lease that has not run out: its
    /// attempt is under way.
    pub leased: bool,
    pub deliver_at: DateTime<Utc>,
    #[schema(required = true)]
    pub last_attempt: Option<LastAttempt>,
    pub content_type: String,
    #[schema(value_type = crate::domain::schedule::ScheduleSpec)]
    pub schedule: Value,
    /// Custom headers by name; their values are never shown (`***`),
    /// except a trace context's (`traceparent`, `tracestate`).
    pub headers: BTreeMap<String, String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[schema(required = true)]
    pub completed_at: Option<DateTime<Utc>>,
    /// The JSON payload (single reads only, JSON content types).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<serde_json::Value>)]
    pub payload: Option<Box<RawValue>>,
    /// The body as text (single reads only, other content types).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Why it waits while pending; `null` once final.
    /// `reason` is one of `scheduled`, `due`, `in_flight`, `rate_limit`,
    /// `circuit_open`, `ordering`, `endpoint_disabled`, `pull`; `until`
    /// when that ends, if known; `behind` the earlier notification of its
    /// key it waits for (`ordering`).
    #[schema(required = true)]
    pub waiting: Option<Waiting>,
}

impl NotificationView {
    /// Without its payload; `holds` says why it waits.
    pub(super) fn summary(n: Notification, holds: &Holds) -> Self {
        Self {
            waiting: holds.of(&n),
            id: n.id,
            endpoint_id: n.endpoint_id,
            event_id: n.event_id,
            url: n.url.clone(),
            status: n.status(),
            schedule: n.schedule().to_json(),
            last_attempt: n.last_attempt_at.map(|at| LastAttempt {
                at,
                status_code: n.last_status_code,
                error: n.last_error.clone(),
            }),
            key: n.key,
            order_key: n.order_key,
            sequence: n.sequence,
            event_type: n.event_type,
            attempts: n.attempts,
            next_attempt_at: n.next_attempt_at,
            leased: n.leased,
            deliver_at: n.deliver_at,
            content_type: n.content_type,
            headers: masked(n.headers),
            created_at: n.created_at,
            updated_at: n.updated_at,
            completed_at: n.completed_at,
            payload: None,
            body: None,
        }
    }

    /// As `caller` may see it: the URL's query-string values and
    /// credential-like path segments masked for callers without the
    /// `secrets` scope, and its whole path when its endpoint is one of
    /// `secret_paths` (`url_secret`).
    pub(super) fn shown_to(mut self, caller: &SeesSecrets, secret_paths: &HashSet<Uuid>) -> Self {
        let whole_path = secret_paths.contains(&self.endpoint_id);
        self.url = self.url.map(|url| caller.url(url, whole_path));
        self
    }

    pub(super) fn full(mut n: Notification, holds: &Holds) -> Self {
        let body = std::mem::take(&mut n.body);
        let content_type = n.content_type.clone();
        let mut view = Self::summary(n, holds);
        (view.payload, view.body) = super::body::shown(&content_type, body);
        view
    }
}

/// Of the endpoints of `notifications` with a URL of their own, those whose
/// whole path `caller` may not see (`url_secret`). Nothing to look up for a
/// caller who sees secrets, or without per-notification URLs. If the
/// endpoints cannot be read, every one is taken for one: masking more is
/// the safe side.
pub(super) async fn secret_paths<'a>(
    state: &AppState,
    caller: &SeesSecrets,
    notifications: impl IntoIterator<Item = &'a Notification>,
) -> HashSet<Uuid> {
    if caller.sees() {
        return HashSet::new();
    }
    let ids: HashSet<Uuid> = notifications
        .into_iter()
        .filter(|n| n.url.is_some())
        .map(|n| n.endpoint_id)
        .collect();
    if ids.is_empty() {
        return ids;
    }
    state
        .service
        .url_secret_endpoints(ids.iter().copied())
        .await
        .unwrap_or(ids)
}
