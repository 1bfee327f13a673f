//! Spans for the create, the claim and each attempt of a traced
//! notification, exported in batches to an OTLP/HTTP collector
//! (`telemetry.otlp_endpoint`; off by default).
//!
//! Recording a span never waits: it goes into a bounded queue, and a full
//! queue drops it and counts it (`hookd_spans_dropped_total{reason=
//! "queue_full"}`). One task drains the queue, sends a batch when it holds
//! `MAX_BATCH` spans or `telemetry.export_interval_ms` after its first span,
//! and drops a batch the collector refuses or does not answer in time,
//! counted as `export_failed`: a collector that is down costs hookd a
//! counter (and a warning when exports start failing), never a delivery.
//! Nothing is retried. At shutdown, what is queued is sent (`flush`).

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use hyper::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE, USER_AGENT};
use tokio::sync::{mpsc, oneshot};
use url::Url;

use super::trace_context::{new_span_id, TraceContext};
use crate::config::TelemetrySettings;
use crate::sender::collector::Collector;
use crate::sender::USER_AGENT_VALUE;

/// Most spans in one export request.
const MAX_BATCH: usize = 512;
/// How long the collector has to answer an export.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// OTLP's `SpanKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    Internal = 1,
    Server = 2,
    Client = 3,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AttributeValue {
    Text(String),
    Int(i64),
}

/// One finished span.
#[derive(Debug, Clone)]
pub struct Span {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub parent_id: Option<[u8; 8]>,
    pub trace_state: Option<String>,
    pub name: &'static str,
    pub kind: SpanKind,
    pub start_unix_nanos: u64,
    pub end_unix_nanos: u64,
    pub attributes: Vec<(&'static str, AttributeValue)>,
    /// The span failed, and why.
    pub error: Option<String>,
}

impl Span {
    /// A span of `name` under `parent` (the trace and its parent span),
    /// with its own id already chosen (`span_id`), from `start` to `end`.
    pub fn under(
        parent: &TraceContext,
        span_id: [u8; 8],
        name: &'static str,
        kind: SpanKind,
        (start, end): (DateTime<Utc>, DateTime<Utc>),
    ) -> Self {
        Self {
            trace_id: parent.trace_id,
            span_id,
            parent_id: Some(parent.span_id),
            trace_state: parent.state.clone(),
            name,
            kind,
            start_unix_nanos: unix_nanos(start),
            end_unix_nanos: unix_nanos(end.max(start)),
            attributes: Vec::new(),
            error: None,
        }
    }

    pub fn text(mut self, key: &'static str, value: impl Into<String>) -> Self {
        self.attributes
            .push((key, AttributeValue::Text(value.into())));
        self
    }

    pub fn int(mut self, key: &'static str, value: i64) -> Self {
        self.attributes.push((key, AttributeValue::Int(value)));
        self
    }
}

fn unix_nanos(at: DateTime<Utc>) -> u64 {
    at.timestamp_nanos_opt().unwrap_or(0).max(0) as u64
}

/// What the exporter's queue carries: a span, or a request to send what
/// it holds now and say so.
enum Queued {
    Span(Span),
    Flush(oneshot::Sender<()>),
}

/// Where spans go: nowhere (export off, the default), or the exporter's
/// queue. Cheap to clone; every part of a process holds the same one.
#[derive(Clone, Default)]
pub struct Spans(Option<Arc<mpsc::Sender<Queued>>>);

impl std::fmt::Debug for Spans {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.on() { "Spans(on)" } else { "Spans(off)" })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("telemetry.otlp_endpoint: {0}")]
    Endpoint(String),
    #[error("telemetry.otlp_headers: `{0}` is not a valid header")]
    Header(String),
    #[error("cannot build the collector's HTTP client: {0}")]
    Client(String),
}

impl Spans {
    /// Export off: every record is a no-op.
    pub fn off() -> Self {
        Self(None)
    }

