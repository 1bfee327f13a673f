//! Schedule jitter (docs/design.md §16) on each backend: the field's bounds and
//! reset, the jittered waits a real dispatcher records against a receiver
//! that answers 503, and the exact waits it keeps without jitter.

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::helpers::{eventually, TestApp};
use crate::receiver::{Receiver, Reply};

const DEADLINE: Duration = Duration::from_secs(20);
/// The most a retry may lag its due time (as in delivery.rs).
const LATE: Duration = Duration::from_millis(900);

async fn patch(app: &TestApp, uid: &str, body: Value) -> (StatusCode, Value) {
    app.call(Method::PATCH, &format!("/v1/endpoints/{uid}"), Some(body))
        .await
}

fn time(value: &Value) -> DateTime<Utc> {
    value.as_str().unwrap().parse().unwrap()
}

/// When attempt `attempt` ended: its start plus its duration, to the
/// millisecond the API shows (the duration is cut, never rounded up).
fn ended(attempt: &Value) -> DateTime<Utc> {
    time(&attempt["started_at"])
        + chrono::Duration::milliseconds(attempt["duration_ms"].as_i64().unwrap())
}

/// The notification once its first attempt failed and the next is
/// scheduled, with that first attempt.
async fn after_first_failure(app: &TestApp, id: &str) -> (Value, Value) {
    eventually(
        DEADLINE,
        &format!("{id}'s first attempt to fail"),
        || async {
            let (_, n) = app.get(&format!("/v1/notifications/{id}")).await;
            if n["attempts"] != json!(1) || n["status"] != json!("pending") {
                return None;
            }
            let (_, page) = app.get(&format!("/v1/notifications/{id}/attempts")).await;
            let first = page["data"].as_array()?.first()?.clone();
            Some((n, first))
        },
    )
    .await
}

/// The wait the dispatcher scheduled after a notification's first failure.
async fn first_wait(app: &TestApp, id: &str) -> chrono::Duration {
    let (n, first) = after_first_failure(app, id).await;
    time(&n["next_attempt_at"]) - ended(&first)
}

