//! `BENCH_ONLY=ordering`: what ordered delivery per key costs (#48,
//! docs/design.md §17), in each mode.
//!
//! One endpoint, a receiver that answers at once, its in-flight cap the
//! sender's (as the drain's): at the default cap of 32 the unordered
//! round's backlog outgrew the cap and the dispatcher churned it through
//! the index (claimed, loaded and put back every few milliseconds, half
//! the deliveries the receiver took; `BENCHMARKS.md`), which measured that
//! churn, not ordering. Each of `SHAPES`, `keys` keys of `per_key`
//! notifications each, posted in batches with the keys interleaved (the
//! n-th notification of every key before the (n+1)-th of any), on an
//! endpoint without ordering and on one with `"ordering": "key"`,
//! alternated `PAIRS` times. Each round is timed from the first post to
//! the last arrival; the figure is the ordered drain's rate over the
//! unordered one's (target ≥ 0.8), per pair and their median. The receiver
//! also checks each key's arrivals: a notification of a key received while
//! its predecessor had not been (an order violation) is counted, and must
//! be 0 on the ordered endpoint, and the time from each key's arrival to
//! its next (p50, p90, p99): on the ordered endpoint one step of the key's
//! line, which bounds an ordered drain at keys ÷ step. Each round also
//! prints the CPU its processes used (hookd, PostgreSQL, Redis, the bench)
//! and their sum a notification: a round whose CPU falls short of its
//! time × cores waited on its keys' lines, not on CPU. In server mode each
//! round starts on `HISTORY` settled notifications and `KEY_HISTORY`
//! settled ordered ones with their key rows, with the planner's statistics
//! of them, as a deployment past its first minute (`settled_history`,
//! `settled_keys`): on a freshly truncated table nobody analyzed, the
//! first round's records took seconds each.
//!
//! The shapes: 1,000 keys × 20, long lines that each step one notification
//! at a time (the figure); and 20,000 keys × 1, an order's single
//! callback each, the usual shape of payment keys: every notification is
//! its key's head and its tail, so every success ends its key's line and
//! writes its key's row (which the first shape seldom does).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use serde_json::{json, Value};

use super::{batch_bodies, embedded, post_batches, rate_limit::Bench, receiver_listener, Hookd};

/// (keys, notifications a key).
const SHAPES: [(usize, usize); 2] = [(1_000, 20), (20_000, 1)];
const PAIRS: usize = 5;
/// Settled notifications stored before each server round (`settled_history`).
const HISTORY: i64 = 20_000;
/// Settled ordered notifications, each its key's only one, stored beside
/// them with their key rows (`settled_keys`).
const KEY_HISTORY: i64 = 20_000;

/// What the receiver saw in one round.
#[derive(Default)]
struct Receiver {
    received: AtomicU64,
    /// Per key, the highest `n` received and when.
    last: Mutex<HashMap<u64, (u64, Instant)>>,
    /// The time from each key's arrival to its next: on the ordered
    /// endpoint, one step of the key's line (delivered, recorded, released,
    /// claimed, sent).
    gaps: Mutex<Vec<Duration>>,
    violations: AtomicU64,
}

async fn answer(State(receiver): State<Arc<Receiver>>, body: Bytes) -> &'static str {
    if let Ok(value) = serde_json::from_slice::<Value>(&body) {
        if let (Some(key), Some(n)) = (value["k"].as_u64(), value["n"].as_u64()) {
            let now = Instant::now();
            let mut last = receiver.last.lock().unwrap();
            let (seen, at) = last.entry(key).or_insert((0, now));
            // n counts from 1; a retry of one already seen is no violation.
            if n > *seen + 1 {
                receiver.violations.fetch_add(1, Ordering::SeqCst);
            }
            if n == *seen + 1 && n > 1 {
                receiver.gaps.lock().unwrap().push(now - *at);
            }
            if n > *seen {
                (*seen, *at) = (n, now);
            }
        }
    }
    receiver.received.fetch_add(1, Ordering::SeqCst);
    "success"
}