    /// Starts the exporter's task (in the current Tokio runtime) when
    /// `telemetry.otlp_endpoint` is set.
    pub fn start(settings: &TelemetrySettings) -> Result<Self, ExportError> {
        if settings.otlp_endpoint.is_empty() {
            return Ok(Self::off());
        }
        let url = traces_url(&settings.otlp_endpoint).map_err(ExportError::Endpoint)?;
        let mut headers = HeaderMap::new();
        for (name, value) in &settings.otlp_headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| ExportError::Header(name.clone()))?;
            let mut value = HeaderValue::from_str(value.expose())
                .map_err(|_| ExportError::Header(name.to_string()))?;
            // Collectors' credentials, usually.
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-protobuf"),
        );
        headers.insert(USER_AGENT, HeaderValue::from_static(USER_AGENT_VALUE));
        let client =
            Collector::new(url, headers).map_err(|e| ExportError::Client(e.to_string()))?;
        let (queue, spans) = mpsc::channel(settings.queue_size.max(1));
        let resource = vec![
            ("service.name", settings.service_name.clone()),
            ("service.version", env!("CARGO_PKG_VERSION").to_string()),
            ("service.instance.id", uuid::Uuid::now_v7().to_string()),
        ];
        let exporter = Exporter {
            client,
            resource,
            interval: Duration::from_millis(settings.export_interval_ms.max(1)),
        };
        tokio::spawn(exporter.run(spans));
        Ok(Self(Some(Arc::new(queue))))
    }

    pub fn on(&self) -> bool {
        self.0.is_some()
    }

    /// Hands `span` to the exporter without waiting; dropped (and
    /// counted) when the queue is full.
    pub fn record(&self, span: Span) {
        let Some(queue) = &self.0 else { return };
        if queue.try_send(Queued::Span(span)).is_err() {
            metrics::counter!("hookd_spans_dropped_total", "reason" => "queue_full").increment(1);
        }
    }

    /// Sends what is queued now, waiting at most `within` (shutdown calls
    /// it once deliveries and requests are done).
    pub async fn flush(&self, within: Duration) {
        let Some(queue) = &self.0 else { return };
        let (done, flushed) = oneshot::channel();
        let asked = tokio::time::timeout(within, async {
            queue.send(Queued::Flush(done)).await.ok()?;
            flushed.await.ok()
        });
        if asked.await.ok().flatten().is_none() {
            tracing::warn!("the spans still queued were not all sent before shutdown");
        }
    }

    /// The context a create keeps with its notifications, and the create
    /// span's id: a new span under the producer's context (or a new trace
    /// when it sent none). When export is off, or the producer's trace is
    /// not sampled, the producer's context, if any, is kept and forwarded
    /// as it came.
    pub fn create_context(&self, given: Option<&TraceContext>) -> Option<TraceContext> {
        if !self.on() {
            return given.cloned();
        }
        Some(match given {
            // A trace the producer does not sample gets no span of hookd's:
            // forwarded as it came.
            Some(given) if !given.sampled() => given.clone(),
            Some(given) => given.child(new_span_id()),
            None => TraceContext::root(),
        })
    }

    /// Records the span of an API create: `kept` is the context the
    /// notifications keep (its span is the create's), `given` the
    /// producer's.
    pub fn record_create(
        &self,
        given: Option<&TraceContext>,
        kept: Option<&TraceContext>,
        route: &'static str,
        (start, end): (DateTime<Utc>, DateTime<Utc>),
        (status, created): (u16, usize),
    ) {
        let Some(kept) = kept.filter(|k| self.on() && k.sampled()) else {
            return;
        };
        let mut span = Span::under(kept, kept.span_id, route, SpanKind::Server, (start, end))
            .text("http.request.method", "POST")
            .text("http.route", route)
            .int("http.response.status_code", i64::from(status))
            .int("hookd.created", created as i64);
        span.parent_id = given.map(|g| g.span_id);
        if status >= 500 {
            span.error = Some(format!("answered {status}"));
        }
        self.record(span);
    }
}

/// `telemetry.otlp_endpoint` is the collector's base URL, as
/// `OTEL_EXPORTER_OTLP_ENDPOINT` is: traces go to its `/v1/traces`. A URL
/// that already ends in `/v1/traces` is taken as it is.
pub fn traces_url(endpoint: &str) -> Result<Url, String> {
    let url = Url::parse(endpoint).map_err(|e| e.to_string())?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("must be an http:// or https:// URL".into());
    }
    // The endpoint is no secret (`config check` shows it, a failing export
    // logs it): credentials go in a header, which is one.
    if !url.username().is_empty() || url.password().is_some() {
        return Err(
            "must not hold credentials (user:password@): put them in telemetry.otlp_headers, such as Authorization, which is kept secret"
                .into(),
        );
    }
    let path = url.path().trim_end_matches('/');
    if path.ends_with("/v1/logs") || path.ends_with("/v1/metrics") {
        return Err(
            "is the collector's address or its /v1/traces path, not another signal's".into(),
        );
    }
    if path.ends_with("/v1/traces") {
        return Ok(url);
    }
    let base = url.as_str().trim_end_matches('/');
    Url::parse(&format!("{base}/v1/traces")).map_err(|e| e.to_string())
}

