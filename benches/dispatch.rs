//! hookd's benchmark: real PostgreSQL and Redis (started by scripts/bench),
//! the release `hookd` binary as a separate process, and a fast local
//! receiver in this process. Prints one line per figure; figures that are
//! cheap to repeat are the median of several runs.
//!
//! Run with `scripts/bench` (BENCHMARKS.md has the figures and how to read them).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::postgres::PgPoolOptions;

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

#[path = "dispatch/delivery.rs"]
mod delivery;
#[path = "dispatch/harness.rs"]
mod harness;
#[path = "dispatch/ingest.rs"]
mod ingest;
#[path = "dispatch/scale.rs"]
mod scale;
#[path = "dispatch/seed.rs"]
mod seed;

use harness::*;
use seed::*;

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
    let mut summary = Summary::new();
    let mut stands = stands::Stands::default();
    let setup = Setup {
        pool: &pool,
        database_url: &database_url,
        redis_url: &redis_url,
        received: &received,
        receiver_url: &receiver_url,
        client: &client,
        runs,
        mode,
    };
    // What the sections below that take it share of `setup`.
    let bench = rate_limit::Bench {
        pool: &pool,
        database_url: &database_url,
        redis_url: &redis_url,
        received: &received,
        receiver_url: &receiver_url,
    };
    println!("hookd benchmark: {runs} runs per repeated figure, medians; {CONCURRENCY} API clients, sender.max_in_flight {SENDER_IN_FLIGHT}");

    // 1. Ingest: single POSTs from 64 clients; with BENCH_MODE=both each
    // run takes the server mode's figure, then the embedded mode's.
    if want("ingest") {
        ingest::run(&setup, &mut summary, &mut stands).await;
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
        delivery::run(&setup, &mut summary, &mut stands, &mut rss).await;
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
        scale::run(&setup).await;
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
        stats::drains(&bench, runs, mode.server, mode.embedded).await;
    }
    if named("traces_drain") {
        traces::drains(&bench, runs, mode.server, mode.embedded).await;
    }
    if named("lanes") {
        lanes::scenario(&bench, mode.server, mode.embedded).await;
    }
    if named("ordering") {
        ordering::scenario(&bench, mode.server, mode.embedded).await;
    }
    if named("list_load") {
        list_load::scenario(&bench, mode.server, mode.embedded).await;
    }
    if named("pages") {
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
