//! Redis behind Sentinel: a failover mid-traffic loses nothing, hookd
//! follows the master the sentinels name, a wrong master name reads
//! otherwise than sentinels all down, and the documented configuration
//! starts server mode.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use super::{redis, shop, submit, DEADLINE};
use crate::helpers::{
    database_url, eventually, free_port, http_client, new_prefix, redis_url, spawn_app_with,
    test_settings, HookdProcess, RedisServer, TestApp,
};
use crate::receiver::Receiver;

/// A sentinel watching `master` as `hookd`, quick to fail over.
struct Sentinel {
    child: Child,
    port: u16,
    dir: std::path::PathBuf,
}

impl Sentinel {
    async fn start(master: u16) -> Self {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("hookd-sentinel-{port}"));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("sentinel.conf");
        std::fs::write(
            &config,
            format!(
                "port {port}\nbind 127.0.0.1\ndir {}\n\
                 sentinel monitor hookd 127.0.0.1 {master} 1\n\
                 sentinel down-after-milliseconds hookd 1000\n\
                 sentinel failover-timeout hookd 5000\n\
                 sentinel parallel-syncs hookd 1\n",
                dir.display()
            ),
        )
        .unwrap();
        let binary =
            std::env::var("HOOKD_TEST_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        let child = Command::new(binary)
            .arg(&config)
            .arg("--sentinel")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server --sentinel starts");
        eventually(Duration::from_secs(10), "the sentinel", || async {
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .ok()
                .map(|_| ())
        })
        .await;
        Self { child, port, dir }
    }

    /// The port of the master it names now.
    async fn master_port(&self) -> Option<u16> {
        let mut conn = redis::Client::open(format!("redis://127.0.0.1:{}", self.port))
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
    }
}

