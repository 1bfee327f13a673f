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

/// What a portal link's holder gets listing its notifications.
async fn link_status(app: &crate::helpers::TestApp, token: String) -> StatusCode {
    get(app, &token, "/v1/notifications").await.0
}

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

/// An owner with no live endpoint refuses its links and issues none; its
/// refused links stay refused when the owner's name is given to an
/// endpoint again (a merchant offboarded, the name reused: a probe found
/// the old `manage` link reading the new endpoint's secret).
async fn an_owner_link_is_refused_while_its_owner_has_no_live_endpoint(backend: Backend) {
    let app = backend.spawn_with(&settings(KEY)).await;
    let (status, body) = app.post("/v1/owners/m-nobody/portal", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error"]["code"], json!("not_found"), "{body}");

    app.endpoint(json!({"uid": "m1-shop", "owner": "m-1"}))
        .await;
    let (link, _) = issue(
        &app,
        "/v1/owners/m-1/portal",
        json!({"permissions": ["read", "retry", "manage"]}),
    )
    .await;
    let (status, _) = get(&app, &link, "/v1/notifications").await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = app
        .call(Method::DELETE, "/v1/endpoints/m1-shop", None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = get(&app, &link, "/v1/notifications").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = app.post("/v1/owners/m-1/portal", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    app.endpoint(json!({"uid": "m1-next", "owner": "m-1"}))
        .await;
    for route in ["/v1/whoami", "/v1/endpoints/m1-next/secret"] {
        let (status, body) = get(&app, &link, route).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{route}: {body}");
    }
    let (fresh, _) = issue(&app, "/v1/owners/m-1/portal", json!({})).await;
    assert_eq!(
        link_status(&app, fresh).await,
        StatusCode::OK,
        "issued after"
    );

    // An endpoint moved to another owner leaves its links behind, and its
    // old owner's, once that one is empty, stay refused too.
    app.endpoint(json!({"uid": "m2-shop", "owner": "m-2"}))
        .await;
    let (own, _) = issue(&app, "/v1/endpoints/m2-shop/portal", json!({})).await;
    let (owners, _) = issue(&app, "/v1/owners/m-2/portal", json!({})).await;
    let (status, body) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/m2-shop",
            Some(json!({"owner": "m-3"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(link_status(&app, own).await, StatusCode::UNAUTHORIZED);
    app.endpoint(json!({"uid": "m2-next", "owner": "m-2"}))
        .await;
    assert_eq!(link_status(&app, owners).await, StatusCode::UNAUTHORIZED);
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
    let (status, refused) = get(&app, &a_old, "/v1/notifications").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "the old link is revoked");
    // Said to a merchant in words about links, not the API's tokens.
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("portal link"), "{message}");
    assert!(!message.contains("api.tokens"), "{message}");
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

/// An owner's links show each of its endpoints, so revoking one
/// endpoint's links refuses them too; revoking the owner's refuses every
/// link of the owner and of its endpoints. Another owner's link, and one
/// issued after, work.
async fn revoking_an_owners_links_or_one_of_its_endpoints_refuses_the_owners_links(
    backend: Backend,
) {
    let app = backend.spawn_with(&settings(KEY)).await;
    app.endpoint(json!({"uid": "m42-a", "owner": "merchant-42"}))
        .await;
    app.endpoint(json!({"uid": "m42-b", "owner": "merchant-42"}))
        .await;
    app.endpoint(json!({"uid": "m7", "owner": "merchant-7"}))
        .await;
    let owner = "/v1/owners/merchant-42/portal";
    let (first, _) = issue(&app, owner, json!({})).await;
    let (other, _) = issue(&app, "/v1/owners/merchant-7/portal", json!({})).await;
    let (b_link, _) = issue(&app, "/v1/endpoints/m42-b/portal", json!({})).await;
    assert_eq!(link_status(&app, first.clone()).await, StatusCode::OK);

    // One endpoint's revocation: the owner's link is refused.
    let (code, revoked) = app
        .post("/v1/endpoints/m42-a/portal/revoke", json!({}))
        .await;
    assert_eq!(code, StatusCode::OK, "{revoked}");
    assert_eq!(link_status(&app, first).await, StatusCode::UNAUTHORIZED);
    assert_eq!(
        link_status(&app, b_link.clone()).await,
        StatusCode::OK,
        "m42-b's own link"
    );
    assert_eq!(link_status(&app, other.clone()).await, StatusCode::OK);

    // The owner's revocation, by `admin` only: the owner's links and its
    // endpoints' are refused.
    let (second, _) = issue(&app, owner, json!({})).await;
    assert_eq!(
        link_status(&app, second.clone()).await,
        StatusCode::OK,
        "issued after"
    );
    let path = "/v1/owners/merchant-42/portal/revoke";
    let (code, _) = as_token(&app, READ_TOKEN, Method::POST, path, Some(json!({}))).await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    let (code, revoked) = app.post(path, json!({})).await;
    assert_eq!(code, StatusCode::OK, "{revoked}");
    assert_eq!(revoked["owner"], json!("merchant-42"));
    assert!(revoked["generation"].as_i64().unwrap() >= 2, "{revoked}");
    assert_eq!(link_status(&app, second).await, StatusCode::UNAUTHORIZED);
    assert_eq!(link_status(&app, b_link).await, StatusCode::UNAUTHORIZED);
    assert_eq!(
        link_status(&app, other).await,
        StatusCode::OK,
        "another owner's link"
    );
    let (third, _) = issue(&app, owner, json!({})).await;
    assert_eq!(
        link_status(&app, third).await,
        StatusCode::OK,
        "issued after"
    );
    let (code, _) = app.post("/v1/owners/nobody/portal/revoke", json!({})).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
}
both!(revoking_an_owners_links_or_one_of_its_endpoints_refuses_the_owners_links);

/// A revocation outlasts the endpoints it raised: once every endpoint of
/// the owner was deleted or moved to another owner, a new endpoint of the
/// owner did not bring its revoked links back, whether the owner's links
/// or one of its endpoints' were revoked.
async fn a_revoked_owner_link_stays_refused_after_its_endpoints_are_deleted_or_moved_and_another_made(
    backend: Backend,
) {
    let app = backend.spawn_with(&settings(KEY)).await;
    app.endpoint(json!({"uid": "m42-a", "owner": "merchant-42"}))
        .await;
    app.endpoint(json!({"uid": "m42-b", "owner": "merchant-42"}))
        .await;
    let owner = "/v1/owners/merchant-42/portal";
    let (revoked, _) = issue(&app, owner, json!({})).await;
    let (code, body) = app
        .post("/v1/owners/merchant-42/portal/revoke", json!({}))
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(
        link_status(&app, revoked.clone()).await,
        StatusCode::UNAUTHORIZED
    );

    let (code, _) = app.call(Method::DELETE, "/v1/endpoints/m42-a", None).await;
    assert_eq!(code, StatusCode::OK);
    let (code, body) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/m42-b",
            Some(json!({"owner": "merchant-7"})),
        )
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    app.endpoint(json!({"uid": "m42-c", "owner": "merchant-42"}))
        .await;
    assert_eq!(
        link_status(&app, revoked).await,
        StatusCode::UNAUTHORIZED,
        "the owner's revoked link, beside its new endpoint"
    );
    let (before, _) = issue(&app, owner, json!({})).await;
    assert_eq!(
        link_status(&app, before.clone()).await,
        StatusCode::OK,
        "issued after"
    );

    // An endpoint's revocation refused its owner's links: they stay
    // refused once it is gone.
    let (code, body) = app
        .post("/v1/endpoints/m42-c/portal/revoke", json!({}))
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(
        link_status(&app, before.clone()).await,
        StatusCode::UNAUTHORIZED
    );
    let (code, _) = app.call(Method::DELETE, "/v1/endpoints/m42-c", None).await;
    assert_eq!(code, StatusCode::OK);
    app.endpoint(json!({"uid": "m42-d", "owner": "merchant-42"}))
        .await;
    assert_eq!(link_status(&app, before).await, StatusCode::UNAUTHORIZED);
    let (after, _) = issue(&app, owner, json!({})).await;
    assert_eq!(
        link_status(&app, after).await,
        StatusCode::OK,
        "issued after"
    );
}
both!(a_revoked_owner_link_stays_refused_after_its_endpoints_are_deleted_or_moved_and_another_made);
