//! `BENCH_ONLY=list_load`: what a portal link's list loops cost another
//! caller (#47 finding 3), in each mode, with the real binary.
//!
//! An endpoint with a history of `HISTORY` settled notifications, one in
//! `FAILED_EVERY` failed; a portal link of it loops `LOOPS` filtered
//! lists (`status=failed` and `event_type=never.seen`: filters no index
//! serves beside the link's forced scope, so each page reads its bounded
//! slice of the history), asking again 100 ms after each 429. Another
//! caller creates notifications one after another for `MEASURED`, first
//! with nothing beside it, then beside the loops. Printed: the creates'
//! p50 and p99 both ways, their ratio, and how the link's lists were
//! answered. The figure is a p99 under 100 ms beside the loops;
//! the ratio is what compares across machines.
//!
//! The test `list_load` asserts the behaviour (429 past the cap with
//! `Retry-After`, every create answered 201); this prints the time.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use uuid::Uuid;

use super::{embedded, median, rate_limit::Bench, reset, Hookd};

const PORTAL_KEY: &str = "bench-portal-key-0123456789abcdefghijklmnop";
const HISTORY: usize = 100_000;
const FAILED_EVERY: usize = HISTORY + 1;
const LOOPS: usize = 24;
const MEASURED: Duration = Duration::from_secs(5);
const ROUNDS: usize = 3;

/// Where the history is written, behind hookd's back as a bulk import
/// would: its volume without the API's pace.
enum Db<'a> {
    Postgres(&'a sqlx::PgPool),
    Sqlite(&'a std::path::Path),
}

/// One round's figures, in microseconds.
struct Round {
    alone: (u64, u64),
    beside: (u64, u64),
    answered: usize,
    refused: usize,
}

pub async fn scenario(bench: &Bench<'_>, server: bool, embedded: bool) {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .unwrap();
    println!(
        "list_load: {LOOPS} filtered list loops of one portal link over {HISTORY} notifications, \
         another caller's creates for {MEASURED:?} alone then beside them, {ROUNDS} rounds"
    );
    for (mode, wanted) in [("server", server), ("embedded", embedded)] {
        if !wanted {
            continue;
        }
        let mut ratios = Vec::new();
        let mut p99s = Vec::new();
        for round in 0..ROUNDS {
            let figures = if mode == "server" {
                reset(bench.pool).await;
                let hookd = Hookd::start_with(
                    bench.database_url,
                    bench.redis_url,
                    &format!("bench-list-load-{round}"),
                    "all",
                    &[("HOOKD_PORTAL__KEY", PORTAL_KEY)],
                )
                .await;
                let figures = measure(&client, &hookd.base, Db::Postgres(bench.pool)).await;
                hookd.stop();
                figures
            } else {
                let data = embedded::DataDir::new();
                let hookd = embedded::start(&data, &[("HOOKD_PORTAL__KEY", PORTAL_KEY)]).await;
                let figures = measure(&client, &hookd.base, Db::Sqlite(&data.database())).await;
                hookd.stop();
                figures
            };
            let ratio = figures.beside.1 as f64 / figures.alone.1.max(1) as f64;
            println!(
                "   {mode} round {}: creates alone p50 {:.1} ms, p99 {:.1} ms; beside the loops \
                 p50 {:.1} ms, p99 {:.1} ms ({ratio:.1}× alone); the link's lists {} answered, {} \
                 refused (429)",
                round + 1,
                ms(figures.alone.0),
                ms(figures.alone.1),
                ms(figures.beside.0),
                ms(figures.beside.1),
                figures.answered,
                figures.refused,
            );
            ratios.push(ratio);
            p99s.push(ms(figures.beside.1));
        }
        println!(
            "list_load, {mode}: another caller's creates beside the loops p99 {:.1} ms (target \
             < 100 ms), {:.1}× their p99 alone (medians of {ROUNDS})",
            median(p99s),
            median(ratios),
        );
    }
}

fn ms(micros: u64) -> f64 {
    micros as f64 / 1_000.0
}

/// Prepares the endpoints, the link and the history at `base`, then
/// measures the creates alone and beside the loops.
async fn measure(client: &reqwest::Client, base: &str, db: Db<'_>) -> Round {
    // The server mode's endpoints outlive a round (`reset` keeps them).
    let round = Uuid::now_v7().simple().to_string();
    let (shown_uid, other_uid) = (format!("shown-{round}"), format!("other-{round}"));
    let mut shown = None;
    for uid in [&shown_uid, &other_uid] {
        let endpoint: Value = client
            .post(format!("{base}/v1/endpoints"))
            .json(&json!({"uid": uid, "url": "http://127.0.0.1:9/hook"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        shown.get_or_insert(endpoint["id"].as_str().unwrap().parse::<Uuid>().unwrap());
    }
    let link: Value = client
        .post(format!("{base}/v1/endpoints/{shown_uid}/portal"))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = link["url"]
        .as_str()
        .and_then(|url| url.split_once("#portal="))
        .map(|(_, token)| token.to_string())
        .expect("a portal link (HOOKD_PORTAL__KEY is set)");
    history(db, shown.unwrap()).await;

    let alone = creates(client, base, &other_uid).await;
    let stop = Arc::new(AtomicBool::new(false));
    let (answered, refused) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut loops = Vec::new();
    for i in 0..LOOPS {
        let filter = if i % 2 == 0 {
            "status=failed"
        } else {
            "event_type=never.seen"
        };
        let url = format!("{base}/v1/notifications?{filter}&limit=50");
        let (client, token) = (client.clone(), token.clone());
        let (stop, answered, refused) = (stop.clone(), answered.clone(), refused.clone());
        loops.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let Ok(response) = client.get(&url).bearer_auth(&token).send().await else {
                    continue;
                };
                let status = response.status();
                let _ = response.bytes().await;
                if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
                    refused.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                } else {
                    answered.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    // Every loop under way before the creates are measured.
    while answered.load(Ordering::Relaxed) + refused.load(Ordering::Relaxed) < LOOPS {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let beside = creates(client, base, &other_uid).await;
    stop.store(true, Ordering::Relaxed);
    for handle in loops {
        handle.await.unwrap();
    }
    Round {
        alone,
        beside,
        answered: answered.load(Ordering::Relaxed),
        refused: refused.load(Ordering::Relaxed),
    }
}

/// Creates for `MEASURED`, one after another, from a runtime of their own
/// (a thread's), so that what they time is hookd, not the loops' tasks.
/// Their p50 and p99 in microseconds.
async fn creates(client: &reqwest::Client, base: &str, endpoint: &str) -> (u64, u64) {
    let (client, base, endpoint) = (client.clone(), base.to_string(), endpoint.to_string());
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut latencies = Vec::new();
            let started = Instant::now();
            while started.elapsed() < MEASURED {
                let body =
                    json!({"endpoint": endpoint, "payload": {"n": latencies.len()}, "delay": "1h"});
                let sent = Instant::now();
                let response = client
                    .post(format!("{base}/v1/notifications"))
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), reqwest::StatusCode::CREATED);
                latencies.push(sent.elapsed().as_micros() as u64);
            }
            latencies
        })
    });
    let mut latencies = tokio::task::spawn_blocking(move || thread.join().unwrap())
        .await
        .unwrap();
    latencies.sort_unstable();
    let at = |p: usize| latencies[(latencies.len() * p).div_ceil(100) - 1];
    (at(50), at(99))
}

