//! What the cases build their inputs from: endpoints, notifications, events
//! and attempt records, made with hookd's own types and `domain/` decisions
//! as its callers make them, and written through the seams only.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use hookd::domain::health;
use hookd::domain::id::new_id;
use hookd::domain::operator_event::{FailedNotification, OperatorEvent};
use hookd::domain::outcome::{FailReason, Outcome};
use hookd::domain::pull::Delivery;
use hookd::domain::schedule::Schedule;
use hookd::domain::status::{after_attempt, expected, keeping, Status};
use hookd::store::endpoints::Endpoint;
use hookd::store::events::{EventInserted, NewDelivery, NewEvent};
use hookd::store::notifications::{Inserted, NewNotification, Notification};
use hookd::store::recording::AttemptRecord;
use hookd::store::seams::{DeliveryStore, HousekeepingStore, ReadStore, WriteStore};
use hookd::store::writes::Writes;
use uuid::Uuid;

use super::Backend;

pub const FAILED: Outcome = Outcome::Failed(FailReason::Exhausted);

/// A retry `seconds` from now.
pub fn retry_in(seconds: i64) -> Outcome {
    Outcome::Retry {
        at: Utc::now() + Duration::seconds(seconds),
    }
}

/// A push endpoint with a uid of its own, as a create request makes one.
pub fn endpoint() -> Endpoint {
    let now = Utc::now();
    let schedule = Schedule::default();
    let id = new_id();
    Endpoint {
        id,
        uid: Some(format!("shop-{}", id.simple())),
        owner: None,
        url: Some("http://127.0.0.1:1/hook".into()),
        delivery: Delivery::Push,
        description: "a shop".into(),
        secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
        previous_secrets: Vec::new(),
        event_types: None,
        filter: None,
        schedule_ms: schedule.delays_ms(),
        schedule_name: schedule.name().map(str::to_string),
        schedule_jitter: 0.0,
        url_secret: false,
        portal_generation: 0,
        rate_limit_per_second: None,
        rate_limit_burst: None,
        fresh_share: None,
        breaker: Default::default(),
        success_body: None,
        success_filter: None,
        permanent_statuses: vec![410],
        headers: BTreeMap::new(),
        timeout_ms: None,
        max_in_flight: None,
        ordering: Default::default(),
        ordering_on_failure: Default::default(),
        disabled: false,
        disabled_reason: None,
        failing_since: None,
        created_at: now,
        updated_at: now,
        unreadable: None,
    }
}

/// A pull endpoint: consumers take its notifications.
pub fn pull_endpoint() -> Endpoint {
    Endpoint {
        url: None,
        delivery: Delivery::Pull,
        ..endpoint()
    }
}

pub async fn create<S: Backend>(store: &S, endpoint: Endpoint) -> Endpoint {
    WriteStore::create_endpoint(store, &endpoint).await.unwrap()
}

/// A keyless notification to `endpoint`, due a second ago (pull when the
/// endpoint is).
pub fn notification(endpoint: &Endpoint) -> NewNotification {
    due_at(endpoint, Utc::now() - Duration::seconds(1))
}

