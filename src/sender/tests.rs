use super::*;

fn headers(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn custom_header_values_never_print() {
    let map = header_map(
        &headers(&[("authorization", "Bearer hunter2")]),
        HeaderMap::new(),
    );
    assert!(!format!("{map:?}").contains("hunter2"));
}

#[test]
fn a_delivery_never_prints_header_values_or_query_tokens() {
    let target = Target::new(
        "https://x.example/hook",
        &headers(&[("authorization", "Bearer hunter2")]),
        Vec::new(),
        Duration::from_secs(1),
    );
    let own = headers(&[("x-token", "hunter2")]);
    let delivery = Delivery {
        id: Uuid::nil(),
        target: &target,
        body: Bytes::new(),
        content_type: "application/json",
        event_type: None,
        attempt: 1,
        headers: &own,
        event_id: None,
        url: Some("https://x.example/hook/n?token=hunter2"),
        sequence: None,
        traceparent: None,
    };
    let shown = format!("{delivery:?}");
    assert!(
        shown.contains("x-token") && shown.contains("token=***"),
        "{shown}"
    );
    assert!(!shown.contains("hunter2"), "{shown}");
}

#[test]
fn a_notification_header_replaces_the_endpoint_header_of_the_same_name_in_any_case() {
    let endpoint = header_map(
        &headers(&[("X-Trace", "endpoint"), ("X-Tenant", "acme")]),
        HeaderMap::new(),
    );
    let merged = header_map(&headers(&[("x-trace", "notification")]), endpoint);
    assert_eq!(merged.get_all("x-trace").iter().count(), 1);
    assert_eq!(merged["x-trace"], "notification");
    assert_eq!(merged["x-tenant"], "acme");
}

#[test]
fn a_header_that_does_not_fit_http_is_skipped_not_sent_broken() {
    let map = header_map(
        &headers(&[("bad name", "x"), ("X-Ok", "fine"), ("X-Bad-Value", "a\nb")]),
        HeaderMap::new(),
    );
    assert_eq!(map.len(), 1);
    assert_eq!(map["x-ok"], "fine");
}
