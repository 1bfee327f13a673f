//! #47: a portal link lives no longer than what it shows. After its
//! endpoint was deleted a link still listed its notifications, payloads
//! included, for up to 7 days, and its retry turned a `failed` one into
//! `cancelled`; and the only way to withdraw one link was to rotate
//! `portal.key`, which withdrew every link of every endpoint.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::backends::Backend;
use crate::helpers::eventually;
use crate::portal::{as_token, get, issue, settings, KEY, READ_TOKEN};
use crate::receiver::{Receiver, Reply};

const DEADLINE: Duration = Duration::from_secs(20);

async fn an_endpoint_link_is_refused_once_its_endpoint_is_deleted(backend: Backend) {
    let app = backend.spawn_with(&settings(KEY)).await;
    let receiver = Receiver::start().await;
    receiver.reply("/gone", vec![Reply::status(400)]);
    app.endpoint(json!({"uid": "gone", "url": receiver.url("/gone"), "schedule": ["0s"]}))
        .await;
    let id = app
        .notify(json!({"endpoint": "gone", "payload": {"order": 1}}))
        .await;
    let path = format!("/v1/notifications/{id}");
    eventually(DEADLINE, "the notification to fail", || async {
        let (_, n) = app.get(&path).await;
        (n["status"] == json!("failed")).then_some(())
    })
    .await;
    let (link, _) = issue(&app, "/v1/endpoints/gone/portal", json!({})).await;
    let (status, page) = get(&app, &link, "/v1/notifications").await;
    assert_eq!(status, StatusCode::OK, "{page}");

    let (status, _) = app.call(Method::DELETE, "/v1/endpoints/gone", None).await;
    assert_eq!(status, StatusCode::OK);
    for (method, route) in [
        (Method::GET, "/v1/notifications".to_string()),
        (Method::GET, path.clone()),
        (Method::GET, format!("{path}/attempts")),
        (Method::POST, format!("{path}/retry")),
        (Method::GET, "/v1/whoami".to_string()),
    ] {
        let (status, body) = as_token(&app, &link, method, &route, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{route}: {body}");
        assert_eq!(body["error"]["code"], json!("unauthorized"), "{body}");
    }
    let (_, n) = app.get(&path).await;
    assert_eq!(
        n["status"],
        json!("failed"),
        "the link's retry changed nothing"
    );
}
both!(an_endpoint_link_is_refused_once_its_endpoint_is_deleted);

async fn an_owner_link_is_refused_while_its_owner_has_no_live_endpoint(backend: Backend) {
    let app = backend.spawn_with(&settings(KEY)).await;
    let (nobody, _) = issue(&app, "/v1/owners/m-nobody/portal", json!({})).await;
    let (status, _) = get(&app, &nobody, "/v1/notifications").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    app.endpoint(json!({"uid": "m1-shop", "owner": "m-1"}))
        .await;
    let (link, _) = issue(&app, "/v1/owners/m-1/portal", json!({})).await;
    let (status, _) = get(&app, &link, "/v1/notifications").await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = app
        .call(Method::DELETE, "/v1/endpoints/m1-shop", None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = get(&app, &link, "/v1/notifications").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}
both!(an_owner_link_is_refused_while_its_owner_has_no_live_endpoint);

async fn revoking_an_endpoints_links_refuses_them_and_no_others(backend: Backend) {
    let app = backend.spawn_with(&settings(KEY)).await;
    app.endpoint(json!({"uid": "a"})).await;
    app.endpoint(json!({"uid": "b"})).await;
    let (a_old, _) = issue(&app, "/v1/endpoints/a/portal", json!({})).await;
    let (b_link, _) = issue(&app, "/v1/endpoints/b/portal", json!({})).await;

    // Revoking needs `admin`: a `read` token is refused, and so is a link.
    let (status, _) = as_token(
        &app,
        READ_TOKEN,
        Method::POST,
        "/v1/endpoints/a/portal/revoke",
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = as_token(
        &app,
        &a_old,
        Method::POST,
        "/v1/endpoints/a/portal/revoke",
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    let (status, revoked) = app.post("/v1/endpoints/a/portal/revoke", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{revoked}");
    assert_eq!(revoked["generation"], json!(1));
    let (status, _) = get(&app, &a_old, "/v1/notifications").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "the old link is revoked");
    let (status, _) = get(&app, &b_link, "/v1/notifications").await;
    assert_eq!(
        status,
        StatusCode::OK,
        "another endpoint's link still works"
    );
    let (a_new, _) = issue(&app, "/v1/endpoints/a/portal", json!({})).await;
    let (status, _) = get(&app, &a_new, "/v1/notifications").await;
    assert_eq!(
        status,
        StatusCode::OK,
        "a link issued after the revocation works"
    );
    let (status, _) = app
        .post("/v1/endpoints/nope/portal/revoke", json!({}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
both!(revoking_an_endpoints_links_refuses_them_and_no_others);
