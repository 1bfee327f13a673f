//! The warning that Redis may evict the due index asks every master of a
//! cluster: a policy set on one master alone is reported, naming it, by
//! `/readyz`'s warnings and by `hookd config check`. One server's is
//! reported as before.

use std::time::Duration;

use hookd::due::redis::{inspect, open};
use hookd::due::DueIndex;

use super::{cluster_index, cluster_nodes, cluster_settings};
use crate::helpers::{free_port, test_settings, RedisServer};

/// The addresses (`host:port`) of the shared cluster's masters.
async fn masters() -> Vec<String> {
    let mut conn = redis::Client::open(cluster_nodes()[0].as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let nodes: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query_async(&mut conn)
        .await
        .unwrap();
    // id, ip:port@bus, flags, …
    nodes
        .lines()
        .map(|line| line.split(' ').collect::<Vec<_>>())
        .filter(|f| f.len() > 2 && f[2].contains("master") && !f[2].contains("fail"))
        .filter_map(|f| Some(f[1].split('@').next()?.to_string()))
        .collect()
}

async fn set_policy(master: &str, policy: &str) {
    let mut conn = redis::Client::open(format!("redis://{master}"))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory-policy")
        .arg(policy)
        .query_async(&mut conn)
        .await
        .unwrap();
}

#[tokio::test]
async fn an_evicting_policy_on_any_one_master_is_warned_of() {
    let index = cluster_index();
    let masters = masters().await;
    assert_eq!(masters.len(), 3, "{masters:?}");
    assert!(index.warnings().await.is_empty());
    // Each master in turn, the others left at noeviction: one node asked
    // at random would miss most of them.
    let settings = cluster_settings(&cluster_nodes(), "");
    for master in &masters {
        set_policy(master, "allkeys-lru").await;
        let warnings = index.warnings().await;
        let checked = inspect(&settings.redis, Duration::from_secs(2)).await;
        set_policy(master, "noeviction").await;
        for warnings in [warnings, checked] {
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            assert!(
                warnings[0].contains("allkeys-lru")
                    && warnings[0].contains(&format!("master {master}")),
                "{warnings:?}"
            );
        }
    }
}

#[tokio::test]
async fn an_evicting_policy_on_one_redis_is_warned_of_as_before() {
    let server = RedisServer::start_with(free_port(), &["--maxmemory-policy", "allkeys-lru"]).await;
    let settings = test_settings(&server.url(), "");
    let index = open(&settings.redis).await.unwrap();
    let checked = inspect(&settings.redis, Duration::from_secs(2)).await;
    for warnings in [index.warnings().await, checked] {
        assert_eq!(
            warnings,
            ["Redis maxmemory-policy is allkeys-lru: it may evict hookd's due index; set it to noeviction"]
        );
    }
}
