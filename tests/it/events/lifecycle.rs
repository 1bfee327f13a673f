//! An event's deliveries to URLs of their own (with the endpoint's
//! signature, its custom headers only under its own URL), a crash in the
//! middle of a fan-out, and an event's retention. On each backend.

use super::*;

/// Issue #33: the same origin is not enough; only paths under the
/// endpoint's own get its credentials.
async fn an_endpoints_custom_headers_go_to_a_per_notification_url_only_under_its_own_url(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let own = Receiver::start().await;
    let elsewhere = Receiver::start().await;
    app.endpoint(
        json!({"uid": "partner", "url": own.url("/hooks/a"), "headers": {"X-Api-Key": "s3cret"}}),
    )
    .await;
    let urls = [
        own.url("/hooks/a/order-1"),
        own.url("/hooks/a-evil"),
        own.url("/hooks/b"),
        own.url("/hooks/a/../b/dots"),
        elsewhere.url("/hooks/a/order-2"),
    ];
    for url in &urls {
        let (status, created) = app
            .post(
                "/v1/notifications",
                json!({"endpoint": "partner", "payload": {}, "url": url, "headers": {"X-Order": "1"}}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
    }
    let under = own.wait_for("/hooks/a/order-1", 1, DEADLINE).await;
    assert_eq!(under[0].header("x-api-key"), Some("s3cret"));
    for (receiver, path) in [
        (&own, "/hooks/a-evil"),
        (&own, "/hooks/b"),
        (&own, "/hooks/b/dots"),
        (&elsewhere, "/hooks/a/order-2"),
    ] {
        let got = receiver.wait_for(path, 1, DEADLINE).await;
        assert_eq!(got[0].header("x-api-key"), None, "{path}");
        assert_eq!(got[0].header("x-order"), Some("1"), "{path}");
        assert!(got[0].header("webhook-signature").is_some(), "{path}");
    }
}
both!(an_endpoints_custom_headers_go_to_a_per_notification_url_only_under_its_own_url);

async fn a_per_notification_url_gets_the_endpoint_signature(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    let endpoint = app
        .endpoint(json!({"uid": "shop", "url": receiver.url("/endpoint")}))
        .await;
    let url = receiver.url("/order-123/notify");
    let (status, created) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "shop", "payload": {"order": 123}, "url": url}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["url"], json!(url));
    let got = receiver.wait_for("/order-123/notify", 1, DEADLINE).await;
    standardwebhooks::Webhook::new(endpoint["secret"].as_str().unwrap())
        .unwrap()
        .verify(&got[0].body, &got[0].headers)
        .expect("signed with the endpoint's secret");
    assert!(receiver.received("/endpoint").is_empty());
    let id = created["id"].as_str().unwrap();
    let attempts = eventually(DEADLINE, "the attempt to be recorded", || async {
        let (_, page) = app.get(&format!("/v1/notifications/{id}/attempts")).await;
        let data = page["data"].as_array().cloned().unwrap_or_default();
        (!data.is_empty()).then_some(data)
    })
    .await;
    assert_eq!(
        attempts[0]["url"],
        json!(url),
        "the attempt shows where it went"
    );
    let (_, read) = app.get(&format!("/v1/notifications/{id}")).await;
    assert_eq!(read["url"], json!(url));

    for (bad, what) in [
        ("http://user:pw@127.0.0.1/x", "credentials"),
        ("http://10.1.2.3/notify", "a private address"),
        ("ftp://example.com/", "another scheme"),
    ] {
        let (status, answer) = app
            .post(
                "/v1/notifications",
                json!({"endpoint": "shop", "payload": {}, "url": bad}),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{what}: {answer}");
        assert_eq!(answer["error"]["code"], json!("invalid_url"), "{what}");
        assert_eq!(answer["error"]["field"], json!("url"), "{what}");
    }
}
both!(a_per_notification_url_gets_the_endpoint_signature);

/// Kills the real binary with SIGKILL while it fans an event out to 10,000
/// endpoints; the producer sends the event again (same key) to a new
/// process, as it would after losing its connection. Every endpoint then
/// gets the event exactly once.
#[sqlx::test]
async fn a_crash_during_fan_out_loses_no_delivery(_: PgPoolOptions, connect: PgConnectOptions) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    const ENDPOINTS: usize = 10_000;
    let receiver = Receiver::start().await;
    let secret = hookd::domain::secret::SigningSecret::generate();
    sqlx::query(
        "INSERT INTO endpoints (id, url, secret, schedule_ms, owner) \
         SELECT hookd_uuid_v7(), $1, $2, '{0,500}', 'bulk' FROM generate_series(1, $3)",
    )
    .bind(receiver.url("/bulk"))
    .bind(secret.as_str())
    .bind(ENDPOINTS as i32)
    .execute(&pool)
    .await
    .unwrap();
    let db = database_url(&pool);
    let prefix = new_prefix();
    let dir = std::env::temp_dir();
    let start = |log: &str| {
        let port = free_port();
        let process = HookdProcess::start_logged(
            &db,
            &redis_url(),
            &prefix,
            &[("HOOKD_API__TOKENS", &format!("[\"{TOKEN}\"]"))],
            &format!("127.0.0.1:{port}"),
            &dir.join(format!("{prefix}-{log}.log")),
        );
        (process, format!("http://127.0.0.1:{port}"))
    };
    let body = json!({"event_type": "order.paid", "owner": "bulk", "key": "order-9:paid", "payload": {"order": 9}, "delay": "2s"});
    let client = crate::helpers::http_client();
    let post = |base: String| {
        let (client, body) = (client.clone(), body.clone());
        async move {
            client
                .post(format!("{base}/v1/events"))
                .bearer_auth(TOKEN)
                .json(&body)
                .send()
                .await
        }
    };

    let (mut first, base) = start("first");
    HookdProcess::wait_ready(&base, DEADLINE).await;
    let request = tokio::spawn(post(base));
    // Kill it while the fan-out statement runs (or, on a fast machine, as
    // soon after as the test can see it).
    let kill_deadline = Instant::now() + DEADLINE;
    loop {
        let running: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'WITH input AS%' AND state = 'active'",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        if running > 0 || request.is_finished() || Instant::now() > kill_deadline {
            break;
        }
        tokio::task::yield_now().await;
    }
    first.signal("KILL");
    first.wait(DEADLINE).await;
    let first_answer = request.await.unwrap();
    println!(
        "killed during the fan-out; the first request got {:?}",
        first_answer.as_ref().map(|r| r.status())
    );

    let (_second, base) = start("second");
    HookdProcess::wait_ready(&base, DEADLINE).await;
    let answer = post(base).await.expect("the second process answers");
    assert!(
        answer.status() == StatusCode::CREATED || answer.status() == StatusCode::OK,
        "{}",
        answer.status()
    );
    let created: Value = answer.json().await.unwrap();
    assert_eq!(created["deliveries"], json!(ENDPOINTS));
    let (distinct, total) = receiver
        .wait_distinct("/bulk", ENDPOINTS, Duration::from_secs(120))
        .await;
    assert_eq!(distinct, ENDPOINTS);
    // A moment for a stray second delivery to show, polled, not slept: the
    // counts must stay put while the dispatcher has nothing left.
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM events")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(events, 1, "one event, however many requests");
    eventually(DEADLINE, "every delivery recorded as succeeded", || async {
        let succeeded: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM notifications WHERE status = 'succeeded' AND event_id IS NOT NULL",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        (succeeded == ENDPOINTS as i64).then_some(())
    })
    .await;
    assert_eq!(
        receiver.distinct("/bulk"),
        (ENDPOINTS, ENDPOINTS),
        "each endpoint got the event exactly once ({total} requests when the last arrived)"
    );
}

