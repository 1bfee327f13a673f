//! The embedded store's delivery side on real SQLite files: claims with
//! their endpoints, recording attempts (the write guard, inline first
//! successes, operator events, health), cancels and the hand-over to pull.
//! Written before the seams were implemented on SQLite, through its
//! inherent methods; the conformance suite (`conformance/delivery.rs`) now
//! runs the same cases through the seams on both backends, and these keep
//! the few it does not have (an attempt that moved nothing leaves health
//! alone, no operator event once the operator endpoint is deleted).

use chrono::{Duration, Utc};
use hookd::domain::health;
use hookd::domain::operator_event::{OperatorEvent, OPERATOR_ENDPOINT_ID};
use hookd::domain::outcome::{FailReason, Outcome, OutcomeKind};
use hookd::domain::status::Status;
use hookd::store::notifications::Notification;
use hookd::store::recording::AttemptRecord;
use hookd::store::sqlite::SqliteStore;
use uuid::Uuid;

use crate::conformance::fixtures::attempt;
use crate::sqlite_writes::{commit_one, endpoint, new_notification, store};

const FAILED: Outcome = Outcome::Failed(FailReason::Exhausted);

fn retry_in(seconds: i64) -> Outcome {
    Outcome::Retry {
        at: Utc::now() + Duration::seconds(seconds),
    }
}

async fn record(store: &SqliteStore, batch: &[AttemptRecord]) -> Vec<Uuid> {
    let health = health::observe(
        batch
            .iter()
            .map(|r| (r.endpoint_id, r.outcome == Outcome::Succeeded, r.started_at)),
    );
    store.record_attempts(batch, &health).await.unwrap()
}

async fn pending(store: &SqliteStore, endpoint_id: Uuid) -> Uuid {
    let inserted = commit_one(store, new_notification(endpoint_id, None, "{}")).await;
    match inserted {
        hookd::store::notifications::Inserted::Created(row) => row.id,
        other => panic!("{other:?}"),
    }
}

async fn get(store: &SqliteStore, id: Uuid) -> Notification {
    store.get_notification(id).await.unwrap().expect("exists")
}

async fn attempts_of(store: &SqliteStore, id: Uuid) -> Vec<(i32, OutcomeKind)> {
    store
        .list_attempts(id, 0, 10)
        .await
        .unwrap()
        .iter()
        .map(|a| (a.number, a.outcome))
        .collect()
}

async fn failing_since(store: &SqliteStore, id: Uuid) -> Option<i64> {
    sqlx::query_scalar("SELECT failing_since FROM endpoints WHERE id = ?")
        .bind(id)
        .fetch_one(store.writer())
        .await
        .unwrap()
}

/// The operator endpoint, as `sync_operator_endpoint` would make it.
async fn operator_on(store: &SqliteStore) {
    sqlx::query(
        "INSERT INTO endpoints (id, url, secret, schedule_ms, managed, created_at, updated_at) \
         VALUES (?, 'http://127.0.0.1:1/operator', 'whsec_x', '[1000]', 1, 0, 0)",
    )
    .bind(OPERATOR_ENDPOINT_ID)
    .execute(store.writer())
    .await
    .unwrap();
}

async fn operator_events(store: &SqliteStore) -> Vec<(Option<String>, bool)> {
    sqlx::query_as(
        "SELECT key, needs_index = 1 FROM notifications WHERE endpoint_id = ? ORDER BY id",
    )
    .bind(OPERATOR_ENDPOINT_ID)
    .fetch_all(store.writer())
    .await
    .unwrap()
}

#[tokio::test]
async fn sqlite_an_attempt_moves_its_notification_once_and_a_second_record_changes_nothing() {
    let (_dir, store) = store().await;
    let shop = endpoint(&store, 0).await;
    let (a, b) = (pending(&store, shop).await, pending(&store, shop).await);
    let first = attempt(a, shop, 1, retry_in(60));
    let mut moved = record(&store, &[first.clone(), attempt(b, shop, 1, FAILED)]).await;
    moved.sort();
    let mut both = vec![a, b];
    both.sort();
    assert_eq!(moved, both);
    let row = get(&store, a).await;
    assert_eq!((row.status, row.attempts), (Status::Pending, 1));
    assert_eq!(
        row.next_attempt_at.map(|t| t.timestamp_micros()),
        first.next.next_attempt_at.map(|t| t.timestamp_micros())
    );
    assert_eq!(
        row.last_error.as_deref(),
        Some("connect: connection refused")
    );
    let failed = get(&store, b).await;
    assert_eq!(failed.status, Status::Failed);
    assert!(failed.completed_at.is_some() && failed.next_attempt_at.is_none());

    assert!(record(&store, &[attempt(a, shop, 1, FAILED)])
        .await
        .is_empty());
    assert_eq!(get(&store, a).await.status, Status::Pending);
    assert_eq!(attempts_of(&store, a).await, [(1, OutcomeKind::Retry)]);
    assert!(record(&store, &[attempt(a, shop, 3, FAILED)])
        .await
        .is_empty());
    assert_eq!(get(&store, a).await.attempts, 1);
}