async fn schedule_jitter_is_a_number_from_zero_to_one_half_and_null_resets_it(backend: Backend) {
    let app = backend.spawn().await;
    let created = app.endpoint(json!({"uid": "shop"})).await;
    assert_eq!(created["schedule_jitter"], json!(0.0));
    for bad in [json!(-0.1), json!(0.6), json!("a lot")] {
        let (status, body) = app
            .post(
                "/v1/endpoints",
                json!({"url": "http://127.0.0.1:9/hook", "schedule_jitter": bad}),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {body}");
        assert_eq!(body["error"]["field"], json!("schedule_jitter"), "{body}");
        let (status, body) = patch(&app, "shop", json!({"schedule_jitter": bad})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {body}");
        assert_eq!(body["error"]["field"], json!("schedule_jitter"), "{body}");
    }
    let id: uuid::Uuid = created["id"].as_str().unwrap().parse().unwrap();
    let version = "SELECT version FROM endpoints WHERE id = $1";
    let before = backend.count_for(version, id).await;
    let (status, set) = patch(&app, "shop", json!({"schedule_jitter": 0.5})).await;
    assert_eq!(status, StatusCode::OK, "{set}");
    assert_eq!(set["schedule_jitter"], json!(0.5));
    // A delivery uses it: the dispatcher's cached plan must be read again.
    assert!(backend.count_for(version, id).await > before);
    let (_, kept) = patch(&app, "shop", json!({"description": "other"})).await;
    assert_eq!(kept["schedule_jitter"], json!(0.5));
    let (_, read) = app.get("/v1/endpoints/shop").await;
    assert_eq!(read["schedule_jitter"], json!(0.5));
    let (status, reset) = patch(&app, "shop", json!({"schedule_jitter": null})).await;
    assert_eq!(status, StatusCode::OK, "{reset}");
    assert_eq!(reset["schedule_jitter"], json!(0.0));
}
both!(schedule_jitter_is_a_number_from_zero_to_one_half_and_null_resets_it);

async fn with_jitter_each_wait_lies_within_its_bounds_and_the_waits_differ(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply("/busy", vec![Reply::status(503)]);
    receiver.reply("/spread", vec![Reply::status(503)]);

    // Attempts for real: three within a second or so of each other.
    app.endpoint(json!({"uid": "busy", "url": receiver.url("/busy"), "schedule": ["0s", "1s", "1s"], "schedule_jitter": 0.5}))
        .await;
    let id = app.notify(json!({"endpoint": "busy", "payload": {}})).await;

    // Set on a PATCH after a delivery, so that the plan the dispatcher
    // cached without jitter is the one that must change.
    app.endpoint(
        json!({"uid": "spread", "url": receiver.url("/spread"), "schedule": ["0s", "1h"]}),
    )
    .await;
    let warm = app
        .notify(json!({"endpoint": "spread", "payload": {}}))
        .await;
    let exact = first_wait(&app, &warm).await;
    assert!(
        (exact - chrono::Duration::hours(1)).abs() <= chrono::Duration::milliseconds(1),
        "{exact}"
    );
    let (status, body) = patch(&app, "spread", json!({"schedule_jitter": 0.5})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut ids = Vec::new();
    for n in 0..20 {
        ids.push(
            app.notify(json!({"endpoint": "spread", "payload": {"n": n}}))
                .await,
        );
    }
    let mut waits = BTreeSet::new();
    for id in &ids {
        let wait = first_wait(&app, id).await;
        assert!(
            wait >= chrono::Duration::minutes(30) - chrono::Duration::milliseconds(1)
                && wait <= chrono::Duration::minutes(90) + chrono::Duration::milliseconds(1),
            "1h with jitter 0.5 became {wait}"
        );
        waits.insert(wait.num_milliseconds());
    }
    // Twenty draws of a uniform factor agree to the millisecond with a
    // probability far below anything a test run meets.
    assert!(waits.len() >= 2, "every wait was the same: {waits:?}");

    let failed = eventually(DEADLINE, "the busy notification to fail", || async {
        let (_, n) = app.get(&format!("/v1/notifications/{id}")).await;
        (n["status"] == json!("failed")).then_some(n)
    })
    .await;
    assert_eq!(failed["attempts"], json!(3));
    let (_, page) = app.get(&format!("/v1/notifications/{id}/attempts")).await;
    let mut attempts = page["data"].as_array().unwrap().clone();
    attempts.sort_by_key(|a| a["number"].as_i64());
    for pair in attempts.windows(2) {
        let wait = (time(&pair[1]["started_at"]) - ended(&pair[0]))
            .to_std()
            .unwrap_or_default();
        assert!(
            wait >= Duration::from_millis(499) && wait <= Duration::from_millis(1501) + LATE,
            "1s with jitter 0.5 became {wait:?}"
        );
    }
}
both!(with_jitter_each_wait_lies_within_its_bounds_and_the_waits_differ);

async fn without_jitter_every_wait_is_exactly_the_schedules(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply("/down", vec![Reply::status(503)]);
    // Set and reset: the default is what null restores.
    app.endpoint(json!({"uid": "down", "url": receiver.url("/down"), "schedule": ["0s", "10m"], "schedule_jitter": 0.3}))
        .await;
    let (_, reset) = patch(&app, "down", json!({"schedule_jitter": null})).await;
    assert_eq!(reset["schedule_jitter"], json!(0.0));
    let mut ids = Vec::new();
    for n in 0..5 {
        ids.push(
            app.notify(json!({"endpoint": "down", "payload": {"n": n}}))
                .await,
        );
    }
    for id in &ids {
        let wait = first_wait(&app, id).await;
        // The API shows the attempt's duration cut to the millisecond and
        // times to the microsecond.
        let exact = chrono::Duration::minutes(10);
        assert!(
            wait >= exact - chrono::Duration::microseconds(1)
                && wait <= exact + chrono::Duration::milliseconds(1),
            "10m without jitter became {wait}"
        );
    }
}
both!(without_jitter_every_wait_is_exactly_the_schedules);

async fn the_openapi_document_shows_schedule_jitter_with_its_bounds(backend: Backend) {
    let app = backend.spawn().await;
    let (_, document) = app.get("/openapi.json").await;
    let schemas = &document["components"]["schemas"];
    for schema in ["EndpointFields", "EndpointView"] {
        let field = &schemas[schema]["properties"]["schedule_jitter"];
        assert_eq!(field["minimum"].as_f64(), Some(0.0), "{schema}: {field}");
        assert_eq!(field["maximum"].as_f64(), Some(0.5), "{schema}: {field}");
    }
}
both!(the_openapi_document_shows_schedule_jitter_with_its_bounds);

async fn a_consumers_nack_goes_on_with_the_jittered_schedule(backend: Backend) {
    let app = backend.spawn().await;
    let endpoint = crate::pull::pull_endpoint(
        &app,
        json!({"schedule": ["0s", "1h"], "schedule_jitter": 0.5}),
    )
    .await;
    for n in 0..20 {
        crate::pull::notify(&app, &endpoint, json!({"payload": {"n": n}})).await;
    }
    let taken = std::sync::Mutex::new(Vec::new());
    let taken = eventually(DEADLINE, "20 notifications taken", || async {
        let more = crate::pull::pull(&app, &endpoint, json!({"max": 20})).await;
        let mut all = taken.lock().unwrap();
        all.extend(more);
        (all.len() >= 20).then(|| all.clone())
    })
    .await;
    let mut waits = BTreeSet::new();
    for item in &taken {
        let id = item["id"].as_str().unwrap();
        let (status, nacked) = app
            .post(
                &format!("/v1/notifications/{id}/nack"),
                json!({"receipt": item["receipt"]}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{nacked}");
        let (_, page) = app.get(&format!("/v1/notifications/{id}/attempts")).await;
        let wait = time(&nacked["next_attempt_at"]) - ended(&page["data"][0]);
        assert!(
            wait >= chrono::Duration::minutes(30) - chrono::Duration::milliseconds(1)
                && wait <= chrono::Duration::minutes(90) + chrono::Duration::milliseconds(1),
            "1h with jitter 0.5 became {wait}"
        );
        waits.insert(wait.num_milliseconds());
    }
    assert!(waits.len() >= 2, "every wait was the same: {waits:?}");
}
both!(a_consumers_nack_goes_on_with_the_jittered_schedule);
