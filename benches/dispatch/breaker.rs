//! `BENCH_ONLY=breaker`: what the circuit breaker costs (DESIGN.md §16,
//! issue #35), in each mode. First hookd's CPU while `HELD` notifications
//! are held behind one endpoint whose circuit is open (target ≤ 2 % of one
//! core); then the drain of 50,000 with the breaker on (the default) and
//! off (`"breaker": null`), alternated per run: on ÷ off must not drop.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sqlx::PgPool;

use super::{
    attempts_recorded, batch_bodies, cpu_seconds, embedded, median, post_batches, reset, seeded,
    settle, wait_count, Hookd, Received, Whose,
};

/// Held behind the open endpoint.
const HELD: usize = 100_000;
/// The drain's backlog.
const DRAIN: usize = 50_000;
/// How long the held figure's CPU is measured.
const WINDOW: Duration = Duration::from_secs(20);

pub async fn scenarios(
    pool: &PgPool,
    database_url: &str,
    redis_url: &str,
    received: &std::sync::Arc<Received>,
    receiver_url: &str,
    runs: usize,
) {
    held(pool, database_url, redis_url).await;
    drains(pool, database_url, redis_url, received, receiver_url, runs).await;
}

/// The embedded mode's figures: the same, on a SQLite file.
pub async fn embedded_scenarios(received: &Received, receiver_url: &str, runs: usize) {
    let data = embedded::DataDir::new();
    let hookd = embedded::start(&data, &[]).await;
    held_by(&hookd, "embedded").await;
    hookd.stop();
    let mut ratios = Vec::new();
    let (mut ons, mut offs) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let (mut on, mut off) = (0.0, 0.0);
        for breaker_on in [run % 2 == 0, run % 2 == 1] {
            let rate = embedded_drain(received, receiver_url, breaker_on).await;
            println!(
                "   run {} (embedded): drain of {DRAIN}, breaker {}: {rate:.0}/s",
                run + 1,
                if breaker_on { "on" } else { "off" }
            );
            if breaker_on {
                on = rate;
            } else {
                off = rate;
            }
        }
        ons.push(on);
        offs.push(off);
        ratios.push(on / off);
    }
    println!(
        "breaker (embedded). drain of {DRAIN}: breaker on {:.0}/s, off {:.0}/s, on ÷ off {:.2} (median of the per-run ratios; target ≥ 0.95)",
        median(ons),
        median(offs),
        median(ratios)
    );
}

async fn drains(
    pool: &PgPool,
    database_url: &str,
    redis_url: &str,
    received: &std::sync::Arc<Received>,
    receiver_url: &str,
    runs: usize,
) {
    let mut ratios = Vec::new();
    let (mut ons, mut offs) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let (mut on, mut off) = (0.0, 0.0);
        // Alternated, which goes first: the machine's speed drifts.
        for breaker_on in [run % 2 == 0, run % 2 == 1] {
            let rate = drain(
                pool,
                database_url,
                redis_url,
                &format!("bench-breaker-drain-{run}-{breaker_on}"),
                received,
                receiver_url,
                breaker_on,
            )
            .await;
            println!(
                "   run {}: drain of {DRAIN}, breaker {}: {rate:.0}/s",
                run + 1,
                if breaker_on { "on" } else { "off" }
            );
            if breaker_on {
                on = rate;
            } else {
                off = rate;
            }
        }
        ons.push(on);
        offs.push(off);
        ratios.push(on / off);
    }
    println!(
        "breaker. drain of {DRAIN}: breaker on {:.0}/s, off {:.0}/s, on ÷ off {:.2} (median of the per-run ratios; target ≥ 0.95)",
        median(ons),
        median(offs),
        median(ratios)
    );
}