struct Exporter {
    client: Collector,
    resource: Vec<(&'static str, String)>,
    interval: Duration,
}

impl Exporter {
    async fn run(self, mut queue: mpsc::Receiver<Queued>) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        // Whether the last export failed: a warning when exports start
        // failing and a note when they work again, not one per batch.
        let mut failing = false;
        let mut flushed = Vec::new();
        loop {
            match queue.recv().await {
                Some(Queued::Span(span)) => batch.push(span),
                Some(Queued::Flush(done)) => flushed.push(done),
                None => break,
            }
            let deadline = tokio::time::Instant::now() + self.interval;
            while batch.len() < MAX_BATCH && flushed.is_empty() {
                match tokio::time::timeout_at(deadline, queue.recv()).await {
                    Ok(Some(Queued::Span(span))) => batch.push(span),
                    Ok(Some(Queued::Flush(done))) => flushed.push(done),
                    Ok(None) | Err(_) => break,
                }
            }
            if !batch.is_empty() {
                let sent = self.send(&batch).await;
                if sent == failing {
                    failing = !sent;
                    if failing {
                        tracing::warn!(url = %self.client.url(), "the OTLP collector does not take spans; they are dropped and counted in hookd_spans_dropped_total until it does");
                    } else {
                        tracing::info!(url = %self.client.url(), "the OTLP collector takes spans again");
                    }
                }
                batch.clear();
            }
            for done in flushed.drain(..) {
                let _ = done.send(());
            }
        }
    }

    /// Sends one batch; whether the collector took it.
    async fn send(&self, batch: &[Span]) -> bool {
        let body = super::otlp::export_request(&self.resource, batch);
        let outcome = tokio::time::timeout(EXPORT_TIMEOUT, self.client.post(body.into())).await;
        let count = batch.len() as u64;
        match outcome {
            Ok(Ok(status)) if status.is_success() => {
                metrics::counter!("hookd_spans_exported_total").increment(count);
                return true;
            }
            Ok(Ok(status)) => {
                tracing::debug!(status = status.as_u16(), "the OTLP collector refused spans");
            }
            Ok(Err(error)) => {
                tracing::debug!(%error, "the OTLP collector did not take spans");
            }
            Err(_) => {
                tracing::debug!("the OTLP collector did not answer within {EXPORT_TIMEOUT:?}");
            }
        }
        metrics::counter!("hookd_spans_dropped_total", "reason" => "export_failed")
            .increment(count);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_a_base_url_unless_it_names_the_traces_path() {
        for (given, expected) in [
            ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
            ("http://collector:4318/", "http://collector:4318/v1/traces"),
            (
                "https://otlp.example/prefix",
                "https://otlp.example/prefix/v1/traces",
            ),
            ("http://c:4318/v1/traces", "http://c:4318/v1/traces"),
        ] {
            assert_eq!(traces_url(given).unwrap().as_str(), expected);
        }
        assert!(traces_url("grpc://c:4317").is_err());
        assert!(traces_url("not a url").is_err());
    }

    #[tokio::test]
    async fn an_unsampled_trace_is_forwarded_as_it_came_with_export_on() {
        let settings = TelemetrySettings {
            otlp_endpoint: "http://127.0.0.1:9".into(),
            otlp_headers: Default::default(),
            service_name: "hookd".into(),
            export_interval_ms: 1000,
            queue_size: 8,
        };
        let spans = Spans::start(&settings).unwrap();
        let unsampled = TraceContext {
            flags: 0,
            ..TraceContext::root()
        };
        assert_eq!(spans.create_context(Some(&unsampled)), Some(unsampled));
        let sampled = TraceContext::root();
        let kept = spans.create_context(Some(&sampled)).unwrap();
        assert_eq!(kept.trace_id, sampled.trace_id);
        assert_ne!(kept.span_id, sampled.span_id, "the create's span");
    }

    #[test]
    fn with_export_off_the_producers_context_is_kept_as_it_came() {
        let given = TraceContext::root();
        assert_eq!(Spans::off().create_context(Some(&given)), Some(given));
        assert_eq!(Spans::off().create_context(None), None);
    }
}
