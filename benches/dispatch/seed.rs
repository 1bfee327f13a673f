//! What the server sections start from and drive: a reset database,
//! settled history, posts and batches, a seeded backlog, and one ingest or
//! delivery run of the server mode.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sqlx::PgPool;

use super::*;

/// Empties what a round stored, ordering keys included: left behind, an
/// ordered round's key rows were each removed by the next round's hookd
/// (housekeeping's walk of keys without a notification), 20,000 of them
/// after a payment-shaped round, on that round's PostgreSQL CPU.
pub(crate) async fn reset(pool: &PgPool) {
    sqlx::query("TRUNCATE notifications, attempts, events, notification_keys, order_keys")
        .execute(pool)
        .await
        .unwrap();
}

/// Steady state for the latency figures: `count` settled notifications of
/// `endpoint` with their attempts, and planner statistics, as a deployment
/// has after its first minute. On a freshly truncated table that nobody has
/// analyzed, the statements hookd prepares are planned for an empty table
/// (a sequential scan is the cheapest way to find 3 rows in none) and keep
/// that generic plan while the table grows during the run, until
/// autovacuum's first analyze: every claim's load and every record then
/// scans the whole table, which is not what a running deployment does.
pub(crate) async fn settled_history(pool: &PgPool, endpoint: &str, count: i64) {
    let endpoint: uuid::Uuid = endpoint.parse().unwrap();
    for statement in [
        "INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, status, \
             attempts, deliver_at, next_attempt_at, last_attempt_at, last_status_code, \
             completed_at) \
         SELECT hookd_uuid_v7(), $1, 'application/json', '\\x7b7d', '{0,60000}', 'succeeded', 1, \
             now(), NULL, now(), 200, now() FROM generate_series(1, $2)",
        "INSERT INTO attempts (notification_id, number, started_at, duration_ms, status_code, \
             outcome) \
         SELECT id, 1, now(), 1, 200, 'succeeded' FROM notifications WHERE endpoint_id = $1",
    ] {
        sqlx::query(statement)
            .bind(endpoint)
            .bind(count)
            .execute(pool)
            .await
            .unwrap();
    }
    sqlx::query("ANALYZE notifications, attempts")
        .execute(pool)
        .await
        .unwrap();
}

