//! Extractors that answer bad input in the API's error shape: malformed JSON
//! is a 400, a value of the wrong type or an unknown field a 422 naming the
//! field, a body over the limit a 413; the query and the path are
//! `extract_query.rs`'s.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde_path_to_error::Segment;

use super::error::ApiError;
use crate::domain::bounded::PAST_THE_LIMIT;

#[path = "extract_query.rs"]
mod query;
use crate::domain::problem::{cut, shown, ErrorCode};
pub use query::{query_of, utf8_path, QueryParams};

/// A JSON request body.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        parse_json(&body_bytes(req, state).await?).map(JsonBody)
    }
}

/// A JSON request body whose every field is optional: no body at all (or
/// only JSON's whitespace: space, tab, line feed, carriage return) means
/// `T::default()`. Any other byte is JSON to parse: a form feed, which
/// `u8::is_ascii_whitespace` counts, is malformed JSON (the fuzzer's
/// `\x0c` body once issued a portal link).
pub struct OptionalJsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Default> FromRequest<S> for OptionalJsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = body_bytes(req, state).await?;
        if bytes
            .iter()
            .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            return Ok(OptionalJsonBody(T::default()));
        }
        parse_json(&bytes).map(OptionalJsonBody)
    }
}

/// The body of a route that takes none (a cancel, a retry, a revoke): no
/// body, JSON's whitespace or an empty object (what a client that always
/// sends JSON sends). Anything else is refused as any body is, rather than
/// ignored: `{"dry_run": true}` is not read as a request to act.
pub struct NoBody;

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct NoFields {}

impl<S: Send + Sync> FromRequest<S> for NoBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        OptionalJsonBody::<NoFields>::from_request(req, state)
            .await
            .map(|_| NoBody)
    }
}

/// The request's body, within `api.max_request_bytes`.
async fn body_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    Bytes::from_request(req, state).await.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::TooLarge {
                message: "the request is larger than api.max_request_bytes".into(),
                field: None,
            }
        } else {
            ApiError::malformed(ErrorCode::MalformedBody, None, rejection.body_text())
        }
    })
}

/// Parses JSON, naming the field at fault when a value does not fit.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::malformed(
            ErrorCode::MalformedJson,
            None,
            "the request body is empty; send a JSON object",
        ));
    }
    // Every request body of this API is an object; say so rather than let a
    // top-level array be read as a struct's fields in order.
    if let Some(first) = bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        if matches!(first, b'[' | b'"' | b'0'..=b'9' | b'-' | b't' | b'f' | b'n')
            && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
        {
            return Err(ApiError::Invalid {
                code: ErrorCode::InvalidType,
                message: "the request body must be a JSON object".into(),
                field: None,
            });
        }
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer)
        .map_err(|error| json_error(error, bytes))?;
    deserializer.end().map_err(|e| {
        ApiError::malformed(ErrorCode::MalformedJson, None, format!("invalid JSON: {e}"))
    })?;
    Ok(value)
}

fn json_error(error: serde_path_to_error::Error<serde_json::Error>, bytes: &[u8]) -> ApiError {
    let path = field_of(error.path());
    let inner = error.inner();
    match inner.classify() {
        // A body that skims as JSON but fails where a field is read: serde_json
        // reports a name (an enum's) given as another type, a number say,
        // as a syntax error ("expected value"), and so a value it will not
        // read (a number beyond a float's range, a string that is not
        // UTF-8, half a surrogate pair, nesting past its limit), which
        // skimming passes over. The field is named either way; the
        // message says which.
        serde_json::error::Category::Syntax
            if serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok() =>
        {
            let what = strip_position(&inner.to_string());
            let (code, message) = if what.starts_with("expected") {
                (
                    ErrorCode::InvalidType,
                    "invalid type: this field takes a name (a string), as the API reference lists"
                        .to_string(),
                )
            } else {
                (
                    ErrorCode::InvalidValue,
                    format!("invalid value: {}", quoting_at_most(&what)),
                )
            };
            ApiError::Invalid {
                code,
                message,
                field: Some(path).filter(|f| !f.is_empty() && f != "."),
            }
        }
        serde_json::error::Category::Syntax
        | serde_json::error::Category::Eof
        | serde_json::error::Category::Io => ApiError::malformed(
            ErrorCode::MalformedJson,
            None,
            format!("invalid JSON: {inner}"),
        ),
        serde_json::error::Category::Data => {
            let message = quoting_at_most(&plain_types(&strip_position(&inner.to_string())));
            let (code, field) = if message.starts_with(PAST_THE_LIMIT) {
                (ErrorCode::InvalidValue, path)
            } else if let Some(name) = quoted(&message, "unknown field `") {
                (ErrorCode::UnknownField, join_path(&path, &name))
            } else if let Some(name) = quoted(&message, "missing field `") {
                (ErrorCode::MissingField, join_path(&path, &name))
            } else {
                (ErrorCode::InvalidType, path)
            };
            ApiError::Invalid {
                code,
                message,
                field: Some(field).filter(|f| !f.is_empty() && f != "."),
            }
        }
    }
}

