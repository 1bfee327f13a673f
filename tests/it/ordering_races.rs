//! Ordered delivery per key (docs/design.md §17) under races and crashes,
//! on PostgreSQL, where ends and creates run in transactions of their
//! own: a kill -9 with a key's head in flight, a notification stranded
//! behind a final one, a create racing its tail's end, and a tail
//! cancelled while its predecessor's success is recorded (each staged
//! with a transaction of the test's own, not timed).

use hookd::domain::status::Status;
use hookd::store::seams::{DeliveryStore, HousekeepingStore};
use reqwest::StatusCode;
use serde_json::json;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::conformance::fixtures::{
    attempt, commit_new, create, endpoint, get, keyed, record, FAILED,
};
use crate::helpers::{
    database_url, eventually, new_prefix, redis_url, spawn_app_settings, test_settings_with_prefix,
    HookdProcess, TestApp,
};
use crate::ordering::{notify_keyed, read, sequences, wait_status, DEADLINE};
use crate::receiver::{Receiver, Reply};

/// Turns the release trigger on or off (PostgreSQL): what a create racing
/// its predecessor's end would see, made to happen.
pub(crate) async fn release_trigger(pool: &sqlx::PgPool, on: bool) {
    let verb = if on { "ENABLE" } else { "DISABLE" };
    let sql = format!("ALTER TABLE notifications {verb} TRIGGER notifications_release_order");
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .execute(pool)
        .await
        .unwrap();
}

/// Server mode: a process killed while its key's head is in flight. The
/// successor goes only once the head's lease has run out, the head been
/// sent again by another process and acknowledged.
#[sqlx::test]
async fn a_kill_9_while_a_keys_head_is_in_flight_keeps_its_successor_waiting(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let prefix = new_prefix();
    let app = spawn_app_settings(
        pool.clone(),
        test_settings_with_prefix(&redis_url(), &prefix, "[dispatcher]\nenabled = false\n"),
    )
    .await;
    let receiver = Receiver::start().await;
    // The first request hangs until its process dies; the rest succeed.
    receiver.reply("/k9", vec![Reply::Hang, Reply::status(200)]);
    let endpoint = app
        .endpoint(json!({"url": receiver.url("/k9"), "ordering": "key"}))
        .await;
    let endpoint = endpoint["id"].as_str().unwrap();
    let ids = notify_keyed(&app, endpoint, "order-9", 2).await;
    // A lease just past the 2 s timeout and its margin: the head's runs out
    // about 7 s after the kill.
    let env = [
        ("HOOKD_SENDER__TIMEOUT_MS", "2000"),
        ("HOOKD_DISPATCHER__LEASE_MS", "7001"),
    ];
    let db = database_url(&pool);
    let mut first = HookdProcess::start(&db, &redis_url(), &prefix, &env);
    receiver.wait_for("/k9", 1, DEADLINE).await;
    first.signal("KILL");
    first.wait(DEADLINE).await;
    assert_eq!(receiver.received("/k9").len(), 1, "only the head went");
    let _second = HookdProcess::start(&db, &redis_url(), &prefix, &env);
    for id in &ids {
        wait_status(&app, id, "succeeded").await;
    }
    let got = receiver.received("/k9");
    let sent: Vec<&str> = got
        .iter()
        .map(|r| r.header("webhook-id").unwrap())
        .collect();
    assert_eq!(sent, [ids[0].as_str(), ids[0].as_str(), ids[1].as_str()]);
    assert_eq!(sequences(&got), [1, 1, 2]);
}

/// A notification left waiting for one already final (a create racing its
/// predecessor's end: here, the release trigger turned off while the
/// predecessor is cancelled) is released by housekeeping as the end would
/// have released it.
#[sqlx::test]
async fn a_notification_stranded_behind_a_final_one_is_released_by_housekeeping(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let app = spawn_app_settings(
        pool.clone(),
        test_settings_with_prefix(&redis_url(), &new_prefix(), ""),
    )
    .await;
    let receiver = Receiver::start().await;
    receiver.reply("/stranded", vec![Reply::Hang, Reply::status(200)]);
    let endpoint = app
        .endpoint(json!({"url": receiver.url("/stranded"), "ordering": "key"}))
        .await;
    let endpoint = endpoint["id"].as_str().unwrap();
    let ids = notify_keyed(&app, endpoint, "order-s", 2).await;
    receiver.wait_for("/stranded", 1, DEADLINE).await;
    release_trigger(&pool, false).await;
    let (status, _) = app
        .post(&format!("/v1/notifications/{}/cancel", ids[0]), json!({}))
        .await;
    release_trigger(&pool, true).await;
    assert_eq!(status, StatusCode::OK);
    wait_status(&app, &ids[1], "succeeded").await;
}

