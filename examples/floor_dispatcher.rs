//! The least a dispatcher built from hookd's parts can do per delivery, in
//! a process of its own, for hookd's benchmark (figure 7b,
//! `benches/dispatch/floor.rs`): what figure 7's ratio could reach at best
//! with reqwest sending, PostgreSQL keeping every outcome and Redis ordering
//! the due ids, measured in the same run as the ratio itself.
//!
//! ```text
//! floor_dispatcher <update|append> <receiver URL> <database URL> <Redis URL> <in flight>
//! ```
//!
//! Before it is timed, it loads the ids of every pending notification into
//! a sorted set of its own, opens its connections (as hookd's pool has
//! them), prints `ready` and waits for a line on standard input. Then it
//! drains them: claims 200 ids at a time with one `ZPOPMIN` (no lease; two
//! claims at once), reads each batch's rows with the columns hookd's claim
//! reads, sends each with hookd's sender (`hookd::sender::Sender`, signed,
//! `in flight` at a time, one target prepared once) and records the
//! outcomes in one statement per batch (two at once):
//!
//! - `update`: each notification's row rewritten as delivered, as hookd's
//!   table needs (a first attempt kept in its row, no `attempts` row);
//! - `append`: one narrow row per outcome in a table of its own (uuid,
//!   status, time): the cheapest durable record of an outcome, for a store
//!   that would keep outcomes apart from notifications.
//!
//! It prints `<deliveries/s> <CPU seconds>` (this process, user + system,
//! from `ready` until the last outcome is committed), then holds its
//! connections open until standard input closes. No leases, no retries, no
//! schedule, no health, no metrics: everything hookd does beyond this is
//! bookkeeping this floor leaves out.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::{DateTime, Utc};
use hookd::config::Settings;
use hookd::domain::secret::SigningSecret;
use hookd::sender::{Delivery, Sender, Target};
use sqlx::PgPool;
use tokio::io::AsyncBufReadExt;
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;
use uuid::Uuid;

#[path = "shared/helper.rs"]
mod helper;
use helper::{cpu_seconds, sender_settings};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const DUE: &str = "floor:due";
const BATCH: usize = 200;
/// Claims (and reads) in flight at once, and outcome writes: two of each,
/// so that neither waits on the other's round trip or commit.
const CLAIMERS: usize = 2;
const WRITERS: usize = 2;

/// What a delivery needs of its row (hookd's claim reads these columns).
#[derive(sqlx::FromRow)]
struct Row {
    id: Uuid,
    body: Vec<u8>,
    content_type: String,
}

struct Outcome {
    id: Uuid,
    at: DateTime<Utc>,
    status: i32,
    ms: i32,
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [mode, url, database_url, redis_url, in_flight] = args.as_slice() else {
        eprintln!("usage: floor_dispatcher <update|append> <receiver URL> <database URL> <Redis URL> <in flight>");
        std::process::exit(2);
    };
    let append = match mode.as_str() {
        "update" => false,
        "append" => true,
        other => panic!("{other}: update or append"),
    };
    let in_flight: usize = in_flight.parse().expect("<in flight> is a number");
    // Connections as hookd's pool has them (`hookd::store::postgres::pool_options`:
    // no ping when taken from the pool, generic plans), four of them.
    let database = Settings::from_toml_layers(&[&format!(
        "[database]\nurl = \"{database_url}\"\nmax_connections = 4\nmin_connections = 4\n"
    )])
    .expect("the floor's database settings are valid")
    .database;
    let pool = hookd::store::postgres::pool_options(&database)
        .connect(database_url)
        .await
        .unwrap();
    let redis = redis::Client::open(redis_url.as_str()).unwrap();
    let mut conn = redis.get_multiplexed_async_connection().await.unwrap();
    let count = load(&pool, &mut conn, append).await;
    let settings = sender_settings(in_flight);
    let sender = Arc::new(Sender::new(&settings).expect("the sender starts"));
    let target = Arc::new(Target::new(
        url,
        &BTreeMap::new(),
        vec![SigningSecret::generate()],
        Duration::from_millis(settings.timeout_ms),
    ));
    println!("ready");
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let mut line = String::new();
    stdin.read_line(&mut line).await.unwrap();

    let before = cpu_seconds();
    let started = Instant::now();
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Outcome>();
    let permits = Arc::new(Semaphore::new(in_flight));
    for _ in 0..CLAIMERS {
        tokio::spawn(claim(
            pool.clone(),
            conn.clone(),
            sender.clone(),
            target.clone(),
            permits.clone(),
            done_tx.clone(),
        ));
    }
    // The channel closes when the claimers and every send have finished.
    drop(done_tx);
    let writers = Arc::new(Semaphore::new(WRITERS));
    let mut writes = JoinSet::new();
    let mut outcomes = Vec::new();
    while done_rx.recv_many(&mut outcomes, 4 * BATCH).await > 0 {
        let batch = std::mem::take(&mut outcomes);
        let (pool, writer) = (pool.clone(), writers.clone().acquire_owned().await.unwrap());
        writes.spawn(async move {
            record(&pool, &batch, append).await;
            drop(writer);
            batch.len()
        });
    }
    let recorded: usize = writes.join_all().await.into_iter().sum();
    assert_eq!(recorded, count, "every pending notification was recorded");
    let rate = count as f64 / started.elapsed().as_secs_f64();
    println!("{rate} {}", cpu_seconds() - before);
    // Its PostgreSQL backends end with it, and their CPU with them: the
    // bench reads theirs before it closes standard input.
    let _ = stdin.read_line(&mut line).await;
}