/// A receiver that answers every request 503.
pub(super) async fn down_receiver() -> String {
    let app =
        axum::Router::new().fallback(|| async { axum::http::StatusCode::SERVICE_UNAVAILABLE });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/down", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

async fn held(pool: &PgPool, database_url: &str, redis_url: &str) {
    reset(pool).await;
    settle(pool).await;
    let hookd = Hookd::start(database_url, redis_url, "bench-breaker-held", "all").await;
    held_by(&hookd, "server").await;
    hookd.stop();
    let attempts: i64 = sqlx::query_scalar("SELECT COALESCE(sum(attempts), 0) FROM notifications")
        .fetch_one(pool)
        .await
        .unwrap();
    println!("   held (server): {attempts} attempts in all");
}

/// Holds `HELD` behind one open endpoint of `hookd` (`--role all`) and
/// reads the CPU while they wait.
async fn held_by(hookd: &Hookd, mode: &str) {
    let down = down_receiver().await;
    let client = reqwest::Client::new();
    let endpoint: Value = client
        .post(format!("{}/v1/endpoints", hookd.base))
        .json(
            &json!({"url": down, "max_in_flight": 32, "schedule": ["0s", "1h"],
            "breaker": {"open_ms": 600_000, "max_open_ms": 600_000}}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = endpoint["id"].as_str().unwrap().to_string();
    let started = Instant::now();
    let bodies = batch_bodies(HELD, |i| json!({"endpoint": id, "payload": {"i": i}}));
    post_batches(&client, &hookd.base, bodies, 2).await;
    let accepted = started.elapsed();
    // Held once the dispatcher has claimed and parked every one: its CPU
    // falls quiet. Looked at each second, up to two minutes.
    let mut quiet = None;
    for _ in 0..120 {
        let before = cpu_seconds(Whose::Hookd);
        tokio::time::sleep(Duration::from_secs(1)).await;
        if cpu_seconds(Whose::Hookd) - before < 0.03 {
            quiet = Some(started.elapsed());
            break;
        }
    }
    let circuit = endpoint_circuit(&client, &hookd.base, &id).await;
    let before = [
        cpu_seconds(Whose::Hookd),
        cpu_seconds(Whose::Postgres),
        cpu_seconds(Whose::Redis),
    ];
    tokio::time::sleep(WINDOW).await;
    let used: Vec<f64> = [
        cpu_seconds(Whose::Hookd),
        cpu_seconds(Whose::Postgres),
        cpu_seconds(Whose::Redis),
    ]
    .iter()
    .zip(before)
    .map(|(after, before)| (after - before) / WINDOW.as_secs_f64() * 100.0)
    .collect();
    println!(
        "   held ({mode}): {HELD} accepted in {:.1} s, parked (hookd quiet) after {:.1} s; circuit {circuit}",
        accepted.as_secs_f64(),
        quiet.map_or(f64::NAN, |q| q.as_secs_f64()),
    );
    println!(
        "breaker ({mode}). {HELD} held behind one open endpoint, CPU over {} s: hookd {:.2} % of a core (target ≤ 2 %), postgres {:.2} %, redis {:.2} %",
        WINDOW.as_secs(),
        used[0],
        used[1],
        used[2]
    );
}

async fn endpoint_circuit(client: &reqwest::Client, base: &str, id: &str) -> Value {
    let endpoint: Value = client
        .get(format!("{base}/v1/endpoints/{id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    endpoint["circuit"].clone()
}

/// One drain of `DRAIN` due notifications by a dispatcher of its own, as
/// `delivery_run` (figure 7), the endpoint's breaker on or off.
async fn drain(
    pool: &PgPool,
    database_url: &str,
    redis_url: &str,
    prefix: &str,
    received: &Received,
    receiver_url: &str,
    breaker_on: bool,
) -> f64 {
    reset(pool).await;
    settle(pool).await;
    let client = reqwest::Client::new();
    let api = Hookd::start(database_url, redis_url, prefix, "api").await;
    let mut fields = json!({"url": receiver_url, "max_in_flight": super::SENDER_IN_FLIGHT, "schedule": ["0s", "1m"]});
    if !breaker_on {
        fields["breaker"] = Value::Null;
    }
    let endpoint: Value = client
        .post(format!("{}/v1/endpoints", api.base))
        .json(&fields)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = endpoint["id"].as_str().unwrap().to_string();
    let bodies = batch_bodies(DRAIN, |i| json!({"endpoint": id, "payload": {"i": i}}));
    let since = uuid::Uuid::now_v7();
    post_batches(&client, &api.base, bodies, 2).await;
    api.stop();
    seeded(pool, redis_url, prefix).await;
    received.reset();
    let dispatcher = Hookd::start(database_url, redis_url, prefix, "dispatcher").await;
    wait_count(received, DRAIN as u64, Duration::from_secs(300)).await;
    while attempts_recorded(pool, since).await < DRAIN as i64 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    dispatcher.stop();
    DRAIN as f64 / received.span().as_secs_f64()
}

/// One embedded drain of `DRAIN` due notifications: accepted by a hookd
/// with its dispatcher off, drained by one started on the file after.
async fn embedded_drain(received: &Received, receiver_url: &str, breaker_on: bool) -> f64 {
    let data = embedded::DataDir::new();
    let client = reqwest::Client::new();
    let api = embedded::start(&data, &[("HOOKD_DISPATCHER__ENABLED", "false")]).await;
    let mut fields = json!({"url": receiver_url, "max_in_flight": super::SENDER_IN_FLIGHT, "schedule": ["0s", "1m"]});
    if !breaker_on {
        fields["breaker"] = Value::Null;
    }
    let endpoint: Value = client
        .post(format!("{}/v1/endpoints", api.base))
        .json(&fields)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = endpoint["id"].as_str().unwrap().to_string();
    let bodies = batch_bodies(DRAIN, |i| json!({"endpoint": id, "payload": {"i": i}}));
    post_batches(&client, &api.base, bodies, 2).await;
    api.stop();
    received.reset();
    let dispatcher = embedded::start(&data, &[]).await;
    wait_count(received, DRAIN as u64, Duration::from_secs(300)).await;
    dispatcher.stop();
    DRAIN as f64 / received.span().as_secs_f64()
}
