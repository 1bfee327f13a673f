//! A cancel against a dispatcher: a notification cancelled while it waits
//! claimed for its due time, or before it, is never sent, and an attempt
//! already on the wire is listed and counted. On each backend.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::{attempts, wait_status, DEADLINE};
use crate::backends::Backend;
use crate::helpers::eventually;
use crate::receiver::{Receiver, Reply};

async fn a_notification_cancelled_while_it_waits_claimed_for_its_due_time_is_not_sent(
    backend: Backend,
) {
    // Claimed ahead of its due time, a notification waits in the dispatcher
    // (here for half a second); a cancel then still keeps it unsent.
    let app = backend
        .spawn_with("[dispatcher]\nclaim_ahead_ms = 1000\n")
        .await;
    let receiver = Receiver::start().await;
    app.endpoint(json!({"uid": "later", "url": receiver.url("/later")}))
        .await;
    let held = app
        .notify(json!({"endpoint": "later", "payload": {"n": "held"}, "delay": "2s"}))
        .await;
    let held_id: uuid::Uuid = held.parse().unwrap();
    eventually(DEADLINE, "the dispatcher to claim it early", || async {
        let leased = app.state.due.leased(held_id, chrono::Utc::now()).await;
        leased.unwrap().then_some(())
    })
    .await;
    let (status, body) = app
        .post(&format!("/v1/notifications/{held}/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // One due after it: once it arrives, the first one's due time is past.
    app.notify(json!({"endpoint": "later", "payload": {"n": "after"}, "delay": "2500ms"}))
        .await;
    receiver.wait_for("/later", 1, DEADLINE).await;
    let sent: Vec<Value> = receiver
        .received("/later")
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert_eq!(sent, [json!({"n": "after"})]);
    assert_eq!(wait_status(&app, &held, "cancelled").await["attempts"], 0);
    assert!(attempts(&app, &held).await.is_empty());
}
both!(a_notification_cancelled_while_it_waits_claimed_for_its_due_time_is_not_sent);

async fn a_cancelled_notification_is_never_sent(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    app.endpoint(json!({"uid": "shop", "url": receiver.url("/hook")}))
        .await;
    let cancelled = app
        .notify(json!({"endpoint": "shop", "payload": {"n": "cancelled"}, "delay": "300ms"}))
        .await;
    let (status, _) = app
        .call(
            Method::POST,
            &format!("/v1/notifications/{cancelled}/cancel"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    // A sentinel due after the cancelled one: once it arrives, the cancelled
    // one's time has passed.
    let sentinel = app
        .notify(json!({"endpoint": "shop", "payload": {"n": "sentinel"}, "delay": "600ms"}))
        .await;
    let got = receiver.wait_for("/hook", 1, DEADLINE).await;
    wait_status(&app, &sentinel, "succeeded").await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].header("webhook-id"), Some(sentinel.as_str()));
    assert!(attempts(&app, &cancelled).await.is_empty());
}
both!(a_cancelled_notification_is_never_sent);

async fn an_attempt_on_the_wire_at_a_cancel_is_listed_and_counted_and_the_status_stays(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    let gate = std::sync::Arc::new(tokio::sync::Notify::new());
    receiver.reply("/hook", vec![Reply::Gated(gate.clone(), 200)]);
    app.endpoint(json!({"uid": "shop", "url": receiver.url("/hook")}))
        .await;
    let id = app.notify(json!({"endpoint": "shop", "payload": {}})).await;
    receiver.wait_for("/hook", 1, DEADLINE).await;
    let (status, cancelled) = app
        .call(
            Method::POST,
            &format!("/v1/notifications/{id}/cancel"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    gate.notify_one();
    let listed = eventually(DEADLINE, "the attempt to be listed", || async {
        let list = attempts(&app, &id).await;
        (!list.is_empty()).then_some(list)
    })
    .await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["status_code"], json!(200));
    let (_, read) = app.get(&format!("/v1/notifications/{id}")).await;
    assert_eq!(read["status"], json!("cancelled"), "{read}");
    assert_eq!(read["attempts"], json!(1), "{read}");
    assert_eq!(read["last_attempt"]["status_code"], json!(200), "{read}");
    assert_eq!(
        read["last_attempt"]["at"], listed[0]["started_at"],
        "{read}"
    );
}
both!(an_attempt_on_the_wire_at_a_cancel_is_listed_and_counted_and_the_status_stays);
