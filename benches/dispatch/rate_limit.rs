//! `BENCH_ONLY=rate_limit`: what a rate limit costs (#35), in each mode.
//! A drain of 20,000 due now to an endpoint with a limit that never binds
//! (100,000/s, burst 100,000: every batch asks the limiter, once) against
//! the same drain with no limit; the same drain beside 20,000 notifications
//! throttled behind another endpoint (10/s, burst 20), and beside 20,000
//! held behind an endpoint whose circuit is open (a receiver answering
//! 503); and hookd's CPU while 100,000 throttled notifications wait behind
//! one endpoint (10/s), once each holds its slot.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sqlx::PgPool;

use super::{
    batch_bodies, breaker::down_receiver, cpu_seconds, create_endpoint, embedded, post_batches,
    receive, receiver_listener, reset, seeded, wait_count, Hookd, Received, Whose,
};

const DRAIN: usize = 20_000;
/// Beside the drain: throttled, or held behind an open circuit.
const THROTTLED: usize = 20_000;
/// Behind one endpoint while hookd's CPU is read (the figure).
const WAITING: usize = 100_000;
/// How long hookd's CPU is read while the throttled backlog waits.
const IDLE: Duration = Duration::from_secs(20);

/// Where the services and receivers are.
pub struct Bench<'a> {
    pub pool: &'a PgPool,
    pub database_url: &'a str,
    pub redis_url: &'a str,
    pub received: &'a Arc<Received>,
    pub receiver_url: &'a str,
}

/// One round: how the healthy endpoint drained, and hookd's CPU (share of
/// one core) while the throttled backlog waited, if there was one.
struct Round {
    rate: f64,
    waiting_cpu: Option<f64>,
    throttled_sent: u64,
}

enum Kind {
    Plain,
    NotBinding,
    Beside,
    /// Beside `THROTTLED` held behind an open circuit.
    BesideOpen,
    /// `WAITING` throttled alone: hookd's CPU while they wait.
    Waiting,
}

/// Creates the endpoints and posts the notifications through `api`.
async fn seed(
    client: &reqwest::Client,
    api: &Hookd,
    receiver_url: &str,
    (slow_url, down_url): (&str, &str),
    kind: &Kind,
) {
    let endpoint = create_endpoint(client, api, receiver_url).await;
    if matches!(kind, Kind::NotBinding) {
        let limit = json!({"rate_limit": {"per_second": 100000, "burst": 100000}});
        let response = client
            .patch(format!("{}/v1/endpoints/{endpoint}", api.base))
            .json(&limit)
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success());
    }
    let mut bodies = if matches!(kind, Kind::Waiting) {
        Vec::new()
    } else {
        batch_bodies(
            DRAIN,
            |i| json!({"endpoint": endpoint, "payload": {"i": i}}),
        )
    };
    let other = match kind {
        Kind::Beside | Kind::Waiting => {
            Some(json!({"url": slow_url, "rate_limit": {"per_second": 10, "burst": 20}}))
        }
        // Its circuit opens after the first failures and stays open
        // through the round (no probe).
        Kind::BesideOpen => Some(json!({"url": down_url, "schedule": ["0s", "1h"],
            "breaker": {"open_ms": 600_000, "max_open_ms": 600_000}})),
        _ => None,
    };
    if let Some(other) = other {
        let slow: Value = client
            .post(format!("{}/v1/endpoints", api.base))
            .json(&other)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let slow = slow["id"].as_str().unwrap().to_string();
        let count = if matches!(kind, Kind::Waiting) {
            WAITING
        } else {
            THROTTLED
        };
        // Posted first: the throttled backlog is ahead of the healthy one.
        let mut first = batch_bodies(count, |i| json!({"endpoint": slow, "payload": {"i": i}}));
        first.append(&mut bodies);
        bodies = first;
        bodies.reverse();
    }
    post_batches(client, &api.base, bodies, 2).await;
}

