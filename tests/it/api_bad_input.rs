//! Every malformed request a real client sends gets the error shape with the
//! right status, code and field. Nothing panics, nothing answers 500.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backends::Backend;

struct Case {
    name: &'static str,
    method: Method,
    path: &'static str,
    body: Option<&'static str>,
    status: StatusCode,
    code: &'static str,
    field: Option<&'static str>,
}

fn case(
    name: &'static str,
    method: Method,
    path: &'static str,
    body: Option<&'static str>,
    status: u16,
    code: &'static str,
    field: Option<&'static str>,
) -> Case {
    Case {
        name,
        method,
        path,
        body,
        status: StatusCode::from_u16(status).unwrap(),
        code,
        field,
    }
}

async fn each_bad_request_gets_a_clear_error_in_the_api_shape(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "shop", "event_types": ["order.paid"]}))
        .await;
    use Method as M;
    let long_key: &'static str =
        Box::leak(format!("{{\"key\": \"{}\"}}", "k".repeat(256)).into_boxed_str());
    let cases = [
        case("malformed json", M::POST, "/v1/endpoints", Some("{\"url\": "), 400, "malformed_json", None),
        case("trailing garbage", M::POST, "/v1/endpoints", Some("{\"url\": \"https://a.example\"} x"), 400, "malformed_json", None),
        case("empty body", M::POST, "/v1/endpoints", Some(""), 400, "malformed_json", None),
        // An optional body: JSON's whitespace is no body, a form feed is no JSON.
        case("form feed as an optional body", M::POST, "/v1/endpoints/shop/secret/rotate", Some("\x0c"), 400, "malformed_json", None),
        case("json array instead of object", M::POST, "/v1/endpoints", Some("[1]"), 422, "invalid_type", None),
        case("missing url", M::POST, "/v1/endpoints", Some("{}"), 422, "missing_field", Some("url")),
        case("url of the wrong type", M::POST, "/v1/endpoints", Some("{\"url\": 5}"), 422, "invalid_type", Some("url")),
        case("unknown field", M::POST, "/v1/endpoints", Some("{\"url\": \"https://a.example\", \"urll\": 1}"), 422, "unknown_field", Some("urll")),
        case("ftp url", M::POST, "/v1/endpoints", Some("{\"url\": \"ftp://a.example/x\"}"), 422, "invalid_url", Some("url")),
        case("url without host", M::POST, "/v1/endpoints", Some("{\"url\": \"http://\"}"), 422, "invalid_url", Some("url")),
        case("not a url", M::POST, "/v1/endpoints", Some("{\"url\": \"example.com/hook\"}"), 422, "invalid_url", Some("url")),
        case("unknown preset", M::POST, "/v1/endpoints", Some("{\"url\": \"https://a.example\", \"schedule\": \"fast\"}"), 422, "invalid_schedule", Some("schedule")),
        case("bad duration", M::POST, "/v1/endpoints", Some("{\"url\": \"https://a.example\", \"schedule\": [\"1s\", \"2 fortnights\"]}"), 422, "invalid_schedule", Some("schedule")),
        case("empty schedule", M::POST, "/v1/endpoints", Some("{\"url\": \"https://a.example\", \"schedule\": []}"), 422, "invalid_schedule", Some("schedule")),
        case("bad secret", M::POST, "/v1/endpoints", Some("{\"url\": \"https://a.example\", \"secret\": \"hunter2\"}"), 422, "invalid_secret", Some("secret")),
        case("2xx as permanent status", M::POST, "/v1/endpoints", Some("{\"url\": \"https://a.example\", \"permanent_statuses\": [200]}"), 422, "invalid_value", Some("permanent_statuses")),
        case("negative timeout", M::POST, "/v1/endpoints", Some("{\"url\": \"https://a.example\", \"timeout_ms\": -1}"), 422, "invalid_type", Some("timeout_ms")),
        case("number out of range in a filter", M::POST, "/v1/endpoints", Some("{\"url\": \"https://a.example\", \"filter\": {\"a\": {\"$gt\": 1e999}}}"), 422, "invalid_value", Some("filter.a.$gt")),
        case("timeout beyond the lease", M::POST, "/v1/endpoints", Some("{\"url\": \"https://a.example\", \"timeout_ms\": 3600000}"), 422, "invalid_value", Some("timeout_ms")),
        case("reserved header", M::POST, "/v1/endpoints", Some("{\"url\": \"https://a.example\", \"headers\": {\"webhook-signature\": \"x\"}}"), 422, "invalid_header", Some("headers.webhook-signature")),
        case("uid that is a uuid", M::POST, "/v1/endpoints", Some("{\"url\": \"https://a.example\", \"uid\": \"0193a5f2-7c1e-7b3a-9c4d-1e2f3a4b5c6d\"}"), 422, "invalid_value", Some("uid")),
        // `.` and `..` are path segments every client's URL handling removes.
        case("uid of dots alone", M::POST, "/v1/endpoints", Some("{\"url\": \"https://a.example\", \"uid\": \"..\"}"), 422, "invalid_value", Some("uid")),
        case("owner of dots alone", M::POST, "/v1/endpoints", Some("{\"url\": \"https://a.example\", \"owner\": \".\"}"), 422, "invalid_value", Some("owner")),
        case("patch unknown endpoint", M::PATCH, "/v1/endpoints/nobody", Some("{\"description\": \"x\"}"), 404, "not_found", None),
        case("patch url to null", M::PATCH, "/v1/endpoints/shop", Some("{\"url\": null}"), 422, "invalid_value", Some("url")),
        case("unknown endpoint", M::POST, "/v1/notifications", Some("{\"endpoint\": \"nowhere\", \"payload\": {}}"), 422, "unknown_endpoint", Some("endpoint")),
        case("payload and body", M::POST, "/v1/notifications", Some("{\"endpoint\": \"shop\", \"payload\": {}, \"body\": \"x\"}"), 422, "conflicting_fields", Some("body")),
        case("neither payload nor body", M::POST, "/v1/notifications", Some("{\"endpoint\": \"shop\"}"), 422, "missing_field", Some("payload")),
        case("body of the wrong type", M::POST, "/v1/notifications", Some("{\"endpoint\": \"shop\", \"body\": {\"a\": 1}}"), 422, "invalid_type", Some("body")),
        case("delay and deliver_at", M::POST, "/v1/notifications", Some("{\"endpoint\": \"shop\", \"payload\": {}, \"delay\": \"1s\", \"deliver_at\": \"2030-01-01T00:00:00Z\"}"), 422, "conflicting_fields", Some("delay")),
        case("deliver_at not a time", M::POST, "/v1/notifications", Some("{\"endpoint\": \"shop\", \"payload\": {}, \"deliver_at\": \"tomorrow\"}"), 422, "invalid_value", Some("deliver_at")),
        case("deliver_at too far", M::POST, "/v1/notifications", Some("{\"endpoint\": \"shop\", \"payload\": {}, \"deliver_at\": \"2999-01-01T00:00:00Z\"}"), 422, "invalid_value", Some("deliver_at")),
        case("bad delay", M::POST, "/v1/notifications", Some("{\"endpoint\": \"shop\", \"payload\": {}, \"delay\": \"later\"}"), 422, "invalid_value", Some("delay")),
        case("unsubscribed event type", M::POST, "/v1/notifications", Some("{\"endpoint\": \"shop\", \"payload\": {}, \"event_type\": \"order.refunded\"}"), 422, "event_type_not_subscribed", Some("event_type")),
        case("bad content type", M::POST, "/v1/notifications", Some("{\"endpoint\": \"shop\", \"body\": \"x\", \"content_type\": \"json\"}"), 422, "invalid_value", Some("content_type")),
        case("empty key", M::POST, "/v1/notifications", Some("{\"endpoint\": \"shop\", \"payload\": {}, \"key\": \"\"}"), 422, "invalid_value", Some("key")),
        case("nested schedule error", M::POST, "/v1/notifications", Some("{\"endpoint\": \"shop\", \"payload\": {}, \"schedule\": [1, 2]}"), 422, "invalid_schedule", Some("schedule")),
        case("empty batch", M::POST, "/v1/notifications/batch", Some("{\"notifications\": []}"), 422, "invalid_value", Some("notifications")),
        case("batch not an array", M::POST, "/v1/notifications/batch", Some("{\"notifications\": {}}"), 422, "invalid_type", Some("notifications")),
        case("cancel by key without key", M::POST, "/v1/notifications/cancel", Some("{}"), 422, "missing_field", Some("key")),
        case("cancel by key with a key too long to exist", M::POST, "/v1/notifications/cancel", Some(long_key), 422, "invalid_value", Some("key")),
        case("bad cursor", M::GET, "/v1/notifications?cursor=garbage", None, 400, "invalid_cursor", Some("cursor")),
        case("limit not a number", M::GET, "/v1/notifications?limit=ten", None, 400, "invalid_query", Some("limit")),
        case("limit too large", M::GET, "/v1/notifications?limit=501", None, 422, "invalid_value", Some("limit")),
        case("limit zero", M::GET, "/v1/endpoints?limit=0", None, 422, "invalid_value", Some("limit")),
        case("unknown status", M::GET, "/v1/notifications?status=done", None, 422, "invalid_value", Some("status")),
        case("notification id not a uuid", M::GET, "/v1/notifications/123", None, 404, "not_found", None),
        case("unknown route", M::GET, "/v1/nothing", None, 404, "not_found", None),
        case("nul byte in an endpoint name", M::POST, "/v1/notifications", Some("{\"endpoint\": \"shop\\u0000\", \"payload\": {}}"), 422, "unknown_endpoint", Some("endpoint")),
        case("nul byte in a description", M::POST, "/v1/endpoints", Some("{\"url\": \"https://a.example\", \"description\": \"a\\u0000\"}"), 422, "invalid_value", Some("description")),
        case("nul byte in a key filter", M::GET, "/v1/notifications?key=%00", None, 422, "invalid_value", Some("key")),
        case("nul byte in an event type filter", M::GET, "/v1/notifications?event_type=a%00", None, 422, "invalid_value", Some("event_type")),
        case("nul byte in an event list's owner filter", M::GET, "/v1/events?owner=a%00", None, 422, "invalid_value", Some("owner")),
        case("nul byte in an event list's key filter", M::GET, "/v1/events?key=%00", None, 422, "invalid_value", Some("key")),
        case("nul byte in an event list's type filter", M::GET, "/v1/events?event_type=%00", None, 422, "invalid_value", Some("event_type")),
        case("nul byte in an endpoint list's owner filter", M::GET, "/v1/endpoints?owner=%00", None, 422, "invalid_value", Some("owner")),
        case("an endpoint filter that is no id or uid", M::GET, "/v1/notifications?endpoint=a%20b", None, 422, "invalid_value", Some("endpoint")),
        case("the same, listing the most attempted", M::GET, "/v1/notifications?order=attempts&endpoint=%C3%A9", None, 422, "invalid_value", Some("endpoint")),
        case("a window the overview has not", M::GET, "/v1/stats?window=1d", None, 422, "invalid_value", Some("window")),
        case("an order the list has not", M::GET, "/v1/notifications?order=random", None, 422, "invalid_value", Some("order")),
        case("nul byte in a path uid", M::GET, "/v1/endpoints/a%00b", None, 404, "not_found", None),
        case("wrong method", M::PUT, "/v1/notifications", Some("{}"), 405, "method_not_allowed", None),
        case("a name given as a number", M::POST, "/v1/endpoints", Some("{\"url\": \"https://a.example\", \"signing\": 5}"), 422, "invalid_type", Some("signing")),
        case("a name given as a list", M::PATCH, "/v1/endpoints/shop", Some("{\"ordering\": []}"), 422, "invalid_type", Some("ordering")),
        case("two headers one name but for case", M::POST, "/v1/endpoints", Some("{\"url\": \"https://a.example\", \"headers\": {\"X-A\": \"1\", \"x-a\": \"2\"}}"), 422, "invalid_header", Some("headers.x-a")),
        case("a query value that is not utf-8", M::GET, "/v1/notifications?key=%FF-lossy", None, 400, "invalid_query", None),
        // A misspelt filter would otherwise list everything.
        case("a list filter misspelt", M::GET, "/v1/notifications?stauts=failed", None, 422, "unknown_field", Some("stauts")),
        case("a filter the event list has not", M::GET, "/v1/events?endpoint=shop", None, 422, "unknown_field", Some("endpoint")),
        case("a filter given twice", M::GET, "/v1/endpoints?owner=a&owner=b", None, 422, "invalid_value", Some("owner")),
        case("a created window that ends before it starts", M::GET, "/v1/notifications?created_after=2026-11-30T10:00:00Z&created_before=2026-11-30T09:00:00Z", None, 422, "invalid_value", Some("created_before")),
        case("the same on the event list", M::GET, "/v1/events?created_after=2026-11-30T10:00:00Z&created_before=2026-11-30T10:00:00Z", None, 422, "invalid_value", Some("created_before")),
        case("a filter on a notification's attempts", M::GET, "/v1/notifications/00000000-0000-0000-0000-000000000000/attempts?status=failed", None, 422, "unknown_field", Some("status")),
        // A route that takes no body refuses one rather than ignore it.
        case("a retry with a malformed body", M::POST, "/v1/notifications/00000000-0000-0000-0000-000000000000/retry", Some("{\"force"), 400, "malformed_json", None),
        case("a cancel with a field it has not", M::POST, "/v1/notifications/00000000-0000-0000-0000-000000000000/cancel", Some("{\"reason\": \"fraud\"}"), 422, "unknown_field", Some("reason")),
        case("an event's cancel with a list", M::POST, "/v1/events/00000000-0000-0000-0000-000000000000/cancel", Some("[1]"), 422, "invalid_type", None),
        case("a portal revoke with a field it has not", M::POST, "/v1/endpoints/shop/portal/revoke", Some("{\"dry_run\": true}"), 422, "unknown_field", Some("dry_run")),
        case("an owner's portal revoke with text", M::POST, "/v1/owners/m-1/portal/revoke", Some("now"), 400, "malformed_json", None),
    ];
    for case in cases {
        let (status, body) = match case.body {
            Some(body) => app.call_raw(case.method.clone(), case.path, body).await,
            None => app.call(case.method.clone(), case.path, None).await,
        };
        assert_eq!(status, case.status, "{}: {body}", case.name);
        assert_eq!(
            body["error"]["code"],
            json!(case.code),
            "{}: {body}",
            case.name
        );
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{}",
            case.name
        );
        let field = body["error"].get("field").cloned().unwrap_or(Value::Null);
        assert_eq!(field, json!(case.field), "{}: {body}", case.name);
    }
    // A number out of its range is said in a client's words, not Rust's.
    let (status, body) = app
        .call_raw(
            M::POST,
            "/v1/endpoints",
            "{\"url\": \"https://a.example\", \"permanent_statuses\": [99999]}",
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("an integer from 0 to 65535"), "{message}");
    assert!(!message.contains("u16"), "{message}");
}
both!(each_bad_request_gets_a_clear_error_in_the_api_shape);

