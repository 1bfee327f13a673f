//! The filter language, case by case: what matches, what is refused and
//! where, and the bounds.

use serde_json::{json, Map};

use super::*;

fn filter(source: Value) -> PayloadFilter {
    PayloadFilter::parse(source).expect("a valid filter")
}

fn refused(source: Value) -> FilterProblem {
    PayloadFilter::parse(source).expect_err("a refused filter")
}

#[test]
fn each_entry_of_an_object_must_hold() {
    let f = filter(json!({"amount": {"$gte": 100}, "currency": "CNY"}));
    assert!(f.matches(Some(&json!({"amount": 100, "currency": "CNY"}))));
    assert!(f.matches(Some(&json!({"amount": 250.5, "currency": "CNY"}))));
    assert!(!f.matches(Some(&json!({"amount": 99, "currency": "CNY"}))));
    assert!(!f.matches(Some(&json!({"amount": 100, "currency": "USD"}))));
    assert!(!f.matches(Some(&json!({"currency": "CNY"}))));
}

#[test]
fn dotted_paths_reach_nested_fields_and_array_elements() {
    let f = filter(json!({"customer.tier": "gold", "items.0.sku": {"$in": ["A", "B"]}}));
    assert!(f.matches(Some(
        &json!({"customer": {"tier": "gold"}, "items": [{"sku": "B"}]})
    )));
    assert!(!f.matches(Some(
        &json!({"customer": {"tier": "gold"}, "items": [{"sku": "C"}, {"sku": "A"}]})
    )));
    assert!(!f.matches(Some(&json!({"customer": "gold", "items": []}))));
}

#[test]
fn or_and_nested_and_combine_filters() {
    let f = filter(json!({
        "$or": [{"rush": true}, {"$and": [{"amount": {"$gt": 10}}, {"amount": {"$lt": 20}}]}]
    }));
    assert!(f.matches(Some(&json!({"rush": true}))));
    assert!(f.matches(Some(&json!({"amount": 15}))));
    assert!(!f.matches(Some(&json!({"amount": 20}))));
    assert!(!f.matches(Some(&json!({"rush": "true"}))));
}

#[test]
fn numbers_compare_by_value_and_large_integers_exactly() {
    let f = filter(json!({"n": 100}));
    assert!(f.matches(Some(&json!({"n": 100.0}))));
    let big = filter(json!({"id": {"$gt": 9_007_199_254_740_992_u64}}));
    assert!(big.matches(Some(&json!({"id": 9_007_199_254_740_993_u64}))));
    assert!(!big.matches(Some(&json!({"id": 9_007_199_254_740_992_u64}))));
    let negative = filter(json!({"d": {"$lt": 0}}));
    assert!(negative.matches(Some(&json!({"d": -1}))));
    assert!(!negative.matches(Some(&json!({"d": u64::MAX}))));
}

/// An integer meets a float without being rounded to one: past 2^53 the
/// rounding made two different numbers equal (a review's case).
#[test]
fn an_integer_and_a_float_compare_exactly_past_two_to_the_53() {
    let odd = filter(json!({"n": 9_007_199_254_740_993_u64}));
    assert!(!odd.matches(Some(&json!({"n": 9_007_199_254_740_992.0}))));
    let above = filter(json!({"n": {"$gt": 9_007_199_254_740_992.0}}));
    assert!(above.matches(Some(&json!({"n": 9_007_199_254_740_993_u64}))));
    assert!(!above.matches(Some(&json!({"n": 9_007_199_254_740_992_u64}))));
    let fraction = filter(json!({"n": {"$lt": 2.5}}));
    assert!(fraction.matches(Some(&json!({"n": 2}))));
    assert!(!fraction.matches(Some(&json!({"n": 3}))));
    let negative = filter(json!({"n": {"$gt": -2.5}}));
    assert!(negative.matches(Some(&json!({"n": -2}))));
    assert!(!negative.matches(Some(&json!({"n": -3}))));
    let huge = filter(json!({"n": {"$lt": 1e30}}));
    assert!(huge.matches(Some(&json!({"n": u64::MAX}))));
    let tiny = filter(json!({"n": {"$gt": -1e30}}));
    assert!(tiny.matches(Some(&json!({"n": i64::MIN}))));
    assert!(filter(json!({"n": 3})).matches(Some(&json!({"n": 3.0}))));
}

#[test]
fn order_operators_compare_like_with_like_only() {
    let f = filter(json!({"v": {"$gte": "b"}}));
    assert!(f.matches(Some(&json!({"v": "c"}))));
    assert!(!f.matches(Some(&json!({"v": "a"}))));
    assert!(!f.matches(Some(&json!({"v": 5}))));
    let n = filter(json!({"v": {"$lte": 5}}));
    assert!(!n.matches(Some(&json!({"v": "1"}))));
    assert!(!n.matches(Some(&json!({"v": null}))));
}

#[test]
fn null_is_a_value_and_absence_is_exists_false() {
    let null = filter(json!({"refund": null}));
    assert!(null.matches(Some(&json!({"refund": null}))));
    assert!(!null.matches(Some(&json!({}))));
    let absent = filter(json!({"refund": {"$exists": false}}));
    assert!(absent.matches(Some(&json!({}))));
    assert!(!absent.matches(Some(&json!({"refund": null}))));
    let present = filter(json!({"refund": {"$exists": true}}));
    assert!(present.matches(Some(&json!({"refund": null}))));
}