/// Drains, or reads hookd's CPU while the throttled backlog waits.
async fn measure(bench: &Bench<'_>, slow: &Arc<Received>, kind: &Kind) -> Round {
    let started = Instant::now();
    let mut rate = 0.0;
    let mut waiting_cpu = None;
    if !matches!(kind, Kind::Waiting) {
        wait_count(bench.received, DRAIN as u64, Duration::from_secs(300)).await;
        rate = DRAIN as f64 / bench.received.span().as_secs_f64();
    } else {
        // Every throttled one holds its slot once the first pass over the
        // backlog is done: hookd's CPU falls to what sending at 10/s
        // costs. Looked at each second, up to three minutes.
        let mut parked = None;
        for _ in 0..180 {
            let before = cpu_seconds(Whose::Hookd);
            tokio::time::sleep(Duration::from_secs(1)).await;
            if cpu_seconds(Whose::Hookd) - before < 0.05 {
                parked = Some(started.elapsed());
                break;
            }
        }
        println!(
            "   {WAITING} throttled: each held its slot (hookd under 5 % in a 1 s window) {:.1} s after the dispatcher started",
            parked.map_or(f64::NAN, |p| p.as_secs_f64())
        );
        // BENCH_RATE_SETTLE=<s>: measure that much later (the sweep's first
        // pass over the backlog done), the cost of the hours they wait.
        let settle = std::env::var("BENCH_RATE_SETTLE").ok();
        let settle = settle.and_then(|s| s.parse().ok()).unwrap_or(0);
        tokio::time::sleep(Duration::from_secs(settle)).await;
        let before = cpu_seconds(Whose::Hookd);
        let started = Instant::now();
        tokio::time::sleep(IDLE).await;
        let used = cpu_seconds(Whose::Hookd) - before;
        waiting_cpu = Some(used / started.elapsed().as_secs_f64());
    }
    Round {
        rate,
        waiting_cpu,
        throttled_sent: slow.count.load(std::sync::atomic::Ordering::SeqCst),
    }
}

async fn server_round(
    bench: &Bench<'_>,
    slow: &Arc<Received>,
    urls: (&str, &str),
    kind: Kind,
    n: usize,
) -> Round {
    reset(bench.pool).await;
    let prefix = format!("bench-rate-{n}");
    let client = reqwest::Client::new();
    let api = Hookd::start(bench.database_url, bench.redis_url, &prefix, "api").await;
    seed(&client, &api, bench.receiver_url, urls, &kind).await;
    api.stop();
    seeded(bench.pool, bench.redis_url, &prefix).await;
    bench.received.reset();
    slow.reset();
    let dispatcher = Hookd::start(bench.database_url, bench.redis_url, &prefix, "dispatcher").await;
    let round = measure(bench, slow, &kind).await;
    dispatcher.stop();
    round
}

async fn embedded_round(
    bench: &Bench<'_>,
    slow: &Arc<Received>,
    urls: (&str, &str),
    kind: Kind,
) -> Round {
    let data = embedded::DataDir::new();
    let client = reqwest::Client::new();
    let api = embedded::start(&data, &[("HOOKD_DISPATCHER__ENABLED", "false")]).await;
    seed(&client, &api, bench.receiver_url, urls, &kind).await;
    api.stop();
    bench.received.reset();
    slow.reset();
    let dispatcher = embedded::start(&data, &[]).await;
    let round = measure(bench, slow, &kind).await;
    dispatcher.stop();
    round
}

