//! A process exports how long the oldest due push notifications have
//! waited (`hookd_oldest_due_seconds`), per endpoint and by whether they
//! were attempted before: what an operator alerts on when fresh callbacks
//! are late (issue #48).

use std::time::Duration;

use chrono::Utc;
use hookd::store::postgres::PgStore;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use tokio::net::TcpListener;

use crate::conformance::fixtures::{commit_new, create, due_at, endpoint};
use crate::helpers::{eventually, http_client, metric, scrape_metrics, HookdProcess};

const DEADLINE: Duration = Duration::from_secs(30);

/// A receiver that takes connections and never answers: what is sent to
/// it stays pending, due, until the request times out.
async fn silent_receiver() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    format!("http://{address}/hook")
}

#[sqlx::test]
async fn a_process_exports_how_long_an_endpoints_oldest_never_attempted_notification_is_due(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let store = PgStore::new(pool.clone());
    let shop = create(
        &store,
        hookd::store::endpoints::Endpoint {
            url: Some(silent_receiver().await),
            timeout_ms: Some(300_000),
            ..endpoint()
        },
    )
    .await;
    // Due two minutes ago, before the process started: late already.
    commit_new(
        &store,
        due_at(&shop, Utc::now() - chrono::Duration::minutes(2)),
    )
    .await;

    let (hookd, base, log) = HookdProcess::start_ready(&pool, "oldest-due", DEADLINE).await;
    let client = http_client();
    let endpoint_label = format!("endpoint=\"{}\"", shop.id);
    let fresh = |line: &&str| {
        line.starts_with("hookd_oldest_due_seconds{")
            && line.contains(&endpoint_label)
            && line.contains("attempted=\"false\"")
    };
    let line = eventually(DEADLINE, "the oldest due gauge to be exported", || async {
        let text = scrape_metrics(&client, &base).await;
        text.lines().find(fresh).map(str::to_string)
    })
    .await;
    let waited: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(
        (120.0..3600.0).contains(&waited),
        "due two minutes before the process read it: {line}"
    );
    let text = scrape_metrics(&client, &base).await;
    assert!(
        metric(&text, "hookd_due_backlog{attempted=\"false\"} ") >= 1.0,
        "the never-attempted backlog counts it:\n{text}"
    );
    // Its one delivery hangs on the silent receiver: no graceful stop to
    // wait for (dropping the process kills it).
    drop(hookd);
    let _ = std::fs::remove_file(&log);
}
