//! Portal links (docs/design.md §11), tried as their holder would, and as one
//! who wants more than the link gives: an endpoint's or an owner's link
//! sees only its notifications and endpoints, retries only those, calls no
//! other route, and a tampered, expired or revoked link is refused.

use chrono::{DateTime, Duration, Utc};
use hookd::domain::portal::{sign, PortalClaims, PortalScope};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::helpers::{TestApp, TOKEN};

pub(crate) const KEY: &str = "portal-test-key-0123456789abcdefghijklmnop";
pub(crate) const READ_TOKEN: &str = "read-token-0123456789abcdef";

pub(crate) fn settings(key: &str) -> String {
    format!(
        "[api]\ntokens = [\"{TOKEN}\", {{ name = \"dashboard\", token = \"{READ_TOKEN}\", scopes = [\"read\"] }}]\n\
         [portal]\nkey = \"{key}\"\n"
    )
}

/// Issues a link at `path`; returns its token and the answer.
pub(crate) async fn issue(app: &TestApp, path: &str, body: Value) -> (String, Value) {
    let (status, link) = app.post(path, body).await;
    assert_eq!(status, StatusCode::CREATED, "{link}");
    let url = link["url"].as_str().unwrap();
    let (_, token) = url.split_once("/console/#portal=").expect("a console link");
    (token.to_string(), link)
}

