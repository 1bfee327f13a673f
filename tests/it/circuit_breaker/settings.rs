//! The breaker's settings and what it tells: refused settings, turning it
//! off while open, the operator's events, and the OpenAPI document.

use super::*;

async fn bad_breaker_settings_answer_422_naming_the_field_and_change_nothing(backend: Backend) {
    let app = backend.spawn().await;
    let created = app.endpoint(json!({"uid": "shop"})).await;
    assert_eq!(
        created["breaker"],
        json!({"failures": null, "open_ms": null, "max_open_ms": null})
    );
    assert_eq!(created["circuit"]["state"], json!("closed"));
    let (status, set) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/shop",
            Some(json!({"breaker": {"failures": 3, "open_ms": 5000}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{set}");
    let kept = json!({"failures": 3, "open_ms": 5000, "max_open_ms": null});
    assert_eq!(set["breaker"], kept);
    let bad = [
        (json!({"failures": 0}), "breaker.failures"),
        (json!({"failures": 1001}), "breaker.failures"),
        (json!({"failures": -1}), "breaker.failures"),
        (json!({"open_ms": 0}), "breaker.open_ms"),
        (json!({"open_ms": 86_400_001}), "breaker.open_ms"),
        (json!({"max_open_ms": 86_400_001}), "breaker.max_open_ms"),
        (
            json!({"open_ms": 60_000, "max_open_ms": 1000}),
            "breaker.max_open_ms",
        ),
    ];
    for (breaker, field) in bad {
        let (status, body) = app
            .call(
                Method::PATCH,
                "/v1/endpoints/shop",
                Some(json!({"breaker": breaker, "description": "changed"})),
            )
            .await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{breaker}: {body}"
        );
        assert_eq!(body["error"]["field"], json!(field), "{body}");
        let (status, body) = app
            .post(
                "/v1/endpoints",
                json!({"uid": "other", "url": "http://127.0.0.1:9/hook", "breaker": breaker}),
            )
            .await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{breaker}: {body}"
        );
        assert_eq!(body["error"]["field"], json!(field), "{body}");
    }
    let (status, body) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/shop",
            Some(json!({"breaker": {"failure": 3}})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (_, read) = app.get("/v1/endpoints/shop").await;
    assert_eq!(read["breaker"], kept, "{read}");
    assert_eq!(read["description"], created["description"]);
    let (status, _) = app.get("/v1/endpoints/other").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Off, then the defaults again.
    let (_, off) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/shop",
            Some(json!({"breaker": null})),
        )
        .await;
    assert_eq!(off["breaker"], Value::Null);
    let (_, defaults) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/shop",
            Some(json!({"breaker": {}})),
        )
        .await;
    assert_eq!(
        defaults["breaker"],
        json!({"failures": null, "open_ms": null, "max_open_ms": null})
    );
}
both!(bad_breaker_settings_answer_422_naming_the_field_and_change_nothing);

async fn turning_the_breaker_off_while_open_sends_what_it_held_from_the_next_probe(
    backend: Backend,
) {
    let app = backend.spawn_with(BREAKER).await;
    let receiver = Receiver::start().await;
    receiver.reply("/down", vec![Reply::status(503)]);
    let id = endpoint(
        &app,
        "down",
        receiver.url("/down"),
        json!({"schedule": ["0s", "1h"], "breaker": {"failures": 2}}),
    )
    .await;
    notify_many(&app, "down", 8).await;
    opened(&app, "down").await;
    let (status, off) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/down",
            Some(json!({"breaker": null})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{off}");
    // Still down, and no breaker: every held one gets its attempt.
    eventually(DEADLINE, "every notification to be attempted", || async {
        let attempted = backend
            .count_for(
                "SELECT count(*) FROM notifications WHERE endpoint_id = $1 AND attempts = 1",
                id,
            )
            .await;
        (attempted == 8).then_some(())
    })
    .await;
    closed(&app, "down").await;
    assert_eq!(receiver.received("/down").len(), 8);
}
both!(turning_the_breaker_off_while_open_sends_what_it_held_from_the_next_probe);

async fn the_operator_hears_when_a_circuit_opens_and_closes(backend: Backend) {
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    let operator = Receiver::start().await;
    let app = backend
        .spawn_with(&format!(
            "{BREAKER}[operator]\nurl = \"{}\"\nsecret = \"{SECRET}\"\n",
            operator.url("/ops")
        ))
        .await;
    let receiver = Receiver::start().await;
    receiver.reply("/down", vec![Reply::status(503)]);
    let id = endpoint(
        &app,
        "down",
        receiver.url("/down"),
        json!({"breaker": {"failures": 2}}),
    )
    .await;
    notify_many(&app, "down", 4).await;
    let event = |kind: &'static str| {
        let operator = operator.clone();
        async move {
            let webhook = standardwebhooks::Webhook::new(SECRET).unwrap();
            eventually(DEADLINE, kind, || {
                let found = operator.received("/ops").iter().find_map(|request| {
                    webhook.verify(&request.body, &request.headers).unwrap();
                    let event: Value = serde_json::from_slice(&request.body).unwrap();
                    (event["type"] == json!(kind)).then_some(event)
                });
                async move { found }
            })
            .await
        }
    };
    let opened = event("endpoint.circuit_opened").await;
    assert_eq!(
        opened["data"]["endpoint_id"],
        json!(id.to_string()),
        "{opened}"
    );
    assert_eq!(opened["data"]["state"], json!("open"));
    receiver.reply("/down", vec![Reply::status(200)]);
    let closed = event("endpoint.circuit_closed").await;
    assert_eq!(
        closed["data"]["opened_at"], opened["data"]["opened_at"],
        "{closed}"
    );
}
both!(the_operator_hears_when_a_circuit_opens_and_closes);

async fn the_openapi_document_shows_the_breaker_and_the_circuit(backend: Backend) {
    let app = backend.spawn().await;
    let (_, document) = app.get("/openapi.json").await;
    let schemas = &document["components"]["schemas"];
    let breaker = &schemas["BreakerFields"]["properties"];
    assert_eq!(
        breaker["failures"]["maximum"].as_f64(),
        Some(1000.0),
        "{breaker}"
    );
    for field in ["open_ms", "max_open_ms"] {
        assert!(breaker[field].is_object(), "{breaker}");
    }
    assert!(schemas["EndpointFields"]["properties"]["breaker"].is_object());
    assert!(schemas["EndpointView"]["properties"]["breaker"].is_object());
    let circuit = &schemas["CircuitView"]["properties"];
    for field in ["state", "opened_at", "next_probe_at", "held"] {
        assert!(circuit[field].is_object(), "{field}: {circuit}");
    }
}
both!(the_openapi_document_shows_the_breaker_and_the_circuit);
