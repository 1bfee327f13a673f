//! A disabled endpoint holds its notifications, push or pull alike, and a
//! pull endpoint's `pull.max_wait` counts only while it is enabled
//! (docs/design.md §17; issue #47's decisions on what the notes on #33–#35
//! asked): nothing is sent or offered while it is disabled, nothing is
//! spent, and what it held goes out as soon as it is enabled again. On
//! each backend.

use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::backends::Backend;
use crate::helpers::{eventually, TestApp};
use crate::pull::{ids, notify, pull, pull_endpoint};
use crate::receiver::Receiver;

const DEADLINE: Duration = Duration::from_secs(20);
/// How long a test watches a disabled endpoint hold what it has: longer
/// than `pull.max_wait` (2 s here) and the check after it (every second).
const HELD_FOR: Duration = Duration::from_secs(5);

fn time(value: &Value) -> DateTime<Utc> {
    value.as_str().unwrap().parse().unwrap()
}

/// Disables or enables the endpoint.
async fn set_disabled(app: &TestApp, endpoint: &str, disabled: bool) {
    let (status, body) = app
        .call(
            Method::PATCH,
            &format!("/v1/endpoints/{endpoint}"),
            Some(json!({ "disabled": disabled })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["disabled"], json!(disabled), "{body}");
}

/// For `HELD_FOR`, each of `ids` is pending with no attempt spent, and
/// `nothing_sent` holds.
async fn watch_held(app: &TestApp, ids: &[String], nothing_sent: impl Fn() -> bool) {
    let until = Instant::now() + HELD_FOR;
    while Instant::now() < until {
        assert!(nothing_sent(), "something went out while disabled");
        for id in ids {
            let (_, read) = app.get(&format!("/v1/notifications/{id}")).await;
            assert_eq!(read["status"], "pending", "held while disabled: {read}");
            assert_eq!(
                read["attempts"], 0,
                "no attempt spent while disabled: {read}"
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn a_disabled_push_endpoint_holds_its_notifications_and_sends_them_all_once_enabled(
    backend: Backend,
) {
    let receiver = Receiver::start().await;
    let app = backend.spawn().await;
    let endpoint = app
        .endpoint(json!({"url": receiver.url("/held"), "disabled": true, "schedule": ["0s", "1h"]}))
        .await;
    let endpoint = endpoint["id"].as_str().unwrap().to_string();
    let mut held = Vec::new();
    for n in 0..3 {
        held.push(
            app.notify(json!({"endpoint": endpoint, "payload": {"n": n}}))
                .await,
        );
    }
    watch_held(&app, &held, || receiver.received("/held").is_empty()).await;

    // Enabled: all of them go out now, not at the dispatcher's next look
    // at a disabled endpoint's backlog (a minute apart).
    set_disabled(&app, &endpoint, false).await;
    receiver.wait_for("/held", 3, DEADLINE).await;
    for id in &held {
        let done = eventually(DEADLINE, "the success to be recorded", || async {
            let (_, read) = app.get(&format!("/v1/notifications/{id}")).await;
            (read["status"] == "succeeded").then_some(read)
        })
        .await;
        assert_eq!(done["attempts"], 1, "{done}");
    }
}
both!(a_disabled_push_endpoint_holds_its_notifications_and_sends_them_all_once_enabled);

async fn a_disabled_pull_endpoint_offers_nothing_and_its_max_wait_counts_only_while_enabled(
    backend: Backend,
) {
    let app = backend.spawn_with("[pull]\nmax_wait = \"2s\"\n").await;
    let endpoint = pull_endpoint(&app, json!({"schedule": ["0s", "1h"]})).await;
    let first = notify(&app, &endpoint, json!({})).await;
    let left = notify(&app, &endpoint, json!({})).await;
    let (_, read) = app.get(&format!("/v1/notifications/{left}")).await;
    let due = time(&read["deliver_at"]);

    set_disabled(&app, &endpoint, true).await;
    let disabled_by = Utc::now();
    let (status, refused) = app
        .post(&format!("/v1/endpoints/{endpoint}/pull"), json!({}))
        .await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("endpoint_disabled")),
        "{refused}"
    );
    // Longer than max_wait: neither fails meanwhile.
    watch_held(&app, &[first.clone(), left.clone()], || true).await;

    let enabled_from = Utc::now();
    set_disabled(&app, &endpoint, false).await;
    // Offered at once, earliest first.
    let taken = pull(&app, &endpoint, json!({"max": 1, "lease": "1m"})).await;
    assert_eq!(ids(&taken), [first.as_str()]);
    assert_eq!(taken[0]["attempt"], 1);

    // The one left untaken fails once it has waited max_wait while
    // enabled: its wait is the time before the endpoint was disabled and
    // the time since it was enabled again, however long it was disabled.
    let failed = eventually(DEADLINE, "the untaken one to fail not_pulled", || async {
        let (_, read) = app.get(&format!("/v1/notifications/{left}")).await;
        (read["status"] == "failed").then_some(read)
    })
    .await;
    let (_, attempts) = app.get(&format!("/v1/notifications/{left}/attempts")).await;
    let attempts = attempts["data"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(attempts[0]["error"]["code"], "not_pulled", "{failed}");
    assert_eq!(attempts[0]["duration_ms"], 2000, "{attempts:?}");
    // Its wait started at its due time moved on by the disabled span
    // (which began before `disabled_by` and ended after `enabled_from`).
    let started = time(&attempts[0]["started_at"]);
    assert!(
        started >= due + (enabled_from - disabled_by),
        "its wait counted the disabled time: due {due}, disabled by {disabled_by}, \
         enabled from {enabled_from}, waited from {started}"
    );
}
both!(a_disabled_pull_endpoint_offers_nothing_and_its_max_wait_counts_only_while_enabled);

async fn a_pull_waiting_as_its_endpoint_is_disabled_takes_nothing(backend: Backend) {
    let app = backend.spawn().await;
    let endpoint = pull_endpoint(&app, json!({})).await;
    let endpoint_id: uuid::Uuid = endpoint.parse().unwrap();
    let waiting = pull(&app, &endpoint, json!({"wait": "5s", "lease": "1m"}));
    let meanwhile = async {
        eventually(DEADLINE, "the pull to wait", || async {
            (app.state.service.pull_waiters(endpoint_id) == 1).then_some(())
        })
        .await;
        set_disabled(&app, &endpoint, true).await;
        // Its creation wakes the waiting pull, which must not take it.
        notify(&app, &endpoint, json!({})).await
    };
    let (taken, created) = tokio::join!(waiting, meanwhile);
    assert!(taken.is_empty(), "taken while disabled: {taken:?}");
    let (_, read) = app.get(&format!("/v1/notifications/{created}")).await;
    assert_eq!(read["status"], "pending", "{read}");
    assert_eq!(read["attempts"], 0, "{read}");

    set_disabled(&app, &endpoint, false).await;
    let taken = pull(&app, &endpoint, json!({"wait": "5s"})).await;
    assert_eq!(ids(&taken), [created.as_str()]);
}
both!(a_pull_waiting_as_its_endpoint_is_disabled_takes_nothing);