pub async fn scenario(bench: &Bench<'_>, server: bool, embedded: bool, runs: usize) {
    let slow = Arc::new(Received::default());
    let app = axum::Router::new()
        .fallback(receive)
        .with_state(slow.clone());
    let listener = receiver_listener("127.0.0.1:0".parse().unwrap());
    let slow_url = format!("http://{}/slow", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let down_url = down_receiver().await;
    let urls = (slow_url.as_str(), down_url.as_str());
    let mut modes = Vec::new();
    if server {
        modes.push("server");
    }
    if embedded {
        modes.push("embedded");
    }
    // BENCH_RATE_ROUNDS=waiting: only the waiting cost, `runs` rounds per
    // mode, each printed (to compare a setting of hookd's, such as an
    // allocator option in its environment, sitting by sitting).
    if std::env::var("BENCH_RATE_ROUNDS").is_ok_and(|r| r == "waiting") {
        for (i, mode) in modes.into_iter().enumerate() {
            let mut shares = Vec::new();
            for run in 0..runs.max(1) {
                let round = if mode == "server" {
                    server_round(bench, &slow, urls, Kind::Waiting, 2000 + 10 * i + run).await
                } else {
                    embedded_round(bench, &slow, urls, Kind::Waiting).await
                };
                shares.push(round.waiting_cpu.unwrap_or_default() * 100.0);
            }
            println!(
                "rate_limit ({mode}): hookd's CPU while {WAITING} throttled wait, over {} s: rounds {shares:.2?} %, median {:.2} % of one core (target ≤ 2 %)",
                IDLE.as_secs(),
                super::median(shares.clone())
            );
        }
        return;
    }
    for (i, mode) in modes.into_iter().enumerate() {
        // Without a limit and with one that does not bind, alternated
        // `runs` times (each round a fresh process on a fresh backlog):
        // their ratio is of medians taken side by side, not of one round
        // each, which moves by ±15 % on this machine.
        let mut plain = Vec::new();
        let mut limited = Vec::new();
        for run in 0..runs.max(1) {
            for (j, kind) in [Kind::Plain, Kind::NotBinding].into_iter().enumerate() {
                let n = (i * runs.max(1) + run) * 3 + j;
                let round = if mode == "server" {
                    server_round(bench, &slow, urls, kind, n).await
                } else {
                    embedded_round(bench, &slow, urls, kind).await
                };
                if j == 0 {
                    plain.push(round.rate)
                } else {
                    limited.push(round.rate)
                }
            }
        }
        let mut others = Vec::new();
        for (k, kind) in [Kind::Beside, Kind::BesideOpen, Kind::Waiting]
            .into_iter()
            .enumerate()
        {
            others.push(if mode == "server" {
                server_round(bench, &slow, urls, kind, 1000 + 10 * i + k).await
            } else {
                embedded_round(bench, &slow, urls, kind).await
            });
        }
        let [beside, open, waiting] = <[Round; 3]>::try_from(others).ok().unwrap();
        let plain = Round {
            rate: super::median(plain),
            waiting_cpu: None,
            throttled_sent: 0,
        };
        let limited = Round {
            rate: super::median(limited),
            waiting_cpu: None,
            throttled_sent: 0,
        };
        let (plain, limited, beside) = (&plain, &limited, &beside);
        println!(
            "rate_limit ({mode}): drain of {DRAIN} due now, medians of {runs} alternated rounds: {:.0}/s without a limit, {:.0}/s with one that does not bind: {:.2} (target ≥ 0.95)",
            plain.rate,
            limited.rate,
            limited.rate / plain.rate
        );
        println!(
            "rate_limit ({mode}): the same drain beside {THROTTLED} throttled at 10/s: {:.0}/s, {:.2} of alone (target ≥ 0.9)",
            beside.rate,
            beside.rate / plain.rate
        );
        println!(
            "rate_limit ({mode}): the same drain beside {THROTTLED} held behind an open circuit: {:.0}/s, {:.2} of alone (target ≥ 0.9)",
            open.rate,
            open.rate / plain.rate
        );
        println!(
            "rate_limit ({mode}): hookd's CPU while {WAITING} throttled wait, over {} s: {:.2} % of one core (target ≤ 2 %); {} sent to the throttled endpoint from the start of its drain",
            IDLE.as_secs(),
            waiting.waiting_cpu.unwrap_or_default() * 100.0,
            waiting.throttled_sent
        );
    }
}
