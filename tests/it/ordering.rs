//! Ordered delivery per key (docs/design.md §17): on an endpoint with
//! `"ordering": "key"`, the notifications of one `order_key` are attempted
//! one at a time in creation order, each with `webhook-sequence`, across
//! processes; a notification without a key beside them is not held;
//! `hold` keeps a failed head's successors waiting; a retried notification
//! goes back in line; a pull consumer is offered only each key's head; and
//! turning ordering off releases every one waiting. On each backend.
//! `ordering_inputs` has the other paths into a key's line,
//! `ordering_races` the races and crashes on PostgreSQL, and
//! `ordering_retention` a key's end of life; they share the helpers here.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::helpers::{eventually, TestApp};
use crate::pull::{pull, pull_endpoint};
use crate::rate_limit::instances;
use crate::receiver::{Received, Receiver, Reply};

pub(crate) const DEADLINE: Duration = Duration::from_secs(30);
const RETRIES: &str = r#"["0s", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms"]"#;

fn retries() -> Value {
    serde_json::from_str(RETRIES).unwrap()
}

pub(crate) async fn read(app: &TestApp, id: &str) -> Value {
    let (status, read) = app.get(&format!("/v1/notifications/{id}")).await;
    assert_eq!(status, StatusCode::OK, "{read}");
    read
}

pub(crate) async fn wait_status(app: &TestApp, id: &str, status: &str) -> Value {
    eventually(DEADLINE, &format!("{id} {status}"), || async {
        let read = read(app, id).await;
        (read["status"] == status).then_some(read)
    })
    .await
}

/// The `webhook-sequence` of each request, in arrival order.
pub(crate) fn sequences(got: &[Received]) -> Vec<i64> {
    got.iter()
        .map(|r| {
            r.header("webhook-sequence")
                .expect("sequenced")
                .parse()
                .unwrap()
        })
        .collect()
}

pub(crate) async fn notify_keyed(
    app: &TestApp,
    endpoint: &str,
    key: &str,
    n: usize,
) -> Vec<String> {
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

/// Each taken with its key and its place in it, as a push delivery's
/// `webhook-sequence`, so a consumer sees a gap as a receiver does.
async fn a_pull_consumer_is_offered_only_each_keys_head_with_its_key_and_sequence(
    backend: Backend,
) {
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
    assert_eq!(
        (&head["order_key"], &head["sequence"]),
        (&json!("a"), &json!(1)),
        "{head}"
    );
    let other = taken.iter().find(|t| t["id"] == json!(b[0])).unwrap();
    assert_eq!(
        (&other["order_key"], &other["sequence"]),
        (&json!("b"), &json!(1)),
        "{other}"
    );
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
    assert_eq!(next[0]["order_key"], json!("a"));
    assert_eq!(next[0]["sequence"], json!(2));
}
both!(a_pull_consumer_is_offered_only_each_keys_head_with_its_key_and_sequence);

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