/// A client that always sends JSON sends `{}` where a route takes no body;
/// one that sends none, or a line feed, is heard the same.
async fn a_route_that_takes_no_body_accepts_none_or_an_empty_object(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "shop", "owner": "m-1"})).await;
    let (_, created) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "shop", "payload": {}, "delay": "1h"}),
        )
        .await;
    let id = created["id"].as_str().unwrap();
    let (_, event) = app
        .post(
            "/v1/events",
            json!({"event_type": "order.paid", "payload": {}, "delay": "1h"}),
        )
        .await;
    let event = event["id"].as_str().unwrap();
    for (path, body) in [
        (format!("/v1/notifications/{id}/retry"), ""),
        (format!("/v1/notifications/{id}/cancel"), "{ }"),
        (format!("/v1/events/{event}/cancel"), "\n"),
        ("/v1/endpoints/shop/portal/revoke".to_owned(), "{}"),
        ("/v1/owners/m-1/portal/revoke".to_owned(), " "),
    ] {
        let (status, answer) = app.call_raw(Method::POST, &path, body).await;
        assert_eq!(status, StatusCode::OK, "{path} {body:?}: {answer}");
    }
}
both!(a_route_that_takes_no_body_accepts_none_or_an_empty_object);

async fn a_body_over_the_payload_limit_is_413_and_a_request_over_the_request_limit_too(
    backend: Backend,
) {
    let app = backend
        .spawn_with("[api]\nmax_payload_bytes = 100\nmax_request_bytes = 1000\n")
        .await;
    app.endpoint(json!({"uid": "shop"})).await;
    let big = "x".repeat(200);
    let (status, body) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "shop", "body": big, "content_type": "text/plain"}),
        )
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["error"]["field"], json!("body"));
    let (status, body) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "shop", "payload": {"data": big}}),
        )
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["error"]["field"], json!("payload"));
    let huge = "y".repeat(2000);
    let (status, body) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "shop", "payload": {"data": huge}}),
        )
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["error"]["code"], json!("too_large"));
    // Routes whose body is optional answer in the same shape.
    for path in [
        "/v1/endpoints/shop/secret/rotate",
        "/v1/endpoints/shop/pull",
    ] {
        let (status, body) = app.call_raw(Method::POST, path, huge.clone()).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{path}: {body}");
        assert_eq!(body["error"]["code"], json!("too_large"), "{path}");
    }
}
both!(a_body_over_the_payload_limit_is_413_and_a_request_over_the_request_limit_too);

