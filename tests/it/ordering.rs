//! Ordered delivery per key (docs/design.md §17): on an endpoint with
//! `"ordering": "key"`, the notifications of one `order_key` are attempted
//! one at a time in creation order, each with `webhook-sequence`, across
//! processes; a notification without a key beside them is not held;
//! `hold` keeps a failed head's successors waiting; a retried notification
//! goes back in line; a pull consumer is offered only each key's head; and
//! turning ordering off releases every one waiting. On each backend.

use std::time::Duration;

use hookd::store::seams::HousekeepingStore;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::backends::Backend;
use crate::conformance::fixtures::{
    attempt, commit_new, create, endpoint, get, keyed, record, FAILED,
};
use crate::helpers::{
    database_url, eventually, new_prefix, redis_url, spawn_app_settings, test_settings_with_prefix,
    HookdProcess, TestApp,
};
use crate::pull::{pull, pull_endpoint};
use crate::rate_limit::instances;
use crate::receiver::{Received, Receiver, Reply};

const DEADLINE: Duration = Duration::from_secs(30);
const RETRIES: &str = r#"["0s", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms"]"#;

fn retries() -> Value {
    serde_json::from_str(RETRIES).unwrap()
}

async fn read(app: &TestApp, id: &str) -> Value {
    let (status, read) = app.get(&format!("/v1/notifications/{id}")).await;
    assert_eq!(status, StatusCode::OK, "{read}");
    read
}

async fn wait_status(app: &TestApp, id: &str, status: &str) -> Value {
    eventually(DEADLINE, &format!("{id} {status}"), || async {
        let read = read(app, id).await;
        (read["status"] == status).then_some(read)
    })
    .await
}

/// The `webhook-sequence` of each request, in arrival order.
fn sequences(got: &[Received]) -> Vec<i64> {
    got.iter()
        .map(|r| {
            r.header("webhook-sequence")
                .expect("sequenced")
                .parse()
                .unwrap()
        })
        .collect()
}

/// Turns the release trigger on or off (PostgreSQL): what a create racing
/// its predecessor's end would see, made to happen.
async fn release_trigger(pool: &sqlx::PgPool, on: bool) {
    let verb = if on { "ENABLE" } else { "DISABLE" };
    let sql = format!("ALTER TABLE notifications {verb} TRIGGER notifications_release_order");
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .execute(pool)
        .await
        .unwrap();
}

async fn notify_keyed(app: &TestApp, endpoint: &str, key: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        let body = json!({"endpoint": endpoint, "payload": {"i": i}, "order_key": key});
        ids.push(app.notify(body).await);
    }
    ids
}

async fn notifications_of_a_key_go_one_at_a_time_in_creation_order_across_processes(
    backend: Backend,
) {
    let apps = instances(&backend, "").await;
    let app = &apps[0];
    let receiver = Receiver::start().await;
    // The head fails until the test says otherwise.
    receiver.reply("/ordered", vec![Reply::status(500)]);
    let endpoint = app
        .endpoint(
            json!({"url": receiver.url("/ordered"), "ordering": "key", "schedule": retries()}),
        )
        .await;
    assert_eq!(endpoint["ordering"], "key");
    assert_eq!(endpoint["ordering_on_failure"], "continue");
    let endpoint = endpoint["id"].as_str().unwrap();
    // Created through both processes, in order.
    let mut ids = Vec::new();
    for i in 0..5 {
        let by = &apps[i % apps.len()];
        let body = json!({"endpoint": endpoint, "payload": {"i": i}, "order_key": "order-1"});
        ids.push(by.notify(body).await);
    }
    let free = app
        .notify(json!({"endpoint": endpoint, "payload": {}, "url": receiver.url("/ordered/free")}))
        .await;
    let other_key = notify_keyed(app, endpoint, "order-2", 1).await;

    // Each successor waits for the one before it, and says so.
    for (n, id) in ids.iter().enumerate() {
        let read = read(app, id).await;
        assert_eq!(read["order_key"], "order-1", "{read}");
        assert_eq!(read["sequence"], json!(n + 1), "{read}");
        if n > 0 {
            assert_eq!(read["waiting"]["reason"], "ordering", "{read}");
            assert_eq!(read["waiting"]["behind"], json!(ids[n - 1]), "{read}");
            let (status, refused) = app
                .post(&format!("/v1/notifications/{id}/retry"), json!({}))
                .await;
            if status != StatusCode::CONFLICT {
                // Seen once in a loaded run (a retry of one waiting answered
                // 200), never alone: what the key looked like then.
                let mut key = Vec::new();
                for other in &ids {
                    key.push(app.get(&format!("/v1/notifications/{other}")).await.1);
                }
                let attempts = format!("/v1/notifications/{}/attempts", ids[0]);
                let (_, head) = app.get(&attempts).await;
                panic!(
                    "a retry of one waiting is refused: {status} {refused}\nthe key: {key:#?}\nthe head's attempts: {head}"
                );
            }
            assert_eq!(status, StatusCode::CONFLICT, "{refused}");
            assert_eq!(refused["error"]["code"], "ordering", "{refused}");
        }
    }
    // Neither a notification without a key nor another key is held.
    wait_status(app, &free, "succeeded").await;
    assert_eq!(read(app, &free).await["sequence"], Value::Null);
    let of_key = |got: Vec<Received>| -> Vec<Received> {
        got.into_iter()
            .filter(|r| r.header("webhook-id") != Some(other_key[0].as_str()))
            .collect()
    };
    let failing = eventually(DEADLINE, "three attempts of the head", || async {
        let got = of_key(receiver.received("/ordered"));
        (got.len() >= 3).then_some(got)
    })
    .await;
    let heads: std::collections::HashSet<&str> = failing
        .iter()
        .map(|r| r.header("webhook-id").unwrap())
        .collect();
    assert_eq!(heads.len(), 1, "only the head of order-1 is attempted");
    assert!(heads.contains(ids[0].as_str()));
    assert!(sequences(&failing).iter().all(|s| *s == 1));

    receiver.reply("/ordered", vec![Reply::status(200)]);
    for id in &ids {
        wait_status(app, id, "succeeded").await;
    }
    let order = sequences(&of_key(receiver.received("/ordered")));
    assert!(
        order.windows(2).all(|w| w[0] <= w[1]),
        "no successor before its predecessor's success: {order:?}"
    );
    let mut seen = order.clone();
    seen.dedup();
    assert_eq!(seen, [1, 2, 3, 4, 5], "{order:?}");
    // After the head's success, each went once.
    assert_eq!(order.iter().filter(|s| **s > 1).count(), 4, "{order:?}");
}
both!(notifications_of_a_key_go_one_at_a_time_in_creation_order_across_processes);

