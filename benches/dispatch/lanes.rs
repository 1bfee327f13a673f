//! `BENCH_ONLY=lanes`: how late a receiver's fresh notifications are while
//! its own retries drain (#48, docs/design.md §17), in each mode.
//!
//! One endpoint, no breaker, the default concurrency cap, a receiver that
//! takes `LATENCY` to answer. The receiver is down (an immediate 503, as a
//! load balancer with no backend answers) while `BACKLOG` notifications
//! make their first attempt; then it answers again and their retries come
//! due together, 10 s after each failure. The outage ends once every one
//! of them has failed once: a notification whose retry also came due
//! within the outage would fail twice and wait an hour, and one never
//! attempted would be fresh itself (until session 30 the bench ended the
//! outage on a count of failures, which retries inflated, and about 2,000
//! of the "retries" were first attempts, in the fresh lane). From the
//! moment the first retry is due, fresh notifications arrive at
//! `FRESH_RATE`/s for `WINDOW`, and the receiver notes how late each one
//! is (received − posted).
//!
//! Two rounds, each with lanes on and then off (`fresh_share: 0` on the
//! endpoint): without a rate limit (fresh p50/p99/max; target p99 ≤ 1 s),
//! and behind a limit of `LIMIT`/s set once the first attempts are done,
//! with fresh arriving at the limit (how many fresh went out per second of
//! the window; target ≥ `fresh_share` × `LIMIT`, 0.5 × by default).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{json, Value};

use super::{batch_bodies, embedded, post_batches, rate_limit::Bench, receiver_listener, Hookd};

/// Retries due at once when the receiver comes back.
const BACKLOG: usize = 20_000;
/// The receiver's time to answer.
const LATENCY: Duration = Duration::from_millis(20);
/// The retry's wait: long enough for every first attempt to fail first.
const RETRY_AFTER: &str = "10s";
/// Fresh notifications per second without a limit.
const FRESH_RATE: u32 = 10;
/// The limit of the second round; fresh arrive at this rate in it.
const LIMIT: u32 = 20;
/// How long fresh notifications arrive.
const WINDOW: Duration = Duration::from_secs(30);
/// How long after the window a fresh one may still arrive and be counted.
const GRACE: Duration = Duration::from_secs(15);

/// The receiver: down or up, counting what it answered, and noting each
/// fresh notification's lateness.
#[derive(Default)]
struct Receiver {
    down: AtomicBool,
    /// The notifications (`webhook-id`) that failed during the outage.
    failed: Mutex<std::collections::HashSet<String>>,
    /// Failures of a notification that had failed before (the scenario
    /// wants none).
    failed_again: AtomicU64,
    succeeded: AtomicU64,
    /// Retries (not fresh) answered with success, and when the last of
    /// the backlog was.
    backlog_succeeded: AtomicU64,
    backlog_drained: Mutex<Option<Instant>>,
    /// Fresh: number → (ms late, received when).
    fresh: Mutex<HashMap<u64, (i64, Instant)>>,
}

