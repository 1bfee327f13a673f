use super::*;

#[test]
fn an_input_never_prints_header_values() {
    let input: EventInput = serde_json::from_value(serde_json::json!({
        "event_type": "order.paid", "payload": {}, "headers": {"Authorization": "Bearer hunter2"},
    }))
    .unwrap();
    let shown = format!("{input:?}");
    assert!(shown.contains("Authorization"), "{shown}");
    assert!(!shown.contains("hunter2"), "{shown}");
}
