//! #47: a circuit and an endpoint's health count only attempts to the
//! endpoint's own receiver. A per-notification URL elsewhere (any `write`
//! token may name one) once opened the endpoint's circuit, served as its
//! probe and started its `failing_since`.

use std::time::Duration;

use serde_json::json;

use crate::backends::Backend;
use crate::circuit_breaker::{closed, endpoint, notify_many, opened, probes_are_spaced, time};
use crate::helpers::eventually;
use crate::receiver::{Receiver, Reply};

const DEADLINE: Duration = Duration::from_secs(30);
const BREAKER: &str = "[dispatcher.breaker]\nfailures = 3\nopen_ms = 1000\nmax_open_ms = 1000\n";

async fn failures_at_a_per_notification_url_elsewhere_never_open_the_endpoints_circuit(
    backend: Backend,
) {
    let app = backend.spawn_with(BREAKER).await;
    let receiver = Receiver::start().await;
    receiver.reply("/elsewhere/x", vec![Reply::status(503)]);
    // One attempt each: every notification fails once, and no more.
    endpoint(
        &app,
        "victim",
        receiver.url("/victim"),
        json!({"schedule": ["0s"], "max_in_flight": 4}),
    )
    .await;
    // `/victim-evil` shares the endpoint's path as text, not as a path.
    let elsewhere = [receiver.url("/elsewhere/x"), receiver.url("/victim-evil")];
    receiver.reply("/victim-evil", vec![Reply::status(503)]);
    for n in 0..12 {
        let url = &elsewhere[n % 2];
        app.notify(json!({"endpoint": "victim", "payload": {"n": n}, "url": url}))
            .await;
    }
    receiver.wait_for("/elsewhere/x", 6, DEADLINE).await;
    receiver.wait_for("/victim-evil", 6, DEADLINE).await;
    eventually(DEADLINE, "the twelve failures recorded", || async {
        let (_, page) = app
            .get("/v1/notifications?endpoint=victim&status=failed&limit=50")
            .await;
        (page["data"].as_array().map_or(0, Vec::len) == 12).then_some(())
    })
    .await;

    let (_, victim) = app.get("/v1/endpoints/victim").await;
    assert_eq!(victim["circuit"]["state"], json!("closed"), "{victim}");
    assert_eq!(victim["failing_since"], json!(null), "{victim}");
    // Its own notification goes out at once, not held.
    app.notify(json!({"endpoint": "victim", "payload": {"own": true}}))
        .await;
    receiver.wait_for("/victim", 1, DEADLINE).await;
    let (_, victim) = app.get("/v1/endpoints/victim").await;
    assert_eq!(victim["circuit"]["state"], json!("closed"), "{victim}");
    assert_eq!(victim["circuit"]["held"], json!(0), "{victim}");
}
both!(failures_at_a_per_notification_url_elsewhere_never_open_the_endpoints_circuit);

/// A per-notification URL under the endpoint's own is the endpoint's
/// receiver (Alipay's per-order notify_url): its failures do count.
async fn failures_under_the_endpoints_own_url_open_its_circuit(backend: Backend) {
    let app = backend.spawn_with(BREAKER).await;
    let receiver = Receiver::start().await;
    receiver.reply("/shop/orders/1", vec![Reply::status(503)]);
    endpoint(
        &app,
        "shop",
        receiver.url("/shop"),
        json!({"schedule": ["0s"]}),
    )
    .await;
    for n in 0..6 {
        app.notify(json!({"endpoint": "shop", "payload": {"n": n},
            "url": receiver.url("/shop/orders/1")}))
            .await;
    }
    crate::circuit_breaker::opened(&app, "shop").await;
    let (_, shop) = app.get("/v1/endpoints/shop").await;
    assert_ne!(shop["failing_since"], json!(null), "{shop}");
}
both!(failures_under_the_endpoints_own_url_open_its_circuit);

/// An open circuit's probe is always the endpoint's own: a notification
/// for a URL elsewhere, held behind it, is skipped however early it is
/// due. The earliest held one used to be the probe, and another
/// receiver's 200 closed the circuit of an endpoint still down.
async fn an_open_circuit_is_never_probed_with_a_notification_for_a_url_elsewhere(backend: Backend) {
    let app = backend.spawn_with(BREAKER).await;
    let receiver = Receiver::start().await;
    receiver.reply("/victim", vec![Reply::status(503)]);
    // One at a time, retried every 300 ms: its own notifications are due
    // again soon after each failed probe.
    endpoint(&app, "victim", receiver.url("/victim"), json!({})).await;
    notify_many(&app, "victim", 3).await;
    let circuit = opened(&app, "victim").await;
    let settled = time(&circuit["opened_at"]) + chrono::Duration::milliseconds(500);
    // Held behind the open circuit; `/elsewhere` answers 200.
    for n in 0..2 {
        app.notify(json!({"endpoint": "victim", "payload": {"elsewhere": n},
            "url": receiver.url("/elsewhere")}))
            .await;
    }
    // Five probes: by then each held one would have been the earliest
    // due (a failed probe's next attempt is due after the others).
    eventually(DEADLINE, "five probes of /victim", || async {
        let elsewhere = receiver.received("/elsewhere").len();
        assert_eq!(elsewhere, 0, "sent elsewhere while the circuit was open");
        (probes_are_spaced(&receiver, "/victim", settled) >= 5).then_some(())
    })
    .await;
    let (_, victim) = app.get("/v1/endpoints/victim").await;
    assert_ne!(victim["circuit"]["state"], json!("closed"), "{victim}");

    // Back: the next probe closes it, and the held ones go out.
    receiver.reply("/victim", vec![Reply::status(200)]);
    closed(&app, "victim").await;
    receiver.wait_for("/elsewhere", 2, DEADLINE).await;
}
both!(an_open_circuit_is_never_probed_with_a_notification_for_a_url_elsewhere);

/// More notifications for a URL elsewhere due before the endpoint's own
/// than a probe reads through (8 pages of 16) do not keep the endpoint
/// from being probed: the probe falls back to the earliest one without a
/// URL of its own. Before, a `write` token could hold an endpoint's
/// circuit open until its notifications failed `circuit_open`.
async fn an_open_circuit_is_probed_however_many_notifications_for_urls_elsewhere_are_due_first(
    backend: Backend,
) {
    let app = backend.spawn_with(BREAKER).await;
    let receiver = Receiver::start().await;
    receiver.reply("/victim", vec![Reply::status(503)]);
    // Its own are due again 2 s after each failure: after the 140 below.
    endpoint(
        &app,
        "victim",
        receiver.url("/victim"),
        json!({"schedule": ["0s", "2s", "2s", "2s", "2s", "2s", "2s", "2s", "2s", "2s"]}),
    )
    .await;
    notify_many(&app, "victim", 3).await;
    opened(&app, "victim").await;
    let elsewhere: Vec<_> = (0..140)
        .map(|n| {
            json!({"endpoint": "victim", "payload": {"elsewhere": n},
            "url": receiver.url("/elsewhere")})
        })
        .collect();
    let (status, created) = app
        .post(
            "/v1/notifications/batch",
            json!({"notifications": elsewhere}),
        )
        .await;
    assert!(status.is_success(), "{status} {created}");
    // The receiver is back: the next probe of its own closes the circuit.
    receiver.reply("/victim", vec![Reply::status(200)]);
    closed(&app, "victim").await;
    receiver.wait_for("/elsewhere", 140, DEADLINE).await;
}
both!(an_open_circuit_is_probed_however_many_notifications_for_urls_elsewhere_are_due_first);
