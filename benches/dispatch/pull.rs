//! Pull consumption (issue #12's targets): pull + batch ack by 8 consumers
//! taking 100 at a time (notifications per second, with hookd, PostgreSQL
//! and Redis CPU per notification), and the long-poll wake-up latency from
//! a notification's due time to the waiting consumer's answer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};
use sqlx::PgPool;

use super::{batch_bodies, cpu_snapshot, median, percentile, post_batches, reset, Hookd};

const CONSUMERS: usize = 8;
const TOTAL: u64 = 100_000;

/// A pull endpoint, written straight to PostgreSQL.
async fn pull_endpoint(pool: &PgPool) -> String {
    let secret = hookd::domain::secret::SigningSecret::generate();
    sqlx::query("DELETE FROM consumer_tokens")
        .execute(pool)
        .await
        .unwrap();
    sqlx::query("DELETE FROM endpoints WHERE uid = 'bench-pull'")
        .execute(pool)
        .await
        .unwrap();
    sqlx::query_scalar(
        "INSERT INTO endpoints (id, uid, url, delivery, secret, schedule_ms, schedule_name) \
         VALUES (hookd_uuid_v7(), 'bench-pull', NULL, 'pull', $1, '{0,60000}', NULL) RETURNING id::text",
    )
    .bind(secret.as_str())
    .fetch_one(pool)
    .await
    .unwrap()
}

async fn post(client: &reqwest::Client, url: String, body: Value) -> Value {
    let response = client.post(url).json(&body).send().await.unwrap();
    let status = response.status();
    let answer: Value = response.json().await.unwrap();
    assert!(status.is_success(), "{answer}");
    answer
}

pub async fn scenarios(pool: &PgPool, database_url: &str, redis_url: &str, runs: usize) {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .unwrap();
    let endpoint = pull_endpoint(pool).await;

    // 11. Pull + ack: 100,000 due, 8 consumers, max 100, batch ack.
    let (mut rates, mut costs) = (Vec::new(), Vec::new());
    for run in 0..runs {
        reset(pool).await;
        let api = Hookd::start(database_url, redis_url, &format!("bench-pull-{run}"), "api").await;
        let bodies = batch_bodies(
            TOTAL as usize,
            |i| json!({"endpoint": endpoint, "payload": {"order": i}}),
        );
        post_batches(&client, &api.base, bodies, 4).await;
        let acked = Arc::new(AtomicU64::new(0));
        let cpu_before = cpu_snapshot();
        let started = Instant::now();
        let mut consumers = Vec::new();
        for _ in 0..CONSUMERS {
            let (client, base, endpoint, acked) = (
                client.clone(),
                api.base.clone(),
                endpoint.clone(),
                acked.clone(),
            );
            consumers.push(tokio::spawn(async move {
                loop {
                    let pulled = post(
                        &client,
                        format!("{base}/v1/endpoints/{endpoint}/pull"),
                        json!({"max": 100, "lease": "1m"}),
                    )
                    .await;
                    let receipts: Vec<Value> = pulled["data"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|n| n["receipt"].clone())
                        .collect();
                    if receipts.is_empty() {
                        return;
                    }
                    let answer = post(
                        &client,
                        format!("{base}/v1/endpoints/{endpoint}/ack"),
                        json!({"receipts": receipts}),
                    )
                    .await;
                    let ok = answer["data"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|r| r["status"] == 200)
                        .count();
                    assert_eq!(ok, receipts.len(), "{answer}");
                    acked.fetch_add(ok as u64, Ordering::SeqCst);
                }
            }));
        }
        for consumer in consumers {
            consumer.await.unwrap();
        }
        let wall = started.elapsed().as_secs_f64();
        let used: Vec<f64> = cpu_snapshot()
            .iter()
            .zip(cpu_before)
            .map(|(a, b)| a - b)
            .collect();
        assert_eq!(acked.load(Ordering::SeqCst), TOTAL);
        let per = |seconds: f64| seconds / TOTAL as f64 * 1e6;
        println!(
            "   pull + ack of {TOTAL}: {wall:.2} s wall; CPU per notification: hookd {:.1} µs, postgres {:.1} µs, redis {:.1} µs, bench (consumers) {:.1} µs",
            per(used[0]),
            per(used[1]),
            per(used[2]),
            per(used[3])
        );
        rates.push(TOTAL as f64 / wall);
        costs.push(per(used[0] + used[1] + used[2]));
        api.stop();
    }
    println!(
        "11. pull + ack, {CONSUMERS} consumers, max 100, batch ack: {:.0} notifications/s; hookd + PostgreSQL + Redis {:.1} µs CPU per notification",
        median(rates),
        median(costs)
    );

    // 12. Long-poll wake-up: a consumer waits on process A; each
    // notification is created through process B, due 50 ms later (the
    // waiter learns of it by signal, then wakes on its due time), or due at
    // once (woken by the signal itself).
    reset(pool).await;
    let a = Hookd::start(database_url, redis_url, "bench-pull-wait-a", "api").await;
    let b = Hookd::start(database_url, redis_url, "bench-pull-wait-b", "api").await;
    for (label, ahead_ms) in [("due 50 ms after creation", 50i64), ("due at once", 0)] {
        let mut late_us = Vec::new();
        for _ in 0..300 {
            let waiting = {
                let (client, url) = (
                    client.clone(),
                    format!("{}/v1/endpoints/{endpoint}/pull", a.base),
                );
                tokio::spawn(async move {
                    let answer = post(&client, url, json!({"wait": "5s", "max": 1})).await;
                    (chrono::Utc::now(), answer)
                })
            };
            // Let the pull start waiting (it is not measured from here).
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            let due = chrono::Utc::now() + chrono::Duration::milliseconds(ahead_ms);
            let mut body = json!({"endpoint": endpoint, "payload": {"n": 1}});
            if ahead_ms > 0 {
                body["deliver_at"] =
                    json!(due.to_rfc3339_opts(chrono::SecondsFormat::Micros, true));
            }
            post(&client, format!("{}/v1/notifications", b.base), body).await;
            let (answered, pulled) = waiting.await.unwrap();
            let receipt = pulled["data"][0]["receipt"].clone();
            assert!(receipt.is_string(), "{pulled}");
            post(
                &client,
                format!("{}/v1/endpoints/{endpoint}/ack", a.base),
                json!({"receipts": [receipt]}),
            )
            .await;
            late_us.push((answered - due).num_microseconds().unwrap_or(0).max(0));
        }
        late_us.sort_unstable();
        println!(
            "12. long-poll wake-up, {label} (waiter on process A, created through B), 300: from due time to answer p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            percentile(&late_us, 0.5) as f64 / 1e3,
            percentile(&late_us, 0.99) as f64 / 1e3,
            *late_us.last().unwrap() as f64 / 1e3
        );
    }
    a.stop();
    b.stop();
}