/// An event of owner `r` (one endpoint) whose delivery stays pending for an
/// hour: retention keeps it.
async fn kept_event(app: &TestApp) -> Value {
    event(
        app,
        json!({"event_type": "a.b", "owner": "r", "payload": {}, "delay": "1h"}),
    )
    .await
}

/// An event of an owner with no endpoints: no deliveries, so retention
/// deletes it.
async fn event_without_deliveries(app: &TestApp) -> Value {
    event(
        app,
        json!({"event_type": "a.b", "owner": "nobody", "payload": {}}),
    )
    .await
}

async fn retention_deletes_an_event_only_once_its_deliveries_are_gone(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"owner": "r"})).await;
    let kept = kept_event(&app).await;
    let gone = event_without_deliveries(&app).await;
    assert_eq!(gone["deliveries"], json!(0));
    let store = backend.housekeeping();
    let later = chrono::Utc::now() + chrono::Duration::minutes(1);
    assert_eq!(
        store.purge_events(later, None, 100).await.unwrap(),
        (1, None)
    );
    let (status, _) = app
        .get(&format!("/v1/events/{}", gone["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app
        .get(&format!("/v1/events/{}", kept["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, StatusCode::OK, "its delivery is still pending");
    assert_eq!(
        store.purge_events(later, None, 100).await.unwrap(),
        (0, None)
    );
}
both!(retention_deletes_an_event_only_once_its_deliveries_are_gone);

async fn retention_walks_events_once_past_those_it_keeps(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"owner": "r"})).await;
    // Three kept (a delivery pending), then one whose deliveries are gone.
    for _ in 0..3 {
        kept_event(&app).await;
    }
    let gone = event_without_deliveries(&app).await;
    let store = backend.housekeeping();
    let later = chrono::Utc::now() + chrono::Duration::minutes(1);
    // Two at a time: the first batch deletes nothing and says where to go
    // on; the second reaches the one to delete and ends the walk.
    let (deleted, next) = store.purge_events(later, None, 2).await.unwrap();
    assert_eq!(deleted, 0);
    let next = next.expect("a full batch says where to go on");
    assert_eq!(
        store.purge_events(later, Some(next), 2).await.unwrap(),
        (1, Some(gone["id"].as_str().unwrap().parse().unwrap()))
    );
    let (status, _) = app
        .get(&format!("/v1/events/{}", gone["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
both!(retention_walks_events_once_past_those_it_keeps);