async fn answer(
    State(receiver): State<Arc<Receiver>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    if receiver.down.load(Ordering::SeqCst) {
        let id = headers
            .get("webhook-id")
            .and_then(|id| id.to_str().ok())
            .unwrap_or_default()
            .to_string();
        if !receiver.failed.lock().unwrap().insert(id) {
            receiver.failed_again.fetch_add(1, Ordering::SeqCst);
        }
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    tokio::time::sleep(LATENCY).await;
    if body.starts_with(b"{\"fresh\":") {
        if let Ok(value) = serde_json::from_slice::<Value>(&body) {
            if let (Some(n), Some(posted)) = (value["fresh"].as_u64(), value["posted_ms"].as_i64())
            {
                let late = chrono::Utc::now().timestamp_millis() - posted;
                let mut fresh = receiver.fresh.lock().unwrap();
                fresh.entry(n).or_insert((late, Instant::now()));
            }
        }
    } else if receiver.backlog_succeeded.fetch_add(1, Ordering::SeqCst) + 1 == BACKLOG as u64 {
        *receiver.backlog_drained.lock().unwrap() = Some(Instant::now());
    }
    receiver.succeeded.fetch_add(1, Ordering::SeqCst);
    StatusCode::OK
}

/// What one round saw of the fresh notifications.
struct Round {
    posted: usize,
    /// Failures of a notification that had failed before, in the outage.
    failed_again: u64,
    /// Lateness of those received by the end of the grace, sorted (ms).
    late_ms: Vec<i64>,
    /// Received inside the window.
    in_window: usize,
    /// Fresh per second from the first fresh one received to the window's
    /// end: the lane's rate once it runs, without the first one's wait for
    /// the group of slots already given out (at most a second).
    steady_per_second: f64,
    /// From the first retry's arrival to the last one's: the backlog's
    /// drain at the endpoint's cap (none if it outlasted the round).
    drained_in: Option<Duration>,
}

async fn poll(limit: Duration, what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "lanes: {what} within {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `fresh_share` of the round's endpoint: `None` for the default (0.5,
/// lanes on), `Some(0.0)` for lanes off.
async fn round(
    api: &Hookd,
    url: &str,
    receiver: &Arc<Receiver>,
    (limit, share): (Option<u32>, Option<f64>),
) -> Round {
    let client = reqwest::Client::new();
    receiver.down.store(true, Ordering::SeqCst);
    receiver.failed.lock().unwrap().clear();
    receiver.failed_again.store(0, Ordering::SeqCst);
    receiver.succeeded.store(0, Ordering::SeqCst);
    receiver.backlog_succeeded.store(0, Ordering::SeqCst);
    *receiver.backlog_drained.lock().unwrap() = None;
    receiver.fresh.lock().unwrap().clear();
    let endpoint: Value = client
        .post(format!("{}/v1/endpoints", api.base))
        .json(
            &json!({"url": url, "schedule": ["0s", RETRY_AFTER, "1h"], "breaker": null,
            "fresh_share": share}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let endpoint = endpoint["id"].as_str().unwrap().to_string();
    let bodies = batch_bodies(
        BACKLOG,
        |i| json!({"endpoint": endpoint, "payload": {"i": i}}),
    );
    post_batches(&client, &api.base, bodies, 2).await;
    poll(
        Duration::from_secs(300),
        "every first attempt failed",
        || receiver.failed.lock().unwrap().len() >= BACKLOG,
    )
    .await;
    receiver.down.store(false, Ordering::SeqCst);
    let rate = match limit {
        Some(limit) => {
            let response = client
                .patch(format!("{}/v1/endpoints/{endpoint}", api.base))
                .json(&json!({"rate_limit": {"per_second": limit, "burst": limit}}))
                .send()
                .await
                .unwrap();
            assert!(response.status().is_success(), "lanes: rate limit set");
            limit
        }
        None => FRESH_RATE,
    };
    // The first failure was at most the whole outage ago; its retry is due
    // 10 s after it. Wait for the first retry to arrive.
    poll(Duration::from_secs(60), "the first retry arrived", || {
        receiver.succeeded.load(Ordering::SeqCst) > 0
    })
    .await;
    let window = Instant::now();
    let mut posted = 0;
    let mut tick = tokio::time::interval(Duration::from_secs(1) / rate);
    while window.elapsed() < WINDOW {
        tick.tick().await;
        let body = json!({"endpoint": endpoint,
            "payload": {"fresh": posted, "posted_ms": chrono::Utc::now().timestamp_millis()}});
        let client = client.clone();
        let base = api.base.clone();
        tokio::spawn(async move {
            let _ = client
                .post(format!("{base}/v1/notifications"))
                .json(&body)
                .send()
                .await;
        });
        posted += 1;
    }
    let window_end = Instant::now();
    let _ = tokio::time::timeout(GRACE, async {
        while receiver.fresh.lock().unwrap().len() < posted {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let fresh = receiver.fresh.lock().unwrap();
    let mut late_ms: Vec<i64> = fresh.values().map(|(late, _)| *late).collect();
    late_ms.sort_unstable();
    let in_window = fresh.values().filter(|(_, at)| *at <= window_end).count();
    let first = fresh.values().map(|(_, at)| *at).min();
    let steady_per_second = first
        .filter(|first| *first < window_end)
        .map_or(0.0, |first| {
            in_window as f64 / (window_end - first).as_secs_f64()
        });
    Round {
        posted,
        failed_again: receiver.failed_again.load(Ordering::SeqCst),
        late_ms,
        in_window,
        steady_per_second,
        drained_in: receiver
            .backlog_drained
            .lock()
            .unwrap()
            .map(|at| at.saturating_duration_since(window)),
    }
}

fn describe(mode: &str, (limit, share): (Option<u32>, Option<f64>), round: &Round) {
    let lanes = match share {
        Some(0.0) => "lanes off (fresh_share 0)",
        _ => "lanes on",
    };
    let p = |q: f64| {
        if round.late_ms.is_empty() {
            "-".to_string()
        } else {
            super::percentile(&round.late_ms, q).to_string()
        }
    };
    let received = round.late_ms.len();
    if round.failed_again > 0 {
        println!(
            "lanes ({mode}): the outage outlasted the retry wait: {} failures of a notification that had failed before (the figure below is off)",
            round.failed_again
        );
    }
    if let (None, Some(drained)) = (limit, round.drained_in) {
        // The default cap, `dispatcher.endpoint_max_in_flight`.
        let cap = hookd::config::Settings::from_toml_layers(&[])
            .unwrap()
            .dispatcher
            .endpoint_max_in_flight;
        let ideal = f64::from(cap) / LATENCY.as_secs_f64();
        let rate = BACKLOG as f64 / drained.as_secs_f64();
        println!(
            "lanes ({mode}, {lanes}): the backlog of {BACKLOG} drained in {:.1} s at the default cap: {rate:.0}/s, {:.2} of the {ideal:.0}/s the cap of {cap} allows a receiver taking {} ms",
            drained.as_secs_f64(),
            rate / ideal,
            LATENCY.as_millis(),
        );
    }
    match limit {
        None => println!(
            "lanes ({mode}, {lanes}): {BACKLOG} retries due, fresh at {FRESH_RATE}/s for {} s, no limit: {received} of {} fresh arrived; late p50 {} ms, p99 {} ms, max {} ms (target p99 ≤ 1,000 ms)",
            WINDOW.as_secs(),
            round.posted,
            p(0.5),
            p(0.99),
            p(1.0),
        ),
        Some(limit) => println!(
            "lanes ({mode}, {lanes}): {BACKLOG} retries due behind {limit}/s, fresh at {limit}/s for {} s: {:.1} fresh/s went out in the window, {:.1}/s from the first one (target ≥ {:.1}); {received} of {} by {} s later, late p50 {} ms, max {} ms",
            WINDOW.as_secs(),
            round.in_window as f64 / WINDOW.as_secs_f64(),
            round.steady_per_second,
            0.5 * f64::from(limit),
            round.posted,
            GRACE.as_secs(),
            p(0.5),
            p(1.0),
        ),
    }
}

pub async fn scenario(bench: &Bench<'_>, server: bool, embedded: bool) {
    let receiver = Arc::new(Receiver::default());
    let app = axum::Router::new()
        .fallback(answer)
        .with_state(receiver.clone());
    let listener = receiver_listener("127.0.0.1:0".parse().unwrap());
    let url = format!("http://{}/lanes", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    // Each round with lanes on, then off: the feature's worth, side by side.
    let setups = [None, Some(LIMIT)]
        .into_iter()
        .flat_map(|limit| [(limit, None), (limit, Some(0.0))]);
    for (n, setup) in setups.enumerate() {
        if server {
            super::reset(bench.pool).await;
            let prefix = format!("bench-lanes-{n}");
            let hookd = Hookd::start(bench.database_url, bench.redis_url, &prefix, "all").await;
            let round = round(&hookd, &url, &receiver, setup).await;
            hookd.stop();
            describe("server", setup, &round);
        }
        if embedded {
            let data = embedded::DataDir::new();
            let hookd = embedded::start(&data, &[]).await;
            let round = round(&hookd, &url, &receiver, setup).await;
            hookd.stop();
            describe("embedded", setup, &round);
        }
    }
}
