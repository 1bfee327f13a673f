//! The API's one error type and its JSON shape:
//! `{"error": {"code": "...", "message": "...", "field": "..."}}`.
//! Codes come from one enum (`domain::problem::ErrorCode`). Internal errors
//! keep their source and are logged once, here at the edge, when the
//! response is made; the client gets a bare 500.

use std::sync::Arc;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::domain::problem::{ErrorCode, Kind, Problem};
use crate::due::DueError;
use crate::service::ServiceError;
use crate::store::StoreError;

/// The cause of a 500 or 503, kept for the log.
pub type Source = Arc<dyn std::error::Error + Send + Sync>;

#[derive(Debug)]
pub enum ApiError {
    /// 400: the request cannot be parsed.
    Malformed {
        code: ErrorCode,
        message: String,
        field: Option<String>,
    },
    /// 401: no bearer token, or not one of `api.tokens`.
    Unauthorized,
    /// 401: a portal link that no longer works (expired, revoked, altered,
    /// or what it shows is gone), told to its holder, a merchant, in
    /// words about links rather than `api.tokens`.
    PortalRefused,
    /// 401: a consumer token (`hkc_`) that does not work, told in words
    /// about consumer tokens (an open hookd has no `api.tokens` at all).
    ConsumerRefused,
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
    Conflict { code: ErrorCode, message: String },
    /// 413: body or request over the configured limit.
    TooLarge {
        message: String,
        field: Option<String>,
    },
    /// 422: well-formed, but a value is invalid.
    Invalid {
        code: ErrorCode,
        message: String,
        field: Option<String>,
    },
    /// 404, 409, 413 or 422, as the write path decided.
    Rejected(Problem),
    /// 429: the caller has `api.max_concurrent_per_credential` requests
    /// under way already (`api::concurrency`).
    TooManyRequests,
    /// 415: with no tokens configured, a write must be `application/json`.
    UnsupportedMediaType,
    /// 503: a backing store is unreachable; retry later.
    Unavailable { what: &'static str, source: Source },
    /// 500: a bug or an unexpected store error; the source goes to the log.
    Internal(Option<Source>),
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
    pub fn invalid(code: ErrorCode, field: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::Invalid {
            code,
            message: message.into(),
            field: Some(field.into()),
        }
    }

    pub fn malformed(code: ErrorCode, field: Option<String>, message: impl Into<String>) -> Self {
        ApiError::Malformed {
            code,
            message: message.into(),
            field,
        }
    }

    /// A 500 that logs `source` when it is answered.
    pub fn internal(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        ApiError::Internal(Some(Arc::new(source)))
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Malformed { .. } => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized | ApiError::PortalRefused | ApiError::ConsumerRefused => {
                StatusCode::UNAUTHORIZED
            }
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ApiError::Conflict { .. } => StatusCode::CONFLICT,
            ApiError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Rejected(problem) => match problem.kind {
                Kind::Invalid => StatusCode::UNPROCESSABLE_ENTITY,
                Kind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
                Kind::Conflict => StatusCode::CONFLICT,
                Kind::NotFound => StatusCode::NOT_FOUND,
                Kind::Forbidden => StatusCode::FORBIDDEN,
            },
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
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
            } => (*code, message.clone(), field.clone()),
            ApiError::Rejected(problem) => {
                (problem.code, problem.message.clone(), problem.field.clone())
            }
            ApiError::PortalRefused => (
                ErrorCode::Unauthorized,
                "this portal link no longer works (it expired or was withdrawn): ask whoever sent it for a new one".into(),
                None,
            ),
            ApiError::ConsumerRefused => (
                ErrorCode::Unauthorized,
                "this consumer token does not work: a newer one replaced it, or its endpoint was deleted or switched to push; or it was issued a moment ago through another hookd process, which every process knows within a second or two (try again then). Otherwise ask the endpoint's owner for a new one".into(),
                None,
            ),
            ApiError::Unauthorized => (
                ErrorCode::Unauthorized,
                "send `Authorization: Bearer <token>` with one of the configured api.tokens".into(),
                None,
            ),
            ApiError::Forbidden(message) => (ErrorCode::Forbidden, message.clone(), None),
            ApiError::TooManyRequests => (
                ErrorCode::TooManyRequests,
                "this credential has api.max_concurrent_per_credential requests under way; retry after the Retry-After seconds".into(),
                None,
            ),
            ApiError::UnsupportedMediaType => (
                ErrorCode::UnsupportedMediaType,
                "send the request with `content-type: application/json`".into(),
                None,
            ),
            ApiError::NotFound(what) => (ErrorCode::NotFound, format!("{what} not found"), None),
            ApiError::MethodNotAllowed => (
                ErrorCode::MethodNotAllowed,
                "this route does not accept that method".into(),
                None,
            ),
            ApiError::RequestTimeout => (
                ErrorCode::RequestTimeout,
                "the request took longer than server.request_timeout_ms; send it again".into(),
                None,
            ),
            ApiError::Conflict { code, message } => (*code, message.clone(), None),
            ApiError::TooLarge { message, field } => {
                (ErrorCode::TooLarge, message.clone(), field.clone())
            }
            ApiError::Unavailable { what, .. } => (
                ErrorCode::Unavailable,
                format!("{what} is unavailable; retry later"),
                None,
            ),
            ApiError::Internal(_) => (
                ErrorCode::Internal,
                "internal error; see hookd's log".into(),
                None,
            ),
        };
        ErrorBody {
            error: ErrorDetail {
                code: code.as_str().to_string(),
                message,
                field,
            },
        }
    }

    /// Logs what the client is not told: the cause of a 500 or a 503.
    fn log(&self) {
        match self {
            ApiError::Internal(Some(source)) => {
                tracing::error!(error = %source, "internal error");
            }
            ApiError::Internal(None) => tracing::error!("internal error"),
            ApiError::Unavailable { what, source } => {
                tracing::warn!(error = %source, "{what} unavailable");
            }
            _ => {}
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        self.log();
        let status = self.status();
        let mut response = (status, axum::Json(self.body())).into_response();
        match self {
            ApiError::Unauthorized | ApiError::PortalRefused | ApiError::ConsumerRefused => {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            ApiError::Unavailable { .. } | ApiError::TooManyRequests => {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            _ => {}
        }
        response
    }
}

impl From<Problem> for ApiError {
    fn from(problem: Problem) -> Self {
        ApiError::Rejected(problem)
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        ApiError::from(Arc::new(error))
    }
}

/// A store error, possibly shared by every request of one group commit.
impl From<Arc<StoreError>> for ApiError {
    fn from(error: Arc<StoreError>) -> Self {
        match &*error {
            StoreError::Unavailable(_) => ApiError::Unavailable {
                what: "the database",
                source: error,
            },
            StoreError::Conflict(constraint) => ApiError::Conflict {
                code: ErrorCode::Conflict,
                message: format!("conflicts with an existing resource ({constraint})"),
            },
            StoreError::InvalidValue(_) => ApiError::Invalid {
                code: ErrorCode::InvalidValue,
                message: "a value cannot be stored: it holds characters the database refuses (such as a NUL byte) or is out of the range it keeps"
                    .into(),
                field: None,
            },
            StoreError::Database(_) | StoreError::Sealed { .. } => ApiError::Internal(Some(error)),
        }
    }
}

impl From<DueError> for ApiError {
    fn from(error: DueError) -> Self {
        ApiError::Unavailable {
            what: "redis",
            source: Arc::new(error),
        }
    }
}

impl From<ServiceError> for ApiError {
    fn from(error: ServiceError) -> Self {
        match error {
            ServiceError::Rejected(problem) => ApiError::Rejected(problem),
            ServiceError::Store(error) => ApiError::from(error),
            ServiceError::Lost => ApiError::Internal(None),
            error @ ServiceError::IndexUnavailable(_) => ApiError::Unavailable {
                what: "redis",
                source: Arc::new(error),
            },
        }
    }
}