/// Polls until a session of this test's database waits for a row lock:
/// the one that must wait for the other half of a race, seen waiting.
async fn a_session_waits_for_a_lock(pool: &sqlx::PgPool) {
    eventually(DEADLINE, "a session waiting for a row lock", || async {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(pool)
        .await
        .unwrap();
        (waiting > 0).then_some(())
    })
    .await;
}

async fn behind_of(pool: &sqlx::PgPool, id: &str) -> Option<uuid::Uuid> {
    sqlx::query_scalar("SELECT behind FROM notifications WHERE id = $1::uuid")
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// A race's start: an app on `pool`, an ordered endpoint, and the tail of
/// its key `order-r` in flight (its receiver hangs on it); with the
/// endpoint's id and the tail's.
async fn racing_tail(pool: &sqlx::PgPool) -> (TestApp, Receiver, String, String) {
    let app = spawn_app_settings(
        pool.clone(),
        test_settings_with_prefix(&redis_url(), &new_prefix(), ""),
    )
    .await;
    let receiver = Receiver::start().await;
    receiver.reply("/race", vec![Reply::Hang, Reply::status(200)]);
    let endpoint = app
        .endpoint(json!({"url": receiver.url("/race"), "ordering": "key"}))
        .await;
    let endpoint = endpoint["id"].as_str().unwrap().to_string();
    let tail = notify_keyed(&app, &endpoint, "order-r", 1).await.remove(0);
    receiver.wait_for("/race", 1, DEADLINE).await;
    (app, receiver, endpoint, tail)
}

/// A create of a key whose tail is ending (the end's transaction has
/// written the key's row and not committed) waits for that end, and
/// then reads the tail's predecessor on the row: the new one is its
/// key's head as it answers, not a second later by housekeeping.
#[sqlx::test]
async fn a_create_racing_its_tails_end_waits_for_it_and_is_its_keys_head(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let (app, _receiver, endpoint, tail) = racing_tail(&pool).await;
    let endpoint = endpoint.as_str();
    // The tail's end, its release run, not committed.
    let mut ending = pool.begin().await.unwrap();
    sqlx::query(
        "UPDATE notifications SET status = 'cancelled', completed_at = now(), updated_at = now() \
         WHERE id = $1::uuid",
    )
    .bind(&tail)
    .execute(&mut *ending)
    .await
    .unwrap();
    let body = json!({"endpoint": endpoint, "payload": {"i": 1}, "order_key": "order-r"});
    let create = app.notify(body);
    let end = async {
        a_session_waits_for_a_lock(&pool).await;
        ending.commit().await.unwrap();
    };
    let (next, ()) = tokio::join!(create, end);
    assert_eq!(behind_of(&pool, &next).await, None, "it waits for nothing");
    assert_ne!(read(&app, &next).await["waiting"]["reason"], "ordering");
    wait_status(&app, &next, "succeeded").await;
}

/// The other way round: the tail ends while a create of its key holds
/// the key's row (here a transaction that does by hand what a create
/// does: takes the row, makes a notification wait for the tail, and
/// names it the tail). The end waits for it and passes that one over as
/// it commits, not a second later by housekeeping.
#[sqlx::test]
async fn a_tails_end_racing_a_create_waits_for_it_and_releases_what_it_placed(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let (app, _receiver, endpoint, tail) = racing_tail(&pool).await;
    let endpoint = endpoint.as_str();
    // Not due for an hour, of a key of its own: placed by hand below.
    let body = json!({"endpoint": endpoint, "payload": {}, "order_key": "order-n", "delay": "1h"});
    let next = app.notify(body).await;
    let mut creating = pool.begin().await.unwrap();
    sqlx::query(
        "UPDATE order_keys SET last_sequence = last_sequence + 1, tail = $2::uuid \
         WHERE endpoint_id = $1::uuid AND order_key = 'order-r'",
    )
    .bind(endpoint)
    .bind(&next)
    .execute(&mut *creating)
    .await
    .unwrap();
    let path = format!("/v1/notifications/{tail}/cancel");
    let cancel = app.post(&path, json!({}));
    let create = async {
        a_session_waits_for_a_lock(&pool).await;
        sqlx::query(
            "UPDATE notifications SET order_key = 'order-r', sequence = 2, behind = $2::uuid \
             WHERE id = $1::uuid",
        )
        .bind(&next)
        .bind(&tail)
        .execute(&mut *creating)
        .await
        .unwrap();
        creating.commit().await.unwrap();
    };
    let ((status, cancelled), ()) = tokio::join!(cancel, create);
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    assert_eq!(
        behind_of(&pool, &next).await,
        None,
        "passed over by the end"
    );
}

/// Two neighbours' ends in different transactions: the head of key
/// `order-r` in flight, its successor (the key's tail, business key
/// `refund-1`) waiting, and a transaction that does by hand what the
/// recorder does with the head's success, not committed: sets it
/// succeeded, the release trigger standing aside, nothing written on the
/// successor. With that transaction.
struct Staged {
    app: TestApp,
    receiver: Receiver,
    endpoint: String,
    head: String,
    tail: String,
}

async fn a_success_being_recorded(
    pool: &sqlx::PgPool,
) -> (Staged, sqlx::Transaction<'static, sqlx::Postgres>) {
    let (app, receiver, endpoint, head) = racing_tail(pool).await;
    let body = json!({"endpoint": endpoint, "payload": {"i": 1}, "order_key": "order-r", "key": "refund-1"});
    let tail = app.notify(body).await;
    let mut recording = pool.begin().await.unwrap();
    sqlx::query("SELECT set_config('hookd.release', 'batch', true)")
        .execute(&mut *recording)
        .await
        .unwrap();
    sqlx::query(
        "UPDATE notifications SET status = 'succeeded', completed_at = now(), \
             updated_at = now(), next_attempt_at = NULL WHERE id = $1::uuid",
    )
    .bind(&head)
    .execute(&mut *recording)
    .await
    .unwrap();
    let staged = Staged {
        app,
        receiver,
        endpoint,
        head,
        tail,
    };
    (staged, recording)
}

async fn tail_of(pool: &sqlx::PgPool, endpoint: &str) -> Option<String> {
    let tail: Option<uuid::Uuid> = sqlx::query_scalar(
        "SELECT tail FROM order_keys WHERE endpoint_id = $1::uuid AND order_key = 'order-r'",
    )
    .bind(endpoint)
    .fetch_one(pool)
    .await
    .unwrap();
    tail.map(|id| id.to_string())
}

/// The key's next notification is delivered after the head, with its
/// sequence (the cancelled one had 2).
async fn the_next_goes_after_the_head(staged: &Staged) {
    let Staged {
        app,
        receiver,
        endpoint,
        head,
        ..
    } = staged;
    let next = notify_keyed(app, endpoint, "order-r", 1).await.remove(0);
    wait_status(app, &next, "succeeded").await;
    let got = receiver.received("/race");
    let sent: Vec<&str> = got
        .iter()
        .map(|r| r.header("webhook-id").unwrap())
        .collect();
    assert_eq!(sent, [head.as_str(), next.as_str()]);
    assert_eq!(sequences(&got), [1, 3]);
}

/// A cancel of a key's tail while its predecessor's success is being
/// recorded waits for the recording (it locks the predecessor first), so
/// its release reads the success: the key is left empty, and its next
/// notification is its head as it is created.
#[sqlx::test]
async fn a_tail_cancelled_while_its_predecessors_success_is_recorded_leaves_its_key_empty(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let (staged, recording) = a_success_being_recorded(&pool).await;
    let path = format!("/v1/notifications/{}/cancel", staged.tail);
    let cancel = staged.app.post(&path, json!({}));
    let record = async {
        a_session_waits_for_a_lock(&pool).await;
        recording.commit().await.unwrap();
    };
    let ((status, cancelled), ()) = tokio::join!(cancel, record);
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    assert_eq!(tail_of(&pool, &staged.endpoint).await, None);
    the_next_goes_after_the_head(&staged).await;
}

/// The same race through a cancel of many at once (here by business key),
/// which does not lock predecessors: each end reads the other as pending,
/// and the key's tail is left naming the success (`store::ordering`). The
/// key's next notification waits behind it, owed to nobody's index, and
/// the overdue sweep still delivers it, in order.
#[sqlx::test]
async fn a_key_left_with_a_tail_that_succeeded_still_delivers_its_next_notification(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let (staged, recording) = a_success_being_recorded(&pool).await;
    let (status, cancelled) = staged
        .app
        .post("/v1/notifications/cancel", json!({"key": "refund-1"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    assert_eq!(cancelled["ids"], json!([staged.tail]));
    recording.commit().await.unwrap();
    assert_eq!(
        tail_of(&pool, &staged.endpoint).await,
        Some(staged.head.clone()),
        "the race's trace"
    );
    the_next_goes_after_the_head(&staged).await;
}

/// The PostgreSQL store on `pool`, and an endpoint of it that orders by key.
async fn ordered_shop(
    pool: &sqlx::PgPool,
) -> (
    hookd::store::postgres::PgStore,
    hookd::store::endpoints::Endpoint,
) {
    let store = crate::conformance::postgres_store(pool.clone());
    let shop = create(
        &store,
        hookd::store::endpoints::Endpoint {
            ordering: hookd::domain::ordering::KeyOrdering::Key,
            ..endpoint()
        },
    )
    .await;
    (store, shop)
}

/// Housekeeping's release of a notification stranded behind a final one
/// passes over that one only while it stays final: while a retry of it
/// is under way (its row held, pending again once it commits), the
/// stranded one keeps waiting for it.
#[sqlx::test]
async fn a_stranded_notification_keeps_waiting_for_a_predecessor_being_retried(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let (store, shop) = ordered_shop(&pool).await;
    let first = commit_new(&store, keyed(&shop, "order-r")).await;
    let second = commit_new(&store, keyed(&shop, "order-r")).await;
    assert_eq!(get(&store, second).await.behind, Some(first));
    // The first fails with its release turned off: the second is stranded.
    release_trigger(&pool, false).await;
    record(&store, &[attempt(first, shop.id, 1, FAILED)]).await;
    release_trigger(&pool, true).await;
    // A retry of the first, under way.
    let mut retry = pool.begin().await.unwrap();
    sqlx::query("UPDATE notifications SET status = 'pending', completed_at = NULL WHERE id = $1")
        .bind(first)
        .execute(&mut *retry)
        .await
        .unwrap();
    let released = HousekeepingStore::release_stranded(&store, None, 100).await;
    assert_eq!(released.unwrap().0, 0);
    assert_eq!(
        get(&store, second).await.behind,
        Some(first),
        "still waiting"
    );
    retry.commit().await.unwrap();
    let released = HousekeepingStore::release_stranded(&store, None, 100).await;
    assert_eq!(released.unwrap().0, 0, "its predecessor is pending again");
    assert_eq!(get(&store, second).await.behind, Some(first));
}

/// A cancel of many at once takes their key rows in the order a create
/// takes them, (endpoint, key), whatever order its rows come in (here by
/// id: created b, a, c): a transaction that holds key a's row and then
/// takes b's, as a create of both would, is waited for, and both finish;
/// neither is failed as a deadlock (the cancel once took b's row as it
/// ended b, then waited for a's).
#[sqlx::test]
async fn a_cancel_of_many_keys_takes_their_rows_in_a_creates_order_and_never_deadlocks_with_one(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let (store, shop) = ordered_shop(&pool).await;
    let mut ids = Vec::new();
    for key in ["order-b", "order-a", "order-c"] {
        ids.push(commit_new(&store, keyed(&shop, key)).await);
    }
    let take = |key: &'static str| {
        sqlx::query("SELECT 1 FROM order_keys WHERE endpoint_id = $1 AND order_key = $2 FOR UPDATE")
            .bind(shop.id)
            .bind(key)
    };
    let mut creating = pool.begin().await.unwrap();
    take("order-a").execute(&mut *creating).await.unwrap();
    let cancel = DeliveryStore::cancel_notifications(&store, &ids);
    let create = async {
        a_session_waits_for_a_lock(&pool).await;
        take("order-b").execute(&mut *creating).await.unwrap();
        creating.commit().await.unwrap();
    };
    let (cancelled, ()) = tokio::join!(cancel, create);
    cancelled.unwrap();
    for (id, key) in ids.iter().zip(["order-b", "order-a", "order-c"]) {
        assert_eq!(get(&store, *id).await.status, Status::Cancelled);
        let tail: Option<uuid::Uuid> = sqlx::query_scalar(
            "SELECT tail FROM order_keys WHERE endpoint_id = $1 AND order_key = $2",
        )
        .bind(shop.id)
        .bind(key)
        .fetch_one(&pool)
        .await
        .unwrap();
        assert_eq!(tail, None, "{key} is empty");
    }
}
