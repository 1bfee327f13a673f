//! What changes between attempts: a retry's fresh series, a rotated
//! secret, an endpoint edited under a running dispatcher; and the metrics
//! of real deliveries. On each backend.

use super::*;

async fn retry_restarts_a_failed_notification_with_a_fresh_series(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply(
        "/flaky",
        vec![Reply::status(500), Reply::status(500), Reply::status(200)],
    );
    app.endpoint(
        json!({"uid": "flaky", "url": receiver.url("/flaky"), "schedule": ["0s", "50ms"]}),
    )
    .await;
    let id = app
        .notify(json!({"endpoint": "flaky", "payload": {}}))
        .await;
    wait_status(&app, &id, "failed").await;
    let (status, retried) = app
        .call(Method::POST, &format!("/v1/notifications/{id}/retry"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{retried}");
    assert_eq!(retried["status"], json!("pending"));
    let done = wait_status(&app, &id, "succeeded").await;
    assert_eq!(done["attempts"], json!(3));
    let got = receiver.received("/flaky");
    assert_eq!(got[2].header("hookd-attempt"), Some("3"));
    // Succeeded notifications cannot be retried.
    let (status, body) = app
        .call(Method::POST, &format!("/v1/notifications/{id}/retry"), None)
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["error"]["code"], json!("not_retryable"));
}
both!(retry_restarts_a_failed_notification_with_a_fresh_series);

/// Nothing sends a deleted endpoint's notifications (the dispatcher
/// cancels what one holds), so a retry of its failed one is refused,
/// rather than answering `pending` and the notification then ending
/// `cancelled` without an attempt (a black-box pass found that).
async fn a_failed_notification_of_a_deleted_endpoint_is_not_retried(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply("/gone", vec![Reply::status(500)]);
    app.endpoint(json!({"uid": "gone", "url": receiver.url("/gone"), "schedule": ["0s"]}))
        .await;
    let id = app.notify(json!({"endpoint": "gone", "payload": {}})).await;
    wait_status(&app, &id, "failed").await;
    let (status, body) = app.call(Method::DELETE, "/v1/endpoints/gone", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let (status, body) = app
        .call(Method::POST, &format!("/v1/notifications/{id}/retry"), None)
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], json!("not_retryable"));
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("endpoint was deleted"), "{message}");
    let (_, after) = app.get(&format!("/v1/notifications/{id}")).await;
    assert_eq!(after["status"], json!("failed"), "{after}");
    assert_eq!(after["attempts"], json!(1));
}
both!(a_failed_notification_of_a_deleted_endpoint_is_not_retried);

async fn after_a_rotation_both_the_new_and_the_old_secret_verify(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    let created = app
        .endpoint(json!({"uid": "rot", "url": receiver.url("/rot")}))
        .await;
    let (_, rotated) = app
        .call(Method::POST, "/v1/endpoints/rot/secret/rotate", None)
        .await;
    app.notify(json!({"endpoint": "rot", "payload": {"x": 1}}))
        .await;
    let got = receiver.wait_for("/rot", 1, DEADLINE).await;
    let signatures = got[0].header("webhook-signature").unwrap();
    assert_eq!(signatures.split(' ').count(), 2, "{signatures}");
    for secret in [&created["secret"], &rotated["secret"]] {
        let webhook = standardwebhooks::Webhook::new(secret.as_str().unwrap()).unwrap();
        webhook
            .verify(&got[0].body, &got[0].headers)
            .expect("verifies");
    }
}
both!(after_a_rotation_both_the_new_and_the_old_secret_verify);

async fn a_running_dispatcher_delivers_with_the_endpoint_as_it_is_now(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    app.endpoint(json!({"uid": "moving", "url": receiver.url("/old")}))
        .await;
    app.notify(json!({"endpoint": "moving", "payload": {"n": 1}}))
        .await;
    receiver.wait_for("/old", 1, DEADLINE).await;

    // Through the API...
    let (status, patched) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/moving",
            Some(json!({"url": receiver.url("/new"), "headers": {"X-Tenant": "b"}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{patched}");
    app.notify(json!({"endpoint": "moving", "payload": {"n": 2}}))
        .await;
    let got = receiver.wait_for("/new", 1, DEADLINE).await;
    assert_eq!(got[0].header("x-tenant"), Some("b"));

    // ...and by another writer of the database (another process), which no
    // cache of this process hears of: it raises the row's version, as
    // every change hookd writes does.
    backend
        .execute(
            "UPDATE endpoints SET url = $1, version = version + 1 WHERE uid = 'moving'",
            &[&receiver.url("/newer")],
        )
        .await;
    app.notify(json!({"endpoint": "moving", "payload": {"n": 3}}))
        .await;
    receiver.wait_for("/newer", 1, DEADLINE).await;
    assert_eq!(receiver.received("/old").len(), 1);
    assert_eq!(receiver.received("/new").len(), 1);
}
both!(a_running_dispatcher_delivers_with_the_endpoint_as_it_is_now);

async fn metrics_count_real_deliveries_and_api_requests(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    let scrape = || crate::helpers::scrape_metrics(&app.client, &app.base);
    let before = scrape().await;
    app.endpoint(json!({"uid": "shop", "url": receiver.url("/hook")}))
        .await;
    let id = app.notify(json!({"endpoint": "shop", "payload": {}})).await;
    wait_status(&app, &id, "succeeded").await;
    let after = scrape().await;
    let delivered = r#"hookd_deliveries_total{outcome="succeeded",status_class="2xx"}"#;
    assert!(
        metric(&after, delivered) >= metric(&before, delivered) + 1.0,
        "{after}"
    );
    assert!(
        metric(&after, "hookd_notifications_created_total")
            >= metric(&before, "hookd_notifications_created_total") + 1.0
    );
    // The in-flight gauge's handle is made once per dispatcher: it still
    // reaches the scrape.
    assert!(
        after
            .lines()
            .any(|l| l.starts_with("hookd_deliveries_in_flight ")),
        "{after}"
    );
    for histogram in [
        "hookd_delivery_duration_seconds_count",
        "hookd_delivery_lateness_seconds_count",
    ] {
        assert!(
            metric(&after, histogram) >= metric(&before, histogram) + 1.0,
            "{histogram} moved: {after}"
        );
    }
    let created =
        r#"hookd_api_requests_total{route="/v1/notifications",method="POST",status="201"}"#;
    assert!(
        metric(&after, created) >= metric(&before, created) + 1.0,
        "{after}"
    );
    // A method nobody uses is counted, under a bounded label.
    let invented = reqwest::Method::from_bytes(b"FROBNICATE").unwrap();
    app.client
        .request(invented, format!("{}/v1/notifications", app.base))
        .send()
        .await
        .unwrap();
    let last = scrape().await;
    assert!(!last.contains("FROBNICATE"), "{last}");
    assert!(last.contains(r#"method="other""#), "{last}");
    // Labels carry route templates, never ids.
    assert!(
        after.contains(r#"route="/v1/notifications/{id}""#),
        "{after}"
    );
    assert!(!after.contains(&id), "no notification id in any label");
}
both!(metrics_count_real_deliveries_and_api_requests);
