//! Pull leases end to end (docs/design.md §10): a lease that runs out gives
//! the notification back, waiting consumers are woken, and leases hold
//! across processes and a crash. Each test runs on each backend unless it
//! starts the real binary or needs Redis.

mod processes;

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::helpers::{eventually, TestApp, TOKEN};
use crate::pull::{ids, notify, pull, pull_endpoint, send};

const DEADLINE: Duration = Duration::from_secs(20);

/// A consumer waiting on `endpoint` for up to 20 s, once `app` counts it
/// among the waiters; the handle gives its answer.
async fn waiting_pull(app: &TestApp, endpoint: &str) -> tokio::task::JoinHandle<Value> {
    let (base, client, path) = (
        app.base.clone(),
        app.client.clone(),
        format!("/v1/endpoints/{endpoint}/pull"),
    );
    let waiting = tokio::spawn(async move {
        send(
            &client,
            Method::POST,
            format!("{base}{path}"),
            TOKEN,
            json!({"wait": "20s"}),
        )
        .await
        .1
    });
    let endpoint_id: uuid::Uuid = endpoint.parse().unwrap();
    eventually(DEADLINE, "the consumer to wait", || async {
        (app.state.service.pull_waiters(endpoint_id) > 0).then_some(())
    })
    .await;
    waiting
}

/// Waits until the notification has `status`, polled through the API.
async fn status_becomes(app: &TestApp, id: uuid::Uuid, status: &str, deadline: Duration) {
    eventually(
        deadline,
        &format!("the notification to be {status}"),
        || async {
            let (_, read) = app.get(&format!("/v1/notifications/{id}")).await;
            (read["status"] == status).then_some(())
        },
    )
    .await;
}

