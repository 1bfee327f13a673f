//! Why a request is refused, as data: the stable error codes clients branch
//! on, and the `Problem` the write path returns for input it will not take.
//! No HTTP here: `api::error` maps each kind to its status.

use std::borrow::Cow;
use std::fmt;

/// Every error code the API answers with, in one place, so a code cannot be
/// misspelt in one handler and documented differently in another. Serialised
/// as snake_case; codes are part of the API contract: add, never rename.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    // 400: the request cannot be parsed.
    MalformedJson,
    MalformedBody,
    InvalidQuery,
    InvalidCursor,
    InvalidPath,
    // 401, 403, 404, 405, 408, 415
    Unauthorized,
    Forbidden,
    NotFound,
    MethodNotAllowed,
    RequestTimeout,
    UnsupportedMediaType,
    // 409: conflicts with stored state.
    Conflict,
    KeyConflict,
    UidTaken,
    NotPending,
    NotRetryable,
    LeaseLost,
    InFlight,
    NotPull,
    EndpointDisabled,
    CircuitOpen,
    Ordering,
    OperationRunning,
    PortalDisabled,
    // 413
    TooLarge,
    // 429
    TooManyRequests,
    // 422: well-formed, but a value is not acceptable.
    InvalidValue,
    InvalidType,
    UnknownField,
    MissingField,
    ConflictingFields,
    InvalidUrl,
    InvalidSecret,
    InvalidSchedule,
    InvalidHeader,
    InvalidPattern,
    InvalidFilter,
    UnknownEndpoint,
    OwnerMismatch,
    EventTypeNotSubscribed,
    InvalidReceipt,
    ReceiptMismatch,
    // 5xx
    Unavailable,
    Internal,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::MalformedJson => "malformed_json",
            ErrorCode::MalformedBody => "malformed_body",
            ErrorCode::InvalidQuery => "invalid_query",
            ErrorCode::InvalidCursor => "invalid_cursor",
            ErrorCode::InvalidPath => "invalid_path",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::NotFound => "not_found",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::RequestTimeout => "request_timeout",
            ErrorCode::UnsupportedMediaType => "unsupported_media_type",
            ErrorCode::Conflict => "conflict",
            ErrorCode::KeyConflict => "key_conflict",
            ErrorCode::UidTaken => "uid_taken",
            ErrorCode::NotPending => "not_pending",
            ErrorCode::NotRetryable => "not_retryable",
            ErrorCode::LeaseLost => "lease_lost",
            ErrorCode::InFlight => "in_flight",
            ErrorCode::NotPull => "not_pull",
            ErrorCode::EndpointDisabled => "endpoint_disabled",
            ErrorCode::CircuitOpen => "circuit_open",
            ErrorCode::Ordering => "ordering",
            ErrorCode::OperationRunning => "operation_running",
            ErrorCode::PortalDisabled => "portal_disabled",
            ErrorCode::TooLarge => "too_large",
            ErrorCode::TooManyRequests => "too_many_requests",
            ErrorCode::InvalidValue => "invalid_value",
            ErrorCode::InvalidType => "invalid_type",
            ErrorCode::UnknownField => "unknown_field",
            ErrorCode::MissingField => "missing_field",
            ErrorCode::ConflictingFields => "conflicting_fields",
            ErrorCode::InvalidUrl => "invalid_url",
            ErrorCode::InvalidSecret => "invalid_secret",
            ErrorCode::InvalidSchedule => "invalid_schedule",
            ErrorCode::InvalidHeader => "invalid_header",
            ErrorCode::InvalidPattern => "invalid_pattern",
            ErrorCode::InvalidFilter => "invalid_filter",
            ErrorCode::UnknownEndpoint => "unknown_endpoint",
            ErrorCode::OwnerMismatch => "owner_mismatch",
            ErrorCode::EventTypeNotSubscribed => "event_type_not_subscribed",
            ErrorCode::InvalidReceipt => "invalid_receipt",
            ErrorCode::ReceiptMismatch => "receipt_mismatch",
            ErrorCode::Unavailable => "unavailable",
            ErrorCode::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of refusal a problem is; the API maps each to one status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A value is not acceptable (422).
    Invalid,
    /// A value is over a size limit (413).
    TooLarge,
    /// The input conflicts with what is stored (409).
    Conflict,
    /// What the input names does not exist (404).
    NotFound,
    /// The caller may not act on what the input names (403): a consumer
    /// token used for another endpoint.
    Forbidden,
}

/// Input the write path refuses: what kind, the code, the field at fault
/// (`endpoints[3]`, `headers.x-token`) and a message for people. Messages
/// quote at most 128 bytes of a client's value (`shown`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub kind: Kind,
    pub code: ErrorCode,
    pub field: Option<String>,
    pub message: String,
}

impl Problem {
    pub fn invalid(code: ErrorCode, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: Kind::Invalid,
            code,
            field: Some(field.into()),
            message: message.into(),
        }
    }

    pub fn too_large(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: Kind::TooLarge,
            code: ErrorCode::TooLarge,
            field: Some(field.into()),
            message: message.into(),
        }
    }

    pub fn conflict(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            kind: Kind::Conflict,
            code,
            field: None,
            message: message.into(),
        }
    }

    /// `what` names the resource: `notification`, `event`, `endpoint`.
    pub fn not_found(what: &str) -> Self {
        Self {
            kind: Kind::NotFound,
            code: ErrorCode::NotFound,
            field: None,
            message: format!("{what} not found"),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for Problem {}

impl Problem {
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self {
            kind: Kind::Forbidden,
            code: ErrorCode::Forbidden,
            field: None,
            message: message.into(),
        }
    }
}

/// Most bytes of a client's value an error message quotes (DESIGN §14):
/// an answer never grows with what it was sent.
pub const QUOTED_BYTES: usize = 128;

/// A client's value as a message quotes it: at most `QUOTED_BYTES`, cut on
/// a character boundary, with `…` where it was cut.
pub fn shown(text: &str) -> Cow<'_, str> {
    let quoted = cut(text, QUOTED_BYTES);
    if quoted.len() == text.len() {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(format!("{quoted}…"))
    }
}

/// At most `max` bytes of `text`, cut on a character boundary: what a
/// client's text may take of a message, a log line or a stored field.
pub fn cut(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_value_is_cut_on_a_character_boundary() {
        let long = "é".repeat(100);
        let quoted = shown(&long);
        let quoted = quoted.strip_suffix('…').unwrap();
        assert_eq!(quoted.len(), 128);
        assert!(quoted.chars().all(|c| c == 'é'));
        assert_eq!(shown("abc"), "abc");
        assert_eq!(shown(&"x".repeat(128)), "x".repeat(128));
    }
}
