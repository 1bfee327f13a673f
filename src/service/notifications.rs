//! Notifications (one payload for one endpoint): validated against their
//! endpoint, committed, indexed; cancelled and retried.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::value::RawValue;
use uuid::Uuid;

use super::lookup::Resolved;
use super::payload::{allowed_url, content, deliver_at};
use super::{Service, ServiceError};
use crate::domain::bounded::BoundedMap;
use crate::domain::fields::{valid_event_type, valid_key, MAX_HEADERS};
use crate::domain::operator_event::spared_from;
use crate::domain::ordering::{valid_order_key, KeyOrdering};
use crate::domain::problem::{shown, ErrorCode, Problem};
use crate::domain::pull::Delivery;
use crate::domain::receiver_url::mask_url;
use crate::domain::schedule::ScheduleJson;
use crate::domain::status::Status;
use crate::domain::validate::{check_headers, parse_schedule};
use crate::store::cancel::Cancel;
use crate::store::delivery::Retry;
use crate::store::endpoints::EndpointRef;
use crate::store::notifications::{Inserted, NewNotification, Notification};
use crate::store::writes::Writes;

/// Most notifications (or events) in one batch request.
pub const MAX_BATCH: usize = 1000;

/// A notification as a producer submits it.
// `Debug` masks header values and the URL's query string.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CreateNotification)]
pub struct NotificationInput {
    /// The endpoint's id or uid.
    #[schema(min_length = 1, max_length = 128)]
    pub endpoint: String,
    /// A JSON payload, sent as the exact bytes given. Excludes `body`.
    #[schema(value_type = Option<serde_json::Value>)]
    pub payload: Option<Box<RawValue>>,
    /// A text body (with `content_type`, e.g. a form for Alipay-style
    /// receivers). Excludes `payload`.
    pub body: Option<String>,
    /// Default `application/json`.
    pub content_type: Option<String>,
    pub event_type: Option<String>,
    /// The producer's business key (`order-123:paid`), unique per endpoint:
    /// creating again with it is idempotent.
    #[schema(min_length = 1, max_length = 255)]
    pub key: Option<String>,
    /// RFC 3339 time before which nothing is sent. Excludes `delay`.
    #[schema(format = DateTime)]
    pub deliver_at: Option<String>,
    /// Wait before the notification is due (`"30s"`, `"2m"`). Excludes `deliver_at`.
    pub delay: Option<String>,
    /// Overrides the endpoint's schedule for this notification.
    #[schema(value_type = Option<crate::domain::schedule::ScheduleSpec>)]
    pub schedule: Option<ScheduleJson>,
    /// Extra headers for this notification's deliveries.
    #[schema(value_type = Option<std::collections::BTreeMap<String, String>>)]
    pub headers: Option<BoundedMap<MAX_HEADERS>>,
    /// Where to send this notification instead of the endpoint's URL
    /// (Alipay's per-order `notify_url`), signed with the endpoint's secret
    /// and sent on its schedule and policy. The address guard applies.
    #[schema(pattern = "^[Hh][Tt][Tt][Pp][Ss]?://", max_length = 2048)]
    pub url: Option<String>,
    /// The business object it is about (`order-123`): on an endpoint with
    /// `"ordering": "key"`, notifications of one key are attempted one at
    /// a time, in creation order. 1 to 256 bytes.
    #[schema(min_length = 1, max_length = 256)]
    pub order_key: Option<String>,
    /// The trace this notification belongs to: the create's
    /// `traceparent` header, kept as two of its headers (set by the API,
    /// not part of the body).
    #[serde(skip)]
    pub trace: Option<crate::telemetry::trace_context::TraceContext>,
}

impl NotificationInput {
    /// A test for `endpoint` (`POST /v1/endpoints/{endpoint}/test`): this
    /// payload and event type, the endpoint's schedule, nothing else.
    pub fn test(endpoint: String, payload: Box<RawValue>, event_type: Option<String>) -> Self {
        Self {
            endpoint,
            payload: Some(payload),
            body: None,
            content_type: None,
            event_type,
            key: None,
            deliver_at: None,
            delay: None,
            schedule: None,
            headers: None,
            url: None,
            order_key: None,
            trace: None,
        }
    }
}

