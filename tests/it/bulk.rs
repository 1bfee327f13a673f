//! Bulk actions by filter (docs/design.md §18) on each backend:
//! `POST /v1/notifications/retry` counts (`dry_run`), then restarts, the
//! failed notifications of one endpoint that its filter holds (type and
//! key, a notification's own or its event's; created window), each
//! delivered once; `POST /v1/notifications/cancel` with a filter counts,
//! then cancels, the pending ones; each leaves every other notification
//! as it was; bad input is refused naming its field; both need `write`.

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::backends::Backend;
use crate::helpers::{eventually, TestApp, TOKEN};
use crate::receiver::{Receiver, Reply};

const DEADLINE: Duration = Duration::from_secs(30);

/// Creates what `body` asks at `path` and returns the notification ids it
/// made (a batch's items, or an event's deliveries).
async fn created(app: &TestApp, path: &str, body: Value) -> Vec<Uuid> {
    let (status, created) = app.post(path, body).await;
    assert!(status.is_success(), "{status} {created}");
    let ids = match path {
        "/v1/events" => {
            let id = created["id"].as_str().unwrap();
            let (_, deliveries) = app
                .get(&format!("/v1/notifications?event={id}&limit=100"))
                .await;
            deliveries["data"].as_array().unwrap().clone()
        }
        _ => created["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["notification"].clone())
            .collect(),
    };
    ids.iter()
        .map(|n| n["id"].as_str().unwrap().parse().unwrap())
        .collect()
}

async fn status_of(app: &TestApp, id: Uuid) -> String {
    let (_, n) = app.get(&format!("/v1/notifications/{id}")).await;
    n["status"].as_str().unwrap_or_default().to_string()
}

async fn a_bulk_retry_counts_then_restarts_only_the_failed_notifications_its_filter_holds(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply("/down", vec![Reply::status(503)]);
    // One attempt a series: a notification fails at once.
    for uid in ["shop", "other"] {
        app.endpoint(json!({"uid": uid, "owner": format!("{uid}-owner"),
            "url": receiver.url("/down"), "schedule": ["0s"]}))
            .await;
    }
    // On "shop": paid and refunded, keys order-000 to order-029; on
    // "other", the same paid ones.
    let items = |endpoint: &str| -> Vec<Value> {
        (0..30)
            .map(|i| {
                let event_type = if i % 3 == 0 {
                    "order.refunded"
                } else {
                    "order.paid"
                };
                json!({"endpoint": endpoint, "event_type": event_type,
                    "key": format!("order-{i:03}"), "payload": {"i": i}})
            })
            .collect()
    };
    let shop = created(
        &app,
        "/v1/notifications/batch",
        json!({"notifications": items("shop")}),
    )
    .await;
    let other = created(
        &app,
        "/v1/notifications/batch",
        json!({"notifications": items("other")}),
    )
    .await;
    // An event's delivery: its type and key are the event's.
    let from_event = created(
        &app,
        "/v1/events",
        json!({"event_type": "order.paid", "owner": "shop-owner", "key": "order-015-event",
            "payload": {"event": true}}),
    )
    .await;
    assert_eq!(from_event.len(), 1);
    let every = shop.len() + other.len() + from_event.len();
    eventually(DEADLINE, "every notification to fail", || async {
        let failed = backend
            .count("SELECT count(*) FROM notifications WHERE status = 'failed'")
            .await;
        (failed == every as i64).then_some(())
    })
    .await;

    // Paid, keys order-010 to order-019 (the prefix), and the event's.
    let wanted: BTreeSet<Uuid> = (10..20)
        .filter(|i| i % 3 != 0)
        .map(|i| shop[i])
        .chain(from_event.iter().copied())
        .collect();
    let filter = json!({"endpoint": "shop", "event_type": "order.paid", "key_prefix": "order-01"});
    let mut dry = filter.clone();
    dry["dry_run"] = json!(true);
    let (status, counted) = app.post("/v1/notifications/retry", dry).await;
    assert_eq!(status, StatusCode::OK, "{counted}");
    assert_eq!(counted, json!({"matched": wanted.len()}));
    for id in shop.iter().chain(&other) {
        assert_eq!(
            status_of(&app, *id).await,
            "failed",
            "a dry run changes nothing"
        );
    }
    // Failed since an hour ago (the console's "failed in the last hour"),
    // in the list and in the retry's count; since a minute ahead is
    // refused, as a recover's window in the future is.
    let hour_ago = (chrono::Utc::now() - chrono::Duration::hours(1)).to_rfc3339();
    let mut dry = filter.clone();
    dry["dry_run"] = json!(true);
    dry["completed_after"] = json!(hour_ago);
    let (status, counted) = app.post("/v1/notifications/retry", dry.clone()).await;
    assert_eq!(status, StatusCode::OK, "{counted}");
    assert_eq!(counted, json!({"matched": wanted.len()}));
    dry["completed_after"] =
        json!((chrono::Utc::now() + chrono::Duration::minutes(1)).to_rfc3339());
    let (status, refused) = app.post("/v1/notifications/retry", dry).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["field"], "completed_after", "{refused}");
    let since: String = url::form_urlencoded::byte_serialize(hour_ago.as_bytes()).collect();
    let path =
        format!("/v1/notifications?endpoint=shop&status=failed&completed_after={since}&limit=100");
    let (status, page) = app.get(&path).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(
        page["data"].as_array().unwrap().len(),
        shop.len() + from_event.len(),
        "{page}"
    );

    // The receiver is back.
    let (status, body) = app
        .call(
            reqwest::Method::PATCH,
            "/v1/endpoints/shop",
            Some(json!({"url": receiver.url("/back")})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, started) = app.post("/v1/notifications/retry", filter).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{started}");
    assert_eq!(started["kind"], json!("retry"));
    assert_eq!(
        started["filter"],
        json!({"event_type": "order.paid", "key_prefix": "order-01"})
    );
    let id = started["id"].as_str().unwrap();
    let operation = eventually(DEADLINE, "the retry to end", || async {
        let (_, operation) = app.get(&format!("/v1/operations/{id}")).await;
        (operation["status"] != json!("running")).then_some(operation)
    })
    .await;
    assert_eq!(operation["status"], json!("done"), "{operation}");
    assert_eq!(operation["matched"], json!(wanted.len()), "{operation}");
    assert_eq!(operation["started"], json!(wanted.len()), "{operation}");

    receiver
        .wait_distinct("/back", wanted.len(), DEADLINE)
        .await;
    for id in &wanted {
        let id = *id;
        eventually(DEADLINE, "a restarted one to succeed", || async {
            (status_of(&app, id).await == "succeeded").then_some(())
        })
        .await;
    }
    for id in shop.iter().chain(&other).filter(|id| !wanted.contains(id)) {
        assert_eq!(status_of(&app, *id).await, "failed", "{id} is left alone");
    }
    assert_eq!(
        receiver.received("/back").len(),
        wanted.len(),
        "each delivered once"
    );

    // Created after every one of them: nothing.
    let later = (chrono::Utc::now() + chrono::Duration::seconds(1)).to_rfc3339();
    let (status, none) = app
        .post(
            "/v1/notifications/retry",
            json!({"endpoint": "shop", "created_after": later, "dry_run": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{none}");
    assert_eq!(none, json!({"matched": 0}));
}
both!(a_bulk_retry_counts_then_restarts_only_the_failed_notifications_its_filter_holds);

async fn a_bulk_retry_with_bad_input_is_refused_naming_the_field(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "shop"})).await;
    let cases = [
        (json!({}), "missing_field", "endpoint"),
        (
            json!({"endpoint": "nobody"}),
            "unknown_endpoint",
            "endpoint",
        ),
        (
            json!({"endpoint": "shop", "status": "pending"}),
            "invalid_value",
            "status",
        ),
        (
            json!({"endpoint": "shop", "event_type": "no spaces"}),
            "invalid_value",
            "event_type",
        ),
        (
            json!({"endpoint": "shop", "key_prefix": ""}),
            "invalid_value",
            "key_prefix",
        ),
        (
            json!({"endpoint": "shop", "created_after": "yesterday"}),
            "invalid_value",
            "created_after",
        ),
        (
            json!({"endpoint": "shop", "completed_after": "an hour ago"}),
            "invalid_value",
            "completed_after",
        ),
        // Nothing has failed there yet; the dry run says so too.
        (
            json!({"endpoint": "shop", "completed_after": "2999-01-01T00:00:00Z"}),
            "invalid_value",
            "completed_after",
        ),
        (
            json!({"endpoint": "shop", "completed_after": "2999-01-01T00:00:00Z",
                "dry_run": true}),
            "invalid_value",
            "completed_after",
        ),
        (
            json!({"endpoint": "shop", "created_after": "2026-11-30T10:00:00Z",
                "created_before": "2026-11-30T09:00:00Z"}),
            "invalid_value",
            "created_before",
        ),
    ];
    for (body, code, field) in cases {
        let (status, refused) = app.post("/v1/notifications/retry", body.clone()).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}: {refused}"
        );
        assert_eq!(refused["error"]["code"], json!(code), "{body}: {refused}");
        assert_eq!(refused["error"]["field"], json!(field), "{body}: {refused}");
    }
    let (status, refused) = app
        .post(
            "/v1/notifications/retry",
            json!({"endpoint": "shop", "everything": true}),
        )
        .await;
    assert!(status.is_client_error(), "{status} {refused}");
    assert!(refused["error"]["message"]
        .as_str()
        .unwrap()
        .contains("everything"));
}
both!(a_bulk_retry_with_bad_input_is_refused_naming_the_field);

