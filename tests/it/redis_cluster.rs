//! The due index on a real Redis Cluster (3 masters, 3 replicas), in
//! server mode (the cluster is a server-mode component): deliveries spread
//! over every shard, claims that take from every shard by turns, one
//! shard lost and rebuilt alone while the others deliver, and a master
//! lost mid-traffic (killed with `kill -9`, or hung with SIGSTOP). The
//! shared cluster comes from `scripts/test` (`HOOKD_TEST_REDIS_CLUSTER`);
//! the failover tests start one of their own, since a lost master changes
//! the cluster for whoever comes next. The due-index conformance suite runs on the cluster too
//! (`due_conformance::cluster`).

mod eviction;
mod lost_master;
mod lost_shard;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use hookd::config::Settings;
use hookd::domain::id::new_id;
use hookd::domain::shard::shard_of;
use hookd::due::redis::{inspect, open, ShardedIndex};
use hookd::due::DueIndex;
use hookd::startup::{App, Role};
use hookd::store::postgres::PgStore;
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;
use uuid::Uuid;

use crate::helpers::{
    eventually, new_prefix, redis_url, test_settings, test_settings_with_prefix, TestApp,
};
use crate::receiver::Receiver;

const DEADLINE: Duration = Duration::from_secs(60);
pub const SHARDS: u16 = 16;

/// The shared cluster's nodes, as `scripts/test` started them.
pub fn cluster_nodes() -> Vec<String> {
    std::env::var("HOOKD_TEST_REDIS_CLUSTER")
        .expect("HOOKD_TEST_REDIS_CLUSTER is set: run the suite with scripts/test")
        .split(',')
        .map(str::to_string)
        .collect()
}

/// Test settings on the cluster `nodes`, in `SHARDS` shards.
pub fn cluster_settings(nodes: &[String], overrides: &str) -> Settings {
    let cluster: Vec<String> = nodes.iter().map(|n| format!("\"{n}\"")).collect();
    let redis = format!(
        "[redis]\ncluster = [{}]\nshards = {SHARDS}\n",
        cluster.join(", ")
    );
    // `url` stays set (the helper needs one) and is unused in cluster mode.
    test_settings(&redis_url(), &format!("{redis}{overrides}"))
}

/// A sharded index on the shared cluster, under a prefix of its own.
pub fn cluster_index() -> ShardedIndex {
    ShardedIndex::new(&cluster_settings(&cluster_nodes(), "").redis).unwrap()
}

/// hookd on the cluster `nodes`, and its index. One endpoint takes up to
/// 512 deliveries at once, so that thousands go through in seconds.
async fn spawn(pool: PgPool, nodes: &[String]) -> (TestApp, Arc<ShardedIndex>) {
    spawn_with(pool, nodes, "").await
}

/// `spawn`, with `overrides` (TOML) that go on in the `[dispatcher]` table.
async fn spawn_with(
    pool: PgPool,
    nodes: &[String],
    overrides: &str,
) -> (TestApp, Arc<ShardedIndex>) {
    let overrides = format!("[dispatcher]\nendpoint_max_in_flight = 512\n{overrides}");
    let settings = cluster_settings(nodes, &overrides);
    let index = Arc::new(ShardedIndex::new(&settings.redis).unwrap());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    let app = App::with_parts(
        settings,
        PgStore::new(pool),
        index.clone(),
        listener,
        Role::All,
    );
    (crate::backends::start(app, None).await, index)
}

/// An endpoint `shop` delivering to `receiver`, once every shard is built.
async fn shop(app: &TestApp, index: &ShardedIndex, receiver: &Receiver) {
    app.endpoint(json!({"uid": "shop", "url": receiver.url("/hook")}))
        .await;
    for shard in index.shards() {
        eventually(DEADLINE, "every shard's marker", || async {
            shard.is_indexed().await.ok().filter(|built| *built)
        })
        .await;
    }
}

/// Creates `count` notifications for `shop`, 500 a request; returns their ids.
async fn submit(app: &TestApp, count: usize, delay: &str) -> Vec<Uuid> {
    let mut ids = Vec::new();
    for start in (0..count).step_by(500) {
        let items: Vec<Value> = (start..count.min(start + 500))
            .map(|i| json!({"endpoint": "shop", "payload": {"i": i}, "delay": delay}))
            .collect();
        let (status, body) = app
            .post("/v1/notifications/batch", json!({"notifications": items}))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        for item in body["data"].as_array().unwrap() {
            assert_eq!(item["status"], 201, "{item}");
            ids.push(
                item["notification"]["id"]
                    .as_str()
                    .unwrap()
                    .parse()
                    .unwrap(),
            );
        }
    }
    ids
}

#[sqlx::test]
async fn notifications_spread_over_every_shard_of_the_cluster_are_all_delivered(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let (app, index) = spawn(pool, &cluster_nodes()).await;
    let receiver = Receiver::start().await;
    shop(&app, &index, &receiver).await;
    let ids = submit(&app, 1000, "0s").await;
    let shards: HashSet<u16> = ids.iter().map(|id| shard_of(id, SHARDS)).collect();
    assert_eq!(shards.len(), usize::from(SHARDS), "every shard holds some");
    let (distinct, _) = receiver.wait_distinct("/hook", 1000, DEADLINE).await;
    assert_eq!(distinct, 1000);
    eventually(DEADLINE, "every lease to end", || async {
        index.depth().await.ok().filter(|depth| *depth == (0, 0))
    })
    .await;
}

