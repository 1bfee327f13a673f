//! Delivering one attempt: sign, POST, read a bounded answer, classify what
//! went wrong. One HTTP client on hyper with a pool per receiver
//! (`client`); redirects are never followed (a 3xx is a failed attempt);
//! the address guard vets every address connected to; certificates are
//! always verified, against the bundled public roots plus `sender.ca_file`;
//! with `sender.https_only`, nothing is sent in clear.

mod client;
pub mod collector;
pub mod guard;
mod headers;
mod route;
pub mod signature;
mod target;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::{DateTime, Utc};
use http_body_util::BodyExt as _;
use hyper::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use tokio_rustls::rustls;
use url::Url;
use uuid::Uuid;

use crate::config::SenderSettings;
// Config owns the limit (it checks `max_response_bytes` against it); the
// sender applies it and keeps the path it always had.
pub use crate::config::STORED_BODY_BYTES;
use crate::domain::fields::MaskedHeaders;
use crate::domain::outcome::{parse_retry_after, Answer};
use crate::domain::receiver_url::{lies_under, mask_url};
use crate::domain::secret::SigningSecret;
use client::Failure;
use guard::{Guard, Networks, ResolveError};
use headers::header_map;
pub use headers::{own_headers, Kept, Own, OWN_HEADERS};

/// The TLS set-up of hookd's other client, the span exporter's
/// (`telemetry::spans`): the receivers' (ring, the bundled webpki roots),
/// without `sender.ca_file`, which is for receivers.
pub fn collector_tls() -> Result<rustls::ClientConfig, SenderError> {
    route::tls_config("")
}

pub const USER_AGENT_VALUE: &str = concat!("hookd/", env!("CARGO_PKG_VERSION"));

/// An endpoint as the sender sees it, prepared once per claimed batch and
/// shared by that batch's deliveries: parsed URL, validated custom headers,
/// signing keys decoded and keyed into their HMAC states.
#[derive(Debug)]
pub struct Target {
    url: Result<Url, url::ParseError>,
    headers: HeaderMap,
    /// The current secret first, then the previous one while it still signs.
    signer: signature::Signer,
    timeout: Duration,
    /// The entries of `sender.allow_networks` the URL's addresses lie in,
    /// found when a per-notification URL first needs them.
    networks: tokio::sync::OnceCell<Networks>,
}

impl Target {
    pub fn new(
        url: &str,
        headers: &BTreeMap<String, String>,
        secrets: Vec<SigningSecret>,
        timeout: Duration,
    ) -> Self {
        Self {
            url: Url::parse(url),
            headers: header_map(headers, HeaderMap::new()),
            signer: signature::Signer::new(&secrets),
            timeout,
            networks: tokio::sync::OnceCell::new(),
        }
    }

    /// The host of the endpoint's URL.
    pub fn host(&self) -> Option<&str> {
        self.url.as_ref().ok()?.host_str()
    }

    /// Whether an attempt to `url` (a notification's own, or `None`)
    /// counts for the endpoint's circuit and health
    /// (`domain::receiver_url::tells_of_endpoint`).
    pub fn tells_of_endpoint(&self, url: Option<&str>) -> bool {
        crate::domain::receiver_url::tells_of_endpoint(url, self.url.as_ref().ok())
    }
}

/// One attempt: a notification sent to its endpoint. `Debug` masks header
/// values and the URL's query string.
pub struct Delivery<'a> {
    pub id: Uuid,
    pub target: &'a Target,
    pub body: Bytes,
    pub content_type: &'a str,
    pub event_type: Option<&'a str>,
    /// 1-based, over every series.
    pub attempt: u32,
    /// The notification's custom headers; they win over the endpoint's.
    pub headers: &'a BTreeMap<String, String>,
    /// The event delivered, sent as `hookd-event-id`.
    pub event_id: Option<Uuid>,
    /// Where to send it instead of the target's URL (a per-notification
    /// URL), with the target's secrets and policy.
    pub url: Option<&'a str>,
    /// Its place in its key's order, on an ordered endpoint: sent as
    /// `webhook-sequence`.
    pub sequence: Option<i64>,
    /// The `traceparent` of this attempt (its span as the parent), over
    /// the one kept among the notification's headers.
    pub traceparent: Option<&'a str>,
}

impl std::fmt::Debug for Delivery<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("id", &self.id)
            .field("attempt", &self.attempt)
            .field("event_id", &self.event_id)
            .field("headers", &MaskedHeaders(Some(self.headers)))
            .field("url", &self.url.map(mask_url))
            .finish_non_exhaustive()
    }
}

/// Why an attempt got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptError {
    /// `timeout`, `connect`, `dns`, `tls`, `blocked_address`, `body_too_large`,
    /// `invalid_url`, `https_required`, `request`.
    pub code: &'static str,
    pub message: String,
}

#[derive(Debug, Clone)]
pub struct AttemptResult {
    pub started_at: DateTime<Utc>,
    pub duration: Duration,
    /// `None` when no response came.
    pub answer: Option<Answer>,
    pub error: Option<AttemptError>,
    /// The headers sent and answered, for the attempt's row (`Kept`).
    pub kept: Kept,
}

