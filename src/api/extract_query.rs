//! The query and the path in the API's error shape: query parameters a
//! route does not take, or gives twice, named in a 422; a query or a path
//! that is not UTF-8 once percent-decoded, a 400.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::{quoted, MAX_MESSAGE_BYTES};
use crate::api::error::ApiError;
use crate::domain::problem::{cut, shown, ErrorCode};

/// Query parameters, parsed leniently as strings by the handler.
pub struct QueryParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        query_of(parts.uri.query().unwrap_or_default()).map(QueryParams)
    }
}

/// A query string read into a route's parameters, as `QueryParams` reads
/// it: for a handler that is not an extractor's (a portal link's answer).
pub fn query_of<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    // serde_urlencoded decodes what is not UTF-8 lossily (`%FF` as
    // U+FFFD), which then matches what the client did not send.
    if std::str::from_utf8(&percent_decoded(query)).is_err() {
        return Err(ApiError::malformed(
            ErrorCode::InvalidQuery,
            None,
            "the query string is not UTF-8 once percent-decoded",
        ));
    }
    serde_urlencoded::from_str(query).map_err(|e| query_error(&e.to_string()))
}

/// A query the parameters' struct (`deny_unknown_fields`) refused: a name
/// it does not take, or one given twice, is 422 naming it, as a body's
/// unknown field is (a misspelt filter would otherwise list everything);
/// anything else is a malformed query.
fn query_error(message: &str) -> ApiError {
    if let Some(name) = quoted(message, "unknown field `") {
        let takes = message
            .split_once("expected ")
            .map(|(_, names)| names.replace("one of ", "").replace('`', ""))
            .unwrap_or_default();
        let message = if takes.is_empty() {
            "this route takes no query parameters".to_string()
        } else {
            format!("unknown query parameter; this route takes {takes}")
        };
        return ApiError::invalid(ErrorCode::UnknownField, shown(&name), message);
    }
    if let Some(name) = quoted(message, "duplicate field `") {
        return ApiError::invalid(
            ErrorCode::InvalidValue,
            shown(&name),
            "give each parameter once",
        );
    }
    ApiError::malformed(
        ErrorCode::InvalidQuery,
        None,
        cut(
            &format!("invalid query string: {message}"),
            MAX_MESSAGE_BYTES,
        ),
    )
}

/// Answers 400 in the API's error shape when the path, percent-decoded, is
/// not UTF-8 (`GET /v1/notifications/%FF`): axum's `Path` extractor would
/// refuse it in plain text. Checked before routing, once for every route.
pub async fn utf8_path(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if std::str::from_utf8(&percent_decoded(request.uri().path())).is_err() {
        return axum::response::IntoResponse::into_response(ApiError::malformed(
            ErrorCode::InvalidPath,
            None,
            "the path is not UTF-8 once percent-decoded",
        ));
    }
    next.run(request).await
}

/// `%XX` escapes as their bytes; anything else (a `%` without two hex
/// digits too) as it is, as axum decodes.
fn percent_decoded(path: &str) -> Vec<u8> {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).and_then(|b| hex(*b)),
            bytes.get(i + 2).and_then(|b| hex(*b)),
        ) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod query_tests {
    use serde::Deserialize;

    use super::query_error;
    use crate::api::error::ApiError;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Params {
        status: Option<String>,
        limit: Option<String>,
    }

    fn refused(query: &str) -> ApiError {
        query_error(
            &serde_urlencoded::from_str::<Params>(query)
                .unwrap_err()
                .to_string(),
        )
    }

    #[test]
    fn a_misspelt_parameter_is_named_with_those_the_route_takes() {
        let ApiError::Invalid { field, message, .. } = refused("stauts=failed") else {
            panic!("not a 422")
        };
        assert_eq!(field.as_deref(), Some("stauts"));
        assert_eq!(
            message,
            "unknown query parameter; this route takes status or limit"
        );
    }

    #[test]
    fn a_parameter_given_twice_is_named() {
        let ApiError::Invalid { field, message, .. } = refused("status=failed&status=pending")
        else {
            panic!("not a 422")
        };
        assert_eq!(field.as_deref(), Some("status"));
        assert_eq!(message, "give each parameter once");
    }
}

#[cfg(test)]
mod path_tests {
    use super::percent_decoded;

    #[test]
    fn escapes_decode_to_their_bytes_and_a_lone_percent_stays() {
        assert_eq!(percent_decoded("/a%20b%FF%e9"), b"/a b\xff\xe9");
        assert_eq!(percent_decoded("/100%"), b"/100%");
        assert_eq!(percent_decoded("/%zz%4"), b"/%zz%4");
    }
}