#[tokio::test]
async fn sqlite_an_attempt_that_lost_to_a_cancel_changes_only_its_own_attempt_row() {
    let (_dir, store) = store().await;
    let shop = endpoint(&store, 0).await;
    let id = pending(&store, shop).await;
    store.cancel_notifications(&[id]).await.unwrap();
    assert!(record(&store, &[attempt(id, shop, 1, retry_in(60))])
        .await
        .is_empty());
    let row = get(&store, id).await;
    assert_eq!((row.status, row.attempts), (Status::Cancelled, 0));
    assert_eq!(attempts_of(&store, id).await, [(1, OutcomeKind::Retry)]);
}

#[tokio::test]
async fn sqlite_a_first_success_keeps_its_attempt_inline_and_a_late_duplicate_adds_none() {
    let (_dir, store) = store().await;
    let shop = endpoint(&store, 0).await;
    let id = pending(&store, shop).await;
    let delivered = AttemptRecord {
        status_code: Some(200),
        response_body: Some("thanks".into()),
        duration_ms: 7,
        ..attempt(id, shop, 1, Outcome::Succeeded)
    };
    assert_eq!(record(&store, std::slice::from_ref(&delivered)).await, [id]);
    let row = get(&store, id).await;
    assert_eq!(
        (row.status, row.attempts, row.last_status_code),
        (Status::Succeeded, 1, Some(200))
    );
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM attempts")
        .fetch_one(store.writer())
        .await
        .unwrap();
    assert_eq!(rows, 0, "kept inline");
    let check = |listed: Vec<hookd::store::attempts::Attempt>| {
        let [kept] = listed.as_slice() else {
            panic!("{listed:?}")
        };
        assert_eq!(
            (
                kept.number,
                kept.outcome,
                kept.status_code,
                kept.response_body.as_deref()
            ),
            (1, OutcomeKind::Succeeded, Some(200), Some("thanks"))
        );
    };
    check(store.list_attempts(id, 0, 10).await.unwrap());
    assert!(record(&store, &[attempt(id, shop, 1, retry_in(60))])
        .await
        .is_empty());
    check(store.list_attempts(id, 0, 10).await.unwrap());
}

#[tokio::test]
async fn sqlite_a_failure_commits_with_its_operator_event_once() {
    let (_dir, store) = store().await;
    let shop = endpoint(&store, 0).await;
    let (without, with) = (pending(&store, shop).await, pending(&store, shop).await);
    assert_eq!(
        record(&store, &[attempt(without, shop, 1, FAILED)]).await,
        [without]
    );
    operator_on(&store).await;
    let failure = attempt(with, shop, 1, FAILED);
    let event = failure.event.clone().expect("an event");
    assert_eq!(record(&store, std::slice::from_ref(&failure)).await, [with]);
    assert!(record(&store, &[failure]).await.is_empty());
    assert_eq!(
        operator_events(&store).await,
        [(Some(event.key.clone()), true)]
    );
    let stored: Uuid = sqlx::query_scalar("SELECT id FROM notifications WHERE endpoint_id = ?")
        .bind(OPERATOR_ENDPOINT_ID)
        .fetch_one(store.writer())
        .await
        .unwrap();
    let stored = get(&store, stored).await;
    assert_eq!(stored.body, event.body);
    assert_eq!(
        stored.event_type.as_deref(),
        Some(OperatorEvent::NOTIFICATION_FAILED)
    );

    // A deleted operator endpoint receives nothing more.
    sqlx::query("UPDATE endpoints SET deleted_at = 1 WHERE id = ?")
        .bind(OPERATOR_ENDPOINT_ID)
        .execute(store.writer())
        .await
        .unwrap();
    let after = pending(&store, shop).await;
    assert_eq!(
        record(&store, &[attempt(after, shop, 1, FAILED)]).await,
        [after]
    );
    assert_eq!(operator_events(&store).await.len(), 1);
}

#[tokio::test]
async fn sqlite_endpoint_health_is_set_by_a_first_failure_kept_and_cleared_by_a_success() {
    let (_dir, store) = store().await;
    let shop = endpoint(&store, 0).await;
    let (a, b) = (pending(&store, shop).await, pending(&store, shop).await);
    let first = AttemptRecord {
        started_at: Utc::now() - Duration::minutes(5),
        ..attempt(a, shop, 1, retry_in(60))
    };
    record(&store, std::slice::from_ref(&first)).await;
    let since = Some(first.started_at.timestamp_micros());
    assert_eq!(failing_since(&store, shop).await, since);
    record(&store, &[attempt(a, shop, 2, retry_in(60))]).await;
    assert_eq!(failing_since(&store, shop).await, since, "kept");
    record(&store, &[attempt(b, shop, 1, Outcome::Succeeded)]).await;
    assert_eq!(failing_since(&store, shop).await, None);
    // An attempt that moved nothing says nothing of health.
    record(&store, &[attempt(b, shop, 1, FAILED)]).await;
    assert_eq!(failing_since(&store, shop).await, None);
}

