//! An endpoint change or delete locks its endpoint, then its pending
//! notifications; a recording that changes the endpoint's health locks
//! them the other way round. PostgreSQL breaks the deadlock by failing
//! one: the change or delete it fails runs again instead of answering
//! 503 (`try_again_after`). Staged on a real server: the recording's side
//! is a transaction of the test's that takes the same locks in the
//! recording's order.

use std::time::Duration;

use sqlx::PgPool;
use uuid::Uuid;

use super::PgStore;
use crate::domain::ordering::KeyOrdering;
use crate::store::endpoints::EndpointRef;

const ENDPOINT: Uuid = Uuid::from_u128(0x0000_0000_0000_7000_8000_0000_0000_0001);

/// An endpoint without ordering and one pending notification of it with
/// an order key; returns the notification's id.
async fn endpoint_with_one_pending(pool: &PgPool) -> Uuid {
    sqlx::query(
        "INSERT INTO endpoints (id, url, secret, schedule_ms) \
         VALUES ($1, 'http://receiver.test/', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', '{0}')",
    )
    .bind(ENDPOINT)
    .execute(pool)
    .await
    .unwrap();
    sqlx::query_scalar(
        "INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, status, \
             attempts, deliver_at, next_attempt_at, order_key) \
         VALUES (hookd_uuid_v7(), $1, 'application/json', '\\x7b7d', '{0,60000}', 'pending', 0, \
             now(), now(), 'order-1') RETURNING id",
    )
    .bind(ENDPOINT)
    .fetch_one(pool)
    .await
    .unwrap()
}

/// A store whose sessions look for a deadlock 5 s into a wait (the
/// server's default is 1 s): PostgreSQL looks once per wait, so the cycle
/// must be closed by then, and a test machine may stall for a second.
async fn store_checking_late(pool: &PgPool) -> PgStore {
    let options = (*pool.connect_options())
        .clone()
        .options([("deadlock_timeout", "5s")]);
    PgStore::new(PgPool::connect_with(options).await.unwrap())
}

/// Runs `work` against a recording that holds the notification's row
/// and, once `work` waits for that row, asks for the endpoint's: a
/// deadlock, which PostgreSQL breaks by failing `work`'s transaction (its
/// check runs first: the recording's session waits a minute before it
/// checks, `work`'s 5 s, `store_checking_late`). The recording then
/// commits; returns what `work` returned.
async fn against_a_recording<T: Send + 'static>(
    pool: &PgPool,
    notification: Uuid,
    work: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    let mut recording = pool.begin().await.unwrap();
    sqlx::query("SET LOCAL deadlock_timeout = '60s'")
        .execute(&mut *recording)
        .await
        .unwrap();
    sqlx::query("SELECT id FROM notifications WHERE id = $1 FOR UPDATE")
        .bind(notification)
        .execute(&mut *recording)
        .await
        .unwrap();
    let work = tokio::spawn(work);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(pool)
        .await
        .unwrap();
        if waiting > 0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the work never waited for the notification's row"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    sqlx::query("SELECT id FROM endpoints WHERE id = $1 FOR NO KEY UPDATE")
        .bind(ENDPOINT)
        .execute(&mut *recording)
        .await
        .expect("the recording is not the one PostgreSQL fails");
    recording.commit().await.unwrap();
    work.await.unwrap()
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn an_endpoint_delete_that_loses_a_deadlock_to_a_recording_runs_again(pool: PgPool) {
    let notification = endpoint_with_one_pending(&pool).await;
    let store = store_checking_late(&pool).await;
    let deleted = against_a_recording(&pool, notification, async move {
        store.delete_endpoint(&EndpointRef::Id(ENDPOINT)).await
    })
    .await;
    let cancelled = deleted
        .expect("the delete runs again")
        .expect("it was there");
    assert_eq!(cancelled, [notification]);
}

#[sqlx::test(migrator = "super::MIGRATOR")]
async fn an_endpoint_change_that_loses_a_deadlock_to_a_recording_runs_again(pool: PgPool) {
    let notification = endpoint_with_one_pending(&pool).await;
    let store = store_checking_late(&pool).await;
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = runs.clone();
    // Ordering turned on puts the endpoint's pending keyed notifications
    // in line: its transaction updates the notification's row.
    let changed = against_a_recording(&pool, notification, async move {
        store
            .modify_endpoint(&EndpointRef::Id(ENDPOINT), |endpoint| {
                counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                endpoint.ordering = KeyOrdering::Key;
                Ok::<(), ()>(())
            })
            .await
    })
    .await;
    let endpoint = changed
        .expect("the change runs again")
        .expect("it was there")
        .expect("the change refused nothing");
    assert_eq!(endpoint.ordering, KeyOrdering::Key);
    assert_eq!(
        runs.load(std::sync::atomic::Ordering::Relaxed),
        2,
        "the change ran twice"
    );
}
