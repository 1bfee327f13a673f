//! The store's boundary and write rules, against a real PostgreSQL: typed
//! statuses and outcomes in their text columns; what recording a batch of
//! attempts writes with them; the connections a process keeps. Disabling
//! failing endpoints: `endpoint_health.rs`; versions: `endpoint_version.rs`.

use chrono::{DateTime, Utc};
use hookd::domain::health;
use hookd::domain::id;
use hookd::domain::operator_event::OPERATOR_ENDPOINT_ID;
use hookd::domain::outcome::{FailReason, Outcome, OutcomeKind};
use hookd::domain::status::Status;
use hookd::store::postgres::PgStore;
use hookd::store::recording::AttemptRecord;
use hookd::store::StoreError;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;
use uuid::Uuid;

#[sqlx::test]
async fn every_status_and_outcome_round_trips_through_its_text_column(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    for status in Status::ALL {
        let (back, text): (Status, String) = sqlx::query_as("SELECT $1::text, $1::text")
            .bind(status)
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(back, status);
        assert_eq!(text, status.as_str());
    }
    for outcome in [
        OutcomeKind::Succeeded,
        OutcomeKind::Retry,
        OutcomeKind::Failed,
    ] {
        let (back, text): (OutcomeKind, String) = sqlx::query_as("SELECT $1::text, $1::text")
            .bind(outcome)
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(back, outcome);
        assert_eq!(text, outcome.as_str());
    }
    // Arrays too: the recorder binds a batch's outcomes as one text[].
    let texts: Vec<String> = sqlx::query_scalar("SELECT unnest($1::text[])")
        .bind(vec![OutcomeKind::Retry, OutcomeKind::Failed])
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(texts, ["retry", "failed"]);
}

#[sqlx::test]
async fn a_stored_value_outside_the_enum_is_an_error_not_a_fallback(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    for text in ["done", "PENDING", ""] {
        let decoded = sqlx::query_scalar::<_, Status>("SELECT $1::text")
            .bind(text)
            .fetch_one(&pool)
            .await;
        assert!(decoded.is_err(), "{text:?} decoded as {decoded:?}");
    }
}

// What a recorded batch writes beside the attempts: the notification's
// decided state, its operator event, the endpoint's health; and the
// disabling of failing endpoints. Driven through `PgStore` directly, with the
// decisions made by `domain/` as the dispatcher makes them.

pub(crate) async fn endpoint(pool: &PgPool, id: Uuid) {
    sqlx::query(
        "INSERT INTO endpoints (id, uid, url, secret, schedule_ms, managed) \
         VALUES ($1, $2, 'http://127.0.0.1:1/hook', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', '{0}', $3)",
    )
    .bind(id)
    .bind((id != OPERATOR_ENDPOINT_ID).then(|| format!("e-{}", id.simple())))
    .bind(id == OPERATOR_ENDPOINT_ID)
    .execute(pool)
    .await
    .unwrap();
}

pub(crate) async fn notification(pool: &PgPool, endpoint_id: Uuid) -> Uuid {
    let id = id::new_id();
    sqlx::query(
        "INSERT INTO notifications (id, endpoint_id, key, content_type, body, schedule_ms, deliver_at, \
             next_attempt_at) \
         VALUES ($1, $2, $3, 'application/json', '\\x7b7d', '{0}', now(), now())",
    )
    .bind(id)
    .bind(endpoint_id)
    .bind(format!("order-{}", id.simple()))
    .execute(pool)
    .await
    .unwrap();
    id
}

pub(crate) use crate::conformance::fixtures::attempt;

pub(crate) async fn record(
    store: &PgStore,
    batch: &[AttemptRecord],
) -> Result<Vec<Uuid>, StoreError> {
    let health = health::observe(
        batch
            .iter()
            .map(|r| (r.endpoint_id, r.outcome == Outcome::Succeeded, r.started_at)),
    );
    store
        .record_attempts(batch, &health)
        .await
        .map(|recorded| recorded.moved)
}

/// (status, attempts count, attempts listed, operator events about it).
async fn row_state(pool: &PgPool, id: Uuid) -> (Status, i32, i64, i64) {
    let (status, attempts, events): (Status, i32, i64) = sqlx::query_as(
        "SELECT status, attempts, \
             (SELECT count(*) FROM notifications WHERE key LIKE 'notification.failed:' || $1 || ':%') \
         FROM notifications WHERE id = $1",
    )
    .bind(id)
    .fetch_one(pool)
    .await
    .unwrap();
    let listed = PgStore::new(pool.clone())
        .list_attempts(id, 0, 100)
        .await
        .unwrap();
    (status, attempts, listed.len() as i64, events)
}

/// Rows of `attempts` a notification has.
async fn attempt_rows(pool: &PgPool, id: Uuid) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM attempts WHERE notification_id = $1")
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap()
}

pub(crate) async fn failing_since(pool: &PgPool, id: Uuid) -> Option<DateTime<Utc>> {
    sqlx::query_scalar("SELECT failing_since FROM endpoints WHERE id = $1")
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap()
}

