//! Settings: the compiled-in `config/default.toml`, then an optional file, then
//! `HOOKD_<SECTION>__<KEY>` environment variables. Validated once, at load, so
//! the rest of hookd can trust every value.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use figment::providers::{Env, Format, Toml};
use figment::Figment;
use ipnet::IpNet;
use serde::{Deserialize, Serialize, Serializer};

mod tokens;

pub use tokens::{digest, Credential, ScopedToken, TokenSpec, MIN_TOKEN_CHARS};

/// The defaults, compiled in so hookd never depends on its working directory.
pub const DEFAULT_TOML: &str = include_str!("../config/default.toml");

/// Margin the delivery lease must keep over the longest attempt timeout.
pub const LEASE_MARGIN: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid configuration: {0}")]
    Load(String),
    #[error("invalid configuration: `{key}` {reason}")]
    Invalid { key: &'static str, reason: String },
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub server: ServerSettings,
    pub database: DatabaseSettings,
    pub redis: RedisSettings,
    pub api: ApiSettings,
    pub sender: SenderSettings,
    pub dispatcher: DispatcherSettings,
    pub retention: RetentionSettings,
    pub operator: OperatorSettings,
    pub secrets: SecretsSettings,
    pub log: LogSettings,
}

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
    pub listen: SocketAddr,
    pub shutdown_timeout_ms: u64,
    /// Closes a connection whose TLS handshake or request headers take
    /// longer (idle keep-alive connections included).
    pub header_timeout_ms: u64,
    /// Answers 408 to a request (body included) that takes longer.
    pub request_timeout_ms: u64,
    /// Open connections at most; past it hookd stops accepting.
    pub max_connections: usize,
    /// PEM certificate chain and private key: the API speaks TLS.
    pub tls_cert: String,
    pub tls_key: String,
    /// A second listener for `/metrics`, `/healthz` and `/readyz`; when set,
    /// `/metrics` leaves `listen`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_listen: Option<SocketAddr>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseSettings {
    pub url: Secret,
    pub migrate: bool,
    pub max_connections: u32,
    pub acquire_timeout_ms: u64,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RedisSettings {
    pub url: Secret,
    pub prefix: String,
    pub timeout_ms: u64,
    /// `host:port` of Redis Sentinels; non-empty: the master is the one
    /// they name for `master_name`, and `url` gives only scheme,
    /// credentials and database.
    pub sentinels: Vec<String>,
    pub master_name: String,
    /// PEM CA certificates that verify a `rediss://` server, instead of the
    /// bundled public roots. Empty: the public roots.
    pub ca_file: String,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ApiSettings {
    pub tokens: Vec<TokenSpec>,
    pub max_payload_bytes: usize,
    pub max_request_bytes: usize,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SenderSettings {
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
    pub endpoint_max_in_flight: u32,
    pub disable_failing_endpoints_after_hours: u32,
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
    /// Loads defaults, then `file` if given, then the environment, and validates.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        let mut figment = Figment::from(Toml::string(DEFAULT_TOML));
        if let Some(path) = file {
            if !path.is_file() {
                return Err(ConfigError::Load(format!(
                    "config file {} does not exist",
                    path.display()
                )));
            }
            figment = figment.merge(Toml::file(path));
        }
        // Only HOOKD_<SECTION>__<KEY> names are configuration; other HOOKD_*
        // variables (a wrapper script's, say) are not mistaken for typos.
        figment = figment.merge(
            Env::prefixed("HOOKD_")
                .filter(|key| key.as_str().contains("__"))
                .split("__"),
        );
        Self::from_figment(figment)
    }

    /// Builds settings from the defaults with `overrides` (TOML) merged on top.
    /// Tests and tools use it to configure hookd without files or environment.
    pub fn from_toml_overrides(overrides: &str) -> Result<Self, ConfigError> {
        Self::from_toml_layers(&[overrides])
    }

    /// Like `from_toml_overrides`, with several layers, later ones winning.
    pub fn from_toml_layers(layers: &[&str]) -> Result<Self, ConfigError> {
        let figment = layers.iter().fold(
            Figment::from(Toml::string(DEFAULT_TOML)),
            |figment, layer| figment.merge(Toml::string(layer)),
        );
        Self::from_figment(figment)
    }

    fn from_figment(figment: Figment) -> Result<Self, ConfigError> {
        let settings: Settings = figment
            .extract()
            .map_err(|e| ConfigError::Load(one_line(&e)))?;
        settings.validate()?;
        Ok(settings)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key, reason: &str| ConfigError::Invalid {
            key,
            reason: reason.to_string(),
        };
        if self.redis.prefix.is_empty()
            || self.redis.prefix.contains(char::is_whitespace)
            || self.redis.prefix.contains(['{', '}'])
        {
            return Err(invalid(
                "redis.prefix",
                "must be non-empty, without spaces or braces",
            ));
        }
        for (key, url, schemes) in [
            (
                "database.url",
                &self.database.url,
                &["postgres", "postgresql"][..],
            ),
            (
                "redis.url",
                &self.redis.url,
                &["redis", "rediss", "unix", "redis+unix"][..],
            ),
        ] {
            match url::Url::parse(url.expose()) {
                Ok(u) if schemes.contains(&u.scheme()) => {}
                _ => {
                    return Err(invalid(
                        key,
                        &format!("must be a URL with scheme {}", schemes.join(" or ")),
                    ))
                }
            }
        }
        for sentinel in &self.redis.sentinels {
            let valid = sentinel.rsplit_once(':').is_some_and(|(host, port)| {
                !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0)
            });
            if !valid {
                return Err(invalid(
                    "redis.sentinels",
                    &format!("`{sentinel}` is not host:port"),
                ));
            }
        }
        if !self.redis.sentinels.is_empty()
            && (self.redis.master_name.is_empty()
                || self.redis.master_name.contains(char::is_whitespace))
        {
            return Err(invalid(
                "redis.master_name",
                "must be the sentinels' name for the master (non-empty, no spaces)",
            ));
        }
        if let Err(reason) = crate::server::tls_acceptor(&self.server) {
            let key = if reason.starts_with("server.tls_key") {
                "server.tls_key"
            } else {
                "server.tls_cert"
            };
            return Err(invalid(
                key,
                reason.split_once(": ").map_or(&*reason, |(_, r)| r),
            ));
        }
        if self.database.max_connections == 0 {
            return Err(invalid("database.max_connections", "must be at least 1"));
        }
        if self.api.max_payload_bytes == 0 {
            return Err(invalid("api.max_payload_bytes", "must be at least 1"));
        }
        if self.api.max_request_bytes < self.api.max_payload_bytes {
            return Err(invalid(
                "api.max_request_bytes",
                "must be at least api.max_payload_bytes",
            ));
        }
        for (key, value, max) in [
            (
                "server.shutdown_timeout_ms",
                self.server.shutdown_timeout_ms,
                3_600_000,
            ),
            (
                "server.header_timeout_ms",
                self.server.header_timeout_ms,
                600_000,
            ),
            (
                "server.request_timeout_ms",
                self.server.request_timeout_ms,
                3_600_000,
            ),
            (
                "server.max_connections",
                self.server.max_connections as u64,
                1_000_000,
            ),
            (
                "database.acquire_timeout_ms",
                self.database.acquire_timeout_ms,
                600_000,
            ),
            ("redis.timeout_ms", self.redis.timeout_ms, 600_000),
            (
                "sender.timeout_ms",
                self.sender.timeout_ms,
                MAX_ENDPOINT_TIMEOUT.as_millis() as u64,
            ),
            (
                "sender.connect_timeout_ms",
                self.sender.connect_timeout_ms,
                300_000,
            ),
            (
                "sender.max_in_flight",
                self.sender.max_in_flight as u64,
                100_000,
            ),
            (
                "dispatcher.batch_size",
                self.dispatcher.batch_size as u64,
                10_000,
            ),
            (
                "dispatcher.max_idle_ms",
                self.dispatcher.max_idle_ms,
                60_000,
            ),
        ] {
            if !(1..=max).contains(&value) {
                return Err(invalid(key, &format!("must be between 1 and {max}")));
            }
        }
        if !(STORED_BODY_BYTES..=64 << 20).contains(&self.sender.max_response_bytes) {
            return Err(invalid(
                "sender.max_response_bytes",
                &format!(
                    "must be between {} (the part of a response kept) and 67108864",
                    STORED_BODY_BYTES
                ),
            ));
        }
        let mut names = std::collections::HashSet::new();
        let mut digests = std::collections::HashSet::new();
        for (i, spec) in self.api.tokens.iter().enumerate() {
            let credential = spec
                .credential(i)
                .map_err(|reason| invalid("api.tokens", &reason))?;
            if !names.insert(credential.name.clone()) {
                return Err(invalid(
                    "api.tokens",
                    &format!("the name `{}` is used twice", credential.name),
                ));
            }
            if !digests.insert(credential.digest) {
                return Err(invalid("api.tokens", "two entries hold the same token"));
            }
        }
        if let Err(error) = self.try_keyring() {
            return Err(invalid("secrets.keys", &error.to_string()));
        }
        if self.secrets.rotation_overlap_ms > MAX_ROTATION_OVERLAP.as_millis() as u64 {
            return Err(invalid(
                "secrets.rotation_overlap_ms",
                "must be at most 604800000 (7 days; 0 ends the overlap at once)",
            ));
        }
        if tracing_subscriber::EnvFilter::try_new(&self.log.filter).is_err() {
            return Err(invalid(
                "log.filter",
                "must be a tracing filter such as \"info\" or \"info,hookd::dispatcher=debug\"",
            ));
        }
        if self.dispatcher.endpoint_max_in_flight == 0 {
            return Err(invalid(
                "dispatcher.endpoint_max_in_flight",
                "must be at least 1",
            ));
        }
        if self.dispatcher.lease_ms > 24 * 3600 * 1000 {
            return Err(invalid(
                "dispatcher.lease_ms",
                "must be at most a day (86400000)",
            ));
        }
        if self.retention.days > 36_500 {
            return Err(invalid(
                "retention.days",
                "must be at most 36500 (0 keeps everything)",
            ));
        }
        if self.dispatcher.disable_failing_endpoints_after_hours > 365 * 24 {
            return Err(invalid(
                "dispatcher.disable_failing_endpoints_after_hours",
                "must be at most 8760 (a year; 0 never disables)",
            ));
        }
        if self.operator.enabled() {
            match url::Url::parse(self.operator.url.expose()) {
                Ok(u) if self.sender.https_only && u.scheme() == "http" => {
                    return Err(invalid(
                        "operator.url",
                        "must be an https URL when sender.https_only is true",
                    ))
                }
                Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
                _ => {
                    return Err(invalid(
                        "operator.url",
                        "must be an http or https URL, or empty",
                    ))
                }
            }
            if crate::domain::secret::SigningSecret::parse(self.operator.secret.expose()).is_err() {
                return Err(invalid(
                    "operator.secret",
                    "must be `whsec_` followed by the base64 of 24 to 64 bytes when operator.url is set",
                ));
            }
        }
        for (key, path) in [
            ("sender.ca_file", &self.sender.ca_file),
            ("redis.ca_file", &self.redis.ca_file),
        ] {
            if !path.is_empty() {
                read_ca_file(path).map_err(|reason| invalid(key, &reason))?;
            }
        }
        if !self.redis.ca_file.is_empty() && !self.redis.url.expose().starts_with("rediss://") {
            return Err(invalid(
                "redis.ca_file",
                "needs a rediss:// redis.url (TLS)",
            ));
        }
        // A lease shorter than the longest attempt would let a second process
        // take over a delivery that is still running: a guaranteed duplicate.
        let longest_attempt = self.sender_timeout();
        if self.lease() < longest_attempt + LEASE_MARGIN {
            return Err(invalid(
                "dispatcher.lease_ms",
                &format!(
                    "must exceed the longest attempt timeout ({} ms) plus a {} ms margin",
                    longest_attempt.as_millis(),
                    LEASE_MARGIN.as_millis()
                ),
            ));
        }
        Ok(())
    }

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

    fn try_keyring(
        &self,
    ) -> Result<crate::domain::sealed::Keyring, crate::domain::sealed::KeyError> {
        let keys = self.secrets.keys.iter();
        crate::domain::sealed::Keyring::new(keys.map(|k| (k.id.as_str(), k.key.expose())))
    }

    pub fn rotation_overlap(&self) -> Duration {
        Duration::from_millis(self.secrets.rotation_overlap_ms)
    }

    /// Settings that work but that an operator should know about: printed by
    /// `config check` and logged at start.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.secrets.keys.is_empty() {
            warnings.push(
                "secrets.keys is empty: signing secrets and custom header values are stored in plaintext in PostgreSQL"
                    .to_string(),
            );
        }
        warnings.extend(self.database_tls_warning());
        warnings
    }

    /// Why the database connection may not be protected by verified TLS, if
    /// it may not: a host that is not loopback or a Unix socket, with an
    /// `sslmode` below `verify-ca`. libpq's and sqlx's default, `prefer`,
    /// falls back to plaintext without a word, and `require` accepts any
    /// certificate, so an attacker on the path can read or change every row.
    pub fn database_tls_warning(&self) -> Option<String> {
        let url = url::Url::parse(self.database.url.expose()).ok()?;
        let param = |name: &str| {
            url.query_pairs()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.into_owned())
        };
        let host = param("host").unwrap_or_else(|| url.host_str().unwrap_or("").to_string());
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let local = host.is_empty()
            || host.starts_with('/')
            || host == "localhost"
            || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
        let mode = param("sslmode")
            .or_else(|| std::env::var("PGSSLMODE").ok())
            .unwrap_or_else(|| "prefer".to_string());
        if local || matches!(mode.as_str(), "verify-full" | "verify-ca") {
            return None;
        }
        Some(format!(
            "database.url reaches {host} with sslmode={mode}: the connection may be plaintext or \
             its certificate unchecked; use ?sslmode=verify-full&sslrootcert=/path/ca.pem"
        ))
    }

    /// The effective configuration as TOML, secrets masked.
    pub fn to_masked_toml(&self) -> String {
        toml_string(self)
    }
}

