//! A throttled endpoint's outcomes recorded together (#35,
//! `domain::record_hold`): its successes wait for the end of their group of
//! slots (at most a second) and are written with the group's others, each
//! still exactly once with its attempt; a failure is written at once, so
//! the circuit breaker still opens after `failures`; a shutdown writes what
//! is held, so nothing is sent again.

use std::time::Duration;

use hookd::due::memory::MemoryIndex;
use hookd::due::redis::RedisIndex;
use hookd::due::SharedIndex;
use hookd::startup::{App, Role};
use hookd::store::postgres::PgStore;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::backends::Backend;
use crate::circuit_breaker::{all_delivered_once, notify_many, opened};
use crate::helpers::{eventually, new_prefix, redis_url, test_settings_with_prefix, TestApp};
use crate::receiver::{Receiver, Reply};

const DEADLINE: Duration = Duration::from_secs(30);

/// An endpoint throttled at once: 10 a second, a burst of one.
async fn throttled(app: &TestApp, uid: &str, url: String, extra: Value) -> Uuid {
    let mut fields = json!({"uid": uid, "url": url,
        "rate_limit": {"per_second": 10, "burst": 1}});
    crate::helpers::merge(&mut fields, extra);
    let created = app.endpoint(fields).await;
    created["id"].as_str().unwrap().parse().unwrap()
}

async fn a_throttled_groups_successes_are_recorded_together_each_once_and_within_a_second(
    backend: Backend,
) {
    // 8 s of sends at 10/s: a success held to the end of the run, not its
    // group, would be written seconds past the bound below.
    const COUNT: usize = 80;
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    let id = throttled(&app, "partner", receiver.url("/partner"), json!({})).await;
    notify_many(&app, "partner", COUNT).await;

    all_delivered_once(&backend, &receiver, "/partner", id, COUNT as i64).await;
    let not_once = backend
        .count_for(
            "SELECT count(*) FROM notifications WHERE endpoint_id = $1 AND attempts <> 1",
            id,
        )
        .await;
    assert_eq!(not_once, 0, "each recorded with its one attempt");
    // One write per group of slots, not one per send: the rows a write
    // moves share its time.
    let writes = backend
        .count_for(
            "SELECT count(DISTINCT completed_at) FROM notifications WHERE endpoint_id = $1",
            id,
        )
        .await;
    assert!(
        writes <= COUNT as i64 / 2,
        "{COUNT} sends at 10/s written in {writes} writes"
    );
    // Visible within the bound: held at most a second after the answer
    // (`MAX_HOLD_US`), plus the write, which a loaded machine may take
    // seconds to make. Held to the end of the run instead, the first
    // successes would be written about 8 s after their attempt.
    let late = backend
        .count_for(
            if backend.is_embedded() {
                "SELECT count(*) FROM notifications WHERE endpoint_id = $1 \
                 AND completed_at - last_attempt_at > 4000000"
            } else {
                "SELECT count(*) FROM notifications WHERE endpoint_id = $1 \
                 AND completed_at - last_attempt_at > interval '4000 milliseconds'"
            },
            id,
        )
        .await;
    assert_eq!(late, 0, "a success held past its bound");
}
both!(a_throttled_groups_successes_are_recorded_together_each_once_and_within_a_second);

