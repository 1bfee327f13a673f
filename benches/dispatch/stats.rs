//! `stats` (opt-in: `BENCH_ONLY=stats`, it takes minutes): how fast `GET
//! /v1/stats` answers with a day of history behind it. 1,000 endpoints
//! are created through the API; then, straight in SQL (hookd's API would
//! take hours), 10,000,000 attempts spread over the last 24 hours and the
//! per-minute rows they imply (a row per endpoint and minute, 6 to 7
//! attempts each; 20 endpoints failing a third of their attempts, the rest
//! a failed attempt in one minute of 20; the deployment's totals and a
//! backlog sample per minute; the owners' sums). Then 50 calls each of the
//! overview for a day and an hour, unfiltered, for one endpoint and for an
//! owner of ten, timed at the client:
//! p50 and p99. Both modes: PostgreSQL (`hookd serve --role api`) and the
//! embedded file.

use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool};
use sqlx::PgPool;

use super::embedded::{self, DataDir};
use super::{percentile, reset, Hookd};

const ENDPOINTS: usize = 1000;
const ATTEMPTS: i64 = 10_000_000;
const CALLS: usize = 50;

async fn create_endpoints(client: &reqwest::Client, hookd: &Hookd) -> Vec<String> {
    let mut ids = Vec::with_capacity(ENDPOINTS);
    for chunk in (0..ENDPOINTS).collect::<Vec<_>>().chunks(50) {
        let calls = chunk.iter().map(|i| {
            client
                .post(format!("{}/v1/endpoints", hookd.base))
                .json(
                    &json!({"url": format!("http://127.0.0.1:9/hook/{i}?token=t{i}"),
                              "owner": format!("owner-{}", i % 100)}),
                )
                .send()
        });
        for response in futures::future::join_all(calls).await {
            let endpoint: serde_json::Value = response.unwrap().json().await.unwrap();
            ids.push(endpoint["id"].as_str().unwrap().to_string());
        }
    }
    ids
}

/// Times `CALLS` calls of each overview; prints p50 and p99.
async fn time_calls(client: &reqwest::Client, hookd: &Hookd, mode: &str, endpoint: &str) {
    for query in [
        "window=24h".to_string(),
        "window=1h".to_string(),
        format!("window=24h&endpoint={endpoint}"),
        "window=24h&owner=owner-7".to_string(),
    ] {
        let url = format!("{}/v1/stats?{query}", hookd.base);
        // One call first: connections open, statements prepared.
        let first: serde_json::Value = client.get(&url).send().await.unwrap().json().await.unwrap();
        let mut took = Vec::with_capacity(CALLS);
        for _ in 0..CALLS {
            let start = Instant::now();
            let response = client.get(&url).send().await.unwrap();
            assert!(response.status().is_success());
            let _ = response.bytes().await.unwrap();
            took.push(start.elapsed().as_micros() as i64);
        }
        took.sort_unstable();
        println!(
            "S. {mode}: GET /v1/stats?{query}: p50 {:.1} ms, p99 {:.1} ms ({CALLS} calls; attempts counted {}, failing listed {})",
            percentile(&took, 0.50) as f64 / 1000.0,
            percentile(&took, 0.99) as f64 / 1000.0,
            first["totals"]["attempts"],
            first["failing_endpoints"].as_array().map_or(0, Vec::len),
        );
    }
}

/// The per-minute rows' select list over `e` (endpoints numbered `n`
/// from 1) and `m` (minute as `m.minute`, its number `m.k`).
/// Lateness fills `late_0`, `late_3` and `late_7` (under 1 ms, 2–2.8 ms,
/// 8–11.3 ms), alike in every row.
fn row_values(minute: &str) -> String {
    let attempts = "CASE WHEN (e.n * 1440 + m.k) % 1000 < 944 THEN 7 ELSE 6 END";
    let failed = "CASE WHEN e.n <= 20 THEN 2 WHEN (e.n * 7 + m.k) % 20 = 0 THEN 1 ELSE 0 END";
    format!("e.id, {minute}, {attempts}, {failed}, {attempts} - {failed}, 0, 5, 1, 1, 12")
}