impl AttemptResult {
    /// The first 4 KiB of the body, as text, for the attempt row.
    pub fn stored_body(&self) -> Option<String> {
        let answer = self.answer.as_ref()?;
        let end = answer.body.len().min(STORED_BODY_BYTES);
        Some(String::from_utf8_lossy(&answer.body[..end]).into_owned())
    }
}

#[derive(Clone)]
pub struct Sender {
    /// The client (and guard) of each attempt.
    routes: route::Routes,
    max_response_bytes: usize,
    https_only: bool,
    /// When an attempt starts, and what a `Retry-After` date is from
    /// (`crate::clock`; the system clock unless `with_clock`).
    clock: crate::clock::Clock,
    /// Where attempts' spans go (`telemetry::spans`; off unless
    /// `with_spans`).
    spans: crate::telemetry::spans::Spans,
}

#[derive(Debug, thiserror::Error)]
pub enum SenderError {
    #[error("sender.ca_file: {0}")]
    CaFile(String),
    #[error("cannot build the TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
}

impl Sender {
    pub fn new(settings: &SenderSettings) -> Result<Self, SenderError> {
        let guard = Guard::new(settings.allow_networks.clone());
        let build = route::ClientSettings {
            tls: std::sync::Arc::new(route::tls_config(&settings.ca_file)?),
            connect_timeout: Duration::from_millis(settings.connect_timeout_ms),
            max_idle_per_host: settings.max_in_flight.max(1),
        };
        Ok(Self {
            routes: route::Routes::new(build, guard),
            // At least STORED_BODY_BYTES: checked when the settings load.
            max_response_bytes: settings.max_response_bytes,
            https_only: settings.https_only,
            clock: crate::clock::Clock::system(),
            spans: Default::default(),
        })
    }

    /// This sender, recording each traced attempt's span in `spans`.
    pub fn with_spans(self, spans: crate::telemetry::spans::Spans) -> Self {
        Self { spans, ..self }
    }

    /// Where attempts' spans go.
    pub fn spans(&self) -> &crate::telemetry::spans::Spans {
        &self.spans
    }

    /// This sender, reading `clock` (the store's: `startup`).
    pub fn with_clock(self, clock: crate::clock::Clock) -> Self {
        Self { clock, ..self }
    }

    /// The time now by this sender's clock.
    pub fn now(&self) -> chrono::DateTime<Utc> {
        self.clock.now()
    }

    /// Makes one attempt. Never fails: every problem is an `AttemptError`.
    pub async fn send(&self, delivery: Delivery<'_>) -> AttemptResult {
        let started_at = self.now();
        let clock = Instant::now();
        let mut kept = Kept::default();
        let (answer, error) = match self.exchange(&delivery, started_at, &mut kept).await {
            Ok((answer, error)) => (Some(answer), error),
            Err(error) => (None, Some(error)),
        };
        AttemptResult {
            started_at,
            duration: clock.elapsed(),
            answer,
            error,
            kept,
        }
    }