impl std::fmt::Debug for NotificationInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotificationInput")
            .field("endpoint", &self.endpoint)
            .field("key", &self.key)
            .field("event_type", &self.event_type)
            .field("headers", &self.headers)
            .field("url", &self.url.as_deref().map(mask_url))
            .field("order_key", &self.order_key)
            .finish_non_exhaustive()
    }
}

/// A write that was accepted: new, or the one already stored under its key.
#[derive(Debug)]
pub enum Accepted<T> {
    Created(T),
    Existing(T),
}

impl Service {
    /// Creates one notification.
    pub async fn create_notification(
        &self,
        input: NotificationInput,
    ) -> Result<Accepted<Notification>, ServiceError> {
        let mut results = self.create_notifications(vec![input]).await?;
        Ok(results.pop().ok_or(ServiceError::Lost)??)
    }

    /// Creates notifications; each fails or succeeds alone, in order. One
    /// commit for all the valid ones.
    pub async fn create_notifications(
        &self,
        inputs: Vec<NotificationInput>,
    ) -> Result<Vec<Result<Accepted<Notification>, Problem>>, ServiceError> {
        let endpoints = self
            .resolve_endpoints(inputs.iter().map(|i| i.endpoint.as_str()))
            .await?;
        let now = self.now();
        let prepared: Vec<Result<NewNotification, Problem>> = inputs
            .into_iter()
            .map(|input| self.prepare(input, &endpoints, now))
            .collect();
        let mut writes = Writes::default();
        let slots: Vec<Result<(), Problem>> = prepared
            .into_iter()
            .map(|p| p.map(|item| writes.notifications.push(item)))
            .collect();
        let mut inserted = self.commit.submit(writes).await?.notifications.into_iter();
        Ok(slots
            .into_iter()
            .map(|slot| {
                slot.and_then(|()| match inserted.next() {
                    Some(Inserted::Created(n)) => Ok(Accepted::Created(n)),
                    Some(Inserted::Existing(n)) => Ok(Accepted::Existing(n)),
                    Some(Inserted::KeyConflict(n)) => Err(Problem::conflict(
                        ErrorCode::KeyConflict,
                        format!(
                            "notification {} already has this key on this endpoint, with another payload",
                            n.id
                        ),
                    )),
                    None => Err(Problem::conflict(ErrorCode::Conflict, "not committed")),
                })
            })
            .collect())
    }

