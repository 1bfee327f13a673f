//! Which event types an endpoint subscribes to (docs/design.md §9): a list of
//! patterns, each an exact type (`order.paid`), a prefix wildcard
//! (`order.*`: one or more dot segments under `order`) or `*` (everything);
//! no list at all also means everything.

use super::fields::valid_event_type;

/// Most patterns on one endpoint.
pub const MAX_PATTERNS: usize = 100;

/// What `pattern_problem` lets through, for the OpenAPI document: `*`, or
/// segments (none empty), the last of which may be `*`.
pub const SUBSCRIPTION_PATTERN: &str = r"^(\*|[A-Za-z0-9_:/-]+(\.[A-Za-z0-9_:/-]+)*(\.\*)?)$";

/// Why `pattern` is not one, if it is not.
pub fn pattern_problem(pattern: &str) -> Option<&'static str> {
    if pattern == "*" {
        return None;
    }
    let exact = pattern.strip_suffix(".*").unwrap_or(pattern);
    if exact.contains('*') {
        return Some("`*` stands alone or as the whole last segment (`order.*`)");
    }
    if !valid_event_type(exact) {
        return Some("an event type is 1 to 255 of A-Z a-z 0-9 _ - . : /");
    }
    if exact.split('.').any(str::is_empty) {
        return Some("segments between dots may not be empty");
    }
    None
}

/// Why `event_type` cannot name an event's type, if it cannot: a valid
/// event type with no empty dot segment (so every pattern can reason about
/// its segments).
pub fn event_type_problem(event_type: &str) -> Option<&'static str> {
    if !valid_event_type(event_type) {
        return Some("event_type is 1 to 255 of A-Z a-z 0-9 _ - . : /");
    }
    if event_type.split('.').any(str::is_empty) {
        return Some("segments between dots in event_type may not be empty");
    }
    None
}

/// Whether one (valid) pattern matches `event_type`.
pub fn pattern_matches(pattern: &str, event_type: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    match pattern.strip_suffix(".*") {
        Some(prefix) => event_type
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix('.'))
            .is_some_and(|rest| !rest.is_empty()),
        None => pattern == event_type,
    }
}

/// Whether an endpoint with these patterns takes `event_type`. Without a
/// list, or for a notification without a type, it does.
pub fn subscribed(patterns: Option<&[String]>, event_type: Option<&str>) -> bool {
    match (patterns, event_type) {
        (Some(patterns), Some(event_type)) => {
            patterns.iter().any(|p| pattern_matches(p, event_type))
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcard_subscription_matches_sub_types_only() {
        assert!(pattern_matches("order.*", "order.paid"));
        assert!(pattern_matches("order.*", "order.paid.late"));
        assert!(!pattern_matches("order.*", "order"));
        assert!(!pattern_matches("order.*", "orders.paid"));
        assert!(!pattern_matches("order.*", "refund.order.paid"));
    }

    #[test]
    fn an_exact_pattern_matches_only_its_type_and_a_star_everything() {
        assert!(pattern_matches("order.paid", "order.paid"));
        assert!(!pattern_matches("order.paid", "order.paid.late"));
        assert!(pattern_matches("*", "anything.at.all"));
        assert!(subscribed(None, Some("order.paid")));
        assert!(subscribed(Some(&["refund.*".into()]), None));
        assert!(!subscribed(Some(&["refund.*".into()]), Some("order.paid")));
    }

    #[test]
    fn malformed_patterns_are_refused() {
        for bad in [
            "order.**",
            ".paid",
            "order.",
            "*.paid",
            "or*der",
            "",
            "order..paid",
            "**",
        ] {
            assert!(pattern_problem(bad).is_some(), "{bad} should be refused");
        }
        for good in ["*", "order.*", "order.paid", "a:b/c.*", "order"] {
            assert_eq!(pattern_problem(good), None, "{good}");
        }
    }

    #[test]
    fn event_types_with_empty_segments_are_refused() {
        assert!(event_type_problem(".paid").is_some());
        assert!(event_type_problem("order.").is_some());
        assert!(event_type_problem("order.*").is_some());
        assert_eq!(event_type_problem("order.paid"), None);
    }
}