/// Untimed: every pending notification's id into `floor:due`, in id order
/// (hookd's ids are ordered by creation, the order a backlog falls due
/// in), and, for `append`, an empty outcome table. Returns how many.
async fn load(pool: &PgPool, conn: &mut redis::aio::MultiplexedConnection, append: bool) -> usize {
    let ids: Vec<Uuid> =
        sqlx::query_scalar("SELECT id FROM notifications WHERE status = 'pending' ORDER BY id")
            .fetch_all(pool)
            .await
            .unwrap();
    let _: () = redis::cmd("DEL").arg(DUE).query_async(conn).await.unwrap();
    for (n, chunk) in ids.chunks(1000).enumerate() {
        let mut zadd = redis::cmd("ZADD");
        zadd.arg(DUE);
        for (i, id) in chunk.iter().enumerate() {
            zadd.arg(n * 1000 + i).arg(id.to_string());
        }
        let _: () = zadd.query_async(conn).await.unwrap();
    }
    if append {
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS floor_outcomes \
             (id uuid PRIMARY KEY, status smallint NOT NULL, at timestamptz NOT NULL)",
        )
        .execute(pool)
        .await
        .unwrap();
        sqlx::query("TRUNCATE floor_outcomes")
            .execute(pool)
            .await
            .unwrap();
    }
    ids.len()
}

/// Claims and reads batches until `floor:due` is empty, and sends each
/// row in a task of its own, as many at a time as `permits` has (shared by
/// the claimers), as hookd's dispatcher does; each outcome goes to the
/// recorder.
async fn claim(
    pool: PgPool,
    mut conn: redis::aio::MultiplexedConnection,
    sender: Arc<Sender>,
    target: Arc<Target>,
    permits: Arc<Semaphore>,
    done: mpsc::UnboundedSender<Outcome>,
) {
    loop {
        let claimed: Vec<(String, f64)> = redis::cmd("ZPOPMIN")
            .arg(DUE)
            .arg(BATCH)
            .query_async(&mut conn)
            .await
            .unwrap();
        if claimed.is_empty() {
            return;
        }
        let ids: Vec<Uuid> = claimed.iter().map(|(id, _)| id.parse().unwrap()).collect();
        let batch: Vec<Row> = sqlx::query_as(
            "SELECT n.id, n.body, n.content_type, n.endpoint_id, n.key, n.event_type, \
                 n.headers, n.schedule_ms, n.schedule_name, n.status, n.attempts, \
                 n.series_start, n.next_attempt_at, n.event_id, n.url \
             FROM notifications n WHERE n.id = ANY($1)",
        )
        .bind(&ids)
        .fetch_all(&pool)
        .await
        .unwrap();
        for row in batch {
            let permit = permits.clone().acquire_owned().await.unwrap();
            let (sender, target, done) = (sender.clone(), target.clone(), done.clone());
            tokio::spawn(async move {
                let at = Utc::now();
                let sent = Instant::now();
                let result = sender
                    .send(Delivery {
                        id: row.id,
                        target: &target,
                        body: Bytes::from(row.body),
                        content_type: &row.content_type,
                        event_type: None,
                        attempt: 1,
                        headers: &BTreeMap::new(),
                        event_id: None,
                        url: None,
                        sequence: None,
                        traceparent: None,
                    })
                    .await;
                let status = result.answer.map(|answer| answer.status);
                assert_eq!(status, Some(200), "{:?}", result.error);
                let _ = done.send(Outcome {
                    id: row.id,
                    at,
                    status: 200,
                    ms: sent.elapsed().as_millis() as i32,
                });
                drop(permit);
            });
        }
    }
}

/// One statement, one commit, for a batch of outcomes.
async fn record(pool: &PgPool, outcomes: &[Outcome], append: bool) {
    let ids: Vec<Uuid> = outcomes.iter().map(|o| o.id).collect();
    let ats: Vec<DateTime<Utc>> = outcomes.iter().map(|o| o.at).collect();
    let statuses: Vec<i32> = outcomes.iter().map(|o| o.status).collect();
    let ms: Vec<i32> = outcomes.iter().map(|o| o.ms).collect();
    let statement = if append {
        "INSERT INTO floor_outcomes (id, status, at) \
         SELECT id, 1, at FROM UNNEST($1::uuid[], $2::timestamptz[], $3::int[], $4::int[]) \
             AS t(id, at, code, ms)"
    } else {
        "UPDATE notifications n SET status = 'succeeded', attempts = 1, \
             next_attempt_at = NULL, last_attempt_at = t.at, last_status_code = t.code, \
             first_attempt_ms = t.ms, completed_at = now(), updated_at = now() \
         FROM UNNEST($1::uuid[], $2::timestamptz[], $3::int[], $4::int[]) AS t(id, at, code, ms) \
         WHERE n.id = t.id"
    };
    sqlx::query(statement)
        .bind(&ids)
        .bind(&ats)
        .bind(&statuses)
        .bind(&ms)
        .execute(pool)
        .await
        .unwrap();
}