#[tokio::test]
async fn sqlite_a_claim_loads_its_notifications_and_each_stale_endpoint_once() {
    let (_dir, store) = store().await;
    let shop = endpoint(&store, 3).await;
    let (a, b) = (pending(&store, shop).await, pending(&store, shop).await);
    let claimed = store.load_claimed(&[a, b], &|_, _| false).await.unwrap();
    assert_eq!(claimed.notifications.len(), 2);
    assert!(claimed
        .notifications
        .iter()
        .all(|n| n.endpoint_version == Some(3) && n.body == b"{}"));
    let ids: Vec<Uuid> = claimed.endpoints.iter().map(|e| e.id).collect();
    assert_eq!(ids, [shop]);
    assert!(!claimed.endpoints[0].deleted && !claimed.endpoints[0].pull);
    let current = store.load_claimed(&[a, b], &|_, v| v == 3).await.unwrap();
    assert!(current.endpoints.is_empty());

    // A deleted endpoint says so, and its rows can be cancelled.
    sqlx::query("UPDATE endpoints SET deleted_at = 1, version = 4 WHERE id = ?")
        .bind(shop)
        .execute(store.writer())
        .await
        .unwrap();
    let claimed = store.load_claimed(&[a], &|_, v| v == 3).await.unwrap();
    assert!(claimed.endpoints[0].deleted);
    store.cancel_notifications(&[a]).await.unwrap();
    assert_eq!(get(&store, a).await.status, Status::Cancelled);
}

#[tokio::test]
async fn sqlite_claimed_rows_of_an_endpoint_now_pull_are_handed_to_its_consumers() {
    let (_dir, store) = store().await;
    let shop = endpoint(&store, 0).await;
    let id = pending(&store, shop).await;
    store.hand_to_pull(&[id]).await.unwrap();
    assert!(!get(&store, id).await.pull, "still push");
    sqlx::query("UPDATE endpoints SET delivery = 'pull', url = NULL WHERE id = ?")
        .bind(shop)
        .execute(store.writer())
        .await
        .unwrap();
    store.hand_to_pull(&[id]).await.unwrap();
    assert!(get(&store, id).await.pull);
}

#[tokio::test]
async fn sqlite_a_record_after_a_retry_changes_nothing_and_retries_refuse_what_they_must() {
    use hookd::store::delivery::Retry;
    let (_dir, store) = store().await;
    let shop = endpoint(&store, 0).await;
    let id = pending(&store, shop).await;
    let late = attempt(id, shop, 1, retry_in(60));
    assert!(matches!(
        store
            .retry_notification(id, Utc::now(), true)
            .await
            .unwrap(),
        Retry::InFlight(_)
    ));
    record(&store, &[attempt(id, shop, 1, FAILED)]).await;
    let Retry::Retried(row) = store
        .retry_notification(id, Utc::now(), false)
        .await
        .unwrap()
    else {
        panic!("a failed notification is retried")
    };
    assert_eq!(
        (row.status, row.series_start, row.attempts),
        (Status::Pending, 1, 1)
    );
    assert!(row.completed_at.is_none());
    // The series before the retry is over: its attempt changes nothing.
    assert!(record(&store, &[late]).await.is_empty());
    assert_eq!(get(&store, id).await.series_start, 1);
    store.cancel_notification(id, None).await.unwrap();
    assert!(matches!(
        store
            .retry_notification(id, Utc::now(), false)
            .await
            .unwrap(),
        Retry::NotRetryable(_)
    ));
    assert!(matches!(
        store
            .retry_notification(Uuid::now_v7(), Utc::now(), false)
            .await
            .unwrap(),
        Retry::NotFound
    ));
}

#[tokio::test]
async fn sqlite_a_cancel_spares_the_given_endpoint_and_cancels_by_key_once() {
    use hookd::store::cancel::Cancel;
    let (_dir, store) = store().await;
    let (shop, other) = (endpoint(&store, 0).await, endpoint(&store, 0).await);
    let id = pending(&store, shop).await;
    assert!(matches!(
        store.cancel_notification(id, Some(shop)).await.unwrap(),
        Cancel::NotPending(row) if row.status == Status::Pending
    ));
    assert!(matches!(
        store.cancel_notification(id, Some(other)).await.unwrap(),
        Cancel::Cancelled(row) if row.status == Status::Cancelled && row.completed_at.is_some()
    ));
    assert!(matches!(
        store.cancel_notification(id, None).await.unwrap(),
        Cancel::NotPending(_)
    ));
    let (a, b) = (
        commit_one(&store, new_notification(shop, Some("k"), "{}")).await,
        commit_one(&store, new_notification(other, Some("k"), "{}")).await,
    );
    let (a, b) = match (a, b) {
        (
            hookd::store::notifications::Inserted::Created(a),
            hookd::store::notifications::Inserted::Created(b),
        ) => (a.id, b.id),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        store.cancel_by_key("k", None, Some(other)).await.unwrap(),
        [a]
    );
    assert_eq!(
        store.cancel_by_key("k", Some(other), None).await.unwrap(),
        [b]
    );
    assert!(store
        .cancel_by_key("k", None, None)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(store.cancel_event(Uuid::now_v7()).await.unwrap(), None);
}