#[test]
fn ne_and_nin_hold_for_an_absent_path() {
    let ne = filter(json!({"status": {"$ne": "test"}}));
    assert!(ne.matches(Some(&json!({}))));
    assert!(ne.matches(Some(&json!({"status": "live"}))));
    assert!(!ne.matches(Some(&json!({"status": "test"}))));
    let nin = filter(json!({"status": {"$nin": ["test", "sandbox"]}}));
    assert!(nin.matches(Some(&json!({}))));
    assert!(!nin.matches(Some(&json!({"status": "sandbox"}))));
}

#[test]
fn operators_on_one_path_all_hold() {
    let f = filter(json!({"amount": {"$gt": 0, "$lte": 500, "$ne": 13}}));
    assert!(f.matches(Some(&json!({"amount": 500}))));
    assert!(!f.matches(Some(&json!({"amount": 13}))));
    assert!(!f.matches(Some(&json!({"amount": 501}))));
}

#[test]
fn objects_and_lists_in_the_payload_are_never_equal_to_a_scalar() {
    let f = filter(json!({"customer": {"$ne": "x"}, "tags": {"$in": ["a"]}}));
    assert!(!f.matches(Some(&json!({"customer": {}, "tags": ["a"]}))));
    assert!(f.matches(Some(&json!({"customer": {}, "tags": "a"}))));
}

#[test]
fn an_event_without_a_json_payload_matches_no_filter() {
    let f = filter(json!({"x": {"$exists": false}}));
    assert!(!f.matches(None));
    assert!(payload_json("text/plain; charset=utf-8", b"{}").is_none());
    assert!(payload_json("application/json", b"not json").is_none());
    assert_eq!(
        payload_json("Application/Vnd.Api+JSON; charset=utf-8", b"{\"a\":1}"),
        Some(json!({"a": 1}))
    );
}

#[test]
fn refusals_name_the_path_and_the_operator() {
    let cases = [
        (json!([]), "filter", "an object"),
        (json!({}), "filter", "at least one condition"),
        (
            json!({"amount": {"$gte": true}}),
            "filter.amount.$gte",
            "number or a string",
        ),
        (
            json!({"amount": {"$between": [1, 2]}}),
            "filter.amount.$between",
            "not an operator",
        ),
        (
            json!({"$nor": []}),
            "filter.$nor",
            "not a filter's operator",
        ),
        (json!({"a": {"$in": []}}), "filter.a.$in", "list of 1 to"),
        (
            json!({"a": {"$in": [{"b": 1}]}}),
            "filter.a.$in",
            "lists strings",
        ),
        (
            json!({"a": {"$exists": 1}}),
            "filter.a.$exists",
            "true or false",
        ),
        (json!({"a": {"b": 1}}), "filter.a", "dotted path"),
        (
            json!({"a": {"$eq": 1, "b": 2}}),
            "filter.a",
            "object of operators",
        ),
        (json!({"a": [1]}), "filter.a", "$in"),
        (json!({"a..b": 1}), "filter.a..b", "none empty"),
        (
            json!({"$or": [{"a": 1}, {"b": {"$lt": null}}]}),
            "filter.$or[1].b.$lt",
            "number or a string",
        ),
        (json!({"$and": {"a": 1}}), "filter.$and", "non-empty list"),
        (
            json!({"a": {"$or": [{"b": 1}]}}),
            "filter.a.$or",
            "whole filters",
        ),
    ];
    for (source, field, message) in cases {
        let problem = refused(source.clone());
        assert_eq!(problem.field(), field, "{source}");
        assert!(
            problem.message.contains(message),
            "{source}: {}",
            problem.message
        );
    }
}

#[test]
fn size_clauses_depth_and_paths_are_bounded() {
    let big: Map<String, Value> = (0..200)
        .map(|i| (format!("field_{i:04}"), json!("a value of some length")))
        .collect();
    assert!(refused(Value::Object(big)).message.contains("4096 bytes"));
    let many: Map<String, Value> = (0..=MAX_CLAUSES)
        .map(|i| (format!("f{i}"), json!(1)))
        .collect();
    assert!(refused(Value::Object(many))
        .message
        .contains("64 conditions"));
    let exactly: Map<String, Value> = (0..MAX_CLAUSES)
        .map(|i| (format!("f{i}"), json!(1)))
        .collect();
    assert!(PayloadFilter::parse(Value::Object(exactly)).is_ok());
    let mut deep = json!({"a": 1});
    for _ in 0..MAX_DEPTH {
        deep = json!({"$or": [deep]});
    }
    assert!(PayloadFilter::parse(deep.clone()).is_ok());
    let deeper = json!({"$and": [deep]});
    assert!(refused(deeper).message.contains("nest at most 4"));
    let long = vec!["p"; MAX_PATH_SEGMENTS + 1].join(".");
    assert!(refused(json!({ long: 1 }))
        .message
        .contains("at most 16 segments"));
}

#[test]
fn a_stored_filter_reads_back_as_written() {
    let f = filter(json!({"amount": {"$gte": 100}, "$or": [{"a": 1}, {"b": "x"}]}));
    let back = from_stored_text(&to_stored_text(&f)).unwrap();
    assert_eq!(back, f);
    assert_eq!(serde_json::to_value(&back).unwrap(), *f.source());
    assert!(from_stored_text("{\"a\": {\"$bad\": 1}}").is_err());
}
