//! Lists, maps and free JSON a request may hold, counted while they are
//! parsed: the item past the limit is refused before it is built, and
//! nothing after it is read. A `Vec` would first build every item of a
//! 15 MiB `[0, 0, …]` (8 million of them, some 300 MB) only to refuse the
//! batch once it is whole.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

/// How every refusal of this module begins, so that the API can answer it
/// as a value out of range rather than a type error.
pub const PAST_THE_LIMIT: &str = "past the limit: ";

fn past_the_limit<E: de::Error>(what: fmt::Arguments<'_>) -> E {
    E::custom(format_args!("{PAST_THE_LIMIT}{what}"))
}

/// A JSON array of at most `MAX` items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounded<T, const MAX: usize>(Vec<T>);

impl<T, const MAX: usize> Bounded<T, MAX> {
    pub fn into_vec(self) -> Vec<T> {
        self.0
    }
}

impl<T, const MAX: usize> std::ops::Deref for Bounded<T, MAX> {
    type Target = Vec<T>;

    fn deref(&self) -> &Vec<T> {
        &self.0
    }
}

impl<T, const MAX: usize> IntoIterator for Bounded<T, MAX> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'de, T: Deserialize<'de>, const MAX: usize> Deserialize<'de> for Bounded<T, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(ListVisitor::<T, MAX>(PhantomData))
    }
}

struct ListVisitor<T, const MAX: usize>(PhantomData<T>);

impl<'de, T: Deserialize<'de>, const MAX: usize> Visitor<'de> for ListVisitor<T, MAX> {
    type Value = Bounded<T, MAX>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an array of at most {MAX} items")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(MAX));
        while items.len() < MAX {
            match seq.next_element()? {
                Some(item) => items.push(item),
                None => return Ok(Bounded(items)),
            }
        }
        // Refused inside the item's own seed, so that the error's path
        // names it (`notifications[1000]`).
        match seq.next_element_seed(Refuse(format_args!(
            "at most {MAX} items; item {} is one too many",
            MAX + 1
        )))? {
            None => Ok(Bounded(items)),
            Some(never) => match never {},
        }
    }
}

/// Refuses the value it is given without reading it.
struct Refuse<'a>(fmt::Arguments<'a>);

impl<'de> DeserializeSeed<'de> for Refuse<'_> {
    type Value = std::convert::Infallible;

    fn deserialize<D: Deserializer<'de>>(self, _: D) -> Result<Self::Value, D::Error> {
        Err(past_the_limit(self.0))
    }
}

/// A JSON object of strings with at most `MAX` entries, a repeated name
/// counted each time it comes (custom headers).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct BoundedMap<const MAX: usize>(BTreeMap<String, String>);

/// Names only: the values are custom headers', which often carry a
/// receiver's credentials.
impl<const MAX: usize> fmt::Debug for BoundedMap<MAX> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl<const MAX: usize> BoundedMap<MAX> {
    pub fn into_map(self) -> BTreeMap<String, String> {
        self.0
    }
}

impl<'de, const MAX: usize> Deserialize<'de> for BoundedMap<MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MapVisitor::<MAX>)
    }
}

struct MapVisitor<const MAX: usize>;

impl<'de, const MAX: usize> Visitor<'de> for MapVisitor<MAX> {
    type Value = BoundedMap<MAX>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an object of at most {MAX} strings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries = BTreeMap::new();
        let mut seen = 0;
        while let Some(name) = map.next_key::<String>()? {
            seen += 1;
            if seen > MAX {
                return Err(past_the_limit(format_args!(
                    "at most {MAX} entries; entry {seen} is one too many"
                )));
            }
            entries.insert(name, map.next_value()?);
        }
        Ok(BoundedMap(entries))
    }
}

/// Any JSON value with at most `MAX` items inside it, those of nested
/// arrays and objects counted too: bounding each array alone would let
/// `[[…1000…], …1000…]` hold a million.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundedJson<const MAX: usize>(pub Value);

impl<'de, const MAX: usize> Deserialize<'de> for BoundedJson<MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let count = Cell::new(0);
        Node {
            count: &count,
            max: MAX,
        }
        .deserialize(deserializer)
        .map(BoundedJson)
    }
}

/// One value of a `BoundedJson`, sharing its count.
#[derive(Clone, Copy)]
struct Node<'a> {
    count: &'a Cell<usize>,
    max: usize,
}

impl Node<'_> {
    /// Counts one more item, refusing it past the limit.
    fn counted<E: de::Error>(self) -> Result<Self, E> {
        let n = self.count.get() + 1;
        if n > self.max {
            return Err(past_the_limit(format_args!(
                "at most {} items in all, nested ones included",
                self.max
            )));
        }
        self.count.set(n);
        Ok(self)
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Item(self))? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries = Map::new();
        while let Some(name) = map.next_key::<String>()? {
            let value = map.next_value_seed(Item(self))?;
            entries.insert(name, value);
        }
        Ok(Value::Object(entries))
    }
}

/// An item of an array or object: counted before it is read.
struct Item<'a>(Node<'a>);

impl<'de> DeserializeSeed<'de> for Item<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.0.counted()?.deserialize(deserializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, String> {
        let mut de = serde_json::Deserializer::from_str(json);
        serde_path_to_error::deserialize(&mut de)
            .map_err(|e| format!("{} at {}", e.inner(), e.path()))
    }

    #[test]
    fn a_list_takes_its_maximum_and_refuses_the_next_item_by_its_index() {
        let ok: Bounded<u8, 3> = parse("[1, 2, 3]").unwrap();
        assert_eq!(*ok, vec![1, 2, 3]);
        let error = parse::<Bounded<u8, 3>>("[1, 2, 3, 4, 5]").unwrap_err();
        assert!(error.starts_with(PAST_THE_LIMIT), "{error}");
        assert!(error.ends_with("at [3]"), "{error}");
        // The item past the limit is not read: even a malformed one is
        // refused for its place, not its text.
        let error = parse::<Bounded<u8, 3>>("[1, 2, 3, x").unwrap_err();
        assert!(error.starts_with(PAST_THE_LIMIT), "{error}");
    }

    #[test]
    fn a_map_counts_repeated_names() {
        let ok: BoundedMap<2> = parse(r#"{"a": "1", "b": "secret"}"#).unwrap();
        assert!(!format!("{ok:?}").contains("secret"));
        assert_eq!(ok.into_map().len(), 2);
        let error = parse::<BoundedMap<2>>(r#"{"a": "1", "a": "2", "a": "3"}"#).unwrap_err();
        assert!(error.starts_with(PAST_THE_LIMIT), "{error}");
    }

    #[test]
    fn json_counts_the_items_of_nested_arrays_and_objects_together() {
        let ok: BoundedJson<5> = parse(r#"["a", [1, {"b": null}]]"#).unwrap();
        assert_eq!(ok.0, serde_json::json!(["a", [1, {"b": null}]]));
        let error = parse::<BoundedJson<4>>(r#"[[1, 2], [3]]"#).unwrap_err();
        assert!(error.starts_with(PAST_THE_LIMIT), "{error}");
        assert!(error.ends_with("at [1][0]"), "{error}");
        let scalar: BoundedJson<0> = parse(r#""alipay""#).unwrap();
        assert_eq!(scalar.0, serde_json::json!("alipay"));
    }
}
