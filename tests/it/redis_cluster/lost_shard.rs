//! One shard of the cluster's index lost (its keys gone, as a master that
//! failed over empty leaves them): only that shard is rebuilt, which the
//! rebuild metric shows, and the other shards deliver meanwhile. The real
//! binary runs here, since its `/metrics` are its own: in-process test apps
//! share the test process's registry, where other tests bump the counts.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;
use uuid::Uuid;

use super::{cluster_nodes, SHARDS};
use crate::helpers::{
    database_url, eventually, free_port, http_client, new_prefix, redis_url,
    test_settings_with_prefix, HookdProcess, TOKEN,
};
use crate::receiver::Receiver;
use hookd::due::redis::ShardedIndex;

const DEADLINE: Duration = Duration::from_secs(60);

/// A `hookd serve` on the shared cluster, under `prefix`, and its HTTP base.
struct Process {
    _hookd: HookdProcess,
    base: String,
    client: reqwest::Client,
    log: std::path::PathBuf,
}

impl Process {
    async fn start(pool: &PgPool, prefix: &str) -> Self {
        let listen = format!("127.0.0.1:{}", free_port());
        let log = std::env::temp_dir().join(format!("hookd-lost-shard-{prefix}.log"));
        let cluster: Vec<String> = cluster_nodes().iter().map(|n| format!("\"{n}\"")).collect();
        let cluster = format!("[{}]", cluster.join(","));
        let tokens = format!("[\"{TOKEN}\"]");
        let shards = SHARDS.to_string();
        let env = [
            ("HOOKD_REDIS__CLUSTER", cluster.as_str()),
            ("HOOKD_REDIS__SHARDS", shards.as_str()),
            ("HOOKD_API__TOKENS", tokens.as_str()),
            ("HOOKD_DISPATCHER__ENDPOINT_MAX_IN_FLIGHT", "512"),
        ];
        let hookd = HookdProcess::start_logged(
            &database_url(pool),
            &redis_url(),
            prefix,
            &env,
            &listen,
            &log,
        );
        let base = format!("http://{listen}");
        HookdProcess::wait_ready(&base, DEADLINE).await;
        Self {
            _hookd: hookd,
            base,
            client: http_client(),
            log,
        }
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        let response = self
            .client
            .post(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap();
        (
            response.status(),
            response.json().await.unwrap_or(Value::Null),
        )
    }

    /// `hookd_index_rebuilds_total` by shard, from the process's `/metrics`.
    async fn rebuilds(&self) -> BTreeMap<u16, f64> {
        let metrics = crate::helpers::scrape_metrics(&self.client, &self.base).await;
        metrics
            .lines()
            .filter_map(|line| line.strip_prefix("hookd_index_rebuilds_total{shard=\""))
            .filter_map(|rest| {
                let (shard, rest) = rest.split_once('"')?;
                let count = rest.rsplit(' ').next()?.parse().ok()?;
                Some((shard.parse().ok()?, count))
            })
            .collect()
    }

    /// Creates `count` notifications for `shop`, 500 a request; their ids.
    async fn submit(&self, count: usize, delay: &str) -> Vec<Uuid> {
        let mut ids = Vec::new();
        for start in (0..count).step_by(500) {
            let items: Vec<Value> = (start..count.min(start + 500))
                .map(|i| json!({"endpoint": "shop", "payload": {"i": i}, "delay": delay}))
                .collect();
            let (status, body) = self
                .post("/v1/notifications/batch", json!({"notifications": items}))
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            for item in body["data"].as_array().unwrap() {
                assert_eq!(item["status"], 201, "{item}");
                let id = item["notification"]["id"].as_str().unwrap();
                ids.push(id.parse().unwrap());
            }
        }
        ids
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Every key of shard `n`'s index but its buckets (which a rebuild finds
/// by SCAN): what a master that failed over empty leaves of it. Its rebuild
/// lock is taken first, as by another process rebuilding it, until
/// `let_rebuild`: meanwhile the shard stays lost.
async fn lose_shard(index: &ShardedIndex, n: usize) {
    let shard = &index.shards()[n];
    let keys = shard.keys();
    let _: () = redis::pipe()
        .cmd("SET")
        .arg(shard_key(index, n, "rebuild-lock"))
        .arg("another-process")
        .arg("PX")
        // Well beyond every wait of the test: only `let_rebuild` frees it.
        .arg(DEADLINE.as_millis() as u64 * 10)
        .ignore()
        .del(shard_key(index, n, "indexed"))
        .del(&keys.due)
        .del(&keys.ranges)
        .del(&keys.count)
        .del(&keys.inflight)
        .query_async(&mut cluster_conn().await)
        .await
        .unwrap();
}

async fn let_rebuild(index: &ShardedIndex, n: usize) {
    let _: () = redis::cmd("DEL")
        .arg(shard_key(index, n, "rebuild-lock"))
        .query_async(&mut cluster_conn().await)
        .await
        .unwrap();
}

fn shard_key(index: &ShardedIndex, n: usize, name: &str) -> String {
    let shard = &index.shards()[n];
    format!("{}:{{{}}}:{name}", shard.prefix(), shard.tag())
}

async fn cluster_conn() -> redis::cluster_async::ClusterConnection {
    redis::cluster::ClusterClient::new(cluster_nodes())
        .unwrap()
        .get_async_connection()
        .await
        .unwrap()
}

async fn markers(index: &ShardedIndex) -> Vec<Option<String>> {
    let mut conn = cluster_conn().await;
    let mut values = Vec::new();
    for n in 0..index.shards().len() {
        let value: Option<String> = redis::cmd("GET")
            .arg(shard_key(index, n, "indexed"))
            .query_async(&mut conn)
            .await
            .unwrap();
        values.push(value);
    }
    values
}

#[sqlx::test]
async fn a_lost_shard_is_rebuilt_alone_while_the_others_deliver(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let prefix = new_prefix();
    let process = Process::start(&pool, &prefix).await;
    // The same index as the process's, to reach its keys.
    let nodes: Vec<String> = cluster_nodes().iter().map(|n| format!("\"{n}\"")).collect();
    let redis = format!(
        "[redis]\ncluster = [{}]\nshards = {SHARDS}\n",
        nodes.join(", ")
    );
    let settings = test_settings_with_prefix(&redis_url(), &prefix, &redis);
    let index = ShardedIndex::new(&settings.redis).unwrap();
    let receiver = Receiver::start().await;
    let (status, body) = process
        .post(
            "/v1/endpoints",
            json!({"uid": "shop", "url": receiver.url("/hook")}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    for shard in index.shards() {
        eventually(DEADLINE, "every shard's marker", || async {
            shard.is_indexed().await.ok().filter(|built| *built)
        })
        .await;
    }
    let lost: u16 = 5;
    let later = process.submit(800, "2s").await;
    let before = markers(&index).await;
    // Each shard was built once at start, counted once it was marked.
    let rebuilt_before = eventually(DEADLINE, "every shard's first build counted", || async {
        let counted = process.rebuilds().await;
        let all = (0..SHARDS).all(|shard| counted.get(&shard) == Some(&1.0));
        all.then_some(counted)
    })
    .await;
    lose_shard(&index, usize::from(lost)).await;

    // While the lost shard waits for its rebuild, every shard delivers what
    // is created now (the write path indexes new rows in the lost shard too).
    let now = process.submit(400, "0s").await;
    eventually(DEADLINE, "what was created now, delivered", || async {
        let got: HashSet<String> = receiver
            .received("/hook")
            .iter()
            .filter_map(|r| r.header("webhook-id").map(str::to_string))
            .collect();
        now.iter()
            .all(|id| got.contains(&id.to_string()))
            .then_some(())
    })
    .await;
    assert_eq!(
        markers(&index).await[usize::from(lost)],
        None,
        "not rebuilt yet"
    );
    assert_eq!(process.rebuilds().await, rebuilt_before, "none rebuilt yet");

    let_rebuild(&index, usize::from(lost)).await;
    let rebuilt = eventually(
        DEADLINE,
        "the lost shard's rebuild in the metric",
        || async {
            let now = process.rebuilds().await;
            (now.get(&lost) > rebuilt_before.get(&lost)).then_some(now)
        },
    )
    .await;
    let (distinct, _) = receiver
        .wait_distinct("/hook", later.len() + now.len(), DEADLINE)
        .await;
    assert_eq!(distinct, 1200, "none of the lost shard's rows is lost");
    // One rebuild, of the lost shard alone.
    let mut expected = rebuilt_before.clone();
    *expected.entry(lost).or_default() += 1.0;
    assert_eq!(rebuilt, expected);
    assert_eq!(process.rebuilds().await, expected, "and none since");
    let after = markers(&index).await;
    for (n, (was, is)) in before.iter().zip(&after).enumerate() {
        if n == usize::from(lost) {
            assert!(is.is_some() && is != was, "shard {n} was marked anew");
        } else {
            assert_eq!(was, is, "shard {n} was not rebuilt");
        }
    }
}