    async fn exchange(
        &self,
        delivery: &Delivery<'_>,
        started_at: DateTime<Utc>,
        kept: &mut Kept,
    ) -> Result<(Answer, Option<AttemptError>), AttemptError> {
        let target = delivery.target;
        let url = match delivery.url {
            Some(url) => Url::parse(url),
            None => target.url.clone(),
        }
        .map_err(|e| AttemptError {
            code: "invalid_url",
            message: e.to_string(),
        })?;
        // The API refuses http:// once https_only is on; this catches the
        // endpoints stored before. Retried on schedule like any failed
        // attempt, so a URL changed to https in the meantime delivers them.
        if self.https_only && url.scheme() != "https" {
            return Err(AttemptError {
                code: "https_required",
                message: "sender.https_only refuses a plain http:// receiver URL".into(),
            });
        }
        let client = self.routes.of(delivery).await;
        // The resolver vets names; an IP literal never reaches it.
        if let Some(ip) = literal_ip(&url) {
            if !client.guard().permits(ip) {
                let message = if self.routes.permits(ip) {
                    format!("{ip} is not a public address and the endpoint's own URL is not in its entry of sender.allow_networks")
                } else {
                    format!("{ip} is not a public address and is not in sender.allow_networks")
                };
                return Err(AttemptError {
                    code: "blocked_address",
                    message,
                });
            }
        }
        // Ids are formatted on the stack; each header value is then one
        // allocation (the signature's none: its buffer becomes the value).
        let mut id_buffer = Uuid::encode_buffer();
        let id: &str = delivery.id.hyphenated().encode_lower(&mut id_buffer);
        let timestamp = started_at.timestamp();
        // The endpoint's custom headers (credentials, often) go only under
        // its own URL: a per-notification URL elsewhere, even on the same
        // origin, which any `write` token may name, gets the signature and
        // the notification's own headers.
        let mut headers = match (delivery.url, &target.url) {
            (Some(_), Ok(own)) if !lies_under(&url, own) => HeaderMap::new(),
            (Some(_), Err(_)) => HeaderMap::new(),
            _ => target.headers.clone(),
        };
        // Room for every header at once (and for the client's default
        // `accept`), so the map is not regrown while it is filled.
        headers.reserve(delivery.headers.len() + OWN_HEADERS + 1);
        let mut headers = header_map(delivery.headers, headers);
        // hookd's own headers last: custom ones cannot override them. The
        // row keeps the signature and the custom headers' names; the rest
        // follows from the notification (`own_headers`).
        // An rsa2 endpoint's key signs the form body itself; the others
        // sign the header, which is then absent.
        let body = target
            .signer
            .signed_body(delivery.content_type, &delivery.body)
            .await
            .map_err(|message| AttemptError {
                code: "unsignable",
                message,
            })?;
        let header = target.signer.header(id, timestamp, &delivery.body);
        let signature = (!header.is_empty())
            .then(|| HeaderValue::from_maybe_shared(Bytes::from(header)).ok())
            .flatten();
        if let Some(signature) = &signature {
            // A clone shares the value's bytes; no custom header, no
            // allocation.
            kept.sent = Some((signature.clone(), headers.keys().cloned().collect()));
        }
        let own = Own {
            id,
            timestamp,
            signature,
            attempt: delivery.attempt,
            content_type: delivery.content_type,
            event_type: delivery.event_type,
            sequence: delivery.sequence,
            event_id: delivery.event_id,
        };
        own_headers(&own, |name, value| {
            headers.insert(name, value);
        });
        if let Some(value) = delivery
            .traceparent
            .and_then(|t| HeaderValue::from_str(t).ok())
        {
            headers.insert(
                HeaderName::from_static(crate::telemetry::trace_context::TRACEPARENT),
                value,
            );
        }
        // The timeout bounds the whole exchange: connecting, the answer's
        // head and every read of its body.
        let deadline = tokio::time::Instant::now() + target.timeout;
        let timed_out = || AttemptError {
            code: "timeout",
            message: format!(
                "no complete answer within {} ms",
                target.timeout.as_millis()
            ),
        };
        let posted = client.post(&url, headers, body);
        let (response, lease) = tokio::time::timeout_at(deadline, posted)
            .await
            .map_err(|_| timed_out())?
            .map_err(failure)?;
        let (head, mut incoming) = response.into_parts();

        let abort = head
            .headers
            .get("webhook-delivery")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("abort"));
        let retry_after = head
            .headers
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, self.now()));
        let mut answer = Answer {
            status: head.status.as_u16(),
            body: Vec::new(),
            body_complete: true,
            abort,
            retry_after,
        };
        // Read above; the map itself moves, nothing copied.
        kept.answered = Some(head.headers);
        let mut error = None;
        loop {
            let frame = match tokio::time::timeout_at(deadline, incoming.frame()).await {
                Ok(Some(Ok(frame))) => frame,
                // Read to its end: the connection carries the next one.
                Ok(None) => {
                    lease.release();
                    break;
                }
                Ok(Some(Err(e))) => {
                    answer.body_complete = false;
                    error = Some(AttemptError {
                        code: "request",
                        message: client::error_chain(&e),
                    });
                    break;
                }
                Err(_) => {
                    answer.body_complete = false;
                    error = Some(timed_out());
                    break;
                }
            };
            // Trailers carry nothing hookd reads.
            let Ok(chunk) = frame.into_data() else {
                continue;
            };
            let room = self.max_response_bytes - answer.body.len();
            if chunk.len() > room {
                answer.body.extend_from_slice(&chunk[..room]);
                answer.body_complete = false;
                error = Some(AttemptError {
                    code: "body_too_large",
                    message: format!(
                        "the response body exceeds {} bytes",
                        self.max_response_bytes
                    ),
                });
                break;
            }
            answer.body.extend_from_slice(&chunk);
        }
        Ok((answer, error))
    }
}

fn literal_ip(url: &Url) -> Option<std::net::IpAddr> {
    match url.host()? {
        url::Host::Ipv4(ip) => Some(ip.into()),
        url::Host::Ipv6(ip) => Some(ip.into()),
        url::Host::Domain(_) => None,
    }
}

/// A request that got no answer, as the attempt's error code and message
/// (no URL in it: a per-notification URL may carry a token).
fn failure(failure: Failure) -> AttemptError {
    let (code, message) = match failure {
        Failure::Resolve(resolve @ ResolveError::Blocked(_)) => {
            ("blocked_address", resolve.to_string())
        }
        Failure::Resolve(resolve @ ResolveError::Dns { .. }) => ("dns", resolve.to_string()),
        Failure::Connect(message) => ("connect", message),
        Failure::Tls(message) => ("tls", message),
        Failure::ConnectTimeout => ("timeout", "no connection within the connect timeout".into()),
        Failure::Request(message) => ("request", message),
    };
    AttemptError { code, message }
}

#[cfg(test)]
mod tests;
