//! A master lost mid-traffic on a cluster of the test's own (killed with
//! `kill -9`, hung with SIGSTOP, or hung when it was the only seed): its
//! replica takes over and every notification arrives. What a hung master
//! does to the index and to readiness meanwhile is in `hung`.

mod hung;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use hookd::due::redis::ShardedIndex;
use hookd::due::DueIndex;
use reqwest::Method;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

use super::{shop, spawn_with, submit, DEADLINE};
use crate::helpers::{eventually, free_port, RedisServer};
use crate::receiver::Receiver;

/// A cluster of this test's own: 3 masters and 3 replicas on free ports
/// (bus ports 10000 above), failing over within about a second, and
/// serving the slots it can while one master's wait for a replica
/// (`cluster-require-full-coverage no`, as docs/redis-cluster.md advises).
struct OwnCluster {
    nodes: Vec<RedisServer>,
    /// The ports of the nodes killed or paused.
    lost: Vec<u16>,
    _dir: tempfile::TempDir,
}

impl OwnCluster {
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut nodes = Vec::new();
        while nodes.len() < 6 {
            let port = free_port();
            if port > 55_000 || std::net::TcpListener::bind(("127.0.0.1", port + 10_000)).is_err() {
                continue;
            }
            let conf = dir.path().join(format!("nodes-{port}.conf"));
            let conf = conf.to_str().unwrap();
            let args = [
                "--cluster-enabled",
                "yes",
                "--cluster-node-timeout",
                "1000",
                "--cluster-require-full-coverage",
                "no",
                "--cluster-config-file",
                conf,
                "--dir",
                dir.path().to_str().unwrap(),
            ];
            nodes.push(RedisServer::start_with(port, &args).await);
        }
        let cli = std::env::var("HOOKD_TEST_REDIS_CLI").unwrap_or_else(|_| "redis-cli".into());
        let status = std::process::Command::new(cli)
            .arg("--cluster")
            .arg("create")
            .args(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)))
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdout(std::process::Stdio::null())
            .status()
            .expect("redis-cli runs (HOOKD_TEST_REDIS_CLI)");
        assert!(status.success(), "redis-cli --cluster create");
        let cluster = Self {
            nodes,
            lost: Vec::new(),
            _dir: dir,
        };
        cluster.wait_ok().await;
        cluster
    }

    fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// The ports of the masters that serve slots, as a live node sees them.
    async fn masters(&self) -> Vec<u16> {
        for node in self.nodes.iter().filter(|n| !self.lost.contains(&n.port)) {
            let Ok(mut conn) = redis_ha_conn(&node.url()).await else {
                continue;
            };
            let Ok(text) = redis::cmd("CLUSTER")
                .arg("NODES")
                .query_async::<String>(&mut conn)
                .await
            else {
                continue;
            };
            // id, ip:port@bus, flags, master, ping, pong, epoch, link, slots…
            return text
                .lines()
                .map(|line| line.split(' ').collect::<Vec<_>>())
                .filter(|f| f.len() > 8 && f[2].contains("master") && !f[2].contains("fail"))
                .filter_map(|f| f[1].split(['@', ':']).nth(1)?.parse().ok())
                .collect();
        }
        Vec::new()
    }

    /// The port of the replica of the master at `port`, as a live node
    /// sees it.
    async fn replica_of(&self, port: u16) -> u16 {
        let text = self.nodes_seen().await;
        // id, ip:port@bus, flags, master id (a replica's), …
        let nodes: Vec<Vec<&str>> = text.lines().map(|l| l.split(' ').collect()).collect();
        let port_of = |fields: &[&str]| fields[1].split(['@', ':']).nth(1)?.parse::<u16>().ok();
        let master = nodes.iter().find(|f| port_of(f) == Some(port));
        let master = master.unwrap_or_else(|| panic!("no node on {port}: {text}"))[0];
        nodes
            .iter()
            .find(|f| f.len() > 3 && f[3] == master)
            .and_then(|f| port_of(f))
            .unwrap_or_else(|| panic!("no replica of {port}: {text}"))
    }

    /// `CLUSTER NODES`, as a live node sees it.
    async fn nodes_seen(&self) -> String {
        redis::cmd("CLUSTER")
            .arg("NODES")
            .query_async(&mut self.live().await)
            .await
            .unwrap()
    }

    /// A connection to the first node not lost.
    async fn live(&self) -> redis::aio::MultiplexedConnection {
        let node = self.nodes.iter().find(|n| !self.lost.contains(&n.port));
        redis_ha_conn(&node.unwrap().url()).await.unwrap()
    }

    /// The slot of `key`, as a live node computes it.
    async fn slot_of(&self, key: &str) -> u16 {
        redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query_async(&mut self.live().await)
            .await
            .unwrap()
    }

    /// The port of the master serving `slot`, as a live node sees it.
    async fn serving(&self, slot: u16) -> u16 {
        let text = self.nodes_seen().await;
        // id, ip:port@bus, flags, master, ping, pong, epoch, link, slots…
        for fields in text.lines().map(|line| line.split(' ').collect::<Vec<_>>()) {
            let serves = fields.iter().skip(8).any(|range| {
                let mut bounds = range.splitn(2, '-').map(|b| b.parse::<u16>());
                match (bounds.next(), bounds.next()) {
                    (Some(Ok(first)), Some(Ok(last))) => (first..=last).contains(&slot),
                    (Some(Ok(only)), None) => only == slot,
                    _ => false,
                }
            });
            if serves && fields[2].contains("master") {
                return fields[1].split(['@', ':']).nth(1).unwrap().parse().unwrap();
            }
        }
        panic!("no master serves slot {slot}: {text}");
    }

    /// The master serving the most of `index`'s shards: its port, its
    /// shards, and the others'.
    async fn busiest_master(&self, index: &ShardedIndex) -> (u16, Vec<usize>, Vec<usize>) {
        let mut by_master: HashMap<u16, Vec<usize>> = HashMap::new();
        for (n, shard) in index.shards().iter().enumerate() {
            let slot = self.slot_of(&format!("{{{}}}", shard.tag())).await;
            by_master
                .entry(self.serving(slot).await)
                .or_default()
                .push(n);
        }
        let (&busiest, _) = (by_master.iter())
            .max_by_key(|(_, shards)| shards.len())
            .unwrap();
        let theirs = by_master.remove(&busiest).unwrap();
        let others: Vec<usize> = by_master.into_values().flatten().collect();
        assert!(!others.is_empty(), "every shard on one master");
        (busiest, theirs, others)
    }

    /// Until every live node says `cluster_state:ok`, and every replica
    /// has synced with its master.
    async fn wait_ok(&self) {
        eventually(DEADLINE, "cluster_state:ok on every node", || async {
            for node in self.nodes.iter().filter(|n| !self.lost.contains(&n.port)) {
                let mut conn = redis_ha_conn(&node.url()).await.ok()?;
                let info: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query_async(&mut conn)
                    .await
                    .ok()?;
                info.contains("cluster_state:ok").then_some(())?;
                // A replica that never synced refuses to take over (its
                // data counts as too old): wait for every link.
                let replication: String = redis::cmd("INFO")
                    .arg("replication")
                    .query_async(&mut conn)
                    .await
                    .ok()?;
                let syncing = replication.contains("role:slave")
                    && !replication.contains("master_link_status:up");
                (!syncing).then_some(())?;
            }
            Some(())
        })
        .await;
    }
}

