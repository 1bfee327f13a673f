//! Events and fan-out (issue #11's targets): single-POST event ingest
//! beside single-POST notification ingest (the same run, alternating), an
//! event to 100 endpoints through `POST /v1/events/batch` (deliveries
//! created per second), and one event to 10,000 endpoints in one request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};
use sqlx::PgPool;

use super::{cpu_snapshot, median, reset, Hookd, CONCURRENCY};

/// The bench's client: enough idle connections for every worker.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(1024)
        .build()
        .unwrap()
}

/// `count` live endpoints of `owner`, written straight to PostgreSQL (the
/// API's endpoint creation is not what is measured).
async fn endpoints(pool: &PgPool, owner: &str, count: i32, url: &str) {
    let secret = hookd::domain::secret::SigningSecret::generate();
    sqlx::query(
        "INSERT INTO endpoints (id, url, secret, schedule_ms, schedule_name, owner) \
         SELECT hookd_uuid_v7(), $1, $2, '{0,60000}', NULL, $3 FROM generate_series(1, $4)",
    )
    .bind(url)
    .bind(secret.as_str())
    .bind(owner)
    .bind(count)
    .execute(pool)
    .await
    .unwrap();
}

/// POSTs `body(i)` to `path` `total` times from `CONCURRENCY` clients;
/// returns requests per second.
async fn single_posts(
    client: &reqwest::Client,
    base: &str,
    path: &str,
    total: u64,
    body: Value,
) -> f64 {
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..CONCURRENCY {
        let (client, url, body, next) = (
            client.clone(),
            format!("{base}{path}"),
            body.clone(),
            next.clone(),
        );
        workers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::SeqCst) < total {
                let response = client.post(&url).json(&body).send().await.unwrap();
                assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
    total as f64 / started.elapsed().as_secs_f64()
}

/// Scenario 9's work once: 3,000 events of owner `hundred`, 100 per batch
/// request, 4 requests at a time, each to all 100 endpoints (300,000
/// deliveries) through a fresh API process; deliveries created per second
/// and hookd's CPU per delivery (µs).
async fn fan_out_round(
    client: &reqwest::Client,
    database_url: &str,
    redis_url: &str,
    name: &str,
    payload: fn(usize) -> Value,
) -> (f64, f64) {
    let api = Hookd::start(database_url, redis_url, name, "api").await;
    let bodies: Vec<String> = (0..30)
        .map(|b| {
            let events: Vec<Value> = (0..100)
                .map(|i| json!({"event_type": "order.paid", "owner": "hundred", "payload": payload(b * 100 + i), "delay": "1h"}))
                .collect();
            json!({"events": events}).to_string()
        })
        .collect();
    let bodies = Arc::new(std::sync::Mutex::new(bodies));
    let cpu_before = cpu_snapshot();
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..4 {
        let (client, base, bodies) = (client.clone(), api.base.clone(), bodies.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let Some(body) = bodies.lock().unwrap().pop() else {
                    return;
                };
                let response = client
                    .post(format!("{base}/v1/events/batch"))
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                let status = response.status();
                let answer: Value = response.json().await.unwrap();
                assert!(status.is_success(), "{answer}");
                assert_eq!(answer["data"][0]["event"]["deliveries"], json!(100));
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
    let wall = started.elapsed().as_secs_f64();
    let used: Vec<f64> = cpu_snapshot()
        .iter()
        .zip(cpu_before)
        .map(|(a, b)| a - b)
        .collect();
    println!(
        "   CPU while fanning out 3,000 events to 100 endpoints: hookd {:.2} s, postgres {:.2} s, redis {:.2} s, in {wall:.2} s wall",
        used[0], used[1], used[2]
    );
    api.stop();
    (300_000.0 / wall, used[0] / 300_000.0 * 1e6)
}

/// A payment as a filter reads it: every field the filter of `filters`
/// asks about, each satisfying it.
fn payment(n: usize) -> Value {
    json!({"order": n, "amount": 100 + n, "currency": "CNY", "customer": {"id": n, "tier": "gold"}})
}

/// What `filters` puts on every endpoint: each kind of node, satisfied by
/// every `payment`, so that both sides create the same deliveries.
const FILTER: &str = r#"{"amount": {"$gte": 100, "$lt": 1000000}, "currency": "CNY", "$or": [{"customer.tier": {"$in": ["gold", "platinum"]}}, {"rush": {"$exists": true}}], "test": {"$ne": true}}"#;

/// The fan-out of scenario 9 with a payload filter on every one of the 100
/// endpoints beside the same without (issue #50: ≥ 0.8), alternated
/// within each run; deliveries created per second and hookd's CPU per
/// delivery.
pub async fn filters(
    pool: &PgPool,
    database_url: &str,
    redis_url: &str,
    receiver_url: &str,
    runs: usize,
) {
    let client = client();
    sqlx::query("DELETE FROM endpoints WHERE owner = 'hundred'")
        .execute(pool)
        .await
        .unwrap();
    endpoints(pool, "hundred", 100, receiver_url).await;
    let (mut ratios, mut cpu_ratios) = (Vec::new(), Vec::new());
    let (mut plain_rates, mut filtered_rates) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let mut round = [(0.0, 0.0); 2];
        // Which goes first alternates, so that neither always meets the
        // other's leftover work.
        let order = if run % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for filtered in order {
            reset(pool).await;
            sqlx::query("UPDATE endpoints SET filter = $1::jsonb WHERE owner = 'hundred'")
                .bind(filtered.then_some(FILTER))
                .execute(pool)
                .await
                .unwrap();
            round[usize::from(filtered)] = fan_out_round(
                &client,
                database_url,
                redis_url,
                &format!("bench-filters-{run}-{filtered}"),
                payment,
            )
            .await;
        }
        let [(plain, plain_cpu), (filtered, filtered_cpu)] = round;
        println!(
            "   run {}: without a filter {plain:.0}/s ({plain_cpu:.1} µs hookd CPU per delivery), with {filtered:.0}/s ({filtered_cpu:.1} µs): {:.2}",
            run + 1,
            filtered / plain
        );
        ratios.push(filtered / plain);
        cpu_ratios.push(filtered_cpu / plain_cpu);
        plain_rates.push(plain);
        filtered_rates.push(filtered);
    }
    println!(
        "13. fan-out to 100 endpoints with a payload filter on each: {:.0} deliveries created/s, without {:.0}/s; with ÷ without {:.2} (median of {runs} alternated pairs); hookd CPU per delivery with ÷ without {:.2}",
        median(filtered_rates),
        median(plain_rates),
        median(ratios),
        median(cpu_ratios)
    );
    sqlx::query("UPDATE endpoints SET filter = NULL WHERE owner = 'hundred'")
        .execute(pool)
        .await
        .unwrap();
    reset(pool).await;
}

pub async fn scenarios(
    pool: &PgPool,
    database_url: &str,
    redis_url: &str,
    receiver_url: &str,
    runs: usize,
) {
    let client = client();
    sqlx::query("DELETE FROM endpoints WHERE owner IN ('solo', 'hundred', 'wide')")
        .execute(pool)
        .await
        .unwrap();
    endpoints(pool, "solo", 1, receiver_url).await;
    endpoints(pool, "hundred", 100, receiver_url).await;
    endpoints(pool, "wide", 10_000, receiver_url).await;
    let solo: String = sqlx::query_scalar("SELECT id::text FROM endpoints WHERE owner = 'solo'")
        .fetch_one(pool)
        .await
        .unwrap();

    // 8. Single POSTs: an event with one subscriber beside a notification,
    // alternating within each run so that both see the same machine.
    let (mut notifications, mut events, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..runs {
        reset(pool).await;
        let api = Hookd::start(
            database_url,
            redis_url,
            &format!("bench-events-{run}"),
            "api",
        )
        .await;
        let cpu_before = cpu_snapshot();
        let n = single_posts(
            &client,
            &api.base,
            "/v1/notifications",
            20_000,
            json!({"endpoint": solo, "payload": {"order": 1}, "delay": "1h"}),
        )
        .await;
        let cpu_between = cpu_snapshot();
        let e = single_posts(
            &client,
            &api.base,
            "/v1/events",
            20_000,
            json!({"event_type": "order.paid", "owner": "solo", "payload": {"order": 1}, "delay": "1h"}),
        )
        .await;
        let cpu_after = cpu_snapshot();
        // CPU per request (µs) of hookd and PostgreSQL, for each kind.
        let per = |a: [f64; 4], b: [f64; 4], i: usize| (b[i] - a[i]) / 20_000.0 * 1e6;
        println!(
            "   run {}: events {e:.0}/s, notifications {n:.0}/s: {:.2}; CPU per request: hookd {:.0} / {:.0} µs, postgres {:.0} / {:.0} µs (event / notification)",
            run + 1,
            e / n,
            per(cpu_between, cpu_after, 0),
            per(cpu_before, cpu_between, 0),
            per(cpu_between, cpu_after, 1),
            per(cpu_before, cpu_between, 1),
        );
        notifications.push(n);
        events.push(e);
        ratios.push(e / n);
        api.stop();
    }
    println!(
        "8. single POSTs, 64 clients, 20,000 each: events (fan-out 1) {:.0}/s, notifications {:.0}/s; events/notifications {:.2}",
        median(events),
        median(notifications),
        median(ratios)
    );

    // 9. An event to 100 endpoints, 100 events per batch request, 4
    // requests at a time: 300,000 deliveries.
    let mut rates = Vec::new();
    for run in 0..runs {
        reset(pool).await;
        let (rate, _) = fan_out_round(
            &client,
            database_url,
            redis_url,
            &format!("bench-fanout-{run}"),
            |n| json!({"order": n}),
        )
        .await;
        rates.push(rate);
    }
    println!(
        "9. events to 100 endpoints, 100 per batch request, 300,000 deliveries: {:.0} deliveries created/s",
        median(rates)
    );

    // 10. One event to 10,000 endpoints, one request at a time.
    reset(pool).await;
    let api = Hookd::start(database_url, redis_url, "bench-wide", "api").await;
    let mut latencies = Vec::new();
    for i in 0..(runs * 3) {
        let started = Instant::now();
        let response = client
            .post(format!("{}/v1/events", api.base))
            .json(&json!({"event_type": "order.paid", "owner": "wide", "payload": {"order": i}, "delay": "1h"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["deliveries"], json!(10_000));
        latencies.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    let worst = latencies.iter().copied().fold(0.0, f64::max);
    println!(
        "10. one event to 10,000 endpoints, one request: median {:.0} ms, worst {:.0} ms of {}",
        median(latencies),
        worst,
        runs * 3
    );
    api.stop();
    reset(pool).await;
}
