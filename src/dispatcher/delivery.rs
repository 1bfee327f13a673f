//! One attempt for one claimed notification: build the signed request from
//! the row and its endpoint, send it, decide the outcome and what it makes
//! of the notification (and, when it ends failed, its operator event).

use std::time::Duration;

use bytes::Bytes;
use chrono::{DateTime, Utc};

use crate::domain::jitter::Jitter;
use crate::domain::operator_event::{FailedNotification, OperatorEvent};
use crate::domain::outcome::{decide, Policy};
use crate::domain::secret::SigningSecret;
use crate::domain::status::{after_attempt, expected, keeping, Status};
use crate::domain::success::SuccessRule;
use crate::sender::{AttemptError, AttemptResult, Delivery, Sender, Target};
use crate::store::delivery::{DeliveryEndpoint, DueNotification};
use crate::store::recording::AttemptRecord;
use crate::telemetry::spans::{Span, SpanKind, Spans};
use crate::telemetry::trace_context::{new_span_id, TraceContext};

/// An endpoint prepared once per claimed batch and shared by the batch's
/// deliveries to it.
#[derive(Debug)]
pub struct Plan {
    pub target: Target,
    pub success: SuccessRule,
    pub permanent_statuses: Vec<i32>,
    /// Scales each wait of the schedule (`domain::jitter`).
    pub jitter: Jitter,
    /// The endpoint's circuit breaker settings (`dispatcher::breaker`).
    pub breaker: crate::domain::breaker::Override,
    /// The endpoint's own cap on concurrent deliveries, if it sets one.
    pub max_in_flight: Option<u32>,
    /// The endpoint's own rate limit, if it sets one (`throttle`).
    pub rate_limit: Option<crate::domain::rate::RateLimit>,
    /// The endpoint's own `fresh_share` (lanes of its rate limit), if it
    /// sets one.
    pub fresh_share: Option<f64>,
    /// The endpoint's uid, if it has one (for attempts' spans).
    pub uid: Option<String>,
    pub disabled: bool,
    pub deleted: bool,
    /// The endpoint is pull: nothing is POSTed; its consumers take them.
    pub pull: bool,
    /// The endpoint's secret or headers did not open: every attempt fails
    /// with this instead of being sent.
    pub unreadable: Option<AttemptError>,
}

impl Plan {
    /// An endpoint's `timeout_ms` is cut to `max_timeout`: it was checked
    /// against the lease of the process that stored it, and this process's
    /// lease may be shorter (a changed `dispatcher.lease_ms`, or roles run
    /// apart). An attempt longer than its lease would be claimed again and
    /// sent a second time while it still runs.
    pub fn new(
        endpoint: DeliveryEndpoint,
        now: DateTime<Utc>,
        default_timeout: Duration,
        max_timeout: Duration,
    ) -> Self {
        let timeout = endpoint
            .timeout_ms
            .map(|ms| Duration::from_millis(ms.max(1) as u64))
            .unwrap_or(default_timeout)
            .min(max_timeout);
        Self {
            target: Target::new(
                &endpoint.url,
                &endpoint.headers,
                signing_secrets(&endpoint, now),
                timeout,
            ),
            success: SuccessRule {
                body: endpoint.success_body,
                filter: endpoint.success_filter,
            },
            permanent_statuses: endpoint.permanent_statuses,
            jitter: Jitter::stored(endpoint.schedule_jitter),
            breaker: endpoint.breaker,
            max_in_flight: endpoint.max_in_flight.map(|m| m.max(1) as u32),
            rate_limit: crate::domain::rate::RateLimit::stored(
                endpoint.rate_limit_per_second,
                endpoint.rate_limit_burst,
            ),
            fresh_share: endpoint.fresh_share,
            uid: endpoint.uid,
            disabled: endpoint.disabled,
            deleted: endpoint.deleted,
            pull: endpoint.pull,
            unreadable: endpoint
                .unreadable
                .map(|error| sealed_error("the endpoint's signing secret or headers", &error)),
        }
    }
}

/// The attempt error for a value that does not open: the operator must put
/// its key back in `secrets.keys` (or set the value again).
fn sealed_error(what: &str, error: &crate::domain::sealed::SealError) -> AttemptError {
    AttemptError {
        code: "sealed_secret",
        message: format!("cannot decrypt {what}: {error}"),
    }
}

