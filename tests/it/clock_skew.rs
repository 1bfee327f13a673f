//! Every rule reads the process's clock (`hookd::clock`), so a server-mode
//! process tells how far PostgreSQL's clock is from its own: the gauge an
//! operator alerts on when the hosts stop agreeing on the time.

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::helpers::{eventually, http_client, metric, scrape_metrics, HookdProcess};

const DEADLINE: Duration = Duration::from_secs(30);

#[sqlx::test]
async fn a_server_mode_process_exports_how_far_postgresqls_clock_is_from_its_own(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let (mut hookd, base, log) = HookdProcess::start_ready(&pool, "skew", DEADLINE).await;
    let client = http_client();
    let text = eventually(DEADLINE, "the skew gauge to be exported", || async {
        let text = scrape_metrics(&client, &base).await;
        text.lines()
            .any(|line| line.starts_with("hookd_clock_skew_seconds "))
            .then_some(text)
    })
    .await;
    // One host: both clocks are the same, but for the round trip's halves.
    let skew = metric(&text, "hookd_clock_skew_seconds ");
    assert!(skew.abs() < 1.0, "skew {skew} s on one host");
    hookd.signal("TERM");
    assert_eq!(hookd.wait(DEADLINE).await, Some(0));
    let _ = std::fs::remove_file(&log);
}