async fn redis_ha_conn(url: &str) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
    redis::Client::open(url)?
        .get_multiplexed_async_connection()
        .await
}

#[sqlx::test]
async fn a_master_killed_mid_traffic_fails_over_to_its_replica_and_loses_nothing(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    fails_over_and_loses_nothing(pool, Lost::Killed).await;
}

/// A master that hangs keeps its sockets open and answers nothing, so the
/// client's slot map keeps pointing at it after its replica took over: no
/// `MOVED` ever comes back to correct it. hookd renews its cluster
/// connection when commands keep failing (`due::redis::link`).
#[sqlx::test]
async fn a_master_that_hangs_mid_traffic_is_failed_over_and_its_slots_are_served_again(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    fails_over_and_loses_nothing(pool, Lost::Hung).await;
}

/// A deployment that names one node of the cluster (its seed) keeps
/// delivering when that node hangs: the renewal of the connection reads the
/// slot map through the nodes the old connection still reaches, not from
/// the seed alone, which it once did, for as long as the seed hung.
#[sqlx::test]
async fn a_hung_master_that_was_the_only_seed_is_failed_over_and_its_slots_are_served_again(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    fails_over_and_loses_nothing(pool, Lost::HungSeed).await;
}

/// How a master is lost mid-traffic.
enum Lost {
    /// `kill -9`: no goodbye to the cluster, no last write; its sockets close.
    Killed,
    /// SIGSTOP, for the rest of the test: its sockets stay open.
    Hung,
    /// Hung, and the only seed node hookd was given: a renewal of the
    /// connection must find the cluster through the nodes it already knows.
    HungSeed,
}