pub(crate) const FAILED: Outcome = Outcome::Failed(FailReason::Exhausted);

#[sqlx::test]
async fn a_failure_commits_with_its_operator_event_and_recording_it_again_adds_neither(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let store = PgStore::new(pool.clone());
    endpoint(&pool, OPERATOR_ENDPOINT_ID).await;
    let shop = id::new_id();
    endpoint(&pool, shop).await;
    let id = notification(&pool, shop).await;

    let first = attempt(id, shop, 1, FAILED);
    assert_eq!(
        record(&store, std::slice::from_ref(&first)).await.unwrap(),
        [id]
    );
    assert_eq!(row_state(&pool, id).await, (Status::Failed, 1, 1, 1));
    let (event_type, body, due): (String, Vec<u8>, bool) = sqlx::query_as(
        "SELECT event_type, body, needs_index AND next_attempt_at IS NOT NULL FROM notifications \
         WHERE endpoint_id = $1",
    )
    .bind(OPERATOR_ENDPOINT_ID)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(event_type, "notification.failed");
    assert_eq!(body, first.event.as_ref().unwrap().body);
    assert!(due, "the event waits for the housekeeper to index it");

    // A duplicate delivery of the same attempt (a lease that expired).
    assert!(record(&store, &[first]).await.unwrap().is_empty());
    assert_eq!(row_state(&pool, id).await, (Status::Failed, 1, 1, 1));
}

#[sqlx::test]
async fn an_attempt_that_lost_to_a_cancel_is_counted_and_fires_no_event(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let store = PgStore::new(pool.clone());
    endpoint(&pool, OPERATOR_ENDPOINT_ID).await;
    let shop = id::new_id();
    endpoint(&pool, shop).await;
    let id = notification(&pool, shop).await;
    store.cancel_notification(id, None).await.unwrap();

    assert!(record(&store, &[attempt(id, shop, 1, FAILED)])
        .await
        .unwrap()
        .is_empty());
    // Counted (`attempts` 1, one listed), but no `notification.failed`.
    assert_eq!(row_state(&pool, id).await, (Status::Cancelled, 1, 1, 0));
    assert_eq!(failing_since(&pool, shop).await, None);
}

#[sqlx::test]
async fn an_attempt_whose_notification_is_gone_writes_no_attempt_row(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    // `attempts` has no foreign key: the recording statement itself keeps
    // attempt rows to notifications that exist (one deleted by retention
    // while its last delivery was in flight, say).
    let store = PgStore::new(pool.clone());
    let shop = id::new_id();
    endpoint(&pool, shop).await;
    let (kept, gone) = (
        notification(&pool, shop).await,
        notification(&pool, shop).await,
    );
    sqlx::query("DELETE FROM notifications WHERE id = $1")
        .bind(gone)
        .execute(&pool)
        .await
        .unwrap();

    let retry = Outcome::Retry {
        at: Utc::now() + chrono::Duration::seconds(60),
    };
    let moved = record(
        &store,
        &[attempt(kept, shop, 1, retry), attempt(gone, shop, 1, retry)],
    )
    .await
    .unwrap();
    assert_eq!(moved, [kept]);
    let recorded: Vec<Uuid> = sqlx::query_scalar("SELECT notification_id FROM attempts")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(recorded, [kept]);
}

#[sqlx::test]
async fn failing_since_is_set_by_the_first_failure_kept_by_later_ones_and_cleared_by_a_success(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let store = PgStore::new(pool.clone());
    let shop = id::new_id();
    endpoint(&pool, shop).await;
    let retry = || Outcome::Retry {
        at: Utc::now() + chrono::Duration::seconds(60),
    };
    let (a, b) = (
        notification(&pool, shop).await,
        notification(&pool, shop).await,
    );

    let first = attempt(a, shop, 1, retry());
    record(&store, std::slice::from_ref(&first)).await.unwrap();
    let since = failing_since(&pool, shop).await;
    assert_eq!(
        since.map(|t| t.timestamp_micros()),
        Some(first.started_at.timestamp_micros())
    );
    assert_eq!(row_state(&pool, a).await, (Status::Pending, 1, 1, 0));

    record(&store, &[attempt(a, shop, 2, retry())])
        .await
        .unwrap();
    assert_eq!(failing_since(&pool, shop).await, since);

    record(&store, &[attempt(b, shop, 1, Outcome::Succeeded)])
        .await
        .unwrap();
    assert_eq!(failing_since(&pool, shop).await, None);
    assert_eq!(row_state(&pool, b).await, (Status::Succeeded, 1, 1, 0));

    // An attempt whose notification did not move says nothing about health.
    record(&store, &[attempt(b, shop, 1, retry())])
        .await
        .unwrap();
    assert_eq!(failing_since(&pool, shop).await, None);
}