/// One round: `keys × per_key` notifications to a new endpoint (ordered
/// or not); the time from the first post to the last arrival.
async fn round(
    api: &Hookd,
    url: &str,
    receiver: &Arc<Receiver>,
    (keys, per_key): (usize, usize),
    ordered: bool,
) -> Duration {
    let client = reqwest::Client::new();
    receiver.received.store(0, Ordering::SeqCst);
    receiver.violations.store(0, Ordering::SeqCst);
    receiver.last.lock().unwrap().clear();
    receiver.gaps.lock().unwrap().clear();
    let ordering = if ordered { "key" } else { "none" };
    let endpoint: Value = client
        .post(format!("{}/v1/endpoints", api.base))
        .json(&json!({
            "url": url,
            "ordering": ordering,
            "max_in_flight": super::SENDER_IN_FLIGHT,
            "schedule": ["0s", "1s"],
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let endpoint = endpoint["id"].as_str().unwrap().to_string();
    let total = keys * per_key;
    let bodies = batch_bodies(total, |i| {
        let (n, key) = (i / keys + 1, i % keys);
        json!({"endpoint": endpoint, "order_key": format!("k{key}"), "payload": {"k": key, "n": n}})
    });
    // Batches go in creation order, one at a time: the order keys carry.
    let started = Instant::now();
    let cpu_before = super::cpu_snapshot();
    for body in bodies {
        post_batches(&client, &api.base, vec![body], 1).await;
    }
    let posted = started.elapsed();
    let received_when_posted = receiver.received.load(Ordering::SeqCst);
    let deadline = Duration::from_secs(600);
    while receiver.received.load(Ordering::SeqCst) < total as u64 {
        assert!(started.elapsed() < deadline, "ordering: the round drained");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let cpu_after = super::cpu_snapshot();
    let cpu: Vec<f64> = (0..4)
        .map(|i| (cpu_after[i] - cpu_before[i]) * 1e3)
        .collect();
    let mut gaps = std::mem::take(&mut *receiver.gaps.lock().unwrap());
    gaps.sort();
    let gap = |q: f64| {
        let at = (gaps.len().saturating_sub(1) as f64 * q) as usize;
        gaps.get(at).map_or(0.0, |gap| gap.as_secs_f64() * 1e3)
    };
    println!(
        "ordering: {} {total} posted in {:.2} s ({received_when_posted} received by then), drained {:.2} s after the first post; from a key's arrival to its next: p50 {:.0} ms, p90 {:.0} ms, p99 {:.0} ms; CPU hookd {:.0} ms, PostgreSQL {:.0} ms, Redis {:.0} ms, the bench {:.0} ms: {:.0} µs a notification",
        if ordered { "ordered" } else { "unordered" },
        posted.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        gap(0.5),
        gap(0.9),
        gap(0.99),
        cpu[0],
        cpu[1],
        cpu[2],
        cpu[3],
        cpu.iter().sum::<f64>() * 1e3 / total as f64,
    );
    started.elapsed()
}

pub async fn scenario(bench: &Bench<'_>, server: bool, embedded: bool) {
    let receiver = Arc::new(Receiver::default());
    let app = axum::Router::new()
        .fallback(answer)
        .with_state(receiver.clone());
    let listener = receiver_listener("127.0.0.1:0".parse().unwrap());
    let url = format!("http://{}/ordering", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    for (mode, on) in [("server", server), ("embedded", embedded)] {
        if !on {
            continue;
        }
        for shape in SHAPES {
            pairs(bench, &url, &receiver, mode, shape).await;
        }
    }
}

/// A deployment's ordering keys past its first minute: `KEY_HISTORY`
/// settled notifications of `history`, each under a key of its own, with
/// their key rows, and the planner's statistics of both. A round that
/// started on an empty `order_keys` nobody had analyzed had some of its
/// statements planned for no keys at all (the release's update of ended
/// keys hashed every key row, 20,000 by the payment shape's end, for each
/// batch it recorded); a deployment's autovacuum analyzes the table within
/// a minute of its first keys, and hookd plans such statements again then.
async fn settled_keys(pool: &sqlx::PgPool, history: &str) {
    let history: uuid::Uuid = history.parse().unwrap();
    sqlx::query(
        "WITH settled AS ( \
             INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, \
                 status, attempts, deliver_at, next_attempt_at, last_attempt_at, \
                 last_status_code, completed_at, order_key, sequence) \
             SELECT hookd_uuid_v7(), $1, 'application/json', '\\x7b7d', '{0,60000}', \
                 'succeeded', 1, now(), NULL, now(), 200, now(), 'settled-' || n, 1 \
             FROM generate_series(1, $2) AS n \
             RETURNING endpoint_id, order_key \
         ) INSERT INTO order_keys (endpoint_id, order_key, last_sequence) \
         SELECT endpoint_id, order_key, 1 FROM settled",
    )
    .bind(history)
    .bind(KEY_HISTORY)
    .execute(pool)
    .await
    .unwrap();
    sqlx::query("ANALYZE notifications, order_keys")
        .execute(pool)
        .await
        .unwrap();
}

/// `PAIRS` pairs of rounds of one shape in one mode, and their median.
async fn pairs(
    bench: &Bench<'_>,
    url: &str,
    receiver: &Arc<Receiver>,
    mode: &str,
    (keys, per_key): (usize, usize),
) {
    let total = (keys * per_key) as f64;
    let mut ratios = Vec::new();
    for pair in 0..PAIRS {
        let mut rates = [0.0; 2];
        let mut violations = [0; 2];
        for (i, ordered) in [false, true].into_iter().enumerate() {
            let data = embedded::DataDir::new();
            let hookd = if mode == "server" {
                super::reset(bench.pool).await;
                round_sql(bench.pool).await;
                let prefix = format!("bench-ordering-{pair}-{i}");
                let hookd = Hookd::start(bench.database_url, bench.redis_url, &prefix, "all").await;
                // A deployment past its first minute: history, ordered
                // history with its key rows, and the planner's statistics
                // of them (`settled_history`, `settled_keys`).
                let client = reqwest::Client::new();
                let history = super::create_endpoint(&client, &hookd, url).await;
                super::settled_history(bench.pool, &history, HISTORY).await;
                settled_keys(bench.pool, &history).await;
                hookd
            } else {
                embedded::start(&data, &[]).await
            };
            // BENCH_PG_STATS: what each server round cost PostgreSQL.
            let before = if mode == "server" && std::env::var_os("BENCH_PG_STATS").is_some() {
                Some(statements(bench.pool).await)
            } else {
                None
            };
            let took = round(&hookd, url, receiver, (keys, per_key), ordered).await;
            if let Some(before) = before {
                let kind = if ordered { "ordered" } else { "unordered" };
                let name = format!("{keys} keys × {per_key}, pair {}, {kind}", pair + 1);
                round_statements(bench.pool, &before, &name).await;
            }
            hookd.stop();
            rates[i] = total / took.as_secs_f64();
            violations[i] = receiver.violations.load(Ordering::SeqCst);
        }
        let ratio = rates[1] / rates[0];
        ratios.push(ratio);
        println!(
            "ordering ({mode}), pair {}: {keys} keys × {per_key}: unordered {:.0}/s ({} out of order), ordered {:.0}/s ({} out of order): ordered ÷ unordered {ratio:.2}",
            pair + 1,
            rates[0],
            violations[0],
            rates[1],
            violations[1],
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "ordering ({mode}, {keys} keys × {per_key}): ordered ÷ unordered, median of {PAIRS}: {:.2} (target ≥ 0.8)",
        ratios[ratios.len() / 2]
    );
}

/// What PostgreSQL has spent by statement (`pg_stat_statements`, which
/// `BENCH_PG_STATS` loads): calls, rows and milliseconds by query id,
/// with the statement's text.
type Statements = std::collections::HashMap<i64, (i64, i64, f64, String)>;

async fn statements(pool: &sqlx::PgPool) -> Statements {
    sqlx::query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .execute(pool)
        .await
        .unwrap();
    let rows: Vec<(i64, i64, i64, f64, String)> = sqlx::query_as(
        "SELECT queryid, calls, rows, total_exec_time, \
             left(regexp_replace(query, '\\s+', ' ', 'g'), 160) \
         FROM pg_stat_statements WHERE queryid IS NOT NULL",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    rows.into_iter()
        .map(|(id, calls, rows, ms, text)| (id, (calls, rows, ms, text)))
        .collect()
}

/// Appends to `bench-pg-rounds.txt` in the target directory the 25
/// statements that cost PostgreSQL most between `before` and now, in the
/// round `name` (`scripts/bench` sums them by shape and kind of round).
async fn round_statements(pool: &sqlx::PgPool, before: &Statements, name: &str) {
    let mut spent: Vec<(i64, i64, f64, String)> = statements(pool)
        .await
        .into_iter()
        .map(|(id, (calls, rows, ms, text))| {
            let (c, r, m) = before.get(&id).map_or((0, 0, 0.0), |b| (b.0, b.1, b.2));
            (calls - c, rows - r, ms - m, text)
        })
        .filter(|(calls, ..)| *calls > 0)
        .collect();
    spent.sort_by(|a, b| b.2.total_cmp(&a.2));
    let mut text = format!("## {name}\n");
    for (calls, rows, ms, query) in spent.into_iter().take(25) {
        text += &format!("{calls} | {rows} | {ms:.1} | {query}\n");
    }
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
    use std::io::Write;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(format!("{target}/bench-pg-rounds.txt"))
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
}

/// `BENCH_ROUND_SQL=<statements>`: run before each server round, after
/// the reset and hookd's migrations (the bench's database is made anew at
/// each invocation). An experiment's switch, to see what a change to the
/// schema would do to a round before writing it as a migration: an index
/// dropped, or made partial, say (BENCHMARKS.md shows how).
async fn round_sql(pool: &sqlx::PgPool) {
    let Ok(statements) = std::env::var("BENCH_ROUND_SQL") else {
        return;
    };
    // The bench's own switch, set by whoever runs it.
    sqlx::raw_sql(sqlx::AssertSqlSafe(statements))
        .execute(pool)
        .await
        .unwrap();
}
