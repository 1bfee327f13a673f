//! What lets a client or a fuzzer go past the first call: OpenAPI links from
//! the operations that create or list a resource to those that take its id,
//! and patterns and value lists on the strings that validation parses
//! (durations, business keys, receipts, a list's order), in bodies and in
//! query and path parameters alike. Without them, a generated request names
//! an id that does not exist (404) or a value hookd refuses (422), and never
//! goes deeper; and a generated client takes any string where hookd takes
//! one of three.
//!
//! Both are applied to the generated document here, from one table each,
//! so a pattern is written once, beside the constant its validator is
//! tested against, instead of in every field's annotation.

use std::collections::BTreeMap;

use serde_json::json;
use utoipa::openapi::link::Link;
use utoipa::openapi::schema::{AdditionalProperties, ArrayItems, Schema};
use utoipa::openapi::{OpenApi, RefOr};
use utoipa::Modify;

use super::notification_list::ORDERS;
use crate::domain::fields::{
    EVENT_SEGMENTS_PATTERN, EVENT_TYPE_PATTERN, KEY_MAX_LEN, KEY_PATTERN, UID_PATTERN,
};
use crate::domain::pull::{MAX_MAX, RECEIPT_PATTERN};
use crate::domain::schedule::{DURATION_PATTERN, MAX_ATTEMPTS, PRESETS};
use crate::domain::stats_window::Window;
use crate::domain::subscription::SUBSCRIPTION_PATTERN;

// What a path or a query names an endpoint (`{endpoint}`, `?endpoint=`)
// and an owner by: schemas of their own, so that a generated client has one
// type for each rather than one per operation. Both carry the uid's
// pattern (`rules`), which every id's text also matches. Requests are
// parsed as text (`store::endpoints::EndpointRef` for an endpoint): these
// types are the document's only, named apart from the store's.

/// An endpoint's id, or the uid it was given (`shop-orders`).
#[derive(utoipa::ToSchema)]
#[schema(as = EndpointRef)]
#[allow(dead_code)]
pub struct EndpointRefSchema(String);

/// The tenant endpoints belong to (`merchant-42`).
#[derive(utoipa::ToSchema)]
#[schema(as = Owner)]
#[allow(dead_code)]
pub struct OwnerSchema(String);

/// An operation whose answer names a resource: `(method, path, the statuses
/// that carry it, a JSON pointer to its id in the body, the path parameter
/// that takes it, the paths under which operations take it)`.
type Source = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static str,
    &'static str,
    &'static str,
);

/// What creates each resource, and the endpoints' list (which the fuzzer
/// asks for first). Other lists and the batches are left out: an empty list
/// or a refused item names nothing, and a fuzzer reports each link it could
/// not follow.
#[rustfmt::skip]
const SOURCES: &[Source] = &[
    ("post", "/v1/endpoints", &["201"], "/id", "endpoint", "/v1/endpoints/{endpoint}"),
    ("get", "/v1/endpoints", &["200"], "/data/0/id", "endpoint", "/v1/endpoints/{endpoint}"),
    ("post", "/v1/endpoints", &["201"], "/owner", "owner", "/v1/owners/{owner}"),
    ("post", "/v1/notifications", &["201", "200"], "/id", "id", "/v1/notifications/{id}"),
    ("post", "/v1/events", &["201", "200"], "/id", "id", "/v1/events/{id}"),
    ("post", "/v1/endpoints/{endpoint}/recover", &["202"], "/id", "id", "/v1/operations/{id}"),
];

/// Adds a link from each source's answers to every operation under its
/// resource's path, passing the id it names.
pub struct Links;

impl Modify for Links {
    fn modify(&self, openapi: &mut OpenApi) {
        // (target path, operationId) for every operation.
        let mut targets = Vec::new();
        for (path, item) in &openapi.paths.paths {
            let operations = [&item.get, &item.post, &item.patch, &item.delete];
            for operation in operations.into_iter().flatten() {
                if let Some(id) = &operation.operation_id {
                    targets.push((path.clone(), id.clone()));
                }
            }
        }
        for &(method, path, statuses, pointer, parameter, under) in SOURCES {
            let Some(item) = openapi.paths.paths.get_mut(path) else {
                continue;
            };
            let operation = match method {
                "get" => item.get.as_mut(),
                _ => item.post.as_mut(),
            };
            let Some(operation) = operation else { continue };
            for status in statuses {
                let Some(RefOr::T(response)) = operation.responses.responses.get_mut(*status)
                else {
                    continue;
                };
                for (target, id) in &targets {
                    if target == under || target.starts_with(&format!("{under}/")) {
                        let mut link = Link::default();
                        link.operation_id = id.clone();
                        link.parameters = BTreeMap::from([(
                            parameter.to_string(),
                            json!(format!("$response.body#{pointer}")),
                        )]);
                        response.links.insert(id.clone(), RefOr::T(link));
                    }
                }
            }
        }
    }
}

