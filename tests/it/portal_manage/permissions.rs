//! A link's permissions: it does only what they say (read, retry,
//! manage, and an owner's link over the owner's endpoints only), and they
//! are checked when the link is issued. On each backend.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::{forbidden, patch, post, MANAGE};
use crate::backends::Backend;
use crate::portal::{as_token, get, issue, settings, KEY};

async fn a_link_does_only_what_its_permissions_say(backend: Backend) {
    let app = backend.spawn_with(&settings(KEY)).await;
    app.endpoint(json!({"uid": "mine", "owner": "merchant-42"}))
        .await;
    app.endpoint(json!({"uid": "sibling", "owner": "merchant-42"}))
        .await;
    app.endpoint(json!({"uid": "stranger", "owner": "merchant-7"}))
        .await;
    let id = app
        .notify(json!({"endpoint": "mine", "payload": {}, "delay": "1h"}))
        .await;
    let retry = format!("/v1/notifications/{id}/retry");

    let (read_only, _) = issue(
        &app,
        "/v1/endpoints/mine/portal",
        json!({"permissions": ["read"]}),
    )
    .await;
    let (status, who) = get(&app, &read_only, "/v1/whoami").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(who["permissions"], json!(["read"]));
    assert_eq!(
        get(&app, &read_only, &format!("/v1/notifications/{id}"))
            .await
            .0,
        StatusCode::OK
    );
    let (status, answer) = post(&app, &read_only, &retry, None).await;
    forbidden(status, &answer, "a read-only link's retry");
    assert!(answer["error"]["message"]
        .as_str()
        .unwrap()
        .contains("`retry`"));

    // The default, as before permissions existed: read and retry, not manage.
    let (default, _) = issue(&app, "/v1/endpoints/mine/portal", json!({})).await;
    let (_, who) = get(&app, &default, "/v1/whoami").await;
    assert_eq!(who["permissions"], json!(["read", "retry"]));
    assert_eq!(post(&app, &default, &retry, None).await.0, StatusCode::OK);
    for (method, path, body) in [
        (
            Method::PATCH,
            "/v1/endpoints/mine",
            Some(json!({"url": "http://127.0.0.1:9/x"})),
        ),
        (Method::GET, "/v1/endpoints/mine/secret", None),
        (Method::POST, "/v1/endpoints/mine/secret/rotate", None),
        (Method::POST, "/v1/endpoints/mine/test", None),
    ] {
        let (status, answer) = as_token(&app, &default, method.clone(), path, body).await;
        forbidden(status, &answer, &format!("{method} {path} without manage"));
        assert!(answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`manage`"));
    }

    // An owner's manage link manages each of the owner's endpoints, and
    // only those.
    let (owner, _) = issue(
        &app,
        "/v1/owners/merchant-42/portal",
        json!({"permissions": MANAGE}),
    )
    .await;
    for uid in ["mine", "sibling"] {
        let path = format!("/v1/endpoints/{uid}");
        let (status, answer) =
            patch(&app, &owner, &path, json!({"event_types": ["order.paid"]})).await;
        assert_eq!(status, StatusCode::OK, "{uid}: {answer}");
    }
    let (status, _) = patch(
        &app,
        &owner,
        "/v1/endpoints/stranger",
        json!({"event_types": ["x"]}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, stranger) = app.get("/v1/endpoints/stranger").await;
    assert_eq!(stranger["event_types"], Value::Null);
}
both!(a_link_does_only_what_its_permissions_say);

async fn permissions_are_checked_when_a_link_is_issued(backend: Backend) {
    let app = backend.spawn_with(&settings(KEY)).await;
    app.endpoint(json!({"uid": "mine"})).await;
    for permissions in [
        json!([]),
        json!(["retry"]),
        json!(["read", "read"]),
        json!(["read", "admin"]),
        json!(["Read"]),
        json!(["read", "retry", "manage", "read"]),
    ] {
        let body = json!({"permissions": permissions});
        let (status, answer) = app.post("/v1/endpoints/mine/portal", body.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {answer}");
        let (status, answer) = app
            .post("/v1/owners/merchant-42/portal", body.clone())
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {answer}");
    }
    let (status, answer) = app
        .post(
            "/v1/endpoints/mine/portal",
            json!({"permissions": ["read", "admin"]}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(answer["error"]["field"], "permissions", "{answer}");
    let (status, answer) = app
        .post(
            "/v1/endpoints/mine/portal",
            json!({"permissions": "manage"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
}
both!(permissions_are_checked_when_a_link_is_issued);
