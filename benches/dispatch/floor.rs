//! Figure 7b: the floor under figure 7's ratio. The least a dispatcher
//! built from hookd's parts (reqwest through hookd's sender, PostgreSQL
//! keeping every outcome, Redis ordering the due ids) can spend per
//! delivery, drained in the same run as figure 7 from an identical backlog
//! by the `floor_dispatcher` example, a process of its own: no leases, no
//! retries, no schedule, no health, no metrics
//! (`examples/floor_dispatcher.rs`).
//! Two stores: hookd's, whose row is rewritten as delivered (`update`), and
//! one that would append each outcome to a narrow table (`append`).

use std::process::Stdio;
use std::sync::Arc;

use sqlx::PgPool;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::{cpu_seconds, cpu_snapshot, raw_hyper, seed_due, Received, Whose, SENDER_IN_FLIGHT};

/// One floor run's figures.
pub struct FloorRun {
    /// Deliveries/s, first to last receipt.
    pub rate: f64,
    /// The hyper limit, measured just before the floor's drain by figure
    /// 7's raw client.
    pub hyper: f64,
    /// The floor's share of the hyper limit by CPU alone: the hyper run's
    /// CPU per request (client and receiver) over the floor's per delivery
    /// (every process), as if both cores were busy every moment of both.
    pub cpu_share: f64,
    /// CPU µs per delivery: the floor dispatcher, PostgreSQL, Redis, the
    /// receiver.
    pub cpu_us: [f64; 4],
}

/// Seeds `count` due notifications as figure 3 does, measures the hyper
/// limit, then drains them with `floor_dispatcher <mode>`. CPU is counted
/// from when its set-up is done (`ready`) until its last outcome is
/// committed.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    mode: &str,
    pool: &PgPool,
    database_url: &str,
    redis_url: &str,
    prefix: &str,
    received: &Arc<Received>,
    receiver_url: &str,
    count: usize,
) -> FloorRun {
    seed_due(pool, database_url, redis_url, prefix, receiver_url, count).await;
    // Its own hyper limit, just before: the machine's speed drifts.
    received.reset();
    let bench_before = cpu_seconds(Whose::Bench);
    let hyper = raw_hyper::raw_hyper(receiver_url, count as u64, SENDER_IN_FLIGHT).await;
    let hyper_us = (cpu_seconds(Whose::Bench) - bench_before) / count as f64 * 1e6;
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
    let mut child =
        tokio::process::Command::new(format!("{target}/release/examples/floor_dispatcher"))
            .args([
                mode,
                receiver_url,
                database_url,
                redis_url,
                &SENDER_IN_FLIGHT.to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("target/release/examples/floor_dispatcher (scripts/bench builds it)");
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = stdout.next_line().await.unwrap();
    assert_eq!(
        ready.as_deref(),
        Some("ready"),
        "the floor dispatcher set up"
    );
    received.reset();
    let before = cpu_snapshot();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"go\n").await.unwrap();
    let figures = stdout
        .next_line()
        .await
        .unwrap()
        .expect("the floor dispatcher's figures");
    // Before it exits: its PostgreSQL backends' CPU leaves /proc with them.
    let after = cpu_snapshot();
    drop(stdin);
    assert!(
        child.wait().await.unwrap().success(),
        "the floor dispatcher failed"
    );
    let mut figures = figures
        .split_whitespace()
        .map(|figure| figure.parse::<f64>().unwrap());
    let (_, own_cpu) = (figures.next().unwrap(), figures.next().unwrap());
    let per = |seconds: f64| seconds / count as f64 * 1e6;
    let cpu_us = [
        per(own_cpu),
        per(after[1] - before[1]),
        per(after[2] - before[2]),
        per(after[3] - before[3]),
    ];
    FloorRun {
        rate: count as f64 / received.span().as_secs_f64(),
        hyper,
        cpu_share: hyper_us / cpu_us.iter().sum::<f64>(),
        cpu_us,
    }
}