    /// Validates one submission against its endpoint and builds the row.
    fn prepare(
        &self,
        input: NotificationInput,
        endpoints: &Resolved,
        now: DateTime<Utc>,
    ) -> Result<NewNotification, Problem> {
        let endpoint = endpoints
            .get(&EndpointRef::parse(&input.endpoint))
            .ok_or_else(|| {
                Problem::invalid(
                    ErrorCode::UnknownEndpoint,
                    "endpoint",
                    format!("no endpoint has id or uid `{}`", shown(&input.endpoint)),
                )
            })?;
        let content = content(
            input.payload,
            input.body,
            input.content_type,
            self.settings.api.max_payload_bytes,
        )?;
        content.readable_back()?;
        if let Some(event_type) = &input.event_type {
            if !valid_event_type(event_type) {
                return Err(Problem::invalid(
                    ErrorCode::InvalidValue,
                    "event_type",
                    "event_type is 1 to 255 of A-Z a-z 0-9 _ - . : /",
                ));
            }
        }
        if crate::domain::secret::Signing::of(&endpoint.secret)
            == crate::domain::secret::Signing::Rsa2
            && !crate::domain::secret::is_form(&content.content_type)
        {
            return Err(Problem::invalid(
                ErrorCode::InvalidValue,
                "content_type",
                "the endpoint signs with rsa2, which signs form bodies: send a `body` with content_type application/x-www-form-urlencoded",
            ));
        }
        if !endpoint.accepts_event_type(input.event_type.as_deref()) {
            return Err(Problem::invalid(
                ErrorCode::EventTypeNotSubscribed,
                "event_type",
                "the endpoint's event_types do not include this event type",
            ));
        }
        if let Some(key) = &input.key {
            if !valid_key(key) {
                return Err(invalid_key());
            }
        }
        if input
            .order_key
            .as_deref()
            .is_some_and(|k| !valid_order_key(k))
        {
            return Err(invalid_order_key());
        }
        let deliver_at = deliver_at(input.deliver_at, input.delay, now)?;
        let schedule = match &input.schedule {
            Some(value) => parse_schedule(&value.0, "schedule")?,
            None => endpoint.schedule(),
        };
        let mut headers = input.headers.map(BoundedMap::into_map).unwrap_or_default();
        check_headers(&headers, "headers")?;
        crate::telemetry::trace_context::TraceContext::keep(input.trace.as_ref(), &mut headers);
        let pull = endpoint.delivery == Delivery::Pull;
        if pull && input.url.is_some() {
            return Err(Problem::invalid(
                ErrorCode::ConflictingFields,
                "url",
                "the endpoint is pull: its consumers take notifications, so there is no url to send to",
            ));
        }
        let url = input
            .url
            .map(|url| allowed_url(&url, self.settings.sender.https_only, &self.guard))
            .transpose()?;
        let due = deliver_at.max(now)
            + chrono::Duration::from_std(schedule.first_delay()).unwrap_or_default();
        Ok(NewNotification {
            id: crate::domain::id::new_id(),
            endpoint_id: endpoint.id,
            key: input.key,
            event_type: input.event_type,
            content_type: content.content_type,
            body: content.body,
            headers,
            schedule,
            deliver_at,
            next_attempt_at: due,
            url,
            pull,
            order_key: input.order_key,
            ordered: endpoint.ordering == KeyOrdering::Key,
        })
    }

    /// Pending → cancelled; nothing is sent after. Cancelling a cancelled
    /// notification is a no-op. Operator alerts only with `admin`.
    pub async fn cancel_notification(
        &self,
        id: Uuid,
        admin: bool,
    ) -> Result<Notification, ServiceError> {
        let spare = spared_from(admin);
        match self.store.cancel_notification(id, spare).await? {
            Cancel::NotPending(n) if Some(n.endpoint_id) == spare => Err(Problem::forbidden(
                "operator alerts are cancelled with an admin token only",
            )
            .into()),
            Cancel::Cancelled(n) => {
                self.unindex(&[n.id]).await;
                Ok(n)
            }
            Cancel::NotPending(n) if n.status() == Status::Cancelled => Ok(n),
            Cancel::NotPending(n) => Err(Problem::conflict(
                ErrorCode::NotPending,
                format!(
                    "the notification ended `{}`; only pending ones can be cancelled",
                    n.status().as_str()
                ),
            )
            .into()),
            Cancel::NotFound => Err(Problem::not_found("notification").into()),
        }
    }

    /// Cancels every pending notification with this business key, on one
    /// endpoint or on all. Returns their ids. Operator alerts only with
    /// `admin`: without, naming the operator endpoint is refused and
    /// cancelling on all endpoints leaves them alone.
    pub async fn cancel_by_key(
        &self,
        key: &str,
        endpoint: Option<&str>,
        admin: bool,
    ) -> Result<Vec<Uuid>, ServiceError> {
        let spare = spared_from(admin);
        if !valid_key(key) {
            return Err(invalid_key().into());
        }
        let endpoint_id = match endpoint {
            Some(name) => Some(
                self.store
                    .find_endpoint(&EndpointRef::parse(name))
                    .await?
                    .ok_or_else(|| {
                        Problem::invalid(
                            ErrorCode::UnknownEndpoint,
                            "endpoint",
                            format!("no endpoint has id or uid `{}`", shown(name)),
                        )
                    })?
                    .id,
            ),
            None => None,
        };
        if endpoint_id.is_some() && endpoint_id == spare {
            return Err(Problem::forbidden(
                "operator alerts are cancelled with an admin token only",
            )
            .into());
        }
        let ids = self.store.cancel_by_key(key, endpoint_id, spare).await?;
        self.unindex(&ids).await;
        Ok(ids)
    }

