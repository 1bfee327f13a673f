//! `BENCH_ONLY=pages`: the console's pages with 1,000,000 notifications
//! stored (#49's "done when": the first results of each list and page
//! under 300 ms at p99, in both modes), through the API the console calls.
//!
//! 100 endpoints of 10 owners; 1,000,000 notifications over them, written
//! behind hookd's back as a bulk import would (their volume without the
//! API's pace): keyed `order-N`, one in 100 failed (after 8 attempts, all
//! of `ep-7`'s), one in 10 a refund;
//! and 10,000 events keyed `event-N`, each with one delivery among them.
//! Each request the console makes for a page (a search's first page with
//! each filter, a notification and its attempts, an endpoint, the
//! overview) is asked `SAMPLES` times one after another; printed: p50 and
//! p99 of each, and the slowest p99 against the target.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use uuid::Uuid;

use super::{embedded, rate_limit::Bench, reset, Hookd};

const STORED: usize = 1_000_000;
const ENDPOINTS: usize = 100;
const EVENTS: usize = 10_000;
const SAMPLES: usize = 40;

enum Db<'a> {
    Postgres(&'a sqlx::PgPool),
    Sqlite(&'a std::path::Path),
}

/// One stored notification.
struct Row {
    id: Uuid,
    endpoint: Uuid,
    key: Option<String>,
    status: &'static str,
    /// A failed one's whole schedule of 8, a success's first.
    attempts: i32,
    event_type: Option<&'static str>,
    event: Option<Uuid>,
}

pub async fn scenario(bench: &Bench<'_>, server: bool, embedded: bool) {
    let client = reqwest::Client::new();
    println!(
        "pages: the console's requests with {STORED} notifications over {ENDPOINTS} endpoints \
         and {EVENTS} events stored, {SAMPLES} of each one after another"
    );
    for (mode, wanted) in [("server", server), ("embedded", embedded)] {
        if !wanted {
            continue;
        }
        if mode == "server" {
            reset(bench.pool).await;
            let hookd = Hookd::start_with(
                bench.database_url,
                bench.redis_url,
                "bench-pages",
                "api",
                &[],
            )
            .await;
            measure(&client, &hookd.base, mode, Db::Postgres(bench.pool)).await;
            hookd.stop();
        } else {
            let data = embedded::DataDir::new();
            let hookd = embedded::start(&data, &[]).await;
            measure(&client, &hookd.base, mode, Db::Sqlite(&data.database())).await;
            hookd.stop();
        }
    }
}

async fn measure(client: &reqwest::Client, base: &str, mode: &str, db: Db<'_>) {
    // The server mode's endpoints outlive a run (`reset` keeps them).
    let run = Uuid::now_v7().simple().to_string();
    let mut endpoints = Vec::new();
    for n in 0..ENDPOINTS {
        let endpoint: Value = client
            .post(format!("{base}/v1/endpoints"))
            .json(
                &json!({"uid": format!("ep-{n}-{run}"), "owner": format!("owner-{}-{run}", n % 10),
                "url": "http://127.0.0.1:9/hook"}),
            )
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        endpoints.push(endpoint["id"].as_str().unwrap().parse::<Uuid>().unwrap());
    }
    let events: Vec<Uuid> = (0..EVENTS).map(|_| Uuid::now_v7()).collect();
    let rows: Vec<Row> = (0..STORED)
        .map(|i| {
            let delivery = (i % (STORED / EVENTS) == 50).then(|| events[i / (STORED / EVENTS)]);
            Row {
                id: Uuid::now_v7(),
                endpoint: endpoints[i % ENDPOINTS],
                key: delivery.is_none().then(|| format!("order-{i}")),
                status: if i % 100 == 7 { "failed" } else { "succeeded" },
                attempts: if i % 100 == 7 { 8 } else { 1 },
                event_type: match (delivery, i % 10) {
                    (Some(_), _) => None,
                    (None, 3) => Some("order.refunded"),
                    (None, _) => Some("order.paid"),
                },
                event: delivery,
            }
        })
        .collect();
    let started = Instant::now();
    write(db, &events, &rows).await;
    println!(
        "   {mode}: {STORED} notifications written in {:.0} s",
        started.elapsed().as_secs_f64()
    );

    let one = rows[STORED / 2].id;
    let hour_ago = (chrono::Utc::now() - chrono::Duration::hours(1)).format("%Y-%m-%dT%H:%M:%SZ");
    let (ep, owner) = (format!("ep-7-{run}"), format!("owner-3-{run}"));
    let pages = [
        (
            "search, no filter",
            "/v1/notifications?limit=25".to_string(),
        ),
        (
            "an endpoint's",
            format!("/v1/notifications?endpoint={ep}&limit=25"),
        ),
        (
            "an owner's",
            format!("/v1/notifications?owner={owner}&limit=25"),
        ),
        ("failed", "/v1/notifications?status=failed&limit=25".into()),
        (
            "an endpoint's failed in the last hour",
            format!(
                "/v1/notifications?endpoint={ep}&status=failed&completed_after={hour_ago}&limit=25"
            ),
        ),
        (
            "a type",
            "/v1/notifications?event_type=order.refunded&limit=25".into(),
        ),
        (
            "a key",
            "/v1/notifications?key=order-500001&limit=25".into(),
        ),
        (
            "an event's key",
            "/v1/notifications?key=event-5000&limit=25".into(),
        ),
        (
            "a key prefix of 10",
            "/v1/notifications?key_prefix=order-12345&limit=25".into(),
        ),
        (
            "a key prefix of 1,100",
            "/v1/notifications?key_prefix=order-999&limit=25".into(),
        ),
        (
            "a key prefix of 110,000",
            "/v1/notifications?key_prefix=order-1&limit=25".into(),
        ),
        (
            "oldest first",
            "/v1/notifications?order=oldest&limit=25".into(),
        ),
        (
            "an owner's oldest first",
            format!("/v1/notifications?owner={owner}&order=oldest&limit=25"),
        ),
        (
            "failed, oldest first",
            "/v1/notifications?status=failed&order=oldest&limit=25".into(),
        ),
        (
            "an endpoint's most attempted",
            format!("/v1/notifications?endpoint={ep}&order=attempts&limit=25"),
        ),
        (
            "an endpoint's most attempted, pending",
            format!("/v1/notifications?endpoint={ep}&order=attempts&status=pending&limit=25"),
        ),
        ("a notification", format!("/v1/notifications/{one}")),
        ("its attempts", format!("/v1/notifications/{one}/attempts")),
        ("endpoints", "/v1/endpoints?limit=25".into()),
        ("an endpoint", format!("/v1/endpoints/{ep}")),
        ("events", "/v1/events?limit=25".into()),
        ("overview", "/v1/stats?window=1h".into()),
    ];
    let mut slowest = (0.0, "");
    for (name, path) in &pages {
        let url = format!("{base}{path}");
        let mut times = Vec::new();
        for sample in 0..SAMPLES + 3 {
            let sent = Instant::now();
            let response = client.get(&url).send().await.unwrap();
            let status = response.status();
            let body = response.bytes().await.unwrap();
            assert!(status.is_success(), "{url}: {status} {body:?}");
            // The first three warm the caches, as a console's reload does.
            if sample >= 3 {
                times.push(sent.elapsed().as_secs_f64() * 1e3);
            }
        }
        times.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let at = |p: usize| times[(times.len() * p).div_ceil(100) - 1];
        println!(
            "   {mode}: {name:<40} p50 {:>6.1} ms, p99 {:>6.1} ms",
            at(50),
            at(99)
        );
        if at(99) > slowest.0 {
            slowest = (at(99), name);
        }
    }
    println!(
        "pages, {mode}: the slowest p99 {:.1} ms ({}), target < 300 ms with {STORED} stored",
        slowest.0, slowest.1
    );
}

/// The events and rows, as a bulk import: PostgreSQL's with their key
/// rows (`notification_keys`), analyzed as autovacuum would.
async fn write(db: Db<'_>, events: &[Uuid], rows: &[Row]) {
    match db {
        Db::Postgres(pool) => {
            let keys: Vec<String> = (0..events.len()).map(|n| format!("event-{n}")).collect();
            sqlx::query(
                "INSERT INTO events (id, event_type, key, content_type, body, deliver_at, deliveries) \
                 SELECT u.id, 'order.paid', u.key, 'application/json', '\\x7b7d', now(), 1 \
                 FROM UNNEST($1::uuid[], $2::text[]) AS u(id, key)",
            )
            .bind(events)
            .bind(&keys)
            .execute(pool)
            .await
            .unwrap();
            for chunk in rows.chunks(100_000) {
                let ids: Vec<Uuid> = chunk.iter().map(|r| r.id).collect();
                let endpoints: Vec<Uuid> = chunk.iter().map(|r| r.endpoint).collect();
                let keys: Vec<Option<String>> = chunk.iter().map(|r| r.key.clone()).collect();
                let statuses: Vec<&str> = chunk.iter().map(|r| r.status).collect();
                let types: Vec<Option<&str>> = chunk.iter().map(|r| r.event_type).collect();
                let events: Vec<Option<Uuid>> = chunk.iter().map(|r| r.event).collect();
                let attempts: Vec<i32> = chunk.iter().map(|r| r.attempts).collect();
                sqlx::query(
                    "WITH n AS (INSERT INTO notifications (id, endpoint_id, key, content_type, \
                         body, schedule_ms, status, deliver_at, completed_at, event_type, event_id, \
                         attempts) \
                     SELECT u.id, u.endpoint_id, u.key, 'application/json', '\\x7b7d', '{0}', \
                         u.status, now(), now(), u.event_type, u.event_id, u.attempts \
                     FROM UNNEST($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], \
                         $6::uuid[], $7::int[]) \
                         AS u(id, endpoint_id, key, status, event_type, event_id, attempts) \
                     RETURNING id, endpoint_id, key) \
                     INSERT INTO notification_keys (key, endpoint_id, id) \
                     SELECT key, endpoint_id, id FROM n WHERE key IS NOT NULL",
                )
                .bind(&ids)
                .bind(&endpoints)
                .bind(&keys)
                .bind(&statuses)
                .bind(&types)
                .bind(&events)
                .bind(&attempts)
                .execute(pool)
                .await
                .unwrap();
            }
            sqlx::query("ANALYZE notifications, notification_keys, events")
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
            for (n, id) in events.iter().enumerate() {
                sqlx::query(
                    "INSERT INTO events (id, event_type, key, content_type, body, deliver_at, \
                     deliveries, created_at) VALUES (?, 'order.paid', ?, 'application/json', \
                     x'7b7d', ?, 1, ?)",
                )
                .bind(id)
                .bind(format!("event-{n}"))
                .bind(now)
                .bind(now)
                .execute(&mut *tx)
                .await
                .unwrap();
            }
            for chunk in rows.chunks(1_000) {
                let mut insert = sqlx::QueryBuilder::new(
                    "INSERT INTO notifications (id, endpoint_id, key, content_type, body, \
                     schedule_ms, status, deliver_at, created_at, updated_at, completed_at, \
                     event_type, event_id, attempts) ",
                );
                insert.push_values(chunk, |mut row, r| {
                    row.push_bind(r.id)
                        .push_bind(r.endpoint)
                        .push_bind(r.key.as_deref())
                        .push("'application/json', x'7b7d', '[0]'")
                        .push_bind(r.status)
                        .push_bind(now)
                        .push_bind(now)
                        .push_bind(now)
                        .push_bind(now)
                        .push_bind(r.event_type)
                        .push_bind(r.event)
                        .push_bind(r.attempts);
                });
                insert.build().execute(&mut *tx).await.unwrap();
            }
            tx.commit().await.unwrap();
            sqlx::query("ANALYZE").execute(&pool).await.unwrap();
            pool.close().await;
        }
    }
}
