//! Ordered delivery per key (docs/design.md §17): what an endpoint asks
//! for, and what a notification's key may be. Where a created
//! notification goes in its key's order is `store::ordering`'s; what
//! releases its successor is the trigger of `migrations/*ordering.sql`.

use serde::{Deserialize, Serialize};

/// Whether an endpoint attempts the notifications of one `order_key` one at
/// a time, in creation order.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
#[schema(as = Ordering)]
pub enum KeyOrdering {
    /// Each notification on its own (the default).
    #[default]
    None,
    /// One at a time per `order_key`, in creation order.
    Key,
}

/// What a notification of an ordered endpoint that ends `failed` or
/// `cancelled` does to the later ones of its key.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
#[schema(as = OrderingOnFailure)]
pub enum OnFailure {
    /// The next one goes (the default).
    #[default]
    Continue,
    /// The later ones wait until it is retried to success, or they are
    /// cancelled.
    Hold,
}

impl KeyOrdering {
    pub const ALL: [Self; 2] = [Self::None, Self::Key];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Key => "key",
        }
    }
}

impl OnFailure {
    pub const ALL: [Self; 2] = [Self::Continue, Self::Hold];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Continue => "continue",
            Self::Hold => "hold",
        }
    }
}

/// What a change of an endpoint's ordering releases, in the change's
/// transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// Every notification waiting behind another: ordering is off.
    All,
    /// Those waiting behind a failed or cancelled one that holds its key:
    /// `hold` became `continue`.
    Held,
}

/// What changing an endpoint from `before` to `after` (its ordering and
/// its `ordering_on_failure`) releases, if anything.
pub fn released_by(
    before: (KeyOrdering, OnFailure),
    after: (KeyOrdering, OnFailure),
) -> Option<Release> {
    match (before, after) {
        ((KeyOrdering::Key, _), (KeyOrdering::None, _)) => Some(Release::All),
        ((_, OnFailure::Hold), (_, OnFailure::Continue)) => Some(Release::Held),
        _ => None,
    }
}

/// Whether changing an endpoint's ordering from `before` to `after` turns
/// it on (`none` to `key`): then its pending notifications that have a key
/// go back in line, each key's in creation order, so that none created
/// from then on goes before one of its key still pending from before
/// (`store::ordering`'s relink).
pub fn lines_again(before: KeyOrdering, after: KeyOrdering) -> bool {
    before == KeyOrdering::None && after == KeyOrdering::Key
}

/// The longest `order_key`, in bytes.
pub const MAX_ORDER_KEY: usize = 256;

/// An order key: 1 to 256 bytes, no control characters.
pub fn valid_order_key(key: &str) -> bool {
    !key.is_empty() && key.len() <= MAX_ORDER_KEY && !key.chars().any(char::is_control)
}

/// The header that carries an ordered notification's place in its key.
pub const SEQUENCE_HEADER: &str = "webhook-sequence";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_order_key_is_one_to_256_bytes_without_control_characters() {
        assert!(valid_order_key("order-123"));
        assert!(valid_order_key(&"é".repeat(128)));
        assert!(!valid_order_key(""));
        assert!(!valid_order_key(&"a".repeat(257)));
        assert!(!valid_order_key("order\n123"));
    }

    #[test]
    fn turning_ordering_off_releases_all_and_hold_to_continue_the_held() {
        use KeyOrdering::{Key, None as Unordered};
        use OnFailure::{Continue, Hold};
        assert_eq!(
            released_by((Key, Hold), (Unordered, Hold)),
            Some(Release::All)
        );
        assert_eq!(
            released_by((Key, Hold), (Key, Continue)),
            Some(Release::Held)
        );
        assert_eq!(released_by((Key, Continue), (Key, Hold)), None);
        assert_eq!(released_by((Unordered, Continue), (Key, Continue)), None);
    }

    #[test]
    fn the_names_are_the_schemas() {
        let names: Vec<&str> = KeyOrdering::ALL.iter().map(|o| o.as_str()).collect();
        assert_eq!(names, ["none", "key"]);
        let names: Vec<&str> = OnFailure::ALL.iter().map(|o| o.as_str()).collect();
        assert_eq!(names, ["continue", "hold"]);
        assert_eq!(serde_json::to_value(OnFailure::Hold).unwrap(), "hold");
    }
}
