//! hookd's other HTTP client, the span exporter's (`telemetry::spans`): the
//! receivers' client (`client`), so the binary carries one HTTP client, not
//! two. The collector is the operator's own (`telemetry.otlp_endpoint`),
//! often on loopback or a private network, so its addresses are not vetted
//! as receivers' are; its certificates are verified as every certificate
//! hookd meets is, against the bundled public roots. Like the sender, it
//! reads no proxy settings from the environment.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt as _;
use hyper::header::HeaderMap;
use hyper::StatusCode;
use ipnet::IpNet;
use url::Url;

use super::client::{error_chain, Client, Failure};
use super::guard::Guard;
use super::SenderError;

/// Connecting to the collector (name, TCP and TLS) takes at most this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// What is read of a collector's answer (an OTLP answer is a few bytes, or
/// an error message); a longer one is not read on, and its connection is
/// closed rather than kept.
const ANSWER_BYTES: usize = 64 << 10;

pub struct Collector {
    client: Client,
    url: Url,
    headers: HeaderMap,
}

impl Collector {
    /// A client for `url` that sends `headers` with every request.
    pub fn new(url: Url, headers: HeaderMap) -> Result<Self, SenderError> {
        let everywhere = ["0.0.0.0/0", "::/0"]
            .iter()
            .map(|net| net.parse::<IpNet>().expect("a network"))
            .collect();
        let tls = std::sync::Arc::new(super::collector_tls()?);
        Ok(Self {
            client: Client::new(Guard::new(everywhere), tls, CONNECT_TIMEOUT, 1),
            url,
            headers,
        })
    }

    pub fn url(&self) -> &Url {
        &self.url
    }

    /// POSTs `body`; the answer's status once its body is read to the end
    /// (the connection is then kept for the next export). The deadline is
    /// the caller's.
    pub async fn post(&self, body: Bytes) -> Result<StatusCode, String> {
        let (response, lease) = self
            .client
            .post(&self.url, self.headers.clone(), body)
            .await
            .map_err(failure)?;
        let status = response.status();
        let mut incoming = response.into_body();
        let mut read = 0;
        loop {
            match incoming.frame().await {
                None => {
                    lease.release();
                    return Ok(status);
                }
                Some(Err(error)) => return Err(error_chain(&error)),
                Some(Ok(frame)) => {
                    read += frame.data_ref().map_or(0, Bytes::len);
                    if read > ANSWER_BYTES {
                        return Ok(status);
                    }
                }
            }
        }
    }
}

fn failure(failure: Failure) -> String {
    match failure {
        Failure::Resolve(error) => error.to_string(),
        Failure::Connect(message) | Failure::Tls(message) | Failure::Request(message) => message,
        Failure::ConnectTimeout => format!(
            "no connection within {}",
            humantime::format_duration(CONNECT_TIMEOUT)
        ),
    }
}
