//! hookd's benchmark: real PostgreSQL and Redis (started by scripts/bench),
//! the release `hookd` binary as a separate process, and a fast local
//! receiver in this process. Prints one line per figure; figures that are
//! cheap to repeat are the median of several runs.
//!
//! Run with `scripts/bench` (BENCHMARKS.md has the figures and how to read them).

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use serde_json::{json, Value};
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;

#[path = "dispatch/breaker.rs"]
mod breaker;
#[path = "dispatch/client_cost.rs"]
mod client_cost;
#[path = "dispatch/cluster.rs"]
mod cluster;
#[path = "dispatch/embedded.rs"]
mod embedded;
#[path = "dispatch/fanout.rs"]
mod fanout;
#[path = "dispatch/floor.rs"]
mod floor;
#[path = "dispatch/heal.rs"]
mod heal;
#[path = "dispatch/lanes.rs"]
mod lanes;
#[path = "dispatch/list_load.rs"]
mod list_load;
#[path = "dispatch/ordering.rs"]
mod ordering;
#[path = "dispatch/pages.rs"]
mod pages;
#[path = "dispatch/partition.rs"]
mod partition;
#[path = "dispatch/pull.rs"]
mod pull;
#[path = "dispatch/rate_limit.rs"]
mod rate_limit;
#[path = "dispatch/raw_hyper.rs"]
mod raw_hyper;
#[path = "dispatch/redis_down.rs"]
mod redis_down;
#[path = "dispatch/speed.rs"]
mod speed;
#[path = "dispatch/stands.rs"]
mod stands;
#[path = "dispatch/stats.rs"]
mod stats;
#[path = "dispatch/traces.rs"]
mod traces;

const CONCURRENCY: usize = 64;

/// Which modes the figures that have both run in (`BENCH_MODE`:
/// `server`, `embedded` or `both`, the default). Sections that exist only
/// in the server mode (batch ingest, events, pull, e2e, scale, heal,
/// redis_down) run unless it is `embedded`; `embedded_scale` runs unless it
/// is `server`.
#[derive(Clone, Copy)]
struct Mode {
    server: bool,
    embedded: bool,
}

impl Mode {
    fn from_env() -> Self {
        match std::env::var("BENCH_MODE").as_deref() {
            Ok("server") => Self {
                server: true,
                embedded: false,
            },
            Ok("embedded") => Self {
                server: false,
                embedded: true,
            },
            Ok("both") | Ok("") | Err(_) => Self {
                server: true,
                embedded: true,
            },
            Ok(other) => panic!("BENCH_MODE={other}: server, embedded or both"),
        }
    }
}
const SENDER_IN_FLIGHT: usize = 256;

#[derive(Default)]
struct Received {
    count: AtomicU64,
    first: Mutex<Option<Instant>>,
    last: Mutex<Option<Instant>>,
    lateness_ms: Mutex<Vec<i64>>,
    /// End-to-end runs: (request sent, receipt - request sent), µs.
    latency_us: Mutex<Vec<(i64, i64)>>,
}

impl Received {
    fn reset(&self) {
        self.count.store(0, Ordering::SeqCst);
        *self.first.lock().unwrap() = None;
        *self.last.lock().unwrap() = None;
        self.lateness_ms.lock().unwrap().clear();
        self.latency_us.lock().unwrap().clear();
    }

    fn span(&self) -> Duration {
        match (*self.first.lock().unwrap(), *self.last.lock().unwrap()) {
            (Some(a), Some(b)) => b - a,
            _ => Duration::ZERO,
        }
    }
}

/// Connections this machine's listeners have dropped because their accept
/// queue was full, so far (`TcpExtListenOverflows`): a handshake dropped so
/// is retried by the client's kernel a second later, which a rate measured
/// over a second or two cannot absorb.
fn listen_overflows() -> u64 {
    let netstat = std::fs::read_to_string("/proc/net/netstat").unwrap_or_default();
    let mut lines = netstat.lines().filter(|line| line.starts_with("TcpExt:"));
    let (Some(names), Some(values)) = (lines.next(), lines.next()) else {
        return 0;
    };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(name, _)| *name == "ListenOverflows")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0)
}

/// The receiver's listening socket, with the accept queue of a production
/// web server (`hookd::server::listen`, as hookd's own) rather than the 128
/// of `TcpListener::bind`. With 128, a client opening 256 connections at
/// once overflowed it (`TcpExtListenOverflows`): the dropped handshakes were
/// retried by the kernel a second later, and a 50,000-request raw run that
/// takes 0.35 s took 1.03 s (session 14: figure 7's hyper limit read
/// 48,000/s in two runs of three, 145,000/s in the third).
fn receiver_listener(address: std::net::SocketAddr) -> tokio::net::TcpListener {
    hookd::server::listen(address, 1024).unwrap()
}

async fn receive(State(received): State<Arc<Received>>, body: Bytes) -> &'static str {
    let now = Instant::now();
    received.first.lock().unwrap().get_or_insert(now);
    *received.last.lock().unwrap() = Some(now);
    // Lateness runs carry their due time (unix ms) in the payload.
    if body.starts_with(b"{\"due\":") {
        if let Ok(value) = serde_json::from_slice::<Value>(&body) {
            if let Some(due) = value["due"].as_i64() {
                let late = chrono::Utc::now().timestamp_millis() - due;
                received.lateness_ms.lock().unwrap().push(late);
            }
        }
    }
    // End-to-end runs carry when their request was sent (unix µs).
    if body.starts_with(b"{\"sent_us\":") {
        if let Ok(value) = serde_json::from_slice::<Value>(&body) {
            if let Some(sent) = value["sent_us"].as_i64() {
                let took = chrono::Utc::now().timestamp_micros() - sent;
                received.latency_us.lock().unwrap().push((sent, took));
            }
        }
    }
    received.count.fetch_add(1, Ordering::SeqCst);
    ""
}

struct Hookd {
    child: Child,
    base: String,
}

/// HOOKD_BIN, or what `cargo build --release` built: in CARGO_TARGET_DIR
/// when that is set.
fn hookd_binary() -> String {
    std::env::var("HOOKD_BIN").unwrap_or_else(|_| {
        let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
        format!("{target}/release/hookd")
    })
}

impl Hookd {
    async fn start(database_url: &str, redis_url: &str, prefix: &str, role: &str) -> Self {
        Self::start_with(database_url, redis_url, prefix, role, &[]).await
    }

