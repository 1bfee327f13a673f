//! Payload filters (docs/design.md §19) end to end, on each backend: an
//! event fans out only to the endpoints whose filter its payload
//! satisfies; a filter is checked when written, shown as written, changed
//! and removed; hostile filters are refused in the API's error shape.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::helpers::{eventually, TestApp};
use crate::receiver::Receiver;

/// Posts an event; the number of deliveries it made.
async fn deliveries(app: &TestApp, event: Value) -> i64 {
    let (status, created) = app.post("/v1/events", event).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    created["deliveries"].as_i64().unwrap()
}

/// The endpoints (uids) an event reached, sorted.
async fn reached(app: &TestApp, owner: &str, payload: Value) -> Vec<String> {
    let (status, created) = app
        .post(
            "/v1/events",
            json!({"event_type": "order.paid", "owner": owner, "payload": payload, "delay": "1h"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let (_, listed) = app
        .get(&format!(
            "/v1/notifications?event={}&limit=100",
            created["id"].as_str().unwrap()
        ))
        .await;
    let (_, endpoints) = app.get(&format!("/v1/endpoints?owner={owner}")).await;
    let uid_of = |id: &Value| {
        endpoints["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == *id)
            .map_or("?".to_string(), |e| e["uid"].as_str().unwrap().to_string())
    };
    let mut uids: Vec<String> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| uid_of(&n["endpoint_id"]))
        .collect();
    uids.sort();
    uids
}

async fn an_event_reaches_only_the_endpoints_whose_filter_its_payload_satisfies(backend: Backend) {
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    for (uid, filter) in [
        (
            "big-cny",
            json!({"amount": {"$gte": 100}, "currency": "CNY"}),
        ),
        (
            "gold",
            json!({"customer.tier": {"$in": ["gold", "platinum"]}}),
        ),
        (
            "rush-or-refund",
            json!({"$or": [{"rush": true}, {"refund": {"$exists": true}}]}),
        ),
        ("not-test", json!({"mode": {"$ne": "test"}})),
        ("everything", Value::Null),
    ] {
        app.endpoint(json!({"uid": uid, "owner": "shop", "url": receiver.url(&format!("/{uid}")), "filter": filter}))
            .await;
    }

    assert_eq!(
        reached(
            &app,
            "shop",
            json!({"amount": 150, "currency": "CNY", "mode": "test"})
        )
        .await,
        ["big-cny", "everything"]
    );
    assert_eq!(
        reached(
            &app,
            "shop",
            json!({"amount": 99.5, "currency": "CNY", "customer": {"tier": "gold"}})
        )
        .await,
        ["everything", "gold", "not-test"]
    );
    assert_eq!(
        reached(&app, "shop", json!({"refund": null, "mode": "live"})).await,
        ["everything", "not-test", "rush-or-refund"]
    );
    // A text body has no JSON for a filter to read: only the unfiltered
    // endpoint takes it.
    let (status, text) = app
        .post(
            "/v1/events",
            json!({"event_type": "order.paid", "owner": "shop", "body": "amount=150&currency=CNY", "delay": "1h"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{text}");
    assert_eq!(text["deliveries"], json!(1));

    // And what is sent is the payload as given, signed, to the matching
    // receivers only.
    let sent = deliveries(
        &app,
        json!({"event_type": "order.paid", "owner": "shop", "payload": {"amount": 100, "currency": "CNY", "mode": "test"}}),
    )
    .await;
    assert_eq!(sent, 2);
    eventually(Duration::from_secs(20), "both deliveries", || async {
        (receiver.received("/big-cny").len() == 1 && receiver.received("/everything").len() == 1)
            .then_some(())
    })
    .await;
    let got = &receiver.received("/big-cny")[0];
    assert_eq!(
        &got.body[..],
        br#"{"amount":100,"currency":"CNY","mode":"test"}"#.as_slice()
    );
    assert!(receiver.received("/not-test").is_empty());
    assert!(receiver.received("/gold").is_empty());
}
both!(an_event_reaches_only_the_endpoints_whose_filter_its_payload_satisfies);

async fn a_filter_is_shown_changed_and_removed_and_the_next_event_follows_it(backend: Backend) {
    let app = backend.spawn().await;
    let filter = json!({"amount": {"$gt": 10, "$lte": 500}, "currency": "CNY"});
    let created = app
        .endpoint(json!({"uid": "f", "owner": "o", "filter": filter}))
        .await;
    assert_eq!(created["filter"], filter);
    let (_, read) = app.get("/v1/endpoints/f").await;
    assert_eq!(read["filter"], filter);
    let (_, listed) = app.get("/v1/endpoints?owner=o").await;
    assert_eq!(listed["data"][0]["filter"], filter);
    assert_eq!(
        reached(&app, "o", json!({"amount": 5, "currency": "CNY"}))
            .await
            .len(),
        0
    );

    let wider = json!({"amount": {"$gte": 0}});
    let (status, patched) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/f",
            Some(json!({"filter": wider})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{patched}");
    assert_eq!(patched["filter"], wider);
    assert_eq!(
        reached(&app, "o", json!({"amount": 5, "currency": "CNY"})).await,
        ["f"]
    );
    assert_eq!(reached(&app, "o", json!({"amount": "5"})).await.len(), 0);

    // A PATCH without `filter` leaves it; `null` removes it.
    let (_, kept) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/f",
            Some(json!({"description": "orders"})),
        )
        .await;
    assert_eq!(kept["filter"], wider);
    let (_, removed) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/f",
            Some(json!({"filter": null})),
        )
        .await;
    assert_eq!(removed["filter"], Value::Null);
    assert_eq!(reached(&app, "o", json!({"amount": "5"})).await, ["f"]);
}
both!(a_filter_is_shown_changed_and_removed_and_the_next_event_follows_it);

async fn an_event_naming_its_endpoints_and_a_batch_of_events_each_honour_the_filters(
    backend: Backend,
) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "cny", "owner": "b", "filter": {"currency": "CNY"}}))
        .await;
    app.endpoint(json!({"uid": "usd", "owner": "b", "filter": {"currency": "USD"}}))
        .await;
    let named = deliveries(
        &app,
        json!({"event_type": "order.paid", "owner": "b", "payload": {"currency": "USD"}, "delay": "1h", "endpoints": ["cny", "usd"]}),
    )
    .await;
    assert_eq!(named, 1, "cny is named, but its filter refuses the event");

    let events: Vec<Value> = ["CNY", "USD", "EUR", "CNY"]
        .iter()
        .map(|c| json!({"event_type": "order.paid", "owner": "b", "payload": {"currency": c}, "delay": "1h"}))
        .collect();
    let (status, batch) = app
        .post("/v1/events/batch", json!({ "events": events }))
        .await;
    assert_eq!(status, StatusCode::OK, "{batch}");
    let counts: Vec<Value> = batch["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["event"]["deliveries"].clone())
        .collect();
    assert_eq!(counts, [json!(1), json!(1), json!(0), json!(1)]);
}
both!(an_event_naming_its_endpoints_and_a_batch_of_events_each_honour_the_filters);

async fn bad_filters_are_refused_naming_the_path_and_the_operator_and_nothing_is_written(
    backend: Backend,
) {
    let app = backend.spawn().await;
    let cases = [
        (json!("currency=CNY"), "filter"),
        (json!({}), "filter"),
        (
            json!({"amount": {"$gte": "a", "$regex": ".*"}}),
            "filter.amount.$regex",
        ),
        (json!({"amount": {"$gte": [1]}}), "filter.amount.$gte"),
        (json!({"$where": "this.amount > 1"}), "filter.$where"),
        (
            json!({"$or": [{"a": 1}, {"b": {"$in": "x"}}]}),
            "filter.$or[1].b.$in",
        ),
        (json!({"customer": {"tier": "gold"}}), "filter.customer"),
    ];
    for (filter, field) in cases {
        let (status, refused) = app
            .post(
                "/v1/endpoints",
                json!({"uid": "bad", "url": "http://127.0.0.1:9/", "filter": filter}),
            )
            .await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{filter}: {refused}"
        );
        assert_eq!(
            refused["error"]["code"],
            json!("invalid_filter"),
            "{filter}"
        );
        assert_eq!(refused["error"]["field"], json!(field), "{filter}");
    }
    let (status, _) = app.get("/v1/endpoints/bad").await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "no refused create was stored"
    );

    // A refused PATCH leaves the filter as it was.
    let kept = json!({"currency": "CNY"});
    app.endpoint(json!({"uid": "good", "filter": kept})).await;
    let (status, _) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/good",
            Some(json!({"filter": {"currency": {"$in": []}}, "description": "changed"})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (_, read) = app.get("/v1/endpoints/good").await;
    assert_eq!(read["filter"], kept);
    assert_eq!(read["description"], json!(""));

    // A key named twice in one object would keep only its last condition
    // (the first `amount` bound dropped, letting 5 through): refused, at any
    // depth, on a create and on a change.
    for filter in [
        r#"{"amount": {"$gte": 10000}, "amount": {"$lt": 50000}}"#,
        r#"{"amount": {"$gt": 1, "$gt": 5}}"#,
        r#"{"$or": [{"a": 1}], "$or": [{"b": 2}]}"#,
        r#"{"$and": [{"x": {"$in": [1], "$in": [2]}}]}"#,
    ] {
        for (method, path, body) in [
            (
                Method::POST,
                "/v1/endpoints",
                format!(r#"{{"uid": "twice", "url": "http://127.0.0.1:9/", "filter": {filter}}}"#),
            ),
            (
                Method::PATCH,
                "/v1/endpoints/good",
                format!(r#"{{"filter": {filter}}}"#),
            ),
        ] {
            let (status, refused) = app.call_raw(method, path, body).await;
            assert_eq!(
                status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{filter}: {refused}"
            );
            assert_eq!(
                refused["error"]["code"],
                json!("invalid_filter"),
                "{filter}"
            );
            assert_eq!(refused["error"]["field"], json!("filter"), "{filter}");
        }
    }
    let (_, read) = app.get("/v1/endpoints/good").await;
    assert_eq!(read["filter"], kept);
}
both!(bad_filters_are_refused_naming_the_path_and_the_operator_and_nothing_is_written);

async fn hostile_filters_are_bounded_and_answered_in_the_error_shape(backend: Backend) {
    let app = backend.spawn().await;
    // Too many conditions, each small.
    let many: serde_json::Map<String, Value> =
        (0..65).map(|i| (format!("f{i}"), json!(i))).collect();
    // Too deep: `$or` five levels down.
    let mut deep = json!({"a": 1});
    for _ in 0..5 {
        deep = json!({"$or": [deep]});
    }
    // Too large: one condition of 5,000 bytes.
    let large = json!({"note": "x".repeat(5000)});
    // Too many values in one `$in`.
    let wide = json!({"id": {"$in": (0..101).collect::<Vec<_>>()}});
    for (filter, says) in [
        (Value::Object(many), "64 conditions"),
        (deep, "nest at most 4"),
        (large, "4096 bytes"),
        (wide, "1 to 100 values"),
    ] {
        let (status, refused) = app
            .post(
                "/v1/endpoints",
                json!({"url": "http://127.0.0.1:9/", "filter": filter}),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
        assert_eq!(refused["error"]["code"], json!("invalid_filter"));
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{message}");
    }
    // JSON nested past what the parser takes is refused before a filter
    // is looked at, and hookd goes on answering.
    let nested = format!(
        "{{\"url\": \"http://127.0.0.1:9/\", \"filter\": {}1{}}}",
        "{\"a\": ".repeat(300),
        "}".repeat(300)
    );
    let (status, refused) = app.call_raw(Method::POST, "/v1/endpoints", nested).await;
    assert_eq!(status.as_u16() / 100, 4, "{refused}");
    assert!(refused["error"]["code"].is_string(), "{refused}");
    let (status, _) = app.get("/v1/endpoints").await;
    assert_eq!(status, StatusCode::OK);
}
both!(hostile_filters_are_bounded_and_answered_in_the_error_shape);

/// An event's JSON payload nests at most 100 levels deep (as a
/// notification's: `api_bad_input`), which a filter reads whole: one that
/// deep reaches the filtered endpoint its payload satisfies; one a level
/// deeper is refused, naming the payload, where one past a filter's
/// reading once fanned out to no filtered endpoint without a word.
async fn an_event_whose_payload_nests_deeper_than_a_filter_reads_is_refused(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "deep", "owner": "m-deep", "filter": {"type": "paid"}}))
        .await;
    let event = |lists: usize| {
        format!(
            "{{\"event_type\": \"order.paid\", \"owner\": \"m-deep\", \"delay\": \"1h\", \
             \"payload\": {{\"type\": \"paid\", \"meta\": {}{}}}}}",
            "[".repeat(lists),
            "]".repeat(lists)
        )
    };
    // The payload's object and 99 lists: 100 levels.
    let (status, created) = app.call_raw(Method::POST, "/v1/events", event(99)).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["deliveries"], 1, "{created}");
    let (status, refused) = app.call_raw(Method::POST, "/v1/events", event(100)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["code"], "invalid_value");
    assert_eq!(refused["error"]["field"], "payload");
}

