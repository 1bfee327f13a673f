//! The links reach every operation that takes an id, and each pattern lets
//! through everything its validator accepts (a fuzzer's "invalid" strings
//! must really be invalid) while refusing what it plainly refuses.

use std::collections::BTreeSet;

use regex::Regex;
use serde_json::Value;
use utoipa::OpenApi;
use uuid::Uuid;

use super::*;
use crate::api::openapi::ApiDoc;
use crate::domain::fields::{valid_event_type, valid_key, valid_uid};
use crate::domain::pull::Receipt;
use crate::domain::schedule::parse_duration;
use crate::domain::subscription::{event_type_problem, pattern_problem};

fn document() -> Value {
    serde_json::to_value(ApiDoc::openapi()).unwrap()
}

#[test]
fn every_rule_lands_on_a_field_of_the_document() {
    let mut openapi = ApiDoc::openapi();
    assert_eq!(apply(&mut openapi), Vec::<String>::new());
    let document = document();
    let schemas = &document["components"]["schemas"];
    assert_eq!(
        schemas["CreateNotification"]["properties"]["delay"]["pattern"],
        DURATION_PATTERN
    );
    assert_eq!(
        schemas["AckBatch"]["properties"]["receipts"]["items"]["pattern"],
        RECEIPT_PATTERN
    );
    assert_eq!(
        schemas["AckBatch"]["properties"]["receipts"]["maxItems"],
        1000
    );
    assert_eq!(
        schemas["CancelRequest"]["properties"]["key"]["pattern"],
        KEY_PATTERN
    );
    assert_eq!(
        schemas["ScheduleSpec"]["oneOf"][0]["enum"],
        serde_json::json!(["alipay", "wechat", "exponential"])
    );
}

/// A parameter's schema: `name` of the operation `method path`.
fn parameter(document: &Value, method: &str, path: &str, name: &str) -> Value {
    document["paths"][path][method]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|parameter| parameter["name"] == name)
        .unwrap_or_else(|| panic!("{method} {path} takes {name}"))["schema"]
        .clone()
}

#[test]
fn query_and_path_parameters_carry_the_values_hookd_takes() {
    let document = document();
    let enums = |method, path, name| parameter(&document, method, path, name)["enum"].clone();
    assert_eq!(
        enums("get", "/v1/stats", "window"),
        serde_json::json!(["1h", "24h"])
    );
    assert_eq!(
        parameter(&document, "get", "/v1/stats", "window")["x-enum-varnames"],
        serde_json::json!(["HOUR", "DAY"])
    );
    assert_eq!(
        enums("get", "/v1/notifications", "order"),
        serde_json::json!(["newest", "oldest", "attempts"])
    );
    // An endpoint and an owner are named by schemas of their own.
    let named = [
        ("get", "/v1/endpoints/{endpoint}", "endpoint", "EndpointRef"),
        ("get", "/v1/notifications", "endpoint", "EndpointRef"),
        ("get", "/v1/stats", "endpoint", "EndpointRef"),
        ("get", "/v1/endpoints", "owner", "Owner"),
        ("post", "/v1/owners/{owner}/portal", "owner", "Owner"),
    ];
    for (method, path, name, schema) in named {
        assert_eq!(
            parameter(&document, method, path, name)["$ref"],
            format!("#/components/schemas/{schema}"),
            "{method} {path} {name}"
        );
        let component = &document["components"]["schemas"][schema];
        assert_eq!(component["pattern"], UID_PATTERN, "{schema}");
    }
    let patterns = [
        ("get", "/v1/events", "event_type", EVENT_TYPE_PATTERN),
        ("get", "/v1/notifications", "key_prefix", KEY_PATTERN),
        ("get", "/v1/events", "key", KEY_PATTERN),
    ];
    for (method, path, name, pattern) in patterns {
        assert_eq!(
            parameter(&document, method, path, name)["pattern"],
            pattern,
            "{method} {path} {name}"
        );
    }
}

#[test]
fn every_listed_value_is_one_hookd_takes_and_no_other_is() {
    for name in crate::api::notification_list::ORDERS {
        assert!(
            crate::api::notification_list::order(Some(name)).is_ok(),
            "{name}"
        );
    }
    assert!(crate::api::notification_list::order(Some("newer")).is_err());
    for window in crate::domain::stats_window::Window::ALL {
        assert_eq!(
            crate::domain::stats_window::Window::parse(window.as_str()),
            Some(window)
        );
    }
    assert_eq!(crate::domain::stats_window::Window::parse("1d"), None);
    let document = document();
    let schemas = &document["components"]["schemas"];
    assert_eq!(
        schemas["PortalPermission"]["enum"],
        serde_json::json!(crate::domain::portal::PortalPermissions::NAMES)
    );
    for holder in ["IssueLink", "WhoAmI"] {
        assert_eq!(
            schemas[holder]["properties"]["permissions"]["items"]["$ref"],
            "#/components/schemas/PortalPermission"
        );
    }
}

#[test]
fn an_endpoint_id_matches_the_pattern_its_parameter_carries() {
    // `{endpoint}` and `?endpoint=` take an id or a uid; the uid's pattern
    // must let every id through.
    let pattern = pattern(UID_PATTERN);
    for _ in 0..100 {
        let id = Uuid::now_v7();
        assert!(pattern.is_match(&id.to_string()), "{id}");
        assert!(pattern.is_match(&id.to_string().to_uppercase()), "{id}");
    }
}