async fn a_consumer_that_never_acks_gets_its_notifications_back_after_the_lease_and_only_then(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let endpoint = pull_endpoint(&app, json!({"schedule": ["0s", "1s", "1s"]})).await;
    let id = notify(&app, &endpoint, json!({})).await;
    let taken = pull(&app, &endpoint, json!({"lease": "2s"})).await;
    assert_eq!(ids(&taken), [id.as_str()]);
    let lease_until: chrono::DateTime<chrono::Utc> =
        taken[0]["lease_until"].as_str().unwrap().parse().unwrap();

    // A second consumer waits for it: it comes back after the lease (and
    // the schedule's next delay), as attempt 2.
    let again = pull(&app, &endpoint, json!({"wait": "15s", "lease": "2s"})).await;
    let back_at = chrono::Utc::now();
    assert_eq!(ids(&again), [id.as_str()]);
    assert_eq!(again[0]["attempt"], 2);
    assert!(
        back_at >= lease_until,
        "taken again at {back_at}, before the lease ended at {lease_until}"
    );
    let (_, attempts) = app.get(&format!("/v1/notifications/{id}/attempts")).await;
    assert_eq!(
        attempts["data"][0]["error"]["code"], "lease_expired",
        "{attempts}"
    );
    assert_eq!(attempts["data"][0]["outcome"], "retry");

    // The stale receipt is refused; the current one works.
    let (status, refused) = app
        .post(
            &format!("/v1/notifications/{id}/ack"),
            json!({"receipt": taken[0]["receipt"]}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(refused["error"]["code"], "lease_lost");

    // The last attempt is taken and never acked: when its lease runs out,
    // the schedule is over and it fails.
    let last = pull(&app, &endpoint, json!({"wait": "15s", "lease": "1s"})).await;
    assert_eq!(last[0]["attempt"], 3);
    let failed = eventually(DEADLINE, "the notification to fail", || async {
        let (_, read) = app.get(&format!("/v1/notifications/{id}")).await;
        (read["status"] == "failed").then_some(read)
    })
    .await;
    assert_eq!(failed["attempts"], 3, "{failed}");
}
both!(a_consumer_that_never_acks_gets_its_notifications_back_after_the_lease_and_only_then);

/// A batch that names a notification by a stale receipt first and by its
/// current one after: the current one ends the lease (the stale one is
/// `lease_lost`), in an ack as in a nack.
async fn a_batch_ends_a_lease_by_its_current_receipt_after_a_stale_one(backend: Backend) {
    let app = backend.spawn().await;
    let endpoint = pull_endpoint(&app, json!({"schedule": ["0s", "1s", "1s", "1s"]})).await;
    let id = notify(&app, &endpoint, json!({})).await;
    let stale = pull(&app, &endpoint, json!({"lease": "1s"})).await;
    assert_eq!(ids(&stale), [id.as_str()]);
    for how in ["nack", "ack"] {
        // Its lease runs out and it comes back, as the next attempt.
        let current = pull(&app, &endpoint, json!({"wait": "15s", "lease": "30s"})).await;
        assert_eq!(ids(&current), [id.as_str()], "{how}");
        let (status, ended) = app
            .post(
                &format!("/v1/endpoints/{endpoint}/{how}"),
                json!({"receipts": [stale[0]["receipt"], current[0]["receipt"]]}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{ended}");
        assert_eq!(ended["data"][0]["status"], 409, "{how}: {ended}");
        assert_eq!(ended["data"][0]["error"]["code"], "lease_lost", "{ended}");
        assert_eq!(ended["data"][1]["status"], 200, "{how}: {ended}");
    }
    let (_, read) = app.get(&format!("/v1/notifications/{id}")).await;
    assert_eq!(read["status"], "succeeded", "{read}");
}
both!(a_batch_ends_a_lease_by_its_current_receipt_after_a_stale_one);

async fn a_retry_just_after_a_lease_ran_out_first_records_the_attempt_that_lease_ended(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let endpoint = pull_endpoint(&app, json!({"schedule": ["0s", "1h"]})).await;
    let id = notify(&app, &endpoint, json!({})).await;
    let taken = pull(&app, &endpoint, json!({"lease": "1s"})).await;
    assert_eq!(ids(&taken), [id.as_str()]);
    // Retried as soon as the lease has run out: before the lease sweep
    // (every second) has recorded the attempt, in all but about one run in
    // a hundred (where the sweep's record is what this test then reads).
    eventually(DEADLINE, "the lease to run out", || async {
        let (_, read) = app.get(&format!("/v1/notifications/{id}")).await;
        (read["leased"] == false).then_some(())
    })
    .await;
    let (status, retried) = app
        .post(&format!("/v1/notifications/{id}/retry"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{retried}");
    assert_eq!(retried["status"], "pending", "{retried}");
    assert_eq!(retried["attempts"], 1, "{retried}");

    let (_, attempts) = app.get(&format!("/v1/notifications/{id}/attempts")).await;
    let attempts = attempts["data"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(attempts[0]["number"], 1);
    assert_eq!(
        attempts[0]["error"]["code"], "lease_expired",
        "{attempts:?}"
    );
    // The new series starts after it, due now; the lease it ended is
    // recorded once, however the sweep and the retry met.
    let again = pull(&app, &endpoint, json!({"lease": "1m"})).await;
    assert_eq!(ids(&again), [id.as_str()]);
    assert_eq!(again[0]["attempt"], 2);
    let (status, acked) = app
        .post(
            &format!("/v1/notifications/{id}/ack"),
            json!({"receipt": again[0]["receipt"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{acked}");
    let (_, attempts) = app.get(&format!("/v1/notifications/{id}/attempts")).await;
    let outcomes: Vec<(i64, &str)> = attempts["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["number"].as_i64().unwrap(),
                a["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(outcomes, [(1, "retry"), (2, "succeeded")], "{attempts}");
}
both!(a_retry_just_after_a_lease_ran_out_first_records_the_attempt_that_lease_ended);

async fn a_waiting_consumer_gets_a_nacked_notification_when_it_is_due_again(backend: Backend) {
    let app = backend.spawn().await;
    let endpoint = pull_endpoint(&app, json!({"schedule": ["0s", "1s"]})).await;
    let id = notify(&app, &endpoint, json!({})).await;
    let taken = pull(&app, &endpoint, json!({"lease": "1m"})).await;
    assert_eq!(ids(&taken), vec![id.clone()]);

    // Another consumer waits while the only notification is leased for a
    // minute, longer than its wait.
    let started = Instant::now();
    let waiting = waiting_pull(&app, &endpoint).await;
    let (status, nacked) = app
        .post(
            &format!("/v1/notifications/{id}/nack"),
            json!({"receipt": taken[0]["receipt"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{nacked}");
    assert_eq!(nacked["status"], "pending");

    let pulled = waiting.await.unwrap();
    assert_eq!(pulled["data"][0]["id"], json!(id), "{pulled}");
    assert_eq!(pulled["data"][0]["attempt"], 2, "{pulled}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the waiter looked again at the nack, not at the end of its wait"
    );
}
both!(a_waiting_consumer_gets_a_nacked_notification_when_it_is_due_again);
