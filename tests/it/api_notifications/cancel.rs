//! Cancelling by id and by business key, and a notification's attempts
//! before its first and when it is unknown. On each backend.

use super::*;

async fn cancelling_by_id_stops_a_pending_notification_and_removes_it_from_the_index(
    backend: Backend,
) {
    let app = backend.spawn().await;
    index_complete(&app).await;
    app.endpoint(json!({"uid": "shop"})).await;
    let (_, created) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "shop", "payload": {}, "delay": "1h"}),
        )
        .await;
    assert_eq!(due_in_index(&app).await, 1);
    let path = format!("/v1/notifications/{}/cancel", id(&created));
    let (status, cancelled) = app.call(Method::POST, &path, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(cancelled["status"], json!("cancelled"));
    assert!(cancelled["next_attempt_at"].is_null());
    assert_eq!(due_in_index(&app).await, 0);
    if !backend.is_embedded() {
        assert!(app.index().due_at(id(&created)).await.unwrap().is_none());
    }
    // Cancelling again is harmless.
    let (status, _) = app.call(Method::POST, &path, None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = app
        .call(
            Method::POST,
            &format!("/v1/notifications/{}/cancel", Uuid::now_v7()),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
both!(cancelling_by_id_stops_a_pending_notification_and_removes_it_from_the_index);

async fn cancelling_by_key_stops_every_pending_notification_with_that_key(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "a"})).await;
    app.endpoint(json!({"uid": "b"})).await;
    for endpoint in ["a", "b"] {
        app.post(
            "/v1/notifications",
            json!({"endpoint": endpoint, "payload": {}, "key": "order-9", "delay": "1h"}),
        )
        .await;
    }
    app.post(
        "/v1/notifications",
        json!({"endpoint": "a", "payload": {}, "key": "order-10", "delay": "1h"}),
    )
    .await;
    let (status, body) = app
        .post(
            "/v1/notifications/cancel",
            json!({"key": "order-9", "endpoint": "a"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["cancelled"], json!(1));
    let (_, body) = app
        .post("/v1/notifications/cancel", json!({"key": "order-9"}))
        .await;
    assert_eq!(body["cancelled"], json!(1));
    let (_, pending) = app.get("/v1/notifications?status=pending").await;
    assert_eq!(pending["data"].as_array().unwrap().len(), 1);
    assert_eq!(pending["data"][0]["key"], json!("order-10"));
}
both!(cancelling_by_key_stops_every_pending_notification_with_that_key);

async fn a_new_notification_has_no_attempts_and_an_unknown_one_is_not_found(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "shop"})).await;
    let (_, created) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "shop", "payload": {}, "delay": "1h"}),
        )
        .await;
    let (status, attempts) = app
        .get(&format!("/v1/notifications/{}/attempts", id(&created)))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(attempts, json!({"data": [], "next_cursor": null}));
    let (status, _) = app
        .get(&format!("/v1/notifications/{}/attempts", Uuid::now_v7()))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app
        .get(&format!("/v1/notifications/{}", Uuid::now_v7()))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
both!(a_new_notification_has_no_attempts_and_an_unknown_one_is_not_found);
