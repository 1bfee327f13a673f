//! Partitioned history (#37, docs/partitioning.md), server mode, opt-in:
//! - `BENCH_ONLY=partition`: retention of one day's partition holding
//!   `BENCH_PARTITION_ROWS` notifications (default 1,000,000) and as many
//!   attempts, each keyed: the whole upkeep pass that drops it (its read,
//!   the key rows, the detach, the drop), target ≤ 1 s;
//! - `BENCH_ONLY=partition_drain`: the drain of `BENCH_DRAIN` (default
//!   50,000, figure 3's) due notifications on an empty database and on one
//!   holding `BENCH_HISTORY` delivered notifications (default 10,000,000)
//!   and their attempts, spread over the 29 days before today (inside
//!   retention), the two alternated on one server: history ÷ empty,
//!   target ≥ 0.9;
//! - `BENCH_ONLY=partition_queries`: status and list queries through
//!   `hookd serve --role api` with `BENCH_HISTORY` keyed notifications
//!   (default 10,000,000) and as many attempts over the last 30 days:
//!   p50 / p99 of 200 calls each, target p99 ≤ 10 ms.
//!
//! Both work on days of their own: the bench database's legacy partition
//! (empty after `reset`) is detached and dropped first, as a deployment's
//! goes once retention has emptied it.

use std::sync::Arc;
use std::time::Instant;

use chrono::{Days, Utc};
use hookd::domain::partition::{day_bound, day_of, partition_name};
use hookd::store::postgres::PgStore;
use sqlx::PgPool;

use super::{create_endpoint, delivery_run, median, percentile, reset, Hookd, Received};

/// The days a deployment keeps (`retention.days`' default).
const RETENTION_DAYS: u64 = 30;
/// The days the drain's history spans: the last day kept is left out.
const HISTORY_DAYS: i64 = RETENTION_DAYS as i64 - 1;

fn env_count(name: &str, default: i64) -> i64 {
    std::env::var(name)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// The legacy partition gone, and a partition for each of the last
/// `RETENTION_DAYS` days and the week ahead.
async fn days_of_their_own(pool: &PgPool) {
    sqlx::raw_sql(
        "DO $$ BEGIN \
             IF EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass('notifications_legacy')) THEN \
                 ALTER TABLE notifications DETACH PARTITION notifications_legacy; \
                 ALTER TABLE attempts DETACH PARTITION attempts_legacy; \
                 DROP TABLE notifications_legacy, attempts_legacy; \
             END IF; \
         END $$",
    )
    .execute(pool)
    .await
    .unwrap();
    let store = PgStore::new(pool.clone());
    let today = day_of(Utc::now());
    for back in (0..=RETENTION_DAYS).step_by(8) {
        let from = today
            .checked_sub_days(Days::new(RETENTION_DAYS - back))
            .unwrap();
        store.maintain_partitions(from, None).await.unwrap();
    }
    store.maintain_partitions(today, None).await.unwrap();
}

/// A fresh database `name` beside `database_url`'s, migrated: its pool and
/// URL.
async fn sibling_database(database_url: &str, name: &str) -> (PgPool, String) {
    drop_database(database_url, name).await;
    let admin = PgPool::connect(database_url).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&admin)
        .await
        .unwrap();
    admin.close().await;
    let mut url = url::Url::parse(database_url).unwrap();
    url.set_path(name);
    let pool = PgPool::connect(url.as_str()).await.unwrap();
    PgStore::new(pool.clone()).migrate().await.unwrap();
    (pool, url.to_string())
}

async fn drop_database(database_url: &str, name: &str) {
    let admin = PgPool::connect(database_url).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
    )))
    .execute(&admin)
    .await
    .unwrap();
    admin.close().await;
}

/// `count` delivered notifications with one attempt each, created
/// `days_back` days ago (spread over that many days when `spread`), each
/// at its own second of its UTC day with an id of that time, as hookd
/// makes them; keyed when `keyed`.
async fn history(
    pool: &PgPool,
    endpoint: uuid::Uuid,
    count: i64,
    days_back: i64,
    spread: bool,
    keyed: bool,
) {
    sqlx::query(
        "WITH made AS ( \
             INSERT INTO notifications (id, endpoint_id, key, content_type, body, schedule_ms, \
                 status, attempts, deliver_at, last_attempt_at, last_status_code, completed_at, \
                 created_at) \
             SELECT encode(overlay(uuid_send(hookd_uuid_v7()) PLACING substring(int8send( \
                     (extract(epoch FROM t.at) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 'hex')::uuid, \
                 $1, CASE WHEN $5 THEN 'k-' || g END, 'application/json', '\\x7b7d', '{0,60000}', \
                 'succeeded', 1, t.at, t.at, 200, t.at, t.at \
             FROM generate_series(1, $2) g, \
                 LATERAL (SELECT date_trunc('day', now(), 'UTC') \
                     - make_interval(days => CASE WHEN $4 THEN 1 + (g % $3)::int ELSE $3::int END) \
                     + make_interval(secs => (g * 7919) % 86400) AS at) t \
             RETURNING id, key, endpoint_id \
         ), keys AS ( \
             INSERT INTO notification_keys (key, endpoint_id, id) \
             SELECT key, endpoint_id, id FROM made WHERE key IS NOT NULL \
         ) \
         INSERT INTO attempts (notification_id, number, started_at, duration_ms, status_code, outcome) \
         SELECT id, 1, now(), 1, 200, 'succeeded' FROM made",
    )
    .bind(endpoint)
    .bind(count)
    .bind(days_back as i32)
    .bind(spread)
    .bind(keyed)
    .execute(pool)
    .await
    .unwrap();
}

