//! Issuing a portal link (its input, the admin scope it needs), and
//! `whoami` for every kind of caller. On each backend.

use super::*;

async fn issuing_a_link_checks_its_input_and_needs_admin(backend: Backend) {
    let app = backend.spawn_with(&settings(KEY)).await;
    app.endpoint(json!({"uid": "mine"})).await;
    app.endpoint(json!({"uid": "m42-first", "owner": "merchant-42"}))
        .await;
    let started = Utc::now();
    let (token, link) = issue(&app, "/v1/endpoints/mine/portal", json!({})).await;
    let answered = Utc::now();
    assert!(token.starts_with("hookd_portal_"));
    assert!(link["url"]
        .as_str()
        .unwrap()
        .starts_with(&format!("{}/console/#portal=", app.base)));
    // A link lives `expires_in_seconds` (a day by default) from when it
    // was issued, to the whole second (the expiry is in the token): issued
    // between the request and its answer, however long a loaded machine
    // took over it.
    let lives = |link: &Value, seconds: i64, (from, to): (DateTime<Utc>, DateTime<Utc>)| {
        let expires = DateTime::parse_from_rfc3339(link["expires_at"].as_str().unwrap())
            .unwrap()
            .timestamp();
        assert!(
            (from.timestamp()..=to.timestamp()).contains(&(expires - seconds)),
            "expires at {expires}, not {seconds} s after {from}..{to}: {link}"
        );
    };
    lives(&link, 86_400, (started, answered));
    let started = Utc::now();
    let (_, link) = issue(
        &app,
        "/v1/owners/merchant-42/portal",
        json!({"expires_in_seconds": 60}),
    )
    .await;
    lives(&link, 60, (started, Utc::now()));

    for (body, field) in [
        (json!({"expires_in_seconds": 0}), "expires_in_seconds"),
        (json!({"expires_in_seconds": 604_801}), "expires_in_seconds"),
        (json!({"expires_in_seconds": "1h"}), "expires_in_seconds"),
        (json!({"expires": 60}), "expires"),
    ] {
        let (status, answer) = app.post("/v1/endpoints/mine/portal", body.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {answer}");
        assert_eq!(answer["error"]["field"], field, "{body}");
    }
    let (status, _) = app.post("/v1/endpoints/nobody/portal", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app.post("/v1/owners/nobody/portal", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, answer) = app.post("/v1/owners/bad%20owner/portal", json!({})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["error"]["field"], "owner");
    let (status, _) = as_token(
        &app,
        READ_TOKEN,
        Method::POST,
        "/v1/endpoints/mine/portal",
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // Behind a proxy, links point at portal.base_url.
    let app = backend
        .spawn_with(&format!(
            "{}base_url = \"https://hooks.example.com\"\n",
            settings(KEY)
        ))
        .await;
    let (_, link) = issue(&app, "/v1/endpoints/mine/portal", json!({})).await;
    assert!(link["url"]
        .as_str()
        .unwrap()
        .starts_with("https://hooks.example.com/console/#portal=hookd_portal_"));
}
both!(issuing_a_link_checks_its_input_and_needs_admin);

async fn whoami_names_every_kind_of_caller(backend: Backend) {
    let app = backend.spawn_with(&settings(KEY)).await;
    let mine = app.endpoint(json!({"uid": "mine"})).await;
    let (status, me) = app.get("/v1/whoami").await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert_eq!(me["scopes"], json!(["admin"]));
    assert_eq!(me["portal"], Value::Null);
    assert_eq!(me["expires_at"], Value::Null);
    let (_, me) = get(&app, READ_TOKEN, "/v1/whoami").await;
    assert_eq!(
        me,
        json!({"name": "dashboard", "scopes": ["read"], "portal": null, "expires_at": null,
            "permissions": null, "brand": null})
    );

    let (token, link) = issue(&app, "/v1/endpoints/mine/portal", json!({})).await;
    let (status, me) = get(&app, &token, "/v1/whoami").await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert_eq!(me["portal"], json!({"endpoint": mine["id"]}));
    assert_eq!(me["scopes"], json!([]));
    assert_eq!(
        chrono::DateTime::parse_from_rfc3339(me["expires_at"].as_str().unwrap()).unwrap(),
        chrono::DateTime::parse_from_rfc3339(link["expires_at"].as_str().unwrap()).unwrap()
    );
    // An owner's link works while the owner has a live endpoint.
    app.endpoint(json!({"uid": "m42-shop", "owner": "merchant-42"}))
        .await;
    let (token, _) = issue(&app, "/v1/owners/merchant-42/portal", json!({})).await;
    assert_eq!(
        get(&app, &token, "/v1/whoami").await.1["portal"],
        json!({"owner": "merchant-42"})
    );

    let (status, puller) = app
        .post("/v1/endpoints", json!({"uid": "queue", "delivery": "pull"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{puller}");
    let (_, issued) = app
        .post("/v1/endpoints/queue/consumer-token", json!({}))
        .await;
    let (status, me) = get(&app, issued["token"].as_str().unwrap(), "/v1/whoami").await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert_eq!(
        me["name"],
        format!("consumer:{}", puller["id"].as_str().unwrap())
    );

    let (status, _) = get(&app, "not-a-token-0123456789abcdef", "/v1/whoami").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    drop(app);
    let open = backend.spawn_with("[api]\ntokens = []\n").await;
    let response = crate::helpers::http_client()
        .get(format!("{}/v1/whoami", open.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let me: Value = response.json().await.unwrap();
    assert_eq!(me["name"], "local");
    assert_eq!(me["scopes"], json!(["admin"]));
}
both!(whoami_names_every_kind_of_caller);