async fn a_batch_of_more_than_a_thousand_is_refused(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "shop"})).await;
    let items: Vec<Value> = (0..1001)
        .map(|_| json!({"endpoint": "shop", "payload": {}}))
        .collect();
    let (status, body) = app
        .post("/v1/notifications/batch", json!({"notifications": items}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["field"], json!("notifications[1000]"));
}
both!(a_batch_of_more_than_a_thousand_is_refused);

async fn a_path_that_is_not_utf8_gets_the_json_error_shape(backend: Backend) {
    let app = backend.spawn().await;
    for path in [
        "/v1/notifications/%FF",
        "/v1/endpoints/%C3%28/secret/rotate",
        "/v1/events/%80",
    ] {
        let method = if path.ends_with("rotate") {
            Method::POST
        } else {
            Method::GET
        };
        let (status, body) = app.call(method, path, None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert_eq!(body["error"]["code"], json!("invalid_path"), "{path}");
    }
    // Escapes of UTF-8 still reach their route.
    let (status, body) = app.get("/v1/endpoints/caf%C3%A9").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error"]["code"], json!("not_found"));
}
both!(a_path_that_is_not_utf8_gets_the_json_error_shape);

/// A notification's JSON payload comes back inside hookd's answers (a
/// notification, a page of them, a pull's receipts) and goes to a
/// receiver's parser. One nesting past 100 levels, or holding a value
/// common parsers refuse (a number beyond a 64-bit float's range, half a
/// surrogate pair), is refused, alone or in a batch: hookd once stored
/// them, and then its Rust client could not read them back and a pull that
/// offered one failed the consumer's whole batch. 100 levels come back
/// whole in a page; a key named twice goes out as given.
async fn a_notification_payload_its_readers_could_not_read_back_is_refused(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "shop"})).await;
    let nested = |levels: usize| format!("{}0{}", "[".repeat(levels), "]".repeat(levels));
    let notification = |payload: &str| {
        format!("{{\"endpoint\": \"shop\", \"delay\": \"1h\", \"payload\": {payload}}}")
    };
    for (odd, says) in [
        (r#"{"amount": 1e309}"#.to_string(), "number out of range"),
        (r#"{"memo": "\ud800"}"#.to_string(), "surrogate"),
        (nested(101), "100 levels"),
    ] {
        let (status, refused) = app
            .call_raw(Method::POST, "/v1/notifications", notification(&odd))
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
        assert_eq!(refused["error"]["code"], "invalid_value", "{refused}");
        assert_eq!(refused["error"]["field"], "payload", "{refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{message}");

        let batch = format!(
            "{{\"notifications\": [{}, {}]}}",
            notification("{}"),
            notification(&odd)
        );
        let (_, answered) = app
            .call_raw(Method::POST, "/v1/notifications/batch", batch)
            .await;
        assert_eq!(answered["data"][0]["status"], 201, "{answered}");
        assert_eq!(answered["data"][1]["status"], 422, "{answered}");
        assert_eq!(
            answered["data"][1]["error"]["field"], "payload",
            "{answered}"
        );
    }
    // The same text as a `body` of JSON's type is shown back as a payload.
    let (status, refused) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "shop", "delay": "1h", "content_type": "application/json",
                   "body": r#"{"amount": 1e309}"#}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["field"], "body", "{refused}");
    let (_, listed) = app.get("/v1/notifications?endpoint=shop").await;
    assert_eq!(
        listed["data"].as_array().unwrap().len(),
        3,
        "only the batches' good items were stored: {listed}"
    );

    let mut shown = Vec::new();
    for payload in [nested(100), r#"{"a": 1, "a": 2}"#.to_string()] {
        let (status, created) = app
            .call_raw(Method::POST, "/v1/notifications", notification(&payload))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        let id = created["id"].as_str().unwrap();
        let (status, read) = app.get(&format!("/v1/notifications/{id}")).await;
        assert_eq!(status, StatusCode::OK, "read back whole: {read}");
        shown.push(read["payload"].clone());
    }
    assert!(shown[0].is_array(), "{}", shown[0]);
    assert_eq!(
        shown[1],
        json!({"a": 2}),
        "a key named twice, as JSON reads it"
    );
}
both!(a_notification_payload_its_readers_could_not_read_back_is_refused);
