//! The hand-off: a notification created due now goes from the committer to
//! the same process's dispatcher, leased in the due index as a claim would
//! lease it, and is sent without a claim or a load. The real binary is used
//! where the figures are read from its `/metrics` (the counters are per
//! process); the lease's recovery runs on each backend.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;
use uuid::Uuid;

use crate::backends::Backend;
use crate::helpers::{
    eventually, free_port, http_client, new_prefix, redis_url, test_settings, HookdProcess, TOKEN,
};
use crate::receiver::Receiver;

const DEADLINE: Duration = Duration::from_secs(30);

/// A hookd process (all roles) with `env`, an endpoint `shop` to
/// `receiver`, one notification due now, one due in a second and one event
/// (one delivery, to `shop`, due now); returns the process's `/metrics`
/// once all three arrived and succeeded, each with one attempt.
async fn three_notifications_through_a_process(pool: &PgPool, env: &[(&str, &str)]) -> String {
    let receiver = Receiver::start().await;
    let listen = format!("127.0.0.1:{}", free_port());
    let log = std::env::temp_dir().join(format!("hookd-handoff-{}.log", new_prefix()));
    let tokens = format!("[\"{TOKEN}\"]");
    let mut env = env.to_vec();
    env.push(("HOOKD_API__TOKENS", tokens.as_str()));
    let mut hookd = HookdProcess::on_server(pool, &env, &listen, &log);
    let base = format!("http://{listen}");
    HookdProcess::wait_ready(&base, DEADLINE).await;
    let client = http_client();
    let post = |path: &str, body: Value| {
        client
            .post(format!("{base}{path}"))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
    };
    let created = post(
        "/v1/endpoints",
        json!({"uid": "shop", "owner": "m-1", "url": receiver.url("/hook")}),
    )
    .await
    .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let mut ids = Vec::new();
    for body in [
        json!({"endpoint": "shop", "payload": {"n": 1}}),
        json!({"endpoint": "shop", "payload": {"n": 2}, "delay": "1s"}),
    ] {
        let created = post("/v1/notifications", body).await.unwrap();
        assert_eq!(created.status(), StatusCode::CREATED);
        let created: Value = created.json().await.unwrap();
        ids.push(created["id"].as_str().unwrap().to_string());
    }
    let event = post(
        "/v1/events",
        json!({"event_type": "order.paid", "owner": "m-1", "payload": {"n": 3}}),
    )
    .await
    .unwrap();
    assert_eq!(event.status(), StatusCode::CREATED);
    let event: Value = event.json().await.unwrap();
    let event_id = event["id"].as_str().unwrap();
    let got = receiver.wait_for("/hook", 3, DEADLINE).await;
    // The event's delivery went out as a claimed one would: its event's
    // body, type and id, its own webhook id.
    let delivered = got
        .iter()
        .find(|r| r.header("hookd-event-id") == Some(event_id))
        .expect("the event's delivery arrived");
    assert_eq!(&delivered.body[..], br#"{"n":3}"#);
    assert_eq!(delivered.header("hookd-event-type"), Some("order.paid"));
    ids.push(delivered.header("webhook-id").unwrap().to_string());
    for id in &ids {
        let settled = eventually(DEADLINE, "the notification to succeed", || async {
            let got: Value = client
                .get(format!("{base}/v1/notifications/{id}"))
                .bearer_auth(TOKEN)
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            (got["status"] == "succeeded").then_some(got)
        })
        .await;
        assert_eq!(settled["attempts"], 1, "sent once: {settled}");
    }
    let metrics = crate::helpers::scrape_metrics(&client, &base).await;
    hookd.signal("TERM");
    assert_eq!(hookd.wait(DEADLINE).await, Some(0));
    let _ = std::fs::remove_file(&log);
    metrics
}

/// The value of the counter `name` (0 when it has not been registered).
fn counter(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .filter(|line| line.split([' ', '{']).next() == Some(name))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[sqlx::test]
async fn a_notification_due_now_is_sent_by_the_process_that_created_it_without_a_claim(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let metrics = three_notifications_through_a_process(&pool, &[]).await;
    // The notification and the event's delivery due now were handed over;
    // the one due later went through the index and a claim.
    assert_eq!(
        counter(&metrics, "hookd_notifications_handed_off_total"),
        2.0,
        "{metrics}"
    );
}

#[sqlx::test]
async fn with_the_handoff_off_every_notification_goes_through_a_claim(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let metrics =
        three_notifications_through_a_process(&pool, &[("HOOKD_DISPATCHER__HANDOFF", "false")])
            .await;
    assert_eq!(
        counter(&metrics, "hookd_notifications_handed_off_total"),
        0.0,
        "{metrics}"
    );
}

async fn a_notification_handed_to_a_dispatcher_that_never_sends_it_is_delivered_after_its_lease(
    backend: Backend,
) {
    // Two processes on one database and one index: B (a whole hookd), and
    // A, whose dispatcher takes what its committer hands over and dies.
    let settings = test_settings(
        &redis_url(),
        "[sender]\ntimeout_ms = 1000\n[dispatcher]\nlease_ms = 6500\n",
    );
    let b = backend.spawn_settings(settings.clone()).await;
    let receiver = Receiver::start().await;
    b.endpoint(json!({"uid": "shop", "url": receiver.url("/hook")}))
        .await;

    let a = backend.service(b.state.due.clone(), settings);
    let handoff = a.handoff();
    handoff.open(Arc::new(tokio::sync::Semaphore::new(8)));
    let input = serde_json::from_value(json!({"endpoint": "shop", "payload": {"n": 1}})).unwrap();
    let created = match a.create_notification(input).await.unwrap() {
        hookd::service::notifications::Accepted::Created(row) => row,
        other => panic!("not created: {other:?}"),
    };
    let taken: Vec<Uuid> = handoff.take().iter().map(|row| row.id).collect();
    assert_eq!(taken, vec![created.id], "A's committer handed it over");
    // A "dies" here, with the notification leased and not due.
    assert!(b.state.due.leased(created.id, Utc::now()).await.unwrap());
    if !backend.is_embedded() {
        // Only Redis's index says when an id is due from outside it.
        assert_eq!(b.index().due_at(created.id).await.unwrap(), None);
    }

    let got = receiver.wait_for("/hook", 1, DEADLINE).await;
    assert_eq!(got.len(), 1);
    let row = eventually(DEADLINE, "the notification to succeed", || async {
        let (_, row) = b.get(&format!("/v1/notifications/{}", created.id)).await;
        (row["status"] == "succeeded").then_some(row)
    })
    .await;
    assert_eq!(row["attempts"], 1, "{row}");
}
both!(a_notification_handed_to_a_dispatcher_that_never_sends_it_is_delivered_after_its_lease);
