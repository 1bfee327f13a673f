//! Recover after an outage (docs/design.md §16) on each backend: a recover over
//! part of an hour of failures counts (`dry_run`), then restarts, exactly
//! those, each delivered once; one at a time per endpoint; an operation a stopped process left
//! half done is finished by the next, nothing restarted twice; bad input
//! and scopes. kill -9 with the real binary: recover_crash.rs.

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::backends::Backend;
use crate::helpers::{eventually, TestApp, TOKEN};
use crate::receiver::{Receiver, Reply};

const DEADLINE: Duration = Duration::from_secs(30);

/// `count` notifications to `endpoint` that ended `failed` (their one
/// attempt answered 503), by id.
async fn failed(app: &TestApp, backend: &Backend, endpoint: &str, count: usize) -> Vec<Uuid> {
    let items: Vec<Value> = (0..count)
        .map(|i| json!({"endpoint": endpoint, "payload": {"i": i}}))
        .collect();
    let (status, created) = app
        .post("/v1/notifications/batch", json!({"notifications": items}))
        .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let ids: Vec<Uuid> = created["data"]
        .as_array()
        .expect("per-item results")
        .iter()
        .map(|item| {
            let id = item["notification"]["id"].as_str();
            id.unwrap_or_else(|| panic!("{item}")).parse().unwrap()
        })
        .collect();
    assert_eq!(ids.len(), count);
    let want = count as i64;
    eventually(DEADLINE, "every notification to fail", || async {
        let n = backend
            .count("SELECT count(*) FROM notifications WHERE status = 'failed'")
            .await;
        (n >= want).then_some(())
    })
    .await;
    ids
}

/// An endpoint `uid` whose receiver is down (503 on `/down`), with one
/// attempt per series so a notification fails at once.
async fn endpoint_down(app: &TestApp, receiver: &Receiver, uid: &str) -> Value {
    receiver.reply("/down", vec![Reply::status(503)]);
    app.endpoint(json!({"uid": uid, "url": receiver.url("/down"), "schedule": ["0s"]}))
        .await
}

