//! Whether payload filters read a JSON text as a receiver would. serde_json
//! keeps a duplicate key's last value and a receiver's parser may keep its
//! first; and a text that parses as JSON may still hold a value serde_json
//! will not read (a number beyond a 64-bit float's range, an escape of half
//! a UTF-16 surrogate pair), which leaves a filter nothing to read. Either
//! way the filters and a receiver would disagree about what an event says,
//! so an event's JSON is refused with one (`service::payload`).

/// What payload filters cannot read as a receiver would.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// A key one object names twice, as it is written (escapes read).
    RepeatedKey(String),
    /// A value serde_json refuses to read, as serde_json says it.
    Value(String),
}

/// The first thing of a JSON text, at any depth, that payload filters
/// cannot read as a receiver would. `None` when they read it whole, or when
/// the text ends early (other checks say so). A text that is not JSON at
/// all is a `Value` too: only the caller knows whether it had to be JSON.
pub fn unreadable(text: &[u8]) -> Option<Unreadable> {
    match serde_json::from_slice::<DistinctKeys>(text) {
        Err(error) if error.is_data() => {
            let message = error.to_string();
            let key = message.strip_prefix(REPEATED)?;
            Some(Unreadable::RepeatedKey(
                key[..key.rfind(" at line ").unwrap_or(key.len())].to_owned(),
            ))
        }
        Err(error) if error.is_syntax() => Some(Unreadable::Value(error.to_string())),
        _ => None,
    }
}

const REPEATED: &str = "repeated key: ";

/// Any JSON value, each of its numbers and strings read as serde_json
/// reads them (`IgnoredAny` skips them unread), nothing kept; with
/// `DISTINCT`, its objects each name a key once.
pub(super) struct Walk<const DISTINCT: bool>;

/// `Walk` that refuses a repeated key (`unreadable`).
type DistinctKeys = Walk<true>;

impl<'de, const DISTINCT: bool> serde::Deserialize<'de> for Walk<DISTINCT> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Walk)
    }
}

impl<'de, const DISTINCT: bool> serde::de::Visitor<'de> for Walk<DISTINCT> {
    type Value = Walk<DISTINCT>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_unit<E>(self) -> Result<Self, E> {
        Ok(self)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut items: A) -> Result<Self, A::Error> {
        while items.next_element::<Walk<DISTINCT>>()?.is_some() {}
        Ok(self)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self, A::Error> {
        if !DISTINCT {
            // Each key read, none kept.
            while map.next_key::<Walk<false>>()?.is_some() {
                map.next_value::<Walk<false>>()?;
            }
            return Ok(self);
        }
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            map.next_value::<Walk<DISTINCT>>()?;
            if let Some(key) = seen.replace(key) {
                return Err(serde::de::Error::custom(format!("{REPEATED}{key}")));
            }
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::{unreadable, Unreadable};

    fn repeated_key(text: &[u8]) -> Option<String> {
        match unreadable(text)? {
            Unreadable::RepeatedKey(key) => Some(key),
            Unreadable::Value(_) => None,
        }
    }

    #[test]
    fn a_key_named_twice_in_one_object_is_found_at_any_depth() {
        assert_eq!(repeated_key(br#"{"a": 1, "a": 2}"#).as_deref(), Some("a"));
        assert_eq!(
            repeated_key(br#"{"order": [{"amount": 1, "x": {}, "amount": 9}]}"#).as_deref(),
            Some("amount")
        );
        // Escapes are read: "\u0061" is "a".
        assert_eq!(
            repeated_key(br#"{"a": 1, "\u0061": 2}"#).as_deref(),
            Some("a")
        );
        // A key whose text holds the words serde_json adds is kept whole.
        assert_eq!(
            repeated_key(br#"{"k at line 1": 1, "k at line 1": 2}"#).as_deref(),
            Some("k at line 1")
        );
        for distinct in [
            r#"{"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}]}"#,
            "[1, 2, 2]",
            r#""a""#,
            "null",
            "{",
            "",
        ] {
            assert_eq!(unreadable(distinct.as_bytes()), None, "{distinct}");
        }
    }

    #[test]
    fn a_value_serde_json_will_not_read_is_named_wherever_it_is() {
        for text in [
            r#"{"a": 1, "z": 1e309}"#,
            r#"{"a": 1, "z": [-1e400]}"#,
            r#"{"a": 1, "z": "\ud800"}"#,
            r#"{"\udc00": 1}"#,
        ] {
            assert!(
                matches!(unreadable(text.as_bytes()), Some(Unreadable::Value(_))),
                "{text}"
            );
        }
        // Beyond 64 bits an integer reads as the nearest float: readable.
        assert_eq!(
            unreadable(br#"{"n": 123456789012345678901234567890, "p": "\ud83d\ude00"}"#),
            None
        );
    }
}
