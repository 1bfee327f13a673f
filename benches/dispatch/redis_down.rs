//! `BENCH_ONLY=redis_down`: what a create costs while Redis is stopped.
//! One client posts single notifications one after another to an API-only
//! hookd on a Redis of its own, first with Redis up, then after killing it
//! (SIGKILL). With Redis down, a create commits, marks its row for the
//! housekeeper and answers; the write path's breaker keeps it from waiting
//! `redis.timeout_ms` for Redis (#15: p99 ≤ 20 ms).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::PgPool;

use super::{create_endpoint, percentile, reset, Hookd};

const CREATES: usize = 2_000;

pub async fn scenario(pool: &PgPool, database_url: &str, receiver_url: &str) {
    let Ok(server) = std::env::var("HOOKD_TEST_REDIS_SERVER") else {
        println!("redis down: skipped (HOOKD_TEST_REDIS_SERVER unset; run scripts/bench)");
        return;
    };
    reset(pool).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut redis = Command::new(server)
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let redis_url = format!("redis://127.0.0.1:{port}");
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let api = Hookd::start(database_url, &redis_url, "bench-redis-down", "api").await;
    let client = reqwest::Client::new();
    let endpoint = create_endpoint(&client, &api, receiver_url).await;
    let up = creates(&client, &api.base, &endpoint, CREATES).await;
    let _ = redis.kill();
    let _ = redis.wait();
    let down = creates(&client, &api.base, &endpoint, CREATES).await;
    api.stop();
    println!(
        "redis down: {CREATES} single creates, one client: Redis up p50 {:.1} ms, p99 {:.1} ms; Redis stopped p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        percentile(&up, 0.5) as f64 / 1000.0,
        percentile(&up, 0.99) as f64 / 1000.0,
        percentile(&down, 0.5) as f64 / 1000.0,
        percentile(&down, 0.99) as f64 / 1000.0,
        down.last().copied().unwrap_or_default() as f64 / 1000.0,
    );
}

/// Posts `count` creates one after another; their latencies in µs, sorted.
async fn creates(client: &reqwest::Client, base: &str, endpoint: &str, count: usize) -> Vec<i64> {
    let mut latencies = Vec::with_capacity(count);
    for i in 0..count {
        let started = Instant::now();
        let response = client
            .post(format!("{base}/v1/notifications"))
            .json(&json!({"endpoint": endpoint, "payload": {"i": i}, "delay": "1h"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        latencies.push(started.elapsed().as_micros() as i64);
    }
    latencies.sort_unstable();
    latencies
}