async fn a_batch_places_its_items_of_each_key_behind_the_keys_tail_in_item_order(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    // Key a's head, created alone, fails once.
    receiver.reply("/batch", vec![Reply::status(500), Reply::status(200)]);
    let endpoint = app
        .endpoint(json!({"url": receiver.url("/batch"), "ordering": "key", "schedule": retries()}))
        .await;
    let endpoint = endpoint["id"].as_str().unwrap();
    let head = notify_keyed(&app, endpoint, "a", 1).await.remove(0);
    let item = |key: Option<&str>, i: i64| json!({"endpoint": endpoint, "payload": {"i": i}, "order_key": key});
    let (status, body) = app
        .post(
            "/v1/notifications/batch",
            json!({"notifications": [
                item(Some("a"), 1), item(Some("b"), 2), item(Some("a"), 3),
                item(Some("b"), 4), item(Some("a"), 5), item(None, 6),
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let created: Vec<&Value> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["notification"])
        .collect();
    let sequences_given: Vec<&Value> = created.iter().map(|n| &n["sequence"]).collect();
    assert_eq!(
        sequences_given,
        [
            &json!(2),
            &json!(1),
            &json!(3),
            &json!(2),
            &json!(4),
            &Value::Null
        ]
    );
    let ids: Vec<String> = created
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(created[0]["waiting"]["behind"], json!(head));
    assert_eq!(created[2]["waiting"]["behind"], json!(ids[0]));
    for id in ids.iter().chain([&head]) {
        wait_status(&app, id, "succeeded").await;
    }
    let sent: Vec<String> = receiver
        .received("/batch")
        .iter()
        .map(|r| r.header("webhook-id").unwrap().to_string())
        .collect();
    let at = |id: &str| sent.iter().rposition(|s| s == id).unwrap();
    assert!(at(&head) < at(&ids[0]) && at(&ids[0]) < at(&ids[2]) && at(&ids[2]) < at(&ids[4]));
    assert!(at(&ids[1]) < at(&ids[3]), "{sent:?}");
}
both!(a_batch_places_its_items_of_each_key_behind_the_keys_tail_in_item_order);

async fn under_hold_a_failed_head_keeps_its_successors_until_it_is_retried_to_success(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply("/held", vec![Reply::status(500)]);
    let endpoint = app
        .endpoint(json!({
            "url": receiver.url("/held"), "ordering": "key",
            "ordering_on_failure": "hold", "schedule": ["0s"],
        }))
        .await;
    let endpoint = endpoint["id"].as_str().unwrap();
    let ids = notify_keyed(&app, endpoint, "order-7", 3).await;
    wait_status(&app, &ids[0], "failed").await;
    // A late one waits too: the key is held.
    let late = notify_keyed(&app, endpoint, "order-7", 1).await.remove(0);
    for (waiter, ahead) in [(&ids[1], &ids[0]), (&ids[2], &ids[1]), (&late, &ids[2])] {
        let read = read(&app, waiter).await;
        assert_eq!(read["status"], "pending", "{read}");
        assert_eq!(read["waiting"]["behind"], json!(ahead), "{read}");
    }
    // A cancelled successor leaves the line; the next waits for the head.
    let (status, _) = app
        .post(&format!("/v1/notifications/{}/cancel", ids[1]), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        read(&app, &ids[2]).await["waiting"]["behind"],
        json!(ids[0])
    );
    assert_eq!(
        receiver.received("/held").len(),
        1,
        "nothing went after the head"
    );

    receiver.reply("/held", vec![Reply::status(200)]);
    let (status, retried) = app
        .post(&format!("/v1/notifications/{}/retry", ids[0]), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{retried}");
    assert_eq!(
        retried["waiting"]["behind"],
        Value::Null,
        "the holder is its key's head"
    );
    wait_status(&app, &ids[2], "succeeded").await;
    wait_status(&app, &late, "succeeded").await;
    assert_eq!(sequences(&receiver.received("/held")), [1, 1, 3, 4]);
}
both!(under_hold_a_failed_head_keeps_its_successors_until_it_is_retried_to_success);

/// A retry puts a failed one back in line: alone in its key, it is the
/// key's tail again, and the next one created waits for it (the key's
/// row names it: `store::ordering`).
async fn a_retried_notification_alone_in_its_key_is_its_tail_and_the_next_waits_for_it(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    // It fails; its retry hangs.
    receiver.reply("/again", vec![Reply::status(500), Reply::Hang]);
    let endpoint = app
        .endpoint(json!({"url": receiver.url("/again"), "ordering": "key", "schedule": ["0s"]}))
        .await;
    let endpoint = endpoint["id"].as_str().unwrap();
    let first = notify_keyed(&app, endpoint, "order-t", 1).await.remove(0);
    wait_status(&app, &first, "failed").await;
    let (status, retried) = app
        .post(&format!("/v1/notifications/{first}/retry"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{retried}");
    receiver.wait_for("/again", 2, DEADLINE).await;
    let next = notify_keyed(&app, endpoint, "order-t", 1).await.remove(0);
    let read = read(&app, &next).await;
    assert_eq!(read["waiting"]["reason"], "ordering", "{read}");
    assert_eq!(read["waiting"]["behind"], json!(first), "{read}");
    assert_eq!(
        receiver.received("/again").len(),
        2,
        "nothing went after it"
    );
}
both!(a_retried_notification_alone_in_its_key_is_its_tail_and_the_next_waits_for_it);

/// One released by its predecessor's success is its key's head in every
/// respect, though PostgreSQL leaves it unwritten (it still names the
/// success: migration `20261210000056`): read, it waits for none of its
/// key; under `hold`, its failure (recorded by the dispatcher) and its
/// cancel (by the API) each hold the key as a head's would.
async fn a_notification_a_success_released_holds_its_key_when_it_fails_or_is_cancelled(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply("/failing", vec![Reply::status(200), Reply::status(500)]);
    let hold = |path: &str| {
        json!({
            "url": receiver.url(path), "ordering": "key",
            "ordering_on_failure": "hold", "schedule": ["0s"],
        })
    };
    let failing = app.endpoint(hold("/failing")).await;
    let failing = failing["id"].as_str().unwrap();
    let ids = notify_keyed(&app, failing, "order-f", 3).await;
    wait_status(&app, &ids[1], "failed").await;
    let third = read(&app, &ids[2]).await;
    assert_eq!(third["status"], "pending", "{third}");
    assert_eq!(third["waiting"]["behind"], json!(ids[1]), "{third}");
    assert_eq!(
        receiver.received("/failing").len(),
        2,
        "nothing went after the failed one"
    );

    // The first goes in a second; the next, placed behind it in the same
    // batch, is not due for an hour.
    let calm = app.endpoint(hold("/calm")).await;
    let calm = calm["id"].as_str().unwrap();
    let body = |delay: &str| json!({"endpoint": calm, "payload": {}, "order_key": "order-c", "delay": delay});
    let ids = app.notify_batch(vec![body("1s"), body("1h")]).await;
    let [first, next]: [String; 2] = ids.try_into().unwrap();
    assert_eq!(read(&app, &next).await["waiting"]["behind"], json!(first));
    wait_status(&app, &first, "succeeded").await;
    let released = read(&app, &next).await;
    assert_eq!(released["waiting"]["reason"], "scheduled", "{released}");
    assert_eq!(released["waiting"]["behind"], Value::Null, "{released}");
    let (status, cancelled) = app
        .post(&format!("/v1/notifications/{next}/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    let late = app.notify(body("0s")).await;
    let late = read(&app, &late).await;
    assert_eq!(late["waiting"]["reason"], "ordering", "{late}");
    assert_eq!(
        late["waiting"]["behind"],
        json!(next),
        "the cancelled one holds the key"
    );
}
both!(a_notification_a_success_released_holds_its_key_when_it_fails_or_is_cancelled);

async fn under_continue_a_failed_head_releases_the_next_and_a_retry_of_it_goes_back_at_its_place(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    // The first fails; the second, released by it, hangs.
    receiver.reply("/next", vec![Reply::status(500), Reply::Hang]);
    let endpoint = app
        .endpoint(json!({"url": receiver.url("/next"), "ordering": "key", "schedule": ["0s"]}))
        .await;
    let endpoint = endpoint["id"].as_str().unwrap();
    let ids = notify_keyed(&app, endpoint, "order-9", 2).await;
    wait_status(&app, &ids[0], "failed").await;
    // A third waits behind the second.
    let third = notify_keyed(&app, endpoint, "order-9", 1).await.remove(0);
    eventually(DEADLINE, "the second attempted", || async {
        let got = receiver.received("/next");
        (sequences(&got).contains(&2)).then_some(())
    })
    .await;
    assert_eq!(read(&app, &third).await["waiting"]["behind"], json!(ids[1]));
    // The failed first, retried, goes back at its place as far as nothing
    // under way is overtaken: behind the second (in flight), before the
    // third.
    let (status, retried) = app
        .post(&format!("/v1/notifications/{}/retry", ids[0]), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{retried}");
    assert_eq!(retried["waiting"]["reason"], "ordering", "{retried}");
    assert_eq!(retried["waiting"]["behind"], json!(ids[1]), "{retried}");
    assert_eq!(read(&app, &third).await["waiting"]["behind"], json!(ids[0]));
}
both!(under_continue_a_failed_head_releases_the_next_and_a_retry_of_it_goes_back_at_its_place);

async fn a_pull_consumer_is_offered_only_each_keys_head(backend: Backend) {
    let app = backend.spawn().await;
    let endpoint = pull_endpoint(&app, json!({"ordering": "key"})).await;
    let a = notify_keyed(&app, &endpoint, "a", 2).await;
    let b = notify_keyed(&app, &endpoint, "b", 1).await;
    let taken = pull(&app, &endpoint, json!({"max": 10})).await;
    let mut offered: Vec<&str> = taken.iter().map(|t| t["id"].as_str().unwrap()).collect();
    offered.sort();
    let mut heads = vec![a[0].as_str(), b[0].as_str()];
    heads.sort();
    assert_eq!(offered, heads);
    let head = taken.iter().find(|t| t["id"] == json!(a[0])).unwrap();
    let (status, acked) = app
        .post(
            &format!("/v1/notifications/{}/ack", a[0]),
            json!({"receipt": head["receipt"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{acked}");
    let next = eventually(DEADLINE, "the next of a offered", || async {
        let taken = pull(&app, &endpoint, json!({"max": 10})).await;
        (!taken.is_empty()).then_some(taken)
    })
    .await;
    assert_eq!(next.len(), 1);
    assert_eq!(next[0]["id"], json!(a[1]));
}
both!(a_pull_consumer_is_offered_only_each_keys_head);

async fn turning_ordering_off_releases_every_notification_waiting(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply("/off", vec![Reply::Hang]);
    let endpoint = app
        .endpoint(json!({"url": receiver.url("/off"), "ordering": "key", "timeout_ms": 50000}))
        .await;
    let endpoint = endpoint["id"].as_str().unwrap();
    let ids = notify_keyed(&app, endpoint, "k", 3).await;
    receiver.wait_for("/off", 1, DEADLINE).await;
    let (status, patched) = app
        .call(
            Method::PATCH,
            &format!("/v1/endpoints/{endpoint}"),
            Some(json!({"ordering": "none"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{patched}");
    assert_eq!(patched["ordering"], "none");
    let got = receiver.wait_for("/off", 3, DEADLINE).await;
    let mut sent: Vec<&str> = got
        .iter()
        .map(|r| r.header("webhook-id").unwrap())
        .collect();
    sent.sort();
    let mut all: Vec<&str> = ids.iter().map(String::as_str).collect();
    all.sort();
    assert_eq!(sent, all, "the two waiting went beside the hanging head");
}
both!(turning_ordering_off_releases_every_notification_waiting);

async fn an_order_key_or_an_ordering_out_of_bounds_is_refused_naming_the_field(backend: Backend) {
    let app = backend.spawn_with("[dispatcher]\nenabled = false\n").await;
    let endpoint = app.endpoint(json!({})).await;
    let endpoint = endpoint["id"].as_str().unwrap();
    for key in [
        json!(""),
        json!("k".repeat(257)),
        json!("a\u{0}b"),
        json!(7),
    ] {
        let (status, refused) = app
            .post(
                "/v1/notifications",
                json!({"endpoint": endpoint, "payload": {}, "order_key": key}),
            )
            .await;
        // 422 for a value out of bounds, 400 for one of another type.
        assert!(
            matches!(
                status,
                StatusCode::UNPROCESSABLE_ENTITY | StatusCode::BAD_REQUEST
            ),
            "{key}: {status} {refused}"
        );
        assert!(refused.to_string().contains("order_key"), "{refused}");
    }
    for fields in [
        json!({"ordering": "sideways"}),
        json!({"ordering_on_failure": "retry"}),
    ] {
        let (status, refused) = app
            .call(
                Method::PATCH,
                &format!("/v1/endpoints/{endpoint}"),
                Some(fields.clone()),
            )
            .await;
        assert!(
            matches!(
                status,
                StatusCode::UNPROCESSABLE_ENTITY | StatusCode::BAD_REQUEST
            ),
            "{fields}: {status} {refused}"
        );
        let field = fields.as_object().unwrap().keys().next().unwrap().clone();
        assert!(refused.to_string().contains(&field), "{refused}");
    }
    // A key of 256 bytes is one.
    let id = app
        .notify(json!({"endpoint": endpoint, "payload": {}, "order_key": "é".repeat(128)}))
        .await;
    assert_eq!(read(&app, &id).await["order_key"], json!("é".repeat(128)));
}
both!(an_order_key_or_an_ordering_out_of_bounds_is_refused_naming_the_field);

async fn an_events_deliveries_to_an_ordered_endpoint_follow_its_order_key(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    receiver.reply("/erp", vec![Reply::status(500), Reply::status(200)]);
    let owner = "merchant-5";
    let ordered = app
        .endpoint(json!({
            "url": receiver.url("/erp"), "owner": owner, "ordering": "key",
            "schedule": ["0s", "300ms"],
        }))
        .await;
    app.endpoint(json!({"url": receiver.url("/plain"), "owner": owner}))
        .await;
    let mut events = Vec::new();
    for status in ["paid", "refunded"] {
        let (code, event) = app
            .post(
                "/v1/events",
                json!({"event_type": format!("order.{status}"), "owner": owner,
                    "order_key": "order-5", "payload": {"status": status}}),
            )
            .await;
        assert_eq!(code, StatusCode::CREATED, "{event}");
        assert_eq!(event["order_key"], "order-5", "{event}");
        events.push(event["id"].as_str().unwrap().to_string());
    }
    let erp = receiver.wait_for("/erp", 3, DEADLINE).await;
    let bodies: Vec<Value> = erp
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert_eq!(
        bodies,
        [
            json!({"status": "paid"}),
            json!({"status": "paid"}),
            json!({"status": "refunded"})
        ],
        "the refund waited for the payment's retry"
    );
    assert_eq!(sequences(&erp), [1, 1, 2]);
    let plain = receiver.wait_for("/plain", 2, DEADLINE).await;
    assert!(plain.iter().all(|r| r.header("webhook-sequence").is_none()));
    let (_, deliveries) = app
        .get(&format!(
            "/v1/notifications?endpoint={}",
            ordered["id"].as_str().unwrap()
        ))
        .await;
    for delivery in deliveries["data"].as_array().unwrap() {
        assert_eq!(delivery["order_key"], "order-5", "{delivery}");
    }
}
both!(an_events_deliveries_to_an_ordered_endpoint_follow_its_order_key);

async fn a_recovered_series_goes_back_in_its_keys_line_in_creation_order(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    let path = |n: usize| format!("/recovered/{n}");
    for n in 1..=3 {
        receiver.reply(&path(n), vec![Reply::status(500)]);
    }
    let endpoint = app
        .endpoint(json!({"url": receiver.url("/recovered"), "ordering": "key", "schedule": ["0s"]}))
        .await;
    let endpoint = endpoint["id"].as_str().unwrap();
    let since = chrono::Utc::now() - chrono::Duration::minutes(1);
    let mut ids = Vec::new();
    for n in 1..=3 {
        let body = json!({"endpoint": endpoint, "payload": {}, "order_key": "order-3",
            "url": receiver.url(&path(n))});
        ids.push(app.notify(body).await);
    }
    for id in &ids {
        wait_status(&app, id, "failed").await;
    }
    // The first answers after a pause: without order, the others would
    // arrive meanwhile.
    const PAUSE: Duration = Duration::from_millis(500);
    receiver.reply(&path(1), vec![Reply::Slow(PAUSE)]);
    for n in 2..=3 {
        receiver.reply(&path(n), vec![Reply::status(200)]);
    }
    let (status, operation) = app
        .post(
            &format!("/v1/endpoints/{endpoint}/recover"),
            json!({"since": since.to_rfc3339()}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{operation}");
    for id in &ids {
        wait_status(&app, id, "succeeded").await;
    }
    // Each path's second request is its recovered attempt.
    let recovered: Vec<chrono::DateTime<chrono::Utc>> =
        (1..=3).map(|n| receiver.received(&path(n))[1].at).collect();
    assert!(
        recovered[1] - recovered[0] >= chrono::Duration::from_std(PAUSE).unwrap(),
        "the second went once the first was answered: {recovered:?}"
    );
    assert!(recovered[2] > recovered[1], "{recovered:?}");
}
both!(a_recovered_series_goes_back_in_its_keys_line_in_creation_order);

/// Server mode: a process killed while its key's head is in flight. The
/// successor goes only once the head's lease has run out, the head been
/// sent again by another process and acknowledged.
#[sqlx::test]
async fn a_kill_9_while_a_keys_head_is_in_flight_keeps_its_successor_waiting(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let prefix = new_prefix();
    let app = spawn_app_settings(
        pool.clone(),
        test_settings_with_prefix(&redis_url(), &prefix, "[dispatcher]\nenabled = false\n"),
    )
    .await;
    let receiver = Receiver::start().await;
    // The first request hangs until its process dies; the rest succeed.
    receiver.reply("/k9", vec![Reply::Hang, Reply::status(200)]);
    let endpoint = app
        .endpoint(json!({"url": receiver.url("/k9"), "ordering": "key"}))
        .await;
    let endpoint = endpoint["id"].as_str().unwrap();
    let ids = notify_keyed(&app, endpoint, "order-9", 2).await;
    // A lease just past the 2 s timeout and its margin: the head's runs out
    // about 7 s after the kill.
    let env = [
        ("HOOKD_SENDER__TIMEOUT_MS", "2000"),
        ("HOOKD_DISPATCHER__LEASE_MS", "7001"),
    ];
    let db = database_url(&pool);
    let mut first = HookdProcess::start(&db, &redis_url(), &prefix, &env);
    receiver.wait_for("/k9", 1, DEADLINE).await;
    first.signal("KILL");
    first.wait(DEADLINE).await;
    assert_eq!(receiver.received("/k9").len(), 1, "only the head went");
    let _second = HookdProcess::start(&db, &redis_url(), &prefix, &env);
    for id in &ids {
        wait_status(&app, id, "succeeded").await;
    }
    let got = receiver.received("/k9");
    let sent: Vec<&str> = got
        .iter()
        .map(|r| r.header("webhook-id").unwrap())
        .collect();
    assert_eq!(sent, [ids[0].as_str(), ids[0].as_str(), ids[1].as_str()]);
    assert_eq!(sequences(&got), [1, 1, 2]);
}

/// A notification left waiting for one already final (a create racing its
/// predecessor's end: here, the release trigger turned off while the
/// predecessor is cancelled) is released by housekeeping as the end would
/// have released it.
#[sqlx::test]
async fn a_notification_stranded_behind_a_final_one_is_released_by_housekeeping(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let app = spawn_app_settings(
        pool.clone(),
        test_settings_with_prefix(&redis_url(), &new_prefix(), ""),
    )
    .await;
    let receiver = Receiver::start().await;
    receiver.reply("/stranded", vec![Reply::Hang, Reply::status(200)]);
    let endpoint = app
        .endpoint(json!({"url": receiver.url("/stranded"), "ordering": "key"}))
        .await;
    let endpoint = endpoint["id"].as_str().unwrap();
    let ids = notify_keyed(&app, endpoint, "order-s", 2).await;
    receiver.wait_for("/stranded", 1, DEADLINE).await;
    release_trigger(&pool, false).await;
    let (status, _) = app
        .post(&format!("/v1/notifications/{}/cancel", ids[0]), json!({}))
        .await;
    release_trigger(&pool, true).await;
    assert_eq!(status, StatusCode::OK);
    wait_status(&app, &ids[1], "succeeded").await;
}

/// Polls until a session of this test's database waits for a row lock:
/// the one that must wait for the other half of a race, seen waiting.
async fn a_session_waits_for_a_lock(pool: &sqlx::PgPool) {
    eventually(DEADLINE, "a session waiting for a row lock", || async {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(pool)
        .await
        .unwrap();
        (waiting > 0).then_some(())
    })
    .await;
}

async fn behind_of(pool: &sqlx::PgPool, id: &str) -> Option<uuid::Uuid> {
    sqlx::query_scalar("SELECT behind FROM notifications WHERE id = $1::uuid")
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// A race's start: an app on `pool`, an ordered endpoint, and the tail of
/// its key `order-r` in flight (its receiver hangs on it); with the
/// endpoint's id and the tail's.
async fn racing_tail(pool: &sqlx::PgPool) -> (TestApp, Receiver, String, String) {
    let app = spawn_app_settings(
        pool.clone(),
        test_settings_with_prefix(&redis_url(), &new_prefix(), ""),
    )
    .await;
    let receiver = Receiver::start().await;
    receiver.reply("/race", vec![Reply::Hang, Reply::status(200)]);
    let endpoint = app
        .endpoint(json!({"url": receiver.url("/race"), "ordering": "key"}))
        .await;
    let endpoint = endpoint["id"].as_str().unwrap().to_string();
    let tail = notify_keyed(&app, &endpoint, "order-r", 1).await.remove(0);
    receiver.wait_for("/race", 1, DEADLINE).await;
    (app, receiver, endpoint, tail)
}

/// A create of a key whose tail is ending (the end's transaction has
/// written the key's row and not committed) waits for that end, and
/// then reads the tail's predecessor on the row: the new one is its
/// key's head as it answers, not a second later by housekeeping.
#[sqlx::test]
async fn a_create_racing_its_tails_end_waits_for_it_and_is_its_keys_head(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let (app, _receiver, endpoint, tail) = racing_tail(&pool).await;
    let endpoint = endpoint.as_str();
    // The tail's end, its release run, not committed.
    let mut ending = pool.begin().await.unwrap();
    sqlx::query(
        "UPDATE notifications SET status = 'cancelled', completed_at = now(), updated_at = now() \
         WHERE id = $1::uuid",
    )
    .bind(&tail)
    .execute(&mut *ending)
    .await
    .unwrap();
    let body = json!({"endpoint": endpoint, "payload": {"i": 1}, "order_key": "order-r"});
    let create = app.notify(body);
    let end = async {
        a_session_waits_for_a_lock(&pool).await;
        ending.commit().await.unwrap();
    };
    let (next, ()) = tokio::join!(create, end);
    assert_eq!(behind_of(&pool, &next).await, None, "it waits for nothing");
    assert_ne!(read(&app, &next).await["waiting"]["reason"], "ordering");
    wait_status(&app, &next, "succeeded").await;
}

/// The other way round: the tail ends while a create of its key holds
/// the key's row (here a transaction that does by hand what a create
/// does: takes the row, makes a notification wait for the tail, and
/// names it the tail). The end waits for it and passes that one over as
/// it commits, not a second later by housekeeping.
#[sqlx::test]
async fn a_tails_end_racing_a_create_waits_for_it_and_releases_what_it_placed(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let (app, _receiver, endpoint, tail) = racing_tail(&pool).await;
    let endpoint = endpoint.as_str();
    // Not due for an hour, of a key of its own: placed by hand below.
    let body = json!({"endpoint": endpoint, "payload": {}, "order_key": "order-n", "delay": "1h"});
    let next = app.notify(body).await;
    let mut creating = pool.begin().await.unwrap();
    sqlx::query(
        "UPDATE order_keys SET last_sequence = last_sequence + 1, tail = $2::uuid \
         WHERE endpoint_id = $1::uuid AND order_key = 'order-r'",
    )
    .bind(endpoint)
    .bind(&next)
    .execute(&mut *creating)
    .await
    .unwrap();
    let path = format!("/v1/notifications/{tail}/cancel");
    let cancel = app.post(&path, json!({}));
    let create = async {
        a_session_waits_for_a_lock(&pool).await;
        sqlx::query(
            "UPDATE notifications SET order_key = 'order-r', sequence = 2, behind = $2::uuid \
             WHERE id = $1::uuid",
        )
        .bind(&next)
        .bind(&tail)
        .execute(&mut *creating)
        .await
        .unwrap();
        creating.commit().await.unwrap();
    };
    let ((status, cancelled), ()) = tokio::join!(cancel, create);
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    assert_eq!(
        behind_of(&pool, &next).await,
        None,
        "passed over by the end"
    );
}

/// Two neighbours' ends in different transactions: the head of key
/// `order-r` in flight, its successor (the key's tail, business key
/// `refund-1`) waiting, and a transaction that does by hand what the
/// recorder does with the head's success, not committed: sets it
/// succeeded, the release trigger standing aside, nothing written on the
/// successor. With that transaction.
struct Staged {
    app: TestApp,
    receiver: Receiver,
    endpoint: String,
    head: String,
    tail: String,
}

async fn a_success_being_recorded(
    pool: &sqlx::PgPool,
) -> (Staged, sqlx::Transaction<'static, sqlx::Postgres>) {
    let (app, receiver, endpoint, head) = racing_tail(pool).await;
    let body = json!({"endpoint": endpoint, "payload": {"i": 1}, "order_key": "order-r", "key": "refund-1"});
    let tail = app.notify(body).await;
    let mut recording = pool.begin().await.unwrap();
    sqlx::query("SELECT set_config('hookd.release', 'batch', true)")
        .execute(&mut *recording)
        .await
        .unwrap();
    sqlx::query(
        "UPDATE notifications SET status = 'succeeded', completed_at = now(), \
             updated_at = now(), next_attempt_at = NULL WHERE id = $1::uuid",
    )
    .bind(&head)
    .execute(&mut *recording)
    .await
    .unwrap();
    let staged = Staged {
        app,
        receiver,
        endpoint,
        head,
        tail,
    };
    (staged, recording)
}

async fn tail_of(pool: &sqlx::PgPool, endpoint: &str) -> Option<String> {
    let tail: Option<uuid::Uuid> = sqlx::query_scalar(
        "SELECT tail FROM order_keys WHERE endpoint_id = $1::uuid AND order_key = 'order-r'",
    )
    .bind(endpoint)
    .fetch_one(pool)
    .await
    .unwrap();
    tail.map(|id| id.to_string())
}

/// The key's next notification is delivered after the head, with its
/// sequence (the cancelled one had 2).
async fn the_next_goes_after_the_head(staged: &Staged) {
    let Staged {
        app,
        receiver,
        endpoint,
        head,
        ..
    } = staged;
    let next = notify_keyed(app, endpoint, "order-r", 1).await.remove(0);
    wait_status(app, &next, "succeeded").await;
    let got = receiver.received("/race");
    let sent: Vec<&str> = got
        .iter()
        .map(|r| r.header("webhook-id").unwrap())
        .collect();
    assert_eq!(sent, [head.as_str(), next.as_str()]);
    assert_eq!(sequences(&got), [1, 3]);
}

/// A cancel of a key's tail while its predecessor's success is being
/// recorded waits for the recording (it locks the predecessor first), so
/// its release reads the success: the key is left empty, and its next
/// notification is its head as it is created.
#[sqlx::test]
async fn a_tail_cancelled_while_its_predecessors_success_is_recorded_leaves_its_key_empty(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let (staged, recording) = a_success_being_recorded(&pool).await;
    let path = format!("/v1/notifications/{}/cancel", staged.tail);
    let cancel = staged.app.post(&path, json!({}));
    let record = async {
        a_session_waits_for_a_lock(&pool).await;
        recording.commit().await.unwrap();
    };
    let ((status, cancelled), ()) = tokio::join!(cancel, record);
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    assert_eq!(tail_of(&pool, &staged.endpoint).await, None);
    the_next_goes_after_the_head(&staged).await;
}

/// The same race through a cancel of many at once (here by business key),
/// which does not lock predecessors: each end reads the other as pending,
/// and the key's tail is left naming the success (`store::ordering`). The
/// key's next notification waits behind it, owed to nobody's index, and
/// the overdue sweep still delivers it, in order.
#[sqlx::test]
async fn a_key_left_with_a_tail_that_succeeded_still_delivers_its_next_notification(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let (staged, recording) = a_success_being_recorded(&pool).await;
    let (status, cancelled) = staged
        .app
        .post("/v1/notifications/cancel", json!({"key": "refund-1"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    assert_eq!(cancelled["ids"], json!([staged.tail]));
    recording.commit().await.unwrap();
    assert_eq!(
        tail_of(&pool, &staged.endpoint).await,
        Some(staged.head.clone()),
        "the race's trace"
    );
    the_next_goes_after_the_head(&staged).await;
}

/// Housekeeping's release of a notification stranded behind a final one
/// passes over that one only while it stays final: while a retry of it
/// is under way (its row held, pending again once it commits), the
/// stranded one keeps waiting for it.
#[sqlx::test]
async fn a_stranded_notification_keeps_waiting_for_a_predecessor_being_retried(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let store = crate::conformance::postgres_store(pool.clone());
    let shop = create(
        &store,
        hookd::store::endpoints::Endpoint {
            ordering: hookd::domain::ordering::KeyOrdering::Key,
            ..endpoint()
        },
    )
    .await;
    let first = commit_new(&store, keyed(&shop, "order-r")).await;
    let second = commit_new(&store, keyed(&shop, "order-r")).await;
    assert_eq!(get(&store, second).await.behind, Some(first));
    // The first fails with its release turned off: the second is stranded.
    release_trigger(&pool, false).await;
    record(&store, &[attempt(first, shop.id, 1, FAILED)]).await;
    release_trigger(&pool, true).await;
    // A retry of the first, under way.
    let mut retry = pool.begin().await.unwrap();
    sqlx::query("UPDATE notifications SET status = 'pending', completed_at = NULL WHERE id = $1")
        .bind(first)
        .execute(&mut *retry)
        .await
        .unwrap();
    let released = HousekeepingStore::release_stranded(&store, None, 100).await;
    assert_eq!(released.unwrap().0, 0);
    assert_eq!(
        get(&store, second).await.behind,
        Some(first),
        "still waiting"
    );
    retry.commit().await.unwrap();
    let released = HousekeepingStore::release_stranded(&store, None, 100).await;
    assert_eq!(released.unwrap().0, 0, "its predecessor is pending again");
    assert_eq!(get(&store, second).await.behind, Some(first));
}
