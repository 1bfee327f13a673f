//! The OpenAPI document's own tests (`openapi.rs`).

use super::*;

#[test]
fn if_none_match_is_read_as_a_list_of_tags_compared_weakly() {
    let fails = |fields: &[&str]| none_match_fails(fields.iter().copied(), "abc");
    assert!(fails(&["\"abc\""]));
    assert!(fails(&["W/\"abc\""]), "weak comparison");
    assert!(fails(&["\"x\", W/\"abc\""]));
    assert!(fails(&["\"x\"", "\"abc\""]), "a second field line");
    assert!(fails(&[" * "]));
    assert!(fails(&["\"a,b\", \"abc\""]), "a comma inside a tag");
    assert!(!fails(&["\"abcd\""]));
    assert!(!fails(&["abc"]), "unquoted is no tag");
    assert!(!fails(&["\"ab"]));
    assert!(!fails(&["\"x\", *"]), "`*` is the whole field or nothing");
    assert!(!fails(&[]));
}

/// What a producer's client reads off each operation: every refusal
/// hookd can answer it with (a generated client parses only those it
/// lists), and an optional body as "this, or nothing", never `null`.
#[test]
fn each_operation_lists_the_refusals_any_call_can_meet_and_optional_bodies_are_never_null() {
    let document = serde_json::to_value(ApiDoc::openapi()).unwrap();
    let mut optional = 0;
    for (path, item) in document["paths"].as_object().unwrap() {
        if !path.starts_with("/v1/") {
            continue;
        }
        for (method, operation) in item.as_object().unwrap() {
            let listed = operation["responses"].as_object().unwrap();
            let mut expected = vec!["400", "401", "403", "408", "503"];
            match method.as_str() {
                "get" => expected.push("429"),
                "post" | "patch" => expected.push("415"),
                _ => {}
            }
            for status in expected {
                assert!(
                    listed.contains_key(status),
                    "{method} {path} lists no {status}"
                );
            }
            let body = &operation["requestBody"];
            if body.is_object() && body["required"] != true {
                optional += 1;
                let schema = body["content"]["application/json"]["schema"].to_string();
                assert!(!schema.contains("null"), "{method} {path}: {schema}");
            }
        }
    }
    assert!(
        optional >= 5,
        "rotate, test, pull and the portal links: {optional}"
    );
}

#[test]
fn the_document_is_built_once_with_a_tag_of_its_bytes() {
    let first = served();
    assert!(std::ptr::eq(first, served()));
    assert_eq!(first.tag().len(), 32);
    let parsed: serde_json::Value = serde_json::from_slice(&first.bytes).unwrap();
    assert_eq!(parsed, serde_json::to_value(ApiDoc::openapi()).unwrap());
}

#[test]
fn a_schedule_is_documented_as_a_preset_name_or_a_list_of_durations() {
    let document = serde_json::to_value(ApiDoc::openapi()).unwrap();
    let schedule = &document["components"]["schemas"]["ScheduleSpec"];
    let variants = schedule["oneOf"].as_array().expect("oneOf");
    let types: Vec<&str> = variants.iter().filter_map(|v| v["type"].as_str()).collect();
    assert_eq!(types, ["string", "array"], "{schedule}");
    assert_eq!(variants[1]["items"]["type"], "string", "{schedule}");
}

#[test]
fn every_operation_has_a_summary_and_every_response_says_what_it_means() {
    let document = serde_json::to_value(ApiDoc::openapi()).unwrap();
    let mut operations = 0;
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            operations += 1;
            let summary = operation["summary"].as_str().unwrap_or_default();
            assert!(!summary.is_empty(), "{method} {path}: no summary");
            let responses = operation["responses"].as_object().unwrap();
            assert!(!responses.is_empty(), "{method} {path}");
            for (status, response) in responses {
                let description = response["description"].as_str().unwrap_or_default();
                assert!(
                    !description.trim().is_empty(),
                    "{method} {path} {status}: no description"
                );
            }
        }
    }
    assert!(operations > 30, "{operations} operations");
}

#[test]
fn a_page_names_its_items_schema_rather_than_a_copy_of_it() {
    let document = serde_json::to_value(ApiDoc::openapi()).unwrap();
    let schemas = document["components"]["schemas"].as_object().unwrap();
    let pages: Vec<_> = schemas.keys().filter(|k| k.starts_with("Page_")).collect();
    assert!(pages.len() >= 4, "{pages:?}");
    for page in pages {
        let item = &page["Page_".len()..];
        assert_eq!(
            schemas[page]["properties"]["data"]["items"],
            serde_json::json!({ "$ref": format!("#/components/schemas/{item}") }),
            "{page}"
        );
    }
}

#[test]
fn a_payload_is_documented_as_any_json_value() {
    let document = serde_json::to_value(ApiDoc::openapi()).unwrap();
    for schema in [
        "CreateNotification",
        "NotificationView",
        "CreateEvent",
        "EventView",
    ] {
        let payload = &document["components"]["schemas"][schema]["properties"]["payload"];
        assert!(payload.is_object(), "{schema}: {payload}");
        assert_ne!(payload["type"], "object", "{schema}: {payload}");
    }
}

#[test]
fn a_notification_documents_why_it_waits_with_every_reason() {
    let document = serde_json::to_value(ApiDoc::openapi()).unwrap();
    let schemas = &document["components"]["schemas"];
    let waiting = &schemas["NotificationView"]["properties"]["waiting"];
    assert!(waiting.is_object(), "{waiting}");
    let reasons: Vec<&str> = schemas["WaitingReason"]["enum"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", schemas["WaitingReason"]))
        .iter()
        .filter_map(|r| r.as_str())
        .collect();
    assert_eq!(
        reasons,
        [
            "scheduled",
            "due",
            "in_flight",
            "rate_limit",
            "circuit_open",
            "ordering",
            "endpoint_disabled",
            "pull"
        ]
    );
    let properties = &schemas["Waiting"]["properties"];
    for field in ["reason", "until", "behind"] {
        assert!(properties[field].is_object(), "{field}: {properties}");
    }
}
