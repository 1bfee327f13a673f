//! Retention and recording under stalls and races: old notifications
//! deleted with their attempts, outcomes that waited past their lease, a
//! retry that took one back while retention waited; and an index left in
//! a previous format.

use super::*;

/// A notification row created `created_days` ago with an id of that time, as
/// it would be had it really been created then.
async fn old_notification(
    pool: &PgPool,
    endpoint_id: uuid::Uuid,
    created_days: i64,
    completed_days: Option<i64>,
) -> uuid::Uuid {
    let created = chrono::Utc::now() - chrono::Duration::days(created_days);
    let ts = uuid::Timestamp::from_unix(
        uuid::NoContext,
        created.timestamp() as u64,
        created.timestamp_subsec_nanos(),
    );
    let id = uuid::Uuid::new_v7(ts);
    let status = if completed_days.is_some() {
        "succeeded"
    } else {
        "pending"
    };
    sqlx::query(
        "INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, status, \
             attempts, deliver_at, next_attempt_at, created_at, completed_at) \
         VALUES ($1, $2, 'application/json', '{}', '{0}', $3, $4, $5, \
             CASE WHEN $6::int IS NULL THEN now() + interval '1 hour' END, $5, \
             now() - make_interval(days => $6::int))",
    )
    .bind(id)
    .bind(endpoint_id)
    .bind(status)
    .bind(i32::from(completed_days.is_some()))
    .bind(created)
    .bind(completed_days.map(|d| d as i32))
    .execute(pool)
    .await
    .unwrap();
    if completed_days.is_some() {
        sqlx::query(
            "INSERT INTO attempts (notification_id, number, started_at, duration_ms, status_code, outcome) \
             SELECT id, 1, completed_at, 3, 200, 'succeeded' FROM notifications WHERE id = $1",
        )
        .bind(id)
        .execute(pool)
        .await
        .unwrap();
    }
    id
}

#[sqlx::test]
async fn retention_deletes_old_final_notifications_with_their_attempts_and_keeps_the_rest(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    // The test walks retention itself: the app's own would race it for the
    // old rows whenever its first pass runs after they are written.
    let app = spawn_app_with(pool.clone(), &redis_url(), "[retention]\ndays = 0\n").await;
    let receiver = Receiver::start().await;
    let endpoint = app
        .endpoint(json!({"uid": "shop", "url": receiver.url("/hook")}))
        .await;
    let endpoint_id: uuid::Uuid = endpoint["id"].as_str().unwrap().parse().unwrap();
    submit(&app, "shop", 2, json!({})).await;
    receiver.wait_distinct("/hook", 2, DEADLINE).await;
    eventually(DEADLINE, "two recorded successes", || async {
        let done: i64 =
            sqlx::query_scalar("SELECT count(*) FROM notifications WHERE status = 'succeeded'")
                .fetch_one(&pool)
                .await
                .unwrap();
        (done == 2).then_some(())
    })
    .await;
    submit(&app, "shop", 2, json!({"delay": "1h"})).await;
    // Three created 41 days ago that ended 40 days ago: past retention.
    for _ in 0..3 {
        old_notification(&pool, endpoint_id, 41, Some(40)).await;
    }
    // Created as long ago, but still pending, or ended yesterday: kept.
    let old_pending = old_notification(&pool, endpoint_id, 41, None).await;
    let ended_lately = old_notification(&pool, endpoint_id, 41, Some(1)).await;

    let store = hookd::store::postgres::PgStore::new(pool.clone());
    let before = chrono::Utc::now() - chrono::Duration::days(30);
    // Walk the old part of the key space two rows at a time.
    let (mut deleted, mut cursor, mut calls) = (0, None, 0);
    loop {
        let (batch, next) = store.purge_completed(before, cursor, 2).await.unwrap();
        assert!(batch <= 2, "batches are bounded");
        deleted += batch;
        calls += 1;
        match next {
            Some(id) => cursor = Some(id),
            None => break,
        }
        assert!(calls <= 3, "five old rows take three batches of two");
    }
    assert_eq!(deleted, 3);
    // A new walk finds nothing more to delete.
    assert_eq!(
        store.purge_completed(before, None, 10).await.unwrap(),
        (0, None)
    );
    let counts: (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM notifications WHERE status = 'succeeded'), \
                (SELECT count(*) FROM notifications WHERE status = 'pending'), \
                (SELECT count(*) FROM attempts)",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(
        counts,
        (3, 3, 1),
        "(succeeded kept: 2 recent + 1 ended lately; pending kept: 2 + 1 old; rows of attempts: \
         1, of the one that ended lately, since the two delivered at their first attempt keep \
         that attempt in their own row)"
    );
    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM notifications WHERE id = ANY($1)")
        .bind(vec![old_pending, ended_lately])
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(kept, 2);
}