both!(an_event_whose_payload_nests_deeper_than_a_filter_reads_is_refused);

/// A filter reads a key named twice in one object as its last value, and a
/// receiver's parser may read its first: an event whose JSON does that is
/// refused, naming the key. A notification's payload is no filter's to
/// read, and goes out as the bytes given.
async fn an_event_whose_payload_names_a_key_twice_in_one_object_is_refused(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "refunds", "owner": "m-dup", "filter": {"type": "refund"}}))
        .await;
    let event = |payload: &str| {
        format!(
            "{{\"event_type\": \"order.paid\", \"owner\": \"m-dup\", \"delay\": \"1h\", \"payload\": {payload}}}"
        )
    };
    let twice = r#"{"order": {"type": "refund", "amount": 1, "type": "paid"}}"#;
    let (status, refused) = app.call_raw(Method::POST, "/v1/events", event(twice)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["code"], "invalid_value");
    assert_eq!(refused["error"]["field"], "payload");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("\"type\""), "{message}");
    // In a batch, the item is refused and the others stored.
    let (status, batch) = app
        .call_raw(
            Method::POST,
            "/v1/events/batch",
            format!("{{\"events\": [{}, {}]}}", event(twice), event("{}")),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{batch}");
    assert_eq!(batch["data"][0]["status"], 422, "{batch}");
    assert_eq!(batch["data"][0]["error"]["field"], "payload", "{batch}");
    assert_eq!(batch["data"][1]["status"], 201, "{batch}");

    // One key in two objects is two keys.
    let apart = r#"{"type": "refund", "lines": [{"type": "a"}, {"type": "b"}]}"#;
    let (status, created) = app.call_raw(Method::POST, "/v1/events", event(apart)).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["deliveries"], 1, "{created}");

    let (status, created) = app
        .call_raw(
            Method::POST,
            "/v1/notifications",
            format!("{{\"endpoint\": \"refunds\", \"delay\": \"1h\", \"payload\": {twice}}}"),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
}
both!(an_event_whose_payload_names_a_key_twice_in_one_object_is_refused);