/// The path of the field at fault, as serde_path_to_error writes it
/// (`notifications[3].headers.x-token`), each object key cut as `shown`.
fn field_of(path: &serde_path_to_error::Path) -> String {
    let mut field = String::new();
    for segment in path {
        if !field.is_empty() && !matches!(segment, Segment::Seq { .. }) {
            field.push('.');
        }
        match segment {
            Segment::Seq { index } => field.push_str(&format!("[{index}]")),
            Segment::Map { key } => field.push_str(&shown(key)),
            Segment::Enum { variant } => field.push_str(&shown(variant)),
            Segment::Unknown => field.push('?'),
        }
    }
    field
}

/// Longest message made from a serde error: its own words, the names it
/// expects and one quoted value take a few hundred bytes. A net for any
/// message that quotes a client in a way `quoting_at_most` does not know.
pub(super) const MAX_MESSAGE_BYTES: usize = 1024;

/// A serde error's message with the client's text it quotes (an unknown
/// field or variant, an unexpected string) cut as `shown`: serde quotes
/// all of it, and a 16 MiB string would come back whole.
fn quoting_at_most(message: &str) -> String {
    let bounded = match client_text(message) {
        Some((start, end)) => format!(
            "{}{}{}",
            &message[..start],
            shown(&message[start..end]),
            &message[end..]
        ),
        None => message.to_string(),
    };
    if bounded.len() > MAX_MESSAGE_BYTES {
        format!("{}…", cut(&bounded, MAX_MESSAGE_BYTES))
    } else {
        bounded
    }
}

/// Where the client's text lies in a serde message, as a byte range.
fn client_text(message: &str) -> Option<(usize, usize)> {
    for prefix in ["unknown field `", "unknown variant `"] {
        if message.starts_with(prefix) {
            // The name is not escaped: it ends where serde's own words
            // begin, the last of them being serde's.
            let end = ["`, there are no fields", "`, there are no variants"]
                .iter()
                .find(|tail| message.ends_with(*tail))
                .map(|tail| message.len() - tail.len())
                .or_else(|| message.rfind("`, expected"))
                .unwrap_or(message.len());
            return Some((prefix.len(), end.max(prefix.len())));
        }
    }
    for prefix in ["invalid type: string \"", "invalid value: string \""] {
        if let Some(rest) = message.strip_prefix(prefix) {
            // Written with `{:?}`: a quote inside is escaped.
            let mut escaped = false;
            for (i, c) in rest.char_indices() {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '"' => return Some((prefix.len(), prefix.len() + i)),
                    _ => {}
                }
            }
            return Some((prefix.len(), message.len()));
        }
    }
    None
}

fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// serde's message with Rust's type names (`expected u16`) said as a
/// client reads them (`expected an integer from 0 to 65535`).
fn plain_types(message: &str) -> String {
    const NAMES: [(&str, &str); 9] = [
        ("u8", "an integer from 0 to 255"),
        ("u16", "an integer from 0 to 65535"),
        ("u32", "an integer from 0 to 4294967295"),
        ("u64", "a non-negative integer"),
        ("usize", "a non-negative integer"),
        ("i32", "an integer from -2147483648 to 2147483647"),
        ("i64", "an integer"),
        ("f64", "a number"),
        ("unit", "a name (a string)"),
    ];
    match message.rsplit_once(", expected ") {
        Some((head, expected)) => match NAMES.iter().find(|(name, _)| *name == expected) {
            Some((_, plain)) => format!("{head}, expected {plain}"),
            None => message.to_string(),
        },
        None => message.to_string(),
    }
}

