//! The settings types, one per `[section]` of the TOML, the limits they are
//! checked against, the values derived from them, and `Secret`, the value
//! that never prints.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use ipnet::IpNet;
use serde::{Deserialize, Serialize, Serializer};

use super::readers::{networks, socket_address, some_socket_address, text, text_path};
use super::TokenSpec;

/// Margin the delivery lease must keep over the longest attempt timeout.
pub const LEASE_MARGIN: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub server: ServerSettings,
    pub database: DatabaseSettings,
    pub redis: RedisSettings,
    pub embedded: EmbeddedSettings,
    pub api: ApiSettings,
    pub sender: SenderSettings,
    pub dispatcher: DispatcherSettings,
    pub retention: RetentionSettings,
    pub operator: OperatorSettings,
    pub secrets: SecretsSettings,
    pub pull: PullSettings,
    pub log: LogSettings,
    pub stats: StatsSettings,
    /// Portal links (docs/design.md §11).
    pub portal: super::PortalSettings,
    pub telemetry: TelemetrySettings,
}

/// Spans exported over OTLP/HTTP (docs/design.md §19; `telemetry::spans`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySettings {
    /// The collector's base URL; empty: no spans.
    pub otlp_endpoint: String,
    /// Headers on each export (a collector's credentials).
    pub otlp_headers: std::collections::BTreeMap<String, Secret>,
    #[serde(deserialize_with = "text")]
    pub service_name: String,
    pub export_interval_ms: u64,
    pub queue_size: usize,
}

/// The per-minute counts behind `GET /v1/stats` (docs/design.md §11).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StatsSettings {
    /// Add each recorded batch's attempts to the per-minute counts, in its
    /// transaction. Off only to measure what that costs (BENCHMARKS.md).
    pub count_minutes: bool,
}

/// The embedded mode's store (docs/design.md §12): one SQLite file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddedSettings {
    /// The database file (its directory created if missing); relative to
    /// the working directory, or to `--data-dir`.
    #[serde(deserialize_with = "text_path")]
    pub path: std::path::PathBuf,
    /// How long a statement waits on SQLite's lock, and a request on a
    /// connection, before answering 503.
    pub busy_timeout_ms: u64,
    /// Read-only connections beside the one writer.
    pub readers: u32,
    /// The directory `--data-dir` named (not configuration): it must then
    /// be private to hookd's account (0700), as one hookd creates is.
    #[serde(skip)]
    pub data_dir: Option<std::path::PathBuf>,
}

/// Pull consumption (docs/design.md §10).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PullSettings {
    /// How long a due pull notification waits for a consumer before it
    /// fails `not_pulled`: a duration (`"7d"`, `"12h"`), within
    /// `PULL_MAX_WAIT`.
    pub max_wait: String,
}

/// The bounds of `pull.max_wait`.
pub const PULL_MAX_WAIT: std::ops::RangeInclusive<Duration> =
    Duration::from_secs(1)..=Duration::from_secs(365 * 24 * 3600);

/// Encryption of signing secrets and custom header values at rest, and the
/// overlap of secret rotations.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SecretsSettings {
    /// AEAD keys: the first seals, every one opens. Empty: plaintext.
    pub keys: Vec<SecretKeySettings>,
    /// How long a rotated-out secret keeps signing by default. 0: not at all.
    pub rotation_overlap_ms: u64,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SecretKeySettings {
    /// Written into every value it seals: short, never reused for another key.
    pub id: String,
    /// The base64 of 32 random bytes.
    pub key: Secret,
}

/// The longest rotation overlap, in config and per rotation.
pub const MAX_ROTATION_OVERLAP: Duration = Duration::from_secs(7 * 24 * 3600);

/// Where hookd reports to its operators: `notification.failed` and
/// `endpoint.disabled` events, signed like every delivery.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorSettings {
    /// Empty: no operator events. Masked like a secret: webhook URLs often
    /// carry a token in their path.
    pub url: Secret,
    /// `whsec_...`; required with `url`.
    pub secret: Secret,
}