    /// With more HOOKD_* variables (Sentinel settings, say).
    async fn start_with(
        database_url: &str,
        redis_url: &str,
        prefix: &str,
        role: &str,
        env: &[(&str, &str)],
    ) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // BENCH_HOOKD_LOG=<file>: hookd's warnings go there (appended),
        // to see what it met during a figure; otherwise only errors, to
        // nowhere.
        let log = std::env::var_os("BENCH_HOOKD_LOG").map(|path| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .expect("BENCH_HOOKD_LOG names a file hookd's log can be appended to")
        });
        let child = Command::new(hookd_binary())
            .args(["serve", "--role", role])
            .env("HOOKD_DATABASE__URL", database_url)
            .env("HOOKD_DATABASE__MAX_CONNECTIONS", "32")
            .env("HOOKD_REDIS__URL", redis_url)
            .env("HOOKD_REDIS__PREFIX", prefix)
            .env("HOOKD_SERVER__LISTEN", format!("127.0.0.1:{port}"))
            .env("HOOKD_SENDER__ALLOW_NETWORKS", "[\"127.0.0.0/8\"]")
            .env("HOOKD_SENDER__MAX_IN_FLIGHT", SENDER_IN_FLIGHT.to_string())
            .env(
                "HOOKD_LOG__FILTER",
                if log.is_some() { "warn" } else { "error" },
            )
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(log.map_or_else(Stdio::inherit, Stdio::from))
            .spawn()
            .expect(
                "HOOKD_BIN, or CARGO_TARGET_DIR's release/hookd, exists (cargo build --release)",
            );
        let hookd = Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        let client = reqwest::Client::new();
        for _ in 0..600 {
            if client
                .get(format!("{}/healthz", hookd.base))
                .send()
                .await
                .is_ok()
            {
                return hookd;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("hookd did not start");
    }

    /// Peak resident memory (VmHWM) in MiB.
    fn peak_rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    }

    fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// The processes whose CPU the bench reads: its own PostgreSQL (the
/// postmaster and its children) and Redis. Other work on the machine may
/// run PostgreSQL, Redis or hookd processes of its own; they are not ours.
static SERVICES: std::sync::OnceLock<(u32, u32)> = std::sync::OnceLock::new();

/// Which processes a CPU figure sums.
#[derive(Clone, Copy)]
enum Whose {
    /// hookd processes started by this bench.
    Hookd,
    /// The bench's PostgreSQL: its postmaster and every backend.
    Postgres,
    Redis,
    /// This process (receiver and load generator).
    Bench,
}