#[tokio::test]
async fn a_claim_takes_from_every_shard_by_turns_so_a_backlog_starves_none() {
    let index = cluster_index();
    let now = Utc::now();
    let due = now - chrono::Duration::seconds(1);
    // 200 due in shard 0, 2 in each other shard.
    let (mut backlog, mut others) = (Vec::new(), Vec::new());
    while backlog.len() < 200 || others.len() < 2 * (usize::from(SHARDS) - 1) {
        let id = new_id();
        let shard = shard_of(&id, SHARDS);
        let wanted = others
            .iter()
            .filter(|o| shard_of(o, SHARDS) == shard)
            .count()
            < 2;
        match shard {
            0 if backlog.len() < 200 => backlog.push(id),
            0 => {}
            _ if wanted => others.push(id),
            _ => {}
        }
    }
    let all: Vec<_> = backlog.iter().chain(&others).map(|id| (*id, due)).collect();
    index.add(&all).await.unwrap();

    // As many claims of 10 as there are shards: each starts at another
    // shard, so every small shard is emptied although shard 0 alone could
    // fill every batch.
    let mut claimed = HashSet::new();
    for _ in 0..SHARDS {
        let claim = index
            .claim(now, now, 10, now + chrono::Duration::minutes(5))
            .await
            .unwrap();
        assert_eq!(claim.ids.len(), 10);
        claimed.extend(claim.ids);
    }
    let starved: Vec<_> = others.iter().filter(|id| !claimed.contains(id)).collect();
    assert!(starved.is_empty(), "{} never claimed", starved.len());
}

#[tokio::test]
async fn a_process_counting_other_shards_than_the_index_was_laid_out_with_is_refused() {
    let prefix = new_prefix();
    let four = test_settings_with_prefix(&redis_url(), &prefix, "[redis]\nshards = 4\n");
    open(&four.redis)
        .await
        .expect("the first process records its count");
    let eight = test_settings_with_prefix(&redis_url(), &prefix, "[redis]\nshards = 8\n");
    let refused = open(&eight.redis)
        .await
        .err()
        .expect("another count is refused");
    let reason = refused.to_string();
    assert!(
        reason.contains("redis.shards is 8") && reason.contains("4 shard(s)"),
        "{reason}"
    );
    // Started while Redis did not answer, it refuses at its first command.
    let late = ShardedIndex::new(&eight.redis).unwrap();
    let error = late.depth().await.unwrap_err().to_string();
    assert!(error.contains("redis.shards is 8"), "{error}");
    // The unsharded layout counts as one shard.
    let one = test_settings_with_prefix(&redis_url(), &prefix, "[redis]\nshards = 1\n");
    assert!(open(&one.redis).await.is_err());
}

/// Redis restarted empty loses the recorded count. A process started
/// then with another count records its own, and the running processes
/// went on with theirs: two layouts side by side, each sweep re-adding
/// what the other had leased, every slow delivery sent twice at once (a
/// black-box pass saw it). A running process now records and compares
/// again every second: the one that finds another count pauses, saying
/// why, until the record is its own again.
#[tokio::test]
async fn a_running_process_that_finds_another_count_recorded_after_redis_lost_it_pauses() {
    let prefix = new_prefix();
    let four = test_settings_with_prefix(&redis_url(), &prefix, "[redis]\nshards = 4\n");
    let running = ShardedIndex::new(&four.redis).unwrap();
    running.depth().await.expect("the first command records 4");

    // Redis lost its data; a process counting 8 connects first.
    let mut conn = redis::Client::open(redis_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let key = format!("{prefix}:{{{prefix}}}:shards");
    let () = redis::cmd("DEL")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .unwrap();
    let eight = test_settings_with_prefix(&redis_url(), &prefix, "[redis]\nshards = 8\n");
    open(&eight.redis).await.expect("8 is recorded now");

    let paused = eventually(
        Duration::from_secs(10),
        "the running process to pause",
        || async {
            let _ = running.shards()[0].index_state().await;
            running.depth().await.err()
        },
    )
    .await
    .to_string();
    assert!(
        paused.contains("redis.shards is 4") && paused.contains("8 shard(s)"),
        "{paused}"
    );

    // Its own count recorded again: it goes on.
    let () = redis::cmd("SET")
        .arg(&key)
        .arg(4)
        .query_async(&mut conn)
        .await
        .unwrap();
    eventually(
        Duration::from_secs(10),
        "the running process to go on",
        || async {
            let _ = running.shards()[0].index_state().await;
            running.depth().await.ok()
        },
    )
    .await;
}

#[tokio::test]
async fn a_config_check_records_no_shard_count_and_reports_another() {
    let prefix = new_prefix();
    let limit = Duration::from_secs(1);
    let layout = |warnings: Vec<String>| -> Vec<String> {
        warnings
            .into_iter()
            .filter(|w| w.contains("redis.shards"))
            .collect()
    };
    let eight = test_settings_with_prefix(&redis_url(), &prefix, "[redis]\nshards = 8\n");
    assert!(layout(inspect(&eight.redis, limit).await).is_empty());
    let four = test_settings_with_prefix(&redis_url(), &prefix, "[redis]\nshards = 4\n");
    open(&four.redis)
        .await
        .expect("the check recorded nothing: the first process records its count");
    let reported = layout(inspect(&eight.redis, limit).await);
    assert!(
        reported.len() == 1 && reported[0].contains("redis.shards is 8"),
        "{reported:?}"
    );
    assert!(layout(inspect(&four.redis, limit).await).is_empty());
}
