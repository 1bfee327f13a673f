//! Server mode's daily partitions (docs/design.md §13, docs/partitioning.md):
//! the migration path from unpartitioned tables holding data, partitions
//! made ahead at start-up, and retention dropping a day while deliveries
//! and status queries run. PostgreSQL only: the embedded store keeps its
//! tables and deletes rows.

use std::time::Duration;

use chrono::{DateTime, Days, NaiveDate, Utc};
use hookd::domain::id::{first_of_ms, new_id};
use hookd::domain::partition::{day_bound, day_of, day_of_partition, partition_name};
use hookd::store::postgres::{PgStore, MIGRATOR};
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;
use uuid::Uuid;

use crate::helpers::{empty_database, eventually, redis_url, spawn_app, spawn_app_with};
use crate::receiver::Receiver;

const DEADLINE: Duration = Duration::from_secs(20);
/// The last migration before the partitioned history.
const BEFORE_PARTITIONING: i64 = 20261203000039;

/// A compact id (as hookd makes them) made at `at`.
fn id_at(at: DateTime<Utc>) -> Uuid {
    let mut bytes = *new_id().as_bytes();
    bytes[..6].copy_from_slice(&first_of_ms(at.timestamp_millis()).as_bytes()[..6]);
    Uuid::from_bytes(bytes)
}

/// The newest daily partition of `table`. A test's database is a copy of
/// template1, which `scripts/test` migrates once when the run starts, and
/// midnight can fall between that and the test (it did, in a CI run): a
/// test that needs the days the migration made reads them back instead of
/// counting from its own clock.
async fn newest_day(pool: &PgPool, table: &str) -> NaiveDate {
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
         WHERE i.inhparent = $1::regclass",
    )
    .bind(table)
    .fetch_all(pool)
    .await
    .unwrap();
    names
        .iter()
        .filter_map(|name| day_of_partition(table, name))
        .max()
        .unwrap_or_else(|| panic!("{table} has no daily partition: {names:?}"))
}

async fn exists(pool: &PgPool, table: &str) -> bool {
    sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL")
        .bind(table)
        .fetch_one(pool)
        .await
        .unwrap()
}

async fn endpoint(pool: &PgPool, id: Uuid, url: &str) {
    sqlx::query(
        "INSERT INTO endpoints (id, uid, url, secret, schedule_ms) \
         VALUES ($1, $2, $3, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', '{0,100,100}')",
    )
    .bind(id)
    .bind(format!("e-{}", id.simple()))
    .bind(url)
    .execute(pool)
    .await
    .unwrap();
}

/// A deployment migrated long ago: its legacy partition went.
async fn without_legacy(pool: &PgPool) {
    sqlx::raw_sql(
        "ALTER TABLE notifications DETACH PARTITION notifications_legacy; \
         ALTER TABLE attempts DETACH PARTITION attempts_legacy; \
         DROP TABLE notifications_legacy, attempts_legacy",
    )
    .execute(pool)
    .await
    .unwrap();
}

/// A notification made at `at`: pending and due now, or delivered at its
/// first try a day later (`done`), with `attempts` failed attempts rows
/// before; a business key when given.
async fn notification(
    pool: &PgPool,
    endpoint_id: Uuid,
    at: DateTime<Utc>,
    key: Option<&str>,
    done: bool,
    attempts: i32,
) -> Uuid {
    let id = id_at(at);
    let completed = done.then(|| at + chrono::Duration::days(1));
    sqlx::query(
        "INSERT INTO notifications (id, endpoint_id, key, content_type, body, schedule_ms, status, \
             attempts, deliver_at, next_attempt_at, created_at, completed_at, last_attempt_at) \
         VALUES ($1, $2, $3, 'application/json', '{\"n\":1}', '{0,100,100}', \
             CASE WHEN $5::timestamptz IS NULL THEN 'pending' ELSE 'succeeded' END, $6, $4, \
             CASE WHEN $5::timestamptz IS NULL THEN now() END, $4, $5, $5)",
    )
    .bind(id)
    .bind(endpoint_id)
    .bind(key)
    .bind(at)
    .bind(completed)
    .bind(attempts + i32::from(done))
    .execute(pool)
    .await
    .unwrap();
    // Its key row, as hookd's insert writes it (after the migration; the
    // unpartitioned schema has none).
    if key.is_some() && exists(pool, "notification_keys").await {
        sqlx::query("INSERT INTO notification_keys (key, endpoint_id, id) VALUES ($1, $2, $3)")
            .bind(key)
            .bind(endpoint_id)
            .bind(id)
            .execute(pool)
            .await
            .unwrap();
    }
    sqlx::query(
        "INSERT INTO attempts (notification_id, number, started_at, duration_ms, status_code, outcome) \
         SELECT $1, n, $2, 5, CASE WHEN n <= $3 THEN 500 ELSE 200 END, \
             CASE WHEN n <= $3 THEN 'retry' ELSE 'succeeded' END \
         FROM generate_series(1, $3 + $4::int) n",
    )
    .bind(id)
    .bind(at)
    .bind(attempts)
    .bind(i32::from(done))
    .execute(pool)
    .await
    .unwrap();
    id
}

/// What the API says of a notification: status, attempts, listed attempts.
async fn seen(app: &crate::helpers::TestApp, id: Uuid) -> (String, i64, usize) {
    let (status, body) = app.get(&format!("/v1/notifications/{id}")).await;
    assert_eq!(status, StatusCode::OK, "{id}: {body}");
    let (status, listed) = app.get(&format!("/v1/notifications/{id}/attempts")).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    (
        body["status"].as_str().unwrap().to_string(),
        body["attempts"].as_i64().unwrap(),
        listed["data"].as_array().unwrap().len(),
    )
}

