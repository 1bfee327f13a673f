//! Whether a JSON text names a key twice in one object. serde_json keeps
//! a duplicate's last value and a receiver's parser may keep its first:
//! where hookd reads a payload (payload filters), the two would disagree
//! about what an event says, so an event's JSON is refused with one.

/// The first key that one object of a JSON text names twice, at any
/// depth, as it is written (escapes read). `None` when every object's keys
/// are distinct, or when the text is not JSON (other checks say so).
/// serde_json keeps a duplicate's last value and a receiver's parser may
/// keep its first: where hookd reads a payload (payload filters), the two
/// would disagree about what the event says.
pub fn repeated_key(text: &[u8]) -> Option<String> {
    match serde_json::from_slice::<DistinctKeys>(text) {
        Err(error) if error.is_data() => {
            let message = error.to_string();
            let key = message.strip_prefix(REPEATED)?;
            Some(key[..key.rfind(" at line ").unwrap_or(key.len())].to_owned())
        }
        _ => None,
    }
}

const REPEATED: &str = "repeated key: ";

/// Any JSON value whose objects each name a key once.
struct DistinctKeys;

impl<'de> serde::Deserialize<'de> for DistinctKeys {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DistinctKeys)
    }
}

impl<'de> serde::de::Visitor<'de> for DistinctKeys {
    type Value = DistinctKeys;

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
        while items.next_element::<DistinctKeys>()?.is_some() {}
        Ok(self)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self, A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            map.next_value::<DistinctKeys>()?;
            if let Some(key) = seen.replace(key) {
                return Err(serde::de::Error::custom(format!("{REPEATED}{key}")));
            }
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::repeated_key;

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
            assert_eq!(repeated_key(distinct.as_bytes()), None, "{distinct}");
        }
    }
}