#[sqlx::test]
async fn outcomes_queued_behind_a_write_that_waits_past_their_lease_are_not_sent_again(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let app = spawn_app_with(
        pool.clone(),
        &redis_url(),
        "[sender]\ntimeout_ms = 1000\nmax_in_flight = 8\n\
         [dispatcher]\nlease_ms = 6000\nhandoff = false\n",
    )
    .await;
    let receiver = Receiver::start().await;
    app.endpoint(json!({"uid": "shop", "url": receiver.url("/hook"), "schedule": ["0s", "1h"]}))
        .await;
    submit(&app, "shop", 1200, json!({"delay": "2s"})).await;

    // Another transaction holds every row: deliveries go out, and no
    // outcome can be written, for over two leases.
    let mut holder = pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM notifications FOR UPDATE")
        .execute(&mut *holder)
        .await
        .unwrap();
    receiver.wait_for("/hook", 1, DEADLINE).await;
    let stalled = Instant::now();
    eventually(DEADLINE, "two leases to run out", || async {
        (stalled.elapsed() > Duration::from_secs(13)).then_some(())
    })
    .await;
    holder.commit().await.unwrap();

    eventually(DEADLINE, "every notification delivered", || async {
        let done: i64 =
            sqlx::query_scalar("SELECT count(*) FROM notifications WHERE status = 'succeeded'")
                .fetch_one(&pool)
                .await
                .unwrap();
        (done == 1200).then_some(())
    })
    .await;
    let (distinct, total) = receiver.distinct("/hook");
    assert_eq!(distinct, 1200);
    assert_eq!(
        total, distinct,
        "every outcome waiting to be written kept its lease: none was sent twice"
    );
}

#[sqlx::test]
async fn retention_keeps_a_notification_that_a_retry_took_back_while_retention_waited_for_it(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    // The process's own retention stays off: the test runs it by hand.
    let app = spawn_app_with(pool.clone(), &redis_url(), "[retention]\ndays = 0\n").await;
    let endpoint = app.endpoint(json!({"uid": "shop"})).await;
    let endpoint_id: uuid::Uuid = endpoint["id"].as_str().unwrap().parse().unwrap();
    let id = old_notification(&pool, endpoint_id, 41, Some(40)).await;

    // A retry has taken it back to pending and not committed yet.
    let mut retry = pool.begin().await.unwrap();
    sqlx::query(
        "UPDATE notifications SET status = 'pending', completed_at = NULL, \
             next_attempt_at = now() WHERE id = $1",
    )
    .bind(id)
    .execute(&mut *retry)
    .await
    .unwrap();
    let store = hookd::store::postgres::PgStore::new(pool.clone());
    let before = chrono::Utc::now() - chrono::Duration::days(30);
    let purge = tokio::spawn(async move { store.purge_completed(before, None, 10).await });
    eventually(
        DEADLINE,
        "retention to wait for the retried row",
        || async {
            let waiting: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() \
             AND wait_event_type = 'Lock' AND query LIKE '%DELETE FROM notifications%'",
            )
            .fetch_one(&pool)
            .await
            .unwrap();
            (waiting > 0).then_some(())
        },
    )
    .await;
    retry.commit().await.unwrap();

    let (deleted, _) = purge.await.unwrap().unwrap();
    assert_eq!(deleted, 0);
    let status: Option<String> =
        sqlx::query_scalar("SELECT status FROM notifications WHERE id = $1")
            .bind(id)
            .fetch_optional(&pool)
            .await
            .unwrap();
    assert_eq!(status.as_deref(), Some("pending"));
    let attempts: i64 =
        sqlx::query_scalar("SELECT count(*) FROM attempts WHERE notification_id = $1")
            .bind(id)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(attempts, 1, "its history stays with it");
}

#[sqlx::test]
async fn an_index_left_in_the_previous_format_is_rebuilt_and_every_notification_sent_once(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let (redis, app, receiver) = shop_on_own_redis(pool).await;
    submit(&app, "shop", 200, json!({"delay": "3s"})).await;
    // What the build before buckets leaves behind: one sorted set of every
    // id under the `due` key, and a marker of format f2. Rewritten in one
    // MULTI, so the housekeeper sees the old index whole or not at all.
    let keys = app.index().keys().clone();
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let (_, keys_found): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
        .arg(0)
        .arg("MATCH")
        .arg(keys.buckets_pattern())
        .arg("COUNT")
        .arg(10_000)
        .query_async(&mut conn)
        .await
        .unwrap();
    let mut entries: Vec<(Vec<u8>, f64)> = Vec::new();
    for bucket in keys_found.iter().filter(|key| keys.is_bucket(key)) {
        let found: Vec<(Vec<u8>, f64)> = redis::cmd("ZRANGE")
            .arg(bucket)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query_async(&mut conn)
            .await
            .unwrap();
        entries.extend(found);
    }
    assert_eq!(entries.len(), 200);
    assert!(entries.iter().all(|(member, _)| member.len() == 14));
    let mut rewrite = redis::pipe();
    rewrite.atomic();
    rewrite.del(&keys_found).ignore();
    rewrite.del(&keys.due).ignore();
    for (member, score) in &entries {
        rewrite.zadd(&keys.due, member, *score).ignore();
    }
    let marker = format!("{0}:{{{0}}}:indexed", app.index().prefix());
    rewrite.set(&marker, "f2:1795000000000").ignore();
    let _: () = rewrite.query_async(&mut conn).await.unwrap();

    let (distinct, total) = receiver.wait_distinct("/hook", 200, DEADLINE).await;
    assert_eq!((distinct, total), (200, 200));
    // Every lease ended: none is left under a member completion cannot find.
    eventually(DEADLINE, "no lease left behind", || async {
        let leased: u64 = redis::cmd("ZCARD")
            .arg(&keys.inflight)
            .query_async(&mut conn.clone())
            .await
            .unwrap();
        (leased == 0).then_some(())
    })
    .await;
    assert!(app.index().is_indexed().await.unwrap());
}