/// The endpoints `create_endpoints` made.
const OURS: &str = "url LIKE 'http://127.0.0.1:9/hook/%'";

/// The owners' sums of the per-minute rows, as the recorder adds them
/// beside (one shard), written minute by minute as recording interleaves
/// them: an owner's minutes lie on as many pages, as they would live.
const OWNER_SUMS: &str = "INSERT INTO owner_minute_stats (owner, minute, shard, attempts, \
     failed_attempts, delivered, failed, late_0, late_3, late_7, lateness_max_ms) \
     SELECT e.owner, s.minute, 0, sum(s.attempts), sum(s.failed_attempts), sum(s.delivered), \
         sum(s.failed), sum(s.late_0), sum(s.late_3), sum(s.late_7), max(s.lateness_max_ms) \
     FROM minute_stats s JOIN endpoints e ON e.id = s.endpoint_id \
     WHERE e.owner IS NOT NULL GROUP BY s.minute, e.owner ORDER BY s.minute, e.owner";

const COLUMNS: &str =
    "endpoint_id, minute, attempts, failed_attempts, delivered, failed, late_0, late_3, late_7, lateness_max_ms";

pub async fn server(client: &reqwest::Client, pool: &PgPool, database_url: &str, redis_url: &str) {
    reset(pool).await;
    let api = Hookd::start(database_url, redis_url, "bench-stats", "api").await;
    let ids = create_endpoints(client, &api).await;
    let started = Instant::now();
    sqlx::query(
        "INSERT INTO attempts (notification_id, number, started_at, duration_ms, status_code, outcome) \
         SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 1, \
             now() - (g % 86400) * interval '1 second', 20, 200, 'succeeded' \
         FROM generate_series(1, $1) g",
    )
    .bind(ATTEMPTS)
    .execute(pool)
    .await
    .unwrap();
    let per_minute = format!(
        "INSERT INTO minute_stats ({COLUMNS}) \
         SELECT {values} \
         FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM endpoints WHERE {OURS}) e \
         CROSS JOIN (SELECT k, date_trunc('minute', now()) - k * interval '1 minute' AS minute \
                     FROM generate_series(0, 1439) k) m",
        values = row_values("m.minute")
    );
    sqlx::query(sqlx::AssertSqlSafe(per_minute))
        .execute(pool)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO minute_totals (minute, shard, attempts, failed_attempts, delivered, failed, \
             late_0, late_3, late_7, lateness_max_ms) \
         SELECT minute, 0, sum(attempts), sum(failed_attempts), sum(delivered), sum(failed), \
             sum(late_0), sum(late_3), sum(late_7), max(lateness_max_ms) \
         FROM minute_stats GROUP BY minute",
    )
    .execute(pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO minute_backlog (minute, pending) \
         SELECT date_trunc('minute', now()) - k * interval '1 minute', 1000 + k \
         FROM generate_series(1, 1439) k",
    )
    .execute(pool)
    .await
    .unwrap();
    // The failed attempts per hour, as the recorder adds them beside.
    sqlx::query(
        "INSERT INTO hour_failing (hour, endpoint_id, failed_attempts) \
         SELECT date_trunc('hour', minute), endpoint_id, sum(failed_attempts) \
         FROM minute_stats WHERE failed_attempts > 0 GROUP BY 1, 2",
    )
    .execute(pool)
    .await
    .unwrap();
    sqlx::query(OWNER_SUMS).execute(pool).await.unwrap();
    // As autovacuum leaves a running deployment's tables.
    for table in [
        "attempts",
        "minute_stats",
        "minute_totals",
        "minute_backlog",
        "hour_failing",
        "owner_minute_stats",
    ] {
        sqlx::query(sqlx::AssertSqlSafe(format!("VACUUM ANALYZE {table}")))
            .execute(pool)
            .await
            .unwrap();
    }
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM minute_stats")
        .fetch_one(pool)
        .await
        .unwrap();
    println!(
        "   stats (server): {ATTEMPTS} attempts and {rows} per-minute rows written in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    time_calls(client, &api, "server", &ids[3]).await;
    api.stop();
    reset(pool).await;
    sqlx::query(
        "TRUNCATE minute_stats, minute_totals, minute_backlog, hour_failing, owner_minute_stats",
    )
    .execute(pool)
    .await
    .unwrap();
}