pub(super) fn quoted(message: &str, prefix: &str) -> Option<String> {
    let rest = message.strip_prefix(prefix)?;
    rest.split('`').next().map(str::to_string)
}

fn join_path(path: &str, name: &str) -> String {
    if path.is_empty() || path == "." {
        name.to_string()
    } else {
        // serde_path_to_error reports the path of the struct that failed; for
        // an unknown field that already ends with the field's name.
        if path.ends_with(name) {
            path.to_string()
        } else {
            format!("{path}.{name}")
        }
    }
}

#[cfg(test)]
mod quoting_tests {
    use super::{plain_types, quoting_at_most};

    #[test]
    fn rust_type_names_are_said_as_a_client_reads_them() {
        assert_eq!(
            plain_types("invalid value: integer `99999`, expected u16"),
            "invalid value: integer `99999`, expected an integer from 0 to 65535"
        );
        assert_eq!(
            plain_types("invalid type: floating point `1.5`, expected u64"),
            "invalid type: floating point `1.5`, expected a non-negative integer"
        );
        let other = "invalid type: integer `5`, expected a string";
        assert_eq!(plain_types(other), other);
    }

    #[test]
    fn serde_messages_quote_at_most_128_bytes_of_the_client() {
        let long = "a`\"\\".repeat(1000);
        for message in [
            format!("unknown field `{long}`, expected `url` or `uid`"),
            format!("unknown variant `{long}`, there are no variants"),
            format!("invalid value: string {long:?}, expected a string"),
            format!("invalid type: string {long:?}, expected u16"),
        ] {
            let bounded = quoting_at_most(&message);
            assert!(bounded.len() < 400, "{bounded}");
            assert!(bounded.contains('…'), "{bounded}");
        }
        let bounded = quoting_at_most(&format!("unknown field `{long}`, expected `url` or `uid`"));
        assert!(
            bounded.ends_with("…`, expected `url` or `uid`"),
            "{bounded}"
        );
        // A message whose quoting is not known is cut whole.
        let bounded = quoting_at_most(&format!("something new: {long}"));
        assert!(bounded.len() <= super::MAX_MESSAGE_BYTES + 3, "{bounded}");
        let short = "unknown field `urll`, expected `url` or `uid`";
        assert_eq!(quoting_at_most(short), short);
    }
}

#[cfg(test)]
mod json_error_tests {
    use serde::Deserialize;

    use super::parse_json;
    use crate::api::error::ApiError;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Body {
        kind: Option<Kind>,
        text: Option<String>,
        number: Option<f64>,
        nested: Option<serde_json::Value>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Kind {
        Hmac,
    }

    fn refusal(body: &[u8]) -> (String, String, Option<String>) {
        match parse_json::<Body>(body) {
            Err(ApiError::Invalid {
                code,
                message,
                field,
            }) => (code.as_str().to_string(), message, field),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_value_serde_json_will_not_read_is_named_as_what_it_is_not_as_a_name() {
        let (code, message, field) = refusal(br#"{"kind": 5}"#);
        assert_eq!(code, "invalid_type");
        assert!(message.contains("takes a name"), "{message}");
        assert_eq!(field.as_deref(), Some("kind"));
        for (body, field, says) in [
            (&b"{\"text\": \"a\xff\"}"[..], "text", "unicode"),
            (br#"{"number": 1e999}"#, "number", "number out of range"),
            (br#"{"text": "\ud800"}"#, "text", "hex escape"),
        ] {
            let (code, message, named) = refusal(body);
            assert_eq!(code, "invalid_value", "{message}");
            assert!(message.contains(says), "{message}");
            assert!(!message.contains("takes a name"), "{message}");
            assert!(!message.contains(" at line "), "{message}");
            assert_eq!(named.as_deref(), Some(field), "{message}");
        }
        let deep = format!("{{\"nested\": {}{}}}", "[".repeat(200), "]".repeat(200));
        let (code, message, _) = refusal(deep.as_bytes());
        assert_eq!(code, "invalid_value", "{message}");
        assert!(message.contains("recursion limit"), "{message}");
    }
}
