//! Why a pending notification waits (docs/design.md §17): `waiting` on
//! every read of a notification, each reason hookd gives today with a real
//! dispatcher, receiver and pull consumer, and a retry of a notification
//! its endpoint holds answering 409 with the reason. On each backend.

use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::circuit_breaker::{endpoint, notify_many, opened, seen_everywhere, time};
use crate::helpers::{eventually, TestApp};
use crate::pull::{pull, pull_endpoint};
use crate::receiver::{Receiver, Reply};

const DEADLINE: Duration = Duration::from_secs(30);

async fn read(app: &TestApp, id: &str) -> Value {
    let (status, read) = app.get(&format!("/v1/notifications/{id}")).await;
    assert_eq!(status, StatusCode::OK, "{read}");
    read
}

/// The notification's `waiting`, from its read and from its endpoint's
/// list, which must agree.
async fn waiting(app: &TestApp, id: &str) -> Value {
    let read = read(app, id).await;
    let endpoint = read["endpoint_id"].as_str().unwrap();
    let (_, listed) = app
        .get(&format!("/v1/notifications?endpoint={endpoint}"))
        .await;
    let row = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == json!(id))
        .unwrap_or_else(|| panic!("{id} listed: {listed}"))
        .clone();
    let waiting = read["waiting"].clone();
    // A list read a moment later may see the next state; the reason of a
    // state the test holds still agrees.
    assert_eq!(row["waiting"]["reason"], waiting["reason"], "{row} {read}");
    waiting
}

async fn retry(app: &TestApp, id: &str) -> (StatusCode, Value) {
    app.post(&format!("/v1/notifications/{id}/retry"), json!({}))
        .await
}