/// 5,000 notifications wait in the cluster, one master is lost, its replica
/// takes over: every notification arrives.
async fn fails_over_and_loses_nothing(pool: PgPool, lost: Lost) {
    let mut cluster = OwnCluster::start().await;
    // A claim whose answer died with the master (or came too late on a busy
    // machine) left its leases behind: they come back when they expire, 12 s
    // on (the shortest lease a 5 s attempt timeout allows), within the test.
    let overrides = "lease_ms = 12000\n[sender]\ntimeout_ms = 5000\n";
    let masters = cluster.masters().await;
    assert_eq!(masters.len(), 3, "{masters:?}");
    let seeds = match lost {
        Lost::HungSeed => vec![format!("redis://127.0.0.1:{}", masters[0])],
        Lost::Killed | Lost::Hung => cluster.urls(),
    };
    let (app, index) = spawn_with(pool, &seeds, overrides).await;
    let receiver = Receiver::start().await;
    shop(&app, &index, &receiver).await;
    // Due in 4 s: (nearly) all 5,000 wait in the index when the master is
    // lost, some of them written to it too recently to have reached its
    // replica.
    let ids = submit(&app, 5_000, "4s").await;

    let victim = cluster.nodes.iter_mut().find(|n| n.port == masters[0]);
    let victim = victim.unwrap();
    match lost {
        Lost::Killed => victim.kill(),
        Lost::Hung | Lost::HungSeed => victim.pause(),
    }
    cluster.lost.push(masters[0]);
    eventually(
        DEADLINE,
        "a replica to take the lost master's slots",
        || async {
            let now = cluster.masters().await;
            (now.len() == 3 && !now.contains(&masters[0])).then_some(())
        },
    )
    .await;
    cluster.wait_ok().await;

    // 5,000 deliveries after a failover, beside the rest of the suite on
    // two cores: a deadline for the machine's load, not for hookd.
    let deadline = std::time::Instant::now() + 3 * DEADLINE;
    let (distinct, total) = loop {
        let (distinct, total) = receiver.distinct("/hook");
        if distinct == ids.len() || std::time::Instant::now() > deadline {
            break (distinct, total);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // Should some be missing: (due, leased) left in the index, and what
    // hookd says of a few of them.
    let depth = index.depth().await;
    let mut missing = Vec::new();
    if distinct < ids.len() {
        let arrived: HashSet<String> = receiver
            .received("/hook")
            .iter()
            .filter_map(|r| r.header("webhook-id").map(str::to_string))
            .collect();
        for id in ids
            .iter()
            .filter(|id| !arrived.contains(&id.to_string()))
            .take(3)
        {
            let path = format!("/v1/notifications/{id}");
            missing.push(app.call(Method::GET, &path, None).await.1);
        }
    }
    assert_eq!(
        distinct, 5_000,
        "none lost; the index holds {depth:?}; missing, for example: {missing:?}"
    );
    // Deliveries in flight on the lost master may be sent again (their
    // leases died with it): at most the in-flight cap.
    assert!(total - distinct <= 1024, "{} duplicates", total - distinct);
}
