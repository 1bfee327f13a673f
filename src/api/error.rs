//! The API's one error type and its JSON shape:
//! `{"error": {"code": "...", "message": "...", "field": "..."}}`.
//! Internal errors are logged with their cause and answered with a bare 500.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::due::DueError;
use crate::store::StoreError;

#[derive(Debug)]
pub enum ApiError {
    /// 400: the request cannot be parsed.
    Malformed {
        code: &'static str,
        message: String,
        field: Option<String>,
    },
    /// 401: no bearer token, or not one of `api.tokens`.
    Unauthorized,
    /// 403: the token lacks the route's scope, or (with no tokens) the
    /// request did not come from this machine's own tools.
    Forbidden(String),
    /// 404: no such resource (or route).
    NotFound(&'static str),
    /// 405: the route exists, not with this method.
    MethodNotAllowed,
    /// 408: the request (body included) took longer than
    /// `server.request_timeout_ms`.
    RequestTimeout,
    /// 409: the request conflicts with existing state.
    Conflict { code: &'static str, message: String },
    /// 413: body or request over the configured limit.
    TooLarge {
        message: String,
        field: Option<String>,
    },
    /// 422: well-formed, but a value is invalid.
    Invalid {
        code: &'static str,
        message: String,
        field: Option<String>,
    },
    /// 415: with no tokens configured, a write must be `application/json`.
    UnsupportedMediaType,
    /// 503: a backing store is unreachable; retry later.
    Unavailable(&'static str),
    /// 500: a bug or an unexpected store error; details are in the log.
    Internal,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct ErrorDetail {
    /// Stable, snake_case: what clients branch on.
    pub code: String,
    /// For people.
    pub message: String,
    /// The request field at fault, when there is one (`schedule[2]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl ApiError {
    pub fn invalid(
        code: &'static str,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ApiError::Invalid {
            code,
            message: message.into(),
            field: Some(field.into()),
        }
    }

    pub fn malformed(
        code: &'static str,
        field: Option<String>,
        message: impl Into<String>,
    ) -> Self {
        ApiError::Malformed {
            code,
            message: message.into(),
            field,
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Malformed { .. } => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ApiError::Conflict { .. } => StatusCode::CONFLICT,
            ApiError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn body(&self) -> ErrorBody {
        let (code, message, field) = match self {
            ApiError::Malformed {
                code,
                message,
                field,
            }
            | ApiError::Invalid {
                code,
                message,
                field,
            } => ((*code).to_string(), message.clone(), field.clone()),
            ApiError::Unauthorized => (
                "unauthorized".into(),
                "send `Authorization: Bearer <token>` with one of the configured api.tokens".into(),
                None,
            ),
            ApiError::Forbidden(message) => ("forbidden".into(), message.clone(), None),
            ApiError::UnsupportedMediaType => (
                "unsupported_media_type".into(),
                "send the request with `content-type: application/json`".into(),
                None,
            ),
            ApiError::NotFound(what) => ("not_found".into(), format!("{what} not found"), None),
            ApiError::MethodNotAllowed => (
                "method_not_allowed".into(),
                "this route does not accept that method".into(),
                None,
            ),
            ApiError::RequestTimeout => (
                "request_timeout".into(),
                "the request took longer than server.request_timeout_ms; send it again".into(),
                None,
            ),
            ApiError::Conflict { code, message } => ((*code).to_string(), message.clone(), None),
            ApiError::TooLarge { message, field } => {
                ("too_large".into(), message.clone(), field.clone())
            }
            ApiError::Unavailable(store) => (
                "unavailable".into(),
                format!("{store} is unavailable; retry later"),
                None,
            ),
            ApiError::Internal => (
                "internal".into(),
                "internal error; see hookd's log".into(),
                None,
            ),
        };
        ErrorBody {
            error: ErrorDetail {
                code,
                message,
                field,
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut response = (status, axum::Json(self.body())).into_response();
        match self {
            ApiError::Unauthorized => {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            ApiError::Unavailable(_) => {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            _ => {}
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        ApiError::from(&error)
    }
}

impl From<&StoreError> for ApiError {
    fn from(error: &StoreError) -> Self {
        match error {
            StoreError::Unavailable(cause) => {
                tracing::warn!(error = %cause, "database unavailable");
                ApiError::Unavailable("the database")
            }
            StoreError::Conflict(constraint) => ApiError::Conflict {
                code: "conflict",
                message: format!("conflicts with an existing resource ({constraint})"),
            },
            StoreError::InvalidValue(cause) => {
                tracing::debug!(error = %cause, "value refused by the database");
                ApiError::Invalid {
                    code: "invalid_value",
                    message: "a value holds characters that cannot be stored (such as a NUL byte)"
                        .into(),
                    field: None,
                }
            }
            StoreError::Database(cause) => {
                tracing::error!(error = %cause, "database error");
                ApiError::Internal
            }
            StoreError::Sealed { .. } => {
                tracing::error!(%error, "cannot open a value sealed at rest; check secrets.keys");
                ApiError::Internal
            }
        }
    }
}

impl From<DueError> for ApiError {
    fn from(error: DueError) -> Self {
        tracing::warn!(%error, "redis unavailable");
        ApiError::Unavailable("redis")
    }
}