async fn a_notification_waits_for_its_time_then_a_claim_then_nothing_once_final(backend: Backend) {
    // No dispatcher: a due notification stays due.
    let app = backend.spawn_with("[dispatcher]\nenabled = false\n").await;
    let endpoint = app.endpoint(json!({"schedule": ["0s", "1h"]})).await;
    let endpoint = endpoint["id"].as_str().unwrap();
    let later = (Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let scheduled = app
        .notify(json!({"endpoint": endpoint, "payload": {}, "deliver_at": later}))
        .await;
    let due = app
        .notify(json!({"endpoint": endpoint, "payload": {}}))
        .await;

    let waits = waiting(&app, &scheduled).await;
    assert_eq!(waits["reason"], "scheduled", "{waits}");
    let next = read(&app, &scheduled).await["next_attempt_at"].clone();
    assert_eq!(time(&waits["until"]), time(&next), "{waits}");
    assert_eq!(waits["behind"], Value::Null, "{waits}");
    let waits = waiting(&app, &due).await;
    assert_eq!(
        waits,
        json!({"reason": "due", "until": null, "behind": null})
    );

    // Nothing holds them: a retry goes ahead.
    let (status, retried) = retry(&app, &scheduled).await;
    assert_eq!(status, StatusCode::OK, "{retried}");
    assert_eq!(retried["waiting"]["reason"], "due", "{retried}");

    let (status, cancelled) = app
        .post(&format!("/v1/notifications/{due}/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    assert_eq!(cancelled["waiting"], Value::Null, "{cancelled}");
    assert_eq!(read(&app, &due).await["waiting"], Value::Null);
}
both!(a_notification_waits_for_its_time_then_a_claim_then_nothing_once_final);

async fn a_notification_being_delivered_is_in_flight_until_its_lease_ends(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    let gate = std::sync::Arc::new(tokio::sync::Notify::new());
    receiver.reply("/slow", vec![Reply::Gated(gate.clone(), 200)]);
    let endpoint = app.endpoint(json!({"url": receiver.url("/slow")})).await;
    let id = app
        .notify(json!({"endpoint": endpoint["id"], "payload": {}}))
        .await;
    receiver.wait_for("/slow", 1, DEADLINE).await;
    let waits = waiting(&app, &id).await;
    assert_eq!(waits["reason"], "in_flight", "{waits}");
    assert!(time(&waits["until"]) > Utc::now(), "{waits}");

    gate.notify_one();
    let done = eventually(DEADLINE, "the delivery to be recorded", || async {
        let read = read(&app, &id).await;
        (read["status"] == "succeeded").then_some(read)
    })
    .await;
    assert_eq!(done["waiting"], Value::Null, "{done}");
}
both!(a_notification_being_delivered_is_in_flight_until_its_lease_ends);

async fn a_pull_notification_waits_for_a_consumer_then_is_in_flight_under_its_lease(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let endpoint = pull_endpoint(&app, json!({})).await;
    let id = app
        .notify(json!({"endpoint": endpoint, "payload": {}}))
        .await;
    let waits = waiting(&app, &id).await;
    assert_eq!(
        waits,
        json!({"reason": "pull", "until": null, "behind": null})
    );

    let taken = pull(&app, &endpoint, json!({})).await;
    assert_eq!(taken.len(), 1);
    let waits = waiting(&app, &id).await;
    assert_eq!(waits["reason"], "in_flight", "{waits}");
    let lease_end = read(&app, &id).await["next_attempt_at"].clone();
    assert_eq!(time(&waits["until"]), time(&lease_end), "{waits}");
}
both!(a_pull_notification_waits_for_a_consumer_then_is_in_flight_under_its_lease);

async fn a_disabled_endpoints_notifications_are_held_push_and_pull_and_a_retry_is_refused(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let push = app.endpoint(json!({"disabled": true})).await;
    let pull_id = pull_endpoint(&app, json!({"disabled": true})).await;
    for endpoint in [push["id"].as_str().unwrap(), pull_id.as_str()] {
        let id = app
            .notify(json!({"endpoint": endpoint, "payload": {}}))
            .await;
        let waits = waiting(&app, &id).await;
        assert_eq!(
            waits,
            json!({"reason": "endpoint_disabled", "until": null, "behind": null})
        );
        let (status, refused) = retry(&app, &id).await;
        assert_eq!(status, StatusCode::CONFLICT, "{refused}");
        assert_eq!(refused["error"]["code"], "endpoint_disabled", "{refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains("held (endpoint_disabled)"), "{message}");
        // Refused, not done: the series and its due time are as they were.
        let after = read(&app, &id).await;
        assert_eq!(after["attempts"], 0, "{after}");

        let (status, _) = app
            .call(
                Method::PATCH,
                &format!("/v1/endpoints/{endpoint}"),
                Some(json!({"disabled": false})),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let waits = read(&app, &id).await["waiting"].clone();
        assert_ne!(waits["reason"], "endpoint_disabled", "{waits}");
    }
}
both!(a_disabled_endpoints_notifications_are_held_push_and_pull_and_a_retry_is_refused);

/// Opens after 5 failures and stays open a minute: no probe in the test.
const LONG_OPEN: &str =
    "[dispatcher.breaker]\nfailures = 5\nopen_ms = 60000\nmax_open_ms = 60000\n";

async fn an_open_circuit_holds_its_notifications_until_the_probe_and_refuses_a_retry(
    backend: Backend,
) {
    let app = backend.spawn_with(LONG_OPEN).await;
    let receiver = Receiver::start().await;
    receiver.reply("/down", vec![Reply::status(503)]);
    endpoint(&app, "down", receiver.url("/down"), json!({})).await;
    notify_many(&app, "down", 8).await;
    let circuit = opened(&app, "down").await;
    let probe_at = time(&circuit["next_probe_at"]);
    // Past the last process's stale view, only probes go: none in a minute.
    let settled = seen_everywhere(time(&circuit["opened_at"]));
    eventually(
        DEADLINE,
        "every process to see the circuit open",
        || async { (Utc::now() > settled).then_some(()) },
    )
    .await;
    let held: Vec<(String, Value)> = eventually(DEADLINE, "the held to say so", || async {
        let (_, listed) = app
            .get("/v1/notifications?endpoint=down&status=pending")
            .await;
        let rows = listed["data"].as_array().unwrap().clone();
        let held: Vec<(String, Value)> = rows
            .iter()
            .map(|n| (n["id"].as_str().unwrap().to_string(), n["waiting"].clone()))
            .collect();
        (!held.is_empty() && held.iter().all(|(_, w)| w["reason"] == "circuit_open"))
            .then_some(held)
    })
    .await;
    for (_, waits) in &held {
        let until: DateTime<Utc> = time(&waits["until"]);
        assert_eq!(until, probe_at, "{waits}");
    }
    let (id, _) = &held[0];
    let (status, refused) = retry(&app, id).await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(refused["error"]["code"], "circuit_open", "{refused}");
}
both!(an_open_circuit_holds_its_notifications_until_the_probe_and_refuses_a_retry);

async fn a_throttled_notification_waits_for_the_slot_its_rate_limit_gave_it(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    // One every 10 s: the two after the first hold slots 10 s and 20 s on.
    app.endpoint(json!({"uid": "slow", "url": receiver.url("/slow"),
        "rate_limit": {"per_second": 0.1, "burst": 1}}))
        .await;
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(
            app.notify(json!({"endpoint": "slow", "payload": {"n": n}}))
                .await,
        );
    }
    let first = receiver.wait_for("/slow", 1, DEADLINE).await;
    let sent = first[0].header("webhook-id").unwrap().to_string();
    for id in ids.iter().filter(|id| **id != sent) {
        let waits = eventually(DEADLINE, "the limiter to give it a slot", || async {
            let waits = read(&app, id).await["waiting"].clone();
            (waits["reason"] == "rate_limit").then_some(waits)
        })
        .await;
        let until = time(&waits["until"]);
        assert!(until > first[0].at, "{waits}");
        assert!(
            until <= first[0].at + chrono::Duration::seconds(25),
            "{waits}"
        );
    }
}
both!(a_throttled_notification_waits_for_the_slot_its_rate_limit_gave_it);
