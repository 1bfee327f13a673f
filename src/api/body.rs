//! How a stored body is shown: JSON content as `payload` (the stored bytes,
//! not re-serialised), anything else as `body` text.

use serde_json::value::RawValue;

use crate::domain::json_value::is_json_content_type;

/// `(payload, body)`: exactly one is set.
pub fn shown(content_type: &str, body: Vec<u8>) -> (Option<Box<RawValue>>, Option<String>) {
    match String::from_utf8(body) {
        Ok(text)
            if is_json_content_type(content_type)
                && serde_json::from_str::<&RawValue>(&text).is_ok() =>
        {
            match RawValue::from_string(text) {
                Ok(raw) => (Some(raw), None),
                Err(_) => (None, None),
            }
        }
        Ok(text) => (None, Some(text)),
        Err(e) => (
            None,
            Some(String::from_utf8_lossy(e.as_bytes()).into_owned()),
        ),
    }
}