impl OperatorSettings {
    pub fn enabled(&self) -> bool {
        !self.url.expose().is_empty()
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionSettings {
    pub days: u32,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    #[serde(deserialize_with = "socket_address")]
    pub listen: SocketAddr,
    pub shutdown_timeout_ms: u64,
    /// Closes a connection that has had no request under way for this
    /// long, counted from its acceptance (silent, half-sent, preface-only,
    /// idle HTTP/2 and keep-alive connections alike).
    pub header_timeout_ms: u64,
    /// Answers 408 to a request (body included) that takes longer.
    pub request_timeout_ms: u64,
    /// Open connections at most; past it hookd stops accepting.
    pub max_connections: usize,
    /// Connections the kernel completes and queues for hookd to accept
    /// (`listen(2)`'s backlog, capped by `net.core.somaxconn`).
    pub listen_backlog: u32,
    /// PEM certificate chain and private key: the API speaks TLS.
    pub tls_cert: String,
    pub tls_key: String,
    /// A second listener for `/metrics`, `/healthz` and `/readyz`; when set,
    /// `/metrics` leaves `listen`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "some_socket_address"
    )]
    pub metrics_listen: Option<SocketAddr>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseSettings {
    pub url: Secret,
    /// A streaming replica of `url` for the API's notification and event
    /// reads (`store::replica`). Empty: everything reads the primary.
    pub read_url: Secret,
    pub migrate: bool,
    pub max_connections: u32,
    /// Connections kept open while idle (at most `max_connections`).
    pub min_connections: u32,
    pub acquire_timeout_ms: u64,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RedisSettings {
    pub url: Secret,
    #[serde(deserialize_with = "text")]
    pub prefix: String,
    pub timeout_ms: u64,
    /// `host:port` of Redis Sentinels; non-empty: the master is the one
    /// they name for `master_name`, and `url` gives only scheme,
    /// credentials and database.
    pub sentinels: Vec<String>,
    #[serde(deserialize_with = "text")]
    pub master_name: String,
    /// PEM CA certificates that verify a `rediss://` server, instead of the
    /// bundled public roots. Empty: the public roots.
    pub ca_file: String,
    /// Redis Cluster seed nodes (`redis://host:port`); non-empty: cluster
    /// mode, and `url` is unused (docs/design.md §13). Secrets: a URL may
    /// carry the password.
    #[serde(default)]
    pub cluster: Vec<Secret>,
    /// Shards of the due index (`domain::shard`). Unset: 16 on a cluster,
    /// 1 (the unsharded layout of before) on one Redis.
    #[serde(default)]
    pub shards: Option<u16>,
}

impl RedisSettings {
    /// How many shards the due index has (see `shards`).
    pub fn shard_count(&self) -> u16 {
        self.shards
            .unwrap_or(if self.cluster.is_empty() { 1 } else { 16 })
    }

    /// Whether a Redis is configured at all: a `url`, a cluster, or
    /// sentinels (which need no `url`: it only lends them a scheme,
    /// credentials and database).
    pub fn is_set(&self) -> bool {
        !self.url.expose().is_empty() || !self.cluster.is_empty() || !self.sentinels.is_empty()
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ApiSettings {
    pub tokens: Vec<TokenSpec>,
    pub max_payload_bytes: usize,
    pub max_request_bytes: usize,
    /// Most notifications one request's events may fan out to, counted
    /// over the whole request (a batch's events together); more → 422.
    pub max_deliveries_per_request: usize,
    /// Regular expressions: a receiver URL's path segment (after the first)
    /// that one matches is shown as `***` to callers without the `secrets`
    /// scope, beside those that look like credentials
    /// (`domain::receiver_url::UrlMask`).
    #[serde(default)]
    pub secret_path_patterns: Vec<String>,
    /// Reads (GET, HEAD) one credential may have under way at once; past
    /// it 429 (`api::concurrency`).
    pub max_concurrent_per_credential: usize,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SenderSettings {
    #[serde(deserialize_with = "networks")]
    pub allow_networks: Vec<IpNet>,
    pub timeout_ms: u64,
    pub connect_timeout_ms: u64,
    pub max_in_flight: usize,
    pub max_response_bytes: usize,
    /// Refuse plain `http://` receivers, at endpoint create/change and at
    /// send time.
    pub https_only: bool,
    /// PEM CA certificates trusted for receivers on top of the bundled
    /// public roots. Empty: the public roots only.
    pub ca_file: String,
}

/// The part of a response body kept in the attempt row: the least
/// `sender.max_response_bytes` may be.
pub const STORED_BODY_BYTES: usize = 4096;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DispatcherSettings {
    pub enabled: bool,
    pub batch_size: usize,
    pub lease_ms: u64,
    pub max_idle_ms: u64,
    pub claim_ahead_ms: u64,
    /// Hand notifications created due now to this process's dispatcher
    /// (`dispatcher::handoff`) instead of having it claim and load them.
    pub handoff: bool,
    pub endpoint_max_in_flight: u32,
    pub disable_failing_endpoints_after_hours: u32,
    /// The rate limit of endpoints without one of their own; none by
    /// default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_rate_limit: Option<RateLimitSettings>,
    /// Fresh notifications' part of a limited endpoint's rate, 0 to 1
    /// (`domain::lane`); 0: lanes off.
    pub fresh_share: f64,
    /// Defaults of every endpoint's circuit breaker (`domain::breaker`).
    pub breaker: BreakerSettings,
}

/// `dispatcher.default_rate_limit`: `{per_second, burst}` as an endpoint's
/// `rate_limit` (`domain::rate`), checked at load with the same bounds.
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitSettings {
    pub per_second: f64,
    pub burst: u32,
}

impl RateLimitSettings {
    /// The limit; none when out of bounds (refused at load).
    pub fn limit(&self) -> Option<crate::domain::rate::RateLimit> {
        crate::domain::rate::RateLimit::new(self.per_second, self.burst).ok()
    }
}

/// `[dispatcher.breaker]`: the circuit breaker's defaults (docs/design.md §16).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerSettings {
    pub failures: u32,
    pub open_ms: u64,
    pub max_open_ms: u64,
    pub max_hold_ms: u64,
}

impl BreakerSettings {
    /// The defaults an endpoint's override falls back to.
    pub fn policy(&self) -> crate::domain::breaker::Policy {
        crate::domain::breaker::Policy {
            failures: self.failures,
            open_ms: self.open_ms,
            max_open_ms: self.max_open_ms,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LogSettings {
    pub format: LogFormat,
    pub filter: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// Largest per-attempt timeout an endpoint may ask for, whatever the lease.
pub const MAX_ENDPOINT_TIMEOUT: Duration = Duration::from_secs(300);

impl Settings {
    /// The address to bind: `server.listen`, moved to loopback when the API
    /// has no tokens (an open API must not be reachable from the network).
    pub fn bind_address(&self) -> SocketAddr {
        let listen = self.server.listen;
        if self.api.tokens.is_empty() && !listen.ip().is_loopback() {
            let loopback = match listen.ip() {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
            };
            SocketAddr::new(loopback, listen.port())
        } else {
            listen
        }
    }

    pub fn sender_timeout(&self) -> Duration {
        Duration::from_millis(self.sender.timeout_ms)
    }

    pub fn lease(&self) -> Duration {
        Duration::from_millis(self.dispatcher.lease_ms)
    }

    /// The longest `timeout_ms` an endpoint may set: it must end well within
    /// the lease, for the reason given in `validate`.
    pub fn max_endpoint_timeout(&self) -> Duration {
        MAX_ENDPOINT_TIMEOUT.min(self.lease().saturating_sub(LEASE_MARGIN))
    }

    /// The keys that seal secrets and header values at rest (validated at load).
    pub fn keyring(&self) -> crate::domain::sealed::Keyring {
        self.try_keyring()
            .expect("secrets.keys was validated at load")
    }

    pub(super) fn try_keyring(
        &self,
    ) -> Result<crate::domain::sealed::Keyring, crate::domain::sealed::KeyError> {
        let keys = self.secrets.keys.iter();
        crate::domain::sealed::Keyring::new(keys.map(|k| (k.id.as_str(), k.key.expose())))
    }

    pub fn rotation_overlap(&self) -> Duration {
        Duration::from_millis(self.secrets.rotation_overlap_ms)
    }

    /// `pull.max_wait` (validated at load).
    pub fn pull_max_wait(&self) -> Duration {
        humantime::parse_duration(self.pull.max_wait.trim())
            .expect("pull.max_wait was validated at load")
    }
}

/// A configuration value that must never be printed: database and Redis URLs
/// (they may hold passwords), API tokens, the operator webhook's URL and
/// secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

/// Text, also when an environment variable's value reads as a number or a
/// boolean (`HOOKD_OTLP…=88341234123412349`): figment types what it reads
/// from the environment, and a text setting refused `123`.
impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d).map(Secret)
    }
}

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"***\"")
    }
}

impl Serialize for Secret {
    /// `***`, or `""` when unset, so `config check` still shows whether a
    /// secret (the operator webhook, say) is configured at all.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(if self.0.is_empty() { "" } else { "***" })
    }
}