/// Where a constraint goes: a component schema, then property names, with
/// `[]` for an array's items and a number for a `oneOf` variant.
type Place = (&'static str, &'static [&'static str]);

/// What validation accepts, said to the document.
enum Rule {
    Pattern(&'static str),
    Length(usize, usize),
    Items(usize, usize),
    Names(Vec<&'static str>),
    /// What a generated client calls each of `Names` (`x-enum-varnames`,
    /// which openapi-python-client reads): for values that are no names
    /// (`1h`), which it would call `VALUE_0`.
    VarNames(Vec<&'static str>),
    /// An object of any properties (`additionalProperties: true`): a bare
    /// `object` became `Record<string, never>` in the TypeScript client,
    /// which could then neither write a payload filter nor read one.
    AnyProperties,
}

fn rules() -> Vec<(Place, Rule)> {
    use Rule::*;
    let durations: &[Place] = &[
        ("CreateNotification", &["delay"]),
        ("CreateEvent", &["delay"]),
        ("RotateSecret", &["overlap"]),
        ("PullRequest", &["lease"]),
        ("PullRequest", &["wait"]),
        ("ExtendRequest", &["lease"]),
        ("NackRequest", &["retry_after"]),
        ("NackBatch", &["retry_after"]),
        ("ScheduleSpec", &["1", "[]"]),
    ];
    let keys: &[Place] = &[
        ("CreateNotification", &["key"]),
        ("CreateEvent", &["key"]),
        ("CancelRequest", &["key"]),
        ("CancelRequest", &["key_prefix"]),
        ("BulkRetryRequest", &["key_prefix"]),
    ];
    let receipts: &[Place] = &[
        ("AckRequest", &["receipt"]),
        ("NackRequest", &["receipt"]),
        ("ExtendRequest", &["receipt"]),
        ("AckBatch", &["receipts", "[]"]),
        ("NackBatch", &["receipts", "[]"]),
    ];
    let uids: &[Place] = &[
        ("EndpointRef", &[]),
        ("Owner", &[]),
        ("EndpointFields", &["uid"]),
        ("EndpointFields", &["owner"]),
        ("CreateEvent", &["owner"]),
    ];
    let event_types: &[Place] = &[
        ("CreateNotification", &["event_type"]),
        ("CancelRequest", &["event_type"]),
        ("BulkRetryRequest", &["event_type"]),
    ];
    let subscriptions: Place = ("EndpointFields", &["event_types", "[]"]);
    let mut rules = Vec::new();
    rules.extend(uids.iter().map(|&place| (place, Pattern(UID_PATTERN))));
    rules.extend(
        event_types
            .iter()
            .map(|&place| (place, Pattern(EVENT_TYPE_PATTERN))),
    );
    rules.push((
        ("CreateEvent", &["event_type"]),
        Pattern(EVENT_SEGMENTS_PATTERN),
    ));
    rules.push((subscriptions, Pattern(SUBSCRIPTION_PATTERN)));
    // 255 for the type, and `.*`.
    rules.push((subscriptions, Length(1, 257)));
    rules.extend(
        durations
            .iter()
            .map(|&place| (place, Pattern(DURATION_PATTERN))),
    );
    rules.extend(keys.iter().map(|&place| (place, Pattern(KEY_PATTERN))));
    rules.extend(keys.iter().map(|&place| (place, Length(1, KEY_MAX_LEN))));
    rules.extend(
        receipts
            .iter()
            .map(|&place| (place, Pattern(RECEIPT_PATTERN))),
    );
    for batch in ["AckBatch", "NackBatch"] {
        rules.push(((batch, &["receipts"][..]), Items(1, MAX_MAX as usize)));
    }
    rules.push((("ScheduleSpec", &["1"]), Items(1, MAX_ATTEMPTS)));
    let presets = PRESETS.iter().map(|(name, _)| *name).collect();
    rules.push((("ScheduleSpec", &["0"]), Names(presets)));
    for filter in ["EndpointFields", "EndpointView"] {
        rules.push(((filter, &["filter"][..]), AnyProperties));
    }
    rules
}

/// Where a parameter's constraint goes: the path of the operations that
/// take it (`*`: every operation that has a parameter of that name), and
/// its name.
type Parameter = (&'static str, &'static str);

fn parameter_rules() -> Vec<(Parameter, Rule)> {
    use Rule::*;
    let windows = Window::ALL.iter().map(|window| window.as_str()).collect();
    // In `Window::ALL`'s order, as `windows`.
    let window_names = Window::ALL
        .iter()
        .map(|window| match window {
            Window::Hour => "HOUR",
            Window::Day => "DAY",
        })
        .collect();
    vec![
        (("*", "event_type"), Pattern(EVENT_TYPE_PATTERN)),
        (("*", "key"), Pattern(KEY_PATTERN)),
        (("*", "key"), Length(1, KEY_MAX_LEN)),
        (("*", "key_prefix"), Pattern(KEY_PATTERN)),
        (("*", "key_prefix"), Length(1, KEY_MAX_LEN)),
        (("/v1/notifications", "order"), Names(ORDERS.to_vec())),
        (("/v1/stats", "window"), Names(windows)),
        (("/v1/stats", "window"), VarNames(window_names)),
    ]
}

/// The schema at `place`, if the document has it.
fn schema_at(openapi: &mut OpenApi, (component, steps): Place) -> Option<&mut Schema> {
    let components = openapi.components.as_mut()?;
    let mut schema = match components.schemas.get_mut(component)? {
        RefOr::T(schema) => schema,
        RefOr::Ref(_) => return None,
    };
    for step in steps {
        let next = match (schema, *step) {
            (Schema::Array(array), "[]") => match &mut array.items {
                ArrayItems::RefOrSchema(items) => items.as_mut(),
                ArrayItems::False => return None,
            },
            (Schema::OneOf(one_of), variant) if variant.parse::<usize>().is_ok() => {
                one_of.items.get_mut(variant.parse::<usize>().ok()?)?
            }
            (Schema::Object(object), property) => object.properties.get_mut(property)?,
            _ => return None,
        };
        let RefOr::T(next) = next else { return None };
        schema = next;
    }
    Some(schema)
}

/// Puts `rule` on `schema`; whether it is a schema the rule fits.
fn constrain(schema: &mut Schema, rule: &Rule) -> bool {
    match (schema, rule) {
        (Schema::Object(object), Rule::Pattern(pattern)) => {
            object.pattern = Some(pattern.to_string());
        }
        (Schema::Object(object), Rule::Length(min, max)) => {
            object.min_length = Some(*min);
            object.max_length = Some(*max);
        }
        (Schema::Object(object), Rule::Names(names)) => {
            object.enum_values = Some(names.iter().map(|name| json!(name)).collect());
        }
        (Schema::Object(object), Rule::VarNames(names)) => {
            let names = [("x-enum-varnames", json!(names))];
            object
                .extensions
                .get_or_insert_with(Default::default)
                .merge(names.into_iter().collect());
        }
        (Schema::Object(object), Rule::AnyProperties) => {
            object.additional_properties = Some(Box::new(AdditionalProperties::FreeForm(true)));
        }
        (Schema::Array(array), Rule::Items(min, max)) => {
            array.min_items = Some(*min);
            array.max_items = Some(*max);
        }
        _ => return false,
    }
    true
}

/// Puts `rule` on every parameter at `place`; whether there was one.
fn constrain_parameters(openapi: &mut OpenApi, (path, name): Parameter, rule: &Rule) -> bool {
    let mut applied = false;
    for (at, item) in openapi.paths.paths.iter_mut() {
        if path != "*" && at != path {
            continue;
        }
        let operations = [
            &mut item.get,
            &mut item.post,
            &mut item.put,
            &mut item.patch,
            &mut item.delete,
        ];
        for operation in operations.into_iter().flatten() {
            for parameter in operation.parameters.iter_mut().flatten() {
                let RefOr::T(parameter) = parameter else {
                    continue;
                };
                if parameter.name != name {
                    continue;
                }
                if let Some(RefOr::T(schema)) = &mut parameter.schema {
                    applied |= constrain(schema, rule);
                }
            }
        }
    }
    applied
}

/// Applies every rule it can; the places it could not find, for the test
/// that keeps the table in step with the types.
fn apply(openapi: &mut OpenApi) -> Vec<String> {
    let mut missing = Vec::new();
    for (place, rule) in rules() {
        let applied = schema_at(openapi, place).is_some_and(|schema| constrain(schema, &rule));
        if !applied {
            missing.push(format!("{}.{}", place.0, place.1.join(".")));
        }
    }
    for (place, rule) in parameter_rules() {
        if !constrain_parameters(openapi, place, &rule) {
            missing.push(format!("the parameter {} of {}", place.1, place.0));
        }
    }
    missing
}

/// Constrains the strings that validation parses as it parses them.
pub struct Patterns;

impl Modify for Patterns {
    fn modify(&self, openapi: &mut OpenApi) {
        apply(openapi);
    }
}

#[cfg(test)]
#[path = "openapi_depth_tests.rs"]
mod tests;