/// CPU seconds (user + system) used so far by `whose`, from /proc.
fn cpu_seconds(whose: Whose) -> f64 {
    let me = std::process::id();
    let (postmaster, redis) = SERVICES.get().copied().unwrap_or((0, 0));
    let mut total = 0.0;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((head, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let comm = head.split_once(" (").map_or("", |(_, c)| c);
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // ppid is field 4 of stat, utime and stime 14 and 15; `rest` starts at 3.
        let ppid: u32 = fields.get(1).and_then(|f| f.parse().ok()).unwrap_or(0);
        let ours = match whose {
            Whose::Hookd => ppid == me && comm.starts_with("hookd"),
            Whose::Postgres => pid == postmaster || ppid == postmaster,
            Whose::Redis => pid == redis,
            Whose::Bench => pid == me,
        };
        if !ours {
            continue;
        }
        let ticks: f64 = fields.get(11).and_then(|f| f.parse().ok()).unwrap_or(0.0)
            + fields.get(12).and_then(|f| f.parse().ok()).unwrap_or(0.0);
        total += ticks / 100.0;
    }
    total
}

/// CPU seconds of hookd, PostgreSQL, Redis and this bench process.
fn cpu_snapshot() -> [f64; 4] {
    [
        cpu_seconds(Whose::Hookd),
        cpu_seconds(Whose::Postgres),
        cpu_seconds(Whose::Redis),
        cpu_seconds(Whose::Bench),
    ]
}

/// Finds the bench's PostgreSQL postmaster (the parent of a backend) and
/// Redis server.
async fn find_services(pool: &PgPool, redis_url: &str) {
    let backend: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(pool)
        .await
        .unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{backend}/stat")).unwrap();
    let postmaster: u32 = stat
        .rsplit_once(") ")
        .and_then(|(_, rest)| rest.split_whitespace().nth(1))
        .and_then(|p| p.parse().ok())
        .unwrap();
    let client = redis::Client::open(redis_url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut conn)
        .await
        .unwrap();
    let redis: u32 = info
        .lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    let _ = SERVICES.set((postmaster, redis));
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    values[values.len() / 2]
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Empties what a round stored, ordering keys included: left behind, an
/// ordered round's key rows were each removed by the next round's hookd
/// (housekeeping's walk of keys without a notification), 20,000 of them
/// after a payment-shaped round, on that round's PostgreSQL CPU.
async fn reset(pool: &PgPool) {
    sqlx::query("TRUNCATE notifications, attempts, events, notification_keys, order_keys")
        .execute(pool)
        .await
        .unwrap();
}

/// Steady state for the latency figures: `count` settled notifications of
/// `endpoint` with their attempts, and planner statistics, as a deployment
/// has after its first minute. On a freshly truncated table that nobody has
/// analyzed, the statements hookd prepares are planned for an empty table
/// (a sequential scan is the cheapest way to find 3 rows in none) and keep
/// that generic plan while the table grows during the run, until
/// autovacuum's first analyze: every claim's load and every record then
/// scans the whole table, which is not what a running deployment does.
async fn settled_history(pool: &PgPool, endpoint: &str, count: i64) {
    let endpoint: uuid::Uuid = endpoint.parse().unwrap();
    for statement in [
        "INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, status, \
             attempts, deliver_at, next_attempt_at, last_attempt_at, last_status_code, \
             completed_at) \
         SELECT hookd_uuid_v7(), $1, 'application/json', '\\x7b7d', '{0,60000}', 'succeeded', 1, \
             now(), NULL, now(), 200, now() FROM generate_series(1, $2)",
        "INSERT INTO attempts (notification_id, number, started_at, duration_ms, status_code, \
             outcome) \
         SELECT id, 1, now(), 1, 200, 'succeeded' FROM notifications WHERE endpoint_id = $1",
    ] {
        sqlx::query(statement)
            .bind(endpoint)
            .bind(count)
            .execute(pool)
            .await
            .unwrap();
    }
    sqlx::query("ANALYZE notifications, attempts")
        .execute(pool)
        .await
        .unwrap();
}

/// Single POSTs of `total` notifications (due in an hour) from
/// `CONCURRENCY` clients: accepted/s. Each body is built in the timed
/// loop, as a client would.
async fn single_posts(client: &reqwest::Client, base: &str, endpoint: &str, total: u64) -> f64 {
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..CONCURRENCY {
        let (client, base, endpoint, next) = (
            client.clone(),
            base.to_string(),
            endpoint.to_string(),
            next.clone(),
        );
        workers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::SeqCst) < total {
                let response = client
                    .post(format!("{base}/v1/notifications"))
                    .json(&json!({"endpoint": endpoint, "payload": {"order": 1}, "delay": "1h"}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), 201);
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
    total as f64 / started.elapsed().as_secs_f64()
}

async fn create_endpoint(client: &reqwest::Client, hookd: &Hookd, url: &str) -> String {
    let endpoint: Value = client
        .post(format!("{}/v1/endpoints", hookd.base))
        .json(&json!({"url": url, "max_in_flight": SENDER_IN_FLIGHT, "schedule": ["0s", "1m"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    endpoint["id"].as_str().unwrap().to_string()
}

/// The request bodies of `count` notifications in batches of 1000, built
/// before any clock starts: the load generator's JSON encoding is not
/// hookd's work.
fn batch_bodies(count: usize, item: impl Fn(usize) -> Value) -> Vec<String> {
    (0..count.div_ceil(1000))
        .map(|b| {
            let items: Vec<Value> = (b * 1000..((b + 1) * 1000).min(count)).map(&item).collect();
            json!({"notifications": items}).to_string()
        })
        .collect()
}

/// Posts prepared batch bodies, `parallel` at a time.
async fn post_batches(client: &reqwest::Client, base: &str, bodies: Vec<String>, parallel: usize) {
    let bodies = Arc::new(Mutex::new(bodies));
    let mut workers = Vec::new();
    for _ in 0..parallel {
        let (client, base, bodies) = (client.clone(), base.to_string(), bodies.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let Some(body) = bodies.lock().unwrap().pop() else {
                    return;
                };
                let response = client
                    .post(format!("{base}/v1/notifications/batch"))
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                let status = response.status();
                let text = response.text().await.unwrap();
                assert!(status.is_success(), "{text}");
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
}

/// Waits until PostgreSQL is quiet (a checkpoint done, no autovacuum worker
/// busy, for at most 20 s), so that the work left over from the previous run
/// does not land in the next measurement.
async fn settle(pool: &PgPool) {
    sqlx::query("CHECKPOINT").execute(pool).await.unwrap();
    for _ in 0..200 {
        let busy: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'",
        )
        .fetch_one(pool)
        .await
        .unwrap();
        if busy == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Requests/s of `client` against the receiver, `SENDER_IN_FLIGHT` at a time.
async fn raw_run(client: &reqwest::Client, received: &Received, url: &str, count: u64) -> f64 {
    received.reset();
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..SENDER_IN_FLIGHT {
        let (client, url, next) = (client.clone(), url.to_string(), next.clone());
        workers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::SeqCst) < count {
                let response = client.post(&url).body("{\"i\":1}").send().await.unwrap();
                response.bytes().await.unwrap();
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
    count as f64 / started.elapsed().as_secs_f64()
}

async fn wait_count(received: &Received, count: u64, limit: Duration) {
    let started = Instant::now();
    while received.count.load(Ordering::SeqCst) < count {
        assert!(
            started.elapsed() < limit,
            "only {} of {count} arrived",
            received.count.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Notifications created since `since` (a time-ordered id taken before
/// they were) that are no longer pending: in a drain (where every attempt
/// succeeds), those whose attempt is recorded, wherever it is kept (a
/// first-attempt delivery has no row of `attempts` since session 11).
/// Counted by id, not over the whole table: with 10 million delivered
/// before (`partition_drain`), a count of every row took seconds a poll,
/// and retention deleting the oldest meanwhile kept it from ever adding up.
async fn attempts_recorded(pool: &PgPool, since: uuid::Uuid) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM notifications WHERE id >= $1 AND status <> 'pending'")
        .bind(since)
        .fetch_one(pool)
        .await
        .unwrap()
}

async fn redis_used_memory(redis_url: &str) -> i64 {
    let client = redis::Client::open(redis_url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(&mut conn)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// One delivery run's figures.
struct DeliveryFigures {
    /// Deliveries/s, first to last receipt.
    rate: f64,
    /// Seconds until every attempt was recorded.
    all_written: f64,
    /// The dispatcher's peak RSS, MiB.
    rss: f64,
    /// CPU of hookd, PostgreSQL and Redis over the receiver's CPU in the same
    /// run: the work per delivery, in units of the receiver's work per
    /// request. Unlike a rate, it does not move when the machine's speed
    /// drifts.
    relative_cost: f64,
    /// CPU µs per delivery of hookd, PostgreSQL and Redis.
    cpu_us: [f64; 3],
}

/// `count` notifications due now, ingested through an API-only hookd, the
/// table analysed, the index marked complete and PostgreSQL settled: the
/// backlog a drain starts from (figure 3, and figure 7b's floor).
async fn seed_due(
    pool: &PgPool,
    database_url: &str,
    redis_url: &str,
    prefix: &str,
    receiver_url: &str,
    count: usize,
) {
    let client = reqwest::Client::new();
    let api = Hookd::start(database_url, redis_url, prefix, "api").await;
    let endpoint = create_endpoint(&client, &api, receiver_url).await;
    post_batches(&client, &api.base, payload_bodies(count, &endpoint), 2).await;
    api.stop();
    seeded(pool, redis_url, prefix).await;
}

/// `bodies` (batch bodies that name their endpoint `{endpoint}`) ingested
/// as `seed_due` ingests: the backlog a drain starts from. Returns how
/// many notifications they hold.
async fn seed_bodies(
    pool: &PgPool,
    (database_url, redis_url, prefix): (&str, &str, &str),
    receiver_url: &str,
    bodies: Vec<String>,
) -> usize {
    let client = reqwest::Client::new();
    let api = Hookd::start(database_url, redis_url, prefix, "api").await;
    let endpoint = create_endpoint(&client, &api, receiver_url).await;
    let count = post_named(&client, &api.base, bodies, &endpoint).await;
    api.stop();
    seeded(pool, redis_url, prefix).await;
    count
}

/// Posts `bodies` with their `{endpoint}` replaced by `endpoint`; returns
/// how many notifications they held.
async fn post_named(
    client: &reqwest::Client,
    base: &str,
    bodies: Vec<String>,
    endpoint: &str,
) -> usize {
    let named: Vec<String> = bodies
        .iter()
        .map(|body| body.replace("{endpoint}", endpoint))
        .collect();
    let count = named
        .iter()
        .map(|body| {
            serde_json::from_str::<serde_json::Value>(body).unwrap()["notifications"]
                .as_array()
                .map_or(0, Vec::len)
        })
        .sum();
    post_batches(client, base, named, 2).await;
    count
}

/// The batch bodies of a drain's `count` notifications due now.
fn payload_bodies(count: usize, endpoint: &str) -> Vec<String> {
    // BENCH_PAYLOAD_BYTES=N pads each payload with N bytes of hex digits
    // (a real notification carries an order or a payment, not one number;
    // hex compresses about as well as JSON does, where a run of one letter
    // would compress to nothing).
    let padding: usize = std::env::var("BENCH_PAYLOAD_BYTES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    batch_bodies(count, |i| {
        if padding == 0 {
            return json!({"endpoint": endpoint, "payload": {"i": i}});
        }
        let mut state = i as u64 + 1;
        let hex: String = (0..padding)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                char::from_digit((state >> 60) as u32, 16).unwrap()
            })
            .collect();
        json!({"endpoint": endpoint, "payload": {"i": i, "padding": hex}})
    })
}

/// After a drain's backlog is accepted: the server mode's steady state.
async fn seeded(pool: &PgPool, redis_url: &str, prefix: &str) {
    // Steady state, as in production: the table has planner statistics
    // (autovacuum's first analyze of a freshly filled table would come a
    // minute later), and the index is known complete (the API indexed every
    // row it accepted), so the dispatcher does not start with a rebuild.
    // Marked by hookd's own call: the marker and the sentinel member of
    // `due` (until session 11 the bench set the marker alone, and every
    // drain since the sentinel came in session 4 began with a rebuild that
    // read all 50,000 rows again beside the drain).
    sqlx::query("ANALYZE notifications")
        .execute(pool)
        .await
        .unwrap();
    let settings = hookd::config::Settings::from_toml_layers(&[&format!(
        "[redis]\nurl = \"{redis_url}\"\nprefix = \"{prefix}\"\n"
    )])
    .unwrap();
    let index = hookd::due::redis::RedisIndex::new(&settings.redis).unwrap();
    index.mark_indexed().await.unwrap();
    // The ingest's checkpoint and autovacuum behind it, not in the drain.
    settle(pool).await;
}

/// Figure 2: 50,000 notifications in batches of 1,000 from 4 clients,
/// through a fresh API-only hookd; notifications per second.
async fn batch_ingest_run(
    pool: &PgPool,
    database_url: &str,
    redis_url: &str,
    run: usize,
    client: &reqwest::Client,
    receiver_url: &str,
) -> f64 {
    reset(pool).await;
    let api = Hookd::start(
        database_url,
        redis_url,
        &format!("bench-batch-{run}"),
        "api",
    )
    .await;
    let endpoint = create_endpoint(client, &api, receiver_url).await;
    let bodies = batch_bodies(
        50_000,
        |i| json!({"endpoint": endpoint, "payload": {"i": i}, "delay": "1h"}),
    );
    let cpu_before = cpu_snapshot();
    let started = Instant::now();
    post_batches(client, &api.base, bodies, 4).await;
    let wall = started.elapsed().as_secs_f64();
    let used: Vec<f64> = cpu_snapshot()
        .iter()
        .zip(cpu_before)
        .map(|(a, b)| a - b)
        .collect();
    println!(
        "   CPU while batch-ingesting 50000: hookd {:.2} s, postgres {:.2} s, redis {:.2} s, bench (client) {:.2} s, in {wall:.2} s wall on 2 cores",
        used[0], used[1], used[2], used[3]
    );
    api.stop();
    50_000.0 / wall
}

/// Delivers `count` due-now notifications: ingested through an API-only
/// hookd (`seed_due`), then drained by a dispatcher-only hookd.
async fn delivery_run(
    pool: &PgPool,
    database_url: &str,
    redis_url: &str,
    prefix: &str,
    receiver: &Arc<Received>,
    receiver_url: &str,
    count: usize,
) -> DeliveryFigures {
    let since = uuid::Uuid::now_v7();
    seed_due(pool, database_url, redis_url, prefix, receiver_url, count).await;
    receiver.reset();
    let cpu_before = cpu_snapshot();
    let dispatcher = Hookd::start(database_url, redis_url, prefix, "dispatcher").await;
    let started = Instant::now();
    wait_count(receiver, count as u64, Duration::from_secs(300)).await;
    while attempts_recorded(pool, since).await < count as i64 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // CPU until the last attempt is recorded, not only the last receipt.
    let cpu_after = cpu_snapshot();
    let all_written = started.elapsed().as_secs_f64();
    let used: Vec<f64> = cpu_after
        .iter()
        .zip(cpu_before)
        .map(|(a, b)| a - b)
        .collect();
    println!(
        "   CPU while delivering {count} (until every attempt is recorded): hookd {:.2} s, postgres {:.2} s, redis {:.2} s, bench (receiver) {:.2} s, in {all_written:.2} s wall on 2 cores",
        used[0], used[1], used[2], used[3]
    );
    println!(
        "   receiver CPU per request: {:.1} µs",
        used[3] / count as f64 * 1e6
    );
    let rate = count as f64 / receiver.span().as_secs_f64();
    let rss = dispatcher.peak_rss_mib();
    dispatcher.stop();
    DeliveryFigures {
        rate,
        all_written,
        rss,
        relative_cost: (used[0] + used[1] + used[2]) / used[3],
        cpu_us: [0, 1, 2].map(|i| used[i] / count as f64 * 1e6),
    }
}

#[tokio::main]
async fn main() {
    // reqwest is built without a crypto provider (hookd's sender configures
    // ring itself): the bench's own clients use ring too.
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    if client_cost::receiver_alone().await {
        return;
    }
    let base_url = std::env::var("DATABASE_URL").expect("DATABASE_URL (run scripts/bench)");
    let redis_url = std::env::var("REDIS_URL").expect("REDIS_URL (run scripts/bench)");
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let admin = PgPoolOptions::new().connect(&base_url).await.unwrap();
    let _ = sqlx::query("DROP DATABASE IF EXISTS hookd_bench")
        .execute(&admin)
        .await;
    sqlx::query("CREATE DATABASE hookd_bench")
        .execute(&admin)
        .await
        .unwrap();
    let mut url = url::Url::parse(&base_url).unwrap();
    url.set_path("hookd_bench");
    let database_url = url.to_string();
    let pool = PgPoolOptions::new().connect(&database_url).await.unwrap();
    find_services(&pool, &redis_url).await;
    hookd::store::postgres::PgStore::new(pool.clone())
        .migrate()
        .await
        .unwrap();

    let received = Arc::new(Received::default());
    let app = axum::Router::new()
        .fallback(receive)
        .with_state(received.clone());
    let listener = receiver_listener("127.0.0.1:0".parse().unwrap());
    let receiver_url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1024)
        .build()
        .unwrap();
    // BENCH_ONLY=ingest,events,filters,pull,delivery,lateness,e2e,scale,heal,redis_down,embedded_scale,rate_limit,breaker,cluster
    // picks sections (default: all but `stats`, `stats_drain`, `traces_drain`, `lanes`, `ordering`, `list_load`, `pages`, `partition`, `partition_drain` and `partition_queries`, which run only when named); BENCH_MODE=server|embedded|both (default) the modes.
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let want = |section: &str| only.is_empty() || only.split(',').any(|s| s.trim() == section);
    let mut rss = Vec::new();
    let mode = Mode::from_env();
    // Embedded ÷ server of #34's figures, measured in this run.
    let mut summary: Vec<(&str, f64, &str)> = Vec::new();
    let mut stands = stands::Stands::default();
    println!("hookd benchmark: {runs} runs per repeated figure, medians; {CONCURRENCY} API clients, sender.max_in_flight {SENDER_IN_FLIGHT}");

    // 1. Ingest: single POSTs from 64 clients; with BENCH_MODE=both each
    // run takes the server mode's figure, then the embedded mode's.
    if want("ingest") {
        let (mut rates, mut embedded_rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for run in 0..runs {
            // Alternated, which mode goes first: the machine's speed drifts
            // within a run too, and would otherwise favour one mode.
            let (mut server_rate, mut embedded_rate) = (None, None);
            for server_turn in [run % 2 == 0, run % 2 == 1] {
                if server_turn && mode.server {
                    reset(&pool).await;
                    let api = Hookd::start(
                        &database_url,
                        &redis_url,
                        &format!("bench-ingest-{run}"),
                        "api",
                    )
                    .await;
                    let endpoint = create_endpoint(&client, &api, &receiver_url).await;
                    let rate = single_posts(&client, &api.base, &endpoint, 20_000).await;
                    api.stop();
                    println!("   run {}: single POSTs, server {rate:.0}/s", run + 1);
                    rates.push(rate);
                    server_rate = Some(rate);
                }
                if !server_turn && mode.embedded {
                    let rate = embedded::ingest_run(&client, &receiver_url, 20_000).await;
                    println!("   run {}: single POSTs, embedded {rate:.0}/s", run + 1);
                    embedded_rates.push(rate);
                    embedded_rate = Some(rate);
                }
            }
            if let (Some(server), Some(embedded)) = (server_rate, embedded_rate) {
                ratios.push(embedded / server);
                println!(
                    "   run {}: single POSTs, embedded ÷ server {:.2}",
                    run + 1,
                    embedded / server
                );
            }
        }
        if mode.server {
            println!(
                "1. ingest, single POSTs, 64 clients, 20,000: {:.0} accepted/s (durable)",
                median(rates)
            );
        }
        if mode.embedded {
            println!(
                "1. ingest (embedded), single POSTs, 64 clients, 20,000: {:.0} accepted/s (durable)",
                median(embedded_rates)
            );
        }
        if !ratios.is_empty() {
            let ratio = median(ratios);
            println!("   embedded ÷ server, single POSTs: {ratio:.2} (median of the per-run ratios; target ≥ 0.8)");
            summary.push(("1. single-POST ingest", ratio, "≥ 0.8"));
        }

        // 2. Batch ingest: 1,000 per request; with BENCH_MODE=both each run
        // takes both modes' figures, which goes first alternating as above.
        let (mut rates, mut embedded_rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for run in 0..runs {
            let (mut server_rate, mut embedded_rate) = (None, None);
            for server_turn in [run % 2 == 0, run % 2 == 1] {
                if server_turn && mode.server {
                    let rate = batch_ingest_run(
                        &pool,
                        &database_url,
                        &redis_url,
                        run,
                        &client,
                        &receiver_url,
                    )
                    .await;
                    rates.push(rate);
                    server_rate = Some(rate);
                }
                if !server_turn && mode.embedded {
                    let rate = embedded::batch_ingest_run(&client, &receiver_url, 50_000).await;
                    embedded_rates.push(rate);
                    embedded_rate = Some(rate);
                }
            }
            if let (Some(server), Some(embedded)) = (server_rate, embedded_rate) {
                println!(
                    "   run {}: batch ingest {server:.0}/s server, {embedded:.0}/s embedded: embedded ÷ server {:.2}",
                    run + 1,
                    embedded / server
                );
                ratios.push(embedded / server);
            }
        }
        if mode.server {
            println!(
                "2. batch ingest, 1,000 per request, 50,000: {:.0} notifications/s",
                median(rates)
            );
        }
        if mode.embedded {
            println!(
                "2. batch ingest (embedded), 1,000 per request, 50,000: {:.0} notifications/s",
                median(embedded_rates)
            );
        }
        if !ratios.is_empty() {
            let ratio = median(ratios.clone());
            println!(
                "   embedded ÷ server, batch ingest: {ratio:.2} (median of the per-run ratios)"
            );
            summary.push(("2. batch ingest", ratio, "≥ 1.0"));
            stands.add(
                "embedded ÷ server batch ingest (1,000 per request, 50,000)",
                ratios,
                stands::Unit::Ratio,
                "≥ 1.0",
            );
        }
    }

    // 8, 9 and 10: events and their fan-out.
    if want("events") && mode.server {
        fanout::scenarios(&pool, &database_url, &redis_url, &receiver_url, runs).await;
    }

    // 13: the fan-out with a payload filter on every endpoint.
    if want("filters") && mode.server {
        fanout::filters(&pool, &database_url, &redis_url, &receiver_url, runs).await;
    }

    // 11 and 12: pull consumption.
    if want("pull") && mode.server {
        pull::scenarios(&pool, &database_url, &redis_url, runs).await;
    }

    // 3, 6a and 7. Delivery of 50,000 due now, each run paired with the raw
    // limit (the same receiver hit directly by the same HTTP client at the
    // same concurrency) measured just before it: this machine's speed drifts
    // by tens of percent over minutes, so each delivery run is compared with
    // its own raw run, and the median of those ratios is reported. Before
    // each pair, PostgreSQL is let settle (`settle`), so that the previous
    // run's leftover work (autovacuum, checkpoint) slows neither side.
    if want("delivery") {
        let mut rates = Vec::new();
        let mut written = Vec::new();
        let mut raws = Vec::new();
        let mut shares = Vec::new();
        let mut costs = Vec::new();
        let (mut raws_hyper, mut shares_hyper) = (Vec::new(), Vec::new());
        // hookd's sender, the bare hyper client: each alone, µs per request.
        let mut alone_us = [Vec::new(), Vec::new()];
        let mut cpu_us = [Vec::new(), Vec::new(), Vec::new()];
        // Per floor store (update, append), per run: its share of the hyper
        // limit, hookd's work per delivery over its, its CPU per delivery,
        // and its share of the hyper limit by CPU.
        let mut floors = [Vec::new(), Vec::new()];
        // The embedded drains: rate, all written, peak RSS, work per
        // delivery over the receiver's, share of the raw limit; and each
        // run's embedded ÷ server (rate, and work per delivery).
        let mut drains = Vec::new();
        let (mut drain_ratios, mut work_ratios) = (Vec::new(), Vec::new());
        // Embedded hookd's CPU per delivery ÷ the server mode's three
        // processes' (hookd, PostgreSQL, Redis), and hookd's sender alone ÷
        // a bare hyper client, CPU per request: per run.
        let (mut cpu_ratios, mut sender_ratios) = (Vec::new(), Vec::new());
        for run in 0..runs {
            let mut server_run = None;
            reset(&pool).await;
            settle(&pool).await;
            // The bench process's CPU per request in each raw run: client
            // and receiver together (the receiver alone is measured during
            // the delivery run).
            let bench_us = |before: f64| (cpu_seconds(Whose::Bench) - before) / 50_000.0 * 1e6;
            let before = cpu_seconds(Whose::Bench);
            let overflows = listen_overflows();
            let raw = raw_run(&client, &received, &receiver_url, 50_000).await;
            let reqwest_us = bench_us(before);
            let before = cpu_seconds(Whose::Bench);
            received.reset();
            let raw_hyper = raw_hyper::raw_hyper(&receiver_url, 50_000, SENDER_IN_FLIGHT).await;
            let hyper_us = bench_us(before);
            println!(
                "   run {}: raw runs, client + receiver CPU per request: reqwest {reqwest_us:.1} µs, hyper {hyper_us:.1} µs",
                run + 1
            );
            raws.push(raw);
            raws_hyper.push(raw_hyper);
            if mode.server {
                let before = cpu_seconds(Whose::Bench);
                let alone = [
                    client_cost::measure("sender", &receiver_url, 50_000).await,
                    client_cost::measure("hyper", &receiver_url, 50_000).await,
                ];
                // The receiver answered both runs: 100,000 requests.
                let receiver_us = bench_us(before) / 2.0;
                println!(
                "   run {}: clients alone (a process of their own), CPU per request: hookd's sender {:.1} µs at {:.0}/s, hyper {:.1} µs at {:.0}/s (the receiver {receiver_us:.1} µs per request meanwhile)",
                run + 1,
                alone[0].cpu_us,
                alone[0].rate,
                alone[1].cpu_us,
                alone[1].rate,
            );
                alone_us[0].push(alone[0].cpu_us);
                alone_us[1].push(alone[1].cpu_us);
                sender_ratios.push(alone[0].cpu_us / alone[1].cpu_us);
                let figures = delivery_run(
                    &pool,
                    &database_url,
                    &redis_url,
                    &format!("bench-deliver-{run}"),
                    &received,
                    &receiver_url,
                    50_000,
                )
                .await;
                let (rate, all_written, peak) = (figures.rate, figures.all_written, figures.rss);
                costs.push(figures.relative_cost);
                for (all, one) in cpu_us.iter_mut().zip(figures.cpu_us) {
                    all.push(one);
                }
                println!(
                "   run {}: delivery {rate:.0}/s, raw {raw:.0}/s (reqwest) and {raw_hyper:.0}/s (hyper) just before: {:.0}% and {:.2}; CPU per delivery: hookd {:.1} µs, postgres {:.1} µs, redis {:.1} µs",
                run + 1,
                100.0 * rate / raw,
                rate / raw_hyper,
                figures.cpu_us[0],
                figures.cpu_us[1],
                figures.cpu_us[2],
            );
                // 7b: the floor, from an identical backlog, in the same run.
                for (mode, floors) in ["update", "append"].into_iter().zip(floors.iter_mut()) {
                    reset(&pool).await;
                    let floor = floor::run(
                        mode,
                        &pool,
                        &database_url,
                        &redis_url,
                        &format!("bench-floor-{mode}-{run}"),
                        &received,
                        &receiver_url,
                        50_000,
                    )
                    .await;
                    let [own, postgres, redis, receiver] = floor.cpu_us;
                    // hookd's work per delivery over the floor's, each in units
                    // of its own run's receiver (figure 7's work ratio): the
                    // machine drifts between the two drains.
                    let work = figures.relative_cost / ((own + postgres + redis) / receiver);
                    println!(
                    "   run {}: floor ({mode}) {:.0}/s, {:.2} of the hyper limit ({:.0}/s just before), {:.2} by CPU; CPU per delivery: floor dispatcher {own:.1} µs, postgres {postgres:.1} µs, redis {redis:.1} µs, receiver {receiver:.1} µs; hookd's work {work:.2}x the floor's",
                    run + 1,
                    floor.rate,
                    floor.rate / floor.hyper,
                    floor.hyper,
                    floor.cpu_share,
                );
                    floors.push((
                        floor.rate / floor.hyper,
                        work,
                        floor.cpu_us,
                        floor.cpu_share,
                    ));
                }
                shares_hyper.push(rate / raw_hyper);
                rates.push(rate);
                written.push(all_written);
                rss.push(peak);
                shares.push(100.0 * rate / raw);
                server_run = Some((
                    rate,
                    figures.relative_cost,
                    figures.cpu_us.iter().sum::<f64>(),
                ));
            }
            if mode.embedded {
                let drain = embedded::drain_run(&received, &receiver_url, 50_000).await;
                println!(
                    "   run {}: delivery (embedded) {:.0}/s, {:.0}% of the raw limit just before ({raw:.0}/s), all recorded after {:.2} s; hookd CPU per delivery {:.1} µs, {:.2}x the receiver's; peak RSS {:.1} MiB",
                    run + 1,
                    drain.rate,
                    100.0 * drain.rate / raw,
                    drain.all_written,
                    drain.hookd_us,
                    drain.relative_cost,
                    drain.rss,
                );
                if let Some((rate, cost, server_us)) = server_run {
                    drain_ratios.push(drain.rate / rate);
                    work_ratios.push(drain.relative_cost / cost);
                    cpu_ratios.push(drain.hookd_us / server_us);
                    println!(
                        "   run {}: drain embedded ÷ server {:.2}; work per delivery embedded ÷ server {:.2}",
                        run + 1,
                        drain.rate / rate,
                        drain.relative_cost / cost
                    );
                }
                drains.push((
                    drain.rate,
                    drain.all_written,
                    drain.rss,
                    drain.relative_cost,
                    100.0 * drain.rate / raw,
                ));
            }
            let overflowed = listen_overflows() - overflows;
            if overflowed > 0 {
                println!(
                    "   run {}: WARNING: {overflowed} connections overflowed an accept queue during the raw runs and the drains; their handshakes were retried a second later, so this run's rates are not comparable",
                    run + 1
                );
            }
        }
        if !mode.server {
            println!(
                "7. raw limit, receiver hit directly at {SENDER_IN_FLIGHT} concurrent: {:.0} requests/s (reqwest), {:.0} requests/s (minimal hyper client)",
                median(raws.clone()),
                median(raws_hyper.clone())
            );
        }
        if mode.embedded {
            let part = |i: usize| {
                median(
                    drains
                        .iter()
                        .map(|d: &(f64, f64, f64, f64, f64)| [d.0, d.1, d.2, d.3, d.4][i])
                        .collect(),
                )
            };
            println!(
                "3. delivery (embedded), 50,000 due now: {:.0} deliveries/s first to last receipt ({:.0}% of the raw limit, median of the per-run ratios); every attempt recorded after {:.2} s; hookd CPU per delivery {:.2}x the receiver's; peak RSS {:.1} MiB",
                part(0),
                part(4),
                part(1),
                part(3),
                part(2)
            );
        }
        stands.add(
            "embedded ÷ server drain of 50,000 (same binary, same receiver)",
            drain_ratios.clone(),
            stands::Unit::Ratio,
            "≥ 1.0",
        );
        stands.add(
            "embedded CPU per delivery ÷ server's three processes (hookd + PostgreSQL + Redis)",
            cpu_ratios,
            stands::Unit::Ratio,
            "≤ 0.8",
        );
        stands.add(
            "server drain ÷ a bare hyper client into the same receiver",
            shares_hyper.clone(),
            stands::Unit::Ratio,
            "≥ 0.45",
        );
        stands.add(
            "hookd's sender alone ÷ a bare hyper client, CPU per request",
            sender_ratios,
            stands::Unit::Times,
            "≤ 2×",
        );
        if !drain_ratios.is_empty() {
            let ratio = median(drain_ratios);
            println!(
                "   embedded ÷ server, drain: {ratio:.2}; work per delivery: {:.2} (medians of the per-run ratios; target ≥ 0.8 for the drain)",
                median(work_ratios)
            );
            summary.push(("3. drain, 50,000 due now", ratio, "≥ 0.8"));
        }
        if mode.server {
            println!(
            "3. delivery, 50,000 due now: {:.0} deliveries/s first to last receipt; every attempt recorded after {:.2} s",
            median(rates),
            median(written)
        );
            println!(
            "7. raw limit, receiver hit directly at {SENDER_IN_FLIGHT} concurrent: {:.0} requests/s; delivery is {:.0}% of it (median of the per-run ratios)",
            median(raws),
            median(shares)
        );
            println!(
            "   hookd + PostgreSQL + Redis CPU per delivery: {:.2}x the receiver's CPU per request",
            median(costs)
        );
            println!(
            "   raw limit with a minimal hyper client: {:.0} requests/s; delivery is {:.2} of it (median of the per-run ratios)",
            median(raws_hyper),
            median(shares_hyper)
        );
            let [sender_us, hyper_us] = alone_us;
            println!(
            "   clients alone, CPU per request (medians): hookd's sender {:.1} µs (the floor under hookd's CPU per delivery), bare hyper {:.1} µs",
            median(sender_us),
            median(hyper_us)
        );
            for (mode, runs) in ["update", "append"].into_iter().zip(floors) {
                let share = median(runs.iter().map(|r| r.0).collect());
                let work = median(runs.iter().map(|r| r.1).collect());
                let cpu_share = median(runs.iter().map(|r| r.3).collect());
                let part = |i: usize| median(runs.iter().map(|r| r.2[i]).collect());
                println!(
                "7b. floor ({mode}): {share:.2} of the hyper limit ({cpu_share:.2} by CPU); hookd + PostgreSQL + Redis CPU per delivery {work:.2}x the floor's; CPU per delivery: floor dispatcher {:.1} µs, postgres {:.1} µs, redis {:.1} µs, receiver {:.1} µs (medians)",
                part(0),
                part(1),
                part(2),
                part(3)
            );
            }
            let [hookd_us, postgres_us, redis_us] = cpu_us;
            println!(
                "   CPU per delivery (medians): hookd {:.1} µs, postgres {:.1} µs, redis {:.1} µs",
                median(hookd_us),
                median(postgres_us),
                median(redis_us)
            );
        }
    }

    // 4. Lateness: 1,000 due per second for 20 s.
    let (mut server_p99, mut embedded_p99) = (None, None);
    if want("lateness") && mode.server {
        reset(&pool).await;
        received.reset();
        let hookd = Hookd::start(&database_url, &redis_url, "bench-lateness", "all").await;
        let endpoint = create_endpoint(&client, &hookd, &receiver_url).await;
        settled_history(&pool, &endpoint, 100_000).await;
        let start_ms = chrono::Utc::now().timestamp_millis() + 5_000;
        let bodies = batch_bodies(20_000, |i| {
            let due = start_ms + i as i64;
            let at = chrono::DateTime::from_timestamp_millis(due)
                .unwrap()
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            json!({"endpoint": endpoint, "body": format!("{{\"due\":{due}}}"), "deliver_at": at})
        });
        post_batches(&client, &hookd.base, bodies, 2).await;
        wait_count(&received, 20_000, Duration::from_secs(120)).await;
        hookd.stop();
        let mut late = received.lateness_ms.lock().unwrap().clone();
        late.sort_unstable();
        println!("{}", embedded::lateness_line("server", &late));
        server_p99 = Some(percentile(&late, 0.99));
    }
    if want("lateness") && mode.embedded {
        let late = embedded::lateness(&client, &received, &receiver_url).await;
        println!("{}", embedded::lateness_line("embedded", &late));
        let p99 = percentile(&late, 0.99);
        if let Some(server) = server_p99 {
            println!("   lateness p99: server {server} ms, embedded {p99} ms (target for embedded ≤ 10 ms)");
        }
        embedded_p99 = Some(p99);
    }

    // 13. End to end: 4,000 notifications/s offered for 10 s (#15's rate);
    // BENCH_E2E_RATES=1000,2000,4000 runs it at each rate instead, to see
    // how the latency grows with the load on this machine.
    if want("e2e") && mode.server {
        let rates = std::env::var("BENCH_E2E_RATES").unwrap_or_else(|_| "4000".into());
        for rate in rates
            .split(',')
            .filter_map(|r| r.trim().parse::<u64>().ok())
        {
            speed::e2e(
                &pool,
                &database_url,
                &redis_url,
                &received,
                &receiver_url,
                rate,
                10,
            )
            .await;
        }
    }

    // 5, 6b and the rebuild: delivery beside 1,000,000 notifications pending
    // for later, against the same without them (measured first).
    if want("scale") && mode.server {
        reset(&pool).await;
        let prefix = "bench-scale";
        let mut without = Vec::new();
        let mut cost_without = Vec::new();
        for _ in 0..runs {
            let figures = delivery_run(
                &pool,
                &database_url,
                &redis_url,
                prefix,
                &received,
                &receiver_url,
                20_000,
            )
            .await;
            without.push(figures.rate);
            cost_without.push(figures.relative_cost);
        }
        let endpoint_id: uuid::Uuid =
            sqlx::query_scalar("SELECT id FROM endpoints ORDER BY id DESC LIMIT 1")
                .fetch_one(&pool)
                .await
                .unwrap();
        sqlx::query(
        "INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, deliver_at, next_attempt_at) \
         SELECT hookd_uuid_v7(), $1, 'application/json', '{}'::bytea, '{0,60000}', now(), \
                now() + interval '30 days' + g * interval '1 millisecond' \
         FROM generate_series(1, 1000000) g",
    )
    .bind(endpoint_id)
    .execute(&pool)
    .await
    .unwrap();
        // Steady state with a backlog, not the aftermath of a bulk load: the
        // checkpoint that the load's WAL asks for happens here, untimed.
        for statement in ["VACUUM ANALYZE notifications", "CHECKPOINT"] {
            sqlx::query(statement).execute(&pool).await.unwrap();
        }
        // Make the dispatcher find the index incomplete, as after a Redis loss.
        let redis = redis::Client::open(redis_url.as_str()).unwrap();
        let mut conn = redis.get_multiplexed_async_connection().await.unwrap();
        let _: () = redis::cmd("DEL")
            .arg(format!("{prefix}:{{{prefix}}}:indexed"))
            .query_async(&mut conn)
            .await
            .unwrap();
        let memory_before = redis_used_memory(&redis_url).await;
        let started = Instant::now();
        let dispatcher = Hookd::start(&database_url, &redis_url, prefix, "dispatcher").await;
        loop {
            let indexed: bool = redis::cmd("EXISTS")
                .arg(format!("{prefix}:{{{prefix}}}:indexed"))
                .query_async(&mut conn)
                .await
                .unwrap();
            if indexed {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let rebuild = started.elapsed();
        let per_pending =
            (redis_used_memory(&redis_url).await - memory_before) as f64 / 1_000_000.0;
        let reindexed = heal::reindex_after_due_deleted(&mut conn, prefix, 1_000_000).await;
        dispatcher.stop();
        println!(
        "rebuild: 1,000,000 pending notifications indexed from PostgreSQL in {:.1} s (from process start)",
        rebuild.as_secs_f64()
    );
        let mut with_backlog = Vec::new();
        let mut cost_with = Vec::new();
        for _ in 0..runs {
            let figures = delivery_run(
                &pool,
                &database_url,
                &redis_url,
                prefix,
                &received,
                &receiver_url,
                20_000,
            )
            .await;
            with_backlog.push(figures.rate);
            cost_with.push(figures.relative_cost);
        }
        println!(
        "5. scale, 20,000 due now beside 1,000,000 pending later: {:.0}/s vs {:.0}/s without: ratio {:.2}",
        median(with_backlog.clone()),
        median(without.clone()),
        median(with_backlog) / median(without)
    );
        println!(
            "   work per delivery (hookd + PostgreSQL + Redis CPU over the receiver's): {:.2} with the backlog, {:.2} without: ratio {:.2}",
            median(cost_with.clone()),
            median(cost_without.clone()),
            median(cost_without) / median(cost_with)
        );
        println!("6b. memory: Redis {per_pending:.0} bytes per pending notification");
        println!(
            "heal: 1,000,000 pending, DEL of the due key: all re-indexed {:.1} s after the DEL",
            reindexed.as_secs_f64()
        );
    }
    if want("heal") && mode.server {
        heal::scenarios(&pool, &database_url, &redis_url, &received, &receiver_url).await;
    }
    if want("redis_down") && mode.server {
        redis_down::scenario(&pool, &database_url, &receiver_url).await;
    }
    if want("cluster") && mode.server {
        cluster::scenario(
            &pool,
            &database_url,
            &redis_url,
            &received,
            &receiver_url,
            runs,
        )
        .await;
    }
    if want("breaker") && mode.server {
        breaker::scenarios(
            &pool,
            &database_url,
            &redis_url,
            &received,
            &receiver_url,
            runs,
        )
        .await;
    }
    if want("breaker") && mode.embedded {
        breaker::embedded_scenarios(&received, &receiver_url, runs).await;
    }
    if want("embedded_scale") && mode.embedded {
        embedded::scale(&received, &receiver_url, runs).await;
    }
    if want("rate_limit") {
        let bench = rate_limit::Bench {
            pool: &pool,
            database_url: &database_url,
            redis_url: &redis_url,
            received: &received,
            receiver_url: &receiver_url,
        };
        rate_limit::scenario(&bench, mode.server, mode.embedded, runs).await;
    }
    // Opt-in (minutes of writing a day of history): only when named.
    let named = |section: &str| only.split(',').any(|s| s.trim() == section);
    if named("stats") {
        if mode.server {
            stats::server(&client, &pool, &database_url, &redis_url).await;
        }
        if mode.embedded {
            stats::embedded(&client).await;
        }
    }
    if named("stats_drain") {
        let bench = rate_limit::Bench {
            pool: &pool,
            database_url: &database_url,
            redis_url: &redis_url,
            received: &received,
            receiver_url: &receiver_url,
        };
        stats::drains(&bench, runs, mode.server, mode.embedded).await;
    }
    if named("traces_drain") {
        let bench = rate_limit::Bench {
            pool: &pool,
            database_url: &database_url,
            redis_url: &redis_url,
            received: &received,
            receiver_url: &receiver_url,
        };
        traces::drains(&bench, runs, mode.server, mode.embedded).await;
    }
    if named("lanes") {
        let bench = rate_limit::Bench {
            pool: &pool,
            database_url: &database_url,
            redis_url: &redis_url,
            received: &received,
            receiver_url: &receiver_url,
        };
        lanes::scenario(&bench, mode.server, mode.embedded).await;
    }
    if named("ordering") {
        let bench = rate_limit::Bench {
            pool: &pool,
            database_url: &database_url,
            redis_url: &redis_url,
            received: &received,
            receiver_url: &receiver_url,
        };
        ordering::scenario(&bench, mode.server, mode.embedded).await;
    }
    if named("list_load") {
        let bench = rate_limit::Bench {
            pool: &pool,
            database_url: &database_url,
            redis_url: &redis_url,
            received: &received,
            receiver_url: &receiver_url,
        };
        list_load::scenario(&bench, mode.server, mode.embedded).await;
    }
    if named("pages") {
        let bench = rate_limit::Bench {
            pool: &pool,
            database_url: &database_url,
            redis_url: &redis_url,
            received: &received,
            receiver_url: &receiver_url,
        };
        pages::scenario(&bench, mode.server, mode.embedded).await;
    }
    if named("partition") && mode.server {
        partition::drop_day(&pool).await;
    }
    if named("partition_queries") && mode.server {
        partition::queries_with_history(&pool, &database_url, &redis_url, &receiver_url).await;
    }
    if named("partition_drain") && mode.server {
        partition::drain_with_history(
            &pool,
            &database_url,
            &redis_url,
            &received,
            &receiver_url,
            runs,
        )
        .await;
    }
    if !rss.is_empty() {
        println!(
            "6a. memory: hookd dispatcher peak RSS during 3: {:.1} MiB",
            median(rss)
        );
    }
    stands.write();
    if !summary.is_empty() || server_p99.is_some() || embedded_p99.is_some() {
        println!("#34, embedded beside server in this run:");
        for (figure, ratio, target) in summary {
            println!("   {figure}: embedded ÷ server {ratio:.2} (target {target})");
        }
        if let Some(p99) = embedded_p99 {
            let server = server_p99.map_or_else(String::new, |s| format!("; server {s} ms"));
            println!("   4. lateness p99: embedded {p99} ms (target ≤ 10 ms){server}");
        }
    }
}