/// The receiver is back: the endpoint now points where it answers 200.
async fn back(app: &TestApp, receiver: &Receiver, uid: &str) {
    let (status, body) = app
        .call(
            Method::PATCH,
            &format!("/v1/endpoints/{uid}"),
            Some(json!({"url": receiver.url("/back")})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

async fn done(app: &TestApp, id: &str) -> Value {
    eventually(DEADLINE, "the operation to end", || async {
        let (status, operation) = app.get(&format!("/v1/operations/{id}")).await;
        assert_eq!(status, StatusCode::OK, "{operation}");
        (operation["status"] != json!("running")).then_some(operation)
    })
    .await
}

async fn status_of(app: &TestApp, id: Uuid) -> Value {
    let (_, n) = app.get(&format!("/v1/notifications/{id}")).await;
    n["status"].clone()
}

async fn a_recover_restarts_exactly_what_failed_in_its_window_each_delivered_once(
    backend: Backend,
) {
    let app = backend.spawn().await;
    // In server mode a second process runs beside it: its runner looks
    // for the same operation, and the lease lets one work it.
    let _second = match backend.is_embedded() {
        true => None,
        false => Some(backend.spawn_beside(&app, "").await),
    };
    let receiver = Receiver::start().await;
    endpoint_down(&app, &receiver, "shop").await;
    let ids = failed(&app, &backend, "shop", 500).await;
    // Failed over the last hour, one every 7 s, half a second off the
    // window's edge so that none sits on it.
    let now = Utc::now();
    let ended: Vec<(Uuid, DateTime<Utc>)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let ago = chrono::Duration::milliseconds(3_600_000 - 7_000 * i as i64 - 500);
            (*id, now - ago)
        })
        .collect();
    backend.ended_at(&ended).await;
    let since = now - chrono::Duration::minutes(30);
    let inside: BTreeSet<Uuid> = ended
        .iter()
        .filter(|(_, at)| *at >= since)
        .map(|(id, _)| *id)
        .collect();
    assert!((200..300).contains(&inside.len()), "{}", inside.len());
    back(&app, &receiver, "shop").await;

    // A dry run counts what it would restart, and restarts nothing.
    let (status, counted) = app
        .post(
            "/v1/endpoints/shop/recover",
            json!({"since": since.to_rfc3339(), "dry_run": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{counted}");
    assert_eq!(counted, json!({"matched": inside.len()}));
    let failed_now = backend
        .count("SELECT count(*) FROM notifications WHERE status = 'failed'")
        .await;
    assert_eq!(failed_now, 500, "a dry run restarts nothing");

    let (status, started) = app
        .post(
            "/v1/endpoints/shop/recover",
            json!({"since": since.to_rfc3339()}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{started}");
    assert_eq!(started["kind"], json!("recover"));
    assert_eq!(started["status"], json!("running"));
    let id = started["id"].as_str().unwrap();
    let operation = done(&app, id).await;
    assert_eq!(operation["status"], json!("done"), "{operation}");
    assert_eq!(operation["matched"], json!(inside.len()), "{operation}");
    assert_eq!(operation["started"], json!(inside.len()), "{operation}");
    assert!(operation["finished_at"].is_string(), "{operation}");

    receiver
        .wait_distinct("/back", inside.len(), DEADLINE)
        .await;
    // Everything restarted is delivered; give a duplicate a moment to show.
    eventually(DEADLINE, "the restarted ones to succeed", || async {
        let n = backend
            .count("SELECT count(*) FROM notifications WHERE status = 'succeeded'")
            .await;
        (n == inside.len() as i64).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let delivered: BTreeSet<Uuid> = receiver
        .received("/back")
        .iter()
        .map(|r| r.header("webhook-id").unwrap().parse().unwrap())
        .collect();
    assert_eq!(delivered, inside);
    assert_eq!(receiver.received("/back").len(), inside.len(), "each once");
    for &(id, _) in ended.iter().filter(|(id, _)| !inside.contains(id)).take(20) {
        assert_eq!(status_of(&app, id).await, json!("failed"));
    }
    let still_failed = backend
        .count("SELECT count(*) FROM notifications WHERE status = 'failed'")
        .await;
    assert_eq!(still_failed, (500 - inside.len()) as i64);
}
both!(a_recover_restarts_exactly_what_failed_in_its_window_each_delivered_once);

async fn a_second_recover_of_an_endpoint_while_one_runs_is_refused_with_the_running_one(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let endpoint = app.endpoint(json!({"uid": "shop"})).await;
    let endpoint_id: Uuid = endpoint["id"].as_str().unwrap().parse().unwrap();
    // One running, its lease held by a process that is busy with it.
    let store = backend.operations();
    let now = Utc::now();
    let window = hookd::domain::operation::Window {
        since: now - chrono::Duration::hours(1),
        until: now,
    };
    let running = hookd::store::operations::Operation::recover(endpoint_id, window, now);
    store.start_operation(&running).await.unwrap();
    let elsewhere = Uuid::now_v7();
    let held = store
        .lease_operation(elsewhere, now, now + chrono::Duration::hours(1))
        .await
        .unwrap()
        .expect("the operation is free to take");
    assert_eq!(held.id, running.id);

    let since = (now - chrono::Duration::minutes(5)).to_rfc3339();
    let (status, body) = app
        .post("/v1/endpoints/shop/recover", json!({"since": since}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], json!("operation_running"), "{body}");
    assert_eq!(
        body["operation"]["id"],
        json!(running.id.to_string()),
        "{body}"
    );
    assert_eq!(body["operation"]["status"], json!("running"), "{body}");
    let (_, read) = app.get(&format!("/v1/operations/{}", running.id)).await;
    assert_eq!(
        read["status"],
        json!("running"),
        "the holder's lease still runs"
    );

    // Another endpoint is not held up by it.
    app.endpoint(json!({"uid": "other"})).await;
    let (status, other) = app
        .post("/v1/endpoints/other/recover", json!({"since": since}))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{other}");
    let other = done(&app, other["id"].as_str().unwrap()).await;
    assert_eq!(
        (other["matched"].clone(), other["started"].clone()),
        (json!(0), json!(0))
    );
    // Retention takes the finished one, never the running one.
    let later = Utc::now() + chrono::Duration::days(1);
    assert_eq!(store.purge_operations(later, 100).await.unwrap(), 1);
    assert!(store.get_operation(running.id).await.unwrap().is_some());
}
both!(a_second_recover_of_an_endpoint_while_one_runs_is_refused_with_the_running_one);

async fn an_operation_a_stopped_process_left_half_done_is_finished_by_the_next_none_twice(
    backend: Backend,
) {
    let receiver = Receiver::start().await;
    let (ids, endpoint_id) = {
        let first = backend.spawn().await;
        let endpoint = endpoint_down(&first, &receiver, "shop").await;
        let ids = failed(&first, &backend, "shop", 30).await;
        back(&first, &receiver, "shop").await;
        (
            ids,
            endpoint["id"].as_str().unwrap().parse::<Uuid>().unwrap(),
        )
    };
    // The first process is gone. Its runner had done one page of 10 and
    // then died: its lease is left to run out (here: at once).
    let store = backend.operations();
    let now = Utc::now();
    let window = hookd::domain::operation::Window {
        since: now - chrono::Duration::hours(1),
        until: now,
    };
    let operation = hookd::store::operations::Operation::recover(endpoint_id, window, now);
    store.start_operation(&operation).await.unwrap();
    let crashed = Uuid::now_v7();
    store
        .lease_operation(crashed, now, now + chrono::Duration::seconds(30))
        .await
        .unwrap()
        .expect("free to take");
    let page = store
        .operation_page(operation.id, crashed, 10, Utc::now(), Utc::now())
        .await
        .unwrap()
        .expect("the crashed runner held it");
    assert_eq!(page.restarted.len(), 10);
    let half = page.operation.unwrap();
    assert_eq!((half.matched, half.started), (10, 10));
    assert_eq!(
        half.status,
        hookd::domain::operation::OperationStatus::Running
    );
    let first_page: BTreeSet<Uuid> = page.restarted.iter().map(|(id, _)| *id).collect();

    // A new process on the same store: it finds the operation, and finds
    // the first page's notifications pending (not failed): it restarts the
    // other 20. The first page is indexed by the new process's own start
    // (embedded) or the sweep of overdue rows (server).
    let second = backend.spawn().await;
    let finished = done(&second, &operation.id.to_string()).await;
    assert_eq!(finished["status"], json!("done"), "{finished}");
    assert_eq!(
        (finished["matched"].clone(), finished["started"].clone()),
        (json!(30), json!(30))
    );
    eventually(DEADLINE, "every notification delivered", || async {
        let n = backend
            .count("SELECT count(*) FROM notifications WHERE status = 'succeeded'")
            .await;
        (n == 30).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.distinct("/back"), (30, 30), "each delivered once");
    let twice = backend
        .count("SELECT count(*) FROM notifications WHERE attempts <> 2 OR series_start <> 1")
        .await;
    assert_eq!(twice, 0, "one failed attempt, then one new series of one");
    assert!(first_page.iter().all(|id| ids.contains(id)));
    // A page run again by a runner that still thinks it holds it: nothing.
    assert!(store
        .operation_page(operation.id, crashed, 10, Utc::now(), Utc::now())
        .await
        .unwrap()
        .is_none());
}
both!(an_operation_a_stopped_process_left_half_done_is_finished_by_the_next_none_twice);

async fn a_recover_with_bad_input_is_refused_naming_the_field(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "shop"})).await;
    let now = Utc::now();
    let ago = |minutes: i64| (now - chrono::Duration::minutes(minutes)).to_rfc3339();
    let ahead = (now + chrono::Duration::hours(1)).to_rfc3339();
    let cases = [
        (json!({}), "since"),
        (json!({"since": "yesterday"}), "since"),
        (json!({"since": 5}), "since"),
        (json!({"since": ahead}), "since"),
        (json!({"since": ago(10), "until": ago(20)}), "until"),
        (json!({"since": ago(10), "until": ahead}), "until"),
        (json!({"since": ago(10), "until": "soon"}), "until"),
    ];
    for (body, field) in cases {
        let (status, answer) = app.post("/v1/endpoints/shop/recover", body.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {answer}");
        assert_eq!(answer["error"]["field"], json!(field), "{body}: {answer}");
    }
    let (status, answer) = app
        .post(
            "/v1/endpoints/shop/recover",
            json!({"since": ago(10), "from": "x"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    let none = backend.count("SELECT count(*) FROM operations").await;
    assert_eq!(none, 0, "nothing refused was stored");

    let good = json!({"since": ago(10)});
    let (status, answer) = app.post("/v1/endpoints/nope/recover", good.clone()).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    assert_eq!(answer["error"]["code"], json!("not_found"));
    app.endpoint(json!({"uid": "gone"})).await;
    let (status, _) = app.call(Method::DELETE, "/v1/endpoints/gone", None).await;
    assert!(status.is_success());
    let (status, answer) = app.post("/v1/endpoints/gone/recover", good.clone()).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    for unknown in [Uuid::now_v7().to_string(), "nope".to_string()] {
        let (status, answer) = app.get(&format!("/v1/operations/{unknown}")).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
        assert_eq!(answer["error"]["code"], json!("not_found"), "{answer}");
    }
    // A pull endpoint is recovered too: its consumers take what restarts.
    let (status, answer) = app
        .post(
            "/v1/endpoints",
            json!({"uid": "pulled", "delivery": "pull"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let (status, answer) = app.post("/v1/endpoints/pulled/recover", good).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
}
both!(a_recover_with_bad_input_is_refused_naming_the_field);

const READ_TOKEN: &str = "read-token-recover-0123456789";
const WRITE_TOKEN: &str = "write-token-recover-0123456789";

async fn recover_needs_write_and_reading_an_operation_needs_read(backend: Backend) {
    let app = backend
        .spawn_with(&format!(
            "[api]\ntokens = [\"{TOKEN}\", \
             {{ name = \"dashboard\", token = \"{READ_TOKEN}\", scopes = [\"read\"] }}, \
             {{ name = \"ops\", token = \"{WRITE_TOKEN}\", scopes = [\"write\"] }}]\n"
        ))
        .await;
    app.endpoint(json!({"uid": "shop"})).await;
    let client = crate::helpers::http_client();
    let url = format!("{}/v1/endpoints/shop/recover", app.base);
    let since = (Utc::now() - chrono::Duration::minutes(5)).to_rfc3339();
    let send = |token: &'static str| {
        client
            .post(&url)
            .bearer_auth(token)
            .json(&json!({"since": since}))
            .send()
    };
    let refused = send(READ_TOKEN).await.unwrap();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], json!("forbidden"), "{body}");
    let accepted = send(WRITE_TOKEN).await.unwrap();
    assert_eq!(accepted.status(), StatusCode::ACCEPTED);
    let operation: Value = accepted.json().await.unwrap();
    let read = client
        .get(format!(
            "{}/v1/operations/{}",
            app.base,
            operation["id"].as_str().unwrap()
        ))
        .bearer_auth(READ_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), StatusCode::OK);
}
both!(recover_needs_write_and_reading_an_operation_needs_read);
