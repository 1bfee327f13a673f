//! How fast the due index heals (issue #19's targets): the `due` key
//! deleted under a backlog, Redis full then given room, and a Sentinel
//! failover with the master killed mid-traffic. Each prints how late the
//! last notification arrived.

use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use chrono::Utc;
use serde_json::json;
use sqlx::PgPool;

use super::{create_endpoint, post_batches, reset, wait_count, Hookd, Received};

const WAITING: usize = 5000;

/// After a `DEL` of `due` (the buckets' directory) with `pending` rows (a
/// dispatcher running), how long until every row is back in the due set and
/// the sentinel with them.
pub async fn reindex_after_due_deleted(
    conn: &mut redis::aio::MultiplexedConnection,
    prefix: &str,
    pending: u64,
) -> Duration {
    let keys = hookd::due::redis::Keys::new(prefix);
    let _: () = redis::cmd("DEL")
        .arg(&keys.due)
        .query_async(conn)
        .await
        .unwrap();
    let started = Instant::now();
    loop {
        let (count, sentinel): (Option<u64>, Option<f64>) = redis::pipe()
            .get(&keys.count)
            .zscore(&keys.due, hookd::due::redis::rebuild::DUE_SENTINEL)
            .query_async(conn)
            .await
            .unwrap();
        if count.unwrap_or(0) >= pending && sentinel.is_some() {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "not re-indexed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `count` notifications due at `due_ms`, each carrying it for the
/// receiver's lateness figure.
fn waiting(endpoint: &str, count: usize, due_ms: i64) -> Vec<String> {
    let at = chrono::DateTime::from_timestamp_millis(due_ms)
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    super::batch_bodies(
        count,
        |_| json!({"endpoint": endpoint, "payload": {"due": due_ms}, "deliver_at": at}),
    )
}

fn latest(received: &Received) -> i64 {
    received
        .lateness_ms
        .lock()
        .unwrap()
        .iter()
        .copied()
        .max()
        .unwrap_or(0)
}

async fn redis(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

async fn marked(conn: &mut redis::aio::MultiplexedConnection, prefix: &str) {
    let marker = format!("{prefix}:{{{prefix}}}:indexed");
    for _ in 0..600 {
        let exists: bool = redis::cmd("EXISTS")
            .arg(&marker)
            .query_async(conn)
            .await
            .unwrap();
        if exists {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the index was never marked");
}

pub async fn scenarios(
    pool: &PgPool,
    database_url: &str,
    redis_url: &str,
    received: &Received,
    receiver_url: &str,
) {
    let client = reqwest::Client::new();
    let mut conn = redis(redis_url).await;

    // The due key deleted while 5,000 wait.
    reset(pool).await;
    received.reset();
    let prefix = "bench-heal-del";
    let hookd = Hookd::start(database_url, redis_url, prefix, "all").await;
    let endpoint = create_endpoint(&client, &hookd, receiver_url).await;
    marked(&mut conn, prefix).await;
    let due_ms = Utc::now().timestamp_millis() + 3000;
    post_batches(&client, &hookd.base, waiting(&endpoint, WAITING, due_ms), 4).await;
    let _: () = redis::cmd("DEL")
        .arg(format!("{prefix}:{{{prefix}}}:due"))
        .query_async(&mut conn)
        .await
        .unwrap();
    wait_count(received, WAITING as u64, Duration::from_secs(120)).await;
    hookd.stop();
    println!(
        "heal: {WAITING} waiting, due key deleted: the last arrived {} ms after it was due ({} received)",
        latest(received),
        received.count.load(Ordering::SeqCst)
    );

    // Redis full (its limit below what it holds: every write refused with
    // OOM) while 5,000 are created, then given room.
    reset(pool).await;
    received.reset();
    let prefix = "bench-heal-full";
    let hookd = Hookd::start(database_url, redis_url, prefix, "all").await;
    let endpoint = create_endpoint(&client, &hookd, receiver_url).await;
    marked(&mut conn, prefix).await;
    let maxmemory = |bytes: &str| {
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory")
            .arg(bytes)
            .to_owned()
    };
    let _: () = maxmemory("1").query_async(&mut conn).await.unwrap();
    let due_ms = Utc::now().timestamp_millis();
    post_batches(&client, &hookd.base, waiting(&endpoint, WAITING, due_ms), 4).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let arrived_while_full = received.count.load(Ordering::SeqCst);
    let _: () = maxmemory("0").query_async(&mut conn).await.unwrap();
    let room = Instant::now();
    wait_count(received, WAITING as u64, Duration::from_secs(120)).await;
    let after_room = received
        .last
        .lock()
        .unwrap()
        .map_or(Duration::ZERO, |last| last.saturating_duration_since(room));
    hookd.stop();
    println!(
        "heal: Redis full while {WAITING} were created ({arrived_while_full} arrived while full): the last arrived {} ms after Redis had room",
        after_room.as_millis()
    );

    failover(pool, database_url, received, receiver_url).await;
}

/// A master, a replica and a sentinel of our own; the master killed with
/// SIGKILL while notifications wait and creates go on.
async fn failover(pool: &PgPool, database_url: &str, received: &Received, receiver_url: &str) {
    let Ok(server) = std::env::var("HOOKD_TEST_REDIS_SERVER") else {
        println!(
            "heal: Sentinel failover skipped (HOOKD_TEST_REDIS_SERVER unset; run scripts/bench)"
        );
        return;
    };
    let dir = std::env::temp_dir().join(format!("hookd-bench-sentinel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let port = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let (master_port, replica_port, sentinel_port) = (port(), port(), port());
    let redis_server = |port: u16, extra: &[String]| -> Child {
        Command::new(&server)
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .args(extra)
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut master = redis_server(master_port, &[]);
    let mut replica = redis_server(
        replica_port,
        &[
            "--replicaof".into(),
            "127.0.0.1".into(),
            master_port.to_string(),
        ],
    );
    let config = dir.join("sentinel.conf");
    std::fs::write(
        &config,
        format!(
            "port {sentinel_port}\nbind 127.0.0.1\ndir {}\n\
             sentinel monitor hookd 127.0.0.1 {master_port} 1\n\
             sentinel down-after-milliseconds hookd 1000\n\
             sentinel failover-timeout hookd 5000\n",
            dir.display()
        ),
    )
    .unwrap();
    let mut sentinel = Command::new(&server)
        .arg(&config)
        .arg("--sentinel")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let sentinel_url = format!("redis://127.0.0.1:{sentinel_port}");
    let master_now = || async {
        let mut conn = redis::Client::open(sentinel_url.as_str())
            .ok()?
            .get_multiplexed_async_connection()
            .await
            .ok()?;
        let answer: Option<(String, u16)> = redis::cmd("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg("hookd")
            .query_async(&mut conn)
            .await
            .ok()?;
        answer.map(|(_, port)| port)
    };
    let knows_replica = || async {
        let mut conn = redis::Client::open(sentinel_url.as_str())
            .ok()?
            .get_multiplexed_async_connection()
            .await
            .ok()?;
        let replicas: Vec<redis::Value> = redis::cmd("SENTINEL")
            .arg("replicas")
            .arg("hookd")
            .query_async(&mut conn)
            .await
            .ok()?;
        Some(!replicas.is_empty())
    };
    for _ in 0..600 {
        if knows_replica().await == Some(true) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    reset(pool).await;
    received.reset();
    let client = reqwest::Client::new();
    let prefix = "bench-heal-sentinel";
    let sentinels = format!("[\"127.0.0.1:{sentinel_port}\"]");
    let hookd = Hookd::start_with(
        database_url,
        "redis://127.0.0.1:1",
        prefix,
        "all",
        &[("HOOKD_REDIS__SENTINELS", sentinels.as_str())],
    )
    .await;
    let endpoint = create_endpoint(&client, &hookd, receiver_url).await;
    marked(
        &mut redis(&format!("redis://127.0.0.1:{master_port}")).await,
        prefix,
    )
    .await;
    let due_ms = Utc::now().timestamp_millis() + 2000;
    post_batches(&client, &hookd.base, waiting(&endpoint, WAITING, due_ms), 4).await;
    let _ = master.kill();
    let killed = Instant::now();
    // Creates go on through the failover: 5 × 1,000, one every 500 ms.
    for _ in 0..5 {
        let now = Utc::now().timestamp_millis();
        post_batches(&client, &hookd.base, waiting(&endpoint, 1000, now), 1).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    while master_now().await != Some(replica_port) {
        assert!(killed.elapsed() < Duration::from_secs(60), "no failover");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let promoted = killed.elapsed();
    let created = WAITING as i64 + 5000;
    wait_count(received, created as u64, Duration::from_secs(120)).await;
    // Every create was accepted (post_batches asserts it); wait until every
    // outcome is recorded, then count what the receiver got twice.
    loop {
        let succeeded: i64 =
            sqlx::query_scalar("SELECT count(*) FROM notifications WHERE status = 'succeeded'")
                .fetch_one(pool)
                .await
                .unwrap();
        if succeeded == created {
            break;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(180),
            "{succeeded} of {created} succeeded"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    hookd.stop();
    let duplicates = received.count.load(Ordering::SeqCst) as i64 - created;
    println!(
        "heal: Sentinel failover (kill -9 of the master, promoted after {:.1} s): {created} created, every create accepted, all succeeded, {duplicates} sent twice; the last arrived {} ms after it was due",
        promoted.as_secs_f64(),
        latest(received)
    );
    for child in [&mut replica, &mut sentinel, &mut master] {
        let _ = child.kill();
        let _ = child.wait();
    }
    let _ = std::fs::remove_dir_all(&dir);
}