/// `HISTORY` settled notifications of `endpoint`, of type `order.paid`,
/// oldest first, every `FAILED_EVERY`-th failed.
async fn history(db: Db<'_>, endpoint: Uuid) {
    let rows: Vec<(Uuid, &str)> = (1..=HISTORY)
        .map(|i| {
            let status = if i % FAILED_EVERY == 0 {
                "failed"
            } else {
                "succeeded"
            };
            (Uuid::now_v7(), status)
        })
        .collect();
    match db {
        Db::Postgres(pool) => {
            let (ids, statuses): (Vec<Uuid>, Vec<&str>) = rows.into_iter().unzip();
            sqlx::query(
                "INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, \
                     status, deliver_at, completed_at, event_type) \
                 SELECT u.id, $2, 'application/json', '\\x7b7d', '{0}', u.status, now(), now(), \
                     'order.paid' \
                 FROM UNNEST($1::uuid[], $3::text[]) AS u(id, status)",
            )
            .bind(&ids)
            .bind(endpoint)
            .bind(&statuses)
            .execute(pool)
            .await
            .unwrap();
            sqlx::query("ANALYZE notifications")
                .execute(pool)
                .await
                .unwrap();
        }
        Db::Sqlite(file) => {
            let options = sqlx::sqlite::SqliteConnectOptions::new()
                .filename(file)
                .busy_timeout(Duration::from_secs(30));
            let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
            let now = chrono::Utc::now().timestamp_micros();
            let mut tx = pool.begin().await.unwrap();
            for chunk in rows.chunks(1_000) {
                let mut insert = sqlx::QueryBuilder::new(
                    "INSERT INTO notifications (id, endpoint_id, content_type, body, \
                     schedule_ms, status, deliver_at, created_at, updated_at, completed_at, \
                     event_type) ",
                );
                insert.push_values(chunk, |mut row, (id, status)| {
                    row.push_bind(*id)
                        .push_bind(endpoint)
                        .push("'application/json', x'7b7d', '[0]'")
                        .push_bind(*status)
                        .push_bind(now)
                        .push_bind(now)
                        .push_bind(now)
                        .push_bind(now)
                        .push("'order.paid'");
                });
                insert.build().execute(&mut *tx).await.unwrap();
            }
            tx.commit().await.unwrap();
            pool.close().await;
        }
    }
}