#[test]
fn every_operation_that_takes_an_id_is_the_target_of_a_link_that_passes_it() {
    let document = document();
    let paths = document["paths"].as_object().unwrap();
    // operationId → the parameter names its links pass.
    let mut linked: Vec<(String, BTreeSet<String>)> = Vec::new();
    for item in paths.values() {
        for operation in item.as_object().unwrap().values() {
            for response in operation["responses"].as_object().unwrap().values() {
                for link in response["links"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|l| l.1)
                {
                    let parameters = link["parameters"].as_object().unwrap();
                    for expression in parameters.values() {
                        assert!(
                            expression.as_str().unwrap().starts_with("$response.body#/"),
                            "{link}"
                        );
                    }
                    let id = link["operationId"].as_str().unwrap().to_string();
                    linked.push((id, parameters.keys().cloned().collect()));
                }
            }
        }
    }
    let mut targets = 0;
    for (path, item) in paths {
        for (method, operation) in item.as_object().unwrap() {
            let taken: BTreeSet<String> = operation["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["in"] == "path")
                .map(|p| p["name"].as_str().unwrap().to_string())
                .collect();
            if taken.is_empty() {
                continue;
            }
            targets += 1;
            let id = operation["operationId"].as_str().unwrap();
            assert!(
                linked
                    .iter()
                    .any(|(to, passed)| to == id && *passed == taken),
                "{method} {path} ({id}) takes {taken:?}, and no link passes it"
            );
        }
    }
    assert!(targets >= 19, "{targets} operations take an id");
}

fn pattern(text: &str) -> Regex {
    Regex::new(text).unwrap()
}

#[test]
fn the_duration_pattern_lets_through_every_duration_hookd_takes() {
    let pattern = pattern(DURATION_PATTERN);
    let samples = [
        "0",
        "0s",
        "500ms",
        "2m",
        "1h",
        "1h30m",
        "1h 30m",
        " 5s ",
        "30 s",
        "1.5h",
        "7days",
        "24hours",
        "1µs",
        "3 min 2 sec",
        "1 2h",
        "5secs",
        "2 weeks",
        "1.5 h",
        "3M",
        "1y2mo",
        "10 days 1ns",
        "1hh",
        "5 mins",
        "1.h",
        "1..5h",
        "1h 30",
        "",
        "0x",
        "5",
        "00",
        "s",
        "-1s",
        "1h-",
        "soon",
        "1.s",
        "1h30",
        "30\u{1}s",
        "5s\n",
        "\u{a0}5s",
        "PT5S",
        "5 ",
        "1e3ms",
    ];
    let mut accepted = 0;
    for text in samples {
        let takes = parse_duration(text).is_ok();
        let matches = pattern.is_match(text);
        assert!(
            !takes || matches,
            "hookd takes {text:?}, the pattern refuses it"
        );
        accepted += usize::from(takes);
        if ["", "s", "5", "-1s", "soon", "PT5S", "30\u{1}s"].contains(&text) {
            assert!(!matches, "{text:?} is plainly not a duration");
        }
    }
    assert!(accepted >= 12, "{accepted}");
}

#[test]
fn the_key_pattern_lets_through_every_key_hookd_takes() {
    let pattern = pattern(KEY_PATTERN);
    let samples = [
        "order-123:paid",
        "a",
        "ü ✓ 订单",
        " spaced ",
        "tab\there",
        "nul\0",
        "del\u{7f}",
        "c1\u{85}",
        "\u{9f}",
        "\u{a0}",
        "",
    ];
    for text in samples {
        let takes = valid_key(text);
        let matches = pattern.is_match(text);
        assert_eq!(takes, matches, "{text:?}");
    }
}

#[test]
fn the_receipt_pattern_lets_through_every_receipt_hookd_issues() {
    let pattern = pattern(RECEIPT_PATTERN);
    for _ in 0..100 {
        let receipt = Receipt {
            notification: Uuid::now_v7(),
            lease: Uuid::new_v4(),
        }
        .encode();
        assert!(pattern.is_match(&receipt), "{receipt}");
        assert!(Receipt::parse(&receipt, "receipt").is_ok());
    }
    for text in [
        "",
        "hkr_",
        "hkr_short",
        "hkc_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    ] {
        assert!(!pattern.is_match(text), "{text:?}");
        assert!(Receipt::parse(text, "receipt").is_err(), "{text:?}");
    }
}

#[test]
fn the_names_patterns_let_through_every_uid_event_type_and_subscription_hookd_takes() {
    let samples = [
        "shop",
        "m42-erp",
        "merchant-42",
        "a.b:c_d",
        "order.paid",
        "order.*",
        "*",
        "a/b",
        "order..paid",
        "a.*",
        "a..*",
        ".*",
        "*.a",
        "a:b/c.d-e_f",
        "order.",
        ".order",
        "ord*er",
        "**",
        "",
        "with space",
        "ü",
        "a\nb",
        "01a213ea-8562-7001-8ab5-53515e06ee4b",
    ];
    let long = "x".repeat(300);
    fn subscription(pattern: &str) -> bool {
        pattern_problem(pattern).is_none()
    }
    fn event_type(text: &str) -> bool {
        event_type_problem(text).is_none()
    }
    type Takes = fn(&str) -> bool;
    let checks: [(&str, Takes); 4] = [
        (EVENT_SEGMENTS_PATTERN, event_type),
        (UID_PATTERN, valid_uid),
        (EVENT_TYPE_PATTERN, valid_event_type),
        (SUBSCRIPTION_PATTERN, subscription),
    ];
    for (text, takes) in checks {
        let pattern = pattern(text);
        for sample in samples.iter().copied().chain([long.as_str()]) {
            let matches = pattern.is_match(sample);
            assert!(!takes(sample) || matches, "{text}: hookd takes {sample:?}");
            // (Lengths are the schemas' maxLength, not the patterns'.)
            if ["", "with space", "ü", "a\nb"].contains(&sample) {
                assert!(!matches, "{text}: {sample:?}");
            }
        }
    }
}
