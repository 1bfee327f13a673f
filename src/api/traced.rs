//! The trace context of a create (`POST /v1/notifications`, `/v1/events`
//! and their batches): what the producer sent in `traceparent` and
//! `tracestate`, what the notifications keep, and the create's span
//! (`telemetry::spans`).

use std::convert::Infallible;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};

use super::error::ApiError;
use super::AppState;
use crate::telemetry::trace_context::TraceContext;

/// The trace headers a create takes, for the OpenAPI document.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)]
pub struct TraceHeaders {
    /// W3C Trace Context (`00-<32 hex trace id>-<16 hex parent id>-<2 hex
    /// flags>`): kept with what is created, as one of its headers, and
    /// sent on each delivery. A malformed one is ignored, as the
    /// recommendation says, not refused.
    #[param(rename = "traceparent")]
    traceparent: Option<String>,
    /// Kept and sent with `traceparent` (at most 512 bytes).
    #[param(rename = "tracestate")]
    tracestate: Option<String>,
}

/// A create's trace: read before its body, ended with its answer.
pub struct Traced {
    given: Option<TraceContext>,
    /// What the created notifications (or events) keep and forward.
    pub kept: Option<TraceContext>,
    /// When the create began; read only when spans are exported.
    start: Option<DateTime<Utc>>,
}

impl FromRequestParts<AppState> for Traced {
    type Rejection = Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let given = TraceContext::from_headers(&parts.headers);
        let kept = state.spans.create_context(given.as_ref());
        Ok(Self {
            given,
            kept,
            start: state.spans.on().then(|| state.service.now()),
        })
    }
}

impl Traced {
    /// Records the create's span (when spans are exported and the trace
    /// is sampled): `route` as its name, the answer's status, and how many
    /// were created.
    pub fn end<T>(
        &self,
        state: &AppState,
        route: &'static str,
        answer: &Result<T, ApiError>,
        created: impl FnOnce(&T) -> (StatusCode, usize),
    ) {
        let Some(start) = self.start else {
            return;
        };
        let (status, count) = match answer {
            Ok(answer) => created(answer),
            Err(error) => (error.status(), 0),
        };
        state.spans.record_create(
            self.given.as_ref(),
            self.kept.as_ref(),
            route,
            (start, state.service.now()),
            (status.as_u16(), count),
        );
    }
}
