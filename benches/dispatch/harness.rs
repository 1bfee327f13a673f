//! The bench's harness: the modes, the receiver, a hookd process, the CPU
//! each process used, and the statistics every figure uses.

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use serde_json::Value;
use sqlx::PgPool;

pub(crate) const CONCURRENCY: usize = 64;

/// Which modes the figures that have both run in (`BENCH_MODE`:
/// `server`, `embedded` or `both`, the default). Sections that exist only
/// in the server mode (batch ingest, events, pull, e2e, scale, heal,
/// redis_down) run unless it is `embedded`; `embedded_scale` runs unless it
/// is `server`.
#[derive(Clone, Copy)]
pub(crate) struct Mode {
    pub(crate) server: bool,
    pub(crate) embedded: bool,
}

impl Mode {
    pub(crate) fn from_env() -> Self {
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
pub(crate) const SENDER_IN_FLIGHT: usize = 256;

#[derive(Default)]
pub(crate) struct Received {
    pub(crate) count: AtomicU64,
    pub(crate) first: Mutex<Option<Instant>>,
    pub(crate) last: Mutex<Option<Instant>>,
    pub(crate) lateness_ms: Mutex<Vec<i64>>,
    /// End-to-end runs: (request sent, receipt - request sent), µs.
    pub(crate) latency_us: Mutex<Vec<(i64, i64)>>,
}

impl Received {
    pub(crate) fn reset(&self) {
        self.count.store(0, Ordering::SeqCst);
        *self.first.lock().unwrap() = None;
        *self.last.lock().unwrap() = None;
        self.lateness_ms.lock().unwrap().clear();
        self.latency_us.lock().unwrap().clear();
    }

    pub(crate) fn span(&self) -> Duration {
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
pub(crate) fn listen_overflows() -> u64 {
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
pub(crate) fn receiver_listener(address: std::net::SocketAddr) -> tokio::net::TcpListener {
    hookd::server::listen(address, 1024).unwrap()
}

pub(crate) async fn receive(State(received): State<Arc<Received>>, body: Bytes) -> &'static str {
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

pub(crate) struct Hookd {
    pub(crate) child: Child,
    pub(crate) base: String,
}

/// HOOKD_BIN, or what `cargo build --release` built: in CARGO_TARGET_DIR
/// when that is set.
pub(crate) fn hookd_binary() -> String {
    std::env::var("HOOKD_BIN").unwrap_or_else(|_| {
        let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
        format!("{target}/release/hookd")
    })
}

impl Hookd {
    pub(crate) async fn start(
        database_url: &str,
        redis_url: &str,
        prefix: &str,
        role: &str,
    ) -> Self {
        Self::start_with(database_url, redis_url, prefix, role, &[]).await
    }

    /// With more HOOKD_* variables (Sentinel settings, say).
    pub(crate) async fn start_with(
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
    pub(crate) fn peak_rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    }

    pub(crate) fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// The processes whose CPU the bench reads: its own PostgreSQL (the
/// postmaster and its children) and Redis. Other work on the machine may
/// run PostgreSQL, Redis or hookd processes of its own; they are not ours.
pub(crate) static SERVICES: std::sync::OnceLock<(u32, u32)> = std::sync::OnceLock::new();

/// Which processes a CPU figure sums.
#[derive(Clone, Copy)]
pub(crate) enum Whose {
    /// hookd processes started by this bench.
    Hookd,
    /// The bench's PostgreSQL: its postmaster and every backend.
    Postgres,
    Redis,
    /// This process (receiver and load generator).
    Bench,
}

/// CPU seconds (user + system) used so far by `whose`, from /proc.
pub(crate) fn cpu_seconds(whose: Whose) -> f64 {
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
pub(crate) fn cpu_snapshot() -> [f64; 4] {
    [
        cpu_seconds(Whose::Hookd),
        cpu_seconds(Whose::Postgres),
        cpu_seconds(Whose::Redis),
        cpu_seconds(Whose::Bench),
    ]
}

/// Finds the bench's PostgreSQL postmaster (the parent of a backend) and
/// Redis server.
pub(crate) async fn find_services(pool: &PgPool, redis_url: &str) {
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

pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    values[values.len() / 2]
}

pub(crate) fn percentile(sorted: &[i64], p: f64) -> i64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// What every section of a run shares: the bench's database and Redis, its
/// receiver, its client, and how many runs of which modes.
#[derive(Clone, Copy)]
pub(crate) struct Setup<'a> {
    pub(crate) pool: &'a PgPool,
    pub(crate) database_url: &'a str,
    pub(crate) redis_url: &'a str,
    pub(crate) received: &'a Arc<Received>,
    pub(crate) receiver_url: &'a str,
    pub(crate) client: &'a reqwest::Client,
    pub(crate) runs: usize,
    pub(crate) mode: Mode,
}

/// #34's figures, embedded ÷ server, as the sections measure them: the
/// figure, the ratio and its target.
pub(crate) type Summary = Vec<(&'static str, f64, &'static str)>;
