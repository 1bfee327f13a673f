//! An endpoint's payload filter as the API takes it (`"filter"`, and
//! `"success_filter"` over a receiver's answer): its JSON text read for
//! what serde_json would hide (a key named twice), then parsed by
//! `domain::payload_filter`, each problem named by field.

use serde_json::value::RawValue;

use crate::domain::json_keys::{unreadable, Unreadable};
use crate::domain::payload_filter::PayloadFilter;
use crate::domain::problem::{shown, ErrorCode, Problem};

/// A filter from its JSON text, the request's `field`. A key one object of it
/// names twice is refused: serde_json would keep the last one's condition
/// and drop the other without a word (`{"amount": {"$gte": 100}, "amount":
/// {"$lt": 500}}` would let 5 through).
pub(super) fn filter_of(text: &RawValue, field: &str) -> Result<PayloadFilter, Problem> {
    if let Some(Unreadable::RepeatedKey(key)) = unreadable(text.get().as_bytes()) {
        return Err(Problem::invalid(
            ErrorCode::InvalidFilter,
            field,
            format!(
                "the {field} names `{}` twice in one object: give each condition once (several on one field go in one object, `{{\"$gte\": 100, \"$lt\": 500}}`, or in `$and`)",
                shown(&key)
            ),
        ));
    }
    // A value serde_json will not read (a number beyond a float's range)
    // is named by its path, as the body's other fields are.
    let mut json = serde_json::Deserializer::from_str(text.get());
    let value: serde_json::Value = serde_path_to_error::deserialize(&mut json).map_err(|e| {
        let path = e.path().to_string();
        let field = match path.as_str() {
            "" | "." => field.to_string(),
            path => format!("{field}.{}", shown(path)),
        };
        let what = e.inner().to_string();
        let what = what.split(" at line ").next().unwrap_or_default();
        Problem::invalid(
            ErrorCode::InvalidValue,
            field,
            format!("invalid value: {}", shown(what)),
        )
    })?;
    PayloadFilter::parse(value).map_err(|problem| {
        Problem::invalid(
            ErrorCode::InvalidFilter,
            problem.field_in(field),
            problem.message,
        )
    })
}