#[sqlx::test(migrations = false)]
async fn a_database_with_history_is_migrated_in_place_and_reads_and_delivers_the_same(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    empty_database(&pool).await;
    MIGRATOR.run_to(BEFORE_PARTITIONING, &pool).await.unwrap();
    let receiver = Receiver::start().await;
    let ep = new_id();
    endpoint(&pool, ep, &receiver.url("/old")).await;
    let now = Utc::now();
    let mut delivered = Vec::new();
    for days in [20, 3, 1] {
        let at = now - chrono::Duration::days(days);
        delivered.push(notification(&pool, ep, at, Some(&format!("paid-{days}")), true, 2).await);
    }
    let pending = [
        notification(
            &pool,
            ep,
            now - chrono::Duration::days(2),
            Some("due-1"),
            false,
            1,
        )
        .await,
        notification(&pool, ep, now, None, false, 0).await,
    ];
    let event = id_at(now - chrono::Duration::days(1));
    sqlx::query(
        "WITH e AS (INSERT INTO events (id, event_type, key, content_type, body, deliver_at, deliveries) \
             VALUES ($1, 'order.paid', 'order-1', 'application/json', '{\"e\":1}', now(), 1)) \
         UPDATE notifications SET event_id = $1, body = '' WHERE id = $2",
    )
    .bind(event)
    .bind(delivered[2])
    .execute(&pool)
    .await
    .unwrap();
    let legacy_indexes: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_indexes WHERE tablename IN ('notifications', 'attempts')",
    )
    .fetch_one(&pool)
    .await
    .unwrap();

    MIGRATOR.run(&pool).await.unwrap();

    // The old tables are partitions now, their indexes attached as they
    // were (none built) but the key's, which moved to notification_keys;
    // a later migration's partial indexes of `notifications` are built on
    // every partition (ordering's two: `notifications_order`, `_behind`;
    // and `notifications_endpoint_most_attempts`).
    let attached: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_indexes \
         WHERE tablename IN ('notifications_legacy', 'attempts_legacy')",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(attached, legacy_indexes - 1 + 3);
    let keys: i64 = sqlx::query_scalar("SELECT count(*) FROM notification_keys")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(keys, 4);

    let app = spawn_app(pool.clone()).await;
    for id in &delivered {
        assert_eq!(seen(&app, *id).await, ("succeeded".to_string(), 3, 3));
    }
    let (_, event_seen) = app.get(&format!("/v1/events/{event}")).await;
    assert_eq!(event_seen["key"], json!("order-1"), "{event_seen}");
    let (_, by_key) = app.get("/v1/notifications?key=paid-3").await;
    assert_eq!(
        by_key["data"][0]["id"],
        json!(delivered[1].to_string()),
        "{by_key}"
    );

    // An idempotent create meets the key stored before the migration.
    let create =
        |key: &str, n: i64| json!({"endpoint": ep.to_string(), "key": key, "payload": {"n": n}});
    let (status, again) = app.post("/v1/notifications", create("paid-20", 1)).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["id"], json!(delivered[0].to_string()));
    let (status, clash) = app.post("/v1/notifications", create("paid-20", 2)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{clash}");
    let fresh = app.notify(create("fresh", 1)).await;
    let (status, again) = app.post("/v1/notifications", create("fresh", 1)).await;
    assert_eq!((status, &again["id"]), (StatusCode::OK, &json!(fresh)));

    // The pending ones (and the new one) are delivered from their partitions.
    receiver.wait_distinct("/old", 3, DEADLINE).await;
    for id in pending {
        let done = eventually(DEADLINE, "delivered", || async {
            let (status, _, _) = seen(&app, id).await;
            (status == "succeeded").then_some(())
        });
        done.await;
    }
}

#[sqlx::test]
async fn partitions_ahead_are_made_at_start_up(_: PgPoolOptions, connect: PgConnectOptions) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let today = day_of(Utc::now());
    let last = newest_day(&pool, "notifications").await;
    // A week ahead of the day the migration ran: today, or yesterday if
    // midnight fell since the run started.
    let migrated = last.checked_sub_days(Days::new(7)).unwrap();
    assert!(
        migrated == today || Some(migrated) == today.pred_opt(),
        "the newest partition is {last}, today is {today}"
    );
    assert_eq!(newest_day(&pool, "attempts").await, last);
    // The migration's SQL made the same bounds as `day_bound`.
    let made: String = sqlx::query_scalar(
        "SELECT pg_get_expr(relpartbound, oid) FROM pg_class WHERE relname = $1",
    )
    .bind(partition_name("notifications", last))
    .fetch_one(&pool)
    .await
    .unwrap();
    let next = last.succ_opt().unwrap();
    assert_eq!(
        made,
        format!(
            "FOR VALUES FROM ('{}') TO ('{}')",
            day_bound(last),
            day_bound(next)
        )
    );
    for table in ["notifications", "attempts"] {
        let name = partition_name(table, last);
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP TABLE {name}")))
            .execute(&pool)
            .await
            .unwrap();
    }
    let _app = spawn_app(pool.clone()).await;
    eventually(DEADLINE, "the last day ahead made again", || async {
        let mut made = true;
        for table in ["notifications", "attempts"] {
            made &= exists(&pool, &partition_name(table, last)).await;
        }
        made.then_some(())
    })
    .await;
}

mod dropping;