async fn a_bulk_retry_needs_write(backend: Backend) {
    const READ_TOKEN: &str = "bulk-read-token-0123456789abcdefghij";
    let app = backend
        .spawn_with(&format!(
            "[api]\ntokens = [\"{TOKEN}\", \
             {{ name = \"dashboard\", token = \"{READ_TOKEN}\", scopes = [\"read\"] }}]\n"
        ))
        .await;
    app.endpoint(json!({"uid": "shop"})).await;
    let refused = crate::helpers::http_client()
        .post(format!("{}/v1/notifications/retry", app.base))
        .bearer_auth(READ_TOKEN)
        .json(&json!({"endpoint": "shop", "dry_run": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let (status, counted) = app
        .post(
            "/v1/notifications/retry",
            json!({"endpoint": "shop", "dry_run": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{counted}");
    assert_eq!(counted, json!({"matched": 0}));
}
both!(a_bulk_retry_needs_write);

async fn a_bulk_cancel_counts_then_cancels_only_the_pending_notifications_its_filter_holds(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    for uid in ["shop", "other"] {
        app.endpoint(json!({"uid": uid, "url": receiver.url("/hook")}))
            .await;
    }
    // Waiting an hour: paid and refunded, keys order-000 to order-029, on
    // both endpoints.
    let items = |endpoint: &str| -> Vec<Value> {
        (0..30)
            .map(|i| {
                let event_type = if i % 3 == 0 {
                    "order.refunded"
                } else {
                    "order.paid"
                };
                json!({"endpoint": endpoint, "event_type": event_type, "delay": "1h",
                    "key": format!("order-{i:03}"), "payload": {"i": i}})
            })
            .collect()
    };
    let shop = created(
        &app,
        "/v1/notifications/batch",
        json!({"notifications": items("shop")}),
    )
    .await;
    let other = created(
        &app,
        "/v1/notifications/batch",
        json!({"notifications": items("other")}),
    )
    .await;
    // Delivered at once: it matches, but has ended.
    let sent = app
        .notify(
            json!({"endpoint": "shop", "event_type": "order.paid", "key": "order-019-sent",
            "payload": {}}),
        )
        .await;
    eventually(DEADLINE, "the one sent to succeed", || async {
        let (_, n) = app.get(&format!("/v1/notifications/{sent}")).await;
        (n["status"] == "succeeded").then_some(())
    })
    .await;

    let wanted: BTreeSet<Uuid> = (10..20).filter(|i| i % 3 != 0).map(|i| shop[i]).collect();
    let filter = json!({"endpoint": "shop", "event_type": "order.paid", "key_prefix": "order-01"});
    let mut dry = filter.clone();
    dry["dry_run"] = json!(true);
    let (status, counted) = app.post("/v1/notifications/cancel", dry).await;
    assert_eq!(status, StatusCode::OK, "{counted}");
    assert_eq!(counted, json!({"matched": wanted.len()}));
    assert_eq!(
        status_of(&app, shop[10]).await,
        "pending",
        "a dry run changes nothing"
    );

    let (status, started) = app.post("/v1/notifications/cancel", filter).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{started}");
    assert_eq!(started["kind"], json!("cancel"));
    let id = started["id"].as_str().unwrap();
    let operation = eventually(DEADLINE, "the cancel to end", || async {
        let (_, operation) = app.get(&format!("/v1/operations/{id}")).await;
        (operation["status"] != json!("running")).then_some(operation)
    })
    .await;
    assert_eq!(operation["status"], json!("done"), "{operation}");
    assert_eq!(operation["matched"], json!(wanted.len()), "{operation}");
    assert_eq!(operation["started"], json!(wanted.len()), "{operation}");
    for id in shop.iter().chain(&other) {
        let want = if wanted.contains(id) {
            "cancelled"
        } else {
            "pending"
        };
        assert_eq!(status_of(&app, *id).await, want, "{id}");
    }
    let (_, n) = app.get(&format!("/v1/notifications/{sent}")).await;
    assert_eq!(n["status"], "succeeded");

    // A cancel by key takes no filter; a cancel by filter changes pending
    // ones only.
    for (body, field) in [
        (
            json!({"key": "order-001", "event_type": "order.paid"}),
            "key",
        ),
        (json!({"endpoint": "shop", "status": "failed"}), "status"),
        (json!({"event_type": "order.paid"}), "key"),
    ] {
        let (status, refused) = app.post("/v1/notifications/cancel", body.clone()).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}: {refused}"
        );
        assert_eq!(refused["error"]["field"], json!(field), "{body}: {refused}");
    }
}
both!(a_bulk_cancel_counts_then_cancels_only_the_pending_notifications_its_filter_holds);
