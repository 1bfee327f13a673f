//! The embedded mode's figures (#34): hookd on one SQLite file with its due
//! index in the process (`serve --data-dir DIR`, no database.url nor
//! redis.url), run as its own process like the server mode's, measured by
//! the same clients and receiver so that each figure can be set beside the
//! server mode's in the same run: single-POST ingest, the drain, lateness,
//! and 1,000,000 pending notifications (`embedded_scale`: the start's
//! refill, readiness and resident memory).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::SqlitePool;

use super::{
    batch_bodies, cpu_snapshot, create_endpoint, median, payload_bodies, percentile, post_batches,
    single_posts, wait_count, Hookd, Received, SENDER_IN_FLIGHT,
};

/// An embedded hookd's data directory (removed when dropped) and its file.
pub struct DataDir {
    dir: tempfile::TempDir,
}

impl DataDir {
    /// A fresh directory under BENCH_DATA_DIR (default: the system's temp
    /// directory). Where it lives decides what a commit's fsync costs: the
    /// server mode's PostgreSQL keeps its data under the test machinery's
    /// directory, on the same disk as /tmp on this machine.
    pub fn new() -> Self {
        let base = std::env::var_os("BENCH_DATA_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir);
        Self {
            // Private to the account, as hookd requires of --data-dir.
            dir: tempfile::Builder::new()
                .prefix("hookd-bench-")
                .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .tempdir_in(base)
                .unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn database(&self) -> PathBuf {
        self.dir.path().join("hookd.db")
    }

    /// Where an embedded hookd's log is written (info and up).
    fn log(&self) -> PathBuf {
        self.dir.path().join("hookd.log")
    }
}

/// Starts `hookd serve --data-dir DIR` (embedded: no database.url nor
/// redis.url), with more HOOKD_* variables, and waits until it serves
/// (which, embedded, is after its index is filled from the file).
pub async fn start(data: &DataDir, env: &[(&str, &str)]) -> Hookd {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(data.log())
        .unwrap();
    let child: Child = Command::new(super::hookd_binary())
        .args(["serve", "--data-dir"])
        .arg(data.path())
        // The bench's own environment names the server mode's services;
        // hookd reads only HOOKD_*, but make sure neither is set.
        .env_remove("HOOKD_DATABASE__URL")
        .env_remove("HOOKD_REDIS__URL")
        .env("HOOKD_SERVER__LISTEN", format!("127.0.0.1:{port}"))
        .env("HOOKD_SENDER__ALLOW_NETWORKS", "[\"127.0.0.0/8\"]")
        .env("HOOKD_SENDER__MAX_IN_FLIGHT", SENDER_IN_FLIGHT.to_string())
        .env("HOOKD_LOG__FILTER", "info")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("HOOKD_BIN, or CARGO_TARGET_DIR's release/hookd, exists (cargo build --release)");
    let hookd = Hookd {
        child,
        base: format!("http://127.0.0.1:{port}"),
    };
    wait_ready(&hookd, data, Duration::from_secs(120)).await;
    hookd
}

/// Waits until `/readyz` answers 200: the file is open and the index is
/// filled (the listener serves nothing before).
async fn wait_ready(hookd: &Hookd, data: &DataDir, limit: Duration) {
    let client = reqwest::Client::new();
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Ok(response) = client.get(format!("{}/readyz", hookd.base)).send().await {
            if response.status().is_success() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "embedded hookd was not ready within {limit:?}; its log:\n{}",
        std::fs::read_to_string(data.log()).unwrap_or_default()
    );
}

/// The last `took_ms` hookd logged for filling its index from the file.
fn fill_took_ms(data: &DataDir) -> Option<u64> {
    let log = std::fs::read_to_string(data.log()).ok()?;
    log.lines()
        .rev()
        .find(|line| line.contains("filled the due index from the store"))
        .and_then(|line| line.split("took_ms=").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|ms| ms.parse().ok())
}

/// A value of hookd's /proc status (VmRSS, VmHWM) in MiB.
fn status_mib(hookd: &Hookd, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{}/status", hookd.child.id()))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Figure 1 embedded: single POSTs from 64 clients to a fresh file.
pub async fn ingest_run(client: &reqwest::Client, receiver_url: &str, total: u64) -> f64 {
    let data = DataDir::new();
    let hookd = start(&data, &[]).await;
    let endpoint = create_endpoint(client, &hookd, receiver_url).await;
    let rate = single_posts(client, &hookd.base, &endpoint, total).await;
    hookd.stop();
    rate
}

/// Figure 2 embedded: `total` notifications in batches of 1,000 from 4
/// clients, as the server mode's, to a fresh file with the dispatcher off
/// (the server mode's API-only process); notifications per second.
pub async fn batch_ingest_run(client: &reqwest::Client, receiver_url: &str, total: usize) -> f64 {
    let data = DataDir::new();
    let api = start(&data, &[("HOOKD_DISPATCHER__ENABLED", "false")]).await;
    let endpoint = create_endpoint(client, &api, receiver_url).await;
    let bodies = batch_bodies(
        total,
        |i| json!({"endpoint": endpoint, "payload": {"i": i}, "delay": "1h"}),
    );
    let started = Instant::now();
    post_batches(client, &api.base, bodies, 4).await;
    let rate = total as f64 / started.elapsed().as_secs_f64();
    api.stop();
    rate
}

/// One embedded drain's figures, as `DeliveryFigures` has them.
pub struct Drain {
    pub rate: f64,
    pub all_written: f64,
    pub rss: f64,
    /// hookd's CPU over the receiver's (the bench process's) in the drain.
    pub relative_cost: f64,
    pub hookd_us: f64,
}

/// Figure 3 embedded: `count` due now, accepted through hookd's API with
/// its dispatcher off (the server mode's API-only seeding), then drained by
/// a hookd started on the file with its dispatcher on. The rate is first to
/// last receipt, as in the server mode: the start's refill of `count` ids
/// is before the first receipt.
pub async fn drain_run(received: &Arc<Received>, receiver_url: &str, count: usize) -> Drain {
    let data = DataDir::new();
    let client = reqwest::Client::new();
    let api = start(&data, &[("HOOKD_DISPATCHER__ENABLED", "false")]).await;
    let endpoint = create_endpoint(&client, &api, receiver_url).await;
    post_batches(&client, &api.base, payload_bodies(count, &endpoint), 2).await;
    api.stop();
    received.reset();
    let before = cpu_snapshot();
    let started = Instant::now();
    let dispatcher = start(&data, &[]).await;
    wait_count(received, count as u64, Duration::from_secs(300)).await;
    // Every outcome recorded, read beside hookd (WAL lets another process
    // read; hookd's lock is on its own file, hookd.db.lock).
    let reader = SqlitePool::connect_with(
        SqliteConnectOptions::new()
            .filename(data.database())
            .read_only(true),
    )
    .await
    .unwrap();
    loop {
        let done: i64 =
            sqlx::query_scalar("SELECT count(*) FROM notifications WHERE status <> 'pending'")
                .fetch_one(&reader)
                .await
                .unwrap();
        if done >= count as i64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let after = cpu_snapshot();
    let all_written = started.elapsed().as_secs_f64();
    reader.close().await;
    let (hookd_cpu, receiver_cpu) = (after[0] - before[0], after[3] - before[3]);
    let rss = dispatcher.peak_rss_mib();
    dispatcher.stop();
    Drain {
        rate: count as f64 / received.span().as_secs_f64(),
        all_written,
        rss,
        relative_cost: hookd_cpu / receiver_cpu,
        hookd_us: hookd_cpu / count as f64 * 1e6,
    }
}

/// Figure 4 embedded: 1,000 due per second for 20 s, each carrying its due
/// time; returns the lateness of each receipt (ms), sorted.
pub async fn lateness(
    client: &reqwest::Client,
    received: &Arc<Received>,
    receiver_url: &str,
) -> Vec<i64> {
    let data = DataDir::new();
    received.reset();
    let hookd = start(&data, &[]).await;
    let endpoint = create_endpoint(client, &hookd, receiver_url).await;
    let start_ms = chrono::Utc::now().timestamp_millis() + 5_000;
    let bodies = batch_bodies(20_000, |i| {
        let due = start_ms + i as i64;
        let at = chrono::DateTime::from_timestamp_millis(due)
            .unwrap()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        json!({"endpoint": endpoint, "body": format!("{{\"due\":{due}}}"), "deliver_at": at})
    });
    post_batches(client, &hookd.base, bodies, 2).await;
    wait_count(received, 20_000, Duration::from_secs(120)).await;
    hookd.stop();
    let mut late = received.lateness_ms.lock().unwrap().clone();
    late.sort_unstable();
    late
}

/// Writes `count` pending notifications of `endpoint` into the (closed)
/// file, due 30 days from now one millisecond apart, in one statement:
/// hookd's API would take minutes to accept a million, and the figure is
/// about what a start does with them, not how they came. Ids are UUIDv7s
/// made from a creation millisecond in the last `count` ms (48 bits), the version, a variant
/// and the row number: valid, unique and in creation order, as hookd's.
async fn seed_pending(database: &Path, endpoint: &str, count: i64) {
    let pool = SqlitePool::connect_with(SqliteConnectOptions::new().filename(database))
        .await
        .unwrap();
    let endpoint = uuid::Uuid::parse_str(endpoint).unwrap();
    let now_us = chrono::Utc::now().timestamp_micros();
    let later_us = now_us + 30 * 86_400 * 1_000_000;
    sqlx::query(
        "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?1) \
         INSERT INTO notifications (id, endpoint_id, content_type, body, schedule_ms, \
             deliver_at, next_attempt_at, created_at, updated_at) \
         SELECT unhex(printf('%012x7000%04x%012x', ?3 / 1000 - ?1 + n, 32768 + (n >> 48), n & 281474976710655)), \
             ?2, 'application/json', X'7B7D', '[0,60000]', ?3, ?4 + n * 1000, ?3, ?3 FROM g",
    )
    .bind(count)
    .bind(endpoint.as_bytes().as_slice())
    .bind(now_us)
    .bind(later_us)
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
}

/// `embedded_scale`: 1,000,000 pending in the file, then two starts of
/// hookd on it (the first after the seed, the second a restart of a
/// stopped hookd): how long until it is ready to deliver (spawn to /readyz
/// 200, and the fill's own `took_ms` from its log), its resident memory
/// once ready and at its peak; then 20,000 due now delivered beside the
/// backlog against the same on an empty file.
pub async fn scale(received: &Arc<Received>, receiver_url: &str, runs: usize) {
    let pending = 1_000_000;
    let data = DataDir::new();
    let client = reqwest::Client::new();
    // hookd makes the file (its migrations) and the endpoint.
    let hookd = start(&data, &[("HOOKD_DISPATCHER__ENABLED", "false")]).await;
    let endpoint = create_endpoint(&client, &hookd, receiver_url).await;
    hookd.stop();
    let seeding = Instant::now();
    seed_pending(&data.database(), &endpoint, pending).await;
    let file_mib = std::fs::metadata(data.database()).unwrap().len() as f64 / 1048576.0;
    println!(
        "   embedded_scale: {pending} pending written into the file in {:.1} s ({file_mib:.0} MiB)",
        seeding.elapsed().as_secs_f64()
    );
    let mut ready = Vec::new();
    let mut took = Vec::new();
    let mut rss = Vec::new();
    let mut hwm = Vec::new();
    for start_number in 1..=runs.max(2) {
        let started = Instant::now();
        let hookd = start(&data, &[]).await;
        let ready_s = started.elapsed().as_secs_f64();
        // What it holds while ready and idle, once its allocator settles.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (now, peak) = (status_mib(&hookd, "VmRSS:"), status_mib(&hookd, "VmHWM:"));
        let took_ms = fill_took_ms(&data).unwrap_or(0);
        hookd.stop();
        println!(
            "   embedded_scale start {start_number}: ready (/readyz 200) {ready_s:.2} s after spawn, the fill took {took_ms} ms; RSS {now:.1} MiB ready, peak {peak:.1} MiB"
        );
        ready.push(ready_s);
        took.push(took_ms as f64);
        rss.push(now);
        hwm.push(peak);
    }
    // The first start after the seed is a start like the others (the seed's
    // connection closed the file cleanly); the restarts are its repeats.
    println!(
        "E1. embedded, 1,000,000 pending: restart ready to deliver in {:.2} s (spawn to /readyz; the fill {:.0} ms); RSS {:.1} MiB ready, peak {:.1} MiB (medians of {} starts; targets ≤ 10 s, ≤ 300 MiB)",
        median(ready),
        median(took),
        median(rss),
        median(hwm),
        runs.max(2)
    );
    // 20,000 due now beside the backlog: the file's due-time index and the
    // in-process index each hold a million entries more.
    let mut with_backlog = Vec::new();
    let mut without = Vec::new();
    for _ in 0..runs {
        without.push(drain_run(received, receiver_url, 20_000).await.rate);
        with_backlog.push(drain_beside(&data, &client, received, receiver_url, 20_000).await);
    }
    println!(
        "E2. embedded, 20,000 due now beside 1,000,000 pending later: {:.0}/s vs {:.0}/s on an empty file: ratio {:.2} (medians)",
        median(with_backlog.clone()),
        median(without.clone()),
        median(with_backlog) / median(without)
    );
}

/// `count` due now added to the file of `data` through hookd's API (its
/// dispatcher off), then drained by a hookd started on it: deliveries/s,
/// first to last receipt.
async fn drain_beside(
    data: &DataDir,
    client: &reqwest::Client,
    received: &Arc<Received>,
    receiver_url: &str,
    count: usize,
) -> f64 {
    let api = start(data, &[("HOOKD_DISPATCHER__ENABLED", "false")]).await;
    let endpoint = create_endpoint(client, &api, receiver_url).await;
    post_batches(client, &api.base, payload_bodies(count, &endpoint), 2).await;
    api.stop();
    received.reset();
    let dispatcher = start(data, &[]).await;
    wait_count(received, count as u64, Duration::from_secs(300)).await;
    let rate = count as f64 / received.span().as_secs_f64();
    dispatcher.stop();
    // Nothing else arrives: the backlog is due in 30 days.
    assert_eq!(received.count.load(Ordering::SeqCst), count as u64);
    rate
}

/// The lateness percentiles line of one mode.
pub fn lateness_line(mode: &str, late: &[i64]) -> String {
    format!(
        "4. lateness ({mode}), 1,000 due/s for 20 s: min {} ms, p50 {} ms, p99 {} ms, max {} ms (receipt - due, in whole ms; negative would be early)",
        late.first().unwrap(),
        percentile(late, 0.5),
        percentile(late, 0.99),
        late.last().unwrap()
    )
}