/// Reads a PEM file of CA certificates: at least one, all well-formed.
pub fn read_ca_file(path: &str) -> Result<Vec<u8>, String> {
    let pem = std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    match reqwest::Certificate::from_pem_bundle(&pem) {
        Ok(certificates) if !certificates.is_empty() => Ok(pem),
        Ok(_) => Err(format!("{path} holds no PEM certificate")),
        Err(e) => Err(format!("{path} is not a PEM certificate bundle: {e}")),
    }
}

fn toml_string(settings: &Settings) -> String {
    toml::to_string(settings).unwrap_or_else(|e| format!("# cannot render settings: {e}\n"))
}

/// Keys whose values are `Secret`s: an error about one never shows its value.
const SECRET_KEYS: [&str; 6] = [
    "database.url",
    "redis.url",
    "api.tokens",
    "operator.url",
    "operator.secret",
    "secrets.keys",
];

/// Every error figment found, on one line, each naming its key and where the
/// value came from. The value itself is shown only for keys that are not
/// secrets; a TOML syntax error keeps its position and reason but not the
/// offending line, which may hold a secret.
fn one_line(error: &figment::Error) -> String {
    use figment::error::Kind;
    let messages: Vec<String> = error
        .clone()
        .into_iter()
        .map(|e| {
            let key = e.path.join(".");
            let secret = SECRET_KEYS.iter().any(|k| key.starts_with(k));
            let what = match &e.kind {
                Kind::InvalidType(_, expected) | Kind::InvalidValue(_, expected) if secret => {
                    format!("invalid value (not shown), expected {expected}")
                }
                Kind::Unsupported(_) | Kind::UnsupportedKey(..) if secret => {
                    "unsupported value (not shown)".to_string()
                }
                Kind::Message(message) => {
                    let lines: Vec<&str> =
                        message.lines().filter(|l| !l.trim().is_empty()).collect();
                    match (lines.first(), lines.last()) {
                        (Some(first), Some(last)) if lines.len() > 1 => {
                            format!("{first}: {}", last.trim())
                        }
                        _ => message.clone(),
                    }
                }
                kind => kind.to_string(),
            };
            let source = e
                .metadata
                .as_ref()
                .map_or_else(String::new, |m| match &m.source {
                    Some(source) => format!(" (in {source})"),
                    None => format!(" (in {})", m.name),
                });
            if key.is_empty() {
                format!("{what}{source}")
            } else {
                format!("`{key}`: {what}{source}")
            }
        })
        .collect();
    messages.join("; ")
}

/// A configuration value that must never be printed: database and Redis URLs
/// (they may hold passwords), API tokens, the operator webhook's URL and
/// secret.
#[derive(Clone, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct Secret(String);

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

#[cfg(test)]
mod tests;