pub async fn drop_day(pool: &PgPool) {
    let rows = env_count("BENCH_PARTITION_ROWS", 1_000_000);
    reset(pool).await;
    days_of_their_own(pool).await;
    let day = day_of(Utc::now())
        .checked_sub_days(Days::new(RETENTION_DAYS + 5))
        .unwrap();
    for table in ["notifications", "attempts"] {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "CREATE TABLE IF NOT EXISTS {} PARTITION OF {table} FOR VALUES FROM ('{}') TO ('{}')",
            partition_name(table, day),
            day_bound(day),
            day_bound(day.succ_opt().unwrap())
        )))
        .execute(pool)
        .await
        .unwrap();
    }
    history(
        pool,
        uuid::Uuid::now_v7(),
        rows,
        (RETENTION_DAYS + 5) as i64,
        false,
        true,
    )
    .await;
    sqlx::query("CHECKPOINT").execute(pool).await.unwrap();
    let store = PgStore::new(pool.clone());
    let cutoff = Utc::now() - chrono::Duration::days(RETENTION_DAYS as i64);
    let started = Instant::now();
    let upkeep = store
        .maintain_partitions(day_of(Utc::now()), Some(cutoff))
        .await
        .unwrap();
    let took = started.elapsed().as_secs_f64();
    assert!(
        upkeep
            .dropped
            .contains(&partition_name("notifications", day)),
        "{upkeep:?}"
    );
    let keys = upkeep.keys_took.as_secs_f64();
    println!(
        "partition: retention of one day's partition, {rows} keyed notifications and {rows} attempts: \
         {:.2} s to drop the day (target ≤ 1 s), then {keys:.2} s to delete its {} key rows; \
         {took:.2} s for the whole upkeep pass",
        took - keys,
        upkeep.keys_deleted
    );
}