/// A keyless notification to `endpoint`, due at `at`.
pub fn due_at(endpoint: &Endpoint, at: DateTime<Utc>) -> NewNotification {
    let id = new_id();
    NewNotification {
        id,
        endpoint_id: endpoint.id,
        key: None,
        event_type: Some("order.paid".into()),
        content_type: "application/json".into(),
        body: format!(r#"{{"order":"{}"}}"#, id.simple()).into_bytes(),
        headers: BTreeMap::new(),
        schedule: Schedule::default(),
        deliver_at: at,
        next_attempt_at: at,
        url: None,
        pull: endpoint.delivery == Delivery::Pull,
        order_key: None,
        ordered: false,
    }
}

/// Commits notifications in one commit; what became of each, in order.
pub async fn commit<S: Backend>(store: &S, items: Vec<NewNotification>) -> Vec<Inserted> {
    WriteStore::commit(
        store,
        Writes {
            notifications: items,
            ..Writes::default()
        },
    )
    .await
    .unwrap()
    .notifications
}

/// Commits one notification that must be created; its id.
pub async fn commit_new<S: Backend>(store: &S, item: NewNotification) -> Uuid {
    match commit(store, vec![item]).await.remove(0) {
        Inserted::Created(row) => row.id,
        other => panic!("not created: {other:?}"),
    }
}

/// A due notification to `endpoint`, committed; its id.
pub async fn pending<S: Backend>(store: &S, endpoint: &Endpoint) -> Uuid {
    commit_new(store, notification(endpoint)).await
}

/// An event of `owner` with one delivery to each endpoint, committed; its
/// id and its deliveries' ids.
pub async fn event<S: Backend>(
    store: &S,
    owner: Option<&str>,
    event_type: &str,
    to: &[&Endpoint],
) -> (Uuid, Vec<Uuid>) {
    let id = new_id();
    let now = Utc::now() - Duration::seconds(1);
    let deliveries: Vec<NewDelivery> = to
        .iter()
        .map(|endpoint| NewDelivery {
            id: new_id(),
            headers: None,
            ordered: false,
            place: Default::default(),
            endpoint_id: endpoint.id,
            schedule: Schedule::default(),
            next_attempt_at: now,
            pull: endpoint.delivery == Delivery::Pull,
        })
        .collect();
    let ids = deliveries.iter().map(|d| d.id).collect();
    let committed = WriteStore::commit(
        store,
        Writes {
            events: vec![NewEvent {
                id,
                owner: owner.map(str::to_string),
                event_type: event_type.into(),
                key: None,
                content_type: "application/json".into(),
                body: br#"{"event":true}"#.to_vec(),
                deliver_at: now,
                headers: BTreeMap::new(),
                order_key: None,
                deliveries,
            }],
            ..Writes::default()
        },
    )
    .await
    .unwrap();
    assert!(matches!(
        committed.events.as_slice(),
        [EventInserted::Created { .. }]
    ));
    (id, ids)
}

/// An attempt as the dispatcher records it, with operator events on: the
/// state `domain::status::after_attempt` decides, the `notification.failed`
/// event when it ends failed.
pub fn attempt(id: Uuid, endpoint_id: Uuid, number: i32, outcome: Outcome) -> AttemptRecord {
    let error = (outcome != Outcome::Succeeded).then_some(("connect", "connection refused"));
    let next = after_attempt(&outcome, error);
    let event = (next.status == Status::Failed)
        .then(|| {
            OperatorEvent::notification_failed(
                &FailedNotification {
                    notification_id: id,
                    endpoint_id,
                    key: None,
                    event_type: None,
                    attempts: number,
                    last_status_code: None,
                    last_error: next.last_error.as_deref(),
                },
                Utc::now(),
            )
        })
        .flatten();
    let expected = expected(number - 1, 0, None, false);
    let keep = keeping(number, &outcome, error.is_some(), &expected);
    AttemptRecord {
        notification_id: id,
        endpoint_id,
        number,
        expected,
        keep,
        started_at: Utc::now(),
        due_at: None,
        duration_ms: 1,
        status_code: None,
        response_body: None,
        response_headers: None,
        sent_headers: None,
        error_code: error.map(|(code, _)| code.to_string()),
        error_message: error.map(|(_, message)| message.to_string()),
        outcome,
        tells_of_endpoint: true,
        next,
        event,
        ordered: false,
    }
}

/// Records a batch with the health `domain::health::observe` decides of
/// it, as the dispatcher does; the ids that moved.
pub async fn record<S: Backend>(store: &S, batch: &[AttemptRecord]) -> Vec<Uuid> {
    let health = health::observe(
        batch
            .iter()
            .map(|r| (r.endpoint_id, r.outcome == Outcome::Succeeded, r.started_at)),
    );
    DeliveryStore::record_attempts(store, batch, &health)
        .await
        .unwrap()
        .moved
}

pub async fn get<S: Backend>(store: &S, id: Uuid) -> Notification {
    ReadStore::get_notification(store, id)
        .await
        .unwrap()
        .expect("the notification exists")
}

/// The operator endpoint, configured: operator events have somewhere to go.
pub async fn operator_on<S: Backend>(store: &S) {
    HousekeepingStore::sync_operator_endpoint(
        store,
        Some(hookd::store::seams::OperatorTarget::plain(
            "http://127.0.0.1:1/operator",
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        )),
    )
    .await
    .unwrap();
}

/// The keys of the operator events stored (notifications to the operator
/// endpoint), newest first.
pub async fn operator_event_keys<S: Backend>(store: &S) -> Vec<Option<String>> {
    ReadStore::list_notifications(
        store,
        &hookd::store::notifications::NotificationFilter {
            endpoint_id: Some(hookd::domain::operator_event::OPERATOR_ENDPOINT_ID),
            limit: 100,
            ..Default::default()
        },
    )
    .await
    .unwrap()
    .into_iter()
    .map(|n| n.key)
    .collect()
}

/// Microseconds: what every backend keeps of a time.
pub fn micros(at: DateTime<Utc>) -> i64 {
    at.timestamp_micros()
}

/// A notification of `key` to `endpoint`, which orders by key.
pub fn keyed(endpoint: &Endpoint, key: &str) -> NewNotification {
    NewNotification {
        order_key: Some(key.into()),
        ordered: true,
        ..notification(endpoint)
    }
}