/// A payload may parse as JSON and still hold a value a filter cannot
/// read: a number beyond a 64-bit float's range, an escape of half a
/// surrogate pair. Such an event once fanned out to no filtered endpoint,
/// `$exists` ones included, however unrelated the value, without a word;
/// it is refused now, naming the payload and the value. An integer past
/// 64 bits reads as the nearest float and is stored.
async fn an_event_whose_payload_holds_a_value_filters_cannot_read_is_refused(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "has-a", "owner": "m-odd", "filter": {"a": {"$exists": true}}}))
        .await;
    app.endpoint(json!({"uid": "any", "owner": "m-odd"})).await;
    let event = |payload: &str| {
        format!(
            "{{\"event_type\": \"t\", \"owner\": \"m-odd\", \"delay\": \"1h\", \"payload\": {payload}}}"
        )
    };
    for (odd, says) in [
        (r#"{"a": 1, "z": 1e309}"#, "number out of range"),
        (r#"{"a": 1, "z": [-1e400]}"#, "number out of range"),
        (r#"{"a": 1, "z": "\ud800"}"#, "surrogate"),
    ] {
        let (status, refused) = app.call_raw(Method::POST, "/v1/events", event(odd)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{odd}: {refused}");
        assert_eq!(refused["error"]["code"], "invalid_value");
        assert_eq!(refused["error"]["field"], "payload");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{message}");
    }
    let (_, listed) = app.get("/v1/events?owner=m-odd").await;
    assert_eq!(listed["data"], json!([]), "nothing stored");

    let wide = r#"{"a": 1, "z": 123456789012345678901234567890}"#;
    let (status, created) = app.call_raw(Method::POST, "/v1/events", event(wide)).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["deliveries"], 2, "{created}");
}
both!(an_event_whose_payload_holds_a_value_filters_cannot_read_is_refused);