/// hookd that finds its master through `sentinel` (as `hookd`), and
/// `shop` on a receiver of its own.
async fn shop_via(pool: sqlx::PgPool, sentinel: &Sentinel) -> (TestApp, Receiver) {
    let overrides = format!(
        "[redis]\nsentinels = [\"127.0.0.1:{}\"]\nmaster_name = \"hookd\"\n",
        sentinel.port
    );
    // The url's address is unused: the sentinel names the master.
    let app = spawn_app_with(pool, "redis://127.0.0.1:1", &overrides).await;
    let receiver = Receiver::start().await;
    shop(&app, &receiver).await;
    (app, receiver)
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[sqlx::test]
async fn a_sentinel_failover_mid_traffic_loses_nothing(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let mut master = RedisServer::start().await;
    let replica_port = free_port();
    let master_arg = master.port.to_string();
    let _replica = RedisServer::start_with(
        replica_port,
        &["--replicaof", "127.0.0.1", master_arg.as_str()],
    )
    .await;
    let sentinel = Sentinel::start(master.port).await;
    eventually(DEADLINE, "the sentinel to see the master", || async {
        sentinel.master_port().await.filter(|p| *p == master.port)
    })
    .await;
    eventually(DEADLINE, "the sentinel to know the replica", || async {
        let mut conn = redis::Client::open(format!("redis://127.0.0.1:{}", sentinel.port))
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
        (!replicas.is_empty()).then_some(())
    })
    .await;
    let (app, receiver) = shop_via(pool, &sentinel).await;

    let mut accepted = submit(&app, 1000, "1s").await;
    master.kill();
    // Creates go on while the sentinel notices and promotes the replica.
    for _ in 0..10 {
        accepted += submit(&app, 200, "0s").await;
    }
    eventually(DEADLINE, "the sentinel to promote the replica", || async {
        sentinel.master_port().await.filter(|p| *p == replica_port)
    })
    .await;
    accepted += submit(&app, 1000, "0s").await;
    assert_eq!(accepted, 4000, "every create is accepted, Redis or not");
    let (distinct, total) = receiver.wait_distinct("/hook", 4000, DEADLINE).await;
    assert_eq!(distinct, 4000);
    // Deliveries in flight when the master died may be sent again (their
    // leases were lost with it): at most the in-flight cap.
    assert!(total - distinct <= 1024, "{} duplicates", total - distinct);
}

/// A switchover fails no command: the old master takes writes until the
/// sentinels make it a replica, and what hookd wrote there meanwhile was
/// lost (a review saw a process started meanwhile use the new master
/// beside the others on the old one: two live indexes, 7 deliveries sent
/// twice). Here the sentinel is told to watch another server while the
/// first stays a writable master for good: hookd moves to the one it
/// names, builds its index there and delivers from it, though nothing it
/// sent the old one ever failed.
#[sqlx::test]
async fn hookd_follows_the_master_the_sentinels_name_though_the_old_one_still_answers(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let (old, new) = (RedisServer::start().await, RedisServer::start().await);
    let sentinel = Sentinel::start(old.port).await;
    eventually(DEADLINE, "the sentinel to see the master", || async {
        sentinel.master_port().await.filter(|p| *p == old.port)
    })
    .await;
    let (app, receiver) = shop_via(pool, &sentinel).await;
    assert_eq!(submit(&app, 10, "0s").await, 10);
    receiver.wait_distinct("/hook", 10, DEADLINE).await;

    let mut asking = redis(&format!("redis://127.0.0.1:{}", sentinel.port)).await;
    let () = redis::cmd("SENTINEL")
        .arg("REMOVE")
        .arg("hookd")
        .query_async(&mut asking)
        .await
        .unwrap();
    let () = redis::cmd("SENTINEL")
        .arg("MONITOR")
        .arg("hookd")
        .arg("127.0.0.1")
        .arg(new.port)
        .arg(1)
        .query_async(&mut asking)
        .await
        .unwrap();
    let on_new = redis(&format!("redis://127.0.0.1:{}", new.port)).await;
    eventually(
        DEADLINE,
        "hookd's index on the master named now",
        || async {
            let keys: i64 = redis::cmd("DBSIZE")
                .query_async(&mut on_new.clone())
                .await
                .ok()?;
            (keys > 0).then_some(())
        },
    )
    .await;
    assert_eq!(submit(&app, 10, "0s").await, 10);
    let (distinct, _) = receiver.wait_distinct("/hook", 20, DEADLINE).await;
    assert_eq!(distinct, 20);
    let role: Vec<redis::Value> = redis::cmd("ROLE")
        .query_async(&mut redis(&format!("redis://127.0.0.1:{}", old.port)).await)
        .await
        .unwrap();
    assert_eq!(
        role.first(),
        Some(&redis::Value::BulkString(b"master".to_vec())),
        "the old server is still a master: nothing made hookd's commands fail"
    );
}

/// Sentinels that answer but know no master by `redis.master_name` read
/// otherwise than sentinels that are all down: the error names the name
/// and each sentinel asked, with what it answered (a review found a wrong
/// name told as "no sentinel named a master for redis.master_name", and
/// sentinels all down as a bare "Connection refused (os error 111)").
#[tokio::test]
async fn a_wrong_master_name_reads_otherwise_than_sentinels_all_down() {
    let master = RedisServer::start().await;
    let sentinel = Sentinel::start(master.port).await;
    eventually(DEADLINE, "the sentinel to see the master", || async {
        sentinel.master_port().await.filter(|p| *p == master.port)
    })
    .await;
    let answering = format!("127.0.0.1:{}", sentinel.port);
    let down = format!("127.0.0.1:{}", free_port());
    for (address, name, says) in [
        (&answering, "nosuch", "knows no master by that name"),
        (&down, "hookd", "refused"),
    ] {
        let settings = test_settings(
            &redis_url(),
            &format!("[redis]\nsentinels = [\"{address}\"]\nmaster_name = \"{name}\"\n"),
        );
        let index = hookd::due::redis::open(&settings.redis).await.unwrap();
        let error = index.ping().await.expect_err("no master").to_string();
        for part in [
            format!("`{name}`"),
            format!("{address}: "),
            says.to_string(),
        ] {
            assert!(error.contains(&part), "{part} in: {error}");
        }
    }
}

/// #47: the Sentinel configuration docs/operating.md shows, exactly:
/// `redis.sentinels` and `redis.master_name`, no `redis.url`. It once exited
/// 78 ("database.url is set but redis.url is empty"): the mode counted a
/// cluster as Redis, not sentinels.
#[sqlx::test]
async fn the_documented_sentinel_configuration_without_redis_url_starts_server_mode(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let master = RedisServer::start().await;
    let sentinel = Sentinel::start(master.port).await;
    eventually(DEADLINE, "the sentinel to see the master", || async {
        sentinel.master_port().await.filter(|p| *p == master.port)
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hookd.toml");
    let listen = format!("127.0.0.1:{}", free_port());
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"{listen}\"\n\
             [database]\nurl = \"{}\"\n\
             [redis]\nsentinels = [\"127.0.0.1:{}\"]\nmaster_name = \"hookd\"\n\
             prefix = \"{}\"\n\
             [sender]\nallow_networks = [\"127.0.0.0/8\"]\n",
            database_url(&pool),
            sentinel.port,
            new_prefix()
        ),
    )
    .unwrap();
    let hookd = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_hookd"));
        command
            .env_remove("RUST_LOG")
            .env("HOOKD_LOG__FILTER", "warn");
        command
    };

    let check = hookd()
        .args(["config", "check", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&check.stdout).to_string()
        + &String::from_utf8_lossy(&check.stderr);
    assert!(check.status.success(), "config check: {printed}");
    assert!(
        printed.contains("server (database.url and redis.sentinels are set)"),
        "config check names the mode: {printed}"
    );

    let child = hookd()
        .args(["serve", "--config"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut process = HookdProcess { child };
    let base = format!("http://{listen}");
    HookdProcess::wait_ready(&base, DEADLINE).await;
    let receiver = Receiver::start().await;
    let client = http_client();
    let created = client
        .post(format!("{base}/v1/endpoints"))
        .json(&json!({"uid": "shop", "url": receiver.url("/hook")}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let sent = client
        .post(format!("{base}/v1/notifications"))
        .json(&json!({"endpoint": "shop", "payload": {"order": 1}}))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), StatusCode::CREATED);
    receiver.wait_for("/hook", 1, DEADLINE).await;
    // The due index lives on the master the sentinel named.
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut redis(&format!("redis://127.0.0.1:{}", master.port)).await)
        .await
        .unwrap();
    assert!(!keys.is_empty(), "hookd wrote its index to the master");
    process.signal("TERM");
    assert_eq!(process.wait(DEADLINE).await, Some(0));
}