    /// A failed (or pending) notification is due again now, in a new
    /// attempt series. A pending one being delivered at this moment
    /// (leased) is refused, so a retry never races its own attempt; a failed
    /// one is retried even while the lease of its last attempt is still
    /// being released.
    pub async fn retry_notification(&self, id: Uuid) -> Result<Notification, ServiceError> {
        let delivering = self.leased(id).await?;
        let mut now = self.now();
        let mut retry = self.store.retry_notification(id, now, delivering).await?;
        // A consumer's lease ran out a moment ago, and the sweep has not yet
        // recorded the attempt it ended: that attempt is recorded first (it
        // was one, DESIGN §10), then the new series starts after it.
        if matches!(retry, Retry::LeaseRanOut(_)) {
            self.expire_leases_of(&[id]).await?;
            now = self.now();
            retry = self.store.retry_notification(id, now, delivering).await?;
        }
        match retry {
            // Behind an earlier one of its key: that one's end releases it.
            Retry::Retried(n) if n.behind.is_some() => Ok(n),
            Retry::Retried(n) if n.pull => {
                self.signal_pull(&[n.endpoint_id]).await;
                Ok(n)
            }
            // Found leased: a failed row whose last attempt's lease is not
            // ended yet; that lease ends without a delivery, so the row is
            // put due beside it.
            Retry::Retried(n) if delivering => {
                self.index_due(&[(n.id, now)]).await;
                Ok(n)
            }
            // Found not leased, but a dispatcher may have claimed the row
            // since, between that look and this write: its delivery, under
            // way, is then the new series' first attempt, and the row is not
            // put due a second time beside it (two deliveries at once).
            Retry::Retried(n) => {
                self.index_due_unless_leased(&[(n.id, now)]).await;
                Ok(n)
            }
            Retry::LeaseRanOut(_) => Err(Problem::conflict(
                ErrorCode::InFlight,
                "the notification's lease has just run out and its attempt is being recorded: retry it in a moment",
            )
            .into()),
            Retry::InFlight(n) if n.pull => Err(Problem::conflict(
                ErrorCode::InFlight,
                "a consumer holds the notification under a lease right now: ack or nack it, or retry once the lease has run out",
            )
            .into()),
            Retry::InFlight(_) => Err(Problem::conflict(
                ErrorCode::InFlight,
                "the notification is being delivered now; retry it once that attempt is recorded",
            )
            .into()),
            Retry::NotRetryable(n) => Err(Problem::conflict(
                ErrorCode::NotRetryable,
                format!(
                    "the notification ended `{}`; only failed or pending ones can be retried",
                    n.status().as_str()
                ),
            )
            .into()),
            Retry::EndpointDeleted(_) => Err(Problem::conflict(
                ErrorCode::NotRetryable,
                "the notification's endpoint was deleted; nothing sends it again (create an endpoint and a notification to it instead)",
            )
            .into()),
            Retry::NotFound => Err(Problem::not_found("notification").into()),
        }
    }
}

pub(crate) fn invalid_order_key() -> Problem {
    Problem::invalid(
        ErrorCode::InvalidValue,
        "order_key",
        "order_key is 1 to 256 bytes without control characters",
    )
}

pub(crate) fn invalid_key() -> Problem {
    Problem::invalid(
        ErrorCode::InvalidValue,
        "key",
        "key is 1 to 255 bytes without control characters",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_never_prints_header_values_or_query_tokens() {
        let input: NotificationInput = serde_json::from_value(serde_json::json!({
            "endpoint": "shop", "payload": {}, "headers": {"Authorization": "Bearer hunter2"},
            "url": "https://x.example/hook?token=hunter2",
        }))
        .unwrap();
        let shown = format!("{input:?}");
        assert!(
            shown.contains("Authorization") && shown.contains("token=***"),
            "{shown}"
        );
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}