/// Makes the attempt and returns what to record. The notification's body
/// moves into the request; nothing reads it after. `operator`: whether a
/// notification that ends failed is reported to the operator webhook.
pub async fn attempt(
    sender: &Sender,
    plan: &Plan,
    row: &mut DueNotification,
    operator: bool,
) -> AttemptRecord {
    let number = row.attempts + 1;
    let tells_of_endpoint = plan.target.tells_of_endpoint(row.url.as_deref());
    // A sampled trace kept with the notification gets this attempt's span,
    // which the receiver sees as its parent.
    let trace = traced(sender.spans(), &row.headers);
    let traceparent = trace
        .as_ref()
        .map(|(kept, span)| kept.child(*span).traceparent());
    let delivery = Delivery {
        id: row.id,
        target: &plan.target,
        body: Bytes::from(std::mem::take(&mut row.body)),
        content_type: &row.content_type,
        event_type: row.event_type.as_deref(),
        attempt: number as u32,
        headers: &row.headers,
        event_id: row.event_id,
        sequence: row.sequence,
        url: row.url.as_deref(),
        traceparent: traceparent.as_deref(),
    };
    let unreadable = plan.unreadable.clone().or_else(|| {
        row.unreadable
            .as_ref()
            .map(|error| sealed_error("the notification's custom headers", error))
    });
    let mut result = match unreadable {
        Some(error) => AttemptResult {
            started_at: sender.now(),
            duration: Duration::ZERO,
            answer: None,
            error: Some(error),
            kept: Default::default(),
        },
        None => sender.send(delivery).await,
    };
    let schedule = row.schedule();
    let policy = Policy {
        success: &plan.success,
        permanent_statuses: &plan.permanent_statuses,
        schedule: &schedule,
        wait_factor: plan.jitter.draw(),
    };
    let attempt_in_series = (number - row.series_start).max(1) as u32;
    let finished_at =
        result.started_at + chrono::Duration::from_std(result.duration).unwrap_or_default();
    // A body that broke off or overflowed is incomplete, and `decide`
    // accepts no incomplete body as a success body.
    let outcome = decide(
        result.answer.as_ref(),
        &policy,
        attempt_in_series,
        finished_at,
    );
    let status = result.answer.as_ref().map(|a| a.status);
    if let Some((kept, span_id)) = &trace {
        let span = attempt_span(
            plan,
            (kept, *span_id),
            number,
            &result,
            (&outcome, finished_at),
        )
        .text("hookd.notification.id", row.id.to_string());
        sender.spans().record(span);
    }
    metrics::counter!(
        "hookd_deliveries_total",
        "outcome" => outcome.as_str(),
        "status_class" => crate::telemetry::status_class(status)
    )
    .increment(1);
    metrics::histogram!("hookd_delivery_duration_seconds").record(result.duration.as_secs_f64());
    if let Some(due) = row.next_attempt_at {
        let late = (result.started_at - due)
            .num_microseconds()
            .unwrap_or(0)
            .max(0);
        metrics::histogram!("hookd_delivery_lateness_seconds").record(late as f64 / 1e6);
    }
    let span = tracing::Span::current();
    span.record("outcome", outcome.as_str());
    if let Some(status) = status {
        span.record("status_code", status);
    }
    span.record("duration_ms", result.duration.as_millis() as u64);
    tracing::debug!(
        notification_id = %row.id,
        endpoint_id = %row.endpoint_id,
        attempt = number,
        outcome = outcome.as_str(),
        status_code = result.answer.as_ref().map(|a| a.status),
        duration_ms = result.duration.as_millis() as u64,
        error = result.error.as_ref().map(|e| e.code),
        "delivery attempt"
    );
    let next = after_attempt(
        &outcome,
        result.error.as_ref().map(|e| (e.code, e.message.as_str())),
    );
    let status_code = result.answer.as_ref().map(|a| i32::from(a.status));
    let event = if operator && next.status == Status::Failed {
        let failed = FailedNotification {
            notification_id: row.id,
            endpoint_id: row.endpoint_id,
            key: row.key.as_deref(),
            event_type: row.event_type.as_deref(),
            attempts: number,
            last_status_code: status_code,
            last_error: next.last_error.as_deref(),
        };
        OperatorEvent::notification_failed(&failed, sender.now())
    } else {
        None
    };
    let expected = expected(row.attempts, row.series_start, None, false);
    let keep = keeping(number, &outcome, result.error.is_some(), &expected);
    // Headers are kept in a row of attempts only: a delivery at its first
    // attempt, kept in its notification's row, keeps none (nor does its
    // duplicate, in the rare case one is refused and gets a row).
    let (sent_headers, response_headers) = if keep.inline {
        (None, None)
    } else {
        std::mem::take(&mut result.kept).encode()
    };
    AttemptRecord {
        notification_id: row.id,
        endpoint_id: row.endpoint_id,
        number,
        expected,
        keep,
        started_at: result.started_at,
        due_at: row.next_attempt_at,
        duration_ms: result.duration.as_millis().min(i32::MAX as u128) as i32,
        status_code,
        response_body: result.stored_body(),
        response_headers,
        sent_headers,
        error_code: result.error.as_ref().map(|e| e.code.to_string()),
        error_message: result.error.as_ref().map(|e| e.message.clone()),
        outcome,
        tells_of_endpoint,
        next,
        event,
        ordered: row.sequence.is_some(),
    }
}