/// Single POSTs of `total` notifications (due in an hour) from
/// `CONCURRENCY` clients: accepted/s. Each body is built in the timed
/// loop, as a client would.
pub(crate) async fn single_posts(
    client: &reqwest::Client,
    base: &str,
    endpoint: &str,
    total: u64,
) -> f64 {
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..CONCURRENCY {
        let (client, base, endpoint, next) = (
            client.clone(),
            base.to_string(),
            endpoint.to_string(),
            next.clone(),
        );
        workers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::SeqCst) < total {
                let response = client
                    .post(format!("{base}/v1/notifications"))
                    .json(&json!({"endpoint": endpoint, "payload": {"order": 1}, "delay": "1h"}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), 201);
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
    total as f64 / started.elapsed().as_secs_f64()
}

pub(crate) async fn create_endpoint(client: &reqwest::Client, hookd: &Hookd, url: &str) -> String {
    let endpoint: Value = client
        .post(format!("{}/v1/endpoints", hookd.base))
        .json(&json!({"url": url, "max_in_flight": SENDER_IN_FLIGHT, "schedule": ["0s", "1m"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    endpoint["id"].as_str().unwrap().to_string()
}

/// The request bodies of `count` notifications in batches of 1000, built
/// before any clock starts: the load generator's JSON encoding is not
/// hookd's work.
pub(crate) fn batch_bodies(count: usize, item: impl Fn(usize) -> Value) -> Vec<String> {
    (0..count.div_ceil(1000))
        .map(|b| {
            let items: Vec<Value> = (b * 1000..((b + 1) * 1000).min(count)).map(&item).collect();
            json!({"notifications": items}).to_string()
        })
        .collect()
}

/// Posts prepared batch bodies, `parallel` at a time.
pub(crate) async fn post_batches(
    client: &reqwest::Client,
    base: &str,
    bodies: Vec<String>,
    parallel: usize,
) {
    let bodies = Arc::new(Mutex::new(bodies));
    let mut workers = Vec::new();
    for _ in 0..parallel {
        let (client, base, bodies) = (client.clone(), base.to_string(), bodies.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let Some(body) = bodies.lock().unwrap().pop() else {
                    return;
                };
                let response = client
                    .post(format!("{base}/v1/notifications/batch"))
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                let status = response.status();
                let text = response.text().await.unwrap();
                assert!(status.is_success(), "{text}");
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
}

/// Waits until PostgreSQL is quiet (a checkpoint done, no autovacuum worker
/// busy, for at most 20 s), so that the work left over from the previous run
/// does not land in the next measurement.
pub(crate) async fn settle(pool: &PgPool) {
    sqlx::query("CHECKPOINT").execute(pool).await.unwrap();
    for _ in 0..200 {
        let busy: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'",
        )
        .fetch_one(pool)
        .await
        .unwrap();
        if busy == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Requests/s of `client` against the receiver, `SENDER_IN_FLIGHT` at a time.
pub(crate) async fn raw_run(
    client: &reqwest::Client,
    received: &Received,
    url: &str,
    count: u64,
) -> f64 {
    received.reset();
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..SENDER_IN_FLIGHT {
        let (client, url, next) = (client.clone(), url.to_string(), next.clone());
        workers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::SeqCst) < count {
                let response = client.post(&url).body("{\"i\":1}").send().await.unwrap();
                response.bytes().await.unwrap();
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
    count as f64 / started.elapsed().as_secs_f64()
}

pub(crate) async fn wait_count(received: &Received, count: u64, limit: Duration) {
    let started = Instant::now();
    while received.count.load(Ordering::SeqCst) < count {
        assert!(
            started.elapsed() < limit,
            "only {} of {count} arrived",
            received.count.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Notifications created since `since` (a time-ordered id taken before
/// they were) that are no longer pending: in a drain (where every attempt
/// succeeds), those whose attempt is recorded, wherever it is kept (a
/// first-attempt delivery has no row of `attempts` since session 11).
/// Counted by id, not over the whole table: with 10 million delivered
/// before (`partition_drain`), a count of every row took seconds a poll,
/// and retention deleting the oldest meanwhile kept it from ever adding up.
pub(crate) async fn attempts_recorded(pool: &PgPool, since: uuid::Uuid) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM notifications WHERE id >= $1 AND status <> 'pending'")
        .bind(since)
        .fetch_one(pool)
        .await
        .unwrap()
}

pub(crate) async fn redis_used_memory(redis_url: &str) -> i64 {
    let client = redis::Client::open(redis_url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(&mut conn)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// One delivery run's figures.
pub(crate) struct DeliveryFigures {
    /// Deliveries/s, first to last receipt.
    pub(crate) rate: f64,
    /// Seconds until every attempt was recorded.
    pub(crate) all_written: f64,
    /// The dispatcher's peak RSS, MiB.
    pub(crate) rss: f64,
    /// CPU of hookd, PostgreSQL and Redis over the receiver's CPU in the same
    /// run: the work per delivery, in units of the receiver's work per
    /// request. Unlike a rate, it does not move when the machine's speed
    /// drifts.
    pub(crate) relative_cost: f64,
    /// CPU µs per delivery of hookd, PostgreSQL and Redis.
    pub(crate) cpu_us: [f64; 3],
}

/// `count` notifications due now, ingested through an API-only hookd, the
/// table analysed, the index marked complete and PostgreSQL settled: the
/// backlog a drain starts from (figure 3, and figure 7b's floor).
pub(crate) async fn seed_due(
    pool: &PgPool,
    database_url: &str,
    redis_url: &str,
    prefix: &str,
    receiver_url: &str,
    count: usize,
) {
    let client = reqwest::Client::new();
    let api = Hookd::start(database_url, redis_url, prefix, "api").await;
    let endpoint = create_endpoint(&client, &api, receiver_url).await;
    post_batches(&client, &api.base, payload_bodies(count, &endpoint), 2).await;
    api.stop();
    seeded(pool, redis_url, prefix).await;
}

/// `bodies` (batch bodies that name their endpoint `{endpoint}`) ingested
/// as `seed_due` ingests: the backlog a drain starts from. Returns how
/// many notifications they hold.
pub(crate) async fn seed_bodies(
    pool: &PgPool,
    (database_url, redis_url, prefix): (&str, &str, &str),
    receiver_url: &str,
    bodies: Vec<String>,
) -> usize {
    let client = reqwest::Client::new();
    let api = Hookd::start(database_url, redis_url, prefix, "api").await;
    let endpoint = create_endpoint(&client, &api, receiver_url).await;
    let count = post_named(&client, &api.base, bodies, &endpoint).await;
    api.stop();
    seeded(pool, redis_url, prefix).await;
    count
}

/// Posts `bodies` with their `{endpoint}` replaced by `endpoint`; returns
/// how many notifications they held.
pub(crate) async fn post_named(
    client: &reqwest::Client,
    base: &str,
    bodies: Vec<String>,
    endpoint: &str,
) -> usize {
    let named: Vec<String> = bodies
        .iter()
        .map(|body| body.replace("{endpoint}", endpoint))
        .collect();
    let count = named
        .iter()
        .map(|body| {
            serde_json::from_str::<serde_json::Value>(body).unwrap()["notifications"]
                .as_array()
                .map_or(0, Vec::len)
        })
        .sum();
    post_batches(client, base, named, 2).await;
    count
}

/// The batch bodies of a drain's `count` notifications due now.
pub(crate) fn payload_bodies(count: usize, endpoint: &str) -> Vec<String> {
    // BENCH_PAYLOAD_BYTES=N pads each payload with N bytes of hex digits
    // (a real notification carries an order or a payment, not one number;
    // hex compresses about as well as JSON does, where a run of one letter
    // would compress to nothing).
    let padding: usize = std::env::var("BENCH_PAYLOAD_BYTES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    batch_bodies(count, |i| {
        if padding == 0 {
            return json!({"endpoint": endpoint, "payload": {"i": i}});
        }
        let mut state = i as u64 + 1;
        let hex: String = (0..padding)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                char::from_digit((state >> 60) as u32, 16).unwrap()
            })
            .collect();
        json!({"endpoint": endpoint, "payload": {"i": i, "padding": hex}})
    })
}

/// After a drain's backlog is accepted: the server mode's steady state.
pub(crate) async fn seeded(pool: &PgPool, redis_url: &str, prefix: &str) {
    // Steady state, as in production: the table has planner statistics
    // (autovacuum's first analyze of a freshly filled table would come a
    // minute later), and the index is known complete (the API indexed every
    // row it accepted), so the dispatcher does not start with a rebuild.
    // Marked by hookd's own call: the marker and the sentinel member of
    // `due` (until session 11 the bench set the marker alone, and every
    // drain since the sentinel came in session 4 began with a rebuild that
    // read all 50,000 rows again beside the drain).
    sqlx::query("ANALYZE notifications")
        .execute(pool)
        .await
        .unwrap();
    let settings = hookd::config::Settings::from_toml_layers(&[&format!(
        "[redis]\nurl = \"{redis_url}\"\nprefix = \"{prefix}\"\n"
    )])
    .unwrap();
    let index = hookd::due::redis::RedisIndex::new(&settings.redis).unwrap();
    index.mark_indexed().await.unwrap();
    // The ingest's checkpoint and autovacuum behind it, not in the drain.
    settle(pool).await;
}

/// Figure 2: 50,000 notifications in batches of 1,000 from 4 clients,
/// through a fresh API-only hookd; notifications per second.
pub(crate) async fn batch_ingest_run(
    pool: &PgPool,
    database_url: &str,
    redis_url: &str,
    run: usize,
    client: &reqwest::Client,
    receiver_url: &str,
) -> f64 {
    reset(pool).await;
    let api = Hookd::start(
        database_url,
        redis_url,
        &format!("bench-batch-{run}"),
        "api",
    )
    .await;
    let endpoint = create_endpoint(client, &api, receiver_url).await;
    let bodies = batch_bodies(
        50_000,
        |i| json!({"endpoint": endpoint, "payload": {"i": i}, "delay": "1h"}),
    );
    let cpu_before = cpu_snapshot();
    let started = Instant::now();
    post_batches(client, &api.base, bodies, 4).await;
    let wall = started.elapsed().as_secs_f64();
    let used: Vec<f64> = cpu_snapshot()
        .iter()
        .zip(cpu_before)
        .map(|(a, b)| a - b)
        .collect();
    println!(
        "   CPU while batch-ingesting 50000: hookd {:.2} s, postgres {:.2} s, redis {:.2} s, bench (client) {:.2} s, in {wall:.2} s wall on 2 cores",
        used[0], used[1], used[2], used[3]
    );
    api.stop();
    50_000.0 / wall
}

/// Delivers `count` due-now notifications: ingested through an API-only
/// hookd (`seed_due`), then drained by a dispatcher-only hookd.
pub(crate) async fn delivery_run(
    pool: &PgPool,
    database_url: &str,
    redis_url: &str,
    prefix: &str,
    receiver: &Arc<Received>,
    receiver_url: &str,
    count: usize,
) -> DeliveryFigures {
    let since = uuid::Uuid::now_v7();
    seed_due(pool, database_url, redis_url, prefix, receiver_url, count).await;
    receiver.reset();
    let cpu_before = cpu_snapshot();
    let dispatcher = Hookd::start(database_url, redis_url, prefix, "dispatcher").await;
    let started = Instant::now();
    wait_count(receiver, count as u64, Duration::from_secs(300)).await;
    while attempts_recorded(pool, since).await < count as i64 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // CPU until the last attempt is recorded, not only the last receipt.
    let cpu_after = cpu_snapshot();
    let all_written = started.elapsed().as_secs_f64();
    let used: Vec<f64> = cpu_after
        .iter()
        .zip(cpu_before)
        .map(|(a, b)| a - b)
        .collect();
    println!(
        "   CPU while delivering {count} (until every attempt is recorded): hookd {:.2} s, postgres {:.2} s, redis {:.2} s, bench (receiver) {:.2} s, in {all_written:.2} s wall on 2 cores",
        used[0], used[1], used[2], used[3]
    );
    println!(
        "   receiver CPU per request: {:.1} µs",
        used[3] / count as f64 * 1e6
    );
    let rate = count as f64 / receiver.span().as_secs_f64();
    let rss = dispatcher.peak_rss_mib();
    dispatcher.stop();
    DeliveryFigures {
        rate,
        all_written,
        rss,
        relative_cost: (used[0] + used[1] + used[2]) / used[3],
        cpu_us: [0, 1, 2].map(|i| used[i] / count as f64 * 1e6),
    }
}