pub async fn embedded(client: &reqwest::Client) {
    let data = DataDir::new();
    let off = [("HOOKD_DISPATCHER__ENABLED", "false")];
    let hookd = embedded::start(&data, &off).await;
    let ids = create_endpoints(client, &hookd).await;
    hookd.stop();
    let started = Instant::now();
    let pool = SqlitePool::connect_with(SqliteConnectOptions::new().filename(data.database()))
        .await
        .unwrap();
    let now_us = chrono::Utc::now().timestamp_micros();
    let minute_us = now_us - now_us.rem_euclid(60_000_000);
    sqlx::query(
        "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?1) \
         INSERT INTO attempts (notification_id, number, started_at, duration_ms, status_code, outcome) \
         SELECT unhex(printf('000000000000700080000%011x', n)), 1, ?2 - (n % 86400) * 1000000, \
             20, 200, 'succeeded' FROM g",
    )
    .bind(ATTEMPTS)
    .bind(now_us)
    .execute(&pool)
    .await
    .unwrap();
    let per_minute = format!(
        "WITH RECURSIVE mk(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM mk WHERE k < 1439), \
         e AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM endpoints WHERE {OURS}), \
         m AS (SELECT k, ?1 - k * 60000000 AS minute FROM mk) \
         INSERT INTO minute_stats ({COLUMNS}) SELECT {values} FROM e CROSS JOIN m",
        values = row_values("m.minute")
    );
    sqlx::query(sqlx::AssertSqlSafe(per_minute))
        .bind(minute_us)
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO minute_totals (minute, shard, attempts, failed_attempts, delivered, failed, \
             late_0, late_3, late_7, lateness_max_ms) \
         SELECT minute, 0, sum(attempts), sum(failed_attempts), sum(delivered), sum(failed), \
             sum(late_0), sum(late_3), sum(late_7), max(lateness_max_ms) \
         FROM minute_stats GROUP BY minute",
    )
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query(
        "WITH RECURSIVE mk(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM mk WHERE k < 1439) \
         INSERT INTO minute_backlog (minute, pending) SELECT ?1 - k * 60000000, 1000 + k FROM mk",
    )
    .bind(minute_us)
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO hour_failing (hour, endpoint_id, failed_attempts) \
         SELECT minute - minute % 3600000000, endpoint_id, sum(failed_attempts) \
         FROM minute_stats WHERE failed_attempts > 0 GROUP BY 1, 2",
    )
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query(OWNER_SUMS).execute(&pool).await.unwrap();
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM minute_stats")
        .fetch_one(&pool)
        .await
        .unwrap();
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    println!(
        "   stats (embedded): {ATTEMPTS} attempts and {rows} per-minute rows written in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let hookd = embedded::start(&data, &off).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    time_calls(client, &hookd, "embedded", &ids[3]).await;
    hookd.stop();
}

/// Notifications per drain of the with/without comparison.
const DRAIN: usize = 20_000;

/// The drain (figure 3's, 20,000 due now) with the per-minute counts
/// written (`stats.count_minutes`, the default) and without, alternating
/// which goes first, `runs` times in each mode; prints each rate, the
/// medians and with ÷ without.
pub async fn drains(
    bench: &super::rate_limit::Bench<'_>,
    runs: usize,
    server: bool,
    embedded: bool,
) {
    for (mode, wanted) in [("server", server), ("embedded", embedded)] {
        if !wanted {
            continue;
        }
        let (mut with, mut without) = (Vec::new(), Vec::new());
        for run in 0..runs {
            for counting in [run % 2 == 0, run % 2 == 1] {
                let rate = match mode {
                    "server" => server_drain(bench, run, counting).await,
                    _ => embedded_drain(bench, counting).await,
                };
                println!(
                    "   run {}: drain ({mode}), counts {}: {rate:.0}/s",
                    run + 1,
                    if counting { "on" } else { "off" }
                );
                if counting {
                    with.push(rate)
                } else {
                    without.push(rate)
                }
            }
        }
        let (with, without) = (super::median(with), super::median(without));
        println!(
            "S2. drain of {DRAIN} ({mode}), per-minute counts written ÷ not: {with:.0}/s ÷ {without:.0}/s = {:.2} (medians of {runs}, alternated)",
            with / without
        );
    }
}