/// Records a claim's span for each traced notification among `rows`,
/// from `start` to `end`: `how` they came, from the due `"index"` or
/// handed over by this process's committer (`"handoff"`).
pub fn claim_spans(
    spans: &Spans,
    rows: &[DueNotification],
    how: &'static str,
    (start, end): (DateTime<Utc>, DateTime<Utc>),
) {
    if !spans.on() {
        return;
    }
    for row in rows {
        let Some((kept, span_id)) = traced(spans, &row.headers) else {
            continue;
        };
        let span = Span::under(&kept, span_id, "claim", SpanKind::Internal, (start, end))
            .text("hookd.notification.id", row.id.to_string())
            .text("hookd.claim", how)
            .int("hookd.attempt", i64::from(row.attempts + 1));
        spans.record(span);
    }
}

/// The trace context a notification keeps, if spans are exported and it
/// is sampled, and a new span id for this attempt.
fn traced(
    spans: &Spans,
    headers: &std::collections::BTreeMap<String, String>,
) -> Option<(TraceContext, [u8; 8])> {
    if !spans.on() {
        return None;
    }
    let kept = TraceContext::from_kept(headers).filter(TraceContext::sampled)?;
    Some((kept, new_span_id()))
}

/// An attempt's span (OpenTelemetry's HTTP client conventions, and
/// hookd's own attributes): an error when the attempt did not succeed.
fn attempt_span(
    plan: &Plan,
    (kept, span_id): (&TraceContext, [u8; 8]),
    number: i32,
    result: &AttemptResult,
    (outcome, finished_at): (&crate::domain::outcome::Outcome, DateTime<Utc>),
) -> Span {
    let mut span = Span::under(
        kept,
        span_id,
        "POST",
        SpanKind::Client,
        (result.started_at, finished_at),
    )
    .text("http.request.method", "POST")
    .text("hookd.outcome", outcome.as_str())
    .int("hookd.attempt", i64::from(number))
    .int("hookd.duration_ms", result.duration.as_millis() as i64);
    if let Some(uid) = &plan.uid {
        span = span.text("hookd.endpoint.uid", uid.clone());
    }
    if let Some(host) = plan.target.host() {
        span = span.text("server.address", host);
    }
    if let Some(answer) = &result.answer {
        span = span.int("http.response.status_code", i64::from(answer.status));
    }
    if let Some(error) = &result.error {
        span = span.text("error.type", error.code);
        span.error = Some(error.message.clone());
    } else if !matches!(outcome, crate::domain::outcome::Outcome::Succeeded) {
        span.error = Some(format!("not acknowledged: {}", outcome.as_str()));
    }
    span
}

/// The current secret, then every rotated-out one whose overlap lasts.
fn signing_secrets(endpoint: &DeliveryEndpoint, now: DateTime<Utc>) -> Vec<SigningSecret> {
    let previous = endpoint
        .previous_secrets
        .iter()
        .filter(|p| p.expires_at > now)
        .map(|p| p.secret.as_str());
    std::iter::once(endpoint.secret.as_str())
        .chain(previous)
        .filter_map(|text| SigningSecret::parse(text).ok())
        .collect()
}
