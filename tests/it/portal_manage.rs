//! A portal link's permissions (docs/design.md §18), tried as a merchant
//! holding one would, and as one who wants more: `manage` changes its
//! endpoint's URL and event types, shows and rotates its secret and sends
//! it a test, and nothing else; a link without `retry` cannot retry; the
//! permissions asked for are checked when the link is issued; the portal
//! shows the deployment's brand.

mod permissions;
mod shown;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::helpers::TestApp;
use crate::portal::{as_token, get, issue, settings, KEY};
use crate::receiver::Receiver;

const DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);
const MANAGE: [&str; 3] = ["read", "retry", "manage"];

async fn patch(app: &TestApp, token: &str, path: &str, body: Value) -> (StatusCode, Value) {
    as_token(app, token, Method::PATCH, path, Some(body)).await
}

async fn post(app: &TestApp, token: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
    as_token(app, token, Method::POST, path, body).await
}

fn forbidden(status: StatusCode, body: &Value, what: &str) {
    assert_eq!(status, StatusCode::FORBIDDEN, "{what}: {body}");
    assert_eq!(body["error"]["code"], "forbidden", "{what}");
}

async fn a_manage_link_changes_its_url_event_types_and_filter_and_nothing_else(backend: Backend) {
    let app = backend.spawn_with(&settings(KEY)).await;
    let receiver = Receiver::start().await;
    let mine = app
        .endpoint(json!({"uid": "mine", "owner": "merchant-42", "url": receiver.url("/old")}))
        .await;
    app.endpoint(json!({"uid": "other", "owner": "merchant-7"}))
        .await;
    let (token, _) = issue(
        &app,
        "/v1/endpoints/mine/portal",
        json!({"permissions": MANAGE}),
    )
    .await;

    let change = json!({
        "url": receiver.url("/new"),
        "event_types": ["order.paid", "order.refunded"],
        "filter": {"store": "sh-01"}
    });
    let (status, changed) = patch(&app, &token, "/v1/endpoints/mine", change).await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    let (_, stored) = app.get("/v1/endpoints/mine").await;
    assert_eq!(stored["url"], json!(receiver.url("/new")));
    assert_eq!(
        stored["event_types"],
        json!(["order.paid", "order.refunded"])
    );
    assert_eq!(stored["filter"], json!({"store": "sh-01"}));
    // A filter the merchant gets wrong is refused as for any caller.
    let (status, refused) = patch(
        &app,
        &token,
        "/v1/endpoints/mine",
        json!({"filter": {"store": {"$like": "sh-%"}}}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["field"], "filter.store.$like");

    // Anything else of the policy, alone or beside an allowed field, is
    // refused whole, naming the field; the endpoint stays as it was.
    for body in [
        json!({"disabled": true}),
        json!({"url": receiver.url("/elsewhere"), "schedule": ["0s"]}),
        json!({"rate_limit": null}),
        json!({"headers": {"authorization": "x"}}),
        json!({"owner": "merchant-7"}),
    ] {
        let (status, answer) = patch(&app, &token, "/v1/endpoints/mine", body.clone()).await;
        forbidden(status, &answer, &body.to_string());
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("url, event_types and filter"), "{message}");
    }
    let (_, after) = app.get("/v1/endpoints/mine").await;
    assert_eq!(after["updated_at"], stored["updated_at"]);
    assert_eq!(after["disabled"], false);
    // A malformed body gets the answer any caller gets; a huge one is cut off.
    let (status, _) = patch(&app, &token, "/v1/endpoints/mine", json!({"url": 7})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let huge = json!({"url": format!("https://example.com/{}", "a".repeat(70_000))});
    let (status, answer) = patch(&app, &token, "/v1/endpoints/mine", huge).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{answer}");
    // Another merchant's endpoint is not there at all.
    let (status, _) = patch(
        &app,
        &token,
        "/v1/endpoints/other",
        json!({"url": receiver.url("/x")}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = get(&app, &token, "/v1/endpoints/other/secret").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(mine["owner"], "merchant-42");
}
both!(a_manage_link_changes_its_url_event_types_and_filter_and_nothing_else);

/// A link is a bearer token a merchant may pass on or lose; what the
/// endpoint's sender set and the link never reads stays the sender's when
/// the link moves the URL. With custom headers (the receiver's
/// credentials, masked to the link) it moves only under the current URL,
/// and a test then still goes where the sender said; into a private
/// network of `sender.allow_networks` only where the current URL already
/// is. The sender's own token moves it anywhere.
async fn a_manage_link_keeps_the_senders_headers_and_private_networks_to_the_senders_receivers(
    backend: Backend,
) {
    let app = backend.spawn_with(&settings(KEY)).await;
    let (receiver, elsewhere) = (Receiver::start().await, Receiver::start().await);
    app.endpoint(json!({
        "uid": "keyed", "url": receiver.url("/hooks/acme"),
        "headers": {"x-api-key": "acme-secret-key"}
    }))
    .await;
    let (token, _) = issue(
        &app,
        "/v1/endpoints/keyed/portal",
        json!({"permissions": MANAGE}),
    )
    .await;
    for away in [
        elsewhere.url("/collect"),
        receiver.url("/hooks/acme-evil"),
        receiver.url("/other"),
    ] {
        let (status, answer) =
            patch(&app, &token, "/v1/endpoints/keyed", json!({"url": away})).await;
        forbidden(status, &answer, &away);
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("custom headers"), "{message}");
    }
    let (_, stored) = app.get("/v1/endpoints/keyed").await;
    assert_eq!(stored["url"], json!(receiver.url("/hooks/acme")));
    let (status, _) = post(&app, &token, "/v1/endpoints/keyed/test", None).await;
    assert_eq!(status, StatusCode::CREATED);
    let got = receiver.wait_for("/hooks/acme", 1, DEADLINE).await;
    assert_eq!(got[0].header("x-api-key"), Some("acme-secret-key"));
    assert!(elsewhere.received("/collect").is_empty());
    // Under its own URL the move is the merchant's to make.
    let under = receiver.url("/hooks/acme/v2");
    let (status, moved) = patch(&app, &token, "/v1/endpoints/keyed", json!({"url": under})).await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    let (status, answer) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/keyed",
            Some(json!({"url": elsewhere.url("/new-home")})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "the sender's token: {answer}");

    // A public endpoint without headers: a link moves it to another public
    // address, never into the loopback network the tests' settings open.
    app.endpoint(json!({"uid": "public", "url": "http://8.8.8.8/hook"}))
        .await;
    let (token, _) = issue(
        &app,
        "/v1/endpoints/public/portal",
        json!({"permissions": MANAGE}),
    )
    .await;
    for inside in [receiver.url("/x"), app.base.clone() + "/v1/endpoints"] {
        let (status, answer) =
            patch(&app, &token, "/v1/endpoints/public", json!({"url": inside})).await;
        forbidden(status, &answer, &inside);
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("private network"), "{message}");
    }
    let (status, answer) = patch(
        &app,
        &token,
        "/v1/endpoints/public",
        json!({"url": "http://no-such-host.invalid/hook"}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["error"]["code"], "invalid_url");
    let (status, moved) = patch(
        &app,
        &token,
        "/v1/endpoints/public",
        json!({"url": "http://8.8.4.4/hook"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    // One already inside the network moves within it.
    app.endpoint(json!({"uid": "inside", "url": receiver.url("/in")}))
        .await;
    let (token, _) = issue(
        &app,
        "/v1/endpoints/inside/portal",
        json!({"permissions": MANAGE}),
    )
    .await;
    let (status, moved) = patch(
        &app,
        &token,
        "/v1/endpoints/inside",
        json!({"url": elsewhere.url("/in")}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{moved}");
}
both!(a_manage_link_keeps_the_senders_headers_and_private_networks_to_the_senders_receivers);

async fn a_manage_link_sees_and_rotates_its_secret_and_sends_itself_a_test(backend: Backend) {
    let app = backend.spawn_with(&settings(KEY)).await;
    let receiver = Receiver::start().await;
    app.endpoint(json!({"uid": "mine", "url": receiver.url("/hook"), "event_types": ["order.*"]}))
        .await;
    let (token, _) = issue(
        &app,
        "/v1/endpoints/mine/portal",
        json!({"permissions": MANAGE}),
    )
    .await;

    let (status, shown) = get(&app, &token, "/v1/endpoints/mine/secret").await;
    assert_eq!(status, StatusCode::OK, "{shown}");
    let (_, stored) = app.get("/v1/endpoints/mine/secret").await;
    assert_eq!(shown["secret"], stored["secret"]);
    // A generated secret with the deployment's overlap: the link chooses
    // neither.
    for body in [
        json!({"secret": format!("whsec_{}", "A".repeat(32))}),
        json!({"overlap": "7d"}),
    ] {
        let (status, answer) =
            post(&app, &token, "/v1/endpoints/mine/secret/rotate", Some(body)).await;
        forbidden(status, &answer, "a chosen secret or overlap");
    }
    let (status, rotated) = post(&app, &token, "/v1/endpoints/mine/secret/rotate", None).await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    let new = rotated["secret"].as_str().unwrap();
    assert_ne!(json!(new), shown["secret"]);
    let (_, stored) = app.get("/v1/endpoints/mine/secret").await;
    assert_eq!(stored["secret"], json!(new));

    // A test of a type the endpoint takes arrives, signed and marked.
    let (status, test) = post(
        &app,
        &token,
        "/v1/endpoints/mine/test",
        Some(json!({"event_type": "order.paid"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{test}");
    assert_eq!(test["event_type"], "order.paid");
    let got = receiver.wait_for("/hook", 1, DEADLINE).await;
    let body: Value = serde_json::from_slice(&got[0].body).unwrap();
    assert_eq!(body["type"], "hookd.test");
    assert_eq!(body["event_type"], "order.paid");
    assert!(got[0].header("webhook-signature").is_some());
    // One it does not take is refused as any create of it would be.
    let (status, answer) = post(
        &app,
        &token,
        "/v1/endpoints/mine/test",
        Some(json!({"event_type": "refund.created"})),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    // Without a type: none, which every endpoint takes.
    let (status, untyped) = post(&app, &token, "/v1/endpoints/mine/test", None).await;
    assert_eq!(status, StatusCode::CREATED, "{untyped}");
    assert_eq!(untyped["event_type"], Value::Null);
    // A test names its event type and nothing else.
    let (status, answer) = post(
        &app,
        &token,
        "/v1/endpoints/mine/test",
        Some(json!({"event_type": "order.paid", "payload": {"amount": 1}})),
    )
    .await;
    forbidden(status, &answer, "a test with a payload");
}
both!(a_manage_link_sees_and_rotates_its_secret_and_sends_itself_a_test);

async fn a_manage_link_never_reads_a_key_pairs_private_key(backend: Backend) {
    let app = backend.spawn_with(&settings(KEY)).await;
    let dir = tempfile::tempdir().unwrap();
    let operators_rsa_key = crate::signing_keys::rsa_private_key(dir.path());
    app.endpoint(json!({"uid": "ed", "url": "http://127.0.0.1:9/ed", "signing": "ed25519"}))
        .await;
    app.endpoint(
        json!({"uid": "alipay", "url": "http://127.0.0.1:9/notify", "signing": "rsa2",
        "secret": operators_rsa_key, "success_body": "success"}),
    )
    .await;
    let (_, before) = app.get("/v1/endpoints/ed/secret").await;
    let private_before = before["secret"].as_str().unwrap().to_string();
    assert!(private_before.starts_with("whsk_"), "{before}");

    for uid in ["ed", "alipay"] {
        let (token, _) = issue(
            &app,
            &format!("/v1/endpoints/{uid}/portal"),
            json!({"permissions": MANAGE}),
        )
        .await;
        // Refused, naming where the receiver's key is; the answer carries
        // no key of either kind.
        let (status, refused) = get(&app, &token, &format!("/v1/endpoints/{uid}/secret")).await;
        forbidden(status, &refused, uid);
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains("/public-key"), "{message}");
        assert!(!message.contains("whsk_") && !message.contains("PRIVATE"));
        // What the receiver needs is there.
        let (status, keys) = get(&app, &token, &format!("/v1/endpoints/{uid}/public-key")).await;
        assert_eq!(status, StatusCode::OK, "{keys}");
    }

    // A rotation of the ed25519 key: done, and answered without it.
    let (token, _) = issue(
        &app,
        "/v1/endpoints/ed/portal",
        json!({"permissions": MANAGE}),
    )
    .await;
    let (_, public_before) = get(&app, &token, "/v1/endpoints/ed/public-key").await;
    let (status, rotated) = post(&app, &token, "/v1/endpoints/ed/secret/rotate", None).await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    assert!(
        rotated.get("secret").is_none_or(Value::is_null),
        "{rotated}"
    );
    assert!(!rotated.to_string().contains("whsk_"), "{rotated}");
    assert_eq!(rotated["signing"], "ed25519");
    let (_, public_after) = get(&app, &token, "/v1/endpoints/ed/public-key").await;
    assert_ne!(public_after["public_key"], public_before["public_key"]);
    assert_eq!(
        public_after["previous_public_keys"][0]["public_key"],
        public_before["public_key"]
    );

    // The operator's `secrets` scope still reads both private keys.
    let (status, after) = app.get("/v1/endpoints/ed/secret").await;
    assert_eq!(status, StatusCode::OK, "{after}");
    let private_after = after["secret"].as_str().unwrap();
    assert!(private_after.starts_with("whsk_") && private_after != private_before);
    let (status, rsa) = app.get("/v1/endpoints/alipay/secret").await;
    assert_eq!(status, StatusCode::OK, "{rsa}");
    assert!(rsa["secret"].as_str().unwrap().contains("PRIVATE KEY"));
}
both!(a_manage_link_never_reads_a_key_pairs_private_key);