fn counting_env(counting: bool) -> [(&'static str, &'static str); 1] {
    [(
        "HOOKD_STATS__COUNT_MINUTES",
        if counting { "true" } else { "false" },
    )]
}

async fn server_drain(bench: &super::rate_limit::Bench<'_>, run: usize, counting: bool) -> f64 {
    let prefix = format!("bench-stats-drain-{run}-{counting}");
    let bodies = super::payload_bodies(DRAIN, "{endpoint}");
    timed_server_drain(bench, &prefix, &counting_env(counting), bodies).await
}

/// A server-mode drain of `bodies` (batch bodies naming the endpoint as
/// `{endpoint}`) by a dispatcher started with `env`: deliveries per
/// second, first to last receipt, once every outcome is written.
pub async fn timed_server_drain(
    bench: &super::rate_limit::Bench<'_>,
    prefix: &str,
    env: &[(&str, &str)],
    bodies: Vec<String>,
) -> f64 {
    let pool = bench.pool;
    reset(pool).await;
    let count = super::seed_bodies(
        pool,
        (bench.database_url, bench.redis_url, prefix),
        bench.receiver_url,
        bodies,
    )
    .await;
    bench.received.reset();
    let dispatcher = Hookd::start_with(
        bench.database_url,
        bench.redis_url,
        prefix,
        "dispatcher",
        env,
    )
    .await;
    super::wait_count(bench.received, count as u64, Duration::from_secs(300)).await;
    // Every outcome written before the next drain starts.
    loop {
        let pending: i64 =
            sqlx::query_scalar("SELECT count(*) FROM notifications WHERE status = 'pending'")
                .fetch_one(pool)
                .await
                .unwrap();
        if pending == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    dispatcher.stop();
    count as f64 / bench.received.span().as_secs_f64()
}

async fn embedded_drain(bench: &super::rate_limit::Bench<'_>, counting: bool) -> f64 {
    let bodies = super::payload_bodies(DRAIN, "{endpoint}");
    timed_embedded_drain(bench, &counting_env(counting), bodies).await
}

/// An embedded drain of `bodies` (as `timed_server_drain`'s) by a hookd
/// started with `env` on the file they were written to.
pub async fn timed_embedded_drain(
    bench: &super::rate_limit::Bench<'_>,
    env: &[(&str, &str)],
    bodies: Vec<String>,
) -> f64 {
    let data = DataDir::new();
    let client = reqwest::Client::new();
    let api = embedded::start(&data, &[("HOOKD_DISPATCHER__ENABLED", "false")]).await;
    let endpoint = super::create_endpoint(&client, &api, bench.receiver_url).await;
    let count = super::post_named(&client, &api.base, bodies, &endpoint).await;
    api.stop();
    bench.received.reset();
    let dispatcher = embedded::start(&data, env).await;
    super::wait_count(bench.received, count as u64, Duration::from_secs(300)).await;
    let reader = SqlitePool::connect_with(
        SqliteConnectOptions::new()
            .filename(data.database())
            .read_only(true),
    )
    .await
    .unwrap();
    loop {
        let pending: i64 =
            sqlx::query_scalar("SELECT count(*) FROM notifications WHERE status = 'pending'")
                .fetch_one(&reader)
                .await
                .unwrap();
        if pending == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    reader.close().await;
    dispatcher.stop();
    count as f64 / bench.received.span().as_secs_f64()
}