async fn a_throttled_endpoints_failures_are_not_held_and_open_its_circuit_after_five(
    backend: Backend,
) {
    const ANSWERED: usize = 12;
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    // Successes first (held for their groups), then the receiver fails.
    let mut replies = vec![Reply::status(200); ANSWERED];
    replies.push(Reply::status(503));
    receiver.reply("/partner", replies);
    let breaker = json!({"breaker": {"failures": 5, "open_ms": 600000, "max_open_ms": 600000}});
    let id = throttled(&app, "partner", receiver.url("/partner"), breaker).await;
    notify_many(&app, "partner", 40).await;

    opened(&app, "partner").await;
    eventually(DEADLINE, "the rest to be held", || async {
        let (_, endpoint) = app.get("/v1/endpoints/partner").await;
        (endpoint["circuit"]["held"].as_i64().unwrap_or(0) > 0).then_some(())
    })
    .await;
    // Five failures open it, each counted as it came. Each request more
    // is one whose slot (100 ms apart at 10 a second) came before hookd
    // had the fifth failure's answer: one on a quiet machine, up to three
    // when a loaded one takes 300 ms to see that answer. Failures that
    // reached the breaker only with their group, up to a second late,
    // would let up to ten more go.
    let failed = receiver.received("/partner").len() - ANSWERED;
    assert!((5..=8).contains(&failed), "{failed} failed requests");
    eventually(DEADLINE, "every answered one recorded", || async {
        let done = backend
            .count_for(
                "SELECT count(*) FROM notifications WHERE endpoint_id = $1 \
                 AND status = 'succeeded' AND attempts = 1",
                id,
            )
            .await;
        (done == ANSWERED as i64).then_some(())
    })
    .await;
    let attempts = backend
        .count_for(
            "SELECT CAST(COALESCE(sum(attempts), 0) AS BIGINT) FROM notifications WHERE endpoint_id = $1",
            id,
        )
        .await;
    assert_eq!(attempts, (ANSWERED + failed) as i64);
}
both!(a_throttled_endpoints_failures_are_not_held_and_open_its_circuit_after_five);

/// hookd on `backend`, and a handle that ends once it has stopped (its
/// dispatcher's outcomes written) after the `TestApp` is dropped.
fn start_joinable(
    backend: &Backend,
    settings: hookd::config::Settings,
    listener: tokio::net::TcpListener,
) -> (TestApp, tokio::task::JoinHandle<()>) {
    let (app, redis) = match backend {
        Backend::Postgres { pool, .. } => {
            let index = RedisIndex::new(&settings.redis).unwrap();
            let due: SharedIndex = std::sync::Arc::new(index.clone());
            let store = PgStore::new(pool.clone());
            let app = App::with_parts(settings, store, due, listener, Role::All);
            (app, Some(index))
        }
        Backend::Sqlite { store, .. } => {
            let due: SharedIndex = std::sync::Arc::new(MemoryIndex::new());
            let app = App::with_parts(settings, store.clone(), due, listener, Role::All);
            (app, None)
        }
    };
    let base = format!("http://{}", app.local_addr());
    let state = app.state().clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(async move {
        app.run(async {
            let _ = stopped.await;
        })
        .await
        .expect("hookd stops cleanly");
    });
    let client = crate::helpers::http_client();
    (TestApp::new(base, client, state, redis, stop), running)
}

async fn a_shutdown_writes_the_held_successes_and_nothing_is_sent_twice(backend: Backend) {
    const COUNT: usize = 30;
    let prefix = new_prefix();
    let settings = || test_settings_with_prefix(&redis_url(), &prefix, "");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (app, running) = start_joinable(&backend, settings(), listener);
    let receiver = Receiver::start().await;
    let id = throttled(&app, "partner", receiver.url("/partner"), json!({})).await;
    notify_many(&app, "partner", COUNT).await;

    // Stopped in the middle of a group: some of its successes are held.
    receiver.wait_for("/partner", 5, DEADLINE).await;
    drop(app);
    tokio::time::timeout(DEADLINE, running)
        .await
        .expect("hookd stops within its shutdown limit")
        .unwrap();
    // Every request the receiver got is recorded, with its one attempt
    // (the lease, 60 s, has not run out: nothing else could have).
    let (sent, requests) = receiver.distinct("/partner");
    assert_eq!(sent, requests, "none sent twice");
    assert!(sent < COUNT, "stopped before the end");
    let recorded = backend
        .count_for(
            "SELECT count(*) FROM notifications WHERE endpoint_id = $1 \
             AND status = 'succeeded' AND attempts = 1",
            id,
        )
        .await;
    assert_eq!(recorded, sent as i64, "a held success was lost at shutdown");

    // The next process sends the rest, and none of those again.
    let app = backend.spawn_settings(settings()).await;
    all_delivered_once(&backend, &receiver, "/partner", id, COUNT as i64).await;
    drop(app);
}
both!(a_shutdown_writes_the_held_successes_and_nothing_is_sent_twice);