pub(crate) async fn as_token(
    app: &TestApp,
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = app
        .client
        .request(method, format!("{}{path}", app.base))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("hookd answers");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

pub(crate) async fn get(app: &TestApp, token: &str, path: &str) -> (StatusCode, Value) {
    as_token(app, token, Method::GET, path, None).await
}

fn ids(page: &Value) -> Vec<String> {
    let mut ids: Vec<String> = page["data"]
        .as_array()
        .unwrap_or_else(|| panic!("a page: {page}"))
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

/// Two not-yet-due notifications of `endpoint`.
async fn two_of(app: &TestApp, endpoint: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for n in 0..2 {
        let body = json!({"endpoint": endpoint, "payload": {"n": n}, "delay": "1h"});
        ids.push(app.notify(body).await);
    }
    ids
}

async fn an_endpoint_link_sees_only_its_endpoints_notifications(backend: Backend) {
    let app = backend.spawn_with(&settings(KEY)).await;
    let mine = app
        .endpoint(json!({"uid": "mine", "owner": "merchant-42"}))
        .await;
    let other = app
        .endpoint(json!({"uid": "other", "owner": "merchant-42"}))
        .await;
    let (mine_id, other_id) = (mine["id"].as_str().unwrap(), other["id"].as_str().unwrap());
    let my_notifications = two_of(&app, "mine").await;
    let their_notifications = two_of(&app, "other").await;
    let (token, _) = issue(&app, "/v1/endpoints/mine/portal", json!({})).await;

    let (status, page) = get(&app, &token, "/v1/notifications").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(ids(&page), sorted(my_notifications.clone()));
    // Naming itself, by id or uid, changes nothing; naming another is refused.
    for query in [format!("endpoint={mine_id}"), "endpoint=mine".to_string()] {
        let (status, page) = get(&app, &token, &format!("/v1/notifications?{query}")).await;
        assert_eq!(status, StatusCode::OK, "{query}: {page}");
        assert_eq!(ids(&page), sorted(my_notifications.clone()), "{query}");
    }
    for query in [
        format!("endpoint={other_id}"),
        "endpoint=other".to_string(),
        format!("endpoint={mine_id}&endpoint={other_id}"),
        "owner=someone-else".to_string(),
    ] {
        let (status, body) = get(&app, &token, &format!("/v1/notifications?{query}")).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{query}: {body}");
        assert_eq!(body["error"]["code"], "forbidden");
    }
    // One of its own, and its attempts; another's is not there at all.
    for suffix in ["", "/attempts"] {
        let path = format!("/v1/notifications/{}{suffix}", my_notifications[0]);
        assert_eq!(get(&app, &token, &path).await.0, StatusCode::OK, "{path}");
        let path = format!("/v1/notifications/{}{suffix}", their_notifications[0]);
        let (status, body) = get(&app, &token, &path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert_eq!(body["error"]["message"], "notification not found");
    }
    // Its endpoint, and no other.
    let (status, page) = get(&app, &token, "/v1/endpoints").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(ids(&page), vec![mine_id.to_string()]);
    assert!(page["data"][0].get("secret").is_none());
    // Its query is read as the list's own is, not passed by.
    for (query, status, code) in [
        ("owner=merchant-7", StatusCode::FORBIDDEN, "forbidden"),
        (
            "stauts=failed",
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_field",
        ),
        ("limit=0", StatusCode::UNPROCESSABLE_ENTITY, "invalid_value"),
        ("limit=abc", StatusCode::BAD_REQUEST, "invalid_query"),
    ] {
        let (got, body) = get(&app, &token, &format!("/v1/endpoints?{query}")).await;
        assert_eq!(
            (got, &body["error"]["code"]),
            (status, &json!(code)),
            "{query}: {body}"
        );
    }
    let (status, page) = get(&app, &token, "/v1/endpoints?limit=1").await;
    assert_eq!(
        (status, ids(&page)),
        (StatusCode::OK, vec![mine_id.to_string()])
    );
    for path in ["/v1/endpoints/mine", "/v1/endpoints/mine/backlog"] {
        assert_eq!(get(&app, &token, path).await.0, StatusCode::OK, "{path}");
    }
    for path in [
        format!("/v1/endpoints/{other_id}"),
        "/v1/endpoints/other".into(),
        "/v1/endpoints/other/backlog".into(),
    ] {
        let (status, body) = get(&app, &token, &path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
    }
}
both!(an_endpoint_link_sees_only_its_endpoints_notifications);

async fn an_owner_link_sees_only_that_owners_notifications(backend: Backend) {
    let app = backend.spawn_with(&settings(KEY)).await;
    let first = app
        .endpoint(json!({"uid": "m42-a", "owner": "merchant-42"}))
        .await;
    let second = app
        .endpoint(json!({"uid": "m42-b", "owner": "merchant-42"}))
        .await;
    app.endpoint(json!({"uid": "m7", "owner": "merchant-7"}))
        .await;
    let mut theirs = two_of(&app, "m42-a").await;
    theirs.extend(two_of(&app, "m42-b").await);
    let others = two_of(&app, "m7").await;
    let (token, _) = issue(&app, "/v1/owners/merchant-42/portal", json!({})).await;

    let (status, page) = get(&app, &token, "/v1/notifications").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(ids(&page), sorted(theirs.clone()));
    // Narrowed to one of its endpoints.
    let (status, page) = get(&app, &token, "/v1/notifications?endpoint=m42-b").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(ids(&page), sorted(theirs[2..].to_vec()));
    // The most attempted first, which takes an endpoint and no owner.
    let path = "/v1/notifications?order=attempts&endpoint=m42-b";
    let (status, page) = get(&app, &token, path).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(
        ids(&page).iter().all(|id| theirs[2..].contains(id)),
        "{page}"
    );
    for query in [
        "owner=merchant-7",
        "endpoint=m7",
        "order=attempts&endpoint=m7",
    ] {
        let (status, _) = get(&app, &token, &format!("/v1/notifications?{query}")).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{query}");
    }
    let (status, page) = get(&app, &token, "/v1/endpoints?owner=merchant-42").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let expected = sorted(vec![
        first["id"].as_str().unwrap().into(),
        second["id"].as_str().unwrap().into(),
    ]);
    assert_eq!(ids(&page), expected);
    assert_eq!(ids(&get(&app, &token, "/v1/endpoints").await.1), expected);
    let (status, _) = get(&app, &token, "/v1/endpoints?owner=merchant-7").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let path = format!("/v1/notifications/{}", others[0]);
    assert_eq!(get(&app, &token, &path).await.0, StatusCode::NOT_FOUND);
    assert_eq!(
        get(&app, &token, "/v1/endpoints/m7").await.0,
        StatusCode::NOT_FOUND
    );
    let path = format!("/v1/notifications/{}", theirs[3]);
    assert_eq!(get(&app, &token, &path).await.0, StatusCode::OK);
}
both!(an_owner_link_sees_only_that_owners_notifications);

async fn a_link_retries_its_notifications_and_no_others(backend: Backend) {
    let app = backend.spawn_with(&settings(KEY)).await;
    app.endpoint(json!({"uid": "mine"})).await;
    app.endpoint(json!({"uid": "other"})).await;
    let mine = two_of(&app, "mine").await;
    let theirs = two_of(&app, "other").await;
    let (token, _) = issue(&app, "/v1/endpoints/mine/portal", json!({})).await;

    let (_, before) = app.get(&format!("/v1/notifications/{}", theirs[0])).await;
    let path = format!("/v1/notifications/{}/retry", theirs[0]);
    let (status, body) = as_token(&app, &token, Method::POST, &path, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (_, after) = app.get(&format!("/v1/notifications/{}", theirs[0])).await;
    assert_eq!(
        after["next_attempt_at"], before["next_attempt_at"],
        "untouched"
    );

    let path = format!("/v1/notifications/{}/retry", mine[0]);
    let (status, retried) = as_token(&app, &token, Method::POST, &path, None).await;
    assert_eq!(status, StatusCode::OK, "{retried}");
    assert_eq!(retried["id"], json!(mine[0]));
    assert_eq!(retried["status"], "pending");
}
both!(a_link_retries_its_notifications_and_no_others);

async fn a_link_may_call_no_other_route(backend: Backend) {
    let app = backend.spawn_with(&settings(KEY)).await;
    let endpoint = app
        .endpoint(json!({"uid": "mine", "owner": "merchant-42"}))
        .await;
    let id = two_of(&app, "mine").await.remove(0);
    let (token, _) = issue(&app, "/v1/endpoints/mine/portal", json!({})).await;
    let cases: Vec<(Method, String, Option<Value>)> = vec![
        (
            Method::POST,
            "/v1/notifications".into(),
            Some(json!({"endpoint": "mine", "payload": {}})),
        ),
        (
            Method::POST,
            "/v1/notifications/batch".into(),
            Some(json!({"notifications": []})),
        ),
        (Method::POST, format!("/v1/notifications/{id}/cancel"), None),
        (
            Method::POST,
            "/v1/notifications/cancel".into(),
            Some(json!({"key": "k"})),
        ),
        (
            Method::PATCH,
            "/v1/endpoints/mine".into(),
            Some(json!({"disabled": true})),
        ),
        (Method::DELETE, "/v1/endpoints/mine".into(), None),
        (
            Method::POST,
            "/v1/endpoints".into(),
            Some(json!({"url": "http://127.0.0.1:9/x"})),
        ),
        (Method::GET, "/v1/endpoints/mine/secret".into(), None),
        (
            Method::PATCH,
            "/v1/endpoints/mine".into(),
            Some(json!({"url": "http://127.0.0.1:9/elsewhere"})),
        ),
        (Method::POST, "/v1/endpoints/mine/test".into(), None),
        (
            Method::POST,
            "/v1/endpoints/mine/secret/rotate".into(),
            Some(json!({})),
        ),
        (
            Method::POST,
            "/v1/events".into(),
            Some(json!({"event_type": "a.b", "payload": {}})),
        ),
        (Method::GET, "/v1/events".into(), None),
        (
            Method::POST,
            "/v1/endpoints/mine/consumer-token".into(),
            Some(json!({})),
        ),
        (
            Method::POST,
            "/v1/endpoints/mine/recover".into(),
            Some(json!({"since": "2026-01-01T00:00:00Z"})),
        ),
        (
            Method::POST,
            "/v1/endpoints/mine/portal".into(),
            Some(json!({})),
        ),
        (
            Method::POST,
            "/v1/owners/merchant-42/portal".into(),
            Some(json!({})),
        ),
    ];
    for (method, path, body) in cases {
        let (status, answer) = as_token(&app, &token, method.clone(), &path, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {answer}");
        assert_eq!(answer["error"]["code"], "forbidden", "{method} {path}");
    }
    let (_, after) = app.get("/v1/endpoints/mine").await;
    assert_eq!(after["disabled"], false);
    assert_eq!(after["updated_at"], endpoint["updated_at"]);
    let (_, notification) = app.get(&format!("/v1/notifications/{id}")).await;
    assert_eq!(notification["status"], "pending");
}
both!(a_link_may_call_no_other_route);

/// `token` with its payload swapped for `payload`, the signature kept.
fn with_payload(token: &str, payload: &str) -> String {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    let (_, signature) = token.rsplit_once('.').unwrap();
    format!(
        "hookd_portal_{}.{signature}",
        URL_SAFE_NO_PAD.encode(payload)
    )
}

async fn tampered_expired_and_revoked_links_are_refused(backend: Backend) {
    let app = backend.spawn_with(&settings(KEY)).await;
    let mine = app.endpoint(json!({"uid": "mine"})).await;
    let other = app.endpoint(json!({"uid": "other"})).await;
    let (mine_id, other_id) = (mine["id"].as_str().unwrap(), other["id"].as_str().unwrap());
    let (token, link) = issue(&app, "/v1/endpoints/mine/portal", json!({})).await;
    let expiry = chrono::DateTime::parse_from_rfc3339(link["expires_at"].as_str().unwrap())
        .unwrap()
        .timestamp();
    let expired = sign(
        KEY.as_bytes(),
        &PortalClaims {
            permissions: Default::default(),
            scope: PortalScope::Endpoint(mine_id.parse().unwrap()),
            expires_at: Utc::now() - Duration::seconds(1),
            generation: 0,
        },
    );
    let mut bad_signature = token.clone();
    let last = bad_signature.pop().unwrap();
    bad_signature.push(if last == 'A' { 'Q' } else { 'A' });
    let refused = [
        with_payload(&token, &format!("e.{expiry}.{other_id}")),
        with_payload(&token, &format!("e.{}.{mine_id}", expiry + 3600)),
        with_payload(&token, &format!("o.{expiry}.merchant-42")),
        expired,
        bad_signature,
        token[..token.len() - 5].to_string(),
        "hookd_portal_garbage".to_string(),
        format!("hookd_portal_{}", "A".repeat(600)),
    ];
    for forged in &refused {
        for path in ["/v1/notifications", "/v1/whoami"] {
            let (status, body) = get(&app, forged, path).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{forged} {path}: {body}");
            assert_eq!(body["error"]["code"], "unauthorized");
        }
    }
    assert_eq!(
        get(&app, &token, "/v1/notifications").await.0,
        StatusCode::OK
    );

    // Rotating portal.key revokes every link issued under the old one.
    drop(app);
    let rotated = "portal-rotated-key-0123456789abcdefghijklmnop";
    let app = backend.spawn_with(&settings(rotated)).await;
    let (status, _) = get(&app, &token, "/v1/notifications").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (fresh, _) = issue(&app, "/v1/endpoints/mine/portal", json!({})).await;
    assert_eq!(
        get(&app, &fresh, "/v1/notifications").await.0,
        StatusCode::OK
    );

    // Without portal.key no link is issued, and none works.
    drop(app);
    let app = backend.spawn().await;
    let (status, body) = app.post("/v1/endpoints/mine/portal", json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "portal_disabled");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("portal.key"));
    assert_eq!(
        get(&app, &fresh, "/v1/notifications").await.0,
        StatusCode::UNAUTHORIZED
    );
}
both!(tampered_expired_and_revoked_links_are_refused);

mod issuing;