pub async fn drain_with_history(
    pool: &PgPool,
    database_url: &str,
    redis_url: &str,
    received: &Arc<Received>,
    receiver_url: &str,
    runs: usize,
) {
    let count = env_count("BENCH_HISTORY", 10_000_000);
    let drain = env_count("BENCH_DRAIN", 50_000) as usize;
    // The history lives in a database of its own on the same server,
    // written once; the drains alternate between it and the empty one, so
    // each ratio is of two drains a minute apart, not of a drain before a
    // 15-minute fill and one after it.
    let (history_pool, history_url) = sibling_database(database_url, "hookd_history").await;
    days_of_their_own(&history_pool).await;
    let started = Instant::now();
    history(
        &history_pool,
        uuid::Uuid::now_v7(),
        count,
        // Inside retention: the dispatcher's upkeep has nothing of it to
        // drop or purge while it drains (a deployment's upkeep has at most
        // one day's worth, once a day).
        HISTORY_DAYS,
        true,
        false,
    )
    .await;
    sqlx::query("VACUUM ANALYZE notifications, attempts")
        .execute(&history_pool)
        .await
        .unwrap();
    println!(
        "   partition_drain: {count} delivered notifications and their attempts written in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    reset(pool).await;
    days_of_their_own(pool).await;
    let (mut empty, mut full, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..runs {
        let mut rates = [0.0; 2];
        // Empty first in even runs, history first in odd ones.
        for turn in [run % 2, 1 - run % 2] {
            let (which, pool, url) = if turn == 0 {
                ("empty", pool, database_url)
            } else {
                ("full", &history_pool, history_url.as_str())
            };
            if turn == 0 {
                reset(pool).await;
            }
            // Each drain starts with nothing dirty to write: the fill's
            // checkpoint is not charged to the drain after it.
            sqlx::query("CHECKPOINT").execute(pool).await.unwrap();
            rates[turn] = delivery_run(
                pool,
                url,
                redis_url,
                &format!("bench-history-{which}-{run}"),
                received,
                receiver_url,
                drain,
            )
            .await
            .rate;
        }
        let [on_empty, on_history] = rates;
        println!(
            "   run {}: drain of {drain}, empty {on_empty:.0}/s, with {count} delivered before {on_history:.0}/s, ratio {:.2}",
            run + 1,
            on_history / on_empty
        );
        empty.push(on_empty);
        full.push(on_history);
        ratios.push(on_history / on_empty);
    }
    history_pool.close().await;
    drop_database(database_url, "hookd_history").await;
    println!(
        "partition_drain: drain of {drain} on an empty database {:.0}/s, with {count} delivered notifications and attempts over {HISTORY_DAYS} days {:.0}/s: history ÷ empty {:.2} (median of the per-run ratios; target ≥ 0.9)",
        median(empty),
        median(full),
        median(ratios)
    );
}

/// The path of a query's `i`th call.
type PathOf<'a> = Box<dyn Fn(usize) -> String + 'a>;

/// `BENCH_ONLY=partition_queries`: what a status query and the lists cost
/// with `BENCH_HISTORY` keyed notifications stored, timed at the client.
pub async fn queries_with_history(
    pool: &PgPool,
    database_url: &str,
    redis_url: &str,
    receiver_url: &str,
) {
    const CALLS: usize = 200;
    /// Calls before the timed ones: more than the API pool's connections.
    const WARM_CALLS: usize = 40;
    let count = env_count("BENCH_HISTORY", 10_000_000);
    reset(pool).await;
    days_of_their_own(pool).await;
    let api = Hookd::start(database_url, redis_url, "bench-history-queries", "api").await;
    let client = reqwest::Client::new();
    let endpoint = create_endpoint(&client, &api, receiver_url).await;
    let started = Instant::now();
    history(
        pool,
        endpoint.parse().unwrap(),
        count,
        RETENTION_DAYS as i64,
        true,
        true,
    )
    .await;
    sqlx::query("VACUUM ANALYZE notifications, attempts, notification_keys")
        .execute(pool)
        .await
        .unwrap();
    println!(
        "   partition_queries: {count} keyed notifications and their attempts over {RETENTION_DAYS} days written in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // Notifications picked over the whole history, each asked once.
    let picked: Vec<(uuid::Uuid, String)> = sqlx::query_as(
        "SELECT id, key FROM notifications TABLESAMPLE SYSTEM (0.1) WHERE key IS NOT NULL LIMIT $1",
    )
    .bind(CALLS as i64)
    .fetch_all(pool)
    .await
    .unwrap();
    let day = Utc::now() - chrono::Duration::days(12);
    let window = format!(
        "created_after={}&created_before={}",
        (day - chrono::Duration::hours(1)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        day.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    let queries: Vec<(&str, PathOf)> = vec![
        (
            "GET /v1/notifications/{id}",
            Box::new(|i| format!("/v1/notifications/{}", picked[i % picked.len()].0)),
        ),
        (
            "GET /v1/notifications/{id}/attempts",
            Box::new(|i| format!("/v1/notifications/{}/attempts", picked[i % picked.len()].0)),
        ),
        (
            "GET /v1/notifications?key=…",
            Box::new(|i| format!("/v1/notifications?key={}", picked[i % picked.len()].1)),
        ),
        (
            "GET /v1/notifications?endpoint=…&limit=50 (the newest)",
            Box::new(|_| format!("/v1/notifications?endpoint={endpoint}&limit=50")),
        ),
        (
            "GET /v1/notifications?endpoint=…&created_after=…&created_before=… (an hour 12 days ago)",
            Box::new(|_| format!("/v1/notifications?endpoint={endpoint}&limit=50&{window}")),
        ),
    ];
    for (name, path) in &queries {
        // Calls first, as a running deployment's pool is warm: each pooled
        // connection prepares and plans a statement at its first use (a
        // generic plan over ~40 days of partitions: tens of ms, once per
        // connection's lifetime). The slowest of them is printed apart.
        let mut cold = 0;
        for i in 0..WARM_CALLS {
            let start = Instant::now();
            let first = client
                .get(format!("{}{}", api.base, path(i)))
                .send()
                .await
                .unwrap();
            assert!(first.status().is_success(), "{name}: {}", first.status());
            first.bytes().await.unwrap();
            cold = cold.max(start.elapsed().as_micros() as i64);
        }
        let mut took = Vec::with_capacity(CALLS);
        for i in 0..CALLS {
            let start = Instant::now();
            let response = client
                .get(format!("{}{}", api.base, path(i)))
                .send()
                .await
                .unwrap();
            assert!(
                response.status().is_success(),
                "{name}: {}",
                response.status()
            );
            response.bytes().await.unwrap();
            took.push(start.elapsed().as_micros() as i64);
        }
        took.sort_unstable();
        println!(
            "partition_queries: {name}: p50 {:.2} ms, p99 {:.2} ms ({CALLS} calls, {count} stored; target p99 ≤ 10 ms); slowest of the {WARM_CALLS} warm-up calls {:.2} ms",
            percentile(&took, 0.5) as f64 / 1000.0,
            percentile(&took, 0.99) as f64 / 1000.0,
            cold as f64 / 1000.0
        );
    }
    api.stop();
    reset(pool).await;
}
