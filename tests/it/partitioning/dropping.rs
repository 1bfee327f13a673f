//! Dropping a day of history: while deliveries and status queries run,
//! what its successes released, a day whose rows sit in the default
//! partition; and how hookd's connections plan over the partitions.

use super::*;

#[sqlx::test]
async fn retention_drops_a_day_while_deliveries_and_status_queries_run(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    // A deployment migrated long ago: its legacy partition went, days
    // have partitions of their own, back to 45 days ago.
    without_legacy(&pool).await;
    let store = PgStore::new(pool.clone());
    let now = Utc::now();
    let today = day_of(now);
    for back in [45, 40, 35] {
        store
            .maintain_partitions(today.checked_sub_days(Days::new(back)).unwrap(), None)
            .await
            .unwrap();
    }
    store.maintain_partitions(today, None).await.unwrap();

    let receiver = Receiver::start().await;
    let ep = new_id();
    endpoint(&pool, ep, &receiver.url("/hook")).await;
    // 40 days ago: all delivered, so the day goes. 38 days ago: one still
    // pending (its endpoint was down for weeks), so the day stays.
    let gone_day = now - chrono::Duration::days(40);
    let mut gone = Vec::new();
    for n in 0..50 {
        let key = format!("old-{n}");
        gone.push(notification(&pool, ep, gone_day, Some(&key), true, 1).await);
    }
    let kept_day = now - chrono::Duration::days(38);
    notification(&pool, ep, kept_day, None, true, 0).await;
    // Retention is the test's own call below, not the app's.
    let app = spawn_app_with(pool.clone(), &redis_url(), "[retention]\ndays = 0").await;
    // Written behind hookd's back: the sweep finds it overdue within
    // seconds, while the day before its own is dropped.
    let old_pending = notification(&pool, ep, kept_day, Some("late"), false, 1).await;

    let stop = tokio_util::sync::CancellationToken::new();
    let queries = {
        let (app_base, client, stop) = (app.base.clone(), app.client.clone(), stop.clone());
        let watched = [gone[0], old_pending];
        tokio::spawn(async move {
            let mut answers = Vec::new();
            while !stop.is_cancelled() {
                for path in [
                    format!("/v1/notifications/{}", watched[1]),
                    format!("/v1/notifications/{}/attempts", watched[1]),
                    format!("/v1/notifications?endpoint={ep}&limit=10"),
                    format!("/v1/notifications/{}", watched[0]),
                ] {
                    let response = client
                        .get(format!("{app_base}{path}"))
                        .bearer_auth(crate::helpers::TOKEN)
                        .send()
                        .await
                        .unwrap();
                    answers.push(response.status());
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            answers
        })
    };
    let created = {
        let (app_base, client, stop) = (app.base.clone(), app.client.clone(), stop.clone());
        tokio::spawn(async move {
            let mut ids = Vec::new();
            while !stop.is_cancelled() {
                let response = client
                    .post(format!("{app_base}/v1/notifications"))
                    .bearer_auth(crate::helpers::TOKEN)
                    .json(&json!({"endpoint": ep.to_string(), "payload": {"live": true}}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), StatusCode::CREATED);
                let body: Value = response.json().await.unwrap();
                ids.push(body["id"].as_str().unwrap().to_string());
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            ids
        })
    };
    receiver.wait_distinct("/hook", 20, DEADLINE).await;
    let keys_before: i64 =
        sqlx::query_scalar("SELECT count(*) FROM notification_keys WHERE key LIKE 'old-%'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(
        keys_before, 50,
        "the day's key rows, which retention must delete"
    );

    // (The app's own pass at start may hold the upkeep a moment.)
    let upkeep = eventually(DEADLINE, "an upkeep pass of the test's own", || async {
        let upkeep = store
            .maintain_partitions(today, Some(now - chrono::Duration::days(30)))
            .await
            .unwrap();
        (!upkeep.skipped).then_some(upkeep)
    })
    .await;
    // The old pending one is taken up meanwhile.
    receiver.wait_distinct("/hook", 60, DEADLINE).await;
    stop.cancel();
    let answers = queries.await.unwrap();
    let live = created.await.unwrap();

    let gone_name = partition_name("notifications", day_of(gone_day));
    // That day and the empty days before the cutoff; not the day kept.
    let kept_name = partition_name("notifications", day_of(kept_day));
    assert!(upkeep.dropped.contains(&gone_name), "{upkeep:?}");
    assert!(!upkeep.dropped.contains(&kept_name), "{upkeep:?}");
    assert!(!exists(&pool, &gone_name).await);
    assert!(!exists(&pool, &partition_name("attempts", day_of(gone_day))).await);
    assert!(exists(&pool, &kept_name).await);
    let keys_left: i64 =
        sqlx::query_scalar("SELECT count(*) FROM notification_keys WHERE key LIKE 'old-%'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(keys_left, 0);
    // After the day's tables went, and counted.
    assert!(upkeep.keys_deleted >= keys_before as u64, "{upkeep:?}");
    // Every status query answered: the dropped one is gone (404), the rest
    // found.
    assert!(
        answers
            .iter()
            .all(|s| *s == StatusCode::OK || *s == StatusCode::NOT_FOUND),
        "{answers:?}"
    );
    assert!(answers.len() >= 8);
    // Nothing pending was lost: the old one and every live one arrive.
    let wanted: std::collections::HashSet<String> = live
        .iter()
        .cloned()
        .chain([old_pending.to_string()])
        .collect();
    eventually(DEADLINE, "every pending notification delivered", || async {
        let got: std::collections::HashSet<String> = receiver
            .received("/hook")
            .iter()
            .filter_map(|r| r.header("webhook-id").map(str::to_string))
            .collect();
        wanted.is_subset(&got).then_some(())
    })
    .await;
}

/// A pending notification a success released still names it in `behind`
/// (a success leaves its successors unwritten: migration
/// `20261210000056`). Dropping the success's day clears that first: a
/// `behind` naming a removed notification reads as waiting for a removed
/// holder, and housekeeping would give it a place again.
#[sqlx::test]
async fn dropping_a_day_clears_the_behind_of_what_its_successes_released(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    without_legacy(&pool).await;
    let store = PgStore::new(pool.clone());
    let now = Utc::now();
    let today = day_of(now);
    let old = now - chrono::Duration::days(40);
    store.maintain_partitions(day_of(old), None).await.unwrap();
    store.maintain_partitions(today, None).await.unwrap();
    let ep = new_id();
    endpoint(&pool, ep, "http://127.0.0.1:9/never").await;
    let success = notification(&pool, ep, old, None, true, 0).await;
    let released = notification(&pool, ep, now, None, false, 0).await;
    let place = "UPDATE notifications SET order_key = 'order-d', sequence = $2, behind = $3 \
                 WHERE id = $1";
    for (id, sequence, behind) in [(success, 1, None), (released, 2, Some(success))] {
        sqlx::query(place)
            .bind(id)
            .bind(sequence)
            .bind(behind)
            .execute(&pool)
            .await
            .unwrap();
    }

    let upkeep = store
        .maintain_partitions(today, Some(now - chrono::Duration::days(30)))
        .await
        .unwrap();
    let gone = partition_name("notifications", day_of(old));
    assert!(upkeep.dropped.contains(&gone), "{upkeep:?}");
    let behind: Option<Uuid> = sqlx::query_scalar("SELECT behind FROM notifications WHERE id = $1")
        .bind(released)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(behind, None, "it waits for nothing");
}

#[sqlx::test]
async fn a_day_whose_rows_sit_in_the_default_partition_is_skipped_whole(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let store = PgStore::new(pool.clone());
    let today = day_of(Utc::now());
    let last = newest_day(&pool, "notifications").await;
    for table in ["attempts", "notifications"] {
        let name = partition_name(table, last);
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP TABLE {name}")))
            .execute(&pool)
            .await
            .unwrap();
    }
    let ep = new_id();
    endpoint(&pool, ep, "http://127.0.0.1:9/hook").await;
    let at = last.and_hms_opt(12, 0, 0).unwrap().and_utc();
    notification(&pool, ep, at, None, true, 1).await;

    let upkeep = store.maintain_partitions(today, None).await.unwrap();
    assert!(upkeep.default_rows, "{upkeep:?}");
    // Neither table's partition of that day: a day never has one without
    // the other.
    for table in ["notifications", "attempts"] {
        assert!(
            !exists(&pool, &partition_name(table, last)).await,
            "{table}"
        );
    }
}

/// PostgreSQL decides JIT from a plan's cost, and a generic plan over the
/// days of history is costed as if every day were read: a list of 50 rows
/// by endpoint with 10 M stored spent 130 ms compiling to run in 1 ms.
/// hookd's connections plan generically and never JIT.
#[sqlx::test]
async fn hookd_s_connections_plan_generically_and_never_compile_with_jit(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let settings = crate::helpers::test_settings(&redis_url(), "").database;
    let hookd = hookd::store::postgres::pool_options(&settings)
        .max_connections(1)
        .connect_with((*pool.connect_options()).clone())
        .await
        .unwrap();
    let (jit, plans): (String, String) =
        sqlx::query_as("SELECT current_setting('jit'), current_setting('plan_cache_mode')")
            .fetch_one(&hookd)
            .await
            .unwrap();
    assert_eq!(jit, "off");
    assert_eq!(plans, "force_generic_plan");
}
