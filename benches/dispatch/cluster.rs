//! `BENCH_ONLY=cluster`: what sharding the due index over a Redis Cluster
//! costs (#37: ≥ 0.9 of the standalone figure). A backlog of N due-now
//! notifications (BENCH_CLUSTER_COUNT, default 20,000) is drained by two
//! dispatcher-only hookd processes, on the 3-master cluster that
//! scripts/bench starts (16 shards) and on the one standalone Redis (the
//! unsharded layout), alternated within each run (which goes first swaps
//! each run, as the machine's speed drifts); prints the medians and their
//! ratio. BENCH_CLUSTER_PROCESSES=1,2,3,4 repeats it with each number of
//! dispatcher processes (default 2), to see how the drain grows with
//! processes and where it stops.

use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;

use super::{
    create_endpoint, median, payload_bodies, post_batches, reset, settle, wait_count, Hookd,
    Received,
};

const PREFIX: &str = "bench-cluster";

/// Where a drain's index lives.
#[derive(Clone, Copy, PartialEq)]
enum Redis {
    Standalone,
    Cluster,
}

pub async fn scenario(
    pool: &PgPool,
    database_url: &str,
    redis_url: &str,
    received: &Arc<Received>,
    receiver_url: &str,
    runs: usize,
) {
    let Ok(nodes) = std::env::var("HOOKD_TEST_REDIS_CLUSTER") else {
        println!("cluster: skipped (HOOKD_TEST_REDIS_CLUSTER unset; run scripts/bench)");
        return;
    };
    let count: usize = std::env::var("BENCH_CLUSTER_COUNT")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let cluster = format!(
        "[{}]",
        nodes
            .split(',')
            .map(|n| format!("\"{n}\""))
            .collect::<Vec<_>>()
            .join(",")
    );
    let drain = Drain {
        pool,
        database_url,
        redis_url,
        cluster: &cluster,
        received,
        receiver_url,
        count,
    };
    let processes: Vec<usize> = std::env::var("BENCH_CLUSTER_PROCESSES")
        .unwrap_or_else(|_| "2".into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .filter(|n| *n > 0)
        .collect();
    for processes in processes {
        let (mut on_cluster, mut standalone) = (Vec::new(), Vec::new());
        for run in 0..runs {
            let order = if run % 2 == 0 {
                [Redis::Cluster, Redis::Standalone]
            } else {
                [Redis::Standalone, Redis::Cluster]
            };
            for redis in order {
                let rate = drain.run(redis, processes).await;
                match redis {
                    Redis::Cluster => on_cluster.push(rate),
                    Redis::Standalone => standalone.push(rate),
                }
            }
        }
        println!(
            "   cluster, {processes} process(es), runs: cluster {on_cluster:.0?}/s, standalone {standalone:.0?}/s"
        );
        let (on_cluster, standalone) = (median(on_cluster), median(standalone));
        println!(
            "cluster: {count} due drained by {processes} hookd process(es): 3-master Redis Cluster (16 shards) {on_cluster:.0}/s vs standalone Redis {standalone:.0}/s: ratio {:.2}",
            on_cluster / standalone
        );
    }
}

struct Drain<'a> {
    pool: &'a PgPool,
    database_url: &'a str,
    redis_url: &'a str,
    /// `redis.cluster` as a TOML array.
    cluster: &'a str,
    received: &'a Arc<Received>,
    receiver_url: &'a str,
    count: usize,
}

impl Drain<'_> {
    /// HOOKD_* variables for hookd on `redis`.
    fn env(&self, redis: Redis) -> Vec<(&str, &str)> {
        match redis {
            Redis::Cluster => vec![("HOOKD_REDIS__CLUSTER", self.cluster)],
            Redis::Standalone => Vec::new(),
        }
    }

    /// Deliveries/s, first to last receipt, of one drain.
    async fn run(&self, redis: Redis, processes: usize) -> f64 {
        reset(self.pool).await;
        let env = self.env(redis);
        let start = |role| Hookd::start_with(self.database_url, self.redis_url, PREFIX, role, &env);
        let client = reqwest::Client::new();
        let api = start("api").await;
        let endpoint = create_endpoint(&client, &api, self.receiver_url).await;
        post_batches(&client, &api.base, payload_bodies(self.count, &endpoint), 2).await;
        api.stop();
        sqlx::query("ANALYZE notifications")
            .execute(self.pool)
            .await
            .unwrap();
        self.mark_indexed(redis).await;
        settle(self.pool).await;
        self.received.reset();
        let mut dispatchers = Vec::with_capacity(processes);
        for _ in 0..processes {
            dispatchers.push(start("dispatcher").await);
        }
        wait_count(self.received, self.count as u64, Duration::from_secs(300)).await;
        for dispatcher in dispatchers {
            dispatcher.stop();
        }
        self.count as f64 / self.received.span().as_secs_f64()
    }

    /// The index complete, as after steady running: the drains start
    /// without a rebuild (see `seeded`).
    async fn mark_indexed(&self, redis: Redis) {
        let cluster = match redis {
            Redis::Cluster => format!("cluster = {}\n", self.cluster),
            Redis::Standalone => String::new(),
        };
        let settings = hookd::config::Settings::from_toml_layers(&[&format!(
            "[redis]\nurl = \"{}\"\nprefix = \"{PREFIX}\"\n{cluster}",
            self.redis_url
        )])
        .unwrap();
        let index = hookd::due::redis::open(&settings.redis).await.unwrap();
        index.recovery().unwrap().mark_complete().await.unwrap();
    }
}