#[sqlx::test]
async fn a_notification_delivered_at_its_first_attempt_keeps_that_attempt_in_its_own_row(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let store = PgStore::new(pool.clone());
    let shop = id::new_id();
    endpoint(&pool, shop).await;
    let (first, later) = (
        notification(&pool, shop).await,
        notification(&pool, shop).await,
    );
    let delivered = AttemptRecord {
        status_code: Some(200),
        response_body: Some("success".into()),
        duration_ms: 7,
        ..attempt(first, shop, 1, Outcome::Succeeded)
    };
    record(&store, std::slice::from_ref(&delivered))
        .await
        .unwrap();
    assert_eq!(attempt_rows(&pool, first).await, 0, "no row of attempts");
    let listed = store.list_attempts(first, 0, 100).await.unwrap();
    assert_eq!(listed.len(), 1);
    let kept = &listed[0];
    assert_eq!(
        (
            kept.number,
            kept.outcome,
            kept.status_code,
            kept.response_body.as_deref(),
            kept.duration_ms,
            kept.error_code.as_deref(),
            kept.started_at.timestamp_micros(),
        ),
        (
            1,
            OutcomeKind::Succeeded,
            Some(200),
            Some("success"),
            7,
            None,
            delivered.started_at.timestamp_micros(),
        )
    );
    assert!(store.list_attempts(first, 1, 100).await.unwrap().is_empty());

    // The same attempt recorded again by a process whose lease ran out
    // (here with another outcome) adds no second attempt 1.
    let again = attempt(
        first,
        shop,
        1,
        Outcome::Retry {
            at: Utc::now() + chrono::Duration::seconds(60),
        },
    );
    assert!(record(&store, &[again]).await.unwrap().is_empty());
    assert_eq!(attempt_rows(&pool, first).await, 0);
    let listed = store.list_attempts(first, 0, 100).await.unwrap();
    assert_eq!(
        listed.iter().map(|a| a.outcome).collect::<Vec<_>>(),
        [OutcomeKind::Succeeded]
    );

    // Delivered at its second attempt: both attempts are rows, in order.
    let retry = Outcome::Retry {
        at: Utc::now() + chrono::Duration::seconds(60),
    };
    record(&store, &[attempt(later, shop, 1, retry)])
        .await
        .unwrap();
    record(&store, &[attempt(later, shop, 2, Outcome::Succeeded)])
        .await
        .unwrap();
    assert_eq!(attempt_rows(&pool, later).await, 2);
    let listed = store.list_attempts(later, 0, 100).await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|a| (a.number, a.outcome))
            .collect::<Vec<_>>(),
        [(1, OutcomeKind::Retry), (2, OutcomeKind::Succeeded)]
    );
}

#[sqlx::test]
async fn concurrent_batches_changing_the_same_endpoints_in_any_order_all_commit(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let store = PgStore::new(pool.clone());
    let (a, b) = (id::new_id(), id::new_id());
    endpoint(&pool, a).await;
    endpoint(&pool, b).await;
    for round in 0..10 {
        let mut batches = Vec::new();
        for task in 0..6 {
            let on_a = attempt(notification(&pool, a).await, a, 1, FAILED);
            let on_b = attempt(notification(&pool, b).await, b, 1, FAILED);
            batches.push(if task % 2 == 0 {
                vec![on_a, on_b]
            } else {
                vec![on_b, on_a]
            });
        }
        let recorded = futures::future::join_all(batches.iter().map(|batch| record(&store, batch)));
        for result in recorded.await {
            assert_eq!(
                result.expect("no deadlock, no error").len(),
                2,
                "round {round}"
            );
        }
        assert!(failing_since(&pool, a).await.is_some());
        assert!(failing_since(&pool, b).await.is_some());
        sqlx::query("UPDATE endpoints SET failing_since = NULL")
            .execute(&pool)
            .await
            .unwrap();
    }
}

#[sqlx::test]
async fn a_started_process_keeps_its_minimum_of_connections_open_while_idle(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    use crate::helpers::{
        database_url, eventually, free_port, new_prefix, redis_url, HookdProcess,
    };
    let db = database_url(&pool);
    let database: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(&pool)
        .await
        .unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let log = std::env::temp_dir().join(format!("hookd-pool-{}.log", new_prefix()));
    let mut hookd = HookdProcess::start_logged(
        &db,
        &redis_url(),
        &new_prefix(),
        &[("HOOKD_DATABASE__MIN_CONNECTIONS", "6")],
        &listen,
        &log,
    );
    // Ready first: a signal before hookd handles signals would kill it.
    HookdProcess::wait_ready(
        &format!("http://{listen}"),
        std::time::Duration::from_secs(20),
    )
    .await;
    // An idle hookd needs one or two at a time; the pool holds six.
    eventually(
        std::time::Duration::from_secs(20),
        "six connections of hookd's",
        || async {
            let open: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE application_name = 'hookd' AND datname = $1",
            )
            .bind(&database)
            .fetch_one(&pool)
            .await
            .ok()?;
            (open >= 6).then_some(())
        },
    )
    .await;
    hookd.signal("TERM");
    assert_eq!(
        hookd.wait(std::time::Duration::from_secs(20)).await,
        Some(0)
    );
    let _ = std::fs::remove_file(&log);
}
